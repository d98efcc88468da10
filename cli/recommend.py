"""`plan recommend`: ranked runtime × quant × KV × slots configurations for a workload on one Mac."""

from __future__ import annotations

import typer

from planner.errors import InputError
from planner.format import fmt_bytes, fmt_ctx, fmt_seconds, fmt_tok_s, table


def recommend_cmd(
    model: str = typer.Option(..., "--model", "-m", help="Catalog id, alias or HF repo (e.g. llama-3.3-70b)"),
    chip: str | None = typer.Option(None, "--chip", help="Apple chip, e.g. 'M4 Max' or m4-max-40gpu (for speed)"),
    gpu_cores: int | None = typer.Option(None, "--gpu-cores", help="GPU cores of a binned chip"),
    ram: float | None = typer.Option(None, "--ram", help="Unified memory [GB]; default: the chip's largest"),
    workload: str = typer.Option("chat", "--workload", "-w", help="Preset: chat, rag, agent, batch, code"),
    users: int | None = typer.Option(None, "--users", "-u", help="Concurrent users (overrides the preset)"),
    prompt: str | None = typer.Option(None, "--prompt", help="Prompt tokens: 12000 | 1024:0.6,8192:0.4 | p50=..,p90=.."),
    gen: str | None = typer.Option(None, "--gen", help="Generated tokens, same forms as --prompt"),
    context: int | None = typer.Option(None, "--context", "-c", help="Context to reserve per sequence [tokens]"),
    min_tok_s: float | None = typer.Option(None, "--min-tok-s", help="Minimum decode tok/s per user"),
    max_ttft: float | None = typer.Option(None, "--max-ttft", help="Maximum time to first token [s]"),
    max_request: float | None = typer.Option(None, "--max-request", help="Maximum time per request/turn [s]"),
    runtime: list[str] | None = typer.Option(None, "--runtime", "-r", help="Runtimes (default llama.cpp, mlx-lm)"),
    quant: list[str] | None = typer.Option(None, "--quant", "-q", help="Restrict to these quantizations"),
    macos: str = typer.Option("15", "--macos", help="macOS major version (15 or 26)"),
    wired_limit: int | None = typer.Option(None, "--wired-limit", help="GPU wired limit you set [MB]"),
    top: int = typer.Option(8, "--top", help="Configurations to list"),
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON"),
):
    """Best runtime, quantization, KV type and slots for a workload on one Mac, with launch recipes."""
    from planner.advice import recommend
    from planner.plan import PlanRequest, resolve_mac
    from planner.workload import custom_workload

    if chip is None and ram is None:
        raise InputError("give --chip (for speed) and/or --ram, e.g. --chip 'M4 Max' --gpu-cores 40 --ram 64")
    wl = custom_workload(workload, prompt=prompt, gen=gen, users=users, context=context, min_tok_s=min_tok_s,
                         max_ttft=max_ttft, max_request=max_request)
    ram_gb, chip_p, _ = resolve_mac(PlanRequest(model=model, ram_gb=ram, chip=chip, gpu_cores=gpu_cores))
    r = recommend(model, ram_gb, wl, chip=chip_p, macos=macos, runtimes=list(runtime) if runtime else None,
                  quants=list(quant) if quant else None, wired_limit_mb=wired_limit, top=top)
    if json_out:
        typer.echo(r.model_dump_json(indent=2))
        return
    mac = f"{chip_p.label}, {ram_gb:g} GB" if chip_p else f"{ram_gb:g} GB"
    out = [f"{r.model} on {mac} · {r.macos} · GPU limit {fmt_bytes(r.wired.effective_bytes)}",
           f"Workload {wl.summary()}",
           f"Searched {r.evaluated} configurations (runtime × quant × KV × slots); dropped: "
           + (", ".join(f"{v} {k}" for k, v in r.rejected.items()) or "none"),
           f"Speed: {r.speed_source}", ""]
    rows = []
    for o in r.options:
        sp = o.speed
        rows.append([str(o.rank), o.runtime, o.quant, o.kv_type, str(o.slots), fmt_ctx(o.context),
                     fmt_bytes(o.memory_bytes), o.fit.verdict,
                     fmt_tok_s(sp.decode_tok_s_per_user) if sp else "–", fmt_seconds(sp.ttft_s) if sp else "–",
                     fmt_seconds(sp.time_per_request_s) if sp else "–", o.bound, o.quality.tier])
    out.append(table(rows, ["#", "runtime", "quant", "kv", "slots", "ctx", "memory", "fit", "tok/s/user", "TTFT",
                            "per request", "bound", "quality"], "rlllrrrlrrrll"))
    out.append("")
    for o in r.options[:3]:
        out.append(f"#{o.rank} {o.runtime} {o.quant} kv {o.kv_type}: {o.reason}")
        if o.recipe.sysctl:
            out.append(f"   {o.recipe.sysctl}")
        out.append(f"   {o.recipe.server}")
        if o.recipe.generate:
            out.append(f"   {o.recipe.generate}")
        for n in o.recipe.notes:
            out.append(f"   note: {n}")
    if r.why_not_higher_quality:
        out.append(f"Not a higher-quality option because {r.why_not_higher_quality}.")
    if r.router:
        out.append("")
        out.append(f"Router (mixed workload): {r.router.reason}")
    for n in r.notes:
        out.append(f"note: {n}")
    typer.echo("\n".join(out))
