"""Pre-purchase sizing: which Mac configuration (profiles/macs: every chip bin × RAM option sold, with its price and
the confidence of that price) meets a workload; the cheapest, best value and fastest within a budget; the
price-vs-speed Pareto front; and, when no Mac meets every target, the closest ones, which target binds and by how
much, and what would change the answer. Never a dead end: an error is for bad input only.

The sweep is every Mac × runtime × quant × KV type × slots. Memory per (config, slots) comes from
planner.memory (MemoryModel.total); the verdict for all Macs at once from capacity.fit_codes (the vectorised
capacity.fit, tested to agree with it); speed per (chip, config, slots) from search.speed_at (the one roofline
adapter and queueing rule), memoised per chip since many Macs share one chip.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import BaseModel, Field

from . import bf16, capacity, fanless, profiles
from ._model import Frozen
from .advice import KV_RANK, TIER_RANK, QualityNote, quality_of
from .cluster.results import ClusterCandidate
from .deployment import pinned_by_names
from .engines import engine_for
from .errors import BudgetError, InputError, PlannerError  # noqa: F401  (BudgetError re-exported)
from .memory import MemoryModel
from .power import RunningCost
from .schema import Chip, MacOS, ModelProfile, QuantFormat, Runtime
from .schema_extra import MacProduct
from .search import (
    SLOT_CHOICES,
    Speed,
    base_memory_model,
    quants_for,
    speed_at,
    speed_available,
    speed_model,
    with_kv,
)
from .units import GiB
from .workload import Targets, WorkloadProfile, gen_point, point_in_context, prompt_point, shrunk_note

if TYPE_CHECKING:  # throughput is imported where a speed is asked for
    from .throughput import Geometry, Roofline

QUALITY_MAX = {"lossless": 0, "small": 1, "noticeable": 2, "large": 3}
_TIER_NUM = {"lossless": 0, "small": 1, "unknown": 2, "noticeable": 2, "large": 3}
TARGET_LABEL = {"min_tok_s_per_user": "decode speed per user", "max_ttft_s": "time to first token",
                "max_request_s": "time per request"}
PRICE_RULE = ("prices: the configuration's US launch price where one was found (confidence high/medium/low); "
              "otherwise 'estimated' = a priced configuration of the same product + the RAM step ($25/GB on "
              "base/Pro chips, $12.50/GB on Max/Ultra, from priced pairs) + the GPU-bin step "
              "(scripts/gen_mac_configs.py); a user price ('user') wins over both")


class BuyRow(BaseModel):
    model_config = Frozen
    mac: str
    product: str
    chip: str = Field(description="Chip profile id (m4-max-40gpu)")
    chip_label: str = Field(description="The chip's name for people (M4 Max 40-core GPU)")
    ram_gb: int
    price_usd: float
    price_confidence: str = Field(description="high | medium | low | estimated | user")
    price_basis: str = ""
    discontinued: bool = False
    form_factor: str
    runtime: str
    quant: str
    kv_type: str
    slots: int
    memory_bytes: int
    verdict: str
    decode_tok_s_per_user: float | None = None
    decode_tok_s_range: tuple[float, float] | None = Field(None, description="80 % likely range of the per-user decode")
    ttft_s: float | None = None
    cached_prefix_share: float = Field(0.0, description="Share of each prompt assumed in the prompt cache (TTFT)")
    time_per_request_s: float | None = None
    decode_tok_s: float | None = Field(None, description="aggregate over users [tok/s]")
    tok_s_per_kusd: float | None = Field(None, description="aggregate tok/s per $1000 of price")
    meets_targets: bool
    within_budget: bool = True
    misses: dict[str, float] = Field(default_factory=dict,
                                     description="target -> how far it is missed (0.25 = 25 % short of it)")
    binding: Literal["memory", "bandwidth", "compute"]
    quality: QualityNote
    sysctl: str | None = None
    flags: list[str] = Field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.product} {self.chip_label} {self.ram_gb} GB"

    @property
    def shortfall(self) -> float:
        return max(self.misses.values(), default=0.0)


class TargetGap(BaseModel):
    """How close the best Mac (within the budget) comes to one target."""

    model_config = Frozen
    target: str
    label: str
    wanted: float
    best: float = Field(description="best value any Mac reaches (tok/s or s)")
    best_mac: str
    by: float = Field(description="relative shortfall of the best (0.2 = 20 % short); 0 when it is met")


class BuyResult(BaseModel):
    model_config = Frozen
    models: list[str]
    workload: WorkloadProfile
    budget_usd: float | None
    include_rumoured: bool
    include_discontinued: bool = False
    max_quality_cost: str
    speed_source: str
    speed_axis: Literal["decode_tok_s_per_user", "decode_tok_s"] = Field(
        "decode_tok_s_per_user", description="what 'fastest', the Pareto front and the chart's y axis rank by")
    cheapest: BuyRow | None
    best_value: BuyRow | None
    fastest_within_budget: BuyRow | None
    pareto: list[BuyRow]
    per_mac: list[BuyRow] = Field(description="Best configuration per Mac that fits in memory: meets the targets "
                                              "first, then by price")
    closest: list[BuyRow] = Field(default_factory=list, description="When no Mac meets every target: the nearest")
    gaps: list[TargetGap] = Field(default_factory=list, description="Per target: the best any Mac reaches")
    what_would_change: list[str] = Field(default_factory=list)
    memory_shortfall: str | None = Field(None, description="When no Mac holds the model: what it needs vs the "
                                                           "largest Mac")
    evaluated: int = Field(description="Mac × runtime × quant × KV × slots configurations evaluated")
    excluded_macs: dict[str, int] = Field(description="Macs dropped before the sweep, by reason")
    notes: list[str] = Field(default_factory=list)
    running_costs: list[RunningCost] = Field(default_factory=list, description="Energy per day and total cost of "
                                             "ownership per Mac (electricity price, busy hours and years of the question)")
    clusters: list[ClusterCandidate] = Field(default_factory=list, description="With clusters asked for: 2-4 "
                                             "identical linked Macs that hold the first model together (mlx "
                                             "pipeline over the link), cheapest first")

    def speed(self, row: BuyRow) -> float | None:
        v: float | None = getattr(row, self.speed_axis)
        return v


@dataclasses.dataclass(frozen=True)
class _Point:
    """The workload point the sweep evaluates: p90 prompt (targets), mean output, users, context per sequence."""

    prompt: int
    gen: int
    users: int
    context: int
    slots: tuple[int, ...]
    staggered: bool
    cached_share: float = 0.0   # the cached-prefix input: the share of each prompt in the prompt cache (stated with TTFT)


@dataclasses.dataclass
class _Config:
    rt: Runtime
    quant: QuantFormat
    kv: str
    mms: list[MemoryModel]  # one MemoryModel per model; speed from the first (largest)
    slots: tuple[int, ...]
    quality: QualityNote
    cached: int          # prompt tokens the runtime's prefix cache saves
    geo: Geometry | Literal[False] | None = None  # throughput.geometry, built on first use (False: none)


def buy(models: list[str], workload: WorkloadProfile, budget_usd: float | None = None,
        include_rumoured: bool = False, runtimes: list[str] | None = None, macos: str = profiles.DEFAULT_MACOS,
        max_quality_cost: str = "small", include_discontinued: bool = False,
        prices: dict[str, float] | None = None) -> BuyResult:
    """``prices``: user prices by Mac id (see :func:`match_price`); they win over the catalog's, and a priced
    discontinued Mac is included."""
    _check_args(models, max_quality_cost, budget_usd)
    profs = [profiles.load_model(m) for m in models]
    macs, excluded = _catalog(include_rumoured, include_discontinued, prices or {})
    _check_budget(macs, budget_usd)
    pt, notes = _point(workload, profs)
    runtimes, pinned_quant, pin_notes = pinned_by_names(models, runtimes)  # mlx-community/...: mlx-lm, as plan
    notes += pin_notes
    configs = _configs(profs, workload, pt, runtimes, max_quality_cost, pinned_quant)
    mem = _memory(configs, pt)
    mac_os = profiles.load_macos(macos)
    codes = _verdicts(macs, configs, mem, mac_os)
    speeds = _SpeedTable(configs, pt)
    rows = []
    for mi, m in enumerate(macs):
        limit = capacity.wired_limit(m.ram_gb, mac_os).effective_bytes
        row = _best_for_mac(m, codes[mi], configs, mem, pt, speeds, workload, budget_usd, limit)
        if row is not None:
            rows.append(row)
    rows.sort(key=lambda r: (not r.meets_targets, r.price_usd, r.ram_gb))
    evaluated = len(macs) * sum(len(c.slots) for c in configs)
    r = _result(profs, workload, rows, budget_usd, include_rumoured, include_discontinued, max_quality_cost,
                speeds.source(), evaluated, excluded, notes, pt)
    if not rows:  # not even one Mac holds it: say what it needs and what would change that
        why, change = _no_fit(profs, pt, mem, macs, macos, include_rumoured)
        return r.model_copy(update={"memory_shortfall": why, "what_would_change": change})
    return r


# --------------------------------------------------------------------------- inputs
def _check_args(models: list[str], max_quality_cost: str, budget_usd: float | None) -> None:
    if not models:
        raise InputError("[[model]]: give at least one model (repeat [[model]] for several resident together)")
    if max_quality_cost not in QUALITY_MAX:
        raise InputError(f"[[max_quality_cost]] {max_quality_cost!r}: choose {', '.join(QUALITY_MAX)}")
    if budget_usd is not None and budget_usd <= 0:
        raise InputError(f"[[budget]] {budget_usd:g}: give a positive price in USD, e.g. [[budget]] 4000")


def _catalog(include_rumoured: bool, include_discontinued: bool,
             prices: dict[str, float]) -> tuple[list[MacProduct], dict[str, int]]:
    """The Macs to sweep, user prices applied; the others counted by reason."""
    chips = {c.id: c for c in profiles.all_chips()}
    excluded: dict[str, int] = {}
    macs = []
    for m in profiles.all_macs():
        ch = chips.get(m.chip)
        reason = ("unknown chip" if ch is None else
                  "rumoured chip" if ch.status == "rumoured" and not include_rumoured else
                  "discontinued" if m.discontinued and not include_discontinued and m.id not in prices else None)
        if reason:
            excluded[reason] = excluded.get(reason, 0) + 1
            continue
        if m.id in prices:
            m = m.model_copy(update={"price_usd": prices[m.id], "price_confidence": "user",
                                     "price_basis": "your price"})
        macs.append(m)
    return macs, excluded


def _check_budget(macs: list[MacProduct], budget_usd: float | None) -> None:
    if budget_usd is not None and macs and min(m.price_usd for m in macs) > budget_usd:
        c = min(macs, key=lambda m: m.price_usd)
        raise BudgetError(f"[[budget]] {budget_usd:,.0f}: below every Mac in the catalog; the cheapest is the "
                          f"{c.product} {c.ram_gb} GB at ${c.price_usd:,.0f} ({c.id}); raise [[budget]] or give "
                          "your own price with [[price]]",
                          fields={"budget_usd": budget_usd, "cheapest": {"mac": c.id, "product": c.product,
                                                                         "ram_gb": c.ram_gb, "price_usd": c.price_usd}})


def _point(workload: WorkloadProfile, profs: list[ModelProfile]) -> tuple[_Point, list[str]]:
    notes = []
    # the model (or draft) with the shortest maximum binds; capped as every command caps (capacity.cap_context)
    shortest = min(profs, key=lambda p: p.config.max_position_embeddings)
    ctx, capped = capacity.cap_context(workload.context, shortest)
    notes += [n for n in (capped, shrunk_note(workload)) if n]
    if workload.context_cap is not None:  # an asked context shorter than the longest request, said as recommend
        _, short = capacity.hold_request(workload.context_cap, workload.prompt_tokens.max_tokens,
                                         workload.gen_tokens.max_tokens, shortest.config.max_position_embeddings)
        notes += [short] if short else []
    prompt, gen = point_in_context(prompt_point(workload.prompt_tokens), gen_point(workload.gen_tokens), ctx)
    users = workload.users
    slots = tuple(sorted({s for s in SLOT_CHOICES if s <= users} | {users}))
    return _Point(prompt, gen, users, ctx, slots, workload.objective == "latency", workload.cached_prefix_share), notes


def cluster_link(clusters: bool, link: str | None) -> str | None:
    """The interconnect of the clusters set against one Mac: ``link`` (default tb5) when clusters are asked, else
    None; a link without clusters is refused (it would be ignored), as draft settings without a draft."""
    if link is not None and not clusters:
        raise InputError(f"[[link]] {link[:40]} needs [[clusters]] (the link joins the Macs of a cluster): add "
                         "[[clusters]], or drop [[link]]")
    return (link or "tb5") if clusters else None


def _configs(profs: list[ModelProfile], workload: WorkloadProfile, pt: _Point, runtimes: list[str] | None,
             max_quality_cost: str, quant: str | None = None) -> list[_Config]:
    """Runtime × quant × KV choices (chip-independent), within the quality floor; buy skips 4-bit KV. ``quant``:
    the one preset a model name pins."""
    out = []
    for rt_id in runtimes or ["llama.cpp", "mlx-lm"]:
        rt = profiles.load_runtime(rt_id)
        biggest = max(profs, key=lambda p: p.params_b)
        for q in quants_for(biggest, rt, [quant] if quant else None):
            qn = quality_of(q, biggest)
            if quant is None and _TIER_NUM[qn.tier] > QUALITY_MAX[max_quality_cost]:  # a named preset is asked
                continue
            for kv in (k for k in rt.advised_kv_types if k not in KV_RANK):
                maybe = [with_kv(base_memory_model(p.id, rt.id, q.id), kv) for p in profs]
                mms = [mm for mm in maybe if mm is not None]
                if len(mms) < len(maybe):  # a profile refuses this KV type
                    continue
                # mlx_lm.server --kv-bits disables batching: one slot
                sl = (1,) if mms[0].engine.max_slots(mms[0].kv.kv_type) == 1 else pt.slots
                out.append(_Config(rt, q, mms[0].kv.kv_type, mms, sl, qn, workload.cached_tokens(pt.prompt, rt)))
    if not out:
        raise InputError(f"[[max_quality_cost]] {max_quality_cost}: no quantization that good for this model; "
                         "allow 'noticeable' or 'large'")
    return out


# --------------------------------------------------------------------------- memory and the fit verdict
def _memory(configs: list[_Config], pt: _Point) -> np.ndarray:
    """Bytes per [config, slots]; inf where the config does not offer that slot count."""
    mem = np.full((len(configs), len(pt.slots)), np.inf)
    for i, c in enumerate(configs):
        for j, s in enumerate(pt.slots):
            if s in c.slots:
                mem[i, j] = sum(mm.total(pt.context, s) for mm in c.mms)
    return mem


def _verdicts(macs: list[MacProduct], configs: list[_Config], mem: np.ndarray, mac_os: MacOS) -> np.ndarray:
    """capacity.fit's verdict code for every [mac, config, slots] (capacity.fit_codes)."""
    limits = {r: capacity.wired_limit(r, mac_os) for r in {m.ram_gb for m in macs}}
    eff = np.array([limits[m.ram_gb].effective_bytes for m in macs], dtype=float)[:, None, None]
    top = np.array([limits[m.ram_gb].max_raise_bytes for m in macs], dtype=float)[:, None, None]
    weights = np.array([sum(mm.weights.total_bytes for mm in c.mms) for c in configs], dtype=float)[None, :, None]
    head = np.array([c.rt.headroom_mib for c in configs])[None, :, None]
    warn = np.array([capacity.warn_fraction(c.rt) or 0.0 for c in configs])[None, :, None]
    return capacity.fit_codes(mem[None, :, :], weights, eff, top, head, warn)


