"""Text analysis for BM25: the same function turns chunks and queries into terms.

English-like text: lower-cased, accents folded, Lucene's English stop words removed,
Snowball-stemmed (PyStemmer). Chinese, Japanese and Korean runs become overlapping
character bigrams, as Lucene's CJKAnalyzer does, so a Chinese query matches Chinese
passages without a segmentation dictionary to load on the query path.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TERMS = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W_{_CJK}]+)")

# Lucene's EnglishAnalyzer default stop set (also used by Anserini's BM25 baselines).
STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()
)


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def fold(word: str) -> str:
    """Strip accents: café -> cafe, Müller -> muller."""
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping bigrams of a CJK run; a single character stands alone."""
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def term_string(text: str) -> str:
    """A chunk's terms as stored beside it (space-separated); BM25 postings are built from it."""
    return " ".join(analyze(text))


def analyze(text: str) -> list[str]:
    """Turn text into BM25 terms (stemmed words and CJK bigrams), in order."""
    pieces: list[tuple[bool, list[str]]] = []
    words: list[str] = []
    for match in _TERMS.finditer(unicodedata.normalize("NFKC", text).lower()):
        if match.lastgroup == "cjk":
            pieces.append((True, cjk_bigrams(match.group())))
            continue
        word = fold(match.group())
        if word and word not in STOP_WORDS:
            pieces.append((False, [word]))
            words.append(word)
    stems = iter(_stemmer().stemWords(words) if words else [])
    terms: list[str] = []
    for is_cjk, values in pieces:
        terms.extend(values if is_cjk else [next(stems)])
    return terms
