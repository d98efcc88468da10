"""`plan models --ram ...` without typer: the ranking's checks, core call and rendering, shared by the typer
command (cli/models.py models_cmd) and the typer-free fast path of cli/main.py (MODELS_FAST_FLAGS), so both
print the same bytes. This module must not import typer (tests/cli/test_startup.py)."""

from __future__ import annotations

from planner._model import DEFAULT_MACOS
from planner.format import (
    SCORE_CAVEAT_NOTE,
    fmt_bytes,
    fmt_ctx,
    fmt_params,
    fmt_score,
    fmt_tok_s,
    lengths_text,
    table,
)
from planner.points import DEFAULT_CACHED_PREFIX, DEFAULT_GEN, DEFAULT_PROMPT

from .words import say

# models_cmd's defaults for the options of the ranking (cli/models.py)
DEFAULTS = {"ram": None, "chip": None, "gpu_cores": None, "task": None, "min_tok_s": None, "context": 8192,
            "users": 1, "prompt": DEFAULT_PROMPT, "gen": DEFAULT_GEN,
            "cached_prefix": DEFAULT_CACHED_PREFIX, "runtime": None, "max_params": None, "family": None, "macos": DEFAULT_MACOS, "top": 0,
            "json_out": False}


def check(ram=None, gpu_cores=None, context=8192, users=1, min_tok_s=None, max_params=None, top=0, prompt=None,
          gen=None) -> None:
    """The bounds of models_cmd's numeric options (one InputError line)."""
    from planner.errors import InputError

    from .bounds import check_options

    check_options(ram=ram, gpu_cores=gpu_cores, context=context, users=users, min_tok_s=min_tok_s,
                  max_params=max_params, prompt=prompt, gen=gen)
    if not 0 <= top <= 10_000:  # --top -1 printed all but the last row
        raise InputError(f"--top {top}: give 0 (all rows) to 10,000")


def rank_text(given: dict) -> str:
    """The answer of `plan models --ram ...` (``given``: models_cmd's option values, defaults filled in), with
    its final newline."""
    v = {**DEFAULTS, **given}
    check(ram=v["ram"], gpu_cores=v["gpu_cores"], context=v["context"], users=v["users"], min_tok_s=v["min_tok_s"],
          max_params=v["max_params"], top=v["top"], prompt=v["prompt"], gen=v["gen"])
    from planner.errors import InputError
    from planner.models import Query, resolve_chip_for_ram, what_runs

    chip_p = resolve_chip_for_ram(v["chip"], v["ram"], v["gpu_cores"]) if v["chip"] is not None else None
    if v["gpu_cores"] is not None and chip_p is None:
        raise InputError("--gpu-cores needs --chip (e.g. --chip 'M4 Max' --gpu-cores 40)")
    from .options import check as check_request
    from .questions import WhatRunsRequest

    pt = check_request(WhatRunsRequest, {"ram": v["ram"], "prompt": v["prompt"], "gen": v["gen"],
                                         "cached_prefix": v["cached_prefix"]})
    r = what_runs(Query(ram_gb=v["ram"], chip=chip_p, task=v["task"], min_tok_s=v["min_tok_s"], context=v["context"],
                        users=v["users"], runtimes=tuple(v["runtime"] or ()), max_params_b=v["max_params"],
                        family=v["family"], macos=v["macos"], prompt_tokens=pt.prompt, gen_tokens=pt.gen,
                        cached_prefix_share=pt.cached_prefix))
    if v["json_out"]:
        from .contract import dumps

        return dumps(r) + "\n"
    return say(render_models(r, v["top"])) + "\n"


def render_models(r, top: int = 0) -> str:
    mac = f"{r.chip_label}, {r.ram_gb:g} GB" if r.chip else f"{r.ram_gb:g} GB (no chip: memory and quality only)"
    out = [f"What can I run on {mac}? GPU limit {fmt_bytes(r.wired_limit_bytes)}; {r.users} user{'' if r.users == 1 else 's'} × "
           f"{fmt_ctx(r.context)} context" + (f"; {lengths_text(r.prompt_tokens, r.gen_tokens, r.cached_prefix_share)}"
                                              if r.chip else "")
           + (f"; at least {r.min_tok_s:g} tok/s" if r.min_tok_s else ""),
           r.quality_basis[:1].upper() + r.quality_basis[1:] + "."]
    if r.best_effort:
        out.append("Nothing meets every filter; the closest are shown:")
        out += [f"  {b}" for b in r.binding]
    out.append("")
    for title, rows in (("", r.rows), ("Embedding models (ranked among themselves):", r.embedding_rows)):
        if not rows:
            continue
        if title:
            out += ["", title]
        out.append(_table(rows[:top] if top else rows, r.chip is not None))
        if top and len(rows) > top:
            out.append(f"({top} of {len(rows)} shown; --top 0 lists all)")
    if not r.rows and not r.embedding_rows:
        out.append("(no model in the selection)")
    if any(x.score_caveats for rows in (r.rows, r.embedding_rows) for x in (rows[:top] if top else rows)):
        out.append(SCORE_CAVEAT_NOTE)
    if r.excluded:
        out.append("")
        out.append("Left out: " + ", ".join(f"{v} {k}" for k, v in r.excluded.items()))
    out += [f"note: {n}" for n in r.notes]
    return "\n".join(out)


def _table(rows, speed: bool) -> str:
    hdr = ["#", "model", "params", "runtime", "quant", "kv", "fits (ctx @users · users @ctx)"]
    al = "rllllll"
    if speed:
        hdr += ["decode tok/s", "range", "prefill tok/s"]
        al += "rrr"
    hdr += ["score", "mem left", ""]
    al += "rrl"
    body = []
    for x in rows:
        fits = f"{fmt_ctx(x.max_context)} · {x.max_users}" if x.verdict != "no-fit" else "does not fit"
        line = [str(x.rank), x.model, fmt_params(x.params_b * 1e9), x.runtime, x.quant, x.kv_type, fits]
        if speed:
            rng = f"{fmt_tok_s(x.decode_tok_s_range[0])}–{fmt_tok_s(x.decode_tok_s_range[1])}" if x.decode_tok_s_range else "–"
            if "embedding" in x.tasks:   # an embedding model only reads its input: prefill is its speed
                rng, dec = "–", "–"
            else:
                dec = fmt_tok_s(x.decode_tok_s_per_user)
            line += [dec, rng, fmt_tok_s(x.prefill_tok_s)]
        flag = {"tight": "tight", "raise-limit": "raise limit", "no-fit": "no fit"}.get(x.verdict, "")
        why = "; ".join(m.split(":")[0] for m in x.misses)
        line += [fmt_score(x.score, x.score_caveats), fmt_bytes(x.memory_left_bytes),
                 ", ".join(s for s in (flag, f"misses {why}" if why else "") if s)]
        body.append(line)
    if not any(b[-1] for b in body):   # no row is flagged: drop the empty last column
        body, hdr, al = [b[:-1] for b in body], hdr[:-1], al[:-1]
    return table(body, hdr, al)