# --------------------------------------------------------------------------- speed
class _SpeedTable:
    """search.speed_at per (chip, config, slots), memoised; the geometry per config is built once."""

    def __init__(self, configs: list[_Config], pt: _Point):
        self.configs, self.pt = configs, pt
        self.available = speed_available()
        self._rf: dict[tuple[str, int], Roofline | None] = {}
        self._sp: dict[tuple[str, int, int], Speed | None] = {}
        self._sources: set[str] = set()

    def get(self, chip: Chip, ci: int, slots: int) -> Speed | None:
        key = (chip.id, ci, slots)
        if key not in self._sp:
            rf = self._roofline(chip, ci)
            p = self.pt
            self._sp[key] = (None if rf is None else
                             speed_at(rf, p.prompt, p.gen, slots, p.users, p.staggered, self.configs[ci].cached,
                                      p.cached_share))
        return self._sp[key]

    def _roofline(self, chip: Chip, ci: int) -> Roofline | None:
        if not self.available:
            return None
        if (chip.id, ci) not in self._rf:
            c = self.configs[ci]
            if c.geo is None:
                from . import throughput as tp
                try:
                    c.geo = tp.geometry(c.mms[0], c.quant.kind, c.quant.mode)
                except PlannerError:
                    c.geo = False
            rf = speed_model(c.mms[0], chip, c.quant, geo=c.geo) if c.geo else None
            if rf is not None:
                self._sources.add(rf.calibration.split(" + ")[0].split(";")[0].removeprefix("fitted: "))
            self._rf[(chip.id, ci)] = rf
        return self._rf[(chip.id, ci)]

    def source(self) -> str:
        if not self.available:
            return "memory only (planner/throughput.py not available)"
        if not self._sources:  # nothing held the model, or its architecture has no speed model
            return "not computed for any configuration"
        return ("planner/throughput.py roofline, calibration " + "; ".join(sorted(self._sources))
                + " (+ generation/tier/chip refinements)")


