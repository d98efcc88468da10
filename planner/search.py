"""Candidate enumeration shared by recommend, buy and models: which quants, KV types and slot counts to try for a
(model, runtime), the memory model of each, and the speed adapter that evaluates one operating point.

Memory comes from planner.memory and planner.capacity; speed from planner.throughput's roofline behind
:func:`speed_model` / :func:`speed_at`, so no caller restates a speed formula.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, overload

from . import profiles
from .errors import InputError, PlannerError
from .memory import MemoryModel, check_kv_type, kv_alias, kv_layout, memory_model
from .plan import default_quants
from .results import SmallestNeed
from .results import Speed as Speed  # re-exported: planner.search.Speed
from .schema import Chip, ModelProfile, QuantFormat, Runtime
from .units import MiB

if TYPE_CHECKING:  # numpy and throughput are imported where a speed is asked for
    import numpy as np

    from .speed_schema import ResolvedSpeedConstants
    from .throughput import Geometry, Roofline

SLOT_CHOICES = [1, 2, 4, 8, 16, 32, 64]


# --------------------------------------------------------------------------- speed adapter
# Speed (what advice needs from the speed model) is defined in planner/results.py: a module without postponed
# annotations, so pydantic does not compile each field's annotation string at start-up


def speed_available() -> bool:
    try:
        from . import throughput  # noqa: F401
    except ImportError:
        return False
    return True


def _constants(chip_id: str, runtime_id: str) -> ResolvedSpeedConstants:
    # profiles.load_speed_constants caches (and profiles.clear_cache() resets it after a user calibration)
    return profiles.load_speed_constants(profiles.resolve_chip(chip_id), runtime_id)


def speed_model(mm: MemoryModel, chip: Chip, quant: QuantFormat, geo: Geometry | None = None) -> Roofline | None:
    """The roofline for (chip, runtime, model, quant, kv); None when no speed can be predicted
    (throughput not installed, or a chip without bandwidth). ``geo``: the model's throughput.geometry for this
    memory model and quant, when the caller already has it (it walks every tensor; a sweep builds it once)."""
    if not speed_available() or chip.memory_bandwidth_gb_s is None:
        return None
    from . import throughput as tp

    try:
        geo = geo or tp.geometry(mm, quant.kind, quant.mode)
        return tp.roofline_for(mm, chip, _constants(chip.id, mm.runtime.id), geo, profiles.all_chips())
    except PlannerError:
        return None


@overload
def queue(ttft: float, t_req: float, per_user: float, slots: int, users: int) -> tuple[float, float, float]: ...
@overload
def queue(ttft: np.ndarray, t_req: np.ndarray, per_user: np.ndarray, slots: np.ndarray,
          users: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
def queue(ttft: Any, t_req: Any, per_user: Any, slots: Any, users: int) -> tuple[Any, Any, Any]:
    """``users`` users on ``slots`` parallel sequences: the one queueing rule (scalars or numpy arrays).

    Users beyond the slots wait for a free one: ceil(users / slots) waves, on average half a request of waiting
    per extra wave; each user gets slots/users of the decode time (time-shared). Returns (ttft, t_req, per_user)."""
    b = min(slots, users) if isinstance(slots, int) else slots.clip(max=users)
    waves = -(-users // b)                          # ceil: 3 users on 2 slots are 2 waves, not 1
    wait = (waves - 1) * t_req / 2
    return ttft + wait, t_req + wait, per_user * b / users


def speed_at(rf: Roofline, prompt: int, gen: int, slots: int, users: int, staggered: bool, cached: int = 0,
             share: float = 0.0) -> Speed:
    """Speed of ``users`` users served by ``slots`` parallel sequences (slots ≤ users queue, time-shared).

    staggered: prompts arrive one at a time (interactive use), so TTFT is one prompt's prefill while the others
    decode; otherwise (batch jobs) the prompts of a full batch are prefilled together.
    cached: leading prompt tokens already in the server's prompt cache (a chat's history): only the rest is
    prefilled, on top of them (llama.cpp tools/server/server-context.cpp: n_past = get_common_prefix(...) when
    cache_prompt, default true in server-task.h; mlx_lm/server.py: prompt_cache.fetch_nearest_cache), from
    planner/workload.py cached_tokens; ``share``: the cached-prefix share it came from, stated with the TTFT."""
    from . import throughput as tp

    b = min(slots, users)
    new = prompt - min(max(cached, 0), prompt)
    e = tp.estimate(rf, new, gen, prompt - new, b, knee=False)
    ttft = tp.estimate(rf, new, 1, prompt - new, 1, knee=False).ttft_s if staggered else e.ttft_s
    t_req = e.time_per_request_s - e.ttft_s + ttft
    ttft, t_req, per_user = queue(ttft, t_req, e.decode_tok_s_per_seq, b, users)
    # the range scales with the point estimate: queueing divides both ends by the same users / slots
    lo, hi = e.decode_tok_s_range
    scale = per_user / e.decode_tok_s_per_seq if e.decode_tok_s_per_seq else 0.0
    return Speed(prefill_tok_s=e.prefill_tok_s, ttft_s=ttft, decode_tok_s_per_user=per_user,
                 decode_tok_s=e.decode_tok_s, decode_tok_s_range=(lo * scale, hi * scale),
                 prefill_tok_s_range=e.prefill_tok_s_range, time_per_request_s=t_req, decode_bound=e.bound,
                 prefill_share=min(1.0, ttft / t_req) if t_req > 0 else 0.0, cached_prefix_share=share,
                 calibration=e.calibration)


# --------------------------------------------------------------------------- memory helpers
@functools.lru_cache(maxsize=4096)  # a catalog sweep (plan models) touches ~300
def base_memory_model(model_id: str, runtime_id: str, quant_id: str, flash_attn: bool | None = None,
                      n_ubatch: int | None = None) -> MemoryModel:
    model = profiles.load_model(model_id)
    rt = profiles.load_runtime(runtime_id)
    q = profiles.load_quant(quant_id, rt.weight_format)
    return memory_model(model, rt, q, profiles.ggml_types(), flash_attn=flash_attn, n_ubatch=n_ubatch)


def with_kv(mm: MemoryModel, kv_type: str) -> MemoryModel | None:
    """Same weights, another KV type (None if the runtime/model refuses it)."""
    try:
        k = check_kv_type(kv_type, mm.runtime, mm.model)
    except InputError:
        return None
    if k == mm.kv.kv_type:
        return mm
    if mm.engine.quantized_v_needs_flash(k) and not mm.flash_attn:
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
    return default_quants(model, rt.weight_format)


def kv_types_for(rt: Runtime, kv_type: str | None = None) -> list[str]:
    """The KV types a search tries: the asked one in the runtime's spelling (its default where it has none of the
    kind, as planner.plan answers an asked KV type), else every type the runtime advises."""
    if kv_type is None:
        return list(rt.advised_kv_types)
    own = kv_alias(kv_type, rt)
    return [own if own in rt.kv_types else rt.default_kv_type]


def smallest_need(mms: Iterable[MemoryModel], context: int, users: int,
                  kv_type: str | None = None) -> SmallestNeed | None:
    """The closest a command comes when nothing fits: of the memory models it evaluated, at each KV type its
    runtime may use for ``users`` sequences (kv_types_for; mlx-lm's quantized KV serves one), the configuration
    needing the least memory with its runtime's margin (what capacity.fit compares with the raised limit).
    One rule for plan and recommend: both name this figure and its KV type."""
    best: SmallestNeed | None = None
    for base in mms:
        for kv in kv_types_for(base.runtime, kv_type):
            mm = with_kv(base, kv)
            if mm is None or (users > 1 and mm.engine.max_slots(mm.kv.kv_type) == 1):
                continue
            need = need_of(mm.runtime, mm.quant_id, mm.kv.kv_type, users, context, mm.total(context, users))
            if best is None or need.with_margin() < best.with_margin():
                best = need
    return best


def need_of(rt: Runtime, quant: str, kv_type: str, users: int, context: int, total: int) -> SmallestNeed:
    """A configuration's need with its runtime's margin (capacity.fit's Runtime.headroom_mib)."""
    return SmallestNeed(runtime=rt.id, quant=quant, kv_type=kv_type, users=users, context=context,
                        memory_bytes=total, margin_bytes=int(rt.headroom_mib * MiB))


def slot_choices(rt: Runtime, mm: MemoryModel, users: int) -> list[int]:
    """Parallel-sequence counts to try: powers of two up to the users, and the users themselves."""
    if mm.engine.max_slots(mm.kv.kv_type) == 1:
        return [1]  # mlx_lm.server --kv-bits disables batching (Engine.max_slots)
    app = profiles.serving_app_of(rt.id)
    if app is not None and app.one_at_a_time(mm.model.id, mm.model.config.model_type):
        return [1]  # e.g. Ollama serves qwen3-next one request at a time (profiles/serving/ollama.yaml)
    return sorted({s for s in SLOT_CHOICES if s <= users} | {users})


def candidates(model: ModelProfile, runtimes: list[Runtime], quants: list[str] | None,
               users: int, kv_type: str | None = None, flash_attn: bool | None = None,
               n_ubatch: int | None = None, images: int = 0) -> Iterator[tuple[Runtime, QuantFormat, MemoryModel, int]]:
    """Every (runtime, quant, memory model with its KV type, slots) that recommend evaluates, in search order;
    ``kv_type`` pins the KV type (the runtime's spelling of it, else its default, as planner.plan does);
    ``flash_attn`` / ``n_ubatch``: llama.cpp's -fa / -ub (None: the runtime's defaults); ``images`` per request:
    the projector is counted (MemoryModel.with_images)."""
    for rt in runtimes:
        for q in quants_for(model, rt, quants):
            base = base_memory_model(model.id, rt.id, q.id, flash_attn, n_ubatch).with_images(images)
            for kv in kv_types_for(rt, kv_type):
                mm = with_kv(base, kv)
                if mm is None:
                    continue
                for slots in slot_choices(rt, mm, users):
                    yield rt, q, mm, slots
