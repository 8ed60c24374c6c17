"""Answers: from retrieved hits to a cited answer (`ask.Asker`).

`cache` (finished answers), `context` (sources within the token budget), `prompting`
(messages, citations), `extractive` and `sentences` (answers taken from the text),
`support` (each sentence's backing). Submodules are imported where needed.
"""
