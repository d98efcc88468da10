"""Text rendering of a Plan for the terminal. No arithmetic beyond picking rows."""

from __future__ import annotations

from planner.format import (
    VERDICT_MARK,
    fmt_bytes,
    fmt_ctx,
    fmt_gb,
    fmt_kv_per_token,
    fmt_params,
    table,
    verdict_text,
)
from planner.plan import FitOption, Plan

from .beyond import render_energy, render_streaming
from .words import say


def render_plan(p: Plan) -> str:
    return say(_render_plan(p))


def _render_plan(p: Plan) -> str:
    m, w, req = p.model, p.wired, p.request
    out = [f"{m.name} ({m.id}) · {fmt_params(m.params)} params"
           + (f", {fmt_params(m.active_params)} active" if m.active_params < 0.8 * m.params else "")
           + f" · {m.architecture} · max context {m.max_context:,}"]
    chip = p.mac.chip
    mac = f"{chip.label}, {p.mac.ram_gb:g} GB" if chip else f"{p.mac.ram_gb:g} GB RAM"
    out.append(f"Mac: {mac}" + (f"  ({p.mac.note})" if p.mac.note else ""))
    frac, _, evidence = w.rule.partition(" (")
    lim = ("your --wired-limit" if w.user_set else  # the default's rule, then the evidence for it
           f"{w.macos} default, {frac}" + (f"; evidence: {evidence.removesuffix(')')}" if evidence else ""))
    out.append(f"GPU wired-memory limit: {fmt_bytes(w.effective_bytes)} ({lim}); "
               f"{fmt_bytes(w.left_for_macos_bytes)} stays with macOS and apps")
    if w.can_raise:
        out.append(f"  to raise it until reboot: sudo sysctl iogpu.wired_limit_mb={w.sysctl_max_mb}  "
                   f"({fmt_bytes(w.max_raise_bytes)} for the GPU, leaves {fmt_bytes(w.ram_bytes - w.max_raise_bytes)} "
                   "to macOS)")
    else:
        out.append(f"  raising it gains nothing here: macOS needs the other {fmt_bytes(w.ram_bytes - w.effective_bytes)}")
    from planner.format import lengths_text
    from planner.points import DEFAULT_CACHED_PREFIX

    share = DEFAULT_CACHED_PREFIX if req.cached_prefix is None else req.cached_prefix
    out.append(f"Workload: {req.users} × {fmt_ctx(req.context)}-token context; "
               f"{lengths_text(req.prompt, req.gen, share)}")
    out.append("")
    out.append("KV cache (per token, then one sequence at each context):")
    rows = [[k.runtime, k.layout.kv_type, _per_token(k.layout), *[fmt_bytes(k.per_sequence_bytes[c]) for c in p.contexts]]
            for k in p.kv]
    out.append(table(rows, ["runtime", "kv", "per token", *[fmt_ctx(c) for c in p.contexts]],
                     "lll" + "r" * len(p.contexts)))
    out.append("")
    out.append(f"Fit at {req.users} × {fmt_ctx(req.context)} (weights + KV + buffers vs the GPU limit):")
    rows = []
    for o in p.options:
        mem = o.memory
        buffers = mem.compute_buffer + mem.output_buffer + mem.runtime_overhead + mem.recurrent_state + mem.vision
        rows.append([o.runtime, o.quant, f"{o.weights.bits_per_weight:.2f}", fmt_bytes(o.weights.total_bytes),
                     fmt_gb(o.weights.total_bytes),
                     fmt_bytes(mem.kv_cache), fmt_bytes(buffers), fmt_bytes(mem.total),
                     f"{VERDICT_MARK[o.fit.verdict]} {verdict_text(o.fit.verdict)}"
                     + ("" if o.streaming is None else " → mapped from SSD" if o.streaming.resident else " → streamed from SSD")])
    out.append(table(rows, ["runtime", "quant", "bpw", "weights", "(file)", "KV", "buffers", "total", "verdict"],
                     "llrrrrrrl"))
    out.append("")
    out.append("Safe concurrent sessions by context (default limit, runtime margin kept) | longest context by users:")
    rows = []
    for o in p.options:
        rows.append([o.runtime, o.quant, *[str(o.safe_users[c]) for c in p.contexts], "|",
                     *[fmt_ctx(o.max_context[u]) if o.max_context[u] else "–" for u in p.user_counts]])
    hdr = ["runtime", "quant", *[f"@{fmt_ctx(c)}" for c in p.contexts], "|", *[f"{u} user" + ("s" if u > 1 else "")
                                                                            for u in p.user_counts]]
    out.append(table(rows, hdr, "ll" + "r" * len(p.contexts) + "l" + "r" * len(p.user_counts)))
    out.append("")
    for o in p.options:
        out += _limit_lines(o)
    out += render_offload(p)
    out += render_streaming(p)
    out += render_draft(p)
    out += render_serving(p)
    out += render_speed(p)
    out += render_energy(p)
    for o in p.options:
        for n in o.notes:
            out.append(f"note: {o.runtime} {o.quant}: {n}")
    for n in p.notes:
        out.append(f"note: {n}")
    return "\n".join(out).rstrip() + "\n"


