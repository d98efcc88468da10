"""Profile schemas of the speed calibration (roofline efficiencies by scope) and of the fine-tune model: frozen,
strict pydantic models validated at load time. Split from planner/schema.py (which still exports every name here),
so that a question without a chip does not define these classes."""

from datetime import date
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from ._model import Frozen

# --------------------------------------------------------------------------- speed calibration
# A calibration profile holds fitted roofline efficiencies for one *scope* (``default``, ``gen-M3``, ``tier-max``,
# a chip id) and one runtime; profiles merge from the most generic to the most specific
# (planner.profiles.load_speed_constants).

QUANT_CLASSES = ("float", "legacy", "kquant", "iquant", "mxfp4", "affine", "fp4")


class Provenance(BaseModel):
    model_config = Frozen
    method: str = Field(description="How the numbers were obtained (fit, prior, user calibration)")
    fitted_on: date | None = Field(None, description="Date of the fit")
    rows: int = Field(0, ge=0, description="Measurements used by the fit that informs this scope")
    data: str = Field("", description="Data set (file, commit or user run store)")
    residuals: dict[str, float] = Field({}, description="In-sample errors, e.g. decode_mape [%]")
    notes: str = ""


OPTIONAL_CONSTANTS = ("likely_range", "t_token_host_s", "eta_attn_decode", "server_prefill_factor",
                      "server_decode_factor", "decode_factor", "prefill_factor", "t_moe_layer_s",
                      "t_recurrent_layer_s", "t_wire_s_per_gb", "expert_tile", "expert_tiling",
                      "mm_id_min_rows_per_expert", "expert_tile_wide", "expert_tile_wide_from")


