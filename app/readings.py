"""Plain-language readings of a Plan, one per chart. Pure string templating over result fields.

No arithmetic: every number comes from the core's result models and is printed with planner.format.
Choosing which row to talk about (the best verdict, the highest-precision quant that fits) is picking, not
computing.
"""

from __future__ import annotations

from planner.format import (
    VERDICT_MARK,
    cached_label,
    fmt_bytes,
    fmt_ctx,
    fmt_gb,
    fmt_kv_per_token,
    fmt_params,
    fmt_seconds,
    fmt_tok_s,
    fmt_tok_s_range,
    over_text,
    safe_text,
    verdict_text,
)
from planner.plan import FitOption, Plan

# Best first; used to pick the headline verdict.
VERDICT_ORDER = ["fits", "tight", "raise-limit", "no-fit"]
LEVEL = {"fits": "success", "tight": "warning", "raise-limit": "warning", "no-fit": "error"}


def option_label(o: FitOption) -> str:
    return f"{o.runtime} · {o.quant}"


def option_name(o) -> str:
    """The option with its KV cache type: every figure says which option it is about."""
    return f"{o.runtime} · {o.quant} · KV {o.kv_type}"


def _limits(o: FitOption) -> dict[int, int]:
    """Longest context by users under the limit this option needs (raised when it only fits raised)."""
    return o.max_context_raised if o.fit.verdict == "raise-limit" else o.max_context


def longest_context(o: FitOption, users: int) -> int:
    """The one "longest context" figure of an option: per session, with ``users`` sessions [tokens]."""
    return _limits(o).get(users, 0)


def fitting_users(p: Plan, o: FitOption) -> list[int]:
    """The user counts of the plan whose sessions all fit at the requested context (what the charts may draw): with
    the runtime's safety margin, or up to the requested users when the plan rates those a tight fit."""
    tight = p.request.users if o.fit.verdict == "tight" else 0
    return [u for u in p.user_counts if _limits(o).get(u, 0) >= p.request.context or u <= tight]


# The core names inputs by key (planner/inputs.py); the page names them by its own controls. One label per key
# (tests/test_no_flags_in_core.py checks every key has one); inputs without a control on the page say where
# they are set instead.
LABELS: dict[str, str] = {
    "model": "Model", "ram": "Unified memory (RAM)", "chip": "Chip", "gpu_cores": "GPU cores",
    "macos": "macOS (Advanced)", "wired_limit": "GPU wired limit (Advanced)", "ssd_gb": "SSD size (command line)",
    "runtime": "Runtimes", "quant": "Quantizations", "kv_type": "KV cache type (Advanced)",
    "flash_attn": "flash attention on", "no_flash_attn": "flash attention off",
    "app_version": "app version (command line)", "guardrail": "LM Studio guardrail (command line)",
    "draft_model": "draft model (command line)", "draft_acceptance": "draft acceptance (command line)",
    "draft_tokens": "draft tokens per step (command line)",
    "images": "images per request (command line)", "image_size": "image size (command line)",
    "context": "Context per user", "users": "Concurrent users", "prompt": "Prompt length", "gen": "Answer length",
    "workload": "Workload preset", "min_tok_s": "Minimum tok/s per user",
    "max_ttft": "Longest wait for the first token", "max_request": "Longest request",
    "cached_prefix": "Share of each prompt already cached", "thinking_tokens": "thinking tokens (command line)",
    "batch": "batch (command line)", "depth": "depth (command line)",
    "task": "Task", "family": "model family (command line)", "max_params": "Largest model [B params]",
    "budget": "Budget", "price": "“Your prices”", "prices": "“Your prices”",
    "max_quality_cost": "Quantizations", "include_rumoured": "“Include rumoured chips”",
    "include_discontinued": "“Include discontinued Macs”", "clusters": "clusters (command line: plan buy)",
    "kwh_price": "electricity price (command line: plan buy)", "busy_hours": "busy hours (command line: plan buy)",
    "years": "years of ownership (command line: plan buy)", "all": "every configuration (command line: plan buy)",
    "slots": "Slots", "rate": "Requests per minute", "duration": "simulated duration (command line: plan serve)",
    "slot_context": "context per slot (command line: plan serve)", "trace": "request trace (command line: plan serve)",
    "kv_unified": "one KV stream for every slot (command line: plan serve --kv-unified)",
    "macs": "Macs (command line: plan cluster)", "link": "link (command line: plan cluster)",
    "engine": "engine (command line: plan cluster)", "mode": "split mode (command line: plan cluster)",
    "layers": "Layers trained", "num_layers": "Layers trained", "lengths": "example lengths (command line)",
    "fine_tune_type": "Type", "seq_len": "Max sequence length", "batch_size": "Batch size",
    "grad_checkpoint": "“Gradient checkpointing”",
    "calibrate_server": "the server calibration (command line: plan calibrate --runtime llama.cpp --server)",
    "json": "the JSON download",
}

