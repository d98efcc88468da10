"""Advice for a workload: search runtime × quant × KV type × slots × context cap on one Mac, rank what meets the
targets, explain why (prefill- or decode-bound, memory headroom, quality cost) and print launch recipes.

Memory comes from planner.memory (MemoryModel.total, O(1)) and planner.capacity (wired limit, fit verdict);
speed from planner.throughput's roofline through planner.search (speed_model / speed_at), so this module never
restates a speed formula; launch commands come from planner.recipes. When throughput is absent the answers are memory-only.
"""

import math
from typing import TYPE_CHECKING, Literal, NamedTuple

from pydantic import BaseModel

from . import capacity, profiles
from ._model import Frozen, assemble
from .deployment import check_ram, resolve_quants
from .errors import InputError, NoFitError, PlannerError, TargetsUnreachableError  # noqa: F401  (re-exported)
from .format import fmt_bytes, over_text
from .recipes import Recipe, recipe
from .results import Fit, WiredLimit
from .schema import Chip, ModelProfile, QuantFormat, Runtime
from .search import Speed, candidates, smallest_need, speed_at, speed_available, speed_model
from .workload import WorkloadProfile, gen_point, point_in_context, prompt_point, shrunk_note

if TYPE_CHECKING:
    from .memory import MemoryModel
    from .throughput import Roofline

# a ranking key: numbers (bools, ints, floats) compared in order, smallest first
RankKey = tuple[float, ...]

VERDICT_RANK = {"fits": 0, "tight": 1, "raise-limit": 2, "no-fit": 3}
# Ranking heuristic (no measurement cited yet): 4-bit KV is assumed to cost more accuracy than 8-bit KV, so it
# ranks after 8/16-bit KV of the same weights
KV_RANK = {"q4_0": 1, "kv4": 1}


# --------------------------------------------------------------------------- quality table
# Measured on Llama-3-8B vs its F16 logits, wikitext-2 (llama.cpp tools/perplexity/README.md, "LLaMA 3 8b
# Scoreboard", CUDA, revision f364eb6f): ΔPPL/PPL(6.2316) in %, mean KLD. Rows without imatrix where the table
# has one, else the "WT 10m" imatrix row (IQ formats need an imatrix). Larger models lose less (the same README:
# Q4_K_M is +1.4 % on Llama-2-7B vs +2.8 % on Llama-3-8B): approximate, a per-format ordering, not a prediction.
class QualityNote(BaseModel):
    model_config = Frozen
    quant: str
    ppl_delta_pct: float | None = None
    kld: float | None = None
    mmlu_pro_delta: float | None = None
    tier: Literal["lossless", "small", "noticeable", "large", "unknown"]
    source: str
    approximate: bool = True

    def text(self) -> str:
        parts = []
        if self.ppl_delta_pct is not None:
            parts.append(f"+{self.ppl_delta_pct:.2g}% PPL")
        if self.kld is not None:
            parts.append(f"KLD {self.kld:.3g}")
        if self.mmlu_pro_delta is not None:
            parts.append(f"MMLU-Pro {self.mmlu_pro_delta:+.2f} pts")
        return f"{self.tier} quality cost (~{', '.join(parts) or 'unmeasured'}; {self.source})"


def _tier(ppl: float | None, mmlu: float | None) -> str:
    if ppl is not None:
        return "lossless" if ppl < 1 else "small" if ppl < 4 else "noticeable" if ppl < 10 else "large"
    if mmlu is not None:
        return "lossless" if mmlu > -0.5 else "small" if mmlu > -2 else "noticeable" if mmlu > -5 else "large"
    return "unknown"


TIER_RANK = {"lossless": 0, "small": 0, "unknown": 1, "noticeable": 1, "large": 2}


