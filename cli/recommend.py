"""`plan recommend`: ranked runtime × quant × KV × slots configurations for a workload on one Mac."""

from __future__ import annotations

import typer

from planner.errors import InputError
from planner.format import fmt_bytes, fmt_ctx, fmt_seconds, fmt_tok_s, table
from planner.requests import RecommendRequest

from .options import check, opt, wopt
from .words import say

R = RecommendRequest


def recommend_cmd(
    model: str = opt(R, "model", "--model", "-m"),
    chip: str | None = opt(R, "chip", "--chip"),
    gpu_cores: int | None = opt(R, "gpu_cores", "--gpu-cores"),
    ram: float | None = opt(R, "ram", "--ram"),
    workload: str = opt(R, "workload", "--workload", "-w"),
    users: int | None = wopt(R, "users"),
    prompt: str | None = wopt(R, "prompt"),
    gen: str | None = wopt(R, "gen"),
    cached_prefix: float = wopt(R, "cached_prefix"),
    context: int | None = opt(R, "context", "--context", "-c"),
    min_tok_s: float | None = opt(R, "min_tok_s", "--min-tok-s"),
    max_ttft: float | None = opt(R, "max_ttft", "--max-ttft"),
    max_request: float | None = opt(R, "max_request", "--max-request"),
    runtime: list[str] | None = opt(R, "runtime", "--runtime", "-r", repeatable=True),
    quant: list[str] | None = opt(R, "quant", "--quant", "-q", repeatable=True),
    macos: str = opt(R, "macos", "--macos"),
    wired_limit: int | None = opt(R, "wired_limit", "--wired-limit"),
    top: int = opt(R, "top", "--top"),
    kv_type: str | None = opt(R, "kv_type", "--kv-type"),
    images: int = opt(R, "images", "--images"),
    image_size: str | None = opt(R, "image_size", "--image-size"),
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON"),
):
    """Best runtime, quantization, KV type and slots for a workload on one Mac, with launch recipes."""
    check(R, locals())
    from cli.bounds import check_options

    check_options(gpu_cores=gpu_cores, ram=ram, users=users, prompt=prompt, gen=gen, context=context,
                  min_tok_s=min_tok_s, max_ttft=max_ttft, max_request=max_request, wired_limit=wired_limit, top=top)
    from planner.advice import recommend
    from planner.plan import PlanRequest, resolve_mac
    from planner.workload import custom_workload, with_images

    if chip is None and ram is None:
        raise InputError("give --chip (for speed) and/or --ram, e.g. --chip 'M4 Max' --gpu-cores 40 --ram 64")
    wl = custom_workload(workload, prompt=prompt, gen=gen, users=users, context=context, min_tok_s=min_tok_s,
                         max_ttft=max_ttft, max_request=max_request, cached_prefix=cached_prefix)
    wl, image_notes = with_images(wl, model, images, image_size)
    ram_gb, chip_p, _ = resolve_mac(PlanRequest(model=model, ram=ram, chip=chip, gpu_cores=gpu_cores))
    r = recommend(model, ram_gb, wl, chip=chip_p, macos=macos, runtimes=list(runtime) if runtime else None,
                  quants=list(quant) if quant else None, wired_limit_mb=wired_limit, top=top,
                  best_effort=True, kv_type=kv_type, images=images)
    r = r.model_copy(update={"notes": [*image_notes, *r.notes]}) if image_notes else r
    if json_out:
        from .contract import dumps

        typer.echo(dumps(r))
        return
    from .bottom_line import bottom_line

    mac = f"{chip_p.label}, {ram_gb:g} GB" if chip_p else f"{ram_gb:g} GB"
    out = [*bottom_line(r)[:2], "", f"{r.model} on {mac} · {r.macos} · GPU limit {fmt_bytes(r.wired.effective_bytes)}",
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
    if not r.targets_met:
        out.insert(out.index("") + 5, "No configuration meets the targets: the closest are listed (see the note below)")
    out += _router_lines(r.router)
    for n in r.notes:
        out.append(f"note: {n}")
    typer.echo(say("\n".join(out)))


def _router_lines(router) -> list[str]:
    """The router pair (or the single runtime and why), with its launch lines."""
    if router is None:
        return []
    out = ["", f"Router (mixed workload): {router.reason}"]
    for rec in router.recipes:
        if rec.sysctl:
            out.append(f"   {rec.sysctl}")
        out.append(f"   {rec.server}")
    return out