def misses(sp: Speed | None, t: Targets) -> dict[str, float]:
    """Targets missed at one operating point -> relative shortfall (0.25: a quarter short of the target)."""
    if sp is None:
        return {}
    out = {}
    if t.min_tok_s_per_user and sp.decode_tok_s_per_user < t.min_tok_s_per_user:
        out["min_tok_s_per_user"] = 1 - sp.decode_tok_s_per_user / t.min_tok_s_per_user
    if t.max_ttft_s and sp.ttft_s > t.max_ttft_s:
        out["max_ttft_s"] = sp.ttft_s / t.max_ttft_s - 1
    if t.max_request_s and sp.time_per_request_s > t.max_request_s:
        out["max_request_s"] = sp.time_per_request_s / t.max_request_s - 1
    return out


# --------------------------------------------------------------------------- the best configuration per Mac
def rank_key(missed: dict[str, float], c: _Config, code: int, sp: Speed | None, objective: str, slots: int) -> tuple[float, ...]:
    """Lexicographic: meets the targets, then the fewest targets missed and the smallest miss (the closest), quality
    tier, KV quality, comfort of the fit (fits < tight < raise-limit), then the objective (aggregate tok/s for
    throughput, time per request else)."""
    if sp is None:
        perf = -float(slots)
    else:
        perf = -sp.decode_tok_s if objective == "throughput" else sp.time_per_request_s
    return (len(missed), round(max(missed.values(), default=0.0), 4), TIER_RANK[c.quality.tier],
            KV_RANK.get(c.kv, 0), min(code, 2), perf)