def _quality_loss(qn: QualityNote) -> float:
    """One ordering number within a tier: ΔPPL % (GGUF) or MMLU-Pro points lost (MLX); unknown last."""
    if qn.ppl_delta_pct is not None:
        return qn.ppl_delta_pct
    if qn.mmlu_pro_delta is not None:
        return -qn.mmlu_pro_delta
    return 1e9


def quality_of(q: QuantFormat, model: ModelProfile | None = None) -> QualityNote:
    """Quality cost of a format, from the profile's published measurement (llama.cpp perplexity scoreboard for
    GGUF, mlx-lm MMLU-Pro deltas for MLX); 'unknown' where nothing is published. The model's own checkpoint format
    (ModelProfile.native_quant, e.g. gpt-oss in MXFP4) loses nothing against the weights as published."""
    nq = model.native_quant if model is not None else None
    if model is not None and nq is not None and q.id in (nq.gguf_preset, nq.mlx_quant):
        # zero by definition: these are the published weights (so it sorts first among lossless formats)
        gguf = q.kind == "gguf"
        return assemble(QualityNote, quant=q.id, tier="lossless", approximate=False,
                        ppl_delta_pct=0.0 if gguf else None, mmlu_pro_delta=None if gguf else 0.0,
                        source=f"the format {model.id} is published in (its profile's native_quant)")
    qq = q.quality
    if qq is None:
        return assemble(QualityNote, quant=q.id, tier="unknown", source="no published measurement")
    return assemble(QualityNote, quant=q.id, ppl_delta_pct=qq.ppl_delta_pct, kld=qq.kld,
                    mmlu_pro_delta=qq.mmlu_pro_delta, tier=_tier(qq.ppl_delta_pct, qq.mmlu_pro_delta),
                    source=qq.source or "unsourced")


# --------------------------------------------------------------------------- results
class ServingOption(BaseModel):
    model_config = Frozen
    rank: int = 0
    runtime: str
    quant: str
    kv_type: str
    slots: int
    """Parallel sequences (llama-server -np / mlx decode concurrency)"""
    context: int
    """Context per sequence the recipe reserves [tokens]"""
    max_context: int
    """Longest context per sequence that still fits comfortably [tokens]"""
    memory_bytes: int
    fit: Fit
    speed: Speed | None = None
    meets_targets: bool
    misses: list[str] = []
    bound: str
    """prefill-bound / decode-bound (bandwidth|compute) / memory-only"""
    quality: QualityNote
    reason: str
    recipe: Recipe


class RouterOption(BaseModel):
    """Two runtimes resident at once behind a router, each serving the requests it is faster at; or, when no pair
    fits together (or none beats one runtime alone), the single runtime to run and why."""

    model_config = Frozen
    prefill_runtime: str
    """Runtime that takes the long prompts (or the single runtime)"""
    decode_runtime: str
    """Runtime that takes the short prompts (or the single runtime)"""
    rule: str
    memory_bytes: int
    """Both runtimes resident (or the single runtime) [bytes]"""
    fits: bool
    """True when a pair fits together under the GPU limit"""
    reason: str
    recipes: list[Recipe]
    split: list[str] = []
    """Which prompt lengths go where, with their share"""
    pairs_searched: int = 0
    pairs_fitting: int = 0
    score: float | None = None
    """Mean time per request [s] (latency) or requests/s (throughput)"""
    single_score: float | None = None
    """The same for the best single runtime"""


class Recommendation(BaseModel):
    model_config = Frozen
    model: str
    chip: str | None
    """Chip profile id (m4-max-40gpu); None: memory-only"""
    chip_label: str | None = None
    """The chip's name for people (M4 Max 40-core GPU)"""
    ram_gb: float
    macos: str
    workload: WorkloadProfile
    wired: WiredLimit
    speed_source: str
    options: list[ServingOption]
    rejected: dict[str, int]
    """Configurations dropped, by reason"""
    evaluated: int
    router: RouterOption | None = None
    targets_met: bool = True
    """False: no configuration meets the targets; the closest are listed"""
    notes: list[str] = []
    why_not_higher_quality: str | None = None
    """Why the first option is not a lossless quant with a 16-bit KV cache (None when it is)"""
    best_per_runtime: list[ServingOption] = []
    ("Each runtime's best option by the same ranking (its closest when none of its options meets the targets), "
     "ranked list or not: the runtime comparison")


