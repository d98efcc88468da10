"""Plain-language readings of a Plan, one per chart. Pure string templating over result fields.

No arithmetic: every number comes from the core's result models and is printed with planner.format.
Choosing which row to talk about (the best verdict, the highest-precision quant that fits) is picking, not
computing.
"""

from __future__ import annotations

from planner.format import (
    VERDICT_MARK,
    fmt_bytes,
    fmt_ctx,
    fmt_gb,
    fmt_params,
    fmt_seconds,
    fmt_tok_s,
    verdict_text,
)
from planner.plan import FitOption, Plan

# Best first; used to pick the headline verdict.
VERDICT_ORDER = ["fits", "tight", "raise-limit", "no-fit"]
LEVEL = {"fits": "success", "tight": "warning", "raise-limit": "warning", "no-fit": "error"}


def option_label(o: FitOption) -> str:
    return f"{o.runtime} · {o.quant}"


def mac_label(p: Plan) -> str:
    chip = p.mac.chip
    return f"{chip.label}, {p.mac.ram_gb:g} GB" if chip else f"{p.mac.ram_gb:g} GB Mac"


def mac_short(p: Plan) -> str:
    chip = p.mac.chip
    return f"{chip.name}, {p.mac.ram_gb:g} GB" if chip else f"{p.mac.ram_gb:g} GB"


def workload_label(p: Plan) -> str:
    r = p.request
    who = "1 user" if r.users == 1 else f"{r.users} users"
    return f"{who} × {fmt_ctx(r.context)}-token context"


def workload_short(p: Plan) -> str:
    r = p.request
    return f"{r.users} × {fmt_ctx(r.context)} tokens"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def best_verdict(p: Plan) -> str:
    present = {o.fit.verdict for o in p.options}
    return next(v for v in VERDICT_ORDER if v in present)


def best_options(p: Plan) -> list[FitOption]:
    """Per runtime, the highest-precision option with the best verdict reached on this Mac."""
    v = best_verdict(p)
    out: dict[str, FitOption] = {}
    for o in p.options:
        if o.fit.verdict != v:
            continue
        cur = out.get(o.runtime)
        if cur is None or o.weights.bits_per_weight > cur.weights.bits_per_weight:
            out[o.runtime] = o
    return list(out.values())


def headline(p: Plan) -> tuple[str, str]:
    """(level, markdown): the one-sentence answer at the top of the page. level: success/warning/error."""
    v = best_verdict(p)
    picks = best_options(p)
    n_ok = [o.fit.verdict for o in p.options].count(v)
    mac = mac_label(p)
    title = f"**{p.model.name} on {'an' if mac.startswith('M') else 'a'} {mac}: {verdict_text(v)}.**"
    limit = fmt_bytes(p.wired.effective_bytes)
    if v == "no-fit":
        smallest = min(p.options, key=lambda o: o.memory.total)
        body = (f" None of the {len(p.options)} runtime × quantization options fits at {workload_label(p)}, not even "
                f"with the GPU limit raised. The smallest, {option_label(smallest)}, needs "
                f"{fmt_bytes(smallest.memory.total)}: {smallest.fit.reason}. Try a smaller quantization, a shorter "
                "context, fewer users, or a Mac with more memory.")
        return LEVEL[v], title + body
    best = "; ".join(f"{option_label(o)} uses {fmt_bytes(o.memory.total)} of the {limit} GPU limit"
                     for o in picks)
    body = (f" {n_ok} of {len(p.options)} runtime × quantization options are rated “{verdict_text(v)}” for "
            f"{workload_label(p)}. "
            f"Highest-precision choice per runtime: {best}.")
    if v == "raise-limit":
        body += f" Run `{picks[0].fit.sysctl}` first (resets at reboot)."
    elif v == "tight":
        body += f" {picks[0].fit.reason[0].upper()}{picks[0].fit.reason[1:]}."
    return LEVEL[v], title + body