def _best_for_mac(m: MacProduct, codes: np.ndarray, configs: list[_Config], mem: np.ndarray, pt: _Point,
                  speeds: _SpeedTable, wl: WorkloadProfile, budget: float | None, limit: int) -> BuyRow | None:
    chip = profiles.resolve_chip(m.chip)
    best = None
    for ci, c in enumerate(configs):
        for si, s in enumerate(pt.slots):
            code = int(codes[ci, si])
            if s not in c.slots or code == 3:
                continue
            sp = speeds.get(chip, ci, s)
            missed = misses(sp, wl.targets)
            key = rank_key(missed, c, code, sp, wl.objective, s)
            if best is None or key < best[0]:
                best = (key, ci, si, sp, missed)
    if best is None:
        return None
    _, ci, si, sp, missed = best
    return _row(m, chip, configs[ci], pt.slots[si], float(mem[ci, si]), int(codes[ci, si]), sp, missed, limit, wl,
                budget)


def _binding(verdict: str, spare: float, sp: Speed | None, missed: dict[str, float]) -> str:
    """Memory when the fit is not comfortable (or < 10 % spare); else what limits the tightest target: TTFT ->
    prefill compute; tok/s -> the decode bound; else the dominant phase."""
    if verdict != "fits" or spare < 0.10 or sp is None:
        return "memory"
    phase = "compute" if sp.prefill_share >= 0.5 else sp.decode_bound
    if not missed:
        return phase
    worst = max(missed, key=lambda k: missed[k])
    return {"min_tok_s_per_user": sp.decode_bound, "max_ttft_s": "compute"}.get(worst, phase)


