"""The first lines of every answer about one model on one Mac: the option to run, mlx-lm or llama.cpp, and the
workload assumed. Worded here from planner.advice's structured facts (Recommendation, RuntimeVerdict), so `plan`
and `plan recommend` say the same thing in the same words."""

from __future__ import annotations

from planner.advice import Recommendation, runtime_verdicts
from planner.format import cached_label, fmt_bytes, fmt_seconds, fmt_tok_s, over_text, versus_text


def option_text(o) -> str:
    return f"{o.runtime} {o.quant} (KV cache {o.kv_type})"


def _speed(o) -> str:
    sp = o.speed
    if sp is None:
        return ""
    return (f"{fmt_tok_s(sp.decode_tok_s_per_user)} tok/s per user, first token in {fmt_seconds(sp.ttft_s)} "
            f"({cached_label(sp.cached_prefix_share)}), ")


def bottom_line(r: Recommendation) -> list[str]:
    """Two or three lines: the verdict, the runtime comparison, the workload it assumed."""
    wl = r.workload
    if not r.options:
        return [f"Bottom line: {r.model} does not fit this Mac in any runtime or quantization searched."]
    o = r.options[0]
    use = (f"{_speed(o)}{fmt_bytes(o.memory_bytes)} of the {fmt_bytes(r.wired.effective_bytes)} GPU limit"
           f"{' once it is raised' if o.fit.verdict == 'raise-limit' else ''}")
    if r.targets_met:
        head = f"Bottom line: run {option_text(o)}: {use}."
    else:
        head = (f"Bottom line: no option meets the {wl.name.lower()} targets ({wl.targets.describe()}); the closest "
                f"is {option_text(o)}: {use}; it misses {'; '.join(o.misses)}.")
    out = [head]
    verdicts = runtime_verdicts(r)
    if verdicts and o.speed is not None:
        out.append(versus_text(verdicts))
    if o.speed is None:
        out.append(f"Memory only, at {wl.users} × {wl.context:,} tokens of context: name the chip (--chip) for the "
                   "speed, the time to first token and mlx-lm against llama.cpp.")
    else:
        out.append(f"Assumed workload {wl.summary()}.")
    return out


def no_fit_line(p) -> str:
    """The bottom line of a plan (planner.plan.Plan) none of whose options fits, even with the limit raised: the
    smallest need and its runtime's margin against the most the GPU may have, and what would change it; then the
    option llama.cpp's mmap still runs, at full speed when every weight a token reads stays in RAM."""
    out = (f"Bottom line: {p.model.name} does not fit this Mac: {over_text(p.smallest, p.wired)}; a smaller model or quantization, fewer users or a shorter context, or a Mac "
           f"with more memory (`plan buy`) would change that.")
    out += _shorter_context(p)
    streamed = [o for o in p.options if o.streaming is not None and not o.streaming.swaps]
    if streamed:
        best = max(streamed, key=lambda o: o.streaming.decode_tok_s)
        st = best.streaming
        lo, hi = st.decode_tok_s_range
        speed = f"{best.runtime} {best.quant} at about {fmt_tok_s(st.decode_tok_s)} tok/s ({fmt_tok_s(lo)}–{fmt_tok_s(hi)})"
        if st.resident:
            out += (f" It still runs with its file mapped from the SSD (llama.cpp's default mmap): {speed}, every "
                    f"weight a token reads stays in RAM (only weights no token reads, such as most of the embedding "
                    f"table, stay on the SSD).")
        else:
            out += (f" It can still run streamed from the SSD: {speed}, reading {fmt_bytes(st.bytes_per_token)} per "
                    f"token (reads only, no SSD wear).")
    return out


def _shorter_context(p) -> str:
    """The closest answer when the asked context is what binds: the longest context an option holds for the asked
    users, at the default GPU limit or else with it raised (FitOption.max_context / max_context_raised)."""
    users, ctx = p.request.users, p.request.context
    for raised, field in ((False, "max_context"), (True, "max_context_raised")):
        best = max(p.options, key=lambda o: getattr(o, field).get(users, 0))
        n = getattr(best, field).get(users, 0)
        if 0 < n < ctx:
            return (f" At a shorter context it fits: {best.runtime} {best.quant} holds up to {n:,} tokens for "
                    f"{users} user{'s' if users > 1 else ''}{' with the limit raised' if raised else ''} "
                    f"({ctx:,} asked).")
    return ""
