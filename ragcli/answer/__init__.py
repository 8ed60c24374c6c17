"""Answers: from retrieved hits to a cited answer (`ask.Asker`).

`cache` (finished answers), `context` (sources within the token budget), `prompting`
(messages, citations), `evidence` and `sentences` (answers taken from the text), `readers`
(the short line), `summary` (questions about a whole document), `support` (each sentence's
backing). Submodules are imported where needed.
"""
