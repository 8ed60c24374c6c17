"""The `rag serve` page in a real headless browser (Debian's chromium through Playwright):
search by keyboard, an answer streamed into the page, a citation opening the cited PDF at its
page, the indexed text of a hit, and a phone-width window. Saves a screenshot of the page to
$RAG_SERVE_SCREENSHOT (default: the test's tmp folder)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from serving import clean_env, running_server

CHROMIUM = next(
    (
        path
        for path in (shutil.which("chromium"), "/usr/bin/chromium", shutil.which("chromium-browser"))
        if path
    ),
    None,
)
playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the test extra)")
if CHROMIUM is None or not os.path.exists(CHROMIUM):
    pytest.skip("no chromium found (apt-get install chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory, model_cache_dir, corpus_index):
    base = tmp_path_factory.mktemp("browser")
    env = clean_env(base / "home", model_cache_dir, RAG_MODE="hybrid")
    index = corpus_index("three-docs").copy(base / "index")  # a copy: the server caches answers
    with running_server(env, "--index", str(index)) as url:
        yield url


@pytest.fixture
def page(server):
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1000, "height": 900})
        tab = context.new_page()
        tab.goto(server)
        yield tab
        browser.close()


def test_search_ask_and_open_a_citation(page, tmp_path):
    expect = playwright.expect
    expect(page.locator("#index-info")).to_contain_text("3 documents")
    page.keyboard.press("/")  # the keyboard way in
    page.keyboard.type("lighthouse Alexandria")
    page.keyboard.press("Enter")
    first = page.locator("#hits li").first
    expect(first.locator("a.source")).to_contain_text("lighthouses.pdf")
    expect(first.locator("mark", has_text="Alexandria").first).to_be_visible()

    page.fill("#question", "How is sourdough bread made?")
    page.select_option("#style", "generative")
    page.press("#question", "Enter")
    # A token arrived while the answer was still being written: it streams.
    page.wait_for_function("document.getElementById('ask-state').textContent === 'answering…'")
    expect(page.locator("#ask-state")).to_contain_text("answered", timeout=300_000)
    expect(page.locator("#citations li").first).to_contain_text("bread_baking.md")
    page.locator("#citations li a").first.click()  # a text file: its indexed text in the page
    expect(page.locator("#viewer")).to_be_visible()
    expect(page.locator("#viewer-text")).to_contain_text("starter")
    page.keyboard.press("Escape")
    expect(page.locator("#viewer")).to_be_hidden()

    page.fill("#question", "When was the Pharos of Alexandria built?")
    page.select_option("#style", "")
    page.click("#ask-button")
    expect(page.locator("#answer")).to_contain_text("280 BC", timeout=300_000)
    citation = page.locator("#answer a.source").first
    with page.context.expect_page() as opened:
        citation.click()
    pdf = opened.value
    assert "/files/" in pdf.url and pdf.url.endswith("lighthouses.pdf#page=1")
    response = page.request.get(pdf.url.split("#")[0])
    assert response.status == 200 and response.headers["content-type"] == "application/pdf"
    shot = Path(os.environ.get("RAG_SERVE_SCREENSHOT") or tmp_path / "serve.png")
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000


def test_a_question_is_asked_in_the_group_the_form_names(page):
    playwright.expect(page.locator("#group option", has_text="medium")).to_have_count(1)
    page.select_option("#group", "medium")
    page.fill("#question", "How is sourdough bread made?")
    with page.expect_request("**/ask") as sent:
        page.click("#ask-button")
    assert sent.value.post_data_json["group"] == "medium"
    playwright.expect(page.locator("#ask-state")).to_contain_text("answered", timeout=300_000)


def test_readable_at_phone_width(page):
    page.set_viewport_size({"width": 375, "height": 800})
    page.fill("#q", "lighthouse")
    page.press("#q", "Enter")
    playwright.expect(page.locator("#hits li").first).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 375


def test_a_slide_and_a_sheet_are_named_in_their_own_unit(tmp_path, model_cache_dir, corpus_index):
    """A hit in a deck says "slide N", one in a spreadsheet "sheet N, rows A-B", as the CLI does."""
    env = clean_env(tmp_path / "home", model_cache_dir, RAG_MODE="bm25")
    index = corpus_index("office").copy(tmp_path / "index")
    with running_server(env, "--index", str(index)) as url, playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        tab = browser.new_page()
        tab.goto(url)
        tab.fill("#q", "Tieguanyin oolong tonnes")
        tab.press("#q", "Enter")
        first = tab.locator("#hits li a.source").first
        playwright.expect(first).to_contain_text("· sheet 1, rows 2-5")
        tab.fill("#q", "Venice first coffee house")
        tab.press("#q", "Enter")
        playwright.expect(first).to_contain_text("coffee_houses.pptx · slide")
        browser.close()