def limit_reading(p: Plan) -> str:
    w = p.wired
    how = "the limit you set" if w.user_set else f"the {w.macos} default, {w.rule.split(' (')[0]}"
    return (f"macOS lets the GPU use at most **{fmt_bytes(w.effective_bytes)}** of this Mac's "
            f"{p.mac.ram_gb:g} GB ({how}). Everything the model needs — weights, KV cache, buffers — must fit under "
            f"that line; the other {fmt_bytes(w.left_for_macos_bytes)} stay with macOS and your apps. "
            f"You can raise the limit until the next reboot, at most to {fmt_bytes(w.max_raise_bytes)} "
            f"(`sudo sysctl iogpu.wired_limit_mb={w.sysctl_max_mb}`).")


def memory_reading(p: Plan) -> str:
    groups = {v: [o for o in p.options if o.fit.verdict == v] for v in VERDICT_ORDER}
    parts = [(f"Each bar is one runtime × quantization at {workload_label(p)}: weights (the model file), KV cache "
             "(grows with context × users) and working buffers. A bar must stay under the red GPU-limit line; the "
             "dashed blue line is the most you can raise that limit to; the grey band is kept for macOS.")]
    if groups["fits"]:
        parts.append(f"{_plural(len(groups['fits']), 'option')} fit comfortably "
                     f"({', '.join(o.quant for o in groups['fits'])}).")
    if groups["tight"]:
        parts.append(f"{', '.join(option_label(o) for o in groups['tight'])} fit with little room to spare.")
    if groups["raise-limit"]:
        o = groups["raise-limit"][0]
        parts.append(f"{', '.join(option_label(o) for o in groups['raise-limit'])} only fit after raising the limit "
                     f"(e.g. `{o.fit.sysctl}`).")
    if groups["no-fit"]:
        parts.append(f"{_plural(len(groups['no-fit']), 'option')} do not fit on this Mac "
                     f"({', '.join(o.quant for o in groups['no-fit'])}).")
    return " ".join(parts)


def heatmap_reading(p: Plan, o: FitOption) -> str:
    r = p.request
    ctx = o.memory.context
    n = o.safe_users[ctx]
    enough = "enough for" if n >= r.users else "fewer than"
    longest = o.max_context[r.users]
    parts = [(f"How many people can use the model at once at each context length (cells: sessions that fit with the "
             f"runtime's safety margin). For **{option_label(o)}** at {fmt_ctx(ctx)} tokens: "
             f"**{_plural(n, 'session')}**, {enough} your {_plural(r.users, 'user')}.")]
    if longest:
        parts.append(f"With {_plural(r.users, 'user')}, each can have up to {fmt_ctx(longest)} tokens of context.")
    else:
        raised = o.max_context_raised.get(r.users, 0)
        parts.append(f"With {_plural(r.users, 'user')} it does not fit under the default limit"
                     + (f"; with the limit raised each can have {fmt_ctx(raised)} tokens." if raised else "."))
    parts.append("Green: enough for your users; amber: some, but fewer; red: none.")
    return " ".join(parts)


def recipe_reading(p: Plan, o: FitOption) -> str:
    if o.fit.verdict == "no-fit":
        return (f"**{option_label(o)} does not fit on this Mac**: {o.fit.reason}. Pick an option marked ✓ or ↑ above, "
                "or a Mac with more memory.")
    if o.fit.sysctl:
        return (f"{option_label(o)} needs the GPU limit raised before you load the model. The command lasts until "
                "the next reboot; it takes memory away from macOS, so close large apps.")
    return (f"{option_label(o)} runs with the default GPU limit; no system change is needed. The line below is "
            "the most you could give the GPU on this Mac, should you want longer contexts or more users.")


def recipe_lines(p: Plan, o: FitOption) -> str:
    if o.fit.verdict == "no-fit":
        return "# does not fit: no command makes it fit"
    if o.fit.sysctl:
        return o.fit.sysctl
    return f"# optional: raise the GPU limit (until reboot)\nsudo sysctl iogpu.wired_limit_mb={p.wired.sysctl_max_mb}"


def model_line(p: Plan) -> str:
    m = p.model
    active = f", {fmt_params(m.active_params)} active" if m.active_params < m.params else ""
    return (f"{m.name} (`{m.id}`) · {fmt_params(m.params)} parameters{active} · {m.architecture} · "
            f"up to {m.max_context:,} tokens of context")


