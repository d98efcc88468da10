"""Speed-model schemas: calibration profiles (profiles/calibration/*.yaml) and the throughput result.

A calibration profile holds fitted roofline efficiencies for one *scope* (``default``, ``gen-M3``, ``tier-max``,
a chip id such as ``m2-ultra-76gpu``) and one runtime. Every field is optional except in ``default``: profiles are
merged from the most generic to the most specific (see :func:`planner.profiles.load_speed_constants`).
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Strict = ConfigDict(extra="forbid", frozen=True, defer_build=True)

QUANT_CLASSES = ("float", "legacy", "kquant", "iquant", "mxfp4", "affine", "fp4")


class Provenance(BaseModel):
    model_config = Strict
    method: str = Field(description="How the numbers were obtained (fit, prior, user calibration)")
    fitted_on: date | None = Field(None, description="Date of the fit")
    rows: int = Field(0, ge=0, description="Measurements used by the fit that informs this scope")
    data: str = Field("", description="Data set (file, commit or user run store)")
    residuals: dict[str, float] = Field(default_factory=dict, description="In-sample errors, e.g. decode_mape [%]")
    notes: str = ""


class SpeedConstants(BaseModel):
    """Roofline efficiencies of one runtime on one chip class; None = inherit from a more generic scope."""

    model_config = Strict
    eta_bw: float | None = Field(None, gt=0, le=1, description="Achieved / peak memory bandwidth in decode [1]")
    eta_c: float | None = Field(None, gt=0, le=1, description="Achieved / peak FLOPS of prefill matmuls (float weights) [1]")
    eta_attn: float | None = Field(None, gt=0, le=1, description="Achieved / peak FLOPS of attention (flash) [1]")
    eta_c_decode: float | None = Field(None, gt=0, le=1, description="Batched-decode matrix-matrix efficiency (B > mv_max_batch) relative to the prefill eta_c × "
                                        "quant_prefill_factor of the same chip and weight class (same kernel_mul_mm, one tile) [1]")
    eta_mv: float | None = Field(None, gt=0, le=1, description="Achieved / peak FLOPS of small-batch matrix-vector kernels [1]")
    mv_max_batch: int | None = Field(None, ge=0, le=256, description="Largest batch served by matrix-vector kernels [tokens]")
    mm_tile: int | None = Field(None, ge=1, le=256, description="Batch tile of the matrix-matrix kernel (batches pad up to it) [tokens]")
    moe_bw_factor: float | None = Field(None, gt=0, le=1, description="Bandwidth efficiency of routed-expert reads relative to dense [1]")
    t_layer_s: float | None = Field(None, ge=0, le=1e-2, description="Fixed cost per layer per forward pass [s]")
    noflash_attn_factor: float | None = Field(None, ge=1, le=20, description="Attention slowdown without flash attention [1]")
    quant_prefill_factor: dict[str, float] | None = Field(
        None, description="Multiplier on eta_c by weight class (dequantization cost in matmuls) [1]")
    matrix_unit_factor: float | None = Field(None, ge=1, le=10, description="Compute speed-up from GPU matrix units (M5) [1]")

    def merged(self, other: SpeedConstants) -> SpeedConstants:
        """self overridden by the non-None fields of other (quant factors merge key by key)."""
        data = self.model_dump()
        for k, v in other.model_dump().items():
            if v is None:
                continue
            if k == "quant_prefill_factor" and data.get(k):
                data[k] = {**data[k], **v}
            else:
                data[k] = v
        return SpeedConstants(**data)

    def missing(self) -> list[str]:
        return [k for k, v in self.model_dump().items() if v is None]


class CalibrationProfile(BaseModel):
    model_config = Strict
    id: str = Field(description="<scope>__<runtime>, equal to the file name")
    scope: str = Field(description="default | gen-<M1..M5> | tier-<base|pro|max|ultra> | <chip id>")
    runtime: Literal["llama.cpp", "mlx-lm", "ollama"]
    constants: SpeedConstants
    provenance: Provenance


class ResolvedSpeedConstants(BaseModel):
    """Constants with every field set, and a sentence saying where they came from."""

    model_config = Strict
    constants: SpeedConstants
    source: str
    scopes: list[str] = Field(description="Profiles merged, generic first")


Bound = Literal["bandwidth", "compute"]


class ThroughputEstimate(BaseModel):
    """Speed of one (chip, runtime, model, quant) at one workload. Rates are tokens per second."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    prefill_tok_s: float = Field(description="Prompt tokens processed per second, all sequences together [tok/s]")
    ttft_s: float = Field(description="Time to first token: prefill of the prompts plus one decode step [s]")
    decode_tok_s: float = Field(description="Generated tokens per second, all sequences together [tok/s]")
    decode_tok_s_per_seq: float = Field(description="Generated tokens per second seen by one sequence [tok/s]")
    time_per_request_s: float = Field(description="TTFT + generation of G tokens [s]")
    bound: Bound = Field(description="What limits decode at this batch: memory bandwidth or compute")
    prefill_bound: Bound = "compute"
    bytes_per_step: int = Field(description="Bytes read by one decode step of the whole batch at the start depth [bytes]")
    flops_per_token: float = Field(description="FLOPs per generated token at the start depth [FLOP]")
    decode_ceiling_tok_s: float = Field(description="Bandwidth / bytes per step: the physical per-sequence limit [tok/s]")
    knee_batch: int | None = Field(None, description="Smallest batch at which decode turns compute-bound (None: > 4096)")
    batch: int = 1
    prompt_tokens: int = 0
    gen_tokens: int = 0
    depth: int = 0
    peak_flops: float = Field(description="Peak GPU FLOPS used (matrix units included) [FLOP/s]")
    bandwidth_bytes_s: float = Field(description="Vendor memory bandwidth [bytes/s]")
    calibration: str = Field(description="Where the efficiencies come from")
    notes: list[str] = Field(default_factory=list)


class SpeedSummary(BaseModel):
    """Speed columns of one plan option: prefill/TTFT at the workload's prompt, decode at 1..N users."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    prompt_tokens: int
    gen_tokens: int
    prefill_tok_s: float = Field(description="Prefill of one prompt [tok/s]")
    ttft_s: float = Field(description="Time to first token for one prompt [s]")
    time_per_request_s: float = Field(description="TTFT + generation, one user [s]")
    decode_tok_s_per_seq: dict[int, float] = Field(description="Decode speed seen by each user, by concurrent users")
    decode_tok_s_total: dict[int, float] = Field(description="Decode speed of all users together, by concurrent users")
    bound: dict[int, Bound] = Field(description="Decode bound by concurrent users")
    knee_batch: int | None = None
    calibration: str = ""
