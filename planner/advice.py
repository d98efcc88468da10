"""Advice for a workload: search runtime × quant × KV type × slots × context cap on one Mac, rank what meets the
targets, explain why (prefill- or decode-bound, memory headroom, quality cost) and print launch recipes.

Memory comes from planner.memory (MemoryModel.total, O(1)) and planner.capacity (wired limit, fit verdict);
speed from planner.throughput (the colleague's roofline) behind :func:`speed_model` / :func:`speed_at`, so this
module never restates a speed formula. When throughput is absent the answers are memory-only.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from . import capacity, profiles
from .errors import InputError, PlannerError
from .memory import MemoryModel, check_kv_type, kv_layout, memory_model
from .plan import DEFAULT_QUANTS
from .results import Fit, WiredLimit
from .schema import Chip, ModelProfile, QuantFormat, Runtime
from .units import GiB, pad_to
from .workload import WorkloadProfile

Frozen = ConfigDict(frozen=True, extra="forbid")

KV_CHOICES = {"llama.cpp": ["f16", "q8_0", "q4_0"], "mlx-lm": ["bf16", "kv8", "kv4"]}
SLOT_CHOICES = [1, 2, 4, 8, 16, 32, 64]
VERDICT_RANK = {"fits": 0, "tight": 1, "raise-limit": 2, "no-fit": 3}
# Ranking heuristic (no measurement cited yet): 4-bit KV is assumed to cost more accuracy than 8-bit KV, so it
# ranks after 8/16-bit KV of the same weights
KV_RANK = {"q4_0": 1, "kv4": 1}


class TargetsUnreachableError(PlannerError):
    """No configuration meets the workload's targets; the message says what the best reaches."""


class NoFitError(PlannerError):
    """The model does not fit in memory in any searched configuration."""


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


def quality_of(q: QuantFormat) -> QualityNote:
    """Quality cost of a format, from the profile's published measurement (llama.cpp perplexity scoreboard for
    GGUF, mlx-lm MMLU-Pro deltas for MLX); 'unknown' where nothing is published."""
    qq = q.quality
    if qq is None:
        return QualityNote(quant=q.id, tier="unknown", source="no published measurement")
    return QualityNote(quant=q.id, ppl_delta_pct=qq.ppl_delta_pct, kld=qq.kld, mmlu_pro_delta=qq.mmlu_pro_delta,
                       tier=_tier(qq.ppl_delta_pct, qq.mmlu_pro_delta), source=qq.source or "unsourced")


# --------------------------------------------------------------------------- speed adapter
class Speed(BaseModel):
    """What advice needs from the speed model at one operating point. Rates in tokens/s, times in s."""

    model_config = Frozen
    prefill_tok_s: float
    ttft_s: float
    decode_tok_s_per_user: float
    decode_tok_s: float = Field(description="aggregate over all users")
    time_per_request_s: float
    decode_bound: Literal["bandwidth", "compute"]
    prefill_share: float = Field(description="TTFT / time per request")
    calibration: str = ""


def speed_available() -> bool:
    try:
        from . import throughput  # noqa: F401
    except ImportError:
        return False
    return True


def _constants(chip_id: str, runtime_id: str):
    # profiles.load_speed_constants caches (and profiles.clear_cache() resets it after a user calibration)
    return profiles.load_speed_constants(profiles.resolve_chip(chip_id), runtime_id)


def speed_model(mm: MemoryModel, chip: Chip, quant: QuantFormat):
    """The colleague's Roofline for (chip, runtime, model, quant, kv); None when no speed can be predicted
    (throughput not installed, or a chip without bandwidth)."""
    if not speed_available() or chip.memory_bandwidth_gb_s is None:
        return None
    from . import throughput as tp

    rt = mm.runtime
    chunk = (rt.n_ubatch or 512) if rt.family == "llama.cpp" else (rt.prefill_step_size or 2048)
    try:
        geo = tp.geometry(mm, quant.kind, quant.mode)
        return tp.roofline(geo, chip, _constants(chip.id, rt.id), rt.family, flash_attn=mm.flash_attn,
                           chunk=chunk, reference_chips=profiles.all_chips())
    except PlannerError:
        return None