def fit_rows(p: Plan) -> list[dict[str, str]]:
    """The fit table, cell by cell the same strings as `plan` prints."""
    rows = []
    for o in p.options:
        mem = o.memory
        rows.append({
            "runtime": o.runtime, "quantization": o.quant, "bits/weight": f"{o.weights.bits_per_weight:.2f}",
            "weights": fmt_bytes(o.weights.total_bytes), "file size": fmt_gb(o.weights.total_bytes),
            "KV cache": fmt_bytes(mem.kv_cache), "total": fmt_bytes(mem.total),
            "verdict": f"{VERDICT_MARK[o.fit.verdict]} {verdict_text(o.fit.verdict)}",
        })
    return rows


def kv_rows(p: Plan) -> list[dict[str, str]]:
    rows = []
    for k in p.kv:
        row = {"runtime": k.runtime, "KV type": k.layout.kv_type, "per token": fmt_bytes(k.layout.bytes_per_token)}
        row.update({fmt_ctx(c): fmt_bytes(k.per_sequence_bytes[c]) for c in p.contexts})
        rows.append(row)
    return rows


def compare_reading(plans: list[Plan]) -> str:
    ok = [p for p in plans if best_verdict(p) in ("fits", "tight")]
    raise_ = [p for p in plans if best_verdict(p) == "raise-limit"]
    parts = ["Each column is one Mac, each row a runtime × quantization; the cell says whether it fits."]
    if ok:
        parts.append(f"Runs with the default GPU limit on: {', '.join(mac_label(p) for p in ok)}.")
    if raise_:
        parts.append(f"Needs the limit raised on: {', '.join(mac_label(p) for p in raise_)}.")
    none = [p for p in plans if best_verdict(p) == "no-fit"]
    if none:
        parts.append(f"Does not fit on: {', '.join(mac_label(p) for p in none)}.")
    return " ".join(parts)


# ----------------------------------------------------------------------------- speed (FitOption.speed)
def speed_picks(p: Plan, chosen: FitOption) -> list[FitOption]:
    """The chosen option plus the best option of every other runtime, those with a speed estimate."""
    picks = [chosen] + [o for o in best_options(p) if o.runtime != chosen.runtime]
    return [o for o in picks if getattr(o, "speed", None) is not None]


def decode_reading(p: Plan, picks: list[FitOption]) -> str:
    if not picks:
        return "No speed estimate for these options."
    users = p.request.users
    parts = [("How fast text appears. Solid lines: what each user sees; dashed: all users together; dotted: the "
              "ceiling if memory moved at the chip's full bandwidth. More users share the same memory bandwidth, "
              "so each gets less while the total grows until compute runs out.")]
    for o in picks:
        sp = o.speed
        first = min(sp.decode_tok_s_per_seq)
        line = (f"**{option_label(o)}**: {fmt_tok_s(sp.decode_tok_s_per_seq[first])} tok/s for one user "
                f"({sp.bound[first]}-bound)")
        if users in sp.decode_tok_s_per_seq and users != first:
            line += (f"; with your {users} users, {fmt_tok_s(sp.decode_tok_s_per_seq[users])} tok/s each, "
                     f"{fmt_tok_s(sp.decode_tok_s_total[users])} in total")
        parts.append(line + ".")
    parts.append("For comparison, people read about 5-10 tokens per second.")
    return " ".join(parts)


def ttft_reading(p: Plan, picks: list[FitOption]) -> str:
    if not picks:
        return "No speed estimate for these options."
    parts = [("How long a prompt takes to read before the answer starts (time to first token). It grows with the "
             "prompt: long documents, RAG passages and agent loops wait the longest.")]
    for o in picks:
        sp = o.speed
        parts.append(f"**{option_label(o)}**: a {fmt_ctx(sp.prompt_tokens)}-token prompt (your workload) waits "
                     f"{fmt_seconds(sp.ttft_s)}, reading {fmt_tok_s(sp.prefill_tok_s)} tok/s.")
    return " ".join(parts)


