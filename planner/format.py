"""The one formatter at the edge: bytes, tokens, speeds and verdicts as text (CLI and app)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .units import GiB, KiB, MiB

if TYPE_CHECKING:
    from .advice import RuntimeVerdict
    from .power import EnergyPerToken, ServeEnergy
    from .results import KVLayout, SmallestNeed, WiredLimit
    from .streaming import StreamingEstimate

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


def fmt_kv_per_token(layout: KVLayout) -> str:
    """'20.0 KiB + 62.8 MiB/seq state': a KVLayout's cache per token, with its sliding part and its state per
    sequence (the CLI's KV table and the web form's)."""
    per_tok = fmt_bytes(layout.bytes_per_token)
    if layout.swa_bytes_per_token:
        per_tok += f" + {fmt_bytes(layout.swa_bytes_per_token)} SWA (window {layout.window})"
    if layout.state_bytes_per_seq:
        per_tok += f" + {fmt_bytes(layout.state_bytes_per_seq)}/seq state"
    return per_tok


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
                     "with another protocol ([[json]]: score_caveats; the model's profile names the table)")


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


def cached_label(share: float) -> str:
    """How every TTFT states the prompt-cache share it assumed (CLI text, JSON has cached_prefix_share, app):
    'no prompt cached' or '75 % of each prompt cached'."""
    if not share:
        return "no prompt cached"
    pct = f"{share * 100:.3g}"
    if float(pct) >= 100:  # a share below 1 never reads as the whole prompt (1 is refused: a token is prefilled)
        pct = f"{share * 100:.12g}" if share * 100 < 99.9999999999 else "99.9999999999"
    return f"{pct} % of each prompt cached"


def lengths_text(prompt: int, gen: int, share: float) -> str:
    """'prompt 2,048 + 750 generated tokens (75 % of each prompt cached)': the workload point and prompt-cache
    share an answer used, in the header of every command that gives a speed (the default stated, not implied)."""
    return f"prompt {prompt:,} + {gen:,} generated tokens ({cached_label(share)})"


def ttft_text(s: float | None, share: float) -> str:
    """'TTFT 1.2 s (no prompt cached)': a time to first token with the prompt-cache share it assumed."""
    return f"TTFT {fmt_seconds(s)} ({cached_label(share)})"


def need_text(n: SmallestNeed) -> str:
    """The smallest need in the words plan and recommend both say (planner.search.smallest_need)."""
    return (f"the smallest option ({n.runtime} {n.quant}, KV cache {n.kv_type}) needs {fmt_bytes(n.memory_bytes)} "
            f"and its runtime's {fmt_bytes(n.margin_bytes)} margin")


def over_text(n: SmallestNeed, wired: WiredLimit) -> str:
    """need_text and how far past the most the GPU may have it goes (SmallestNeed.over): plan's and models' words."""
    return (f"{need_text(n)}, {fmt_bytes(n.over(wired))} over the {fmt_bytes(wired.max_raise_bytes)} the GPU may "
            "have with the limit raised")


def verdict_text(v: str) -> str:
    return VERDICT_TEXT[v]


def table(rows: list[list[str]], header: list[str], align: str | None = None) -> str:
    """Plain monospace table; align is a string of 'l'/'r' per column."""
    cols = len(header)
    align = align or "l" * cols
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(cols)]

    def line(r: list[str]) -> str:
        return "  ".join(str(c).ljust(w) if a == "l" else str(c).rjust(w) for c, w, a in zip(r, widths, align)).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), sep, *(line(r) for r in rows)])


def _versus(v: RuntimeVerdict) -> str:
    if v.code == "only":
        return f"{v.runtime}, the only runtime asked for (or fitting) here"
    mark = "" if v.other_meets_targets else ", which misses the targets"
    if v.code == "same":
        return (f"either: {v.other}'s best ({v.other_quant}{mark}) decodes within 5 % of it, so quality and "
                f"memory decide, in favour of {v.runtime}")
    pct = abs((v.decode_ratio or 1) - 1) * 100
    if v.code == "faster":
        return f"{v.runtime}: it decodes {pct:.0f} % faster than {v.other}'s best ({v.other_quant}{mark})"
    return (f"{v.runtime}, for quality or the targets: {v.other}'s best ({v.other_quant}{mark}) decodes "
            f"{(1 / (v.decode_ratio or 1) - 1) * 100:.0f} % faster")


def versus_text(verdicts: list[RuntimeVerdict]) -> str:
    """'mlx-lm or llama.cpp? ...': planner.advice.runtime_verdicts in one sentence (CLI and web form alike)."""
    return "mlx-lm or llama.cpp? " + "; ".join(_versus(v) for v in verdicts) + "."


# --------------------------------------------------------------------------- beyond memory and the power bill
def streaming_lines(runtime: str, quant: str, s: StreamingEstimate) -> list[str]:
    """One option's 'streamed from SSD' verdict, the recipe, and whether it only reads or would swap."""
    gb = 1e9
    what = (f"routed experts that miss the {fmt_bytes(s.expert_cache_bytes)} expert cache (hit rate "
            f"{s.hit_rate:.0%}, {s.active_expert_fraction:.1%} of the experts per token)"
            if s.routed_expert_bytes and s.expert_cache_bytes else
            "every layer that is not in RAM (the page cache misses a scan larger than itself)")
    ssd = s.ssd
    src = f"{ssd.basis}: {ssd.rows[0]}" + (f" +{len(ssd.rows) - 1} more" if len(ssd.rows) > 1 else "")
    spread = "" if s.decode_tok_s_range[0] < s.decode_tok_s_range[1] * 0.98 else " (one SSD measurement: no spread)"
    resident = s.resident
    if resident:
        reads = (f"  reads nothing per token from the SSD: the {fmt_bytes(s.always_read_bytes + s.expert_cache_bytes)} "
                 "a token may read stay in RAM; only weights no token reads (such as most of the embedding table) "
                 "stay on the SSD")
    else:
        reads = (f"  reads {s.bytes_per_token / gb:.2f} GB per token from the SSD: {what}; "
                 + (f"{fmt_bytes(s.always_read_bytes)} dense weights stay resident" if s.expert_cache_bytes else
                    f"at best {fmt_bytes(s.ram_for_weights_bytes)} of the {fmt_bytes(s.always_read_bytes)} read per "
                    f"token stay cached ({(s.bytes_per_token_range[0]) / gb:.2f} GB/token)"))
    out = [f"{runtime} {quant}: over what macOS can give the GPU → "
           f"{'mapped from the SSD, read once' if resident else 'streamed from SSD'}: decode ≈ "
           f"{fmt_tok_s_range(s.decode_tok_s, s.decode_tok_s_range)}{spread}, {s.bound}-bound",
           reads,
           f"  SSD read {ssd.read_bytes_s / gb:.1f} GB/s ({ssd.storage_gb} GB SSD; {src}); compute alone "
           f"{fmt_tok_s(1 / s.compute_s_per_token)} tok/s; an engine that read while computing: ≤ "
           f"{fmt_tok_s(s.overlapped_tok_s)} tok/s"]
    if s.swaps:
        out.append(f"  would swap: KV cache and buffers ({fmt_bytes(s.anon_bytes)}) exceed what macOS can spare: "
                   "pages would be written to the SSD (wear); shorten the context or quantize the KV")
    elif resident:
        out.append("  reads only: the GGUF is mapped read-only and its pages read once, nothing is written (no SSD "
                   "wear)")
    else:
        out.append("  reads only: the GGUF is mapped read-only, macOS drops and re-reads its pages, nothing is "
                   "written (no SSD wear, only time)")
    out.append("  run: llama-server -m <model>-" + quant + ".gguf -ngl 99 -c <context>   (mmap is the default, "
               "--load-mode auto; not --load-mode mlock/none: they load every weight into RAM and would swap)")
    return out