def speed_at(rf, prompt: int, gen: int, slots: int, users: int, staggered: bool) -> Speed:
    """Speed of ``users`` users served by ``slots`` parallel sequences (slots ≤ users queue, time-shared).

    staggered: prompts arrive one at a time (interactive use), so TTFT is one prompt's prefill while the others
    decode; otherwise (batch jobs) the prompts of a full batch are prefilled together."""
    from . import throughput as tp

    b = min(slots, users)
    e = tp.estimate(rf, prompt, gen, 0, b)
    ttft = tp.estimate(rf, prompt, 1, 0, 1).ttft_s if staggered else e.ttft_s
    t_req = e.time_per_request_s - e.ttft_s + ttft
    waves = math.ceil(users / b)
    per_user = e.decode_tok_s_per_seq
    if waves > 1:
        # users beyond the slots wait for a free slot: on average half a request per extra wave
        ttft += (waves - 1) * t_req / 2
        per_user = per_user * b / users
        t_req = t_req + (waves - 1) * t_req / 2
    return Speed(prefill_tok_s=e.prefill_tok_s, ttft_s=ttft, decode_tok_s_per_user=per_user,
                 decode_tok_s=e.decode_tok_s, time_per_request_s=t_req, decode_bound=e.bound,
                 prefill_share=min(1.0, ttft / t_req) if t_req > 0 else 0.0, calibration=e.calibration)


# --------------------------------------------------------------------------- memory helpers
@functools.lru_cache(maxsize=256)
def base_memory_model(model_id: str, runtime_id: str, quant_id: str) -> MemoryModel:
    model = profiles.load_model(model_id)
    rt = profiles.load_runtime(runtime_id)
    q = profiles.load_quant(quant_id, rt.weight_format)
    return memory_model(model, rt, q, profiles.ggml_types())


def with_kv(mm: MemoryModel, kv_type: str) -> MemoryModel | None:
    """Same weights, another KV type (None if the runtime/model refuses it)."""
    try:
        k = check_kv_type(kv_type, mm.runtime, mm.model)
    except InputError:
        return None
    if k == mm.kv.kv_type:
        return mm
    if mm.runtime.family == "llama.cpp" and k not in ("f16", "bf16", "f32") and not mm.flash_attn:
        return None
    return dataclasses.replace(mm, kv=kv_layout(mm.model, mm.runtime, k, profiles.ggml_types()))


def quants_for(model: ModelProfile, rt: Runtime, only: list[str] | None = None) -> list[QuantFormat]:
    if only:
        out = []
        for q in only:
            try:
                out.append(profiles.load_quant(q, rt.weight_format))
            except PlannerError:
                continue
        return out
    ids = list(DEFAULT_QUANTS[rt.weight_format])
    if model.config.model_type == "gpt_oss" and rt.weight_format == "gguf":
        ids.insert(0, "MXFP4_MOE")
    if model.config.is_moe and model.params_b > 300:
        # 600B+ MoEs only fit at 1-3 bits per weight on a Mac (e.g. unsloth dynamic IQ1/IQ2 GGUFs)
        ids = (["IQ1_S", "IQ2_XXS", "IQ2_M", "Q2_K"] if rt.weight_format == "gguf" else ["mlx-2bit-g64", "mlx-3bit-g64"]) + ids
    return [profiles.load_quant(i, rt.weight_format) for i in ids]


# --------------------------------------------------------------------------- recipes
def _mlx_repo(model: ModelProfile, q: QuantFormat) -> str:
    name = (model.hf_repo or model.id).split("/")[-1]
    suffix = {"affine": f"{q.bits}bit", "mxfp4": "mxfp4", "nvfp4": "nvfp4", "mxfp8": "mxfp8", "none": "bf16"}.get(
        q.mode or "", f"{q.bits}bit")
    if q.mode == "affine" and q.group_size and q.group_size != 64:
        suffix += f"-g{q.group_size}"
    return f"mlx-community/{name}-{suffix}"


class Recipe(BaseModel):
    model_config = Frozen
    server: str
    generate: str | None = None
    sysctl: str | None = None
    notes: list[str] = Field(default_factory=list)


