"""What a user sees from `rag ask` (the real command, real default models) on fixtures/sample and
on a sports passage: the explaining sentence, summaries of a named document, and a short line that
never contradicts the evidence printed under it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from runner import rag
from conftest import FIXTURES, ingested_home

# Written for this test (fictional players): the fact asked four ways below, beside distractors
# of the same types (another name, a number of sacks, a count of fumbles, a capitalised award).
SEASON = (
    "The Harbor City Panthers finished the season with the best defense in the league.\n\n"
    "Pro Bowl defensive tackle Marcus Dell led the team in sacks with 11, while defensive end "
    "Tavon Reese added five sacks and forced three fumbles. Linebacker Joe Amari led the team in "
    "tackles for the third year in a row.\n"
)
PHRASINGS = (
    "Which Pro Bowl defensive tackle led the team in sacks?",
    "What defensive tackle led the team in sacks?",
    "Who led the Panthers in sacks?",
    "Which player led the Panthers in sacks?",
)


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("answers-docs")
    shutil.copytree(FIXTURES / "sample", folder / "sample")
    (folder / "season.md").write_text(SEASON, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def env(tmp_path_factory, model_cache_dir, docs) -> dict[str, str]:
    return ingested_home(tmp_path_factory.mktemp("answers-home"), model_cache_dir, docs)


def ask(environ: dict[str, str], question: str, *args: str) -> dict:
    done = rag("ask", question, "--json", "--no-cache", *args, env=environ)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_why_quotes_the_sentence_that_explains(env):
    answer = ask(env, "Why is octopus blood blue?")
    assert not answer["abstained"]
    assert "An octopus has three hearts and blue blood." in answer["answer"]
    assert "hemocyanin" in answer["answer"]


def test_a_tool_no_document_names_abstains_though_written_in_lower_case(env):
    """A word the embedding model cuts into pieces (a tool's name, not a common word) that no
    document holds makes the answer abstain; a slip of a word the passages hold does not, nor
    does a common word they lack."""
    assert ask(env, "how long do I bake sourdough bread in a thermomix?")["abstained"]
    assert not ask(env, "how long do I bake sourdough bread in a dutch ovne?")["abstained"]
    assert not ask(env, "how long should I bake sourdough bread, roughly?")["abstained"]


def test_a_procedure_is_quoted_with_all_its_steps_in_order(env):
    answer = ask(env, "how do I bake sourdough bread?")["answer"]
    starts = [answer.find(f'"{n}. ') for n in range(1, 6)]
    assert -1 not in starts and starts == sorted(starts)
    assert '"## ' not in answer  # a Markdown heading is quoted by its words


@pytest.mark.parametrize(
    "question", ["Summarize the document about bread baking", "What is the main idea of the bread document?"]
)
def test_questions_about_a_document_are_answered_from_it(env, question):
    answer = ask(env, question)
    assert not answer["abstained"]
    assert answer["answer"].startswith("Baking Sourdough Bread at Home")
    assert {c["path"] for c in answer["citations"]} == {str(Path(answer["sources"][0]["path"]))}
    assert answer["sources"][0]["path"].endswith("bread_baking.md")
    steps = [n for n in range(1, 6) if f'"{n}. ' in answer["answer"]]
    assert steps in ([], [1, 2, 3, 4, 5])  # a procedure is quoted whole or not at all


@pytest.mark.parametrize(
    "question, file, words",
    [
        ("What is the chinese_tea.txt file for?", "chinese_tea.txt", "陆羽"),  # a summary
        ("what does the himalayan_peaks document say about Everest?", "himalayan_peaks.docx", "1953"),
        ("what is the page for chinese_tea about?", "chinese_tea.txt", "陆羽"),  # named after the noun
    ],
)
def test_a_document_named_by_its_file_name_answers(env, question, file, words):
    answer = ask(env, question)
    assert answer["sources"] and all(s["path"].endswith(file) for s in answer["sources"])
    assert words in answer["answer"]


def test_doc_restricts_a_question_to_one_document(env, docs, tmp_path):
    answer = ask(env, "What is this about?", "--doc", str(docs / "sample" / "octopus.html"))
    assert all(s["path"].endswith("octopus.html") for s in answer["sources"])
    missing = rag("ask", "anything", "--doc", str(tmp_path / "nowhere.md"), env=env)
    assert missing.returncode == 1 and "nowhere.md" in missing.stderr


@pytest.mark.parametrize("question", PHRASINGS)
def test_a_short_line_never_contradicts_the_evidence(env, question):
    answer = ask(env, question)
    assert not answer["abstained"] and "Marcus Dell led the team in sacks" in answer["answer"]
    short = answer["short_answer"]
    assert short in (None, "Marcus Dell"), short
    if short is not None:
        quoted = answer["answer"].split("\n", 1)[1]
        assert short in quoted


def test_the_readmes_examples_get_a_right_short_line_or_none(env):
    """The README asks these on fixtures/sample: "4 [1]" (a step's number) and "Henry" then
    "Winstanley [1]" (a name the PDF wrapped) were printed."""
    dough = ask(env, "How long does the dough rest?")
    assert "30 minutes" in dough["answer"] and dough["short_answer"] in (None, "30 minutes")
    built = ask(env, "Who built the lighthouse?")
    assert built["short_answer"] == "Henry Winstanley"
    assert built["answer"].split("\n")[0] == "Henry Winstanley [1]"


def test_a_pdf_answer_quotes_no_heading_from_another_page(env):
    """The heading of page 2 was quoted as the label of page 3's text (a PDF has no blank lines)."""
    answer = ask(env, "Who invented the Fresnel lens?")
    assert "Augustin-Jean Fresnel" in answer["answer"]
    assert "The Eddystone Lighthouse" not in answer["answer"]


def test_a_missing_model_or_reader_is_an_error_naming_it(env, tmp_path):
    for flag, path in (("--model", tmp_path / "none.gguf"), ("--reader", tmp_path / "no-reader")):
        done = rag("ask", "Why is octopus blood blue?", flag, str(path), env=env)
        assert done.returncode == 1 and str(path) in done.stderr and not done.stdout