def _per_token(layout) -> str:
    return fmt_kv_per_token(layout)


def _limit_lines(o: FitOption) -> list[str]:
    """Why an option is tight or needs the raised limit, and what the raised limit gives."""
    if o.fit.verdict not in ("raise-limit", "tight"):
        return []
    extra = f"  → {o.fit.sysctl}" if o.fit.sysctl else ""
    out = [f"{o.runtime} {o.quant}: {o.fit.reason}{extra}"]
    best = {u: c for u, c in o.max_context_raised.items() if c}
    if o.fit.verdict == "raise-limit" and best:
        out.append("  with the limit raised, longest context: "
                   + ", ".join(f"{u} user{'s' if u > 1 else ''} {fmt_ctx(c)}" for u, c in best.items()))
    return out


def render_speed(p: Plan) -> list[str]:
    """Speed table (options with a speed estimate): prefill/TTFT at the prompt, decode per user | total by users."""
    from planner.format import cached_label, fmt_seconds, fmt_tok_s, fmt_tok_s_range

    opts = [o for o in p.options if o.speed is not None]
    if not opts:
        return []
    s0 = opts[0].speed
    users = list(s0.decode_tok_s_per_seq)
    out = [f"Speed ({s0.prompt_tokens:,}-token prompt, {s0.gen_tokens:,} generated; TTFT with "
           f"{cached_label(s0.cached_prefix_share)}; decode tok/s per user | all users; * = compute-bound):"]
    rows = []
    for o in sorted(opts, key=lambda o: (o.quant, o.runtime)):
        s = o.speed
        rows.append([o.runtime, o.quant, fmt_tok_s(s.prefill_tok_s), fmt_seconds(s.ttft_s),
                     *[fmt_tok_s(s.decode_tok_s_per_seq[u]) + ("*" if s.bound[u] == "compute" else "")
                       for u in users], "|", *[fmt_tok_s(s.decode_tok_s_total[u]) for u in users]])
    hdr = ["runtime", "quant", "prefill", "TTFT", *[f"{u}u" for u in users], "|", *[f"{u}u" for u in users]]
    out.append(table(rows, hdr, "llrr" + "r" * len(users) + "l" + "r" * len(users)))
    u0 = users[0]
    for o in sorted(opts, key=lambda o: (o.quant, o.runtime)):
        s = o.speed
        out.append(f"  {o.runtime} {o.quant}: decode {fmt_tok_s_range(s.decode_tok_s_per_seq[u0], s.decode_tok_s_range.get(u0))}"
                   f" for {u0} user{'s' if u0 > 1 else ''}, prefill {fmt_tok_s_range(s.prefill_tok_s, s.prefill_tok_s_range)}")
    for src in dict.fromkeys(f"{o.runtime}: {o.speed.calibration}" for o in opts):
        out.append(f"  calibration {src}")
    out.append("")
    return out