def energy_line(runtime: str, quant: str, e: EnergyPerToken) -> str:
    pm = e.power
    lean = " (from full-load readings: leans high)" if pm.decode_basis == "load" else ""
    line = (f"  {runtime} {quant}{' (streamed)' if e.streamed else ''}: {e.decode_j_per_token:.2f} J/token decoding (likely {e.decode_j_range[0]:.2f}–"
            f"{e.decode_j_range[1]:.2f}) at {e.decode_w:.0f} W{lean}")
    if e.prefill_j_per_token is not None:
        line += f", {e.prefill_j_per_token:.3f} J/token prefilling"
    if e.battery_hours_decoding is not None:
        line += (f"; {e.battery_hours_decoding:.1f} h of generation on a full {e.battery_product} battery "
                 f"({e.battery_wh:g} Wh)")
    return line


def energy_text(e: ServeEnergy) -> str:
    """Words for planner.beyond.ServeEnergy: kWh and money per day at this load, the rate running all day."""
    d, pm = e.daily, e.daily.power
    lean = "; from full-load readings, leans high" if pm.decode_basis == "load" else ""
    per = (f"; {e.j_per_generated_token:.2f} J per generated token, ${e.usd_per_million_tokens:.3f} per million"
           if e.usd_per_million_tokens is not None else "")
    return (f"  energy        {d.kwh_per_day:.2f} kWh/day (likely {d.kwh_per_day_range[0]:.2f}–"
            f"{d.kwh_per_day_range[1]:.2f}) = ${d.usd_per_day:.2f}/day at ${d.kwh_price_usd:g}/kWh: GPU busy "
            f"{d.busy_share:.0%} of the day at {pm.decode_w:.0f} W, idle {pm.idle_w:.1f} W{lean}{per}")


