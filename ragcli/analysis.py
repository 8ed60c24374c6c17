"""Text analysis for BM25: the same function turns chunks and queries into terms.

English-like text: lower-cased, accents folded, Lucene's English stop words removed,
Snowball-stemmed (PyStemmer). Chinese, Japanese and Korean runs become overlapping
character bigrams, as Lucene's CJKAnalyzer does, so a Chinese query matches Chinese
passages without a segmentation dictionary to load on the query path.

BM25 indexes one more kind of term (`index_terms`): a technical token (a word joined to
punctuation: `--depth`, `-O`, `$?`, `os.path.join`, `HEAD~2`, `IL-6`, `p53/mdm2`) is kept
whole beside its split words, as Lucene's WordDelimiterGraphFilter does with
`preserveOriginal`. Split alone, `-O` is the letter "o" and `$?` is nothing, so a
question about them could only match by luck; whole, the rare exact token carries its own
(high) idf. A chunk is indexed with its document's title (`term_string`).
`ANALYZER_VERSION` names this analysis: an index built with another is
re-analysed when opened (migrations m015, m016).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TERMS = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W_{_CJK}]+)")

# Bumped whenever `index_terms` changes what it returns for some text; stored in the index
# meta (`bm25_analyzer`) by the migration that re-analyses older indexes.
ANALYZER_VERSION = 3
# Sentence punctuation and brackets around a token are not part of it ("(see --depth)." ->
# "--depth"); an empty call "()" is dropped too, so `join()` and `join` are one term.
_LEADING = "\"'`([{<\u2018\u201c"
_PUNCTUATION = "\"'`.,;:!?]}>\u2019\u201d"
_TRAILING = _PUNCTUATION + ")"
# A command-line option: its name only (`--depth=<n>` -> `--depth`, `-O<file>` -> `-O`).
_OPTION = re.compile(r"--?[^\W_][\w-]*")
# A shell-style sigil: `$?`, `$@`, `$#`, `$$`, `$!`, `$0`.
_SIGIL = re.compile(r"\$[?@#$!*0-9-]")
_APOSTROPHES = str.maketrans("", "", "'\u2019")
# A call's empty parentheses or a manual section after a name: `join()`, `git-reset(1)`.
_CALL = re.compile(r"\((?:[0-9][a-z]?)?\)$")
_WORD_CHAR = re.compile(r"[^\W_]")
_ASCII_WORDS = re.compile(r"[a-z0-9]+")  # `_TERMS`' words in lower-cased ASCII text
# Letters-only words joined by hyphens ("boundary-layer", "long-term") are English compounds,
# written with and without the hyphen: their split words match both spellings, and kept
# whole they rewarded one spelling (-0.007 nDCG@10 for BM25 on Cranfield).
_COMPOUND = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")
# A Markdown link's target, `[text](/commands/npm-audit)` or `[text](https://...)`: markup that
# readers never see, only the link text is. Its words would count again the text's own words
# (a page of cross-references scores for "audit" twice a link), so BM25 indexes the text alone.
# Only targets that look like a URL, a path or an anchor: `[Ca(2+)](i)` in a formula stays.
_LINK_TARGET = re.compile(
    r"\]\((?:[a-zA-Z][\w+.-]*:[^\s()]*|\.{0,2}/[^\s()]*|#[^\s()]*|[^\W\d_][\w-]*(?:/[\w.#-]+)+/?"
    r"|[\w-]+\.(?:md|markdown|html?|rst|txt)(?:#[^\s()]*)?)(?:\s+\"[^\"]*\")?\)"
)
# Longer "tokens" are URLs or run-together text, not something a user types as one term.
MAX_WHOLE = 40

# Lucene's EnglishAnalyzer default stop set (also used by Anserini's BM25 baselines).
STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()
)


# ASCII word -> its stem, for the words of short texts (queries) analysed so far: a warm
# query's words are found here, which costs a third of calling the stemmer for them. At most
# MAX_STEMS words (then it restarts); a longer text (a chunk) is stemmed without it, as its
# many words would keep restarting it.
_STEMS: dict[str, str] = {}
MAX_STEMS = 20_000
SHORT_WORDS = 100


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


def term_string(text: str, title: str | None = None) -> str:
    """A chunk's terms as stored beside it (space-separated); BM25 postings are built from it.

    Args:
        title: the chunk's document title: its terms join every chunk that does not already
            begin with it, so a passage deep in a page still matches the page's subject (a
            contextual chunk header, as BM25F-style title fields do for whole documents).
    """
    if title and not text.lstrip().startswith(title.strip()):
        text = f"{title}\n{text}"
    return " ".join(index_terms(text))


def whole_token(token: str) -> str | None:
    """The term a technical token is kept as (None for a plain word or no technical token).

    Lower-cased and accent-folded like every term, except a one-letter option (`-O` and `-o`
    differ on most command lines). Words joined only by apostrophes (`don't`) are plain words.
    """
    token = token.lstrip(_LEADING)
    if token.isalnum():  # a plain word after an opening bracket or quote
        return None
    sigil = _SIGIL.match(token)
    if sigil and not token[2:].strip(_TRAILING):
        return sigil.group()
    token = token.rstrip(_PUNCTUATION)
    while token.endswith(")") and token.count(")") > token.count("("):  # "(see f(x))." -> "f(x)"
        token = token[:-1].rstrip(_PUNCTUATION)
    if token.endswith(")"):
        token = _CALL.sub("", token)
    if token.endswith(("'s", "\u2019s")):
        token = token[:-2]
    if token.startswith("-"):
        option = _OPTION.match(token)
        if option is None:
            return None
        token = option.group()
        return token if len(token) == 2 else fold(token.lower())
    if len(token) > MAX_WHOLE or token.translate(_APOSTROPHES).isalnum() or not _WORD_CHAR.search(token):
        return None
    if _COMPOUND.fullmatch(token):
        return None
    return None if _cjk_char().search(token) else fold(token.lower())


@lru_cache(maxsize=1)
def _cjk_char() -> re.Pattern[str]:
    """Compiled on first need: a class of the CJK ranges takes 2-3 ms to compile, and a new
    process's query seldom holds a technical token."""
    return re.compile(f"[{_CJK}]")


