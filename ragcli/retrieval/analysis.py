"""Moved to `ragcli.analysis`: text analysis is shared ground (ingest, store, retrieval, answers).

This name is kept until the layout move (LAYOUT_PLAN.md, tools/move_layout.py) rewrites the
imports of it, so branches written against it still merge.
"""

from ragcli.analysis import STOP_WORDS, analyze, cjk_bigrams, fold, term_string

__all__ = ["STOP_WORDS", "analyze", "cjk_bigrams", "fold", "term_string"]
