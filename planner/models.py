"""What can I run on this Mac? Every catalog model's best way to run on one Mac, ranked by published quality.

Per model and runtime, quants are tried from the highest quality down (advice.quality_of: llama.cpp perplexity
scoreboard, mlx-lm MMLU-Pro deltas) and KV types in the runtime's advised order; the first configuration that fits
the asked context and users (planner.capacity.fit) and reaches the minimum tok/s (planner.search speed adapter) is the
model's row. Rows rank by (rank_key): meets the asked speed, context and memory under the default GPU limit; has a
published score on the catalog's common benchmark; not at a quant with a large quality cost; higher score; better
quant; faster decode; more memory left. Embedding models rank among themselves.

The hot loop holds plain tuples and dataclasses; pydantic rows are built once per model at the end.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from typing import TYPE_CHECKING

from . import capacity, profiles
from .advice import KV_RANK, QualityNote, _quality_loss, quality_of
from .deployment import check_ram, resolve_bin
from .errors import InputError, PlannerError
from .format import over_text
from .memory import MemoryModel
from .models_result import ModelRow, ModelsResult
from .points import DEFAULT_CACHED_PREFIX, DEFAULT_GEN, DEFAULT_PROMPT, MAX_TOKENS
from .results import Fit, WiredLimit
from .schema import Chip, GgmlType, GgmlTypeTable, MlxRuntime, ModelProfile, QuantFormat, Runtime
from .search import (
    Speed,
    base_memory_model,
    need_of,
    quants_for,
    speed_at,
    speed_available,
    speed_model,
    with_kv,
)
from .workload import cached_tokens, point_in_context, shrink_point

if TYPE_CHECKING:  # throughput is imported where a speed is asked for
    from .throughput import Roofline

DEFAULT_RUNTIMES = ["llama.cpp", "mlx-lm"]
TASKS = ("chat", "code", "reasoning", "vision", "embedding")
# quality cost tiers of a quant, best first; 'unknown' (nothing published) after every measured tier
TIER_ORDER = {"lossless": 0, "small": 1, "noticeable": 2, "large": 3, "unknown": 4}


@dataclasses.dataclass(frozen=True)
class Query:
    """What the user asked. Sizes in tokens, speeds in tokens/s."""

    ram_gb: float
    chip: Chip | None = None
    task: str | None = None
    min_tok_s: float | None = None
    context: int = 8192
    users: int = 1
    runtimes: tuple[str, ...] = ()
    max_params_b: float | None = None
    family: str | None = None
    macos: str = profiles.DEFAULT_MACOS
    prompt_tokens: int = DEFAULT_PROMPT      # the default workload (planner/points.py)
    gen_tokens: int = DEFAULT_GEN
    cached_prefix_share: float = DEFAULT_CACHED_PREFIX


@dataclasses.dataclass
class _Cand:
    """One evaluated configuration of one model (no pydantic in the loop)."""

    model: ModelProfile
    rt: Runtime
    quant: QuantFormat
    qn: QualityNote
    mm: MemoryModel
    context: int
    total: int
    fit: Fit
    kv: str = ""  # the KV type as the search asked for it (the speed model's key)
    speed: Speed | None = None
    misses: list[str] = dataclasses.field(default_factory=list)

    @property
    def decode(self) -> float | None:
        return self.speed.decode_tok_s_per_user if self.speed is not None else None


# --------------------------------------------------------------------------- per-model search
@functools.lru_cache(maxsize=1024)
def ordered_quants(model_id: str, runtime_id: str) -> tuple[tuple[QuantFormat, QualityNote], ...]:
    """The runtime's quants for a model, highest measured quality first; unmeasured formats last."""
    model, rt = profiles.load_model(model_id), profiles.load_runtime(runtime_id)
    nq = model.native_quant
    native = (nq.gguf_preset, nq.mlx_quant) if nq is not None else ()
    # a format's quality note is the model's own only for the model's checkpoint format (advice.quality_of):
    # every other one is the format's, built once per sweep
    qs = [(q, quality_of(q, model) if q.id in native else _format_quality(q.id, q.kind)) for q in quants_for(model, rt)]
    return tuple(sorted(qs, key=lambda x: (TIER_ORDER[x[1].tier], _quality_loss(x[1]), -_nominal_bits(x[0]))))


