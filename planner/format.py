"""The one formatter at the edge: bytes, tokens, speeds and verdicts as text (CLI and app)."""

from __future__ import annotations

import re

from .units import GiB, KiB, MiB

VERDICT_TEXT = {
    "fits": "fits comfortably",
    "tight": "fits, but tight",
    "raise-limit": "fits if the wired limit is raised",
    "no-fit": "does not fit",
}
VERDICT_MARK = {"fits": "✓", "tight": "~", "raise-limit": "↑", "no-fit": "✗"}


def fmt_bytes(b: float, digits: int = 1) -> str:
    """Binary units, always labelled GiB/MiB/KiB (never mixed with GB)."""
    a = abs(b)
    if a >= GiB:
        return f"{b / GiB:.{digits}f} GiB"
    if a >= MiB:
        return f"{b / MiB:.{max(digits - 1, 0) if a >= 100 * MiB else digits}f} MiB"
    if a >= KiB:
        return f"{b / KiB:.{digits}f} KiB"
    return f"{int(b)} B"


def fmt_gb(b: float) -> str:
    """Decimal GB, the unit of file sizes on Hugging Face."""
    return f"{b / 1e9:.2f} GB"


def fmt_ctx(tokens: int) -> str:
    """8192 -> '8K', 47616 -> '46.5K', 768 -> '768'."""
    if tokens >= 1024:
        k = tokens / 1024
        return f"{k:.0f}K" if k == int(k) else f"{k:.1f}K"
    return f"{tokens:,}"


def fmt_params(n: float) -> str:
    return f"{n / 1e9:.1f} B" if n >= 1e9 else f"{n / 1e6:.0f} M"


def fmt_tok_s(x: float | None) -> str:
    if x is None:
        return "–"
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def fmt_tok_s_range(x: float | None, rng: tuple[float, float] | None) -> str:
    """A rate with its 80 % likely range: '8.2 tok/s (likely 6.9–9.4)'; without a range just the rate."""
    if x is None:
        return "–"
    if not rng or rng[0] == rng[1]:
        return f"{fmt_tok_s(x)} tok/s"
    return f"{fmt_tok_s(x)} tok/s (likely {fmt_tok_s(rng[0])}–{fmt_tok_s(rng[1])})"


SCORE_CAVEAT_MARK = "*"
SCORE_CAVEAT_NOTE = ("* the score does not compare like for like: measured by a third party, on the base model or "
                     "with another protocol (--json: score_caveats; the model's profile names the table)")


def fmt_score(score: float | None, caveats: list[str] | tuple[str, ...] = ()) -> str:
    """A published benchmark score, '68.9'; '19.4*' when it carries a caveat (SCORE_CAVEAT_NOTE); '–' unscored."""
    if score is None:
        return "–"
    return f"{score:.1f}" + (SCORE_CAVEAT_MARK if caveats else "")


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "–"
    if s < 1:
        return f"{s * 1000:.0f} ms"
    if s < 120:
        return f"{s:.1f} s"
    return f"{s / 60:.1f} min"


def verdict_text(v: str) -> str:
    return VERDICT_TEXT[v]


def table(rows: list[list[str]], header: list[str], align: str | None = None) -> str:
    """Plain monospace table; align is a string of 'l'/'r' per column."""
    cols = len(header)
    align = align or "l" * cols
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(cols)]

    def line(r):
        return "  ".join(str(c).ljust(w) if a == "l" else str(c).rjust(w) for c, w, a in zip(r, widths, align)).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), sep, *(line(r) for r in rows)])


# --------------------------------------------------------------------------- untrusted text (issue 34)
# Strings read from model files and hubs (a GGUF general.name, a hub file name) and URLs built from the environment
# (HF_ENDPOINT) reach the terminal and the page. Control characters (ESC sequences clear the screen, set the title,
# forge lines), bidi overrides and a URL's credentials are never shown as they are.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{0,20}://)[^/\s@?#]*@")
_SECRET_PARAM = re.compile(r"(?i)([?&;](?:[\w.-]*token|access_token|api_?key|key|sig|signature|password|passwd|pwd"
                           r"|secret|auth|authorization|credential|x-amz-[\w-]+)=)[^&\s#;]*")


def redact_urls(text: str) -> str:
    """Every URL in ``text`` without its credentials: ``http://user:pw@host`` -> ``http://***@host``, ``?token=x``
    -> ``?token=***`` (and api_key, signature, password, ... parameters)."""
    return _SECRET_PARAM.sub(r"\1***", _USERINFO.sub(r"\1***@", text))


def safe_text(text: str, keep_newlines: bool = True) -> str:
    """``text`` with its control and bidi characters shown as escapes (``\\x1b``, ``\\u202e``) and URLs redacted:
    safe to print to a terminal or a page. Tabs (and newlines unless ``keep_newlines`` is False) are kept."""
    def esc(m: re.Match) -> str:
        c = m.group(0)
        return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"

    out = _CONTROL.sub(esc, redact_urls(text))
    return out if keep_newlines else out.replace("\n", "\\n")
