"""`plan models`: the catalog; with --ram, the catalog models that run on that Mac, best first."""

from __future__ import annotations

import typer

from planner._model import DEFAULT_MACOS
from planner.format import SCORE_CAVEAT_NOTE, fmt_bytes, fmt_ctx, fmt_params, fmt_score, fmt_tok_s, table

from .options import check, wopt
from .questions import WhatRunsRequest as Q
from .words import say


def models_cmd(
    ram: float | None = typer.Option(None, "--ram", help="Unified memory [GB]: rank the models that run on it"),
    chip: str | None = typer.Option(None, "--chip", help="Apple chip, e.g. 'M4 Max' (for speed)"),
    gpu_cores: int | None = typer.Option(None, "--gpu-cores", help="GPU cores of a binned chip"),
    task: str | None = typer.Option(None, "--task", help="chat, code, reasoning, vision or embedding"),
    min_tok_s: float | None = typer.Option(None, "--min-tok-s", help="Minimum decode tok/s per user"),
    context: int = typer.Option(8192, "--context", "-c", help="Context per user [tokens]"),
    users: int = wopt(Q, "users"),
    prompt: str = wopt(Q, "prompt"),
    gen: str = wopt(Q, "gen"),
    runtime: list[str] | None = typer.Option(None, "--runtime", "-r", help="Runtimes (default llama.cpp, mlx-lm)"),
    max_params: float | None = typer.Option(None, "--max-params", help="Largest model [billions of parameters]"),
    family: str | None = typer.Option(None, "--family", help="Model family, e.g. qwen, llama, gemma"),
    macos: str = typer.Option(DEFAULT_MACOS, "--macos", help="macOS major version (15 or 26)"),
    top: int = typer.Option(0, "--top", help="Rows to print (0: all)"),
    json_out: bool = typer.Option(False, "--json", help="Print as JSON"),
    installed: bool = typer.Option(False, "--installed", help="The models on disk (Ollama, LM Studio, HF cache, "
                                   "llama.cpp cache, --dir): exact bytes, fit, speed, run command"),
    dirs: list[str] | None = typer.Option(None, "--dir", help="A folder of models to read too (repeatable)"),
):
    """Without --ram: the built-in catalog. With --ram (and --chip for speed): what can I run on this Mac?"""
    from planner.errors import InputError

    from .bounds import check_options

    check_options(ram=ram, gpu_cores=gpu_cores, context=context, users=users, min_tok_s=min_tok_s,
                  max_params=max_params, prompt=prompt, gen=gen)
    if not 0 <= top <= 10_000:  # --top -1 printed all but the last row
        raise InputError(f"--top {top}: give 0 (all rows) to 10,000")
    if installed or dirs:   # cli/installed.py
        from .installed import installed_cmd

        return installed_cmd(dirs, ram=ram, chip=chip, gpu_cores=gpu_cores, context=context, users=users,
                             macos=macos, json_out=json_out)
    if ram is None:
        if chip is not None or task or min_tok_s or max_params or family or runtime:
            raise InputError("give --ram to rank the models for a Mac, e.g. plan models --ram 64 --chip 'M4 Max'")
        return _catalog(json_out)
    from planner.models import Query, resolve_chip_for_ram, what_runs

    chip_p = resolve_chip_for_ram(chip, ram, gpu_cores) if chip is not None else None
    if gpu_cores is not None and chip_p is None:
        raise InputError("--gpu-cores needs --chip (e.g. --chip 'M4 Max' --gpu-cores 40)")
    pt = check(Q, {"ram": ram, "prompt": prompt, "gen": gen})
    r = what_runs(Query(ram_gb=ram, chip=chip_p, task=task, min_tok_s=min_tok_s, context=context, users=users,
                        runtimes=tuple(runtime or ()), max_params_b=max_params, family=family, macos=macos,
                        prompt_tokens=pt.prompt, gen_tokens=pt.gen))
    if json_out:
        from .contract import dumps

        typer.echo(dumps(r))
        return
    typer.echo(say(render_models(r, top)))

def render_models(r, top: int = 0) -> str:
    mac = f"{r.chip_label}, {r.ram_gb:g} GB" if r.chip else f"{r.ram_gb:g} GB (no chip: memory and quality only)"
    out = [f"What can I run on {mac}? GPU limit {fmt_bytes(r.wired_limit_bytes)}; {r.users} user(s) × "
           f"{fmt_ctx(r.context)} context" + (f"; at least {r.min_tok_s:g} tok/s" if r.min_tok_s else ""),
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

def _catalog(json_out: bool) -> None:
    from planner import architecture as arch
    from planner import profiles

    ms = profiles.all_models()
    if json_out:
        from .contract import dumps

        typer.echo(dumps({"models": [{"id": m.id, "name": m.name, "params": arch.n_params(m.config),
                                      "aliases": m.aliases} for m in ms]}))
        return
    rows = [[m.id, m.name, fmt_params(arch.n_params(m.config)), f"{m.config.max_position_embeddings:,}",
             ", ".join(m.aliases[:3])] for m in ms]
    typer.echo(table(rows, ["id", "name", "params", "max ctx", "aliases"], "llrrl"))