@functools.lru_cache(maxsize=512)
def _format_quality(quant_id: str, kind: str) -> QualityNote:
    """advice.quality_of of a format for any model whose checkpoint is in another format."""
    return quality_of(profiles.load_quant(quant_id, kind))


def _nominal_bits(q: QuantFormat) -> float:
    """Bits per weight of the format's base type (mlx: bits; GGUF: ggml block size) — only orders the search."""
    if q.kind == "mlx":
        return float(q.bits or 16)
    t = _ggml_type(q.base_type)
    return 8 * t.bytes_per_block / t.block_size if t else 16.0


def _ggml_type(name: str | None) -> GgmlType | None:
    """The ggml type table's row of ``name`` (None when it has none), from the table profiles keeps."""
    table = profiles.ggml_types()
    cached = _GGML_BY_NAME.get(id(table))
    if cached is None or cached[0] is not table:
        _GGML_BY_NAME.clear()
        cached = _GGML_BY_NAME[id(table)] = (table, {t.name: t for t in table.types})
    return cached[1].get(name) if name is not None else None


_GGML_BY_NAME: dict[int, tuple[GgmlTypeTable, dict[str, GgmlType]]] = {}


@functools.lru_cache(maxsize=4096)
def _memory_model(model_id: str, runtime_id: str, quant_id: str, kv: str) -> MemoryModel | None:
    """search.with_kv of the base memory model, once per (model, runtime, quant, KV type) of a sweep."""
    return with_kv(base_memory_model(model_id, runtime_id, quant_id), kv)


@functools.lru_cache(maxsize=4096)
def _speed_model(model_id: str, runtime_id: str, quant_id: str, kv: str, chip_id: str) -> Roofline | None:
    mm = _memory_model(model_id, runtime_id, quant_id, kv)
    if mm is None:  # the runtime refuses this KV type (_evaluate checks it first)
        return None
    rt = profiles.load_runtime(runtime_id)
    return speed_model(mm, _chip(chip_id), profiles.load_quant(quant_id, rt.weight_format))


@functools.lru_cache(maxsize=64)
def _chip(chip_id: str) -> Chip:
    return profiles.resolve_chip(chip_id)


def _evaluate(m: ModelProfile, rt: Runtime, q: QuantFormat, qn: QualityNote, kv: str, ctx: int, qy: Query,
              wired: WiredLimit, want_speed: bool) -> _Cand | None:
    mm = _memory_model(m.id, rt.id, q.id, kv)
    if mm is None:
        return None
    total = mm.total(ctx, qy.users)
    c = _Cand(m, rt, q, qn, mm, ctx, total, capacity.fit(total, mm.weights.total_bytes, wired, rt), kv)
    if want_speed:
        _add_speed(c, qy)
    return c


def _add_speed(c: _Cand, qy: Query) -> None:
    """The candidate's speed at the asked prompt and generation lengths (none for a no-fit)."""
    if qy.chip is not None and c.fit.verdict != "no-fit":
        rf = _speed_model(c.model.id, c.rt.id, c.quant.id, c.kv, qy.chip.id)
        if rf is not None:
            prompt, gen = point_in_context(qy.prompt_tokens, qy.gen_tokens, c.context)
            # one user: the staggered TTFT equals the batch one (same prompt, batch 1), so skip the second estimate
            share = qy.cached_prefix_share
            c.speed = speed_at(rf, prompt, gen, qy.users, qy.users, qy.users > 1,
                               cached_tokens(prompt, share, c.rt), share)


@functools.lru_cache(maxsize=1024)
def _n_params(model_id: str) -> int:
    """Parameters of a catalog model."""
    from .architecture import n_params

    return n_params(profiles.load_model(model_id).config)


@functools.lru_cache(maxsize=1024)
def _active_params(model_id: str) -> int:
    """Parameters a decoded token touches (asked only with a minimum speed and a chip: decode_ceiling)."""
    from .architecture import active_params

    return active_params(profiles.load_model(model_id).config)


@functools.lru_cache(maxsize=4096)
def weights_floor(model_id: str, runtime_id: str, quant_id: str) -> int:
    """A lower bound on the weight bytes: every parameter at the cheapest storage type the format can assign
    (GGUF: base, expert and rule types of the preset; MLX: its bits plus the per-group scale/bias). [bytes]
    Lets the sweep skip formats that cannot fit without walking their tensors."""
    return int(_n_params(model_id) * _model_floor_bits(model_id, runtime_id, quant_id) / 8)