# --------------------------------------------------------------------------- the search
def _targets_check(wl: WorkloadProfile, sp: Speed | None) -> list[str]:
    if sp is None:
        return []
    t, miss = wl.targets, []
    if t.min_tok_s_per_user and sp.decode_tok_s_per_user < t.min_tok_s_per_user:
        miss.append(f"{sp.decode_tok_s_per_user:.1f} < {t.min_tok_s_per_user:g} tok/s per user")
    if t.max_ttft_s and sp.ttft_s > t.max_ttft_s:
        miss.append(f"TTFT {sp.ttft_s:.1f} s > {t.max_ttft_s:g} s")
    if t.max_request_s and sp.time_per_request_s > t.max_request_s:
        miss.append(f"{sp.time_per_request_s:.1f} s per request > {t.max_request_s:g} s")
    return miss


def _bound_text(sp: Speed | None) -> str:
    if sp is None:
        return "memory-only"
    if sp.prefill_share >= 0.5:
        return "prefill-bound (compute)"
    return f"decode-bound ({sp.decode_bound})"


def _reason(sp: Speed | None, fit: Fit, qn: QualityNote, wl: WorkloadProfile, slots: int, maxc: int) -> str:
    parts = []
    if sp is not None:
        if sp.prefill_share >= 0.5:
            parts.append(f"prefill-bound: prefill is {sp.prefill_share:.0%} of each request "
                         f"({wl.prompt_tokens.p90_tokens:,}-token prompt at {sp.prefill_tok_s:,.0f} tok/s, "
                         f"TTFT {sp.ttft_s:.1f} s)")
        else:
            parts.append(f"decode-bound ({sp.decode_bound}): {sp.decode_tok_s_per_user:.1f} tok/s per user, "
                         f"{sp.decode_tok_s:.1f} aggregate at {min(slots, wl.users)} in flight; TTFT {sp.ttft_s:.1f} s")
        if slots < wl.users:
            parts.append(f"{slots} slots for {wl.users} users: the rest queue")
    parts.append(f"memory {fit.verdict}: {fit.reason}; up to {maxc:,} tokens/sequence fit")
    parts.append(qn.text())
    return "; ".join(parts)


# --------------------------------------------------------------------------- ranking: quality first with headroom
# Hand-set margin, not a measurement: a target counts as met "with headroom" when the speed is at least 1.2x the
# minimum and the waits at most 1/1.2 of the maximum, so a 20 % error of the speed model does not flip the answer.
HEADROOM = 1.2
QUALITY_ORDER = {"lossless": 0, "small": 1, "unknown": 2, "noticeable": 2, "large": 3}
KV_PRECISION = {"f32": 0, "f16": 0, "bf16": 0, "q8_0": 1, "kv8": 1, "q4_0": 2, "kv4": 2}


def has_headroom(o: ServingOption, wl: WorkloadProfile) -> bool:
    """Memory fits comfortably (no sysctl, room to spare) and every speed target is met with HEADROOM."""
    if o.fit.verdict != "fits" or not o.meets_targets:
        return False
    sp, t = o.speed, wl.targets
    if sp is None:
        return True
    return not ((t.min_tok_s_per_user and sp.decode_tok_s_per_user < HEADROOM * t.min_tok_s_per_user)
                or (t.max_ttft_s and HEADROOM * sp.ttft_s > t.max_ttft_s)
                or (t.max_request_s and HEADROOM * sp.time_per_request_s > t.max_request_s))


