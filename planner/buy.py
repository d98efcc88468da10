"""Pre-purchase sizing: which Mac (profiles/macs, launch list prices) meets a workload, cheapest / best value /
fastest within a budget, and the price-vs-speed Pareto front.

The sweep is every Mac × runtime × quant × KV type × slots. Per (model, runtime, quant, KV) memory is precomputed
once per slot count (MemoryModel.total is O(1)); per chip the speed constants come from planner.throughput (the
roofline: geometry bytes/FLOPs per step, fitted efficiencies, peak FLOPS and bandwidth) and are
combined across chips × configs × slots with numpy. Prefill uses throughput's scalar Roofline.prefill_time per
(chip, config, slots) — a few thousand µs-calls. The fit verdict mirrors planner.capacity.fit elementwise.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from . import capacity, profiles
from ._model import Frozen
from .advice import KV_RANK, TIER_RANK, NoFitError, QualityNote, TargetsUnreachableError, quality_of
from .errors import InputError, PlannerError
from .schema import Chip, MacProduct, MlxRuntime
from .search import _constants, base_memory_model, quants_for, speed_available, with_kv
from .units import GiB, MiB
from .workload import WorkloadProfile

SLOTS = [1, 2, 4, 8, 16, 32, 64]
QUALITY_MAX = {"lossless": 0, "small": 1, "noticeable": 2, "large": 3}
_TIER_NUM = {"lossless": 0, "small": 1, "unknown": 2, "noticeable": 2, "large": 3}
VERDICTS = np.array(["fits", "tight", "raise-limit", "no-fit"])


class BudgetError(PlannerError):
    """The budget is below every Mac in the catalog."""


class BuyRow(BaseModel):
    model_config = Frozen
    mac: str
    product: str
    chip: str
    ram_gb: int
    price_usd: float
    price_confidence: str
    form_factor: str
    runtime: str
    quant: str
    kv_type: str
    slots: int
    memory_bytes: int
    verdict: str
    decode_tok_s_per_user: float | None = None
    ttft_s: float | None = None
    time_per_request_s: float | None = None
    decode_tok_s: float | None = Field(None, description="aggregate over users [tok/s]")
    tok_s_per_kusd: float | None = Field(None, description="aggregate tok/s per $1000 of list price")
    meets_targets: bool
    binding: Literal["memory", "bandwidth", "compute"]
    quality: QualityNote
    sysctl: str | None = None
    flags: list[str] = Field(default_factory=list)


class BuyResult(BaseModel):
    model_config = Frozen
    models: list[str]
    workload: WorkloadProfile
    budget_usd: float | None
    include_rumoured: bool
    max_quality_cost: str
    speed_source: str
    cheapest: BuyRow | None
    best_value: BuyRow | None
    fastest_within_budget: BuyRow | None
    pareto: list[BuyRow]
    per_mac: list[BuyRow] = Field(description="Best configuration per Mac that fits in memory, by price")
    evaluated: int = Field(description="Mac × runtime × quant × KV × slots configurations evaluated")
    excluded_macs: dict[str, int] = Field(description="Macs dropped before the sweep, by reason")
    notes: list[str] = Field(default_factory=list)


@dataclasses.dataclass
class _Config:
    runtime: str
    family: str
    quant: object
    kv: str
    mms: list            # one MemoryModel per model
    slots: list[int]
    quality: QualityNote


def _headroom(rt_id: str) -> float:
    return profiles.load_runtime(rt_id).headroom_mib * MiB


def buy(models: list[str], workload: WorkloadProfile, budget_usd: float | None = None,
        include_rumoured: bool = False, runtimes: list[str] | None = None, macos: str = "15",
        max_quality_cost: str = "small") -> BuyResult:
    if not models:
        raise InputError("--model: give at least one model (repeat --model for several resident together)")
    if max_quality_cost not in QUALITY_MAX:
        raise InputError(f"--max-quality-cost {max_quality_cost!r}: choose {', '.join(QUALITY_MAX)}")
    if budget_usd is not None and budget_usd <= 0:
        raise InputError(f"--budget {budget_usd:g}: give a positive price in USD, e.g. --budget 4000")
    profs = [profiles.load_model(m) for m in models]
    mac_os = profiles.load_macos(macos)
    chips = {c.id: c for c in profiles.all_chips()}
    excluded: dict[str, int] = {}
    macs: list[MacProduct] = []
    for m in profiles.all_macs():
        ch = chips.get(m.chip)
        if ch is None:
            excluded["unknown chip"] = excluded.get("unknown chip", 0) + 1
            continue
        if ch.status == "rumoured" and not include_rumoured:
            excluded["rumoured chip"] = excluded.get("rumoured chip", 0) + 1
            continue
        macs.append(m)
    if budget_usd is not None and macs and min(m.price_usd for m in macs) > budget_usd:
        cheapest = min(macs, key=lambda m: m.price_usd)
        raise BudgetError(f"--budget {budget_usd:,.0f}: below every Mac in the catalog; the cheapest is the "
                          f"{cheapest.product} {cheapest.ram_gb} GB at ${cheapest.price_usd:,.0f} ({cheapest.id})")
    notes: list[str] = []
    ctx = workload.context
    max_pos = min(p.config.max_position_embeddings for p in profs)
    if ctx > max_pos:
        notes.append(f"context {ctx:,} capped at {max_pos:,} (model maximum)")
        ctx = max_pos
    prompt = min(workload.prompt_tokens.p90_tokens, ctx - 1)
    gen = max(1, min(math.ceil(workload.gen_tokens.mean), ctx - prompt))
    users = workload.users
    slot_list = sorted({s for s in SLOTS if s <= users} | {users})

    # ---- configurations (chip-independent): memory per slot count
    configs: list[_Config] = []
    qmax = QUALITY_MAX[max_quality_cost]
    for rt_id in runtimes or ["llama.cpp", "mlx-lm"]:
        rt = profiles.load_runtime(rt_id)
        for q in quants_for(max(profs, key=lambda p: p.params_b), rt):
            qn = quality_of(q)
            if _TIER_NUM[qn.tier] > qmax:
                continue
            for kv in [k for k in rt.advised_kv_types if k not in KV_RANK]:  # buy skips 4-bit KV
                mms = [with_kv(base_memory_model(p.id, rt.id, q.id), kv) for p in profs]
                if any(mm is None for mm in mms):
                    continue
                sl = [1] if rt.family == "mlx-lm" and mms[0].kv.kv_type != "bf16" else slot_list
                configs.append(_Config(rt.id, rt.family, q, mms[0].kv.kv_type, mms, sl, qn))
    if not configs:
        raise InputError(f"no quantization within --max-quality-cost {max_quality_cost}; allow 'noticeable' or 'large'")
    nC, nS = len(configs), len(slot_list)
    S = np.array(slot_list)
    mem = np.full((nC, nS), np.inf)
    weights = np.zeros(nC)
    head = np.zeros(nC)
    warn = np.zeros(nC)
    for i, c in enumerate(configs):
        weights[i] = sum(mm.weights.total_bytes for mm in c.mms)
        head[i] = _headroom(c.runtime)
        rt0 = c.mms[0].runtime
        warn[i] = rt0.warn_fraction if isinstance(rt0, MlxRuntime) else 0
        for j, s in enumerate(slot_list):
            if s in c.slots:
                mem[i, j] = sum(mm.total(ctx, s) for mm in c.mms)

    # ---- per Mac: wired limits (capacity.wired_limit), then the verdict of capacity.fit, elementwise
    nM = len(macs)
    limits = {r: capacity.wired_limit(r, mac_os) for r in {m.ram_gb for m in macs}}
    D = np.array([limits[m.ram_gb].effective_bytes for m in macs], dtype=float)[:, None, None]
    R = np.array([limits[m.ram_gb].max_raise_bytes for m in macs], dtype=float)[:, None, None]
    M = mem[None, :, :]
    H = head[None, :, None]
    warned = (warn[None, :, None] > 0) & (weights[None, :, None] > warn[None, :, None] * D)
    verdict = np.where((M <= D - H) & ~warned, 0, np.where(M <= D, 1, np.where(M + H <= R, 2, 3)))
    fits = verdict < 3                                              # [mac, config, slots]
    evaluated = int(nM * sum(len(c.slots) for c in configs))

    # ---- speed per unique chip (vectorised decode, scalar prefill from throughput)
    chip_ids = sorted({m.chip for m in macs})
    chip_index = {cid: k for k, cid in enumerate(chip_ids)}
    shape = (len(chip_ids), nC, nS)
    per_user = np.full(shape, np.nan)
    agg = np.full(shape, np.nan)
    ttft = np.full(shape, np.nan)
    treq = np.full(shape, np.nan)
    dbound = np.zeros(shape, dtype=bool)   # True: decode compute-bound
    pshare = np.zeros(shape)
    have_speed = speed_available()
    src = "memory only (planner/throughput.py not available)"
    if have_speed:
        src = _sweep_speed([chips[c] for c in chip_ids], configs, slot_list, users, prompt, gen,
                           workload.objective == "latency", per_user, agg, ttft, treq, dbound, pshare)
    ci = np.array([chip_index[m.chip] for m in macs])
    PU, AG, TT, TR, DB, PS = (a[ci] for a in (per_user, agg, ttft, treq, dbound, pshare))  # [mac, config, slots]

    # ---- targets
    t = workload.targets
    ok = fits.copy()
    known = ~np.isnan(PU)
    if have_speed:
        ok &= known
        if t.min_tok_s_per_user:
            ok &= t.min_tok_s_per_user <= PU
        if t.max_ttft_s:
            ok &= t.max_ttft_s >= TT
        if t.max_request_s:
            ok &= t.max_request_s >= TR
    # ---- best configuration per Mac: meets targets > quality tier > KV > comfort > objective
    tier = np.array([TIER_RANK[c.quality.tier] for c in configs])[None, :, None]
    kvr = np.array([KV_RANK.get(c.kv, 0) for c in configs])[None, :, None]
    if have_speed:
        perf = -np.nan_to_num(AG, nan=-1.0) if workload.objective == "throughput" else np.nan_to_num(TR, nan=np.inf)
    else:
        perf = np.broadcast_to(-S[None, None, :].astype(float), ok.shape)
    big = 1e18
    # lexicographic key as one float: not-ok, tier, kv, verdict, then perf (perf scaled into [0, 1))
    pf = np.where(np.isfinite(perf), perf, big)
    lo, hi = pf[pf < big].min(initial=0.0), pf[pf < big].max(initial=1.0)
    pnorm = np.where(pf < big, (pf - lo) / (hi - lo + 1e-12), 0.999999)
    key_fit = (~ok) * 1e4 + tier * 1e3 + kvr * 1e2 + np.minimum(verdict, 2) * 10 + pnorm
    key_fit = np.where(fits, key_fit, np.inf)
    flat = key_fit.reshape(nM, -1)
    best = flat.argmin(axis=1)
    rows: list[BuyRow] = []
    for mi, m in enumerate(macs):
        if not np.isfinite(flat[mi, best[mi]]):
            continue
        c_i, s_i = divmod(int(best[mi]), nS)
        rows.append(_row(m, chips[m.chip], configs[c_i], slot_list[s_i], mem[c_i, s_i], int(verdict[mi, c_i, s_i]),
                         bool(ok[mi, c_i, s_i]), PU[mi, c_i, s_i], TT[mi, c_i, s_i], TR[mi, c_i, s_i],
                         AG[mi, c_i, s_i], bool(DB[mi, c_i, s_i]), PS[mi, c_i, s_i], D[mi, 0, 0], workload,
                         have_speed))
    rows.sort(key=lambda r: (r.price_usd, r.ram_gb))
    if not rows:
        need = np.nanmin(np.where(np.isfinite(mem), mem, np.nan))
        top = max(macs, key=lambda m: m.ram_gb)
        raise NoFitError(f"{' + '.join(p.id for p in profs)} for {users} × {ctx:,} tokens fits no Mac: the smallest "
                         f"configuration needs {need / GiB:.0f} GiB; the largest Mac ({top.product} {top.ram_gb} GB) "
                         f"allows {limits[top.ram_gb].max_raise_bytes / GiB:.0f} GiB with a raised limit"
                         + ("" if include_rumoured else "; --include-rumoured adds unreleased chips"))
    meeting = [r for r in rows if r.meets_targets]
    if not meeting:
        best_r = max(rows, key=lambda r: r.decode_tok_s_per_user or 0)
        want = t.describe()
        raise TargetsUnreachableError(
            f"no Mac meets {want} for {' + '.join(p.id for p in profs)} with {users} user(s): the best reaches "
            f"{best_r.decode_tok_s_per_user:.1f} tok/s per user, TTFT {best_r.ttft_s:.1f} s on the {best_r.product} "
            f"{best_r.chip} {best_r.ram_gb} GB (${best_r.price_usd:,.0f}, {best_r.runtime} {best_r.quant})")
    cheapest = min(meeting, key=lambda r: (r.price_usd, r.time_per_request_s or 0))
    best_value = max(meeting, key=lambda r: r.tok_s_per_kusd or 0) if have_speed else None
    within = [r for r in meeting if budget_usd is None or r.price_usd <= budget_usd]
    if workload.objective == "throughput":
        fastest = max(within, key=lambda r: (r.decode_tok_s or 0, -r.price_usd)) if within and have_speed else None
    else:
        fastest = min(within, key=lambda r: (r.time_per_request_s, r.price_usd)) if within and have_speed else None
    if budget_usd is not None and not within:
        notes.append(f"nothing within ${budget_usd:,.0f} meets the targets; the cheapest that does costs "
                     f"${cheapest.price_usd:,.0f}")
    pareto = _pareto(rows) if have_speed else []
    if not include_rumoured:
        notes.append("rumoured chips excluded (--include-rumoured to add them)")
    notes.append("prices are US launch list prices of the catalogued configurations (price_confidence per row); "
                 "RAM upgrades without a catalogued price are not searched")
    if any(r.form_factor == "laptop" for r in rows):
        notes.append("MacBooks throttle under sustained load (fans, power limits): their speeds assume full clocks; "
                     "not modelled — prefer a desktop for long batch jobs")
    return BuyResult(models=[p.id for p in profs], workload=workload, budget_usd=budget_usd,
                     include_rumoured=include_rumoured, max_quality_cost=max_quality_cost, speed_source=src,
                     cheapest=cheapest, best_value=best_value, fastest_within_budget=fastest, pareto=pareto,
                     per_mac=rows, evaluated=evaluated, excluded_macs=excluded, notes=notes)


def _sweep_speed(chips: list[Chip], configs: list[_Config], slot_list: list[int], users: int, prompt: int, gen: int,
                 staggered: bool, per_user, agg, ttft, treq, dbound, pshare) -> str:
    """Fill [chip, config, slots] arrays. Decode: bytes and FLOPs per step from throughput's Roofline (chip-free
    geometry), combined across all chips at once with each chip's η·BW, η·F and per-layer cost as
    throughput.Roofline.step_time does, averaged over depth with its Simpson rule; prefill: throughput's scalar
    Roofline.prefill_time (µs per call)."""
    from . import throughput as tp

    S = np.array(slot_list)
    B = np.minimum(S, users)                                         # sequences in flight
    waves = np.ceil(users / B)
    depths = np.array([prompt, prompt + (gen - 1) / 2, prompt + gen - 1], dtype=float)
    simpson = np.array([1.0, 4.0, 1.0]) / 6
    sources = set()
    all_chips = profiles.all_chips()
    base_rf: dict[tuple[str, str], object] = {}
    geo_cache: dict[tuple[str, str], object] = {}                     # (chip, runtime) -> Roofline (peaks, constants)
    for ci_, c in enumerate(configs):
        mm = c.mms[0]   # speed of the first (largest) model; the others share the Mac's memory
        q, rt = c.quant, mm.runtime
        chunk = rt.prefill_chunk
        gkey = (c.runtime, q.id)
        if gkey not in geo_cache:   # geometry walks every tensor: once per (runtime, quant); KV fields per KV type
            geo_cache[gkey] = tp.geometry(mm, q.kind, q.mode)
        kv = mm.kv
        geo = dataclasses.replace(geo_cache[gkey], kv_full=float(kv.bytes_per_token),
                                  kv_swa=float(kv.swa_bytes_per_token), state_bytes=float(kv.state_bytes_per_seq))
        rfs, ks = [], []
        for k, ch in enumerate(chips):
            key = (ch.id, c.runtime)
            if key not in base_rf:
                try:
                    rc = _constants(ch.id, c.runtime)
                    base_rf[key] = tp.roofline(geo, ch, rc, rt.family, flash_attn=mm.flash_attn, chunk=chunk,
                                               reference_chips=all_chips) if ch.memory_bandwidth_gb_s else None
                    sources.add(rc.source.split(" + ")[0].split(";")[0].removeprefix("fitted: "))
                except PlannerError:
                    base_rf[key] = None
            if base_rf[key] is not None:
                rfs.append(dataclasses.replace(base_rf[key], geo=geo, chunk=chunk, flash_attn=mm.flash_attn))
                ks.append(k)
        if not rfs:
            continue
        # the scalar roofline itself (no restated formulas): [chip, slots, depth]
        parts = np.array([[[r.step_parts(int(b), d) for d in depths] for b in B] for r in rfs])
        t_mem, t_cmp = parts[..., 1], parts[..., 2]
        t_step = parts[..., 0] + np.maximum(t_mem, t_cmp)
        t_dec = gen * (t_step @ simpson) if gen > 1 else t_step[:, :, 0]
        first = t_step[:, :, 0]
        if staggered:
            tt = np.array([r.prefill_time(prompt, 0, 1)[0] + r.step_time(1, prompt) for r in rfs])[:, None]
            tt = np.broadcast_to(tt, first.shape)
        else:
            tt = np.array([[r.prefill_time(prompt, 0, int(b))[0] for b in B] for r in rfs]) + first
        tr = tt + t_dec - first          # throughput.estimate: time_per_request − ttft = t_dec − first step
        pu = gen / t_dec
        extra = (waves - 1) * tr / 2     # queueing when slots < users (search.speed_at): half a request per wave
        ttq, trq = tt + extra, tr + extra
        pu = np.where(waves > 1, pu * B / users, pu)
        valid = np.array([s in c.slots for s in slot_list])
        idx = np.array(ks)
        per_user[idx, ci_] = np.where(valid, pu, np.nan)
        agg[idx, ci_] = np.where(valid, B * gen / t_dec, np.nan)
        ttft[idx, ci_] = np.where(valid, ttq, np.nan)
        treq[idx, ci_] = np.where(valid, trq, np.nan)
        dbound[idx, ci_] = t_cmp[:, :, 0] > t_mem[:, :, 0]
        pshare[idx, ci_] = np.minimum(1.0, ttq / np.maximum(trq, 1e-12))
    return ("planner/throughput.py roofline, calibration " + "; ".join(sorted(sources))
            + " (+ generation/tier/chip refinements)") if sources else "no speed constants"


def _row(m: MacProduct, ch: Chip, c: _Config, slots: int, total: float, v: int, ok: bool, pu, tt, tr, ag,
         compute_decode: bool, pshare: float, limit: float, wl: WorkloadProfile, have_speed: bool) -> BuyRow:
    verdict = str(VERDICTS[v])
    rt = profiles.load_runtime(c.runtime)
    sysctl = capacity.sysctl_for(int(total), rt) if verdict == "raise-limit" else None
    speed = have_speed and not np.isnan(pu)
    # binding constraint: memory when the fit is not comfortable (or < 10 % spare); else what limits speed: the
    # tightest speed target (TTFT -> prefill compute; tok/s -> the decode bound), or the dominant phase
    dec = "compute" if compute_decode else "bandwidth"
    phase = "compute" if pshare >= 0.5 else dec
    t = wl.targets
    slacks = {}
    if speed:
        if t.min_tok_s_per_user:
            slacks[dec] = pu / t.min_tok_s_per_user - 1
        if t.max_ttft_s:
            slacks["compute"] = t.max_ttft_s / tt - 1
        if t.max_request_s:
            slacks[phase] = min(slacks.get(phase, np.inf), t.max_request_s / tr - 1)
    if verdict != "fits" or (limit - total) / limit < 0.10:
        binding = "memory"
    elif slacks:
        binding = min(slacks, key=slacks.get)
    else:
        binding = phase if speed else "memory"
    flags = []
    if m.form_factor == "laptop":
        flags.append("laptop: throttles under sustained load")
    if m.price_confidence != "high":
        flags.append(f"price confidence {m.price_confidence}")
    if ch.status == "rumoured":
        flags.append("rumoured chip")
    if verdict == "raise-limit":
        flags.append("needs the wired limit raised")
    return BuyRow(mac=m.id, product=m.product, chip=ch.label, ram_gb=m.ram_gb, price_usd=m.price_usd,
                  price_confidence=m.price_confidence, form_factor=m.form_factor, runtime=c.runtime, quant=c.quant.id,
                  kv_type=c.kv, slots=slots, memory_bytes=int(total), verdict=verdict,
                  decode_tok_s_per_user=float(pu) if speed else None, ttft_s=float(tt) if speed else None,
                  time_per_request_s=float(tr) if speed else None, decode_tok_s=float(ag) if speed else None,
                  tok_s_per_kusd=float(ag) / m.price_usd * 1000 if speed else None, meets_targets=ok,
                  binding=binding, quality=c.quality, sysctl=sysctl, flags=flags)


def _pareto(rows: list[BuyRow]) -> list[BuyRow]:
    """Macs not dominated on (price ↓, per-user tok/s ↑, TTFT ↓)."""
    pts = [r for r in rows if r.decode_tok_s_per_user is not None]
    out = []
    for r in pts:
        dominated = any(
            o is not r and o.price_usd <= r.price_usd and o.decode_tok_s_per_user >= r.decode_tok_s_per_user
            and o.ttft_s <= r.ttft_s and (o.price_usd < r.price_usd or o.decode_tok_s_per_user > r.decode_tok_s_per_user
                                          or o.ttft_s < r.ttft_s)
            for o in pts)
        if not dominated:
            out.append(r)
    return sorted(out, key=lambda r: r.price_usd)
