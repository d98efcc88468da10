"""`plan models`: the catalog; with --ram, the catalog models that run on that Mac, best first."""

from __future__ import annotations

import typer

from planner._model import DEFAULT_MACOS
from planner.format import fmt_params, table

from .models_rank import render_models  # noqa: F401  (its old home)
from .options import wopt
from .questions import WhatRunsRequest as Q


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
    cached_prefix: float = wopt(Q, "cached_prefix"),
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

    from .models_rank import check, rank_text

    check(ram=ram, gpu_cores=gpu_cores, context=context, users=users, min_tok_s=min_tok_s, max_params=max_params,
          top=top, prompt=prompt, gen=gen)
    if installed or dirs:   # cli/installed.py
        from .installed import installed_cmd

        return installed_cmd(dirs, ram=ram, chip=chip, gpu_cores=gpu_cores, context=context, users=users,
                             macos=macos, json_out=json_out)
    if ram is None:
        if chip is not None or task or min_tok_s or max_params or family or runtime:
            raise InputError("give --ram to rank the models for a Mac, e.g. plan models --ram 64 --chip 'M4 Max'")
        return _catalog(json_out)
    # the ranking: cli/models_rank.py, also the typer-free path of cli/main.py (MODELS_FAST_FLAGS)
    typer.echo(rank_text({"ram": ram, "chip": chip, "gpu_cores": gpu_cores, "task": task, "min_tok_s": min_tok_s,
                          "context": context, "users": users, "prompt": prompt, "gen": gen,
                          "cached_prefix": cached_prefix, "runtime": runtime, "max_params": max_params,
                          "family": family, "macos": macos, "top": top, "json_out": json_out}), nl=False)


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
