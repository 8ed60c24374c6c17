"""Query-term spans and snippet windows (ragcli.cli.snippets)."""

from ragcli.cli.snippets import snippet, term_spans


def test_term_spans_follow_stems_and_cjk_bigrams():
    text = "Resetting routers: reset the Router."
    spans = term_spans(text, "router reset")
    assert [text[s:e] for s, e in spans] == ["Resetting", "routers", "reset", "Router"]
    chinese = "唐代的陆羽写成了《茶经》。"
    assert [chinese[s:e] for s, e in term_spans(chinese, "陆羽的茶经")] == ["陆羽", "茶经"]


def test_snippet_centres_on_the_first_term():
    text = "filler words here. " * 40 + "The lighthouse lamp was lit."
    window, spans = snippet(text, "lighthouse", width=80)
    assert window.startswith("…") and "lighthouse" in window and len(window) <= 82
    assert [window[s:e] for s, e in spans] == ["lighthouse"]