class SpeedConstants(BaseModel):
    """Roofline efficiencies of one runtime on one chip class; None = inherit from a more generic scope."""

    model_config = Frozen
    eta_bw: float | None = Field(None, gt=0, le=1, description="Achieved / peak memory bandwidth in decode [1]")
    eta_c: float | None = Field(None, gt=0, le=1, description="Achieved / peak FLOPS of prefill matmuls (float weights) [1]")
    eta_attn: float | None = Field(None, gt=0, le=1, description="Achieved / peak FLOPS of attention (flash) [1]")
    eta_attn_decode: float | None = Field(
        None, gt=0, le=1, description="Decode attention's FLOP efficiency relative to eta_attn where the engine runs "
                                      "its vector kernel (llama.cpp flash_attn_ext_vec: flash attention and fewer than "
                                      "20 queries per KV stream / ggml-cpu's one-row flash attention, against "
                                      "prefill's tiled kernel); unset = 1, as prefill's; fitted by plan calibrate [1]")
    eta_c_decode: float | None = Field(None, gt=0, le=1, description="Batched-decode matrix-matrix efficiency (B > mv_max_batch) relative to the prefill eta_c × "
                                        "quant_prefill_factor of the same chip and weight class (same kernel_mul_mm, one tile) [1]")
    eta_mv: float | None = Field(None, gt=0, le=1, description="Achieved / peak FLOPS of small-batch matrix-vector kernels [1]")
    eta_kv: float | None = Field(None, gt=0, le=1, description="Decode attention's KV stream efficiency relative to eta_bw "
                                 "(flash-attention vector kernel / mlx sdpa_vector) [1]")
    noflash_kv_factor: float | None = Field(None, ge=1, le=20, description="Decode KV-stream slowdown without flash attention "
                                            "(separate KQ, softmax, KQV kernels) [1]")
    mv_max_batch: int | None = Field(None, ge=0, le=256, description="Largest batch served by matrix-vector kernels [tokens]")
    mm_tile: int | None = Field(None, ge=1, le=256, description="Batch tile of the matrix-matrix kernel (batches pad up to it) [tokens]")
    mm_id_min_batch: int | None = Field(None, ge=1, le=4096, description="Smallest batch whose routed-expert matmuls run the "
                                        "matrix-matrix kernel; below it each (token, expert) pair reads its expert [tokens]")
    expert_tile: int | None = Field(None, ge=1, le=256, description="Row tile of the routed-expert matrix kernel "
                                    "(unset = mm_tile) [tokens]")
    expert_tile_wide: int | None = Field(
        None, ge=1, le=256, description="Row tile of the routed-expert kernel from expert_tile_wide_from rows per "
                                        "expert on (mlx gather_qmm_rhs_nax on GPUs with neural accelerators: 64-row "
                                        "blocks of 32-row simdgroup tiles from M/E >= 64 rows, 32-row blocks of 16 "
                                        "below); unset = expert_tile at every size [tokens]")
    expert_tile_wide_from: float | None = Field(
        None, ge=1, le=4096, description="Average routed rows per expert (tokens · k / experts) from which the "
                                         "routed-expert kernel runs expert_tile_wide [rows]")
    expert_tiling: Literal["per_expert", "segments"] | None = Field(
        None, description="How the routed-expert kernel tiles its rows: per_expert pads each expert's rows to the "
                          "tile (llama.cpp kernel_mul_mm_id), segments runs one full tile per expert segment of each "
                          "block of rows sorted by expert (mlx gather_qmm_rhs); unset = per_expert")
    mm_id_min_rows_per_expert: float | None = Field(
        None, ge=0, le=64, description="Average rows per expert below which the routed experts run per-row vector "
                                       "kernels (mlx GatherQMM: T·k/E >= 4); unset = no such rule [rows]")
    moe_bw_factor: float | None = Field(None, gt=0, le=1, description="Bandwidth efficiency of routed-expert reads relative to dense [1]")
    t_layer_s: float | None = Field(None, ge=0, le=1e-2, description="Fixed cost per layer per forward pass [s]")
    t_moe_layer_s: float | None = Field(
        None, ge=0, le=1e-2, description="Fixed cost per routed-expert (MoE) layer per forward pass on top of "
                                         "t_layer_s: the router, top-k selection, gathered expert matmuls and "
                                         "weighted sum dispatched one after another (unset = 0) [s]")
    t_recurrent_layer_s: float | None = Field(
        None, ge=0, le=1e-2, description="Fixed cost per recurrent layer (gated DeltaNet, Mamba) per forward pass on "
                                         "top of t_layer_s: its conv, norms, gates and state-update kernels "
                                         "dispatched one after another (unset = 0) [s]")
    t_wire_s_per_gb: float | None = Field(
        None, ge=0, le=0.1, description="Time a call of mlx-lm's stream_generate spends making the model's weights "
                                        "resident before its first token, per GB of weights: its wired_limit "
                                        "context raises mlx's wired limit, which adds every weight buffer to the "
                                        "Metal residency set (unset = 0) [s/GB]")
    t_token_host_s: float | None = Field(
        None, ge=0, le=0.1, description="A server's host work per sampled token of each sequence (sampling, "
                                        "streaming), beyond the benchmark's step; measured by plan calibrate [s]")
    server_prefill_factor: float | None = Field(
        None, ge=0.5, le=3, description="A server's prompt phase / the step model's, measured by the server calibration "
                                        "(plan calibrate) on a short burst of real requests (unset = 1) [1]")
    server_decode_factor: float | None = Field(
        None, ge=0.5, le=3, description="A server's decode phase / the step model's with the host work, measured with "
                                        "the prompt factor (unset = 1) [1]")
    noflash_attn_factor: float | None = Field(None, ge=1, le=20, description="Attention slowdown without flash attention [1]")
    decode_factor: float | None = Field(
        None, gt=0, le=1, description="A wrapper's (Ollama, LM Studio) measured decode rate / its engine's predicted "
                                      "one: its own defaults and overhead beyond the engine's step; a wrapper adds "
                                      "work, never removes it (unset = 1) [1]")
    prefill_factor: float | None = Field(
        None, gt=0, le=1, description="The same for prefill (unset = 1) [1]")
    quant_prefill_factor: dict[str, float] | None = Field(
        None, description="Multiplier on eta_c by weight class (dequantization cost in matmuls) [1]")
    matrix_unit_factor: float | None = Field(None, ge=1, le=10, description="Compute speed-up from GPU matrix units (M5) [1]")
    likely_range: dict[str, tuple[float, float]] | None = Field(
        None, description="80 % range of measured / predicted rate by regime (decode, decode_deep, decode_batched, "
                          "prefill, prefill_deep): the 10th and 90th percentile of out-of-source residuals [1]")

    def merged(self, other: "SpeedConstants") -> "SpeedConstants":
        """self overridden by the non-None fields of other (quant factors merge key by key)."""
        data = self.model_dump()
        for k, v in other.model_dump().items():
            if v is None:
                continue
            if k in ("quant_prefill_factor", "likely_range") and data.get(k):
                data[k] = {**data[k], **v}
            else:
                data[k] = v
        return SpeedConstants(**data)

    def missing(self) -> list[str]:
        """Required fields still unset (optional: the likely range, without which a rate has no range, and the
        server host work, 0 where not measured)."""
        return [k for k, v in self.model_dump().items() if v is None and k not in OPTIONAL_CONSTANTS]

    def resolved(self) -> "Constants":
        """These constants as :class:`Constants` (every required field set); a ProfileError names what is unset."""
        missing = self.missing()
        if missing:
            from .errors import ProfileError

            raise ProfileError(f"speed constants lack {', '.join(missing)}; fix profiles/calibration/default__*.yaml")
        return Constants(**self.model_dump())