def _bf16_flag(ch: Chip, c: _Config) -> list[str]:
    """An MLX configuration of a bfloat16 model on a GPU that emulates bfloat16 (planner/bf16.py)."""
    table = profiles.bf16_table()
    torch_dtype = c.mms[0].model.config.torch_dtype
    return [bf16.flag(table)] if bf16.applies(table, ch.generation, torch_dtype, engine_for(c.rt).build_dtype_compute) else []


def _row(m: MacProduct, ch: Chip, c: _Config, slots: int, total: float, code: int, sp: Speed | None,
         missed: dict[str, float], limit: float, wl: WorkloadProfile, budget: float | None) -> BuyRow:
    verdict = capacity.VERDICTS[code]
    flags = []
    quiet = fanless.fanless(profiles.fanless_table(), [m.product])
    if quiet is not None:
        lo, hi = quiet.slowdown
        flags.append(f"no fan: {100 * lo:.0f}–{100 * hi:.0f} % slower under sustained load (measured)")
    elif m.form_factor == "laptop":
        flags.append("laptop: throttles under sustained load")
    flags += _bf16_flag(ch, c)
    if m.price_confidence not in ("high", "user"):
        flags.append(f"price {m.price_confidence}")
    if m.discontinued:
        flags.append("discontinued: refurbished / used")
    if ch.status == "rumoured":
        flags.append("rumoured chip")
    if verdict == "raise-limit":
        flags.append("needs the wired limit raised")
    if budget is not None and m.price_usd > budget:
        flags.append("over budget")
    return BuyRow(mac=m.id, product=m.product, chip=ch.id, chip_label=ch.label, ram_gb=m.ram_gb, price_usd=m.price_usd,
                  price_confidence=m.price_confidence, price_basis=m.price_basis, discontinued=m.discontinued,
                  form_factor=m.form_factor, runtime=c.rt.id, quant=c.quant.id, kv_type=c.kv, slots=slots,
                  memory_bytes=int(total), verdict=verdict,
                  decode_tok_s_per_user=sp.decode_tok_s_per_user if sp else None,
                  decode_tok_s_range=sp.decode_tok_s_range if sp else None, ttft_s=sp.ttft_s if sp else None,
                  cached_prefix_share=wl.cached_prefix_share, time_per_request_s=sp.time_per_request_s if sp else None,
                  decode_tok_s=sp.decode_tok_s if sp else None,
                  tok_s_per_kusd=sp.decode_tok_s / m.price_usd * 1000 if sp else None,
                  meets_targets=not missed, within_budget=budget is None or m.price_usd <= budget, misses=missed,
                  binding=_binding(verdict, (limit - total) / limit, sp, missed), quality=c.quality,
                  sysctl=capacity.sysctl_for(int(total), c.rt) if verdict == "raise-limit" else None, flags=flags)


