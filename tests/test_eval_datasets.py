"""Loading BEIR folders, QA files and QA dataset folders (fixtures/beir-mini and its qa-mini.jsonl)."""

from __future__ import annotations

import json
import shutil

import pytest

from ragcli.errors import UsageError
from ragcli.evaluation.datasets import (
    beir_document,
    load_qa_set,
    load_retrieval_set,
    read_corpus,
    read_qa,
    read_qrels,
)
from ragcli.evaluation.indexes import dataset_index_path
from ragcli.config import load_settings


def test_beir_corpus_maps_title_and_text_to_documents(fixtures_dir):
    docs = {doc.path: doc for doc in read_corpus(fixtures_dir / "beir-mini" / "corpus.jsonl")}
    assert len(docs) == 34
    assert docs["d01"].text.startswith("The waggle dance of honeybees\nA forager honeybee")
    assert docs["d01"].file_type == "beir" and docs["d01"].metadata == {
        "title": "The waggle dance of honeybees"
    }
    assert docs["d22"].text.startswith("The Hubble Space Telescope")  # empty title: text alone
    assert "普洱茶" in docs["d13"].text


def test_beir_document_is_the_shared_mapping():
    doc = beir_document({"_id": 7, "title": "T", "text": "body"})
    assert (doc.path, doc.text, doc.metadata) == ("7", "T\nbody", {"title": "T"})


def test_beir_set_has_judged_queries_and_graded_qrels(fixtures_dir):
    dataset = load_retrieval_set(fixtures_dir / "beir-mini")
    assert dataset.name == "beir-mini"
    assert len(dataset.queries) == 15 and dataset.queries["q15"] == "普洱茶 发酵"
    assert dataset.qrels["q05"] == {"d15": 2, "d31": 1}
    assert dataset.corpus == fixtures_dir / "beir-mini" / "corpus.jsonl"


def test_qrels_header_is_skipped_and_bad_rows_are_reported(tmp_path):
    path = tmp_path / "test.tsv"
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\tx\n")
    with pytest.raises(UsageError, match=r"test.tsv:3"):
        read_qrels(path)
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t0\n")
    assert read_qrels(path) == {"q1": {"d1": 1}, "q2": {"d3": 0}}


def test_qa_file_reads_answers_relevant_and_unanswerable(fixtures_dir):
    cases = read_qa(fixtures_dir / "beir-mini" / "qa-mini.jsonl")
    assert len(cases) == 17
    assert cases[0].answers == ("Karl von Frisch", "von Frisch") and cases[0].relevant == ("d01",)
    assert [case.id for case in cases if not case.answerable] == ["qa15", "qa16", "qa17"]


def test_qa_file_defaults_and_single_strings(tmp_path):
    path = tmp_path / "qa.jsonl"
    path.write_text(
        '{"question": "Why?", "answer": "because", "relevant": "notes/a.md"}\n\n'
        '{"_id": "x", "question": "What?"}\n'
    )
    first, second = read_qa(path)
    assert (first.id, first.answers, first.relevant) == ("q1", ("because",), ("notes/a.md",))
    assert (second.id, second.answers, second.relevant) == ("x", (), ())


def test_qa_file_as_retrieval_set_keeps_questions_with_relevant(fixtures_dir):
    dataset = load_retrieval_set(fixtures_dir / "beir-mini" / "qa-mini.jsonl")
    assert dataset.corpus is None and dataset.skipped == 3
    assert dataset.qrels["qa10"] == {"d31": 1} and len(dataset.queries) == 14


def test_qa_dataset_folder(tmp_path, fixtures_dir):
    shutil.copy(fixtures_dir / "beir-mini" / "corpus.jsonl", tmp_path / "corpus.jsonl")
    shutil.copy(fixtures_dir / "beir-mini" / "qa-mini.jsonl", tmp_path / "qa.jsonl")
    qa = load_qa_set(tmp_path)
    assert qa.corpus == tmp_path / "corpus.jsonl" and len(qa.cases) == 17
    retrieval = load_retrieval_set(tmp_path)  # no qrels: the questions' relevant ids are used
    assert retrieval.corpus == tmp_path / "corpus.jsonl" and retrieval.qrels["qa01"] == {"d01": 1}


