"""`plan buy`: which Mac to buy for a model (or several resident together) and a workload."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import typer

from planner.errors import InputError
from planner.format import fmt_bytes, fmt_seconds, fmt_tok_s, table, ttft_text
from planner.requests import BuyRequest

from .options import check, opt, wopt
from .words import say

TABLE_ROWS = 25
MAX_PRICE_ROWS = 5_000     # the catalog lists a few hundred Mac configurations


R = BuyRequest


def buy_cmd(
    model: list[str] = opt(R, "model", "--model", "-m", repeatable=True),
    workload: str = opt(R, "workload", "--workload", "-w"),
    users: int | None = wopt(R, "users"),
    prompt: str | None = wopt(R, "prompt"),
    gen: str | None = wopt(R, "gen"),
    cached_prefix: float = wopt(R, "cached_prefix"),
    context: int | None = opt(R, "context", "--context", "-c"),
    min_tok_s: float | None = opt(R, "min_tok_s", "--min-tok-s"),
    max_ttft: float | None = opt(R, "max_ttft", "--max-ttft"),
    max_request: float | None = opt(R, "max_request", "--max-request"),
    budget: float | None = opt(R, "budget", "--budget"),
    price: list[str] | None = opt(R, "price", "--price", repeatable=True),
    prices: Path | None = opt(R, "prices", "--prices"),
    include_discontinued: bool = opt(R, "include_discontinued", "--include-discontinued"),
    include_rumoured: bool = opt(R, "include_rumoured", "--include-rumoured"),
    max_quality_cost: str = opt(R, "max_quality_cost", "--max-quality-cost"),
    runtime: list[str] | None = opt(R, "runtime", "--runtime", "-r", repeatable=True),
    macos: str = opt(R, "macos", "--macos"),
    all_rows: bool = opt(R, "all_rows", "--all"),
    clusters: bool = opt(R, "clusters", "--clusters"),
    link: str | None = opt(R, "link", "--link"),
    kwh_price: float = opt(R, "kwh_price", "--kwh-price"),
    busy_hours: float = opt(R, "busy_hours", "--busy-hours"),
    years: float | None = opt(R, "years", "--years"),
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON"),
):
    """Cheapest Mac that meets the targets, best value, fastest within budget, and the price/speed Pareto front;
    when no Mac meets every target, the closest ones and what would change the answer."""
    check(R, locals())
    from planner.buy import cluster_link

    link = cluster_link(clusters, link)  # a link without --clusters is refused, not ignored
    from cli.bounds import check_options

    check_options(users=users, prompt=prompt, gen=gen, context=context, min_tok_s=min_tok_s, max_ttft=max_ttft,
                  max_request=max_request, budget=budget)
    from planner.buy import buy
    from planner.workload import custom_workload

    wl = custom_workload(workload, prompt=prompt, gen=gen, users=users, context=context, min_tok_s=min_tok_s,
                         max_ttft=max_ttft, max_request=max_request, cached_prefix=cached_prefix)
    r = buy(list(model), wl, budget_usd=budget, include_rumoured=include_rumoured,
            runtimes=list(runtime) if runtime else None, macos=macos, max_quality_cost=max_quality_cost,
            include_discontinued=include_discontinued, prices=user_prices(list(price or []), prices))
    from planner.beyond import running_costs

    costs = running_costs(r.per_mac, busy_hours, kwh_price, years)
    r = r.model_copy(update={"running_costs": costs})
    if link is not None:  # clusters asked: in the answer itself, so --json (and the agents' buy) carry them too
        r = r.model_copy(update={"clusters": cluster_options(model[0], wl, link, budget, include_discontinued,
                                                             macos)})
    if json_out:
        from .contract import dumps

        typer.echo(dumps(r))
        return
    out = _header(r, wl) + _verdict_lines(r) + (_table_lines(r, all_rows) if r.per_mac else [])
    out += cost_lines(costs, busy_hours, kwh_price, years)
    if link is not None:
        out += _cluster_lines(r.clusters, model[0], wl, link, budget, include_discontinued, macos)
    out += [f"note: {n}" for n in r.notes]
    typer.echo(say("\n".join(out)))


def cost_lines(costs, busy_hours: float, kwh_price: float, years: float | None, n: int = 8) -> list[str]:
    """Running cost per Mac (planner.beyond.running_costs): by total cost of ownership with --years."""
    if not costs:
        return []
    by = f"by price + energy over {years:g} years" if years else "by energy cost per day (--years N ranks by TCO)"
    cells = [[c.label, f"${c.price_usd:,.0f}", f"{c.kwh_per_day:.2f}", f"${c.usd_per_day:.2f}",
              f"{c.j_per_token:.2f}" if c.j_per_token else "–",
              f"{c.battery_hours:.1f} h" if c.battery_hours else "–"]
             + ([f"${c.tco_usd:,.0f}"] if years else []) for c in costs[:n]]
    hdr = ["Mac", "price", "kWh/day", "$/day", "J/token", "battery"] + (["TCO"] if years else [])
    return ["", f"Running cost ({busy_hours:g} h/day generating, ${kwh_price:g}/kWh; wall power from full-load "
            f"readings, leans high; sources in docs/model-facts.md), {by}:",
            table(cells, hdr, "lrrrrr" + ("r" if years else ""))]


def user_prices(specs: list[str], path: Path | None) -> dict[str, float]:
    """--price specs and the rows of a --prices CSV -> {Mac id: USD}."""
    from planner.buy import match_price

    if path is not None:
        from planner.bounded_read import MAX_TABLE_BYTES, read_text_capped

        # bounded: --prices /dev/zero, a FIFO or a huge CSV is one line, not a read until memory runs out
        text = read_text_capped(path, MAX_TABLE_BYTES, f"--prices {path}", "price list", InputError, "give a CSV file")
        try:
            rows = list(csv.DictReader(io.StringIO(text, newline="")))
        except csv.Error as e:
            raise InputError(f"--prices {path}: not a CSV file ({e}); give a CSV file") from None
        if len(rows) > MAX_PRICE_ROWS:
            raise InputError(f"--prices {path}: {len(rows):,} rows, over {MAX_PRICE_ROWS:,}; give one row per Mac")
        need = {"product", "chip", "ram_GB", "us_price_usd"}
        if rows and not need <= set(rows[0]):
            raise InputError(f"--prices {path}: needs the columns {', '.join(sorted(need))} (gpu_cores optional)")
        specs = [f"{r['product']} {r['chip']} " + (f"{r['gpu_cores']}-core " if r.get("gpu_cores") else "")
                 + f"{r['ram_GB']}GB" + (f" {r['launch']}" if r.get("launch") else "") + f"={r['us_price_usd']}"
                 for r in rows if r.get("us_price_usd")] + specs
    out: dict[str, float] = {}
    for s in specs:
        ids, usd = match_price(s)
        out.update(dict.fromkeys(ids, usd))
    return out


def _speed_text(x) -> str:
    if x.decode_tok_s_per_user is None:
        return "memory only"
    return (f"{fmt_tok_s(x.decode_tok_s_per_user)} tok/s/user{_likely(x)}, {ttft_text(x.ttft_s, x.cached_prefix_share)}, "
            f"{fmt_seconds(x.time_per_request_s)}/request")


def _likely(x) -> str:
    if x.decode_tok_s_range is None:
        return ""
    lo, hi = x.decode_tok_s_range
    return f" (likely {fmt_tok_s(lo)}–{fmt_tok_s(hi)})"


def _pick(label: str, x) -> str:
    if x is None:
        return f"{label}: –"
    extra = f"; {', '.join(x.flags)}" if x.flags else ""
    return (f"{label}: {x.label} — ${x.price_usd:,.0f} ({x.price_confidence} price)"
            f"\n    {x.runtime} {x.quant} kv {x.kv_type} × {x.slots} slot{'' if x.slots == 1 else 's'}: {_speed_text(x)}; "
            f"{fmt_bytes(x.memory_bytes)} ({x.verdict}); bound by {x.binding}{extra}"
            + (f"\n    {x.sysctl}" if x.sysctl else ""))


def _header(r, wl) -> list[str]:
    return [f"{' + '.join(r.models)} · {wl.summary()}",
            f"Evaluated {r.evaluated:,} configurations (Mac × runtime × quant × KV × slots); quality ≤ "
            f"{r.max_quality_cost}" + (f"; budget ${r.budget_usd:,.0f}" if r.budget_usd else ""),
            f"Speed: {r.speed_source}", ""]


def _verdict_lines(r) -> list[str]:
    from planner.buy import TARGET_LABEL

    within = f" within ${r.budget_usd:,.0f}" if r.budget_usd else ""
    axis = "aggregate tok/s" if r.speed_axis == "decode_tok_s" else "tok/s per user"
    if r.memory_shortfall:
        return [f"No Mac holds it. {r.memory_shortfall}.", "What would change the answer:",
                *(f"  - {c}" for c in r.what_would_change), ""]
    if r.cheapest is not None:
        picks: dict[str, list[str]] = {}
        rows = {}
        for label, x in ((f"Cheapest that meets the targets{within}", r.cheapest),
                         ("Best value (aggregate tok/s per $)", r.best_value),
                         (f"Fastest{within} (highest {axis})", r.fastest_within_budget)):
            if x is not None:
                picks.setdefault(x.mac, []).append(label)
                rows[x.mac] = x
        return [*(_pick(" = ".join(labels), rows[mac]) for mac, labels in picks.items()), ""]
    out = [f"No Mac{within} meets every target ({r.workload.targets.describe()}). Closest:"]
    for g in r.gaps:
        unit = "tok/s" if g.target == "min_tok_s_per_user" else "s"
        state = f"missed by {g.by:.0%}" if g.by > 0 else "met"
        out.append(f"  {g.label}: want {'≥' if unit == 'tok/s' else '≤'} {g.wanted:g} {unit}; the best reaches "
                   f"{g.best:.1f} {unit} ({g.best_mac}) — {state}")
    for x in r.closest[:3]:
        miss = ", ".join(f"{TARGET_LABEL[k]} missed by {v:.0%}" for k, v in x.misses.items())
        out.append(f"  · {x.label}, ${x.price_usd:,.0f} ({x.price_confidence}): {_speed_text(x)} [{miss}]")
    if r.what_would_change:
        out.append("What would change the answer:")
        out += [f"  - {c}" for c in r.what_would_change]
    return [*out, ""]


def _table_lines(r, all_rows: bool) -> list[str]:
    """Meets the targets first, then by price; by default one row per chip × RAM (the cheapest Mac with it)."""
    front = {x.mac for x in r.pareto}
    keep = front | {x.mac for x in (r.cheapest, r.best_value, r.fastest_within_budget, *r.closest) if x} | {
        x.mac for x in r.per_mac if x.price_confidence == "user"}     # always shown: the front, picks, your prices
    rows, seen = [], set()
    for x in r.per_mac:
        key = (x.chip, x.ram_gb)
        if all_rows or x.mac in keep or (key not in seen and len(rows) < TABLE_ROWS):
            seen.add(key)
            rows.append(x)
    more = 0 if all_rows else len({(x.chip, x.ram_gb) for x in r.per_mac}) - len({(x.chip, x.ram_gb) for x in rows})
    title = ("Best configuration of every Mac" if all_rows else "Best configuration per chip × RAM (cheapest Mac "
             "with it)") + "; ◆ = Pareto front (no cheaper Mac is faster):"
    cells = [[("◆" if x.mac in front else ""), f"${x.price_usd:,.0f}", x.price_confidence, x.label, x.runtime,
              x.quant, str(x.slots), fmt_bytes(x.memory_bytes), x.verdict, fmt_tok_s(x.decode_tok_s_per_user),
              "–".join(fmt_tok_s(v) for v in x.decode_tok_s_range) if x.decode_tok_s_range else "–", fmt_seconds(x.ttft_s), "yes" if x.meets_targets else "no", x.binding,
              ", ".join(f for f in x.flags if not f.startswith("price"))] for x in rows]
    out = [title, table(cells, ["", "price", "price is", "Mac", "runtime", "quant", "slots", "memory", "fit",
                                "tok/s/user", "likely", "TTFT", "meets", "binding", "note"], "lrllllrrlrrrlll")]
    if more:
        out.append(f"… {more} more (--all lists every Mac)")
    return out


def _cluster_kw(wl, link: str, budget: float | None, include_discontinued: bool, macos: str) -> dict:
    from planner.workload import gen_point, prompt_point

    return {"link": link, "context": wl.context, "users": wl.users, "prompt": prompt_point(wl.prompt_tokens),
            "gen": gen_point(wl.gen_tokens), "budget_usd": budget, "include_discontinued": include_discontinued,
            "macos": macos, "cached_prefix": wl.cached_prefix_share}


def cluster_options(model: str, wl, link: str, budget: float | None, include_discontinued: bool, macos: str) -> list:
    """k (2-4) linked identical Macs that hold ``model``, cheapest first (planner.cluster.cluster_candidates)."""
    from planner.cluster import cluster_candidates

    return cluster_candidates(model, **_cluster_kw(wl, link, budget, include_discontinued, macos))


def _cluster_lines(cands: list, model: str, wl, link: str, budget: float | None, include_discontinued: bool,
                   macos: str) -> list[str]:
    """k linked identical Macs, and one Mac on the same engine and quant (a fair comparison: pipeline stages run
    one after another, so linking adds memory, not decode speed)."""
    from planner.cluster import cluster_candidates

    kw = _cluster_kw(wl, link, budget, include_discontinued, macos)
    out = ["", f"Clusters of identical Macs over {link} (mlx pipeline; see `plan cluster` for recipes):"]
    if not cands:
        return [*out, "  none holds the model" + (f" within ${budget:,.0f}" if budget else "")]
    rows = [[f"${c.price_usd:,.0f}", c.macs, fmt_tok_s(c.decode_tok_s_per_user), fmt_seconds(c.ttft_s),
             c.binding + ("; needs the wired limit raised" if c.needs_raised_limit else "")] for c in cands[:6]]
    out.append(table(rows, ["price", "Macs", "tok/s/user", "TTFT", "binding"], "rlrrl"))
    one = cluster_candidates(model, counts=(1,), **kw)
    if one and one[0].decode_tok_s_per_user:
        s = one[0]
        out.append(f"  vs one Mac: {s.macs.removeprefix('1x ')} at ${s.price_usd:,.0f}, "
                   f"{fmt_tok_s(s.decode_tok_s_per_user)} tok/s/user (same engine and quant"
                   + ("; only with the wired limit raised)" if s.needs_raised_limit else ")"))
    return out
