"""planner.format.safe_text and redact_urls: the control characters by a translation table and the URL expressions
compiled only for text they can match give what the three regular expressions gave on every text."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from planner.format import _may_hold_secret, redact_urls, safe_text

# the expressions as they were, applied to every text (the reference)
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{0,20}://)[^/\s@?#]*@")
SECRET = re.compile(r"(?i)([?&;](?:[\w.-]*token|access_token|api_?key|key|sig|signature|password|passwd|pwd"
                    r"|secret|auth|authorization|credential|x-amz-[\w-]+)=)[^&\s#;]*")
HF_TOKEN = re.compile(r"\bhf_[A-Za-z0-9]{30,}")


def redacted(text: str) -> str:
    return SECRET.sub(r"\1***", HF_TOKEN.sub("hf_***", USERINFO.sub(r"\1***@", text)))


def reference(text: str, keep_newlines: bool = True) -> str:
    def esc(m: re.Match[str]) -> str:
        c = m.group(0)
        return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"

    out = CONTROL.sub(esc, redacted(text))
    return out if keep_newlines else out.replace("\n", "\\n")


PIECES = ["http://", "hf_", "hf_" + "a1B" * 10, "https://u:p@h", "://", "@", "?", "&", ";", "=", "token", "Token",
          "api_key", "apikey", "KEY",
          "sig", "signature", "password", "pwd", "secret", "auth", "credential", "x-amz-date", "X-Amz-", "ſecret",
          "\u212aey", "-", ".", "_", "é", "٣", " ", "\t", "\n", "\x1b", "\x9b", "\u202e", "\u2066", "\u061c", "\x7f",
          "#", "/", "a", "Z", "0"]


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(PIECES) | st.characters(), max_size=30), st.booleans())
def test_safe_text_is_the_expressions(parts, keep):
    text = "".join(parts)
    assert safe_text(text, keep) == reference(text, keep)
    assert redact_urls(text) == redacted(text)


def test_a_hugging_face_token_is_never_printed():
    # a token pasted where a model name goes (`plan --model hf_...`) was echoed back whole in the error line
    token = "hf_" + "aB3" * 11 + "x"
    assert token not in safe_text(f"unknown model --model {token!r}; see `plan models`")
    assert safe_text(f"'{token}'") == "'hf_***'"
    assert safe_text("hf_short and shf_" + "a" * 40) == "hf_short and shf_" + "a" * 40


def test_the_secret_check_is_only_a_shortcut():
    """_may_hold_secret is False only where the parameter expression finds nothing."""
    for text in ["a?token=1", "x;y.api-key=2", "p50=1 / p90=9", "iogpu.wired_limit_mb=52224", "?=", "&\u212aey=v",
                 "q=1&sig=abc", "sudo sysctl iogpu.wired_limit_mb=49152; then ?pwd=x"]:
        assert _may_hold_secret(text) or not SECRET.search(text), text
    assert not _may_hold_secret("sudo sysctl iogpu.wired_limit_mb=52224; ok")
    assert _may_hold_secret("http://h/?token=x")


def test_every_escaped_character_is_unprintable():
    """safe_text translates only text that is not printable (tabs and newlines aside): each escaped character must
    be one str.isprintable() refuses, or printable text would keep it."""
    from planner.format import _ESCAPES

    assert _ESCAPES and not [c for c in _ESCAPES if chr(c).isprintable()]
    assert "\t" not in map(chr, _ESCAPES) and "\n" not in map(chr, _ESCAPES)
