"""Words for the streamed-from-SSD estimates and the energy figures of a plan (planner/streaming.py, planner/power.py)."""

from __future__ import annotations

from planner.format import energy_line, fmt_tok_s_range, streaming_lines


def render_streaming(p) -> list[str]:
    """The fastest streamed option in full; the others on one line each."""
    opts = sorted((o for o in p.options if o.streaming is not None), key=lambda o: -o.streaming.decode_tok_s)
    if not opts:
        return []
    out = streaming_lines(opts[0].runtime, opts[0].quant, opts[0].streaming)
    for o in opts[1:]:
        s = o.streaming
        reads = ("nothing read per token" if s.resident else
                 f"{s.bytes_per_token / 1e9:.2f} GB read per token")
        out.append(f"{o.runtime} {o.quant}: {'mapped' if s.resident else 'streamed'} from SSD: "
                   f"decode ≈ {fmt_tok_s_range(s.decode_tok_s, s.decode_tok_s_range)}, {reads}"
                   + ("; would swap" if s.swaps else ""))
    return out + [""]


def render_energy(p) -> list[str]:
    rows = [energy_line(o.runtime, o.quant, o.energy) for o in p.options if o.energy is not None]
    if not rows:
        return []
    pm = next(o.energy.power for o in p.options if o.energy is not None)
    return [f"Energy (wall power: idle {pm.idle_w:.1f} W {'measured' if pm.idle_basis == 'measured' else '(median of measured Macs)'}; "
            "sources in docs/model-facts.md):", *rows, ""]
