"""Words for the streamed-from-SSD estimates and the energy figures of a plan (planner/streaming.py, planner/power.py)."""

from __future__ import annotations

from planner.format import fmt_bytes, fmt_tok_s, fmt_tok_s_range


def streaming_lines(runtime: str, quant: str, s) -> list[str]:
    """One option's 'streamed from SSD' verdict, the recipe, and whether it only reads or would swap."""
    gb = 1e9
    what = (f"routed experts that miss the {fmt_bytes(s.expert_cache_bytes)} expert cache (hit rate "
            f"{s.hit_rate:.0%}, {s.active_expert_fraction:.1%} of the experts per token)"
            if s.routed_expert_bytes and s.expert_cache_bytes else
            "every layer that is not in RAM (the page cache misses a scan larger than itself)")
    ssd = s.ssd
    src = f"{ssd.basis}: {ssd.rows[0]}" + (f" +{len(ssd.rows) - 1} more" if len(ssd.rows) > 1 else "")
    spread = "" if s.decode_tok_s_range[0] < s.decode_tok_s_range[1] * 0.98 else " (one SSD measurement: no spread)"
    out = [f"{runtime} {quant}: larger than RAM → streamed from SSD: decode ≈ "
           f"{fmt_tok_s_range(s.decode_tok_s, s.decode_tok_s_range)}{spread}, {s.bound}-bound",
           f"  reads {s.bytes_per_token / gb:.2f} GB per token from the SSD: {what}; "
           + (f"{fmt_bytes(s.always_read_bytes)} dense weights stay resident" if s.expert_cache_bytes else
              f"at best {fmt_bytes(s.ram_for_weights_bytes)} of the {fmt_bytes(s.always_read_bytes)} read per token "
              f"stay cached ({(s.bytes_per_token_range[0]) / gb:.2f} GB/token)"),
           f"  SSD read {ssd.read_bytes_s / gb:.1f} GB/s ({ssd.storage_gb} GB SSD; {src}); compute alone "
           f"{fmt_tok_s(1 / s.compute_s_per_token)} tok/s; an engine that read while computing: ≤ "
           f"{fmt_tok_s(s.overlapped_tok_s)} tok/s"]
    if s.swaps:
        out.append(f"  would swap: KV cache and buffers ({fmt_bytes(s.anon_bytes)}) exceed what macOS can spare: "
                   "pages would be written to the SSD (wear); shorten the context or quantize the KV")
    else:
        out.append("  reads only: the GGUF is mapped read-only, macOS drops and re-reads its pages, nothing is "
                   "written (no SSD wear, only time)")
    out.append("  run: llama-server -m <model>-" + quant + ".gguf -ngl 99 -c <context>   (mmap is the default, "
               "--load-mode auto; not --load-mode mlock/none: they load every weight into RAM and would swap)")
    return out


def render_streaming(p) -> list[str]:
    """The fastest streamed option in full; the others on one line each."""
    opts = sorted((o for o in p.options if o.streaming is not None), key=lambda o: -o.streaming.decode_tok_s)
    if not opts:
        return []
    out = streaming_lines(opts[0].runtime, opts[0].quant, opts[0].streaming)
    for o in opts[1:]:
        s = o.streaming
        out.append(f"{o.runtime} {o.quant}: streamed from SSD: decode ≈ "
                   f"{fmt_tok_s_range(s.decode_tok_s, s.decode_tok_s_range)}, {s.bytes_per_token / 1e9:.2f} GB read "
                   "per token" + ("; would swap" if s.swaps else ""))
    return out + [""]


def energy_line(runtime: str, quant: str, e) -> str:
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


def render_energy(p) -> list[str]:
    rows = [energy_line(o.runtime, o.quant, o.energy) for o in p.options if o.energy is not None]
    if not rows:
        return []
    pm = next(o.energy.power for o in p.options if o.energy is not None)
    return [f"Energy (wall power: idle {pm.idle_w:.1f} W {'measured' if pm.idle_basis == 'measured' else '(median of measured Macs)'}; "
            "sources in docs/model-facts.md):", *rows, ""]