def _model_floor_bits(model_id: str, runtime_id: str, quant_id: str) -> float:
    """floor_bits_per_weight, also counting the type a model's checkpoint keeps in every GGUF preset
    (ModelProfile.native_quant: gpt-oss's MXFP4 experts, 4.25 bits, under a Q4_K_M's 4.5)."""
    bits = floor_bits_per_weight(runtime_id, quant_id)
    nq = profiles.load_model(model_id).native_quant
    if nq is not None and profiles.load_runtime(runtime_id).weight_format == "gguf":
        tt = _ggml_type(nq.gguf_type)
        if tt is None:
            raise InputError(f"{model_id}: native_quant type {nq.gguf_type!r} is not in the ggml type table "
                             "(profiles/quants/ggml-types.yaml); fix the model profile")
        bits = min(bits, 8 * tt.bytes_per_block / tt.block_size)
    return bits


@functools.lru_cache(maxsize=256)
def floor_bits_per_weight(runtime_id: str, quant_id: str) -> float:
    """Fewest bits any weight can take in this format (see weights_floor) [bits]: a lower bound on the bytes a
    pass reads per parameter, also the calibration data's roofline check (calibration.dataset)."""
    rt = profiles.load_runtime(runtime_id)
    q = profiles.load_quant(quant_id, rt.weight_format)
    if isinstance(rt, MlxRuntime):  # mlx formats load only on mlx-lm
        act = rt.activation_bytes
        if q.mode == "none" or q.bits is None:  # unquantized (quantized formats give bits)
            return 8.0 * act
        bpw = q.bits + 8 * ((q.scale_bytes or 0) + (q.bias_bytes or 0)) / (q.group_size or 64)
        return min(bpw, rt.router_bits + 8 * 2 * act / 64)  # MoE routers: router_bits, group 64 (mlx_weights)
    types = {t.name: t for t in profiles.ggml_types().types}
    names = {q.base_type, q.expert_type} - {None}
    for r in q.rules:  # in order (llama-quant.cpp: later wins); a rule fires only on a type it can meet
        if r.if_type_in is None or names & set(r.if_type_in):
            names.add(r.type)
    return min(8 * types[t].bytes_per_block / types[t].block_size for t in names if t in types)


def decode_ceiling(model_id: str, runtime_id: str, quant_id: str, chip: Chip) -> float:
    """An upper bound on decode tok/s for one user: peak bandwidth over the fewest bytes a token can read (the
    active parameters at the format's cheapest type, no KV). [tok/s] Skips formats too slow for the minimum tok/s."""
    from .throughput import bandwidth

    active = _active_params(model_id) * _model_floor_bits(model_id, runtime_id, quant_id) / 8
    return bandwidth(chip) / active if active > 0 else float("inf")


def best_for_runtime(m: ModelProfile, rt: Runtime, qy: Query, wired: WiredLimit, want_speed: bool,
                     count: list[int]) -> _Cand | None:
    """Highest-quality configuration that meets the minimum tok/s and fits comfortably; else the best 'tight' one, else
    the best that needs the limit raised; else the fastest that fits; else the smallest evaluated (no-fit).
    8/16-bit KV before 4-bit KV (advice.KV_RANK: a quality cost). None: no format of this runtime can fit (its
    weights alone exceed the highest GPU limit)."""
    ctx = min(qy.context, m.config.max_position_embeddings)
    order = [x for x in ordered_quants(m.id, rt.id) if weights_floor(m.id, rt.id, x[0].id) <= wired.max_raise_bytes]
    kvs = [k for k in rt.advised_kv_types if k not in KV_RANK]
    found: dict[str, _Cand] = {}
    chip = qy.chip if want_speed else None  # want_speed: a chip was given (and speed constants exist)
    # without a minimum speed no choice within a runtime reads the speed: what_runs adds it to the candidates that
    # can still win across runtimes (_speeds_for_choice)
    eager = want_speed and bool(qy.min_tok_s)
    if qy.min_tok_s and chip is not None and "embedding" not in m.tasks:
        # formats that cannot reach the floor even at peak bandwidth are 'slow' without a speed estimate; if no
        # format can, the one with the highest ceiling is evaluated as the closest
        ceil = {q.id: decode_ceiling(m.id, rt.id, q.id, chip) for q, _ in order}
        fast = [x for x in order if ceil[x[0].id] >= qy.min_tok_s]
        order = fast or sorted(order, key=lambda x: -ceil[x[0].id])[:2]
    for kv_pass in (kvs, [k for k in rt.advised_kv_types if k in KV_RANK]):
        for q, qn in order:
            for kv in kv_pass:
                c = _evaluate(m, rt, q, qn, kv, ctx, qy, wired, eager)
                count[0] += 1
                if c is None:
                    continue
                slow = bool(qy.min_tok_s and c.decode is not None and "embedding" not in m.tasks
                            and c.decode < qy.min_tok_s)
                cls = "no-fit" if c.fit.verdict == "no-fit" else "slow" if slow else c.fit.verdict
                if cls == "fits":
                    return c
                old = found.get(cls)
                if (old is None or (cls == "no-fit" and c.total < old.total)
                        or (cls == "slow" and (c.decode or 0.0) > (old.decode or 0.0))):  # slow: both have one
                    found[cls] = c
    return next((found[k] for k in ("tight", "raise-limit", "slow", "no-fit") if k in found), None)


