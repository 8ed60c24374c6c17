"""Reading evaluation sets: BEIR folders, QA JSON Lines files, and QA dataset folders.

BEIR layout (https://github.com/beir-cellar/beir): ``corpus.jsonl`` (``_id``, ``title``, ``text``),
``queries.jsonl`` (``_id``, ``text``) and ``qrels/test.tsv`` (``query-id  corpus-id  score`` with a
header line). A QA file holds one JSON object per line:
``{"_id"?, "question", "answers"?: [...], "relevant"?: [document ids or paths], "kind"?: str,
"must_contain"?: [...]}``; a QA dataset folder holds ``corpus.jsonl`` (or a ``corpus/`` folder of
documents) beside ``qa.jsonl`` (the layouts of xquad-en and docs-qa). A QA file lying beside
such a corpus (``qa-tune.jsonl`` in the dataset folder) is answered over that corpus too.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

from ragcli.errors import UsageError
from ragcli.types import Document

CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"
QRELS_FILE = Path("qrels") / "test.tsv"
QA_FILE = "qa.jsonl"
# A dataset corpus as a folder of documents (HTML, Markdown, PDF ...), read as `rag ingest` reads them.
DOCUMENTS_FOLDER = "corpus"


@dataclass(frozen=True)
class QACase:
    """One question: its gold answers (empty = unanswerable), relevant documents, and for sets
    of real questions its kind (procedure, comparison, ...) and the strings a correct answer
    must contain (an answerable question has gold answers or such strings)."""

    id: str
    question: str
    answers: tuple[str, ...] = ()
    relevant: tuple[str, ...] = ()
    kind: str = ""
    must_contain: tuple[str, ...] = ()

    @property
    def answerable(self) -> bool:
        return bool(self.answers) or bool(self.must_contain)


@dataclass(frozen=True)
class RetrievalSet:
    """Queries with relevance judgments, and the corpus they are judged against.

    Attributes:
        name: a short name (the folder or file stem).
        source: the dataset folder or QA file.
        queries: query id -> query text, judged queries only, in file order.
        qrels: query id -> {document id: relevance}; for a QA file, ids are its `relevant` entries.
        corpus: the corpus file, or None for a QA file run against an existing index.
    """

    name: str
    source: Path
    queries: Mapping[str, str]
    qrels: Mapping[str, Mapping[str, int]]
    corpus: Path | None = None
    skipped: int = 0


@dataclass(frozen=True)
class QASet:
    """Questions to answer and, for a dataset folder, the corpus to index first."""

    name: str
    source: Path
    cases: tuple[QACase, ...]
    corpus: Path | None = None


def _json_lines(path: Path) -> Iterator[tuple[int, dict]]:
    try:
        # utf-8-sig: files saved by Windows editors start with a byte order mark.
        handle = path.open(encoding="utf-8-sig")
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror or error}") from error
    with handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise UsageError(
                    f"{path}:{number}: not valid JSON ({error.msg}); expected one JSON object per line"
                ) from error
            if not isinstance(record, dict):
                raise UsageError(f"{path}:{number}: expected a JSON object per line")
            yield number, record


def beir_document(record: Mapping[str, object]) -> Document:
    """A BEIR corpus record as a Document: path = ``_id``, text = title, newline, text.

    Shared by every BEIR index built for evaluation, so the same corpus always yields the same
    documents (and content hashes), and an index built once is reused as it is.
    """
    title = str(record.get("title") or "")
    text = str(record.get("text") or "")
    return Document(
        path=str(record["_id"]),
        text=f"{title}\n{text}" if title else text,
        file_type="beir",
        metadata={"title": title},
    )


def read_corpus(path: Path) -> Iterator[Document]:
    """Stream the documents of a BEIR ``corpus.jsonl``.

    Raises:
        UsageError: the file is missing, not JSON Lines, or a record has no ``_id``.
    """
    for number, record in _json_lines(path):
        if "_id" not in record:
            raise UsageError(f'{path}:{number}: corpus record without an "_id"')
        yield beir_document(record)


def read_queries(path: Path) -> dict[str, str]:
    """Query id -> text from a BEIR ``queries.jsonl``."""
    return {
        str(record["_id"]): str(record.get("text", "")) for _, record in _json_lines(path) if "_id" in record
    }


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """Query id -> {document id: relevance} from a BEIR qrels TSV, with or without a header line.

    The first line is a header only when its score column is not a number (BEIR writes
    ``query-id corpus-id score``); a file without one (as some subsets ship) keeps its first
    judgment.

    Raises:
        UsageError: the file is missing or a row does not have three columns with an integer score.
    """
    qrels: dict[str, dict[str, int]] = {}
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            for number, row in enumerate(csv.reader(handle, delimiter="\t"), 1):
                if not row or (number == 1 and _is_qrels_header(row)):
                    continue
                if len(row) < 3 or not _is_score(row[2]):
                    raise UsageError(f"{path}:{number}: expected query-id<TAB>corpus-id<TAB>score")
                qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror or error}") from error
    return qrels


def _is_score(text: str) -> bool:
    return text.strip().lstrip("-").isdigit()


def _is_qrels_header(row: list[str]) -> bool:
    return len(row) >= 3 and not _is_score(row[2])


def read_qa(path: Path) -> list[QACase]:
    """The questions of a QA JSON Lines file; a line without ``_id`` gets ``q<line number>``.

    ``answers`` may also be a single string (``answer``); ``relevant`` may be one string.

    Raises:
        UsageError: a line is not a JSON object, has no ``question``, or a field has the wrong
            type (a number or a list where a string or a list of strings belongs); the message
            names the file, line and field.
    """
    cases = []
    for number, record in _json_lines(path):
        where = f"{path}:{number}"
        question = record.get("question")
        if question is not None and not isinstance(question, str):
            raise UsageError(f'{where}: "question" must be a string')
        if not (question or "").strip():
            raise UsageError(f'{where}: QA record without a "question"')
        answers = record.get("answers", record.get("answer", []))
        cases.append(
            QACase(
                id=str(record.get("_id") or f"q{number}"),
                question=question.strip(),
                answers=_strings(answers, where, "answers"),
                relevant=_strings(record.get("relevant", []), where, "relevant"),
                kind=str(record.get("kind") or ""),
                must_contain=_strings(record.get("must_contain", []), where, "must_contain"),
            )
        )
    return cases


def _strings(value: object, where: str, field: str) -> tuple[str, ...]:
    """A string or a list of strings (numbers allowed) as a tuple of the non-empty ones.

    Raises:
        UsageError: the value is anything else (a number, an object, a list holding null...).
    """
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(_is_scalar(item) for item in items):
        raise UsageError(f'{where}: "{field}" must be a string or a list of strings')
    return tuple(str(item) for item in items if str(item).strip())


def _is_scalar(item: object) -> bool:
    return isinstance(item, (str, int, float)) and not isinstance(item, bool)


def corpus_beside(folder: Path) -> Path | None:
    """The corpus of a dataset folder: its ``corpus.jsonl``, else its ``corpus/`` documents folder."""
    if (folder / CORPUS_FILE).is_file():
        return folder / CORPUS_FILE
    if (folder / DOCUMENTS_FOLDER).is_dir():
        return folder / DOCUMENTS_FOLDER
    return None


def _missing(path: Path, what: str) -> UsageError:
    return UsageError(
        f"{path} is not {what}: expected a BEIR folder ({CORPUS_FILE}, {QUERIES_FILE}, "
        f"{QRELS_FILE.as_posix()}), a folder with {CORPUS_FILE} and {QA_FILE}, "
        "or a QA JSON Lines file"
    )


def load_retrieval_set(path: Path) -> RetrievalSet:
    """Load what `rag eval retrieval` needs from a BEIR folder, a QA folder or a QA file.

    A BEIR folder's queries are those with judgments in ``qrels/test.tsv``. For QA input each
    question with a non-empty ``relevant`` list is a query judged relevant (1) on those entries;
    questions without one are counted in `skipped`.

    Raises:
        UsageError: the path is none of the supported layouts.
    """
    path = Path(path).expanduser()
    if path.is_dir():
        corpus = path / CORPUS_FILE
        if not corpus.is_file():
            raise _missing(path, "an evaluation set")
        if (path / QRELS_FILE).is_file() and (path / QUERIES_FILE).is_file():
            return _beir_set(path)
        if (path / QA_FILE).is_file():
            return _qa_retrieval_set(path, path / QA_FILE, corpus)
        raise _missing(path, "a complete evaluation set")
    if path.is_file():
        return _qa_retrieval_set(path, path, None)
    raise UsageError(f"{path} does not exist: give a BEIR folder or a QA JSON Lines file")


def _beir_set(path: Path) -> RetrievalSet:
    texts = read_queries(path / QUERIES_FILE)
    qrels = read_qrels(path / QRELS_FILE)
    missing = [qid for qid in qrels if qid not in texts]
    if missing:
        raise UsageError(
            f"{path / QRELS_FILE}: query {missing[0]} has judgments but no text in "
            f"{QUERIES_FILE} ({len(missing)} such queries)"
        )
    queries = {qid: text for qid, text in texts.items() if qid in qrels}
    if not queries:
        raise UsageError(f"{path / QRELS_FILE}: no judgments, so there is nothing to score")
    return RetrievalSet(name=path.name, source=path, queries=queries, qrels=qrels, corpus=path / CORPUS_FILE)


def _qa_retrieval_set(name_path: Path, qa_path: Path, corpus: Path | None) -> RetrievalSet:
    cases = read_qa(qa_path)
    judged = [case for case in cases if case.relevant]
    if not judged:
        raise UsageError(
            f'{qa_path}: no question lists "relevant" documents, so retrieval cannot be '
            "scored; add them, or use `rag eval answers` for answer metrics"
        )
    return RetrievalSet(
        name=name_path.stem if name_path.is_file() else name_path.name,
        source=name_path,
        queries={case.id: case.question for case in judged},
        qrels={case.id: dict.fromkeys(case.relevant, 1) for case in judged},
        corpus=corpus,
        skipped=len(cases) - len(judged),
    )


def load_qa_set(path: Path) -> QASet:
    """Load what `rag eval answers` needs: a QA file, or a folder with corpus.jsonl and qa.jsonl.

    Raises:
        UsageError: the path is neither.
    """
    path = Path(path).expanduser()
    if path.is_dir():
        corpus = corpus_beside(path)
        if corpus is None or not (path / QA_FILE).is_file():
            raise UsageError(
                f"{path} is not a QA dataset folder: expected {CORPUS_FILE} (or a {DOCUMENTS_FOLDER}/ "
                f"folder of documents) and {QA_FILE}, or give a QA JSON Lines file"
            )
        return QASet(name=path.name, source=path, cases=_questions(path / QA_FILE), corpus=corpus)
    if path.is_file():
        # A half of a dataset (qa-tune.jsonl beside the corpus) shares the dataset's own index.
        corpus = corpus_beside(path.parent)
        source = path.parent if corpus is not None else path
        return QASet(name=path.stem, source=source, cases=_questions(path), corpus=corpus)
    raise UsageError(f"{path} does not exist: give a QA JSON Lines file or a dataset folder")


def _questions(path: Path) -> tuple[QACase, ...]:
    cases = tuple(read_qa(path))
    if not cases:
        raise UsageError(f'{path}: no questions; write one JSON object per line with a "question"')
    return cases
