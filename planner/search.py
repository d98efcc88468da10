"""Candidate enumeration shared by recommend, buy and models: which quants, KV types and slot counts to try for a
(model, runtime), the memory model of each, and the speed adapter that evaluates one operating point.

Memory comes from planner.memory and planner.capacity; speed from planner.throughput's roofline behind
:func:`speed_model` / :func:`speed_at`, so no caller restates a speed formula.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Literal

from pydantic import BaseModel, Field

from . import profiles
from ._model import Frozen
from .errors import InputError, PlannerError
from .memory import MemoryModel, check_kv_type, kv_layout, memory_model
from .plan import DEFAULT_QUANTS
from .schema import Chip, ModelProfile, QuantFormat, Runtime

SLOT_CHOICES = [1, 2, 4, 8, 16, 32, 64]


# --------------------------------------------------------------------------- speed adapter
class Speed(BaseModel):
    """What advice needs from the speed model at one operating point. Rates in tokens/s, times in s."""

    model_config = Frozen
    prefill_tok_s: float
    ttft_s: float
    decode_tok_s_per_user: float
    decode_tok_s: float = Field(description="aggregate over all users")
    decode_range: tuple[float, float] = Field(description="80 % likely range of decode_tok_s_per_user (low, high)")
    prefill_range: tuple[float, float] = Field(description="80 % likely range of prefill_tok_s (low, high)")
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
    """The roofline for (chip, runtime, model, quant, kv); None when no speed can be predicted
    (throughput not installed, or a chip without bandwidth)."""
    if not speed_available() or chip.memory_bandwidth_gb_s is None:
        return None
    from . import throughput as tp

    rt = mm.runtime
    chunk = rt.prefill_chunk
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
    # the range scales with the point estimate: queueing divides both ends by the same users / slots
    lo, hi = e.decode_tok_s_range
    scale = per_user / e.decode_tok_s_per_seq if e.decode_tok_s_per_seq else 0.0
    return Speed(prefill_tok_s=e.prefill_tok_s, ttft_s=ttft, decode_tok_s_per_user=per_user,
                 decode_tok_s=e.decode_tok_s, decode_range=(lo * scale, hi * scale), prefill_range=e.prefill_tok_s_range, time_per_request_s=t_req, decode_bound=e.bound,
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