def quality_rank(o: ServingOption) -> tuple[int, int]:
    """(weight quality tier, KV precision): (0, 0) is a lossless quant with a 16-bit KV cache."""
    return QUALITY_ORDER[o.quality.tier], KV_PRECISION.get(o.kv_type, 1)


def preference(o: ServingOption, wl: WorkloadProfile) -> RankKey:
    """Ranking key of an option that meets the targets, smallest first. Options with headroom come first, ordered
    by quality (lossless before small-loss weights, then 16- before 8- before 4-bit KV), then speed; the rest keep
    the speed-first order within a coarse quality tier."""
    sp = o.speed
    perf: tuple[float, ...]
    if sp is None:  # memory only: best measured quality first, then room (slots, context) to spare
        perf = (_quality_loss(o.quality), -o.slots, -o.max_context)
    elif wl.objective == "throughput":
        perf = (-sp.decode_tok_s,)
    else:
        perf = (sp.time_per_request_s,)
    tail = (VERDICT_RANK[o.fit.verdict], *perf, o.memory_bytes)
    if has_headroom(o, wl):
        return (0, *quality_rank(o), *tail)
    return (1, TIER_RANK[o.quality.tier], KV_RANK.get(o.kv_type, 0), *tail)


def why_not_higher_quality(top: ServingOption, every: list[ServingOption], wl: WorkloadProfile) -> str | None:
    """Why the first option is not lossless with a 16-bit KV cache: what the best higher-quality option that fits
    in memory misses, or that none fits. None when the first option is already of the best quality."""
    if quality_rank(top) == (0, 0):
        return None
    better = [o for o in every if quality_rank(o) < quality_rank(top)]
    if not better:
        return (f"no option of higher quality than {top.quant} with KV cache {top.kv_type} fits in memory at "
                f"{wl.users} × {top.context:,} tokens")
    b = min(better, key=lambda o: (*quality_rank(o), not o.meets_targets, VERDICT_RANK[o.fit.verdict]))
    what = f"{b.runtime} {b.quant} with KV cache {b.kv_type} ({b.quality.tier} quality)"
    if b.misses:
        return f"{what} misses the targets: {'; '.join(b.misses)}"
    if b.fit.verdict != "fits":
        return f"{what} fits only {'with the GPU limit raised' if b.fit.verdict == 'raise-limit' else 'tightly'}"
    return f"{what} meets the targets with less than {HEADROOM - 1:.0%} to spare"


class Search(NamedTuple):
    """The fixed inputs of one recommend search (model, Mac, workload, operating point). A named tuple: as immutable
    as a frozen dataclass, without the six methods a dataclass compiles when the module is imported."""

    prof: ModelProfile
    wl: WorkloadProfile
    chip: Chip | None
    ram_gb: float
    wired: WiredLimit
    raised: WiredLimit
    context: int  # per sequence [tokens]
    prompt: int = 0
    gen: int = 1
    want_speed: bool = False

    @property
    def staggered(self) -> bool:
        return self.wl.objective == "latency"


class Found:
    """What the search saw: every option that fits memory, the ones meeting the targets (with sort keys). A plain
    class (the search fills it in): a dataclass compiled its methods when the module was imported."""

    def __init__(self) -> None:
        self.every: list[ServingOption] = []
        self.passing: list[tuple[RankKey, ServingOption]] = []
        self.rejected: dict[str, int] = {}
        self.speed_models: dict[tuple[str, str, str], Roofline | None] = {}
        self.evaluated = 0
        self.memory_models: dict[tuple[str, str, str], MemoryModel] = {}  # by (runtime, quant, KV type)
        self.kv_type: str | None = None  # the asked KV type, else None (every advised type)


