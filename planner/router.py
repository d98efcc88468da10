"""Router: two runtimes resident at once (a llama.cpp option and an mlx-lm option), each serving the prompt lengths
it is faster at. Searches every pair of options that fit in memory on their own, keeps the pairs that fit
together under the GPU limit, and ranks them by the workload objective against the best single runtime.

Per prompt length the faster runtime of the pair takes the request (the seed articles' rule: llama.cpp for long
prompts, mlx-lm for long generations, here decided by the speed model). Memory: the two options' totals add up
(two processes), each keeping its runtime margin. Speed comes from planner.search.speed_at, never restated here.
"""

from __future__ import annotations

from . import capacity
from .advice import KV_RANK, TIER_RANK, Found, RouterOption, Search, ServingOption
from .recipes import on_port
from .results import Fit
from .schema import Runtime
from .search import speed_at
from .units import GiB, MiB

PORTS = (8081, 8082)  # two servers on one Mac need two ports

Buckets = list[tuple[int, float]]  # the workload's prompt lengths: (tokens, weight)
Split = list[tuple[ServingOption, float, list[float]]]  # (option, share of requests, its time per bucket)
Stats = tuple[int, int, float]  # (pairs searched, pairs fitting, the best single runtime's score)


def best_pair(ctx: Search, found: Found, rts: list[Runtime]) -> RouterOption | None:
    """The best pair that fits together, or the single runtime and why no pair is better; None without speed."""
    fam = {rt.id: rt for rt in rts}
    opts = [o for o in found.every if o.speed is not None]
    # one server of each engine: GGUF weights on a llama.cpp server, MLX weights on an mlx-lm one
    a_side = [o for o in opts if fam[o.runtime].weight_format == "gguf"]
    b_side = [o for o in opts if fam[o.runtime].weight_format == "mlx"]
    if not opts:
        return None
    buckets = ctx.wl.prompt_tokens._points()
    times = {id(o): _bucket_times(ctx, found, o, buckets) for o in opts}
    single = min(opts, key=lambda o: (_grade(o), _sign(ctx) * _score(ctx, [(o, 1.0, times[id(o)])])))
    single_score = _score(ctx, [(single, 1.0, times[id(single)])])
    best, searched, fitting, smallest = None, 0, 0, None
    for a in a_side:
        for b in b_side:
            searched += 1
            total = a.memory_bytes + b.memory_bytes
            smallest = total if smallest is None else min(smallest, total)
            fit = _fit_together(ctx, a, b, fam)
            if fit.verdict == "no-fit":
                continue
            fitting += 1
            plan = _split(a, b, buckets, times)
            sc = _score(ctx, plan)
            grade = max(_grade(a), _grade(b))
            if best is None or (grade, _sign(ctx) * sc) < (best[5], _sign(ctx) * best[0]):
                best = (sc, a, b, fit, plan, grade)
    stats = (searched, fitting, single_score)
    if best is None or best[5] > _grade(single) or not _better(ctx, best[0], single_score):
        return _single(ctx, single, stats, smallest, best is not None)
    return _pair(ctx, best, stats)


def _bucket_times(ctx: Search, found: Found, o: ServingOption, buckets: Buckets) -> list[float]:
    """Time per request [s] of this option at each prompt length of the workload."""
    rf = found.speed_models[(o.runtime, o.quant, o.kv_type)]
    assert rf is not None  # an option with a speed had a speed model
    out = []
    for tokens, _ in buckets:
        p = max(1, min(tokens, ctx.context - ctx.gen))
        out.append(speed_at(rf, p, ctx.gen, o.slots, ctx.wl.users, ctx.staggered).time_per_request_s)
    return out


def _split(a: ServingOption, b: ServingOption, buckets: Buckets, times: dict[int, list[float]]) -> Split:
    """Each prompt length goes to the faster of the pair: [(option, share of requests, its times)]."""
    ta, tb = times[id(a)], times[id(b)]
    share_a = sum(w for (_, w), x, y in zip(buckets, ta, tb) if x <= y)
    ma = [x if x <= y else 0.0 for x, y in zip(ta, tb)]
    mb = [y if y < x else 0.0 for x, y in zip(ta, tb)]
    return [(a, share_a, ma), (b, 1.0 - share_a, mb)]