# ----------------------------------------------------------------------------- advice and buying (planner.advice/buy)
def recommend_reading(r) -> str:
    """r: planner.advice.Recommendation."""
    if not r.options:
        return "No configuration fits this Mac for this workload."
    o = r.options[0]
    sp = o.speed
    parts = [(f"**Best for this workload: {o.runtime} · {o.quant}** (KV {o.kv_type}, {_plural(o.slots, 'parallel slot')}, "
             f"{fmt_ctx(o.context)} tokens each), using {fmt_bytes(o.memory_bytes)}: {verdict_text(o.fit.verdict)}.")]
    if sp is not None:
        parts.append(f"Each user sees about {fmt_tok_s(sp.decode_tok_s_per_user)} tok/s and waits "
                     f"{fmt_seconds(sp.ttft_s)} for the first token; a whole request takes {fmt_seconds(sp.time_per_request_s)}.")
    parts.append(f"Why: {o.reason}.")
    if r.router is not None:
        parts.append(f"Mixed workload: {r.router.reason}.")
    return " ".join(parts)


def recommend_headline(r, wl) -> str:
    o = r.options[0]
    sp = o.speed
    speed = f", about {fmt_tok_s(sp.decode_tok_s_per_user)} tok/s per user" if sp is not None else ""
    return (f"**Recommended for the {wl.name.lower()} workload: {o.runtime} · {o.quant}** with a {o.kv_type} KV cache"
            f"{speed} — see the recommendation and launch recipe below.")


def recommend_rows(r) -> list[dict[str, str]]:
    rows = []
    for o in r.options:
        sp = o.speed
        rows.append({"#": str(o.rank), "runtime": o.runtime, "quantization": o.quant, "KV": o.kv_type,
                     "slots": str(o.slots), "context": fmt_ctx(o.context), "memory": fmt_bytes(o.memory_bytes),
                     "fit": f"{VERDICT_MARK[o.fit.verdict]} {verdict_text(o.fit.verdict)}",
                     "tok/s per user": fmt_tok_s(sp.decode_tok_s_per_user) if sp else "–",
                     "first token": fmt_seconds(sp.ttft_s) if sp else "–", "bound": o.bound,
                     "quality cost": o.quality.tier, "meets targets": "yes" if o.meets_targets else "no"})
    if all(o.speed is None for o in r.options):  # memory-only ranking: no empty speed columns
        rows = [{k: v for k, v in row.items() if k not in ("tok/s per user", "first token", "meets targets")}
                for row in rows]
    return rows


def recipe_text(o) -> str:
    """The launch recipe of one recommended option (planner.advice.Recipe) as a shell snippet."""
    rc = o.recipe
    lines = []
    if rc.sysctl:
        lines += ["# 1. let the GPU use more memory (until reboot)", rc.sysctl]
    lines += [f"# {'2. ' if rc.sysctl else ''}serve it", rc.server]
    if rc.generate:
        lines += ["# or, one prompt at a time", rc.generate]
    lines += [f"# note: {n}" for n in rc.notes]
    return "\n".join(lines)


def _buy_line(label: str, x) -> str:
    if x is None:
        return ""
    rng = f" (likely {fmt_tok_s(x.decode_range[0])}–{fmt_tok_s(x.decode_range[1])})" if x.decode_range else ""
    sp = (f", {fmt_tok_s(x.decode_tok_s_per_user)} tok/s per user{rng}, first token in {fmt_seconds(x.ttft_s)}"
          if x.decode_tok_s_per_user is not None else "")
    return (f"**{label}:** {x.product}, {x.chip}, {x.ram_gb} GB — ${x.price_usd:,.0f}, {x.price_confidence} price "
            f"({x.runtime} · {x.quant}{sp}).")


def buy_picks(b) -> list[str]:
    """The labelled picks, all within the budget: cheapest, best value, fastest on the chart's axis."""
    axis = "aggregate tok/s" if b.speed_axis == "decode_tok_s" else "tok/s per user"
    within = f" within ${b.budget_usd:,.0f}" if b.budget_usd else ""
    return [x for x in (_buy_line(f"Cheapest that meets the targets{within}", b.cheapest),
                        _buy_line("Best value (most tok/s per dollar)", b.best_value),
                        _buy_line(f"Fastest{within} (highest {axis})", b.fastest_within_budget)) if x]