def _speeds_for_choice(cands: list[_Cand], qy: Query, notes: list[str]) -> list[_Cand]:
    """Without a minimum speed, _choose reads the speed only to order candidates that tie on (fits in memory, quant
    quality tier): add it to those that tie with the best, the only ones that can be chosen. A candidate whose
    speed fails is dropped with a note, as best_for_runtime's failures are."""
    def head(c: _Cand) -> tuple[bool, int]:
        return (c.fit.verdict == "no-fit", TIER_ORDER[c.qn.tier])
    while cands:
        best = min(head(c) for c in cands)
        failed = False
        for c in [c for c in cands if head(c) == best and c.speed is None]:
            try:
                _add_speed(c, qy)
            except PlannerError as e:
                notes.append(f"{c.model.id} on {c.rt.id}: {e}")
                cands = [x for x in cands if x is not c]
                failed = True
        if not failed:
            break
    return cands


def _choose(cands: list[_Cand], qy: Query) -> _Cand:
    """Across runtimes: meets the asked speed first, then quant quality tier, faster decode, more memory left."""
    def key(c: _Cand) -> tuple[float, ...]:
        slow = bool(qy.min_tok_s and c.decode is not None and "embedding" not in c.model.tasks
                    and c.decode < qy.min_tok_s)
        return (c.fit.verdict == "no-fit", slow, TIER_ORDER[c.qn.tier], -(c.decode or 0.0), c.total)
    return min(cands, key=key)


# --------------------------------------------------------------------------- catalog selection
def resolve_chip_for_ram(name: str, ram_gb: float | None, gpu_cores: int | None = None) -> Chip:
    """Chip 'M4 Max' with 64 GB: the bin the deployment stage resolves (planner.deployment.resolve_bin)."""
    return resolve_bin(name, gpu_cores, ram_gb)[0]


def select(qy: Query) -> tuple[list[ModelProfile], dict[str, int]]:
    """Catalog models passing the task, family and largest-size filters; the rest counted by reason."""
    if qy.task is not None and qy.task not in TASKS:
        raise InputError(f"[[task]] {qy.task!r}: choose one of {', '.join(TASKS)}")
    models = profiles.all_models()
    families = sorted({m.family for m in models if m.family})
    if qy.family is not None and profiles.norm(qy.family) not in {profiles.norm(f) for f in families}:
        raise InputError(f"[[family]] {qy.family!r} is not in the catalog; known: {', '.join(families) or 'none yet'}")
    if qy.max_params_b is not None and not 0 < qy.max_params_b < float("inf"):  # nan passed every model
        raise InputError(f"[[max_params]] {qy.max_params_b:g}: give a positive size in billions, e.g. [[max_params]] 14")
    out: list[ModelProfile] = []
    excluded: Counter[str] = Counter()
    for m in models:
        if qy.task is not None and qy.task not in m.tasks:
            excluded[f"not tagged {qy.task}"] += 1
        elif qy.family is not None and profiles.norm(m.family or "") != profiles.norm(qy.family):
            excluded[f"not {qy.family}"] += 1
        elif qy.max_params_b is not None and m.params_b > qy.max_params_b:
            excluded[f"over {qy.max_params_b:g} B params"] += 1
        else:
            out.append(m)
    if not out and qy.max_params_b is not None:
        smallest = min((m for m in models if qy.task is None or qy.task in m.tasks), key=lambda m: m.params_b,
                       default=None)
        if smallest is not None and smallest.params_b > qy.max_params_b:
            raise InputError(f"[[max_params]] {qy.max_params_b:g} binds: the smallest matching model is "
                             f"{smallest.id} at {smallest.params_b:g} B; raise it to {smallest.params_b:g}")
    return out, dict(excluded)