class Constants(SpeedConstants):
    """SpeedConstants after the scopes are merged (profiles.load_speed_constants): the optional layer read from
    YAML above, resolved here with every field the roofline uses required, so the speed engine (planner.throughput,
    planner.serve_plan) is type-checked without None. Only OPTIONAL_CONSTANTS stay optional."""

    eta_bw: float = Field(gt=0, le=1)
    eta_c: float = Field(gt=0, le=1)
    eta_attn: float = Field(gt=0, le=1)
    eta_c_decode: float = Field(gt=0, le=1)
    eta_mv: float = Field(gt=0, le=1)
    eta_kv: float = Field(gt=0, le=1)
    noflash_kv_factor: float = Field(ge=1, le=20)
    mv_max_batch: int = Field(ge=0, le=256)
    mm_tile: int = Field(ge=1, le=256)
    mm_id_min_batch: int = Field(ge=1, le=4096)
    moe_bw_factor: float = Field(gt=0, le=1)
    t_layer_s: float = Field(ge=0, le=1e-2)
    noflash_attn_factor: float = Field(ge=1, le=20)
    quant_prefill_factor: dict[str, float]
    matrix_unit_factor: float = Field(ge=1, le=10)


class CalibrationProfile(BaseModel):
    model_config = Frozen
    id: str = Field(description="<scope>__<runtime>, equal to the file name")
    scope: str = Field(description="default | gen-<M1..M5> | tier-<base|pro|max|ultra> | <chip id>")
    runtime: Literal["llama.cpp", "mlx-lm", "ollama", "lmstudio-llama.cpp", "lmstudio-mlx"]
    constants: SpeedConstants
    provenance: Provenance


class ResolvedSpeedConstants(BaseModel):
    """Constants with every field set, and a sentence saying where they came from."""

    model_config = Frozen
    constants: Constants
    source: str
    scopes: list[str] = Field(description="Profiles merged, generic first")

    @field_validator("constants", mode="before")
    @classmethod
    def _resolve(cls, v: object) -> object:
        """A SpeedConstants with every required field set is accepted as its Constants."""
        if isinstance(v, SpeedConstants) and not isinstance(v, Constants):
            return v.resolved()
        return v


# --------------------------------------------------------------------------- fine-tuning
class FinetuneConstants(BaseModel):
    """Activation coefficients of planner.finetune (copies of a width per token, or per B·heads·S² / B·S·vocab) and
    the training efficiency prior; profiles/finetune/<runtime>.yaml, or a user calibration of the same shape."""

    model_config = Frozen
    id: str = Field(description="Runtime id (mlx-lm)")
    a_hq: float = Field(ge=0, le=100, description="Kept per trained block per token [x (hidden + q + 2 kv)]")
    a_f: float = Field(ge=0, le=100, description="Kept per trained block per token [x ffn]")
    a_s: float = Field(ge=0, le=100, description="One block's attention backward [x B·heads·S²]")
    a_v: float = Field(ge=0, le=100, description="Logits, log-softmax and gradient [x B·S·vocab]")
    a_frozen: float = Field(ge=0, le=100, description="Frozen blocks below the trained ones [x hidden per token]")
    c_hq: float = Field(ge=0, le=100, description="Checkpointing: rebuilt block with gradients [x (h + q + 2 kv)]")
    c_f: float = Field(ge=0, le=100, description="Checkpointing: rebuilt block with gradients [x ffn]")
    c_s: float = Field(ge=0, le=100, description="Checkpointing: rebuilt block's attention [x B·heads·S²]")
    train_efficiency: float = Field(gt=0, le=1, description="Training matmuls vs the prefill efficiency [1]")
    band_pct: float = Field(10.0, ge=0, le=100, description="Likely error of the peak [± %]: the largest residual "
                            "of the fit and of the public Metal logs (python -m calibration.finetune_report)")
    provenance: Provenance