def recipe(mm: MemoryModel, q: QuantFormat, context: int, slots: int, fit: Fit) -> Recipe:
    rt, model = mm.runtime, mm.model
    notes: list[str] = []
    if rt.family == "llama.cpp":
        ctx_total = pad_to(context * slots, rt.ctx_pad or 256)
        kv = mm.kv.kv_type
        name = (model.hf_repo or model.id).split("/")[-1]
        cmd = (f"llama-server -m {name}-{q.id}.gguf -c {ctx_total} -np {slots} -fa on -ctk {kv} -ctv {kv} "
               f"-ub {mm.n_ubatch} -ngl 99")
        notes.append(f"-c is the total over slots: {slots} × {context:,} tokens (llama-server splits it per -np slot)")
        if rt.id == "ollama":
            cmd = (f"OLLAMA_NUM_PARALLEL={slots} OLLAMA_FLASH_ATTENTION=1 OLLAMA_KV_CACHE_TYPE={kv} ollama serve  "
                   f"# then num_ctx={context * slots} in the Modelfile")
        return Recipe(server=cmd, sysctl=fit.sysctl, notes=notes)
    repo = _mlx_repo(model, q)
    kv_bits = {"kv8": 8, "kv4": 4}.get(mm.kv.kv_type)
    server = f"mlx_lm.server --model {repo} --prefill-step-size {rt.prefill_step_size or 2048}"
    if kv_bits:
        server += f" --kv-bits {kv_bits} --kv-group-size {rt.kv_group_size or 64}"
        notes.append("mlx_lm.server --kv-bits disables batching: requests are served one at a time")
    else:
        server += f" --decode-concurrency {slots} --prompt-concurrency {min(slots, rt.prefill_batch_size or 8)}"
    notes.append(f"mlx_lm.server has no --max-kv-size (ml-explore/mlx-lm#615): keep prompts + --max-tokens "
                 f"under {context:,} per request")
    gen = f"mlx_lm.generate --model {repo} --max-kv-size {context}"
    if kv_bits:
        gen += f" --kv-bits {kv_bits}"
    gen += f" --prefill-step-size {rt.prefill_step_size or 2048}"
    if mm.kv.swa_bytes_per_token:
        notes.append("sliding-window model: --max-kv-size turns every layer into a rotating cache; leave it off "
                     "if answers must see the whole context")
    return Recipe(server=server, generate=gen, sysctl=fit.sysctl, notes=notes)


# --------------------------------------------------------------------------- results
class Option(BaseModel):
    model_config = Frozen
    rank: int = 0
    runtime: str
    quant: str
    kv_type: str
    slots: int = Field(description="Parallel sequences (llama-server -np / mlx decode concurrency)")
    context: int = Field(description="Context per sequence the recipe reserves [tokens]")
    max_context: int = Field(description="Longest context per sequence that still fits comfortably [tokens]")
    memory_bytes: int
    fit: Fit
    speed: Speed | None = None
    meets_targets: bool
    misses: list[str] = Field(default_factory=list)
    bound: str = Field(description="prefill-bound / decode-bound (bandwidth|compute) / memory-only")
    quality: QualityNote
    reason: str
    recipe: Recipe


class RouterOption(BaseModel):
    model_config = Frozen
    prefill_runtime: str
    decode_runtime: str
    rule: str
    memory_bytes: int
    fits: bool
    reason: str
    recipes: list[Recipe]


class Recommendation(BaseModel):
    model_config = Frozen
    model: str
    chip: str | None
    ram_gb: float
    macos: str
    workload: WorkloadProfile
    wired: WiredLimit
    speed_source: str
    options: list[Option]
    rejected: dict[str, int] = Field(description="Configurations dropped, by reason")
    evaluated: int
    router: RouterOption | None = None
    notes: list[str] = Field(default_factory=list)


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


