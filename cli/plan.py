"""The plain `plan --model ... --ram ...` question: request values in, rendered text out. Shared by the typer
command (cli/commands.py) and the typer-free fast path of cli/main.py, so both answer identically."""

from __future__ import annotations

from typing import Any

from planner.plan import PlanRequest, plan_request

from .options import values


def run_plan(given: dict[str, Any], file: str | None = None, json_out: bool = False) -> str:
    from .render import render_plan

    result, rec = plan_answer(given, file)
    if json_out:
        from .contract import dumps

        return dumps(with_bottom_line(result, rec)) + "\n"
    head = ""
    if rec is not None:
        from .bottom_line import bottom_line

        head = "\n".join(bottom_line(rec) + _thinking_lines(result.request, rec)) + "\n\n"
    elif result.smallest is not None:  # no option fits (planner.plan._smallest)
        from .bottom_line import no_fit_line

        head = no_fit_line(result) + "\n\n"
    from .words import say

    return say(head + render_plan(result) + "\n")


def plan_answer(given: dict[str, Any], file: str | None = None):
    """(Plan, the chat Recommendation or None) for the request values ``given``: a catalog id, or a local file,
    folder or HF repo read by sources.resolve_model (the one place both the CLI and mac_llm_planner.plan go)."""
    from planner.errors import InputError
    from planner.plan import plan

    model = given.get("model")
    if model is None:
        raise InputError("missing --model (e.g. plan --model llama-3.3-70b --ram 64); see plan --help")
    v = values(PlanRequest, given)
    if not v.get("quants"):
        v.pop("quants", None)
    req = plan_request(**v)
    resolved = None
    if file and catalog_id(model):  # was ignored: the catalog's answer for every quant
        from sources.ggufmeta import quant_from_name

        named = quant_from_name(file) if "/" in model else None
        if named is None:
            raise InputError(f"--file {file[:80]!r} picks a GGUF in a folder or HF repo, and [[model]] "
                             f"{model[:80]!r} is a catalog id: give [[quant]] for one quantization, or a folder or "
                             "repo as [[model]]")
        if not req.quants:  # a repo the catalog knows (bartowski/..-GGUF): the file names the quantization
            req = req.model_copy(update={"quants": [named]})
    if not catalog_id(model):
        from sources import resolve_model  # edge: local files and the HF Hub (lazy: keeps catalog plans fast)

        quants = req.quants or []
        resolved = resolve_model(model, file=file, quant=quants[0] if len(quants) == 1 else None)
    result = plan(req, resolved)
    # the plan's request (context capped at the model's maximum, image tokens in context and prompt): the bottom
    # line speaks of the same workload
    rec = _recommendation(result.request) if resolved is None else None
    return result, rec


def with_bottom_line(result, rec):
    """The Plan with the recommendation's bottom line (workload, targets met, top option, runtime verdicts)."""
    if rec is None:
        return result
    from planner.advice import runtime_verdicts

    top = rec.options[0] if rec.options else None
    return result.model_copy(update={"bottom_line": {
        "workload": rec.workload.id, "targets_met": rec.targets_met,
        "option": top.model_dump(mode="json") if top else None,
        "runtime_verdicts": [v.model_dump(mode="json") for v in runtime_verdicts(rec)]}})


def _thinking_lines(req: PlanRequest, rec) -> list[str]:
    """A reasoning model (catalog task "reasoning") or a stated --thinking-tokens: the wait for the answer's first
    token after the thinking, at the bottom line's option (planner.advice.answer_wait)."""
    from planner import profiles
    from planner.advice import THINKING_BUDGETS, answer_wait
    from planner.format import fmt_seconds

    top = rec.options[0] if rec.options else None
    sp = top.speed if top is not None else None
    reasoning = "reasoning" in profiles.load_model(req.model).tasks
    if sp is None or not sp.decode_tok_s_per_user or (req.thinking_tokens is None and not reasoning):
        return []
    if req.thinking_tokens is not None:
        return [f"Thinking: after {req.thinking_tokens:,} thinking tokens the answer's first token comes at "
                f"{fmt_seconds(answer_wait(sp.ttft_s, sp.decode_tok_s_per_user, req.thinking_tokens))} (TTFT "
                f"{fmt_seconds(sp.ttft_s)} + thinking at {sp.decode_tok_s_per_user:.1f} tok/s)."]
    cells = ", ".join(f"{t:,} tokens → {fmt_seconds(answer_wait(sp.ttft_s, sp.decode_tok_s_per_user, t))}"
                      for t in THINKING_BUDGETS)
    return [f"Thinking: a reasoning model answers after it thinks; the answer's first token after {cells} "
            "(--thinking-tokens N for your budget)."]


def _recommendation(req: PlanRequest):
    """The ranked answer `plan recommend` and the web form give for this model, Mac and the chat workload at the
    request's users, context (and prompt/answer lengths when given); None when no chip is known or nothing fits."""
    from planner import profiles
    from planner.advice import recommend
    from planner.errors import PlannerError
    from planner.plan import pinned_by_name, resolve_mac
    from planner.workload import custom_workload

    ram, chip, _ = resolve_mac(req)
    # a name that pins a format and preset (mlx-community/<Model>-4bit) pins the recommendation too, as the plan
    rts = [profiles.load_runtime(r) for r in profiles.expand_runtimes(list(req.runtimes))]
    req, rts, _ = pinned_by_name(req, rts)
    # the preset's own length distributions unless the request names other lengths than the defaults
    fields = PlanRequest.model_fields
    lengths = {k: str(getattr(req, k)) for k in ("prompt", "gen") if getattr(req, k) != fields[k].default}
    wl = custom_workload("chat", users=req.users, context=req.context, cached_prefix=req.cached_prefix, **lengths)
    try:
        return recommend(req.model, ram, wl, chip=chip, macos=req.macos, runtimes=[r.id for r in rts],
                         quants=list(req.quants) if req.quants else None, wired_limit_mb=req.wired_limit_mb,
                         best_effort=True, kv_type=req.kv_type, flash_attn=req.flash_attn, n_ubatch=req.n_ubatch,
                         images=req.images)
    except PlannerError:
        return None


def catalog_id(spec: str) -> bool:
    """A catalog id or alias that is not also a local file or folder (those win, as in sources.resolve_model)."""
    from pathlib import Path

    from planner import profiles
    from planner.errors import PlannerError, UnknownProfileError

    s = spec.strip()
    try:
        local = Path(s).expanduser().exists()
    except (RuntimeError, OSError, ValueError):  # '~nosuchuser/x', names too long, NUL bytes
        local = True  # let sources.resolve_model give the one-line error
    if not s or s.lower().endswith(".gguf") or local:
        return False
    try:
        profiles.load_model(s)
    except (UnknownProfileError, PlannerError):
        return False
    return True
