"""`rag ask` through the real command: a word every page of the collection holds (its product's
name) does not outweigh the subject a definition question asks about."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ingested_pages
from runner import rag

# Every page names the product once; the page about sprockets names them in every sentence,
# and only a remark that is no definition names the product beside them.
PAGES = {
    "sprockets.md": "# Sprockets\n\nA sprocket is a toothed wheel that meshes with the chain and turns the "
    "rear wheel.\n\nSprockets wear down over time. Check your sprockets every month. Worn sprockets "
    "make the chain skip. Clean sprockets last longer than dirty ones. Replace sprockets together "
    "with the chain. Sprockets on the Zephyr bike come in three sizes.\n",
    "brakes.md": "# Brakes\n\nEvery Zephyr bike has two disc brakes. Squeeze both levers gently to stop.\n",
    "saddle.md": "# Saddle\n\nThe Zephyr saddle slides up and down. Loosen the clamp, set the height, "
    "then tighten it.\n",
    "lights.md": "# Lights\n\nZephyr lights switch on by themselves at dusk. Charge them through the "
    "USB port.\n",
}


@pytest.fixture(scope="module")
def env(tmp_path_factory, model_cache_dir) -> dict[str, str]:
    return ingested_pages(tmp_path_factory, model_cache_dir, "collection", PAGES)


def test_a_definition_question_naming_the_product_quotes_the_definition(env):
    done = rag("ask", "what is a sprocket in Zephyr?", "--json", "--no-cache", env=env)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)["answer"]
    assert (
        '"A sprocket is a toothed wheel that meshes with the chain and turns the rear wheel." [1]' in answer
    )


def test_the_share_of_chunks_holding_a_term_is_read_from_the_index(env):
    from ragcli.analysis import analyze
    from ragcli.store.chooser import open_backend

    backend = open_backend(Path(env["RAG_INDEX"]))
    try:
        group = next(iter(backend.groups()))
        shares = backend.lexical(group).term_shares(analyze("Zephyr sprocket dusk"))
    finally:
        backend.close()
    zephyr, sprocket, dusk = analyze("Zephyr sprocket dusk")
    assert shares[zephyr] == 1.0 and shares[sprocket] == shares[dusk] == 0.25