def recommend(model: str, ram_gb: float, workload: WorkloadProfile, chip: Chip | None = None, macos: str = profiles.DEFAULT_MACOS,
              runtimes: list[str] | None = None, quants: list[str] | None = None, wired_limit_mb: int | None = None,
              top: int = 8, best_effort: bool = False, kv_type: str | None = None, flash_attn: bool | None = None,
              n_ubatch: int | None = None, images: int = 0) -> Recommendation:
    """Ranked configurations of ``model`` on one Mac for ``workload``. When none meets the targets:
    ``best_effort`` lists the closest (targets_met False, a note says which target binds), else raises.
    ``kv_type``: only that KV cache type, in each runtime's spelling (q8_0 / kv8), its default where the runtime has
    none of the kind (as planner.plan answers an asked KV type); None searches every advised type. ``flash_attn`` /
    ``n_ubatch``: llama.cpp's -fa / -ub as asked of planner.plan (None: the runtime's defaults). ``images`` per
    request: the vision encoder + projector counted and mlx-vlm for mlx-lm (planner.setups.image_runtimes); the
    workload's context and prompt already hold the image tokens (as planner.setups.with_images makes a plan's)."""
    from .setups import image_runtimes

    ctx, notes = _setup(model, ram_gb, workload, chip, macos, wired_limit_mb)
    rts = [profiles.load_runtime(r) for r in profiles.expand_runtimes(runtimes or ["llama.cpp", "mlx-lm"])]
    rts = image_runtimes(rts)[0] if images else rts
    from .plan import PlanRequest, pinned_by_name, plan_request

    # a name that pins a format and preset (mlx-community/<Model>-4bit, qwen3:8b-q8_0) pins the search, as in plan;
    # the plain question's request (a model only) without building PlanRequest's validator (plan_request)
    req = PlanRequest(model=model, quants=quants) if quants else plan_request(model=model)
    pinned, rts, pin_notes = pinned_by_name(req, rts)
    quants, notes = (list(pinned.quants) if pinned.quants else None), [*notes, *pin_notes]
    if quants:  # the deployment stage's rule, as planner.plan: an unknown name refused with close matches,
        # other-format quants converted, or runtimes left out
        asked, quant_notes = resolve_quants(quants, rts)
        quants, notes = list(dict.fromkeys(q.id for qs in asked.values() for q in qs)), [*notes, *quant_notes]
    found = _search(ctx, rts, quants, kv_type, flash_attn, n_ubatch, images)
    if quants and not found.evaluated:  # was "does not fit ... the smallest needs 0.0 GiB"
        raise InputError(f"[[quant]] {', '.join(quants)}: not a format of {', '.join(r.id for r in rts)} "
                         "(GGUF: Q4_K_M, Q8_0...; MLX: 4bit, 8bit-g32, mxfp4...)")
    met = bool(found.passing)
    if not met:
        notes.append(_no_answer(ctx, found, best_effort))
    ranked = _rank(found.passing if met else _closest(found, ctx.wl), top)
    router = None
    if workload.is_mixed:
        from .router import best_pair

        router = best_pair(ctx, found, rts)
    src = "memory only"
    if ranked and ranked[0].speed is not None:
        src = ranked[0].speed.calibration or "planner/throughput.py roofline"
    return assemble(Recommendation, model=ctx.prof.id, chip=chip.id if chip else None,
                    chip_label=chip.label if chip else None, ram_gb=float(ram_gb),
                    macos=ctx.wired.macos, workload=workload, wired=ctx.wired, speed_source=src,
                    options=ranked, rejected=found.rejected, evaluated=found.evaluated, router=router,
                    targets_met=met, notes=notes, best_per_runtime=best_per_runtime(found, workload),
                    why_not_higher_quality=why_not_higher_quality(ranked[0], found.every, workload)
                    if met and ranked else None)