# --------------------------------------------------------------------------- untrusted text (issue 34)
# Strings read from model files and hubs (a GGUF general.name, a hub file name) and URLs built from the environment
# (HF_ENDPOINT) reach the terminal and the page. Control characters (ESC sequences clear the screen, set the title,
# forge lines), bidi overrides and a URL's credentials are never shown as they are.
# The control and bidi characters, each shown as its escape (\x1b, \u202e): a translation table, not a regular
# expression (compiling one was ~0.3 % of every start-up, and every answer goes through safe_text)
_CONTROL_RANGES = ((0x00, 0x08), (0x0b, 0x1f), (0x7f, 0x9f), (0x61c, 0x61c), (0x200e, 0x200f), (0x202a, 0x202e),
                   (0x2066, 0x2069))
_ESCAPES = {c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for lo, hi in _CONTROL_RANGES for c in range(lo, hi + 1)}
_USERINFO = r"(?i)\b([a-z][a-z0-9+.-]{0,20}://)[^/\s@?#]*@"
_SECRET_PARAM = (r"(?i)([?&;](?:[\w.-]*token|access_token|api_?key|key|sig|signature|password|passwd|pwd"
                 r"|secret|auth|authorization|credential|x-amz-[\w-]+)=)[^&\s#;]*")


def _may_hold_secret(text: str) -> bool:
    """Whether _SECRET_PARAM can match: it needs a '=' preceded by a run of word characters, '.' or '-' (\\w is
    str.isalnum() or '_') that starts right after a '?', '&' or ';'. Most text has none, and then the expression is
    never compiled."""
    i = text.find("=")
    while i != -1:
        j = i
        while j > 0 and (text[j - 1].isalnum() or text[j - 1] in "_.-"):
            j -= 1
        if j > 0 and text[j - 1] in "?&;":
            return True
        i = text.find("=", i + 1)
    return False


def redact_urls(text: str) -> str:
    """Every URL in ``text`` without its credentials: ``http://user:pw@host`` -> ``http://***@host``, ``?token=x``
    -> ``?token=***`` (and api_key, signature, password, ... parameters), a Hugging Face token ``hf_...`` ->
    ``hf_***``. The expressions are compiled only for text they can match (a '://', an 'hf_', a parameter's '=')."""
    if "://" in text:
        text = re.sub(_USERINFO, r"\1***@", text)
    if "hf_" in text:  # a Hugging Face access token pasted where a name goes: hf_ + 34 letters and digits
        text = re.sub(r"\bhf_[A-Za-z0-9]{30,}", "hf_***", text)
    return re.sub(_SECRET_PARAM, r"\1***", text) if _may_hold_secret(text) else text


def safe_text(text: str, keep_newlines: bool = True) -> str:
    """``text`` with its control and bidi characters shown as escapes (``\\x1b``, ``\\u202e``) and URLs redacted:
    safe to print to a terminal or a page. Tabs (and newlines unless ``keep_newlines`` is False) are kept."""
    out = redact_urls(text)
    # every escaped character is unprintable (categories Cc, Cf): printable text (but its tabs and newlines, which
    # stay) has none, and is not translated character by character
    if not out.replace("\n", "").replace("\t", "").isprintable():
        out = out.translate(_ESCAPES)
    return out if keep_newlines else out.replace("\n", "\\n")
