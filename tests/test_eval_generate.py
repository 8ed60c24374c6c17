"""Synthetic QA generation: reply parsing, validation, sampling tied to chunks (scripted model)."""

from __future__ import annotations

import pytest
from fakes import ScriptedGenerator

from ragcli.evaluation.generate import GRAMMAR, generate_qa, parse_reply, validate

CONTEXT = (
    "Kilimanjaro, the highest mountain in Africa at 5,895 metres, still carries ice fields near its summit."
)


def test_parse_reply_reads_question_and_answer_lines():
    assert parse_reply("Question: How high is Kilimanjaro?\nAnswer: 5,895 metres.") == (
        "How high is Kilimanjaro?",
        "5,895 metres",
    )
    assert parse_reply('question:  How   high is it ?\n\nANSWER: "5,895 metres"') == (
        "How high is it ?",
        "5,895 metres",
    )
    assert parse_reply("Kilimanjaro is high.") is None
    assert parse_reply("Question: How high is it\nAnswer: 5,895 metres") is None  # no "?"


@pytest.mark.parametrize(
    "question, answer, keep",
    [
        ("How high is Kilimanjaro?", "5,895 metres", True),
        ("Which is the highest mountain in Africa?", "Kilimanjaro", True),
        ("How high is Kilimanjaro", "5,895 metres", False),  # not a question
        ("Height?", "5,895 metres", False),  # a fragment
        ("How high is Kilimanjaro?", "about 6,000 feet", False),  # not in the chunk
        ("What is the highest mountain in Africa?", "the highest mountain in Africa", False),  # echo
        ("How high is Kilimanjaro?", "", False),
        ("What does its summit carry?", " ".join(["ice"] * 13), False),  # too long
        ("What does its summit still carry?", "ice fields near summit", True),  # most words present
    ],
)
def test_validate_keeps_only_grounded_well_formed_pairs(question, answer, keep):
    assert validate(question, answer, CONTEXT) is keep


def test_generate_ties_records_to_chunks_and_drops_malformed(fixtures_dir):
    def reply(prompt: str) -> str:
        passage = prompt.rsplit("Passage:\n", 1)[1]
        if "Gatun" in passage:
            return "Question: Which lake supplies the locks?\nAnswer: Gatun Lake"
        if "honeybee" in passage:
            return "no question here"  # malformed
        return "Question: Which lake supplies the locks?\nAnswer: Gatun Lake"  # not in this chunk

    generator = ScriptedGenerator(reply)
    records = list(generate_qa(fixtures_dir / "beir-mini", generator, n=5, seed=1, max_attempts=34))
    # One pass over the 34 passages: only the Panama Canal passage grounds the answer.
    assert len(generator.calls) == 34 and generator.calls[0]["grammar"] == GRAMMAR
    kept = [(r["relevant"], r["chunk_id"], r["answers"]) for r in records]
    assert kept == [(["d18"], "d18#0", ["Gatun Lake"])]
    assert "Gatun Lake" in records[0]["context"]


def test_generate_from_a_folder_of_documents_uses_file_paths(fixtures_dir):
    def reply(prompt: str) -> str:
        words = prompt.rsplit("Passage:\n", 1)[1].split()
        return f"Question: What comes after the first words of this passage?\nAnswer: {words[0]} {words[1]}"

    records = list(generate_qa(fixtures_dir / "docs", ScriptedGenerator(reply), n=3, seed=0))
    assert len(records) == 3
    for record in records:
        assert record["relevant"][0].startswith(str(fixtures_dir / "docs"))
        assert record["context"].split()[0] in record["answers"][0]
    assert len({record["_id"] for record in records}) == 3