# the page's other words: the kind of an unknown id without the input named after it, the commands of the command
# line as this site's pages, plurals spelled out
WEB_WORDS = [
    (r"\b(unknown [\w ]+?) \[\[[a-z_]+\]\] ", r"\1 "), (r"`plan buy \[\[all\]\]`", "the full table of “Which Mac should I buy?”"),
    (r"`?plan models`?", "the model catalog"), (r"`?plan buy`?", "“Which Mac should I buy?”"),
    (r"\b(\d+) user\(s\)", None), (r"\b(\d+) slot\(s\)", None),
]
# messages of the edge readers (sources/) still spell a flag: '--gpu-cores' read as the input of that key
_EDGE_FLAG = r"(?<![\w-])--([a-z][a-z-]+)\b"


def for_web(text: str | BaseException, upload_dir: str | None = None) -> str:
    """A core message (or a core error) in the page's words: form control names instead of input keys, plurals
    spelled out, no server path of an uploaded file, a capital first letter."""
    import re

    from planner.inputs import render, template

    if isinstance(text, BaseException):
        text = template(text)
    text = safe_text(text)  # names read from files and hubs: no control characters, no URL credentials
    if upload_dir:
        text = text.replace(f"{upload_dir}/config.json", upload_dir).replace(upload_dir, "the uploaded config.json")
    text = re.sub(r"\b(unknown [\w ]+?) --[a-z-]+ ", r"\1 ", text)  # an edge reader's "unknown model --model 'x'"
    for pat, word in WEB_WORDS:
        if word is None:
            noun = "user" if "user" in pat else "slot"
            text = re.sub(pat, lambda m, n=noun: _plural(int(m.group(1)), n), text)
        else:
            text = re.sub(pat, word, text)
    text = render(text, LABELS)
    text = re.sub(_EDGE_FLAG, lambda m: LABELS.get(m.group(1).replace("-", "_"), m.group(0)), text)
    return text[:1].upper() + text[1:]


def md_text(text: str) -> str:
    """An untrusted name (a GGUF general.name, a hub file name) as literal Markdown text: control characters as
    escapes, Markdown and HTML punctuation backslash-escaped (no links, images or emphasis forged by a file)."""
    import re

    return re.sub(r"([\\`*_{}\[\]()#+!|<>~$])", r"\\\1", safe_text(text, keep_newlines=False))


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
        small = f" T{over_text(p.smallest, p.wired)[1:]}." if p.smallest else ""  # as plan and recommend say it
        body = (f" None of the {len(p.options)} runtime × quantization options fits at {workload_label(p)}, not even "
                f"with the GPU limit raised.{small} Try a smaller quantization, a shorter context, fewer users, or a "
                "Mac with more memory.")
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


def plan_pick(p: Plan) -> FitOption:
    """Without a recommendation (a model outside the catalog): the highest-precision option with the best verdict."""
    v = best_verdict(p)
    return max((o for o in p.options if o.fit.verdict == v), key=lambda o: o.weights.bits_per_weight)


def _an(mac: str) -> str:
    return "an" if mac.startswith(("M", "8", "18")) else "a"