@pytest.mark.parametrize(
    "content, message",
    [
        ("not json\n", r"qa.jsonl:1: not valid JSON"),
        ('{"answers": ["x"]}\n', r"qa.jsonl:1: QA record without a \"question\""),
        ('["a list"]\n', r"expected a JSON object"),
    ],
)
def test_malformed_qa_lines_name_file_and_line(tmp_path, content, message):
    path = tmp_path / "qa.jsonl"
    path.write_text(content)
    with pytest.raises(UsageError, match=message):
        read_qa(path)


def test_unknown_layouts_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        load_retrieval_set(tmp_path / "missing")
    with pytest.raises(UsageError, match="expected a BEIR folder"):
        load_retrieval_set(tmp_path)
    (tmp_path / "qa.jsonl").write_text(json.dumps({"question": "q?", "answers": ["a"]}) + "\n")
    with pytest.raises(UsageError, match="no question lists"):
        load_retrieval_set(tmp_path / "qa.jsonl")


def test_dedicated_index_path_depends_on_dataset_group_and_model(tmp_path, fixtures_dir):
    settings = load_settings()
    path = dataset_index_path(fixtures_dir / "beir-mini", settings=settings)
    assert path.parent == settings.cache_dir / "eval" and path.name.startswith("beir-mini-")
    assert dataset_index_path(fixtures_dir / "beir-mini", settings=settings) == path
    assert dataset_index_path(fixtures_dir / "beir-mini", settings=settings, group="fine") != path
    other_model = load_settings(embed_model="/models/other")
    assert dataset_index_path(fixtures_dir / "beir-mini", settings=other_model) != path


@pytest.mark.parametrize(
    "line, field",
    [
        ('{"question": "x?", "answers": 5}', "answers"),
        ('{"question": "x?", "answers": ["a", null]}', "answers"),
        ('{"question": "x?", "answers": {"a": 1}}', "answers"),
        ('{"question": "x?", "relevant": 5}', "relevant"),
        ('{"question": "x?", "must_contain": true}', "must_contain"),
        ('{"question": ["a", "b"]}', "question"),
    ],
)
def test_qa_fields_of_the_wrong_type_name_file_line_and_field(tmp_path, line, field):
    """A number or an object where strings belong was a TypeError traceback, or a null read as
    the answer "None"."""
    path = tmp_path / "qa.jsonl"
    path.write_text('{"question": "fine?"}\n' + line + "\n")
    with pytest.raises(UsageError, match=rf'qa.jsonl:2: "{field}" must be a string'):
        read_qa(path)


def test_files_saved_with_a_byte_order_mark_and_crlf_are_read(tmp_path):
    """Windows editors start UTF-8 files with a BOM; it was a JSON error, or part of a query id."""
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_bytes(b'\xef\xbb\xbf{"_id": "d1", "text": "caf\xc3\xa9"}\r\n')
    (tmp_path / "queries.jsonl").write_bytes(b'\xef\xbb\xbf{"_id": "q1", "text": "coffee"}\r\n')
    (tmp_path / "qrels" / "test.tsv").write_bytes(b"\xef\xbb\xbfq1\td1\t1\r\n")
    dataset = load_retrieval_set(tmp_path)
    assert dataset.queries == {"q1": "coffee"} and dataset.qrels == {"q1": {"d1": 1}}
    assert [doc.text for doc in read_corpus(tmp_path / "corpus.jsonl")] == ["café"]
    (tmp_path / "qa.jsonl").write_bytes(b'\xef\xbb\xbf{"question": "Why?", "answers": ["because"]}\r\n')
    assert read_qa(tmp_path / "qa.jsonl")[0].answers == ("because",)


def test_empty_sets_are_usage_errors(tmp_path, fixtures_dir):
    """An empty qrels file or QA file scored every metric 0.000 (or –) and exited 0."""
    shutil.copytree(fixtures_dir / "beir-mini", tmp_path / "beir")
    (tmp_path / "beir" / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n")
    with pytest.raises(UsageError, match=r"qrels/test.tsv: no judgments"):
        load_retrieval_set(tmp_path / "beir")
    (tmp_path / "qa.jsonl").write_text("\n\n")
    with pytest.raises(UsageError, match=r"qa.jsonl: no questions"):
        load_qa_set(tmp_path / "qa.jsonl")