def quality_basis(models: list[ModelProfile]) -> str | None:
    """The benchmark most scored catalog models report (the one generative models are ranked on)."""
    c = Counter(m.quality.benchmark for m in models if m.quality is not None)
    return c.most_common(1)[0][0] if c else None


# --------------------------------------------------------------------------- the sweep
def what_runs(qy: Query) -> ModelsResult:
    """Catalog models that run on the Mac of ``qy``, best first (see the module docstring for the rules)."""
    _check(qy)
    shrunk = shrink_point(qy.prompt_tokens, qy.gen_tokens, qy.context)  # the lengths not given, into the context
    if shrunk is not None:
        qy = dataclasses.replace(qy, prompt_tokens=shrunk[0], gen_tokens=shrunk[1])
    held, short = capacity.hold_request(qy.context, qy.prompt_tokens, qy.gen_tokens, MAX_TOKENS)  # as plan
    if short is not None:  # each model then at most its maximum (best_for_runtime), as before
        qy = dataclasses.replace(qy, context=held)
    mac_os = profiles.load_macos(qy.macos)
    wired = capacity.wired_limit(qy.ram_gb, mac_os)
    rts = [profiles.load_runtime(r) for r in (qy.runtimes or DEFAULT_RUNTIMES)]
    want_speed = qy.chip is not None and speed_available() and qy.chip.memory_bandwidth_gb_s is not None
    models, excluded = select(qy)
    excluded = Counter(excluded)
    count, chosen, notes = [0], [], [n for n in (shrunk[2] if shrunk else None, short) if n]
    for m in models:
        cands = []
        for rt in rts:
            try:
                c = best_for_runtime(m, rt, qy, wired, want_speed, count)
            except PlannerError as e:
                notes.append(f"{m.id} on {rt.id}: {e.template}")  # inputs kept by key
                continue
            if c is not None:
                cands.append(c)
        if cands and want_speed and not qy.min_tok_s:
            cands = _speeds_for_choice(cands, qy, notes)
        if cands:
            chosen.append(_choose(cands, qy))
        else:
            excluded["too large: weights alone exceed the highest GPU limit"] += 1
    gen = [c for c in chosen if "embedding" not in c.model.tasks]
    emb = [c for c in chosen if "embedding" in c.model.tasks]
    basis, ebasis = quality_basis([c.model for c in gen]), quality_basis([c.model for c in emb])
    rows = [_row(c, qy, wired, basis) for c in gen]
    erows = [_row(c, qy, wired, ebasis) for c in emb]
    shown = rows or erows   # generative models when any were selected, else the embedding ones
    best_effort = bool(shown) and not any(r.meets for r in shown)
    binding = _binding(shown, qy, wired) if best_effort else []
    if not best_effort:
        excluded[f"too large for {qy.users} × {qy.context:,} tokens"] = sum(r.verdict == "no-fit" for r in rows + erows)
        rows, erows = [r for r in rows if r.verdict != "no-fit"], [r for r in erows if r.verdict != "no-fit"]
    notes = _notes(rows, erows, basis, ebasis, qy, want_speed) + notes
    return ModelsResult(
        ram_gb=qy.ram_gb, chip=qy.chip.id if qy.chip else None,
        chip_label=qy.chip.label if qy.chip else None, wired_limit_bytes=wired.effective_bytes,
        context=qy.context, users=qy.users, min_tok_s=qy.min_tok_s, prompt_tokens=qy.prompt_tokens,
        gen_tokens=qy.gen_tokens, cached_prefix_share=qy.cached_prefix_share,
        quality_basis=_basis_text(basis, ebasis), rows=_rank(rows, best_effort), embedding_rows=_rank(erows, best_effort),
        best_effort=best_effort, binding=binding, excluded={k: v for k, v in excluded.items() if v},
        evaluated=count[0], notes=notes)