def cjk_characters(text: str) -> int:
    """How many characters of `text` are of the scripts written without spaces (`_CJK`)."""
    return len(_cjk_char().findall(text))


def technical_terms(text: str) -> list[str]:
    """Whole technical tokens of a text, in order (`whole_token`)."""
    return _technical(unicodedata.normalize("NFKC", text))


def _technical(text: str) -> list[str]:
    terms = []
    for token in text.split():
        # Only a whitespace-delimited token with a symbol in it can be technical, and not a
        # word in sentence punctuation ("cells.", "(see"): `whole_token` strips that to a
        # plain word and keeps nothing, which this cheaper test says first.
        if token.isalnum() or token.lstrip(_LEADING).rstrip(_TRAILING).isalnum():
            continue
        term = whole_token(token)
        if term:
            terms.append(term)
    return terms


def index_terms(text: str) -> list[str]:
    """BM25's terms of a chunk or query: its words (`analyze`), then its technical tokens whole."""
    text = unicodedata.normalize("NFKC", text)
    if "](" in text:
        text = _LINK_TARGET.sub("]", text)
    return _words(text) + _technical(text)


def analyze(text: str) -> list[str]:
    """Turn text into BM25 terms (stemmed words and CJK bigrams), in order."""
    return _words(unicodedata.normalize("NFKC", text))


def _words(text: str) -> list[str]:
    """`analyze` of NFKC-normalised text."""
    if text.isascii():  # the same terms, without the CJK branch and the accent folding
        words = _ASCII_WORDS.findall(text.lower())
        if len(words) > SHORT_WORDS:
            words = [word for word in words if word not in STOP_WORDS]
            return _stemmer().stemWords(words) if words else []
        try:  # every word stemmed before: a dict lookup each, no call into the stemmer
            return [_STEMS[word] for word in words if word not in STOP_WORDS]
        except KeyError:
            pass
        words = [word for word in words if word not in STOP_WORDS]
        stems = _stemmer().stemWords(words) if words else []
        if len(_STEMS) + len(words) > MAX_STEMS:
            _STEMS.clear()
        _STEMS.update(zip(words, stems))
        return stems
    pieces: list[tuple[bool, list[str]]] = []
    words: list[str] = []
    for match in _TERMS.finditer(text.lower()):
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