def answer(p: Plan, wl, top=None, met: bool = True, why: str | None = None, versus: str | None = None
           ) -> tuple[str, str]:
    """(level, markdown): the one answer at the top of the page, about one option. ``top`` is the recommended
    planner.advice.FitOption (or, when ``met`` is False, the one closest to the targets); None: no recommendation
    (a model outside the catalog), then the plan's highest-precision option that fits. ``why``: why that option is
    not lossless with a 16-bit KV cache."""
    v = best_verdict(p)
    mac = mac_label(p)
    who = f"**{p.model.name} on {_an(mac)} {mac}"
    if top is None and v == "no-fit":
        return headline(p)
    if top is None:
        o = plan_pick(p)
        body = (f" Best option: **{option_name(o)}**, {workload_label(p)}, using {fmt_bytes(o.memory.total)} of the "
                f"{fmt_bytes(p.wired.effective_bytes)} GPU limit (the highest-precision quantization that fits).")
        return LEVEL[v], f"{who}: {verdict_text(v)}.**{body}{_raise_hint(o.fit)}"
    task = f"your {wl.name.lower()} workload" if wl is not None else "this workload"
    sp = top.speed
    if not met:
        level, title = "warning", f"{who}: fits in memory, but misses the speed targets of {task}.**"
    elif sp is None:  # memory only: no targets were checked
        level, title = LEVEL[top.fit.verdict], f"{who}: {verdict_text(top.fit.verdict)}.**"
    elif top.fit.verdict == "fits":
        level, title = "success", f"{who}: runs {task}.**"
    else:
        level, title = "warning", f"{who}: runs {task}, {verdict_text(top.fit.verdict)}.**"
    body = (f" {'Closest' if not met else 'Best'} option: **{option_name(top)}**, {workload_label(p)}, using "
            f"{fmt_bytes(top.memory_bytes)} of the {fmt_bytes(p.wired.effective_bytes)} GPU limit")
    if sp is not None:
        body += (f"; about {fmt_tok_s_range(sp.decode_tok_s_per_user, sp.decode_tok_s_range)} per user, first token in "
                 f"{fmt_seconds(sp.ttft_s)} ({cached_label(sp.cached_prefix_share)})")
    body += "."
    if not met:
        body += (f" It misses {'; '.join(top.misses)}. A shorter prompt, fewer users, a smaller model or a faster Mac "
                 "would change that; or relax the Speed targets on the left.")
    elif why:
        body += f" Not a higher-quality option because {why}."
    elif sp is not None:
        body += " Lossless weights and a 16-bit KV cache still meet your targets with room to spare."
    if versus and sp is not None:
        body += f" {versus}"
    if sp is None and p.mac.chip is None:
        body += " Pick a chip (Mac → “Chip and RAM”) for speed."
    return level, title + body + _raise_hint(top.fit)


def _raise_hint(fit) -> str:
    return f" Run `{fit.sysctl}` first (resets at reboot)." if fit.verdict == "raise-limit" and fit.sysctl else ""


def limit_reading(p: Plan) -> str:
    w = p.wired
    how = "the limit you set" if w.user_set else f"the {w.macos} default, {w.rule.split(' (')[0]}"
    return (f"macOS lets the GPU use at most **{fmt_bytes(w.effective_bytes)}** of this Mac's "
            f"{p.mac.ram_gb:g} GB ({how}). Everything the model needs — weights, KV cache, buffers — must fit under "
            f"that line; the other {fmt_bytes(w.left_for_macos_bytes)} stay with macOS and your apps. "
            + (f"You can raise the limit until the next reboot, at most to {fmt_bytes(w.max_raise_bytes)} "
               f"(`sudo sysctl iogpu.wired_limit_mb={w.sysctl_max_mb}`)." if w.can_raise else
               "Raising the limit gains nothing on this Mac: macOS needs the rest."))