def recommend(model: str, ram_gb: float, workload: WorkloadProfile, chip: Chip | None = None, macos: str = "15",
              runtimes: list[str] | None = None, quants: list[str] | None = None, wired_limit_mb: int | None = None,
              top: int = 8) -> Recommendation:
    """Ranked configurations of ``model`` on one Mac for ``workload``."""
    prof = profiles.load_model(model)
    mac_os = profiles.load_macos(macos)
    if chip is not None and int(ram_gb) not in chip.ram_options_gb:
        raise InputError(f"--ram {ram_gb:g}: the {chip.label} comes with {', '.join(map(str, chip.ram_options_gb))} GB")
    wired = capacity.wired_limit(ram_gb, mac_os, wired_limit_mb)
    raised = capacity.wired_limit(ram_gb, mac_os, wired.max_raise_bytes // (1024 * 1024))
    max_pos = prof.config.max_position_embeddings
    notes = []
    need = workload.context
    if need > max_pos:
        notes.append(f"context {need:,} capped at the model's {max_pos:,} tokens")
        need = max_pos
    prompt = min(workload.prompt_tokens.p90_tokens, need - 1)
    gen = max(1, min(math.ceil(workload.gen_tokens.mean), need - prompt))
    staggered = workload.objective == "latency"
    rts = [profiles.load_runtime(r) for r in (runtimes or ["llama.cpp", "mlx-lm"])]
    want_speed = chip is not None and speed_available()
    if chip is None:
        notes.append("no chip given: memory-only ranking (name the chip for speed, TTFT and targets)")
    elif not speed_available():
        notes.append("speed model (planner/throughput.py) not available: memory-only ranking")
    elif chip.memory_bandwidth_gb_s is None:
        notes.append(f"{chip.label}: bandwidth unpublished ({chip.status}); memory-only")
    rejected: dict[str, int] = {}
    cands: list[tuple[tuple, Option]] = []
    evaluated = 0
    best_miss: tuple[float, Option] | None = None
    every: list[Option] = []
    min_total = None
    for rt in rts:
        for q in quants_for(prof, rt, quants):
            base = base_memory_model(prof.id, rt.id, q.id)
            qn = quality_of(q)
            for kv in KV_CHOICES.get(rt.family, [rt.default_kv_type]):
                mm = with_kv(base, kv)
                if mm is None:
                    continue
                rf = speed_model(mm, chip, q) if want_speed else None
                slot_opts = sorted({s for s in SLOT_CHOICES if s <= workload.users} | {workload.users})
                if rt.family == "mlx-lm" and mm.kv.kv_type != "bf16":
                    slot_opts = [1]  # mlx_lm.server --kv-bits disables batching
                for slots in slot_opts:
                    evaluated += 1
                    total = mm.total(need, slots)
                    min_total = total if min_total is None else min(min_total, total)
                    fit = capacity.fit(total, mm.weights.total_bytes, wired, rt)
                    if fit.verdict == "no-fit":
                        rejected["memory"] = rejected.get("memory", 0) + 1
                        continue
                    budget = capacity.safe_budget(wired if fit.verdict != "raise-limit" else raised, rt)
                    maxc = capacity.max_context(mm, slots, budget, max_pos) or need
                    sp = speed_at(rf, prompt, gen, slots, workload.users, staggered) if rf is not None else None
                    miss = _targets_check(workload, sp)
                    opt = Option(runtime=rt.id, quant=q.id, kv_type=mm.kv.kv_type, slots=slots, context=need,
                                 max_context=max(maxc, need), memory_bytes=total, fit=fit, speed=sp,
                                 meets_targets=not miss, misses=miss, bound=_bound_text(sp), quality=qn,
                                 reason=_reason(sp, fit, qn, workload, slots, max(maxc, need)),
                                 recipe=recipe(mm, q, need, slots, fit))
                    every.append(opt)
                    if miss:
                        rejected["targets"] = rejected.get("targets", 0) + 1
                        if sp is not None:
                            score = sp.decode_tok_s_per_user
                            if best_miss is None or score > best_miss[0]:
                                best_miss = (score, opt)
                        continue
                    if sp is None:
                        # memory only: best measured quality first, then room (slots, context) to spare
                        perf = (_quality_loss(qn), -slots, -maxc)
                    elif workload.objective == "throughput":
                        perf = (-sp.decode_tok_s,)
                    else:
                        perf = (sp.time_per_request_s,)
                    cands.append(((TIER_RANK[qn.tier], KV_RANK.get(mm.kv.kv_type, 0), VERDICT_RANK[fit.verdict], *perf, total),
                                  opt))
    if not cands:
        if best_miss is not None:
            o = best_miss[1]
            want = workload.targets.describe()
            raise TargetsUnreachableError(
                f"no configuration of {prof.id} on {chip.label if chip else ''} {ram_gb:g} GB meets {want} for "
                f"{workload.users} user(s); the best reaches {o.speed.decode_tok_s_per_user:.1f} tok/s per user, "
                f"TTFT {o.speed.ttft_s:.1f} s ({o.runtime} {o.quant}, {o.slots} slot(s)); relax the targets or see "
                f"`plan buy`")
        raise NoFitError(f"{prof.id} does not fit in {ram_gb:g} GB for {workload.users} × {need:,} tokens with any "
                         f"runtime/quant searched: the smallest needs {(min_total or 0) / GiB:.1f} GiB against a "
                         f"{wired.max_raise_bytes / GiB:.0f} GiB maximum GPU limit; try fewer --users, a shorter "
                         f"context or `plan buy`")
    cands.sort(key=lambda c: c[0])
    seen, ranked = set(), []
    for _, o in cands:
        key = (o.runtime, o.quant, o.kv_type)
        if key in seen:
            continue
        seen.add(key)
        ranked.append(o.model_copy(update={"rank": len(ranked) + 1}))
        if len(ranked) >= top:
            break
    router = _router(prof, workload, every, wired, raised, rts) if workload.is_mixed else None
    src = "memory only"
    if ranked and ranked[0].speed is not None:
        src = ranked[0].speed.calibration or "planner/throughput.py roofline"
    return Recommendation(model=prof.id, chip=chip.id if chip else None, ram_gb=ram_gb, macos=mac_os.name,
                          workload=workload, wired=wired, speed_source=src, options=ranked, rejected=rejected,
                          evaluated=evaluated, router=router, notes=notes)


def _router(prof: ModelProfile, wl: WorkloadProfile, passing: list[Option], wired: WiredLimit, raised: WiredLimit,
            rts: list[Runtime]) -> RouterOption | None:
    """Both runtimes resident behind a router (seed articles: llama.cpp for long prompts, mlx-lm for long
    generations). Picks the option with the fastest prefill and the one with the fastest decode among all that fit
    in memory (each runtime serves only its share of the requests, so neither has to meet every target alone)."""
    with_speed = [o for o in passing if o.speed is not None]
    fams = {o.runtime for o in with_speed}
    if len(fams) < 2:
        return None
    pf = max(with_speed, key=lambda o: (o.speed.prefill_tok_s, -TIER_RANK[o.quality.tier]))
    dc = max(with_speed, key=lambda o: (o.speed.decode_tok_s_per_user, -TIER_RANK[o.quality.tier]))
    if pf.runtime == dc.runtime:
        return RouterOption(prefill_runtime=pf.runtime, decode_runtime=dc.runtime, rule="one runtime",
                            memory_bytes=pf.memory_bytes, fits=True, recipes=[pf.recipe],
                            reason=f"{pf.runtime} is fastest at both prefill and decode here: no router needed")
    total = pf.memory_bytes + dc.memory_bytes
    fits = total <= raised.effective_bytes - 2 * GiB
    cut = wl.prompt_tokens.p90_tokens // 2
    sysctl = capacity.sysctl_for(total, profiles.load_runtime(pf.runtime)) if total > wired.effective_bytes else None
    why = (f"prompts ≥ {cut:,} tokens → {pf.runtime} {pf.quant} (prefill {pf.speed.prefill_tok_s:,.0f} tok/s), "
           f"the rest → {dc.runtime} {dc.quant} (decode {dc.speed.decode_tok_s_per_user:.1f} tok/s/user); both "
           f"resident need {total / GiB:.1f} GiB of the {wired.effective_bytes / GiB:.1f} GiB GPU limit"
           + (f" ({sysctl})" if sysctl and fits else "") + ("" if fits else ": does NOT fit, run one runtime"))
    return RouterOption(prefill_runtime=pf.runtime, decode_runtime=dc.runtime,
                        rule=f"prompt_tokens >= {cut} -> {pf.runtime}; else {dc.runtime}", memory_bytes=total,
                        fits=fits, reason=why, recipes=[pf.recipe, dc.recipe])
