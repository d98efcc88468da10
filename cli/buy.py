"""`plan buy`: which Mac to buy for a model (or several resident together) and a workload."""

from __future__ import annotations

import typer

from planner.format import fmt_bytes, fmt_seconds, fmt_tok_s, table
from planner.requests import BuyRequest

from .options import check, opt

R = BuyRequest


def buy_cmd(
    model: list[str] = opt(R, "model", "--model", "-m", repeatable=True),
    workload: str = opt(R, "workload", "--workload", "-w"),
    users: int | None = opt(R, "users", "--users", "-u"),
    prompt: str | None = opt(R, "prompt", "--prompt"),
    gen: str | None = opt(R, "gen", "--gen"),
    context: int | None = opt(R, "context", "--context", "-c"),
    min_tok_s: float | None = opt(R, "min_tok_s", "--min-tok-s"),
    max_ttft: float | None = opt(R, "max_ttft", "--max-ttft"),
    max_request: float | None = opt(R, "max_request", "--max-request"),
    budget: float | None = opt(R, "budget", "--budget"),
    include_rumoured: bool = opt(R, "include_rumoured", "--include-rumoured"),
    max_quality_cost: str = opt(R, "max_quality_cost", "--max-quality-cost"),
    runtime: list[str] | None = opt(R, "runtime", "--runtime", "-r", repeatable=True),
    macos: str = opt(R, "macos", "--macos"),
    all_rows: bool = opt(R, "all_rows", "--all"),
    clusters: bool = opt(R, "clusters", "--clusters"),
    link: str = opt(R, "link", "--link"),
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON"),
):
    """Cheapest Mac that meets the targets, best value, fastest within budget, and the price/speed Pareto front."""
    check(R, locals())
    from planner.buy import buy
    from planner.workload import custom_workload

    wl = custom_workload(workload, prompt=prompt, gen=gen, users=users, context=context, min_tok_s=min_tok_s,
                         max_ttft=max_ttft, max_request=max_request)
    r = buy(list(model), wl, budget_usd=budget, include_rumoured=include_rumoured,
            runtimes=list(runtime) if runtime else None, macos=macos, max_quality_cost=max_quality_cost)
    if json_out:
        typer.echo(r.model_dump_json(indent=2))
        return

    def line(label, x):
        if x is None:
            return f"{label}: –"
        sp = (f"{fmt_tok_s(x.decode_tok_s_per_user)} tok/s/user, TTFT {fmt_seconds(x.ttft_s)}, "
              f"{fmt_seconds(x.time_per_request_s)}/request" if x.decode_tok_s_per_user is not None else "memory only")
        extra = f"; {', '.join(x.flags)}" if x.flags else ""
        return (f"{label}: {x.product} {x.chip} {x.ram_gb} GB — ${x.price_usd:,.0f} ({x.price_confidence} confidence)"
                f"\n    {x.runtime} {x.quant} kv {x.kv_type} × {x.slots} slots: {sp}; {fmt_bytes(x.memory_bytes)} "
                f"({x.verdict}); bound by {x.binding}{extra}" + (f"\n    {x.sysctl}" if x.sysctl else ""))

    out = [f"{' + '.join(r.models)} · {wl.summary()}",
           f"Evaluated {r.evaluated:,} configurations (Mac × runtime × quant × KV × slots); quality ≤ {r.max_quality_cost}",
           f"Speed: {r.speed_source}", "",
           line("Cheapest that meets the targets", r.cheapest),
           line("Best value (aggregate tok/s per $)", r.best_value),
           line("Fastest" + (f" within ${r.budget_usd:,.0f}" if r.budget_usd else ""), r.fastest_within_budget), ""]
    rows_src = r.per_mac if all_rows else r.pareto
    out.append("Best configuration of every Mac:" if all_rows else "Pareto front (price vs per-user tok/s and TTFT):")
    rows = [[f"${x.price_usd:,.0f}", x.price_confidence, f"{x.product} {x.chip} {x.ram_gb} GB", x.runtime, x.quant,
             str(x.slots), fmt_bytes(x.memory_bytes), x.verdict, fmt_tok_s(x.decode_tok_s_per_user),
             fmt_seconds(x.ttft_s), "yes" if x.meets_targets else "no", x.binding,
             "laptop" if x.form_factor == "laptop" else ""] for x in rows_src]
    out.append(table(rows, ["price", "conf", "Mac", "runtime", "quant", "slots", "memory", "fit", "tok/s/user",
                            "TTFT", "meets", "binding", "note"], "rllllrrlrrlll"))
    if clusters:
        out += _cluster_lines(list(model)[0], wl, link, budget, r.cheapest)
    for n in r.notes:
        out.append(f"note: {n}")
    typer.echo("\n".join(out))


def _cluster_lines(model: str, wl, link: str, budget: float | None, single) -> list[str]:
    from planner.cluster import cluster_candidates

    cands = cluster_candidates(model, link=link, context=wl.context, users=wl.users,
                               prompt=wl.prompt_tokens.p90_tokens, gen=wl.gen_tokens.p90_tokens, budget_usd=budget)
    out = ["", f"Clusters of identical Macs over {link} (mlx pipeline; see `plan cluster` for recipes):"]
    if not cands:
        return [*out, "  none holds the model" + (f" within ${budget:,.0f}" if budget else "")]
    rows = [[f"${c.price_usd:,.0f}", c.macs, fmt_tok_s(c.decode_tok_s_per_user), fmt_seconds(c.ttft_s), c.binding]
            for c in cands[:6]]
    out.append(table(rows, ["price", "Macs", "tok/s/user", "TTFT", "binding"], "rlrrl"))
    if single is not None and single.decode_tok_s_per_user:
        out.append(f"  vs one Mac: {single.product} {single.chip} {single.ram_gb} GB at ${single.price_usd:,.0f}, "
                   f"{fmt_tok_s(single.decode_tok_s_per_user)} tok/s/user")
    return out