def _no_fit(profs: list[ModelProfile], pt: _Point, mem: np.ndarray, macs: list[MacProduct], macos: str,
            include_rumoured: bool) -> tuple[str, list[str]]:
    """When no Mac holds the model: what it needs against the largest Mac, and what would change that."""
    need = float(np.min(mem))
    top = max(macs, key=lambda m: m.ram_gb)
    allow = capacity.wired_limit(top.ram_gb, profiles.load_macos(macos)).max_raise_bytes
    why = (f"{' + '.join(p.id for p in profs)} for {pt.users} × {pt.context:,} tokens fits no Mac: the smallest "
           f"configuration needs {need / GiB:.0f} GiB; the largest Mac ({top.product} {top.ram_gb} GB) allows "
           f"{allow / GiB:.0f} GiB with a raised limit")
    change = ["a cluster of linked Macs that holds it together (`plan cluster`, `plan buy [[clusters]]`)",
              "a smaller quant ([[max_quality_cost]] large)", "a shorter [[context]] or fewer [[users]]"]
    if not include_rumoured:
        change.append("[[include_rumoured]] (unreleased chips)")
    return why, change


# --------------------------------------------------------------------------- the answer
def _result(profs: list[ModelProfile], wl: WorkloadProfile, rows: list[BuyRow], budget: float | None, include_rumoured: bool,
            include_discontinued: bool, max_quality_cost: str, src: str, evaluated: int,
            excluded: dict[str, int], notes: list[str], pt: _Point) -> BuyResult:
    axis = "decode_tok_s" if wl.objective == "throughput" else "decode_tok_s_per_user"
    have_speed = any(r.decode_tok_s_per_user is not None for r in rows)
    within = [r for r in rows if r.within_budget]
    meeting = [r for r in within if r.meets_targets]
    cheapest = min(meeting, key=lambda r: (r.price_usd, -(getattr(r, axis) or 0)), default=None)
    best_value = max(meeting, key=lambda r: r.tok_s_per_kusd or 0, default=None) if have_speed else None
    fastest = max(meeting, key=lambda r: (getattr(r, axis) or 0, -r.price_usd), default=None) if have_speed else None
    gaps = target_gaps(within, wl.targets)
    closest = [] if meeting else sorted(within, key=lambda r: (len(r.misses), r.shortfall, r.price_usd))[:5]
    change = what_would_change(rows, meeting, gaps, wl, pt, budget, max_quality_cost)
    notes = notes + _notes(rows, budget, meeting, include_rumoured, include_discontinued, excluded)
    return BuyResult(models=[p.id for p in profs], workload=wl, budget_usd=budget, include_rumoured=include_rumoured,
                     include_discontinued=include_discontinued, max_quality_cost=max_quality_cost, speed_source=src,
                     speed_axis=axis, cheapest=cheapest, best_value=best_value, fastest_within_budget=fastest,
                     pareto=pareto(within, axis) if have_speed else [], per_mac=rows, closest=closest, gaps=gaps,
                     what_would_change=change, evaluated=evaluated, excluded_macs=excluded, notes=notes)