def buy_shortfall(b) -> str:
    """When no Mac (within the budget) meets every target: which target binds, by how much, and what would change.
    Empty when some Mac does."""
    if b.cheapest is not None:
        return ""
    within = f" within ${b.budget_usd:,.0f}" if b.budget_usd else ""
    lines = [(f"**No Mac{within} meets every target** ({b.workload.targets.describe()}). The closest are in the "
              "chart and at the top of the table.")]
    for g in b.gaps:
        unit = "tok/s" if g.target == "min_tok_s_per_user" else "s"
        state = f"missed by {g.by:.0%}" if g.by > 0 else "met"
        lines.append(f"- {g.label}: the best reaches {g.best:.1f} {unit} ({g.best_mac}) against {g.wanted:g} {unit}"
                     f" — {state}")
    if b.what_would_change:
        lines.append("\nWhat would change the answer: " + "; ".join(b.what_would_change) + ".")
    return "\n".join(lines)


def buy_reading(b) -> str:
    """b: planner.buy.BuyResult."""
    axis = "aggregate tok/s" if b.speed_axis == "decode_tok_s" else "tok/s per user"
    parts = [(f"Each dot is one Mac configuration at its price, with the best way to run {' + '.join(b.models)} on "
              f"it; the height is its {axis}. The blue line joins the Pareto front: no cheaper Mac is faster."
              + (f" Grey dots right of the dashed line cost more than your ${b.budget_usd:,.0f}." if b.budget_usd
                 else ""))]
    parts += buy_picks(b)
    parts.append("Prices are US launch prices; “estimated” ones follow the published upgrade steps (the table "
                 "says which). MacBooks slow down under long sustained load.")
    return "\n\n".join(parts)


def buy_rows(b) -> list[dict]:
    """Sortable table rows in the result's order (meets the targets first, then price); numbers stay numbers so
    the table sorts; formatted columns are text."""
    front = {x.mac for x in b.pareto}
    return [{"meets targets": x.meets_targets, "price [$]": x.price_usd, "price is": x.price_confidence,
             "Mac": x.product, "chip": x.chip, "RAM [GB]": x.ram_gb, "runtime": x.runtime, "quantization": x.quant,
             "slots": x.slots, "memory": fmt_bytes(x.memory_bytes), "fit": verdict_text(x.verdict),
             "tok/s per user": x.decode_tok_s_per_user,
             "likely low": x.decode_range[0] if x.decode_range else None,
             "likely high": x.decode_range[1] if x.decode_range else None, "first token [s]": x.ttft_s,
             "Pareto front": x.mac in front, "within budget": x.within_budget, "bound by": x.binding,
             "flags": ", ".join(x.flags), "price basis": x.price_basis}
            for x in b.per_mac]


def serve_reading(r) -> str:
    """What the latency curve says, in words (`plan serve`)."""
    parts = [f"With **{r.slots} slots** the queue grows without bound above "
             f"**{r.saturation_rate_per_s * 60:.1f} requests/min**; at {r.rate_per_s * 60:.1f}/min the server runs at "
             f"{r.utilisation:.0%} of that, and half the users wait {fmt_seconds(r.ttft_s.p50)} for the first token "
             f"(1 in 20 waits {fmt_seconds(r.ttft_s.p95)})."]
    if r.target_ttft_p95_s and r.max_rate_per_s:
        parts.append(f"Under TTFT p95 ≤ {r.target_ttft_p95_s:g} s it serves up to "
                     f"{r.max_rate_per_s * 60:.1f} requests/min; {r.best_slots} slots serve the most.")
    if r.binding:
        parts.append(r.binding[0].upper() + r.binding[1:] + ".")
    parts.append("Latency rises slowly, then steeply as the rate nears saturation: plan for the knee, not the line.")
    return " ".join(parts)


def serve_rows(r) -> list[dict]:
    """The slot sweep as table rows (rates per minute)."""
    return [{"slots": o.slots, "saturation [req/min]": round(o.saturation_rate_per_s * 60, 2),
             "max under the TTFT target [req/min]": (round(o.max_rate_per_s * 60, 2) if o.max_rate_per_s else None),
             "TTFT p95 at low load": fmt_seconds(o.ttft_p95_floor_s),
             "": "recommended" if o.slots == r.best_slots else ""} for o in r.sweep]
