"""Untrusted strings on the page (issue 34): a GGUF general.name or a hub file name is shown as literal text,
and a URL never with its credentials."""

from __future__ import annotations

from app.readings import for_web, md_text
from planner.format import redact_urls, safe_text


def test_control_characters_are_shown_as_escapes():
    s = safe_text("a\x1b[2J\x1b]0;t\x07\rb\u202ec\x9b\td\ne")
    assert s == "a\\x1b[2J\\x1b]0;t\\x07\\x0db\\u202ec\\x9b\td\ne"
    assert safe_text("x\ny", keep_newlines=False) == "x\\x0ay".replace("\\x0a", "\\n")


def test_url_credentials_are_redacted():
    assert redact_urls("cannot reach http://user:pw@host:8080/api?token=abc&x=1&api_key=k") == \
        "cannot reach http://***@host:8080/api?token=***&x=1&api_key=***"
    assert redact_urls("https://huggingface.co/org/m?revision=main") == "https://huggingface.co/org/m?revision=main"


def test_a_name_cannot_forge_markdown_on_the_page():
    shown = md_text("Evil [click](http://x) ![i](y) *b* <script>\x1b[2J")
    for raw in ("[click]", "](", "![", "<script>", "\x1b"):
        assert raw not in shown, shown
    assert for_web("no network: cannot reach http://u:secret@h for x/y") .count("secret") == 0