def _score(ctx: Search, plan: Split) -> float:
    """latency: mean time per request [s] over the prompt mix; throughput: requests/s the pair sustains, set by
    the runtime that saturates first (each serves its share with its slots in parallel)."""
    buckets = ctx.wl.prompt_tokens._points()
    if ctx.wl.objective != "throughput":
        return sum(w * t for o, share, ts in plan for (_, w), t in zip(buckets, ts) if t)
    rates = []
    for o, share, ts in plan:
        if share <= 0:
            continue
        mean_t = sum(w * t for (_, w), t in zip(buckets, ts) if t) / share
        rates.append(min(o.slots, ctx.wl.users) / mean_t / share)
    return min(rates)


def _grade(o: ServingOption) -> tuple[int, int]:
    """Quality before speed, as in recommend's ranking: the quant's quality tier, then 4-bit KV last."""
    return TIER_RANK[o.quality.tier], KV_RANK.get(o.kv_type, 0)


def _sign(ctx: Search) -> int:
    return -1 if ctx.wl.objective == "throughput" else 1


def _better(ctx: Search, x: float, y: float) -> bool:
    # 1% margin: a router is two servers to run, worth it only when it is measurably better
    return x > y * 1.01 if ctx.wl.objective == "throughput" else x < y * 0.99


def _fit_together(ctx: Search, a: ServingOption, b: ServingOption, fam: dict[str, Runtime]) -> Fit:
    """Both totals plus the second runtime's margin against the GPU limit (the first's margin is in the verdict)."""
    rb = fam[b.runtime]
    total = a.memory_bytes + b.memory_bytes + int(rb.headroom_mib * MiB)
    return capacity.fit(total, 0, ctx.wired, fam[a.runtime])


def _pair(ctx: Search, best: tuple[float, ServingOption, ServingOption, Fit, Split, tuple[int, int]],
          stats: Stats) -> RouterOption:
    sc, a, b, fit, plan, _ = best
    searched, fitting, single_score = stats
    buckets = ctx.wl.prompt_tokens._points()
    split = []
    for o, share, ts in plan:
        lens = [f"{tok:,}" for (tok, _), t in zip(buckets, ts) if t]
        if lens:
            split.append(f"{share:.0%} of requests (prompts of {', '.join(lens)} tokens) → {o.runtime} {o.quant} "
                         f"kv {o.kv_type}, {o.slots} slot(s)")
    long_rt = max(plan, key=lambda p: max((tok for (tok, _), t in zip(buckets, p[2]) if t), default=0))[0]
    short_rt = b if long_rt is a else a
    total = a.memory_bytes + b.memory_bytes
    unit = "s per request" if ctx.wl.objective != "throughput" else "requests/s"
    why = (f"{'; '.join(split)}; both resident need {total / GiB:.1f} GiB of the {ctx.wired.effective_bytes / GiB:.1f} "
           f"GiB GPU limit ({fit.verdict}); {sc:.3g} {unit} against {single_score:.3g} for the best single runtime "
           f"({fitting} of {searched} pairs fit together)")
    return RouterOption(prefill_runtime=long_rt.runtime, decode_runtime=short_rt.runtime,
                        rule=f"route by prompt length: {', '.join(split)}", memory_bytes=total, fits=True,
                        reason=why, recipes=[on_port(a.recipe, PORTS[0], fit.sysctl), on_port(b.recipe, PORTS[1], None)],
                        split=split, pairs_searched=searched, pairs_fitting=fitting, score=sc,
                        single_score=single_score)


def _single(ctx: Search, o: ServingOption, stats: Stats, smallest: int | None, some_fit: bool) -> RouterOption:
    searched, fitting, single_score = stats
    if not searched:
        why = "a router needs a llama.cpp option and an mlx-lm option with speed; run one runtime"
    elif not some_fit:
        why = (f"no pair fits together: the smallest of {searched} pairs needs {(smallest or 0) / GiB:.1f} GiB "
               f"against the {ctx.wired.effective_bytes / GiB:.1f} GiB GPU limit (at most "
               f"{ctx.wired.max_raise_bytes / GiB:.0f} GiB raised); run one runtime")
    else:
        why = (f"{fitting} of {searched} pairs fit together, but none beats one runtime alone; run one runtime")
    why += f": {o.runtime} {o.quant} kv {o.kv_type}, {o.slots} slot(s)"
    return RouterOption(prefill_runtime=o.runtime, decode_runtime=o.runtime, rule="one runtime",
                        memory_bytes=o.memory_bytes, fits=False, reason=why, recipes=[o.recipe],
                        pairs_searched=searched, pairs_fitting=fitting, score=single_score, single_score=single_score)