def render_serving(p: Plan) -> list[str]:
    """Wrapper apps (Ollama, LM Studio): what the app does with no settings and its guardrail, as a table; then the
    launch recipe of the largest option per runtime that fits comfortably. Vision plans: their launch lines."""
    out = []
    for o in p.options:
        if o.serving is None and o.recipe is not None and o.draft is None:  # vision plans
            out.append(f"{o.runtime} {o.quant}: {o.recipe.server}")
            if o.recipe.generate:
                out.append(f"  {o.recipe.generate}")
    opts = [o for o in p.options if o.serving is not None]
    if not opts:
        return out + [""] if out else []
    s0 = opts[0].serving
    out.append(f"With no settings: {s0.context_rule} × {s0.default_parallel} parallel"
               + (f"; guardrail {s0.guardrail}" if s0.guardrail else "") + f" (source: {s0.sources[0]})")
    rows = []
    for o in opts:
        s = o.serving
        row = [o.runtime, o.quant, fmt_bytes(s.memory_bytes), f"{VERDICT_MARK[s.fit.verdict]} {verdict_text(s.fit.verdict)}"]
        if s.guardrail:
            row.append({True: "loads", False: "refuses", None: "may refuse"}[s.guardrail_allows])
        rows.append(row)
    hdr = ["runtime", "quant", "default memory", "default fit"] + (["guardrail"] if s0.guardrail else [])
    out.append(table(rows, hdr, "llrl" + ("l" if s0.guardrail else "")))
    out += [f"note: {n}" for n in dict.fromkeys(o.serving.engine_note for o in opts) if n]
    for rt in dict.fromkeys(o.runtime for o in opts):
        fitting = [o for o in opts if o.runtime == rt and o.fit.verdict == "fits" and o.recipe is not None]
        if not fitting:
            continue
        o = max(fitting, key=lambda x: x.weights.total_bytes)
        out.append(f"{rt} {o.quant} at {p.request.users} × {fmt_ctx(o.memory.context)}: {o.recipe.server}")
        out += [f"  note: {n}" for n in o.recipe.notes]
    return out + [""]


def render_offload(p: Plan) -> list[str]:
    """llama.cpp options too big for the GPU: the largest -ngl that fits, its decode, and whether to use it."""
    from planner.format import fmt_tok_s

    out = []
    for o in p.options:
        f = o.offload
        if f is None:
            continue
        speed = ""
        if f.decode_tok_s is not None:
            speed = (f"; decode ≈ {fmt_tok_s(f.decode_tok_s)} tok/s (all on GPU would be "
                     f"{fmt_tok_s(f.full_gpu_decode_tok_s)}; CPU layers at {f.cpu_bandwidth_bytes_s / 1e9:.0f} GB/s)")
        out.append(f"{o.runtime} {o.quant}: partial offload -ngl {f.gpu_layers} of {f.n_layers + 1}: "
                   f"{fmt_bytes(f.gpu_bytes)} on the GPU, {fmt_bytes(f.cpu_bytes)} in CPU memory, slower{speed}; "
                   f"{f.reason}")
    return out + [""] if out else []


def render_draft(p: Plan) -> list[str]:
    """--draft-model: the draft's memory on top of each option, the speed-up at its acceptance, the recipe."""
    from planner.format import fmt_tok_s

    opts = [o for o in p.options if o.draft is not None]
    if not opts:
        return []
    d0 = opts[0].draft
    out = [f"Speculative decoding with {d0.draft_model} ({d0.draft_tokens} drafted per step, acceptance "
           f"{d0.acceptance:g}: {d0.tokens_per_step:.2f} tokens per step; source: {d0.acceptance_source}):"]
    rows = []
    for o in opts:
        d = o.draft
        rows.append([o.runtime, o.quant, d.draft_quant, fmt_bytes(d.weights_bytes), fmt_bytes(d.kv_bytes),
                     fmt_bytes(d.buffer_bytes), fmt_bytes(d.total_bytes),
                     f"{VERDICT_MARK[d.fit.verdict]} {verdict_text(d.fit.verdict)}",
                     fmt_tok_s(d.base_decode_tok_s) if d.base_decode_tok_s else "–",
                     fmt_tok_s(d.decode_tok_s) if d.decode_tok_s else "–",
                     f"×{d.speedup:.2f}" if d.speedup else "–",
                     fmt_tok_s(d.ceiling_tok_s) if d.ceiling_tok_s else "–"])
    out.append(table(rows, ["runtime", "quant", "draft", "draft weights", "draft KV", "buffers", "total", "verdict",
                            "decode", "with draft", "speed-up", "ceiling"], "lllrrrrlrrrr"))
    for o in opts[:2]:
        if o.recipe is not None:
            out.append(f"  {o.runtime} {o.quant}: {o.recipe.server}")
    for n in dict.fromkeys(n for o in opts for n in o.draft.notes):
        out.append(f"  note: {n}")
    return out + [""]