def _setup(model: str, ram_gb: float, wl: WorkloadProfile, chip: Chip | None, macos: str,
           wired_limit_mb: int | None) -> tuple[Search, list[str]]:
    prof = profiles.load_model(model)
    mac_os = profiles.load_macos(macos)
    unsold = check_ram(chip, ram_gb) if chip is not None else None
    wired = capacity.wired_limit(ram_gb, mac_os, wired_limit_mb)
    raised = capacity.wired_limit(ram_gb, mac_os, wired.max_raise_bytes // (1024 * 1024))
    need, capped = capacity.cap_context(wl.context, prof)
    # an asked context shorter than the longest request: the workload holds the request (WorkloadProfile.context),
    # said as plan, models and cluster say it (capacity.hold_request)
    short = None if wl.context_cap is None else capacity.hold_request(
        wl.context_cap, wl.prompt_tokens.max_tokens, wl.gen_tokens.max_tokens, prof.config.max_position_embeddings)[1]
    notes = [n for n in (unsold, capped, shrunk_note(wl), short) if n]
    prompt, gen = point_in_context(prompt_point(wl.prompt_tokens), gen_point(wl.gen_tokens), need)
    want_speed = chip is not None and speed_available()
    if chip is None:
        notes.append("no chip given: memory-only ranking (name the chip for speed, TTFT and targets)")
    elif not speed_available():
        notes.append("speed model (planner/throughput.py) not available: memory-only ranking")
    elif chip.memory_bandwidth_gb_s is None:
        notes.append(f"{chip.label}: bandwidth unpublished ({chip.status}); memory-only")
    return Search(prof=prof, wl=wl, chip=chip, ram_gb=ram_gb, wired=wired, raised=raised, context=need,
                  prompt=prompt, gen=gen, want_speed=want_speed), notes


def _search(ctx: Search, rts: list[Runtime], quants: list[str] | None, kv_type: str | None = None,
            flash_attn: bool | None = None, n_ubatch: int | None = None, images: int = 0) -> Found:
    found = Found()
    found.kv_type = kv_type
    for rt, q, mm, slots in candidates(ctx.prof, rts, quants, ctx.wl.users, kv_type, flash_attn, n_ubatch, images):
        found.evaluated += 1
        key = (rt.id, q.id, mm.kv.kv_type)
        found.memory_models.setdefault(key, mm)
        if key not in found.speed_models:
            chip = ctx.chip if ctx.want_speed else None  # want_speed implies a chip (_setup)
            found.speed_models[key] = speed_model(mm, chip, q) if chip is not None else None
        opt = _evaluate(ctx, mm, q, slots, found.speed_models[key], found)
        if opt is None:
            continue
        found.every.append(opt)
        if opt.misses:
            found.rejected["targets"] = found.rejected.get("targets", 0) + 1
        else:
            found.passing.append((_sort_key(ctx, opt, mm), opt))
    return found


def _evaluate(ctx: Search, mm: "MemoryModel", q: QuantFormat, slots: int, rf: "Roofline | None", found: Found) -> ServingOption | None:
    """One configuration: memory verdict (None when it does not fit at all), speed, targets, reason, recipe."""
    rt, need = mm.runtime, ctx.context
    total = mm.total(need, slots)
    fit = capacity.fit(total, mm.weights.total_bytes, ctx.wired, rt)
    if fit.verdict == "no-fit":
        found.rejected["memory"] = found.rejected.get("memory", 0) + 1
        return None
    budget = capacity.safe_budget(ctx.wired if fit.verdict != "raise-limit" else ctx.raised, rt)
    maxc = max(capacity.max_context(mm, slots, budget, ctx.prof.config.max_position_embeddings) or need, need)
    sp = (speed_at(rf, ctx.prompt, ctx.gen, slots, ctx.wl.users, ctx.staggered, ctx.wl.cached_tokens(ctx.prompt, rt),
                   ctx.wl.cached_prefix_share) if rf is not None else None)
    miss = _targets_check(ctx.wl, sp)
    qn = quality_of(q, ctx.prof)
    return assemble(ServingOption, runtime=rt.id, quant=q.id, kv_type=mm.kv.kv_type, slots=slots, context=need,
                    max_context=maxc, memory_bytes=total, fit=fit, speed=sp, meets_targets=not miss, misses=miss,
                    bound=_bound_text(sp), quality=qn, reason=_reason(sp, fit, qn, ctx.wl, slots, maxc),
                    recipe=recipe(mm, q, need, slots, fit))


def _sort_key(ctx: Search, o: ServingOption, mm: "MemoryModel") -> RankKey:
    """Quality first when the targets are met with headroom, else speed first (see :func:`preference`)."""
    return preference(o, ctx.wl)


SHORTFALL_STEP = 1.05  # misses within 5 % of each other count as equally close: quality decides between them


def shortfall(o: ServingOption, wl: WorkloadProfile) -> float:
    """How far the option is from its worst-missed speed target, as a ratio >= 1 (1: every target met)."""
    sp, t = o.speed, wl.targets
    if sp is None:
        return 1.0
    ratios = [1.0]
    if t.min_tok_s_per_user:
        ratios.append(t.min_tok_s_per_user / max(sp.decode_tok_s_per_user, 1e-9))
    if t.max_ttft_s:
        ratios.append(sp.ttft_s / t.max_ttft_s)
    if t.max_request_s:
        ratios.append(sp.time_per_request_s / t.max_request_s)
    return max(ratios)


def _closest(found: Found, wl: WorkloadProfile) -> list[tuple[RankKey, ServingOption]]:
    """Options that miss a target, closest first: a large quality cost last (it is never worth paying for a target
    the option still misses), then fewest misses, then the smallest shortfall on the worst-missed target (in 5 %
    steps from the closest), then quality (a faster decode that does not help the binding target is no reason for
    a lossier quant or KV), then fastest per user, then shortest TTFT."""
    short = [(o, sp, shortfall(o, wl)) for o in found.every if (sp := o.speed) is not None]
    best: dict[int, float] = {}
    for o, _, f in short:
        best[len(o.misses)] = min(best.get(len(o.misses), math.inf), f)
    # steps of 5 % above the closest option with as many misses (0: within 5 % of it)
    return [((o.quality.tier == "large", len(o.misses), math.floor(math.log(f / best[len(o.misses)]) / math.log(SHORTFALL_STEP) + 1e-9),
              *quality_rank(o), -sp.decode_tok_s_per_user, sp.ttft_s), o) for o, sp, f in short]


def best_per_runtime(found: Found, wl: WorkloadProfile) -> list[ServingOption]:
    """Each runtime's first option by the ranking recommend uses: among its options that meet the targets, else
    among its closest. ``rank`` is 0: the option may lie beyond the listed ones."""
    out = []
    for rt in dict.fromkeys(o.runtime for o in found.every):
        pool = ([c for c in found.passing if c[1].runtime == rt]
                or [c for c in _closest(found, wl) if c[1].runtime == rt])
        if pool:
            out.append(min(pool, key=lambda c: c[0])[1].model_copy(update={"rank": 0}))
    return out


def _rank(cands: list[tuple[RankKey, ServingOption]], top: int) -> list[ServingOption]:
    """Best first, one row per (runtime, quant, KV type), numbered."""
    seen: set[tuple[str, str, str]] = set()
    ranked: list[ServingOption] = []
    for _, o in sorted(cands, key=lambda c: c[0]):
        key = (o.runtime, o.quant, o.kv_type)
        if key in seen:
            continue
        seen.add(key)
        ranked.append(o.model_copy(update={"rank": len(ranked) + 1}))
        if len(ranked) >= top:
            break
    return ranked


def _no_answer(ctx: Search, found: Found, best_effort: bool) -> str:
    """The sentence that says why nothing qualifies; raises unless best effort applies."""
    wl, chip = ctx.wl, ctx.chip
    closest = _rank(_closest(found, wl), 1)
    if closest:
        o, sp = closest[0], closest[0].speed
        assert sp is not None  # _closest keeps the options with a speed
        msg = (f"no configuration of {ctx.prof.id} on {chip.label if chip else ''} {ctx.ram_gb:g} GB meets "
               f"{wl.targets.describe()} for {wl.users} user{'' if wl.users == 1 else 's'}; the best reaches "
               f"{sp.decode_tok_s_per_user:.1f} tok/s per user, TTFT {sp.ttft_s:.1f} s ({o.runtime} "
               f"{o.quant}, {o.slots} slot{'' if o.slots == 1 else 's'}): {'; '.join(o.misses)}; relax the targets or see `plan buy`")
        if best_effort:
            return msg
        raise TargetsUnreachableError(msg, fields={"closest": o.model_dump(mode="json")})
    need = smallest_need(found.memory_models.values(), ctx.context, wl.users, found.kv_type)
    said = (over_text(need, ctx.wired) if need else
            f"the {fmt_bytes(ctx.wired.max_raise_bytes)} the GPU may have with the limit raised is too little")
    raise NoFitError(f"{ctx.prof.id} does not fit in {ctx.ram_gb:g} GB for {wl.users} × {ctx.context:,} tokens with "
                     f"any runtime/quant searched: {said}; try fewer [[users]], a shorter context or `plan buy`",
                     fields={"model": ctx.prof.id, "ram_gb": ctx.ram_gb, "users": wl.users, "context": ctx.context,
                             "smallest_memory_bytes": need.memory_bytes if need else None,
                             "smallest": need.model_dump(mode="json") if need else None,
                             "max_wired_limit_bytes": ctx.wired.max_raise_bytes})


# --------------------------------------------------------------------------- the runtime comparison
SAME_SPEED = 1.05  # within 5 %: the speed model cannot tell the runtimes apart (its ranges are wider than that)


class RuntimeVerdict(BaseModel):
    """mlx-lm or llama.cpp for this workload: the top option's runtime against each other runtime's best.
    ``code``: faster (the top's runtime decodes more than SAME_SPEED x faster), same (within it: the choice rests
    on quality and memory), slower (the top trades speed for quality or targets), only (no other runtime has an
    option that fits)."""

    model_config = Frozen
    runtime: str
    other: str | None = None
    other_quant: str | None = None
    code: Literal["faster", "same", "slower", "only"]
    decode_ratio: float | None = None
    """top / other decode tok/s per user [1]"""
    other_meets_targets: bool = False


def runtime_verdicts(rec: Recommendation) -> list[RuntimeVerdict]:
    """One verdict per other runtime that has an option, or one 'only' verdict when none has."""
    if not rec.options:
        return []
    top = rec.options[0]
    others = [o for o in rec.best_per_runtime if o.runtime != top.runtime]
    if not others:
        return [assemble(RuntimeVerdict, runtime=top.runtime, code="only")]
    out = []
    for o in others:
        ratio = None
        if top.speed is not None and o.speed is not None and o.speed.decode_tok_s_per_user > 0:
            ratio = top.speed.decode_tok_s_per_user / o.speed.decode_tok_s_per_user
        code = ("same" if ratio is None or 1 / SAME_SPEED <= ratio <= SAME_SPEED
                else "faster" if ratio > SAME_SPEED else "slower")
        out.append(assemble(RuntimeVerdict, runtime=top.runtime, other=o.runtime, other_quant=o.quant, code=code,
                            decode_ratio=ratio, other_meets_targets=o.meets_targets))
    return out


THINKING_BUDGETS = (1024, 4096, 16384)  # the table's budgets when none is stated (no typical length is published)


def answer_wait(ttft_s: float, decode_tok_s: float, thinking_tokens: int) -> float:
    """Seconds to the answer's first token of a reasoning model: the prompt (TTFT) then ``thinking_tokens`` decoded
    at the per-user decode rate (the thinking is ordinary generation: the answer starts after </think>). [s]"""
    return ttft_s + thinking_tokens / decode_tok_s