def target_gaps(rows: list[BuyRow], t: Targets) -> list[TargetGap]:
    """Per set target, the best value any of ``rows`` reaches and how far that is from the target."""
    out = []
    for key, attr, higher in (("min_tok_s_per_user", "decode_tok_s_per_user", True), ("max_ttft_s", "ttft_s", False),
                              ("max_request_s", "time_per_request_s", False)):
        want = getattr(t, key)
        have = [r for r in rows if getattr(r, attr) is not None]
        if not want or not have:
            continue
        best = (max if higher else min)(have, key=lambda r: getattr(r, attr))
        v = getattr(best, attr)
        by = max(0.0, 1 - v / want) if higher else max(0.0, v / want - 1)
        out.append(TargetGap(target=key, label=TARGET_LABEL[key], wanted=want, best=v, best_mac=best.label, by=by))
    return out


def what_would_change(rows: list[BuyRow], meeting: list[BuyRow], gaps: list[TargetGap], wl: WorkloadProfile,
                      pt: _Point, budget: float | None, max_quality_cost: str) -> list[str]:
    """Concrete changes that would give an answer meeting every target."""
    if meeting:
        return []
    out = []
    above = [r for r in rows if r.meets_targets and not r.within_budget]
    if above:
        c = min(above, key=lambda r: r.price_usd)
        out.append(f"a budget of ${c.price_usd:,.0f}: the {c.label} meets every target")
    if rows and not any(r.within_budget for r in rows):
        c = min(rows, key=lambda r: r.price_usd)
        out.append(f"a budget of ${c.price_usd:,.0f}: the {c.label} is the cheapest Mac that holds the model")
    for g in (g for g in gaps if g.by > 0):
        if g.target == "max_ttft_s":
            out.append(f"a time-to-first-token target of {g.best:.1f} s or more (the best Mac reaches that), or a "
                       f"shorter prompt than {pt.prompt:,} tokens (prefill time grows with it)")
        elif g.target == "min_tok_s_per_user":
            out.append(f"a speed target of {g.best:.1f} tok/s or less (the best Mac reaches that)")
            if max_quality_cost in ("lossless", "small"):
                out.append("a smaller quant ([[max_quality_cost]] noticeable): fewer bytes read per token")
            if pt.users > 1:
                out.append(f"fewer users than {pt.users}: each gets a share of the decode")
            out.append("a cluster of linked Macs ([[clusters]], `plan cluster`)")
        else:
            out.append(f"a time-per-request target of {g.best:.0f} s or more, or shorter answers")
    near = [r for r in rows if r.within_budget and r.misses]
    if gaps and all(g.by == 0 for g in gaps) and near:   # each target is met by some Mac, none meets all at once
        c = min(near, key=lambda r: (len(r.misses), r.shortfall, r.price_usd))
        out += [f"a {TARGET_LABEL[k]} target {v:.0%} looser: the {c.label} then meets every target"
                for k, v in c.misses.items()]
    return out