def memory_reading(p: Plan) -> str:
    groups = {v: [o for o in p.options if o.fit.verdict == v] for v in VERDICT_ORDER}
    parts = [(f"Each bar is one runtime × quantization at {workload_label(p)}: weights (the model file), KV cache "
             "(grows with context × users) and working buffers. A bar must end before the red GPU-limit line; the "
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
    longest = o.max_context[r.users]  # under the default limit; longest_context() is the raised one when needed
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
    if not p.wired.can_raise:
        return "# the GPU limit cannot usefully be raised on this Mac"
    return f"# optional: raise the GPU limit (until reboot)\nsudo sysctl iogpu.wired_limit_mb={p.wired.sysctl_max_mb}"


def model_line(p: Plan) -> str:
    m = p.model
    active = f", {fmt_params(m.active_params)} active per token" if m.is_moe else ""
    return (f"{md_text(m.name)} (`{safe_text(m.id, keep_newlines=False).replace('`', chr(39))}`) · {fmt_params(m.params)} parameters{active} · {m.architecture} · "
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
        row = {"runtime": k.runtime, "KV type": k.layout.kv_type, "per token": fmt_kv_per_token(k.layout)}
        row.update({fmt_ctx(c): fmt_bytes(k.per_sequence_bytes[c]) for c in p.contexts})
        rows.append(row)
    return rows


def _rate(x: float, rng) -> str:
    """'67.5 (likely 55.1–80.0)' for a table cell (the column says tok/s)."""
    return fmt_tok_s_range(x, rng).replace(" tok/s", "")


def compare_row(p: Plan, top, met: bool) -> dict[str, str]:
    """One Mac of the side-by-side table: its answer option (planner.advice.FitOption, or None) and its speed."""
    if top is None:
        o = plan_pick(p) if best_verdict(p) != "no-fit" else None
        return {"Mac": mac_label(p), "best option": option_name(o) if o else "–",
                "fit": verdict_text(o.fit.verdict if o else "no-fit"), "tok/s per user": "–", "first token": "–",
                "meets targets": "–"}
    sp = top.speed
    return {"Mac": mac_label(p), "best option": option_name(top), "fit": verdict_text(top.fit.verdict),
            "tok/s per user": _rate(sp.decode_tok_s_per_user, sp.decode_tok_s_range) if sp else "–",
            "first token": fmt_seconds(sp.ttft_s) if sp else "–",
            "meets targets": ("yes" if met else "no: " + "; ".join(top.misses)) if sp else "–"}


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
def decode_reading(p: Plan, picks: list[FitOption]) -> str:
    if not picks:
        return "No speed estimate for these options."
    users, ctx = p.request.users, p.request.context
    parts = [("How fast text appears for each user. Solid lines: the speed each user sees; dotted: the ceiling if "
              "memory moved at the chip's full bandwidth. Users share the memory bandwidth, so each gets less as "
              "users are added. Lines stop at the most users whose sessions fit in memory.")]
    for o in picks:
        sp, fit = o.speed, fitting_users(p, o)
        if not fit:
            parts.append(f"**{option_name(o)}**: not one {fmt_ctx(ctx)}-token session fits with the runtime's "
                         "safety margin.")
            continue
        line = (f"**{option_name(o)}**: {fmt_tok_s_range(sp.decode_tok_s_per_seq[fit[0]], sp.decode_tok_s_range.get(fit[0]))} for one user "
                f"({sp.bound[fit[0]]}-bound)")
        if users in fit and users != fit[0]:
            line += (f"; with your {users} users, {fmt_tok_s(sp.decode_tok_s_per_seq[users])} tok/s each, "
                     f"{fmt_tok_s(sp.decode_tok_s_total[users])} in total")
        elif users not in fit:
            line += f"; only {_plural(fit[-1], 'session')} of {fmt_ctx(ctx)} tokens fit, fewer than your {users} users"
        parts.append(line + ".")
    parts.append("For comparison, people read about 5-10 tokens per second.")
    return " ".join(parts)


def ttft_reading(p: Plan, picks: list[FitOption]) -> str:
    if not picks:
        return "No speed estimate for these options."
    parts = [("How long a prompt takes to read before the answer starts (time to first token). It grows with the "
              "prompt: long documents, RAG passages and agent loops wait the longest. Lines stop at the longest "
              "context that fits.")]
    users = p.request.users
    for o in picks:
        sp = o.speed
        parts.append(f"**{option_name(o)}**: your {fmt_ctx(sp.prompt_tokens)}-token prompt waits "
                     f"{fmt_seconds(sp.ttft_s)} ({cached_label(sp.cached_prefix_share)}), reading {fmt_tok_s(sp.prefill_tok_s)} tok/s; the longest context "
                     f"that fits is {fmt_ctx(longest_context(o, users))} tokens per session.")
    return " ".join(parts)


# ----------------------------------------------------------------------------- advice and buying (planner.advice/buy)
def recommend_reading(r) -> str:
    """r: planner.advice.Recommendation (or the closest options when no target can be met)."""
    if not r.options:
        return "No configuration fits this Mac for this workload."
    o = r.options[0]
    verb = "meets" if o.meets_targets else "comes closest to"
    parts = [(f"The table ranks every runtime × quantization × KV cache that {verb} your targets. "
              f"**#1 {option_name(o)}**: {o.bound}; {o.quality.text()}.")]
    if r.why_not_higher_quality:
        parts.append(f"Not a higher-quality option because {r.why_not_higher_quality}.")
    if r.router is not None:
        parts.append(f"Mixed workload: {r.router.reason}.")
    return " ".join(parts)


def recommend_rows(r) -> list[dict[str, str]]:
    rows = []
    for o in r.options:
        sp = o.speed
        rows.append({"#": str(o.rank), "runtime": o.runtime, "quantization": o.quant, "KV": o.kv_type,
                     "slots": str(o.slots), "context": fmt_ctx(o.context), "memory": fmt_bytes(o.memory_bytes),
                     "fit": f"{VERDICT_MARK[o.fit.verdict]} {verdict_text(o.fit.verdict)}",
                     "tok/s per user": _rate(sp.decode_tok_s_per_user, sp.decode_tok_s_range) if sp else "–",
                     "first token": fmt_seconds(sp.ttft_s) if sp else "–", "bound": o.bound,
                     "quality cost": o.quality.tier, "meets targets": "yes" if o.meets_targets else "no"})
    if all(o.speed is None for o in r.options):  # memory-only ranking: no empty speed columns
        rows = [{k: v for k, v in row.items() if k not in ("tok/s per user", "first token", "meets targets")}
                for row in rows]
    return rows


def recipe_text(rc) -> str:
    """A launch recipe (planner.recipes.Recipe) as a shell snippet: the sysctl line when needed, always the server."""
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
    rng = f" (likely {fmt_tok_s(x.decode_tok_s_range[0])}–{fmt_tok_s(x.decode_tok_s_range[1])})" if x.decode_tok_s_range else ""
    sp = (f", {fmt_tok_s(x.decode_tok_s_per_user)} tok/s per user{rng}, first token in {fmt_seconds(x.ttft_s)} "
          f"({cached_label(x.cached_prefix_share)})"
          if x.decode_tok_s_per_user is not None else "")
    return (f"**{label}:** {x.product}, {x.chip_label}, {x.ram_gb} GB — ${x.price_usd:,.0f}, {x.price_confidence} price "
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
    """Sortable table rows: the Macs within the budget first (the answer is among them), each group in the
    result's order (meets the targets first, then price); numbers stay numbers so the table sorts; formatted
    columns are text."""
    front = {x.mac for x in b.pareto}
    return [{"meets targets": x.meets_targets, "price [$]": x.price_usd, "price is": x.price_confidence,
             "Mac": x.product, "chip": x.chip_label, "RAM [GB]": x.ram_gb, "runtime": x.runtime, "quantization": x.quant,
             "slots": x.slots, "memory": fmt_bytes(x.memory_bytes), "fit": verdict_text(x.verdict),
             "tok/s per user": x.decode_tok_s_per_user,
             "likely low": x.decode_tok_s_range[0] if x.decode_tok_s_range else None,
             "likely high": x.decode_tok_s_range[1] if x.decode_tok_s_range else None, "first token [s]": x.ttft_s,
             "Pareto front": x.mac in front, "within budget": x.within_budget, "bound by": x.binding,
             "flags": ", ".join(x.flags), "price basis": x.price_basis}
            for x in sorted(b.per_mac, key=lambda r: not r.within_budget)]


def serve_reading(r) -> str:
    """What the latency curve says, in words (`plan serve`)."""
    parts = [f"With **{r.slots} slots** the queue grows without bound above "
             f"**{r.saturation_rate_per_s * 60:.1f} requests/min**; at {r.rate_per_s * 60:.1f}/min the server runs at "
             f"{r.utilisation:.0%} of that, and half the users wait {fmt_seconds(r.ttft_s.p50)} for the first token "
             f"(1 in 20 waits {fmt_seconds(r.ttft_s.p95)})."]
    if r.ttft_s_slow is not None:
        parts.append(f"Across the calibration's 80 % speed range the median first token takes "
                     f"{fmt_seconds(r.ttft_s_fast.p50)}–{fmt_seconds(r.ttft_s_slow.p50)} and the queue grows without "
                     f"bound above {r.saturation_slow_per_s * 60:.1f}–{r.saturation_fast_per_s * 60:.1f} requests/min.")
    if r.target_ttft_p95_s and r.max_rate_per_s:
        parts.append(f"Under TTFT p95 ≤ {r.target_ttft_p95_s:g} s it serves up to "
                     f"{r.max_rate_per_s * 60:.1f} requests/min; {r.best_slots} slots serve the most.")
    if r.binding:
        parts.append(r.binding[0].upper() + r.binding[1:] + ".")
    parts.append("Latency rises slowly, then steeply as the rate nears saturation: plan for the knee, not the line.")
    return " ".join(parts)


def serve_status(r) -> tuple[str, bool]:
    """The server's state in a few words and whether it is good news: stable under the load and, when a TTFT p95
    target is set, within it (a stable queue with a 53 s p95 against a 3 s target is not good news)."""
    if not r.stable:
        return f"overloaded at {r.utilisation:.0%} load", False
    if r.target_ttft_p95_s and r.ttft_s.p95 > r.target_ttft_p95_s:
        return (f"stable at {r.utilisation:.0%} load, but TTFT p95 {fmt_seconds(r.ttft_s.p95)} misses the "
                f"{r.target_ttft_p95_s:g} s target"), False
    return f"stable at {r.utilisation:.0%} load", True


def serve_rows(r) -> list[dict]:
    """The slot sweep as table rows (rates per minute)."""
    return [{"slots": o.slots, "saturation [req/min]": round(o.saturation_rate_per_s * 60, 2),
             "max under the TTFT target [req/min]": (round(o.max_rate_per_s * 60, 2) if o.max_rate_per_s else None),
             "TTFT p95 at low load": fmt_seconds(o.ttft_p95_floor_s),
             "": "recommended" if o.slots == r.best_slots else ""} for o in r.sweep]
