"""A capable model's summary of a whole document: map-reduce over its text in order."""

from __future__ import annotations

from fakes import EchoGenerator, HashEmbedder
from ragcli.answer.ask import Asker
from ragcli.answer.context import Source
from ragcli.answer.model_summary import final_prompt, split_to_budget
from ragcli.answer.options import AskOptions
from ragcli.config import load_settings
from ragcli.retrieval.search import QueryOptions

SECTIONS = [
    f"Section {n}\n\nThe tide at harbour {n} rises twice a day. Boats at harbour {n} leave at high water."
    for n in range(1, 7)
]


def count_words(text: str) -> int:
    return len(text.split())


def model_summary(model, source, title, *, budget, max_tokens, shorter=None) -> str:
    """The summary as the Asker writes it: the map step, then the last prompt's reply."""
    messages = final_prompt(model, source, title, budget=budget, shorter=shorter)
    return model.complete(messages, max_tokens=max_tokens).strip() if messages else ""


def test_the_text_is_split_in_order_into_parts_within_the_budget():
    text = "\n\n".join(SECTIONS)
    parts = split_to_budget(text, 40, count_words)
    assert len(parts) > 1 and all(count_words(part) <= 40 for part in parts)
    assert " ".join(" ".join(parts).split()) == " ".join(text.split())  # nothing lost, nothing reordered
    long = " ".join(f"Word{n} is here." for n in range(30))  # one paragraph over the budget
    assert all(count_words(part) <= 20 for part in split_to_budget(long, 20, count_words))


def test_each_part_is_summarised_then_the_notes_are_combined():
    notes = iter(["Harbours one to three.", "Harbours four to six."])

    def reply(messages):
        return next(notes, "The tides of six harbours and when their boats leave.")

    model = EchoGenerator(reply=reply)
    source = Source(1, "tides.md", None, 1.0, "\n\n".join(SECTIONS), (1,))
    summary = model_summary(model, source, "Tides", budget=60, max_tokens=200)
    assert summary == "The tides of six harbours and when their boats leave."
    parts, combine = [call[0][-1]["content"] for call in model.calls[:-1]], model.calls[-1][0][-1]["content"]
    assert len(parts) == 2 and "harbour 1 " in parts[0] and "harbour 6 " in parts[1]
    assert "Part 1: Harbours one to three.\nPart 2: Harbours four to six." in combine


def test_a_short_document_is_summarised_in_one_call():
    model = EchoGenerator(reply="About the tide at one harbour.")
    source = Source(1, "tides.md", None, 1.0, SECTIONS[0], (1,))
    summary = model_summary(model, source, "Tides", budget=500, max_tokens=200)
    assert summary == "About the tide at one harbour."
    assert len(model.calls) == 1 and "Document: Tides" in model.calls[0][0][-1]["content"]


def test_a_long_document_is_first_cut_to_its_extractive_summary():
    model = EchoGenerator(reply="Tides.")
    source = Source(1, "tides.md", None, 1.0, "\n\n".join(SECTIONS * 20), (1,))
    model_summary(model, source, "Tides", budget=60, max_tokens=200, shorter=lambda chars: SECTIONS[0])
    assert len(model.calls) == 1 and SECTIONS[0].split("\n\n")[1] in model.calls[0][0][-1]["content"]


def test_a_capable_model_writes_the_summary_above_the_quoted_one(tmp_path, isolated_home, monkeypatch):
    from ragcli.ingest.pipeline import ingest
    from ragcli.types import ChunkSettings

    fake = HashEmbedder(dimension=512)
    monkeypatch.setattr("ragcli.generation.chooser.embedder_for", lambda *args, **kwargs: fake)
    root = tmp_path / "docs"
    root.mkdir()
    (root / "tides.md").write_text("# Tides\n\n" + "\n\n".join(SECTIONS))
    ingest(isolated_home, [root], embedder=fake, group="medium", chunking=ChunkSettings("word", 40, 0))
    model = EchoGenerator(reply="A guide to the tides of six harbours.")
    model.capable = True
    options = AskOptions(query=QueryOptions(mode="bm25", top_k=3), use_cache=False)
    with Asker(isolated_home, settings=load_settings(), generator=model) as asker:
        *pieces, answer = asker.stream("summarize tides.md", options)
        quoted = asker.ask("summarize tides.md", AskOptions(query=options.query, answer_style="evidence"))
    first, *rest = answer.text.split("\n")
    assert first == "A guide to the tides of six harbours. [1]" and answer.model == "echo"
    assert "\n".join(rest) == quoted.text and quoted.model == "evidence"  # the extractive summary under it
    assert answer.citations == (1,) and answer.sources[0].path.endswith("tides.md")
    assert pieces[:3] == ["A ", "guide ", "to "] and "".join(pieces) == answer.text  # streamed as written


def test_a_documents_central_sentences_are_embedded_once_for_both_summaries(
    tmp_path, isolated_home, monkeypatch
):
    from ragcli.ingest.pipeline import ingest
    from ragcli.types import ChunkSettings

    fake = HashEmbedder(dimension=512)
    monkeypatch.setattr("ragcli.generation.chooser.embedder_for", lambda *args, **kwargs: fake)
    root = tmp_path / "docs"
    root.mkdir()
    harbours = [f"The tide at harbour {n} rises twice a day, boats leave at high water." for n in range(200)]
    (root / "tides.md").write_text("# Tides\n\n" + "\n\n".join(harbours))  # over two parts
    ingest(isolated_home, [root], embedder=fake, group="medium", chunking=ChunkSettings("word", 200, 0))
    model = EchoGenerator(reply="Tides.", n_ctx=512)
    model.capable = True
    options = AskOptions(query=QueryOptions(mode="hybrid", top_k=3), use_cache=False, max_tokens=50)
    fake.embedded_texts.clear()
    with Asker(isolated_home, settings=load_settings(), generator=model) as asker:
        asker.ask("summarize tides.md", options)
    sentence = harbours[3]
    assert len(model.calls) > 1  # the document was cut to its extractive summary, then summarised
    assert fake.embedded_texts.count(sentence) == 1  # for both the quoted summary and the model's cut