def _notes(rows: list[BuyRow], budget: float | None, meeting: list[BuyRow], include_rumoured: bool,
           include_discontinued: bool, excluded: dict[str, int]) -> list[str]:
    out = []
    anywhere = [r for r in rows if r.meets_targets]
    if budget is not None and not meeting and anywhere:
        c = min(anywhere, key=lambda r: r.price_usd)
        out.append(f"nothing within ${budget:,.0f} meets the targets; the cheapest that does is the {c.label} "
                   f"at ${c.price_usd:,.0f}")
    if not include_rumoured:
        out.append("rumoured chips excluded ([[include_rumoured]] to add them)")
    if excluded.get("discontinued") and not include_discontinued:
        out.append(f"{excluded['discontinued']} discontinued configurations left out ([[include_discontinued]], or "
                   "give a refurbished / used price with [[price]])")
    out.append(PRICE_RULE)
    if any(r.form_factor == "laptop" for r in rows):
        lo, hi = fanless.slowdown_range(profiles.fanless_table())
        out.append("MacBooks throttle under sustained load (fans, power limits): their speeds assume full clocks; "
                   f"fanless MacBook Airs measured {100 * lo:.0f}–{100 * hi:.0f} % slower after minutes of load, "
                   "other laptops are not modelled — prefer a desktop for long batch jobs")
    return out


def pareto(rows: list[BuyRow], axis: str = "decode_tok_s_per_user") -> list[BuyRow]:
    """Macs no other beats on both price (lower) and speed on the chart's axis (higher), cheapest first: the
    front rises with price."""
    pts = sorted((r for r in rows if getattr(r, axis) is not None), key=lambda r: (r.price_usd, -getattr(r, axis)))
    out: list[BuyRow] = []
    for r in pts:
        if not out or getattr(r, axis) > getattr(out[-1], axis):
            out.append(r)
    return out


# --------------------------------------------------------------------------- user prices
MAX_PRICE_USD = 10_000_000.0   # cli.bounds.MAX_PRICE_USD: no Mac configuration costs more


def match_price(spec: str, macs: list[MacProduct] | None = None) -> tuple[list[str], float]:
    """'Mac Studio M4 Max 128GB=3499' -> (the Mac ids it names, price). Product and chip names as in the catalog;
    add the GPU cores ('M3 Ultra 80-core') or the launch ('2023-06') when several configurations match."""
    if "=" not in spec:
        raise InputError(f"[[price]] {spec!r}: write 'PRODUCT CHIP RAMGB=USD', e.g. 'Mac Studio M4 Max 128GB=3499'")
    if len(spec) > 200:
        raise InputError(f"[[price]] {spec[:40]!r}...: {len(spec):,} characters; write 'PRODUCT CHIP RAMGB=USD', e.g. "
                         "'Mac Studio M4 Max 128GB=3499'")
    name, _, usd = spec.rpartition("=")
    try:
        price = float(usd.replace(",", "").replace("$", "").strip())
    except ValueError:
        raise InputError(f"[[price]] {spec!r}: {usd.strip()!r} is not a price in USD (e.g. 3499)") from None
    if not 0 < price <= MAX_PRICE_USD:  # also nan and inf (printed as "$nan")
        raise InputError(f"[[price]] {spec!r}: give a price above 0 and at most ${MAX_PRICE_USD:,.0f}")
    text = " ".join(name.split()).lower()
    ram = re.search(r"(?<!\d)(\d{1,5})\s*gb\b", text)
    cores = re.search(r"(?<!\d)(\d{1,4})[- ]core", text)
    launch = re.search(r"\b(20\d\d-\d\d)\b", text)
    if not ram:
        raise InputError(f"[[price]] {spec!r}: name the RAM size, e.g. 128GB")
    chips = {c.id: c for c in profiles.all_chips()}
    hits = [m for m in (macs if macs is not None else profiles.all_macs())
            if m.ram_gb == int(ram.group(1)) and text.startswith(m.product.lower())
            and f" {chips[m.chip].name.lower()} " in f" {text} " and (not cores or chips[m.chip].gpu_cores == int(cores.group(1)))
            and (not launch or m.launch == launch.group(1))]
    if not hits:
        raise InputError(f"[[price]] {spec!r}: no such configuration in the catalog (product, chip and RAM as in "
                         "`plan buy [[all]]`, e.g. 'Mac Studio M4 Max 128GB=3499')")
    ids = sorted({(m.launch, chips[m.chip].gpu_cores) for m in hits})
    if len(ids) > 1:
        opts = ", ".join(f"{g}-core {lau}" for lau, g in ids)
        raise InputError(f"[[price]] {spec!r}: matches several configurations ({opts}); add the GPU cores or launch")
    return [m.id for m in hits], price