def _check(qy: Query) -> None:
    profiles.ram_gb_valid(qy.ram_gb)
    if qy.chip is not None:
        check_ram(qy.chip, qy.ram_gb)  # refuses sizes outside the chip's range; the rest are answered as given
    if not 0 < qy.context <= 10_000_000:
        raise InputError(f"[[context]] {qy.context}: give tokens per user between 1 and 10,000,000, e.g. [[context]] 8192")
    if not 0 < qy.users <= capacity.MAX_USERS:
        raise InputError(f"[[users]] {qy.users}: give 1 to {capacity.MAX_USERS} concurrent users")
    if qy.min_tok_s is not None and qy.min_tok_s <= 0:
        raise InputError(f"[[min_tok_s]] {qy.min_tok_s:g}: give a positive speed, e.g. [[min_tok_s]] 20")


def _row(c: _Cand, qy: Query, wired: WiredLimit, basis: str | None) -> ModelRow:
    m, rt, sp = c.model, c.rt, c.speed
    max_pos = m.config.max_position_embeddings
    limit = wired if c.fit.verdict != "raise-limit" else capacity.wired_limit(
        qy.ram_gb, profiles.load_macos(qy.macos), wired.max_raise_bytes // (1 << 20))
    # 'tight' rows use the whole limit (they are over the runtime margin already), the others keep the margin
    budget = limit.effective_bytes if c.fit.verdict == "tight" else capacity.safe_budget(limit, rt)
    misses = []
    if qy.context > max_pos:
        misses.append(f"context: the model's maximum is {max_pos:,} < {qy.context:,} asked")
    if c.fit.verdict == "raise-limit":
        misses.append(f"memory: {c.total / 2**30:.1f} GiB is over the {wired.effective_bytes / 2**30:.1f} GiB GPU "
                      f"limit; runs after {capacity.sysctl_for(c.total, rt)}")
    if c.fit.verdict == "no-fit":
        misses.append(f"memory: needs {c.total / 2**30:.1f} GiB, the GPU limit is {wired.effective_bytes / 2**30:.1f} "
                      f"GiB ({wired.max_raise_bytes / 2**30:.1f} GiB raised)")
    if qy.min_tok_s and sp is not None and "embedding" not in m.tasks and sp.decode_tok_s_per_user < qy.min_tok_s:
        misses.append(f"speed: {sp.decode_tok_s_per_user:.1f} < {qy.min_tok_s:g} tok/s per user")
    scored = m.quality is not None and m.quality.benchmark == basis
    return ModelRow(
        rank=0, model=m.id, name=m.name, family=m.family, tasks=list(m.tasks), params_b=m.params_b, runtime=rt.id,
        quant=c.quant.id, quant_quality=c.qn.tier, kv_type=c.mm.kv.kv_type, verdict=c.fit.verdict,
        memory_bytes=c.total, memory_left_bytes=wired.effective_bytes - c.total, context=c.context,
        max_context=capacity.max_context(c.mm, qy.users, budget, max_pos), max_users=capacity.safe_users(c.mm, c.context, budget),
        decode_tok_s_per_user=sp.decode_tok_s_per_user if sp else None, decode_tok_s_range=_range(sp, "decode_tok_s_range"),
        prefill_tok_s=sp.prefill_tok_s if sp else None, ttft_s=sp.ttft_s if sp else None,
        prefill_tok_s_range=_range(sp, "prefill_tok_s_range"),
        score=m.quality.score if scored and m.quality else None, benchmark=m.quality.benchmark if m.quality else None,
        score_source=m.quality.source if m.quality else None,
        score_caveats=list(m.quality.caveats) if scored and m.quality else [], meets=not misses, misses=misses)


def _range(sp: Speed | None, name: str) -> tuple[float, float] | None:
    r = getattr(sp, name, None) if sp is not None else None
    return (float(r[0]), float(r[1])) if r is not None else None


def rank_key(r: ModelRow) -> tuple[float, ...]:
    """Meets the asked speed, context and memory (under the default GPU limit), scored on the common benchmark,
    not at a quant with a large quality cost (advice.quality_of tier 'large': the score no longer describes it),
    higher score, better quant, faster, more memory left."""
    return (not r.meets, r.score is None, r.quant_quality == "large", -(r.score or 0.0), TIER_ORDER[r.quant_quality],
            -(r.decode_tok_s_per_user or 0.0), -r.memory_left_bytes)


def _closeness(r: ModelRow) -> tuple[float, ...]:
    """Best effort order: runs in memory, fewest misses, fastest, smallest."""
    return (r.verdict == "no-fit", len(r.misses), -(r.decode_tok_s_per_user or 0.0), r.memory_bytes)


def _rank(rows: list[ModelRow], best_effort: bool) -> list[ModelRow]:
    ordered = sorted(rows, key=_closeness if best_effort else rank_key)
    return [r.model_copy(update={"rank": i + 1}) for i, r in enumerate(ordered)]


def _binding(rows: list[ModelRow], qy: Query, wired: WiredLimit) -> list[str]:
    """Nothing meets the filters: which one binds, by how much, and what would change it."""
    out = []
    fitting = [r for r in rows if r.verdict != "no-fit"]
    in_ctx = [r for r in rows if not any(m.startswith("context") for m in r.misses)]
    if not in_ctx:
        top = max(rows, key=lambda r: r.max_context if r.verdict != "no-fit" else 0)
        longest = max(profiles.load_model(r.model).config.max_position_embeddings for r in rows)
        out.append(f"[[context]] {qy.context:,} binds: the longest any selected model supports is {longest:,} tokens"
                   f" ({top.model} fits {top.max_context:,} here); lower [[context]] to {longest:,}")
    if not fitting:
        needs = [(need_of(profiles.load_runtime(r.runtime), r.quant, r.kv_type, qy.users, r.context, r.memory_bytes),
                  r.model) for r in rows]
        need, model = min(needs, key=lambda x: x[0].with_margin())
        out.append(f"memory binds at {qy.users} × {need.context:,} tokens: {model}, {over_text(need, wired)}; "
                   "lower [[context]] or [[users]], or more RAM")
    fast = [(r.decode_tok_s_per_user, r) for r in fitting if r.decode_tok_s_per_user is not None and "embedding" not in r.tasks]
    if qy.min_tok_s and fast:
        tok_s, best = max(fast, key=lambda t: t[0])
        if tok_s < qy.min_tok_s:
            out.append(f"[[min_tok_s]] {qy.min_tok_s:g} binds: the fastest model that fits, {best.model} "
                       f"({best.runtime} {best.quant}), reaches {tok_s:.1f} tok/s per user, "
                       f"{1 - tok_s / qy.min_tok_s:.0%} short; lower [[min_tok_s]] to "
                       f"{int(tok_s)}, or fewer [[users]], or a faster chip")
    return out or ["no model meets every filter at once; the closest are shown"]


def _basis_text(basis: str | None, ebasis: str | None) -> str:
    parts = []
    if basis:
        parts.append(f"quality = the {basis} score (%) published for each model (source on each profile; [[json]] "
                     "lists it), not parameter count")
    else:
        parts.append("quality = no published benchmark score in the catalog yet: ranked by quant quality, speed, "
                     "then memory left")
    if ebasis:
        parts.append(f"embedding models ranked among themselves on {ebasis}")
    return "; ".join(parts)


def _notes(rows: list[ModelRow], erows: list[ModelRow], basis: str | None, ebasis: str | None, qy: Query,
           want_speed: bool) -> list[str]:
    notes = []
    unscored = [r for r in rows if r.score is None]
    if unscored and basis:
        notes.append(f"{len(unscored)} model(s) have no published {basis} score in the catalog: listed after the "
                     "scored ones (no score to compare, not a worse one)")
    eun = [r for r in erows if r.score is None]
    if eun and ebasis:
        notes.append(f"{len(eun)} embedding model(s) have no published {ebasis} score: listed after the scored ones")
    if qy.chip is None:
        notes.append("speed needs a chip: add [[chip]] (e.g. [[chip]] 'M4 Max') for decode and prefill speed; "
                     "ranked on quality, then memory left")
    elif not want_speed:
        notes.append(f"{qy.chip.label}: no speed model (bandwidth unpublished); ranked on quality and memory")
    if qy.users > 1:
        notes.append(f"speeds are per user with {qy.users} users decoding together")
    return notes


def clear_cache() -> None:
    """Forget the per-model caches (after profiles.clear_cache(), e.g. a new user profile folder)."""
    for f in (ordered_quants, weights_floor, floor_bits_per_weight, _n_params, _active_params, _speed_model, _chip,
              base_memory_model, _format_quality, _memory_model):
        f.cache_clear()
