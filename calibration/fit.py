"""Fit the roofline efficiencies of planner/throughput.py to measurements, and write profiles/calibration/*.yaml.

``python -m calibration.fit`` regenerates the shipped profiles deterministically from every measured-benchmark CSV
under calibration/data (:func:`training_files`: measured_benchmarks_train.csv, measured_benchmarks_mlx.csv and any new
file with the same columns), filtered by ``calibration.dataset.usable_for_efficiency``.

Sources, not rows: every ``source_group`` counts once per phase (:func:`source_weights`), so the fit's centre is the
typical source, not the expert source that posted most rows, and a source far from the others pulls with a
bounded force (a Huber M-estimator over source groups, :func:`fit_source_robust`); the likely ranges are built
from out-of-source residuals (:func:`loso_ranges`): the scatter between sources, a robust random-effects interval
(:func:`between_source_ranges`, Huber's scale of the source offsets) where enough sources measured a phase.

Grouping (docs/dataset-notes.md, "Recommendation for grouping efficiencies"):

- llama.cpp: η_bw per tier (base/pro/max/ultra; M1 chips on their tier's too, :data:`GEN_ETA_BW` is empty) times a
  factor per chip family (tier x generation, :data:`FAMILY_ETA_BW`),
  η_c per generation
  (M1-M4), shared t_layer, η_attn, η_c_decode,
  no-flash factor and dequantization factors per weight class; nuisance build-era factors (old llama.cpp builds
  prefilled up to 2x slower) are fitted and dropped: the shipped profiles describe current builds.
- mlx-lm: η_bw per tier and η_c per generation as llama.cpp, its own η_attn, t_layer and t_moe_layer (a fixed
  cost per routed-expert layer); the rest from llama.cpp as priors.
- wrappers (Ollama, LM Studio's llama.cpp and MLX engines): the engine's constants with the wrapper's own defaults
  (profiles/runtimes) and a measured overhead factor per phase (:func:`fit_wrapper_factors`).

Every fit works on :class:`FitRecord`, a common form both CSV rows (:func:`records_from_measurements`) and local
runs (:func:`records_from_runs`, calibration.records.RunRecord) convert into. Priors (a value and a log-sigma per
parameter) regularise a fit toward given values, so a short user run can start from the shipped constants.
"""

from __future__ import annotations

import math
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from statistics import NormalDist

import numpy as np
import yaml
from scipy.optimize import least_squares
from scipy.stats import t as student_t

from calibration.errors import CalibrationError
from planner import profiles
from planner import throughput as tp
from planner.memory import memory_model
from planner.schema import CalibrationProfile, Chip, LlamaCppFamily, Provenance, SpeedConstants

REPO_ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = REPO_ROOT / "profiles" / "calibration"
DATA_DIR = REPO_ROOT / "calibration" / "data"
TRAIN_FILES = (DATA_DIR / "measured_benchmarks_train.csv", DATA_DIR / "measured_benchmarks_mlx.csv")


NOT_SINGLE_MAC = {"cluster_measurements.csv": "runs split over several Macs (calibration.cluster_report)"}


def training_files(data_dir: Path = DATA_DIR) -> list[Path]:
    """Every CSV under ``data_dir`` whose header has the measured-benchmark columns (calibration.dataset
    REQUIRED_COLUMNS), by name: a new file of public measurements with the same columns joins the fit as it is.
    The product and SKU tables (apple_skus.csv, mac_products.csv...) have other headers and are left out, and so are
    the files of :data:`NOT_SINGLE_MAC` (same columns, other measurements)."""
    import csv

    from calibration.dataset import REQUIRED_COLUMNS

    out = []
    for p in sorted(Path(data_dir).glob("*.csv")):
        if p.name in NOT_SINGLE_MAC:
            continue
        with p.open(newline="", encoding="utf-8") as fh:
            header = next(csv.reader(fh), [])
        if all(c in header for c in REQUIRED_COLUMNS):
            out.append(p)
    return out
FIT_DATE = date(2026, 12, 7)  # pinned so regeneration is byte-identical; bump when the data changes
TIERS = ("base", "pro", "max", "ultra")
GENERATIONS = ("M1", "M2", "M3", "M4", "M5")
ERAS = ("2023-08", "2023-09", "2023-10", "2023-11", "2024", "current")

# Weak priors (value, sigma of log value). They only decide parameters the data cannot see; sources:
# docs/model-facts.md §5.1 (η_bw 0.6-0.8), §5.3 (GEMM 70-85% of ALU peak, attention below that); M5 prefill
# reported 2-3.7x M4 at similar bandwidth (geometric middle 2.7, a prior: no usable M5 row); t_layer ~ one Metal dispatch group per layer (~50 us).
BASE_PRIORS: dict[str, tuple[float, float]] = {
    "eta_bw": (0.7, 1.0), "eta_c": (0.6, 1.0), "eta_attn": (0.3, 1.5), "eta_c_decode": (0.4, 1.5),
    "eta_mv": (0.15, 1.5), "eta_attn_decode": (1.0, 1.0), "moe_bw_factor": (0.7, 1.0), "era_tl": (1.0, 1.0), "eta_kv": (0.8, 1.0),
    "noflash_kv_factor": (2.0, 0.7),
    "t_layer_s": (5e-5, 2.0), "t_moe_layer_s": (5e-5, 2.0), "t_recurrent_layer_s": (5e-5, 2.0), "noflash_attn_factor": (2.0, 0.7), "matrix_unit_factor": (2.7, 0.35),
    "q_float": (1.0, 0.5), "q_legacy": (1.0, 0.5), "q_kquant": (0.85, 0.5), "q_iquant": (0.8, 0.5),
    "q_mxfp4": (1.0, 0.5), "q_affine": (1.0, 0.5), "q_fp4": (1.0, 0.5), "era": (1.0, 1.0), "era_decode": (1.0, 0.3),
    "era_mu": (1.0, 0.5),
    "eta_bw_fam": (1.0, 0.2),
    # mlx-lm's residency wiring per stream_generate call (throughput.Roofline.wire_time): no measurement of its own
    # before the fit; 10 ms per GB, wide
    "t_wire_s_per_gb": (0.01, 2.0),
}
# Expected scatter of one measured rate around the model, in log units: run-to-run spread of llama-bench / mlx_lm
# benchmarks (2-5%) plus what the model does not capture; data residuals are divided by it so priors stay weak.
NOISE_SIGMA = 0.05
# llama.cpp's own: the decode attention's vector kernel (kernel_flash_attn_ext_vec: float4 dot products and simd_sum
# per query row, no simdgroup-matrix tiles) has no prior measurement of its own; the base prior (1, prefill's
# efficiency) with the same width lets the rows decide.
LLAMA_CPP_PRIORS: dict[str, tuple[float, float]] = {"eta_attn_decode": BASE_PRIORS["eta_attn_decode"]}
UPPER = {"eta_bw": 1.0, "eta_c": 1.0, "eta_attn": 1.0, "eta_c_decode": 1.0, "eta_mv": 1.0, "moe_bw_factor": 1.0,
         "eta_kv": 1.0, "eta_attn_decode": 1.0,
         "era_decode": 1.0, "era_mu": 1.0,
         # MLX's weight classes (tp.quant_class, kind mlx): a quantized matmul (mlx qmm: dequantize a tile, then the
         # same simdgroup MMA as the float steel gemm) does the float gemm's work and more, so q <= 1; mlx-lm
         # BENCHMARKS.md: Qwen3-4B bf16 1780.6 tok/s prefill, every quant below it (1570.8-1622.3). Unbounded, a fit
         # without float rows (the leave-one-out of BENCHMARKS.md) drifted to q_affine = 987 with η_c = 0.0006.
         "q_affine": 1.0, "q_fp4": 1.0}
LOWER = {"noflash_attn_factor": 1.0, "noflash_kv_factor": 1.0,  # slowdowns, never speed-ups
         "eta_bw_fam": 0.5}
UPPER["eta_bw_fam"] = 2.0
# Kernel regimes are code facts, not fits: ggml-metal-ops.cpp `ne11_mm_min = 8` (matrix-vector kernels up to a
# batch of 8) and kernel_mul_mm's 32-column tiles. mlx-lm's dense batched decode assumes the same values.
# Routed experts: ggml-metal-common.cpp ggml_metal_op_mul_mat_id_use_mm (``ne21 >= 32`` tokens -> kernel_mul_mm_id,
# 32-row tiles per expert; else kernel_mul_mv_id per (token, expert) pair). MLX (ml-explore/mlx 846d176
# quantized.cpp GatherQMM::eval_gpu): the sorted kernel gather_qmm_rhs only from B / E >= 4 routed rows per expert
# (mlx_lm switch_layers.py SwitchGLU sorts from 64 rows), else per-row gather_qmv; gather_qmm_rhs runs 16-row blocks
# (bm = 16 in quantized.cpp gather_qmm_rhs), one full block per expert segment (Geometry.segment_expert_rows).
_LC_KERNELS = {"mv_max_batch": 8, "mm_tile": 32, "mm_id_min_batch": 32}
_MLX_KERNELS = {"mv_max_batch": 8, "mm_tile": 32, "mm_id_min_batch": 1, "expert_tile": 16,
                "expert_tiling": "segments", "mm_id_min_rows_per_expert": 4.0}
KERNELS = {"llama.cpp": _LC_KERNELS, "mlx-lm": _MLX_KERNELS, "ollama": dict(_LC_KERNELS),
           "lmstudio-llama.cpp": dict(_LC_KERNELS), "lmstudio-mlx": dict(_MLX_KERNELS)}
# MLX on GPUs with neural accelerators (the M5's; mlx device.cpp is_nax_available: Apple GPU family 17+ on macOS 26.2+)
# runs its routed experts in gather_qmm_rhs_nax (mlx #2772, 2025-11-19). Its blocks were 64 rows for every shape and a
# block ran each expert segment on all its rows until mlx #4023 (a076a63, 2026-08-10: 32-row blocks below 64 rows per
# expert) and #4352 (c7ff35d, 2026-08-19, after v0.32.2: a simdgroup of bm / 2 rows skips a segment it does not hold).
# The shipped constants are today's (the matrix-unit generation's scope); a row is fitted with the kernels of its month.
NAX_KERNELS = {"expert_tile": 16, "expert_tile_wide": 32, "expert_tile_wide_from": 64.0}
NAX_KERNELS_BEFORE = (("2025-12", {}),  # mlx before #2772, or macOS before 26.2: the kernels of every other Mac
                      ("2026-09", {"expert_tile": 64, "expert_tile_wide": None, "expert_tile_wide_from": None}))


def row_kernels(runtime: str, chip: Chip, year_month: str | None = None) -> dict:
    """The kernel constants a row of ``runtime`` on ``chip`` in ``year_month`` ran (None: today's)."""
    k = dict(KERNELS[runtime])
    if WRAPPERS.get(runtime, runtime) != "mlx-lm" or not chip.gpu_matrix_units:
        return k
    for before, kern in NAX_KERNELS_BEFORE:
        if year_month and year_month < before:
            return {**k, **kern}
    return {**k, **NAX_KERNELS}
# Wrappers (profiles/runtimes: kind wrapper / mlx-wrapper, ``wraps``): the engine's roofline with the wrapper's own
# defaults (flash attention, n_ubatch...) and a measured overhead factor per phase (fit_wrapper_factors).
WRAPPERS = {"ollama": "llama.cpp", "lmstudio-llama.cpp": "llama.cpp", "lmstudio-mlx": "mlx-lm"}
# Every wrapper phase measured by MIN_FACTOR_SOURCES source groups gets its measured factor, LM Studio's MLX decode
# included, though its code adds no per-token work to mlx-lm's step: mlx-engine (lmstudio-ai/mlx-engine 08f0c07
# mlx_engine/generate.py) runs mlx_lm.generate.stream_generate (generate_step mx.async_evals token n+1 before yielding
# token n) or, with parallel slots, batched_vision/batch_generator.py GenerationBatch._step ("Decode-ahead"), and on
# one Mac it decodes as fast as mlx_lm.server (AlexHiesch M3 Max Qwen3-Coder-Next 4bit: LM Studio 64.8 / 66.8 tok/s,
# mlx_lm.server 0.31.3 61.1 / 62.4; measured_benchmarks_community rows 20317-20318, 20331-20332). Its users' sources
# still decode slower than mlx-lm's constants predict (held out with the engine's speed alone, the prediction was 7 %
# too fast for the median source): their Macs, settings and harnesses, which the planner answers for, so the factor is
# the measured one.

# Generations whose llama.cpp decode gets its own eta_bw instead of the tier's (gen-<M> scope), fitted on their own
# sources: none. M1 chips take their tier's, as M2-M5 do. The share of the bandwidth a decode reaches is set by the
# tier, and M1 follows M2 tier by tier in one table (llama.cpp #4167, one model, Q4_0, 2023-11 builds): base
# 78 % (M1 8-core) vs 81-82 % (M2), Pro 67-68 % vs 71-73 %, Max 51-57 % vs 57-62 %, Ultra 35-39 % vs 44 %. One gen-M1
# value mixed the base's 78 % with the Ultra's 35-39 %: fitted on M1 sources, it predicted current-build M1 Max
# decodes 18-31 % fast (normiebench #40, famstack's LM Studio and Ollama rows, calibration/data/README.md caveat 12;
# a current build reaches 55-58 % of 400 GB/s on an M1 Max with IQ4_NL/Q4_1, llama.cpp #27525) and M1 base ones
# slow. The quantized mat-vec kernel is what limits the big GPUs (llama.cpp PR #1642, philipturner: "qGEMV can
# achieve ~50% bandwidth ... the kernel is also compute-bound: bandwidth utilization scales with the number of GPU
# cores"); the few points M1 sits below M2 in each tier are between-source scatter. (Earlier rationale for a gen-M1
# value: PR #1642's 317.6 of 409.6 GB/s attainable on an M1 Max, a copy, not a quantized mat-vec.)
GEN_ETA_BW: tuple[str, ...] = ()
# Generations whose llama.cpp decode step gets its own fixed time per layer (t_layer_s: the per-op Metal dispatches
# and launch gaps, throughput.Roofline.fixed_time), a random effect shrunk toward the pooled value by its number of
# source groups (fit_hierarchical), as eta_c per generation. Every M5 source decodes faster than one shared value
# predicts, most for small or few-active-parameter models whose step is mostly fixed time (held out, 2026-12-06:
# selfup's M5 Max 32-core Ministral-3-3B 144 tok/s, -32 %, where an 819 GB/s M3 Ultra measured 155 and is predicted
# right; asiai M5 Max -36 %, curunir M5 Pro -20 %, the M5 Ollama and LM Studio rows -14 to -40 %). Per generation,
# held-out llama.cpp decode error 16.4 -> 15.1 % over 20 sources (Ollama 18.8 -> 18.4 %). With four M5 engine
# sources (ax-engine's M5 Max added) M5's value is 110 us, 0.75x M1/M2's 147-148 us, and the M5 sources held out
# are still predicted 8-28 % slow (llama.cpp and its wrappers): the shrinkage keeps most of their offset.
GEN_T_LAYER: tuple[str, ...] = GENERATIONS
# llama.cpp's η_bw of a chip family (tier x generation: every M5 Max bin) is its tier's times a factor, a random
# effect around 1 shrunk by the family's source groups (fit_hierarchical), shipped as the η_bw of each of the
# family's bins (the chip scope of the planner's chain). A family has its own memory system (LPDDR generation,
# controller, cache), so one share per tier cannot hold across five generations: an M5 Max 40-core decodes
# Qwen3.6-27B Q8_0 (27.2 GB read per token) at 18.3 tok/s (ax-engine, llama.cpp b9200), 498 GB/s, 81 % of its
# 614 GB/s before any fixed time, where the Max tier's fitted share is 0.78-0.79 (M1-M3 Max sources; M1/M2 Max
# in llama.cpp #4167 at 51-62 % on Q4_0). Fitted (the shipped profiles of 2026-12-06): max-M5 x1.21 (0.95), max-M1
# x0.88, max-M2 x0.83, base and Pro families within 0.96-1.10. Held out (every source group refitted without it, on
# the data before that session's 6 new sources, with and without the factors): llama.cpp decode 14.4 -> 13.7 % over
# 21 sources (ax-engine's M5 Max 14.9 -> 4.6 %, famstack's M5 Max Ollama 15.2 -> 3.7 %, the
# M1 Max users 31.7 -> 23.1 % and 43.7 -> 36.4 %; the 2023 #4167 Max rows 12-17 -> 16-26 %), LM Studio's llama.cpp
# engine 34.7 -> 29.1 %, Ollama 19.3 -> 18.7 %. mlx-lm with the same factors: 19.0 -> 20.5 %, bias +0.3 -> -5.2 %:
# not used (MLX's kernels reach a different share; its tiers stay one value each).
FAMILY_ETA_BW = True
def mv_max_batch(runtime: str, era: str) -> int:
    """Largest decode batch on the matrix-vector kernels for a build era. llama.cpp builds of 2023 and 2024 sent
    every batch above one token to kernel_mul_mm (ggml-metal.m GGML_OP_MUL_MAT: ``int ne11_mm_min = 1;``, the
    per-device break-even table under ``#if 0``, still so in the 2024 code that has the IQ1_M kernels); current
    builds keep B <= 8 on mul_mv / mul_mv_ext (ggml-metal-common.cpp ggml_metal_op_mul_mat_use_mm: ``ne11 > 8``)."""
    return 1 if runtime == "llama.cpp" and era != "current" else KERNELS[runtime]["mv_max_batch"]


SHARED = ("eta_attn", "eta_c_decode", "eta_mv", "moe_bw_factor", "t_layer_s", "noflash_attn_factor",
          "matrix_unit_factor", "eta_kv", "noflash_kv_factor")
# Parameters only the runtimes whose Spec frees them fit; elsewhere they keep this value (0: no such cost).
# t_moe_layer_s: a MoE layer's routing chain (throughput.Roofline.fixed_time), fitted for mlx-lm.
# eta_attn_decode: the flash-attention vector kernel's FLOP efficiency relative to η_attn
# (throughput.Roofline.eta_attn_decode), fitted for llama.cpp; 1 (prefill's) elsewhere.
# t_recurrent_layer_s: a recurrent layer's kernel chain (the same), fitted for llama.cpp only: its gated-DeltaNet
# layer is ~20 ggml nodes (qwen35.cpp build_layer_attn_linear: five matmuls, ssm_conv, softplus, sigmoid, silu, the
# l2 norms, gated_delta_net, the gated norm, the state copies) against an attention layer's ~12, each a Metal
# dispatch; mlx-lm compiles the gate math (gated_delta.py compute_g under mx.compile) and runs the update as one
# custom kernel, and its rows show no such cost (held out before this term, the hybrid / dense ratio of the median
# errors on one Mac: mlx-lm M3 Max -4 %, M1 -6 %; llama.cpp M2 Max +13 %, M1 +24 %, M3 Max +28 %, the three llama.cpp
# sources that measured both). Fitted on 2026-12-06 data it is ~25 us (was 243 us): the M2 Ultra rows that drove it
# ran build 8240, before Metal's fused gated-DeltaNet kernel (b8299, its state reads made contiguous in b8333;
# Llama-macOS#67: +16 % decode from b8192 to b8416; dataset FIXES 20901-20904), and the builds since (AlexHiesch's
# M3 Max b8920-b9110, LM Studio's 2026 engines, asiai's M5 Max b9430) decode hybrids as fast as dense models relative
# to the prediction.
# The term stays free: a source measuring hybrids and dense models on one current build moves it.
# t_wire_s_per_gb: mlx-lm's prompt speed waits for its stream_generate call's residency wiring of the weights
# (throughput.Roofline.wire_time), fitted for mlx-lm only. The rows that show it: ax-engine's M5 Max mlx_lm.benchmark
# runs at 128 / 512 / 2048 tokens fit t(P) = fixed + P x per-token with fixed 0.20 s (Qwen3.6-27B 4-bit, 15 GB),
# 0.43 s (8-bit, 28 GB), 0.22 s (35B-A3B 4-bit, 20 GB), 0.23-0.33 s (gemma-4-31b 4-bit, 17 GB), one decode step of
# each included: ~11-14 ms per GB; the model had only the first decode step, so held out it predicted the 128-token
# prefills 65 % fast and the 2048-token ones 26 % slow. Fitted on 2026-12-06 data: 7.9 ms/GB (7.5-9.3 with any one of
# ax-engine, guruswami, tolkin or enescingoz's M5 held out: the other sources identify it too). Held out (every
# source group refitted without it; calibration.report --loso figures from a dump of F.leave_one_source_out):
# mlx-lm prefill 28.4 -> 27.4 % over 10 sources (bias +2.0 -> +1.0 %; ax-engine 48.7 -> 22.4 %, guruswami 12.1 ->
# 10.4 %, john-rocky 13.5 -> 6.9 %, the M1 and M2 Max users 15.7 -> 9.9 % and 15.3 -> 7.6 %; enescingoz's fanless
# M5 Air 21.1 -> 47.2 %: held out, M5's prefill speed now comes from ax-engine's M5 Max alone, 1.5x its per-core
# rate); mlx-lm decode 18.7 -> 18.8 %, LM Studio MLX decode 11.4 -> 11.7 %, llama.cpp unchanged.
OPTIONAL_FIXED = {"t_moe_layer_s": 0.0, "t_recurrent_layer_s": 0.0, "eta_attn_decode": 1.0, "t_wire_s_per_gb": 0.0}


# --------------------------------------------------------------------------- the common record form
@dataclass(frozen=True)
class FitRecord:
    """One measured rate in the form every fit uses. ``value`` is aggregate over the batch [tok/s]."""

    runtime: str                 # llama.cpp | mlx-lm | ollama
    chip: Chip
    geo: tp.Geometry
    phase: str                   # prefill | decode
    prompt: int                  # P new tokens per sequence (prefill)
    gen: int                     # G decoded tokens per sequence (decode)
    depth: int                   # cached tokens before the measured phase
    batch: int
    value: float
    flash_attn: bool = True
    chunk: int = 512
    prefill_batch: int = 1       # sequences per prefill step (Runtime.prefill_batch)
    era: str = "current"
    weight: float = 1.0
    label: str = ""
    source: str = ""             # the CSV's source_group (leave-one-source-out holds a whole one out)
    shared_prefix: int = 0       # decode: leading cached tokens all sequences share (llama-batched-bench -pps)
    wrapper_engine: str = ""     # the engine a wrapper ran the row on, when it has several (ollama_engine)
    old_matrix_kernels: bool = False  # a llama.cpp build before its M5 tensor kernels (MATRIX_KERNELS_FROM)
    kernel_overrides: tuple = ()  # row_kernels as (name, value) pairs where they differ from KERNELS[runtime]

    @property
    def kernels(self) -> dict:
        """The kernel constants this row ran (row_kernels)."""
        return {**KERNELS[self.runtime], **dict(self.kernel_overrides)}

    @property
    def engine(self) -> str:
        """The engine whose roofline this runtime runs (a wrapper's ``wraps``)."""
        return WRAPPERS.get(self.runtime, self.runtime)

    @property
    def unified_kv(self) -> bool:
        """llama.cpp builds before 2025 had one unified cache (Roofline.keys_per_query)."""
        return self.runtime == "llama.cpp" and self.era != "current"

    @property
    def chip_id(self) -> str:
        return self.chip.id


# A runtime's prefill chunk before a month: rows measured earlier ran it. LM Studio's MLX engine prefilled 512 tokens
# at a time (lmstudio-ai/mlx-engine 57634af mlx_engine/cache_wrapper.py PROMPT_PROCESSING_CHUNK_SIZE = 512, 2026-02;
# lmstudio-js #506/#507, 2026-01: 2048-4096 prefilled 1.2-2x faster) until mlx-engine #295 (2026-03-25) made it 2048.
PREFILL_CHUNK_BEFORE = {"lmstudio-mlx": ("2026-04", 512)}


# llama.cpp on GPUs with matrix units (the M5's neural accelerators, Metal's tensor API): ggml-org/llama.cpp #20962
# (d1649047, 2026-04-25, first in b8932) gave them their own matrix-multiply kernel (64x128 tiles, B straight from
# device memory; "Geomean improvement of ~26%" on an M5 Max), and #21048 (b8548) had turned the tensor path back on
# under macOS 26.4. Prefill rows of earlier builds get one nuisance factor on the matrix-unit speed-up (era_mu, as the
# build eras); the shipped constants are today's. A row without a build number is dated by its month.
MATRIX_KERNELS_FROM = (8932, "2026-05")


def old_matrix_kernels(runtime: str, chip: Chip, build: int | None, year_month: str | None) -> bool:
    """Whether a row of ``runtime`` on ``chip`` ran llama.cpp's matrix kernels from before MATRIX_KERNELS_FROM;
    ``build`` is the row's llama.cpp build number (Measurement.llama_cpp_build), read for llama.cpp rows only."""
    if WRAPPERS.get(runtime, runtime) != "llama.cpp" or not chip.gpu_matrix_units:
        return False
    build = build if runtime == "llama.cpp" else None
    if build:
        return build < MATRIX_KERNELS_FROM[0]
    return bool(year_month) and year_month < MATRIX_KERNELS_FROM[1]


def _row_chunk(m, runtime: str, default: int) -> int:
    """The prefill chunk a row ran: the one it states (llama.cpp n_ubatch, MLX prefill_step_size), else the
    runtime's chunk at the row's date (PREFILL_CHUNK_BEFORE), else the runtime's default."""
    stated = m.prefill_step if WRAPPERS.get(runtime, runtime) == "mlx-lm" else m.n_ubatch
    if stated:
        return stated
    before = PREFILL_CHUNK_BEFORE.get(runtime)
    if before and m.year_month and m.year_month < before[0]:
        return before[1]
    return default


def _era(ym: str | None, runtime: str) -> str:
    if runtime != "llama.cpp" or ym is None:
        return "current"
    if ym <= "2023-08":
        return "2023-08"
    if ym < "2023-11":
        return ym
    if ym < "2024-01":
        return "2023-11"
    return "2024" if ym < "2025-01" else "current"


_GEO_CACHE: dict[tuple, tp.Geometry] = {}


def geometry_for(model_id: str, runtime: str, quant_id: str, flash_attn: bool | None = None) -> tp.Geometry:
    key = (model_id, runtime, quant_id, flash_attn)
    if key not in _GEO_CACHE:
        rt = profiles.load_runtime(runtime)
        q = profiles.load_quant(quant_id, rt.weight_format)
        mm = memory_model(profiles.load_model(model_id), rt, q, profiles.ggml_types(), flash_attn=flash_attn)
        _GEO_CACHE[key] = tp.geometry(mm, q.kind, q.mode)
    return _GEO_CACHE[key]


def planner_runtime(m) -> str | None:
    """The planner runtime id a Measurement ran on: llama.cpp, mlx-lm, ollama, lmstudio-llama.cpp, lmstudio-mlx
    (LM Studio's engines, calibration.dataset.is_lm_studio), None for other MLX front ends and custom engines."""
    from calibration.dataset import is_lm_studio

    if m.runtime_family in ("llama.cpp", "other-mlx") and is_lm_studio(m.runtime):
        return "lmstudio-llama.cpp" if m.runtime_family == "llama.cpp" else "lmstudio-mlx"
    return {"llama.cpp": "llama.cpp", "mlx-lm": "mlx-lm", "ollama": "ollama"}.get(m.runtime_family)


OLLAMA_ENGINES_FILE = DATA_DIR / "ollama_engines.yaml"
_OLLAMA_ENGINES: dict = {}


def ollama_engines() -> dict:
    """The family -> engine table of calibration/data/ollama_engines.yaml (read from Ollama's code at a commit)."""
    if not _OLLAMA_ENGINES:
        _OLLAMA_ENGINES.update(yaml.safe_load(OLLAMA_ENGINES_FILE.read_text(encoding="utf-8")))
    return _OLLAMA_ENGINES


def _version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def ollama_version(runtime_version: str) -> str | None:
    """The Ollama version a row names ("ollama 0.18.2", "Ollama v0.31", or a bare "0.31.2"), else None (a row's
    "llmfit 1.1.10" is the benchmark tool's version, not Ollama's)."""
    import re

    m = re.search(r"ollama\s+v?(\d+\.\d+(?:\.\d+)?)", runtime_version or "", re.I) \
        or re.fullmatch(r"\s*v?(\d+\.\d+\.\d+)\s*", runtime_version or "")
    return m.group(1) if m else None


def gguf_architecture(model_type: str) -> str:
    """A catalog model's GGUF general.architecture from its config.model_type (ollama_engines.yaml)."""
    return ollama_engines()["gguf_architecture"].get(model_type, model_type.replace("_", ""))


def _ollama_released(since: str, version: str | None, year_month: str | None) -> bool:
    """Whether the Ollama release ``since`` was out for a row: its version is at least ``since`` or, with no version,
    ``since`` was tagged in or before the row's month (ollama_engines.yaml tag_months); no version and no month: the
    current code."""
    if version is not None:
        return _version_tuple(version)[:3] >= _version_tuple(since)
    return year_month is None or ollama_engines()["tag_months"][since] <= year_month


def ollama_engine(version: str | None, year_month: str | None, model_type: str) -> str:
    """The engine Ollama ran a GGUF model on: llama-server from v0.30.0 on (or, with no version, from the month it
    was tagged), before it its own Go engine (ollamarunner) for the architectures OllamaEngineRequired listed in
    that release and the llama.cpp CGO runner (llamarunner) for the rest (calibration/data/ollama_engines.yaml cites
    the code)."""
    t = ollama_engines()
    if version is not None:
        current = _version_tuple(version)[:3] >= _version_tuple(t["switch_version"])
    else:
        current = year_month is None or year_month >= t["switch_month"]
    if current:
        return t["current_engine"]
    since = t["ollamarunner_architectures"].get(gguf_architecture(model_type))
    return "ollamarunner" if since and _ollama_released(since, version, year_month) else "llamarunner"


def ollama_flash_attn(engine: str, model_type: str, version: str | None = None,
                      year_month: str | None = None) -> bool:
    """Ollama's default flash attention on Metal for an engine and release (ollama_engines.yaml): llama.cpp's auto
    (on) for llama-server, and for llamarunner from v0.13.4 (off before: OLLAMA_FLASH_ATTENTION unset); on for the
    ollamarunner architectures GGML.FlashAttention() listed in that release (none before v0.11.8). No version and no
    month: the last release before the switch."""
    e = ollama_engines()["engines"][engine]
    arch = gguf_architecture(model_type)
    listed = ollama_engines()["engines"]["ollamarunner"]["flash_attn_architectures"]
    if "flash_attn_since" in e and _ollama_released(e["flash_attn_since"], version, year_month):
        return True
    if "flash_attn_architectures" in e or "flash_attn_since" in e:
        return arch in listed and _ollama_released(listed[arch], version, year_month)
    return bool(e["flash_attn"])


def records_from_measurements(ms, label_prefix: str = "") -> tuple[list[FitRecord], Counter]:
    """CSV Measurements (already filtered) -> FitRecords; returns the records and a Counter of skip reasons.

    Rows whose model is not in the catalog are skipped: without the architecture neither the KV bytes nor the
    attention FLOPs are known, and at depth they dominate (docs/dataset-notes.md, M2 Ultra GLM rows)."""
    from calibration.dataset import PREFILL_METRICS

    out, skipped = [], Counter()
    for m in ms:
        if m.model_id is None:
            skipped["model not in the catalog"] += 1
            continue
        runtime = planner_runtime(m)
        if runtime is None:
            skipped[f"family {m.runtime_family}"] += 1
            continue
        rt = profiles.load_runtime(runtime)
        fa = m.flash_attn if m.flash_attn is not None else (rt.flash_attn if isinstance(rt, LlamaCppFamily) else None)
        wrapper_engine = ""
        if runtime == "ollama":  # the engine Ollama ran the row on, and that engine's flash-attention default
            mt = profiles.load_model(m.model_id).config.model_type
            version = ollama_version(m.runtime_version)
            wrapper_engine = ollama_engine(version, m.year_month, mt)
            fa = m.flash_attn if m.flash_attn is not None else ollama_flash_attn(wrapper_engine, mt, version,
                                                                               m.year_month)
        try:
            geo = geometry_for(m.model_id, runtime, m.quant_id)
        except Exception as e:  # a quant that does not apply to the model (e.g. a row mislabelled)
            skipped[f"geometry: {type(e).__name__}"] += 1
            continue
        chip = profiles.resolve_chip(m.chip_id)
        rt = profiles.load_runtime(runtime)
        chunk = _row_chunk(m, runtime, rt.prefill_chunk)
        prefill = m.metric in PREFILL_METRICS
        batch, shared = m.batch, 0
        if prefill:
            P, G, D = m.prompt_tokens or 0, 0, m.context_depth or 0
            # a shared prompt is prefilled once (llama-batched-bench -pps: S_PP = PP / T_PP)
            batch = 1 if m.prompt_shared else batch
            if P <= 0:
                skipped["prefill without prompt size"] += 1
                continue
        else:
            # llama-bench tgN @ dD: N tokens from depth D; old 'tg N' rows start at 0 and average over 0..N;
            # depth-unknown (server/ollama) rows follow a short prompt: start at 0 as well
            P, G, D = 0, max(m.gen_tokens or 1, 1), m.context_depth or 0
            shared = D if m.prompt_shared else 0
        out.append(FitRecord(runtime=runtime, chip=chip, geo=geo, phase="prefill" if prefill else "decode",
                             prompt=P, gen=G, depth=D, batch=batch, value=m.value, flash_attn=bool(fa),
                             chunk=chunk, prefill_batch=rt.prefill_batch, era=_era(m.year_month, runtime),
                             label=f"{label_prefix}row {m.row_id}", source=m.source_group,
                             shared_prefix=shared, wrapper_engine=wrapper_engine,
                             kernel_overrides=_overrides(runtime, chip, m.year_month),
                             old_matrix_kernels=old_matrix_kernels(runtime, chip, m.llama_cpp_build, m.year_month)))
    return out, skipped


def _overrides(runtime: str, chip: Chip, year_month: str | None) -> tuple:
    k = row_kernels(runtime, chip, year_month)
    return tuple(k.items()) if k != KERNELS[runtime] else ()


def records_from_runs(runs, chip: Chip) -> list[FitRecord]:
    """calibration.records.RunRecord (local runs on ``chip``) -> FitRecords. Dense models only: the geometry is
    rebuilt from the record's own shape (weights_bytes, layers, heads...), so tiny synthetic models work."""
    out = []
    for r in runs:
        rt = profiles.load_runtime(r.runtime)
        bpw_bytes = r.weights_bytes / r.n_params
        embed = r.vocab * r.hidden * bpw_bytes
        kv_el = 2 if r.runtime == "llama.cpp" else 2
        geo = tp.Geometry(
            n_layers=r.n_layers, dense_bytes=r.weights_bytes - embed, expert_bytes=0.0, n_experts=0, top_k=0,
            matmul_params=r.n_params - 2 * r.vocab * r.hidden, head_params=float(r.vocab * r.hidden),
            kv_full=2.0 * r.n_layers * r.n_kv_heads * r.head_dim * kv_el, kv_swa=0.0, window=None, state_bytes=0.0,
            attn_full=float(r.n_layers * r.n_heads * 2 * r.head_dim), attn_swa=0.0,
            quant_class=tp.quant_class(r.quant, "mlx" if r.quant.startswith("mlx") else "gguf",
                                       "none" if r.quant in ("mlx-bf16", "mlx-f32", "mlx-f16") else "affine"))
        pre = r.phase == "prefill"
        out.append(FitRecord(runtime=r.runtime, chip=chip, geo=geo, phase=r.phase,
                             prompt=r.prompt_tokens if pre else 0, gen=0 if pre else max(r.gen_tokens, 1),
                             depth=r.context_depth, batch=r.batch, value=r.value_tok_s,
                             flash_attn=r.flash_attn if r.flash_attn is not None else True,
                             chunk=rt.prefill_chunk, prefill_batch=rt.prefill_batch, label=r.label))
    return out


# --------------------------------------------------------------------------- parameterisation
@dataclass
class Spec:
    """Which parameters a fit frees. ``groups[name]`` says how a record picks its instance of a parameter."""

    runtime: str
    tier_eta_bw: bool = True          # η_bw per tier (else one)
    gen_eta_bw: tuple[str, ...] = ()  # generations with their own η_bw (replacing the tier's): GEN_ETA_BW
    gen_eta_c: bool = True            # η_c per generation (else one)
    eta_c_family: dict[str, str] = field(default_factory=dict)  # generation -> the generation whose η_c it shares
    gen_t_layer: tuple[str, ...] = ()  # generations with their own t_layer_s (shrunk toward the pooled): GEN_T_LAYER
    family_eta_bw: bool = False       # a chip family's (tier x generation) factor on its tier's η_bw: FAMILY_ETA_BW
    free: set[str] = field(default_factory=lambda: {"eta_bw", "eta_c", "eta_attn", "eta_c_decode", "eta_mv",
                                                    "moe_bw_factor", "t_layer_s", "noflash_attn_factor",
                                                    "eta_kv", "noflash_kv_factor",
                                                    "matrix_unit_factor", "q", "era", "era_decode", "era_tl",
                                                    "era_mu"})


def _fixed_time_names(records: list[FitRecord], spec: Spec) -> list[str]:
    """The fixed times the records can identify: per MoE and per recurrent layer of a decode step, and mlx-lm's
    per-call wiring of the weights before a prompt (rows of one sequence)."""
    seen = {
        "t_moe_layer_s": any(r.phase == "decode" and r.geo.moe_layers for r in records),
        "t_recurrent_layer_s": any(r.phase == "decode" and r.geo.recurrent_layers for r in records),
        "t_wire_s_per_gb": any(r.phase == "prefill" and r.engine == "mlx-lm" and r.batch == 1 for r in records),
    }
    return [p for p, ok in seen.items() if ok and p in spec.free]


def _param_names(records: list[FitRecord], spec: Spec) -> list[str]:
    names = []
    if "eta_bw" in spec.free:
        rest = [r for r in records if r.chip.generation not in spec.gen_eta_bw]
        names += [f"eta_bw:{t}" for t in TIERS if any(r.chip.tier == t for r in rest)] if spec.tier_eta_bw \
            else ["eta_bw:*"]
        names += [f"eta_bw:{g}" for g in spec.gen_eta_bw if any(r.chip.generation == g for r in records)]
    if "eta_c" in spec.free:
        fam = spec.eta_c_family
        names += [f"eta_c:{g}" for g in GENERATIONS if any(fam.get(r.chip.generation, r.chip.generation) == g
                                                            and r.phase == "prefill" for r in records)] \
            if spec.gen_eta_c else ["eta_c:*"]
    names += _family_names(records, spec)
    scoped_tl = _gen_t_layer_names(records, spec)
    for p in SHARED:
        # the pooled t_layer only where some row's generation has none of its own (else no row would use it)
        if p in spec.free and not (p == "t_layer_s" and scoped_tl
                                   and all(f"t_layer_s:{r.chip.generation}" in scoped_tl for r in records)):
            names.append(p)
    names += scoped_tl
    names += _fixed_time_names(records, spec)
    if "eta_attn_decode" in spec.free and any(r.phase == "decode" for r in records):
        names.append("eta_attn_decode")   # a user fit's own (calibration/user_fit.py); the shipped fit keeps 1
    if "q" in spec.free:
        names += [f"q_{c}" for c in sorted({r.geo.quant_class for r in records if r.phase == "prefill"})
                  if c != "float"]
    if "era" in spec.free:
        names += [f"era:{e}" for e in ERAS[:-1] if any(r.era == e and r.phase == "prefill" for r in records)]
    if "era_decode" in spec.free and any(r.era != "current" and r.phase == "decode" for r in records):
        names.append("era_decode")
    if "era_tl" in spec.free and any(r.era != "current" for r in records):
        names.append("era_tl")
    if "era_mu" in spec.free and any(r.old_matrix_kernels and r.phase == "prefill" for r in records):
        names.append("era_mu")
    return names


def family(chip: Chip) -> str:
    """A chip's family: its tier and generation (``max-M5``: every M5 Max bin)."""
    return f"{chip.tier}-{chip.generation}"


def _family_names(records: list[FitRecord], spec: Spec) -> list[str]:
    """``eta_bw_fam:max-M5`` for each chip family with decode rows (a factor on its tier's η_bw)."""
    if not (spec.family_eta_bw and "eta_bw" in spec.free):
        return []
    return [f"eta_bw_fam:{f}" for f in sorted({family(r.chip) for r in records if r.phase == "decode"
                                               and r.chip.generation not in spec.gen_eta_bw})]


def _gen_t_layer_names(records: list[FitRecord], spec: Spec) -> list[str]:
    """``t_layer_s:M5`` for each GEN_T_LAYER generation with decode rows (its own fixed time per layer)."""
    if "t_layer_s" not in spec.free:
        return []
    return [f"t_layer_s:{g}" for g in spec.gen_t_layer
            if any(r.chip.generation == g and r.phase == "decode" for r in records)]


def layer_time(params: dict[str, float], generation: str) -> float:
    """t_layer_s of a chip of ``generation`` from fitted ``params``: its generation's own, else the pooled value,
    else the newest earlier generation's (the planner's gen-profile fallback, profiles._generation_scope), else
    the geometric mean over the generations (a chip of none: the default profile's), else the prior."""
    own = {k.split(":")[1]: v for k, v in params.items() if k.startswith("t_layer_s:")}
    older = [g for g in own if g <= generation]
    if generation in own:
        return own[generation]
    if "t_layer_s" in params:
        return params["t_layer_s"]
    if older:
        return own[max(older)]
    return float(np.exp(np.mean(np.log(list(own.values()))))) if own else BASE_PRIORS["t_layer_s"][0]


def _prior(name: str, priors: dict[str, tuple[float, float]]) -> tuple[float, float]:
    for key in (name, name.split(":")[0]):
        if key in priors:
            return priors[key]
    return BASE_PRIORS[name.split(":")[0]]


class _Arrays:
    """Per-record features, computed once with planner.throughput's geometry methods."""

    def __init__(self, records: list[FitRecord]):
        n = len(records)
        self.n = n
        self.dec = np.array([r.phase == "decode" for r in records])
        self.B = np.array([r.batch for r in records], float)
        self.value = np.array([r.value for r in records], float)
        self.w = np.array([r.weight for r in records], float)
        self.L = np.array([r.geo.n_layers for r in records], float)
        self.ML = np.array([r.geo.moe_layers for r in records], float)  # layers with routed experts
        self.RL = np.array([r.geo.recurrent_layers for r in records], float)  # layers with a recurrent state
        self.bw = np.array([tp.bandwidth(r.chip) for r in records])
        allchips = profiles.builtin_chips()  # the shipped fit never depends on a user's own chips
        self.peak = np.array([tp.peak_flops(r.chip, allchips)[0] for r in records])
        self.mu = np.array([r.chip.gpu_matrix_units for r in records])
        # decode: bytes and flops at start, mid and end depth (Simpson)
        self.dw = np.zeros(n)              # dense weight bytes read by the step
        self.dkv = np.zeros((n, 3))        # KV (+ state) bytes of the batch (throughput.Roofline.kv_time)
        self.dattn = np.zeros((n, 3))      # decode attention FLOPs of the batch
        self.dexp = np.zeros(n)            # routed-expert bytes read by the step
        self.cflops = np.zeros((n, 3))     # FLOPs of the step's compute kernels (mv: the columns beyond the first)
        self.mv = np.zeros(n, bool)
        self.eflops = np.zeros(n)          # mm regime: routed-expert FLOPs, rows padded per expert to the tile
        # prefill
        self.n_chunks = np.zeros(n)
        self.mm = np.zeros(n)
        self.rd = np.zeros(n)
        self.rd_exp = np.zeros(n)
        self.attn = np.zeros(n)
        self.attn_mm = np.zeros(n)         # unfused prefill attention (MLX on a CPU): FLOPs at the matmul η_c
        self.head = np.zeros(n)
        self.score_rd = np.zeros(n)        # unfused GPU attention (Engine.unfused_prefill_layers): score bytes
        # mlx-lm prompt speed = P / TTFT (Roofline.reported_prefill_time): + one decode step at depth D + P - 1
        self.pstep = np.zeros(n, bool)
        self.pstep_w = np.zeros(n)         # its dense weight bytes
        self.pstep_exp = np.zeros(n)       # its routed-expert bytes (k of E)
        self.pstep_kv = np.zeros(n)        # its KV + state bytes
        self.pstep_attn = np.zeros(n)      # its attention + state-update FLOPs
        self.wire = np.zeros(n)            # the weights its call makes resident first [GB] (Roofline.wire_time)
        self.fa_off = np.array([(not r.flash_attn) and r.engine != "mlx-lm" for r in records])
        # decode attention on the engine's vector kernel (throughput.Roofline.eta_attn_decode): its FLOPs run at
        # η_attn × eta_attn_decode, else at η_attn (llama.cpp: -fa off, or 20+ queries of a unified cache)
        self.vec = np.array([tp.by_name(r.engine).decode_attn_vec(r.flash_attn, r.batch if r.unified_kv else 1,
                                                                   r.geo.attn_heads) for r in records])
        self.tokens = np.zeros(n)
        for i, r in enumerate(records):
            g = r.geo
            kern = r.kernels
            # the same FLOP counts as planner.throughput (Roofline.mm_flops / step_flops), constants aside
            rf = tp.Roofline(geo=g, bw=1.0, flops=1.0, k=SpeedConstants(**kern), shared_prefix=r.shared_prefix,
                             unified_kv=r.unified_kv, chunk=r.chunk)
            if r.phase == "decode":
                a, b = r.depth, r.depth + max(r.gen, 1) - 1
                self.mv[i] = r.batch <= mv_max_batch(r.runtime, r.era)
                self.dexp[i] = g.expert_bytes * g.expert_reads(r.batch, rf.expert_mm_min())
                self.dw[i] = g.dense_bytes
                padded = math.ceil(r.batch / kern["mm_tile"]) * kern["mm_tile"]
                for j, c in enumerate((a, (a + b) / 2, b)):
                    self.dkv[i, j] = g.batch_kv_read(r.batch, c, r.shared_prefix)
                    keys = rf.keys_per_query(r.batch, c)
                    self.dattn[i, j] = 2 * r.batch * g.attn_keys(keys)
                    # mv regime: columns beyond the first, not overlapped with the reads (throughput.step_parts);
                    # mm regime: the weight matmuls only, attention is its own kernel after them
                    self.cflops[i, j] = ((r.batch - 1) * rf.step_flops(1, keys) if self.mv[i] else rf.mm_flops(padded))
                if not self.mv[i] and g.top_k:   # Roofline.expert_time: padded per expert, at prefill's η_c · q
                    self.eflops[i] = 2 * g.expert_matmul_params / g.top_k * rf.expert_rows(r.batch)
            else:
                # mlx-lm's prompt speed is P / TTFT (throughput.first_token_time): the prefill of P - 1 tokens,
                # then the last one as the first decode step at depth D + P - 1
                pstep = r.engine == "mlx-lm" and r.batch == 1 and r.prompt > 0
                prompt = r.prompt - 1 if pstep else r.prompt
                tokens = prompt * r.batch
                nch = tp.prefill_steps(r.engine, prompt, r.batch, r.chunk, r.prefill_batch)
                self.tokens[i] = r.prompt * r.batch
                self.n_chunks[i] = nch
                per_expert = g.expert_matmul_params / g.top_k if g.top_k else 0.0
                self.mm[i] = (2 * (g.matmul_params - g.expert_matmul_params) * tokens
                              + 2 * per_expert * nch * rf.expert_rows(tokens / nch))
                self.rd[i] = nch * g.dense_bytes
                self.rd_exp[i] = nch * g.expert_bytes * g.expert_reads(int(math.ceil(tokens / nch)),
                                                                       rf.expert_mm_min())
                if tp.unfused_attention(r.engine, r.chip):  # Roofline.prefill_attn_time: plain matmuls at η_c
                    self.attn_mm[i] = rf.unfused_attn_flops(prompt, r.depth, r.batch)
                else:  # fused layers at η_attn; layers unfused on the GPU (Engine.unfused_prefill_layers: mlx-lm
                    # gemma2, head sizes without a fused kernel) as matmuls at η_c + the score matrix's memory trips
                    self.attn[i] = rf.prefill_attn_flops(prompt, r.depth, r.batch)
                    self.attn_mm[i] = rf.gpu_unfused_attn_flops(prompt, r.depth, r.batch)
                    self.score_rd[i] = rf.score_bytes(prompt, r.depth, r.batch)
                self.head[i] = 2 * g.head_params * r.batch
                if pstep:
                    c = r.depth + prompt
                    self.pstep[i] = True
                    self.pstep_w[i] = g.dense_bytes
                    self.pstep_exp[i] = g.expert_bytes * g.expert_reads(1, rf.expert_mm_min())
                    self.pstep_kv[i] = g.kv_read(c)
                    self.pstep_attn[i] = 2 * g.attn_keys(c) + g.state_flops
                    self.wire[i] = g.weight_bytes / 1e9


def _index(records, spec, names):
    """For each parameter family, the column of the parameter vector each record uses (-1 = fixed value)."""
    pos = {n: i for i, n in enumerate(names)}
    def col(key):
        return pos.get(key, -1)
    idx = {
        "eta_bw": np.array([col(f"eta_bw:{r.chip.generation}") if r.chip.generation in spec.gen_eta_bw else
                            col(f"eta_bw:{r.chip.tier}") if spec.tier_eta_bw else col("eta_bw:*") for r in records]),
        "eta_c": np.array([col(f"eta_c:{spec.eta_c_family.get(r.chip.generation, r.chip.generation)}")
                           if spec.gen_eta_c else col("eta_c:*") for r in records]),
        "eta_bw_fam": np.array([col(f"eta_bw_fam:{family(r.chip)}") for r in records]),
        "q": np.array([col(f"q_{r.geo.quant_class}") for r in records]),
        "era": np.array([col(f"era:{r.era}") for r in records]),
        "era_decode": np.array([col("era_decode") if r.era != "current" else -1 for r in records]),
        "era_tl": np.array([col("era_tl") if r.era != "current" else -1 for r in records]),
        "era_mu": np.array([col("era_mu") if r.old_matrix_kernels else -1 for r in records]),
        "eta_attn_decode": np.full(len(records), col("eta_attn_decode")),
        **{p: np.full(len(records), col(p)) for p in OPTIONAL_FIXED},
    }
    for p in SHARED:
        idx[p] = np.full(len(records), col(p))
    idx["t_layer_s"] = np.array([col(f"t_layer_s:{r.chip.generation}") if f"t_layer_s:{r.chip.generation}" in pos
                                 else col("t_layer_s") for r in records])
    return idx


def _fixed_values(records, spec, fixed: dict[str, float]):
    """Values used where a record's parameter is not free: from ``fixed`` (e.g. llama.cpp's fit for ollama)."""
    def get(key, default):
        return fixed.get(key, default)
    return {
        "eta_bw": np.array([get(f"eta_bw:{r.chip.generation}", get(f"eta_bw:{r.chip.tier}",
                                get("eta_bw:*", BASE_PRIORS["eta_bw"][0]))) for r in records]),
        "eta_c": np.array([get(f"eta_c:{r.chip.generation}", get("eta_c:*", BASE_PRIORS["eta_c"][0])) for r in records]),
        "eta_bw_fam": np.array([get(f"eta_bw_fam:{family(r.chip)}", 1.0) for r in records]),
        "q": np.array([get(f"q_{r.geo.quant_class}", 1.0 if r.geo.quant_class == "float" else
                           BASE_PRIORS[f"q_{r.geo.quant_class}"][0]) for r in records]),
        "era": np.ones(len(records)),
        "era_decode": np.ones(len(records)),
        "era_tl": np.ones(len(records)),
        "era_mu": np.ones(len(records)),
        "eta_attn_decode": np.full(len(records), get("eta_attn_decode", 1.0)),
        **{p: np.full(len(records), get(p, BASE_PRIORS[p][0])) for p in SHARED},
        **{p: np.full(len(records), get(p, v)) for p, v in OPTIONAL_FIXED.items()},
        "t_layer_s": np.array([layer_time(fixed, r.chip.generation) for r in records]),
    }


def _predict(theta: np.ndarray, A: _Arrays, idx, fixedv) -> np.ndarray:
    """Predicted aggregate tok/s for every record (same formulas as planner.throughput.Roofline)."""
    vals = np.exp(theta)

    def pick(p):
        ix = idx[p]
        return np.where(ix >= 0, vals[np.maximum(ix, 0)], fixedv[p])

    era = pick("era")
    bw_chip = np.minimum(pick("eta_bw") * pick("eta_bw_fam"), 1.0)  # the chip's η_bw: its tier's × its family's
    eta_bw = bw_chip * pick("era_decode")
    eta_c = pick("eta_c") * pick("q") * era
    moe = pick("moe_bw_factor")
    F = A.peak * np.where(A.mu, pick("matrix_unit_factor") * pick("era_mu"), 1.0)
    # throughput.Roofline.fixed_time: L · t_layer + L_moe · t_moe_layer + L_rec · t_recurrent_layer
    fixed = A.L * pick("t_layer_s") * pick("era_tl") + A.ML * pick("t_moe_layer_s") + A.RL * pick("t_recurrent_layer_s")
    # decode. B > mv_max_batch runs the prefill matrix-matrix kernel (ggml-metal-common.cpp
    # ggml_metal_op_mul_mat_use_mm: ne11 > 8 -> kernel_mul_mm), so its efficiency is η_c_decode × the prefill
    # η_c · q of the same generation and weight class, old builds included (era); η_c_decode is the ratio one
    # 32-column tile achieves relative to a full prefill. 2023 llama.cpp builds had no small-batch matrix-vector
    # regime (mv_max_batch: every B > 1 on kernel_mul_mm), so η_mv is identified by current rows only
    kv_slow = np.where(A.fa_off, pick("noflash_kv_factor"), 1.0)
    eta_ad = np.where(A.vec, pick("eta_attn_decode"), 1.0)
    t_kv = np.maximum(A.dkv / (eta_bw * pick("eta_kv") * A.bw)[:, None],
                      A.dattn / (pick("eta_attn") * eta_ad * F)[:, None])
    t_w = ((A.dw + A.dexp / moe) / (eta_bw * A.bw))[:, None]
    t_att = t_kv * kv_slow[:, None]
    eta_k = np.where(A.mv, pick("eta_mv"), pick("eta_c_decode") * eta_c)
    tcmp = A.cflops / (eta_k * F)[:, None] + (A.eflops / (eta_c * F))[:, None]
    mv = A.mv[:, None]
    # mv: weights + attention stream, the extra columns add on top; mm: max(weight reads, matmul) then attention
    steps = fixed[:, None] + np.where(mv, np.maximum(t_w + t_att, tcmp) + np.minimum(t_w + t_att, tcmp),
                                      np.maximum(t_w, tcmp) + t_att)
    mean = (steps[:, 0] + 4 * steps[:, 1] + steps[:, 2]) / 6
    dec = A.B / mean
    # prefill
    fa = np.where(A.fa_off, pick("noflash_attn_factor"), 1.0)
    t = (A.n_chunks * fixed + np.maximum(A.mm / (eta_c * F), (A.rd + A.rd_exp / moe) / (bw_chip * A.bw))
         + A.attn * fa / (pick("eta_attn") * F) + (A.head + A.attn_mm) / (pick("eta_c") * F)
         + A.score_rd / (bw_chip * A.bw))
    # mlx-lm's prompt speed includes the first decode step (Roofline.reported_prefill_time; step_parts at B = 1)
    t_ps = (fixed + (A.pstep_w + A.pstep_exp / moe) / (eta_bw * A.bw)
            + np.maximum(A.pstep_kv / (eta_bw * pick("eta_kv") * A.bw),
                         A.pstep_attn / (pick("eta_attn") * eta_ad * F)))
    # + the call's residency wiring of the weights (Roofline.wire_time)
    t = t + np.where(A.pstep, t_ps + A.wire * pick("t_wire_s_per_gb"), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        pre = np.where(A.dec, 0.0, A.tokens / np.where(A.dec, 1.0, t))
    return np.where(A.dec, dec, pre)


def fit_efficiency_least_squares(records: list[FitRecord], spec: Spec,
                                 priors: dict[str, tuple[float, float]] | None = None,
                                 fixed: dict[str, float] | None = None, max_nfev: int = 2000,
                                 noise_sigma: float = NOISE_SIGMA, start: dict[str, float] | None = None):
    """Fit roofline efficiencies by weighted least squares on log(predicted / measured), with log-normal priors.
    ``start``: parameter values to start the optimizer from (a previous solution; default the priors' centres).

    Returns ``(params, diagnostics)``: params maps names like ``eta_bw:max``, ``eta_c:M3``, ``t_layer_s`` to
    values; diagnostics holds the optimizer status, cost, per-record predictions and APEs. Raises
    CalibrationError with the optimizer message when ``result.success`` is false.
    """
    if not records:
        raise CalibrationError(f"fit {spec.runtime}: no records to fit")
    priors = {**BASE_PRIORS, **(priors or {})}
    names = _param_names(records, spec)
    if not names:
        raise CalibrationError(f"fit {spec.runtime}: nothing to fit (no free parameter has data)")
    A = _Arrays(records)
    idx = _index(records, spec, names)
    fixedv = _fixed_values(records, spec, fixed or {})
    p0 = np.array([math.log(_prior(n, priors)[0]) for n in names])
    psig = np.array([_prior(n, priors)[1] for n in names])
    lo = np.array([math.log(LOWER.get(n.split(":")[0], 1e-6)) for n in names])
    hi = np.array([math.log(UPPER.get(n.split(":")[0], 1e3)) for n in names])
    p0 = np.clip(p0, lo + 1e-9, hi - 1e-9)
    x0 = np.clip(np.array([math.log(start[n]) if start and n in start else v for n, v in zip(names, p0)]),
                 lo + 1e-9, hi - 1e-9)
    sw = np.sqrt(A.w) / noise_sigma
    log_y = np.log(A.value)

    def resid(theta):
        pred = _predict(theta, A, idx, fixedv)
        return np.concatenate([sw * (np.log(pred) - log_y), (theta - p0) / psig])

    res = least_squares(resid, x0, bounds=(lo, hi), method="trf", x_scale=1.0, max_nfev=max_nfev)
    if not res.success:
        raise CalibrationError(f"fit {spec.runtime}: optimizer failed: {res.message}")
    params = {n: float(v) for n, v in zip(names, np.exp(res.x))}
    pred = _predict(res.x, A, idx, fixedv)
    ape = np.abs(pred / A.value - 1) * 100
    return params, {"status": res.status, "message": res.message, "cost": float(res.cost), "nfev": res.nfev,
                    "predicted": pred, "ape": ape, "n_records": len(records)}


# --------------------------------------------------------------------------- scopes as shrunk random effects
# A tier's η_bw or a generation's η_c is a scope offset δ = log(scoped value / pooled value), a random effect of the
# scope measured through its source groups: each source lands σ_s from the scope's true value (one user's Mac,
# build, habits), and scopes differ from the pooled value by τ. Its estimate is the mean of its sources' offsets
# shrunk by their number n_s: δ = ȳ · n_s / (n_s + λ), λ = (σ_s / τ)² (the random-effects mean, as the wrappers'
# factors; Gelman & Hill 2007, ch. 12.2, partial pooling). One slow user's source on a tier with no other then
# moves it by ȳ / (1 + λ), not by all of ȳ. σ_s: the scatter of held-out sources' biases around the typical one
# (about ±15 %, python -m calibration.report, "held-out source groups"); τ: how far tiers' and generations' η lie
# apart (η_bw 0.6-0.8 across tiers, docs/model-facts.md §5.1: about ±20 %).
SCOPE_SOURCE_SIGMA = 0.15
SCOPE_PRIOR_SIGMA = 0.2


def scope_prior_sigma(n_sources: int, weight: float, noise_sigma: float = NOISE_SIGMA) -> float:
    """Log-sigma of the prior that ties a scope's parameter to the pooled value, so that the weighted least squares
    gives the random-effects estimate δ = ȳ · n_s / (n_s + λ).

    In the fit a scope's rows enter as √w_i / σ_n · (δ − y_i) and the prior as δ / σ_p, so δ = ȳ_w · W / (W + σ_n² /
    σ_p²) with W = Σ w_i (its rows' source weights). Setting σ_p² = σ_n² · n_s / (λ · W) makes that
    ȳ_w · n_s / (n_s + λ). A scope with no rows of its phase gets τ itself."""
    lam = (SCOPE_SOURCE_SIGMA / SCOPE_PRIOR_SIGMA) ** 2
    if n_sources <= 0 or weight <= 0:
        return SCOPE_PRIOR_SIGMA
    return noise_sigma * math.sqrt(n_sources / (lam * weight))


def _scope_rows(records: list[FitRecord], spec: Spec, name: str) -> list[FitRecord]:
    """The rows that identify a scoped parameter: decode rows for η_bw (the weight stream) and t_layer (the fixed
    time of a decode step), prefill rows for η_c."""
    fam, key = name.split(":")
    if fam == "eta_bw_fam":
        return [r for r in records if r.phase == "decode" and family(r.chip) == key]
    if fam == "t_layer_s":
        return [r for r in records if r.phase == "decode" and r.chip.generation == key]
    if fam == "eta_bw":
        if key in spec.gen_eta_bw:
            return [r for r in records if r.phase == "decode" and r.chip.generation == key]
        return [r for r in records if r.phase == "decode" and r.chip.tier == key
                and r.chip.generation not in spec.gen_eta_bw]
    return [r for r in records if r.phase == "prefill"
            and spec.eta_c_family.get(r.chip.generation, r.chip.generation) == key]


def fit_hierarchical(records: list[FitRecord], spec: Spec, priors: dict[str, tuple[float, float]] | None = None,
                     noise_sigma: float = NOISE_SIGMA, start: tuple[dict, dict] | None = None):
    """Fit with per-tier η_bw and per-generation η_c as shrunk random effects (:func:`scope_prior_sigma`).

    Two stages (empirical Bayes): (1) one pooled η_bw and η_c for all chips; (2) the scoped fit, each scoped
    parameter's prior centred on the pooled value with the log-sigma that shrinks its offset by its number of
    independent source groups. -> (params, diagnostics) of stage 2; diagnostics["pooled"] holds stage 1's.
    ``start``: (pooled, params) of a previous fit to start both stages from (:func:`fit_source_robust`)."""
    priors = dict(priors or {})
    pooled_spec = replace(spec, tier_eta_bw=False, gen_eta_bw=(), gen_eta_c=False, gen_t_layer=(), family_eta_bw=False)
    pooled, _ = fit_efficiency_least_squares(records, pooled_spec, priors=priors, noise_sigma=noise_sigma,
                                             start=start[0] if start else None)
    scoped = dict(priors)
    for name in _param_names(records, spec):
        fam = name.split(":")[0]
        if fam == "eta_bw_fam":  # a family's factor: centred on 1 (its tier's value), shrunk by its sources
            rows = _scope_rows(records, spec, name)
            scoped[name] = (1.0, scope_prior_sigma(len({r.source for r in rows}), sum(r.weight for r in rows),
                                                   noise_sigma))
            continue
        centre = pooled.get(f"{fam}:*", pooled.get(fam)) if ":" in name else None
        if fam not in ("eta_bw", "eta_c", "t_layer_s") or name.endswith(":*") or centre is None:
            continue
        rows = _scope_rows(records, spec, name)
        sigma = scope_prior_sigma(len({r.source for r in rows}), sum(r.weight for r in rows), noise_sigma)
        scoped[name] = (centre, sigma)
    params, diag = fit_efficiency_least_squares(records, spec, priors=scoped, noise_sigma=noise_sigma,
                                                start=start[1] if start else None)
    diag["pooled"] = pooled
    return params, diag


# --------------------------------------------------------------------------- the typical source: a robust centre
# Every source counts once (source_weights), but in least squares one pathological source still moves everybody by
# its offset / G (issue 33: agnelnieves/tolkin's Python stack with a chat template on M1 Max, 2.1x slower than
# predicted on mlx-lm decode and prefill, weighed as much as a 166-row benchmark). The typical source is a robust
# centre: a Huber M-estimator over source groups (Huber 1964, "Robust estimation of a location parameter"; fitted
# by iteratively reweighted least squares, Holland & Welsch 1977). Each (source group, phase) g gets the weight
# h_g = min(1, c / |m_g|), m_g its weight-averaged log(predicted / measured) under the current fit, and the fit is
# repeated with the rows' weights times h_g. c = the between-source scale: one source lands about ±15 % from the
# typical one (SCOPE_SOURCE_SIGMA, WRAPPER_SOURCE_SIGMA: the held-out sources' biases in python -m
# calibration.report), so a source within it keeps its full weight and one beyond it pulls with a bounded force c.
SOURCE_HUBER_C = SCOPE_SOURCE_SIGMA
ROBUST_ITERATIONS = 3   # reweightings after the plain fit, each started from the previous solution


def source_offsets(records: list[FitRecord], predicted) -> dict[tuple[str, str], float]:
    """{(source group, phase): the row-weighted mean of log(predicted / measured)} of its rows."""
    num: dict[tuple[str, str], float] = defaultdict(float)
    den: dict[tuple[str, str], float] = defaultdict(float)
    for r, p in zip(records, predicted):
        num[(r.source, r.phase)] += r.weight * math.log(p / r.value)
        den[(r.source, r.phase)] += r.weight
    return {g: num[g] / den[g] for g in num if den[g] > 0}


def huber_weight(m: float, c: float = SOURCE_HUBER_C) -> float:
    """Huber's weight ψ(m) / m of a source's offset m: 1 within ±c, c / |m| beyond."""
    return 1.0 if abs(m) <= c else c / abs(m)


def huber_source_weights(records: list[FitRecord], predicted,
                         c: float = SOURCE_HUBER_C) -> tuple[list[FitRecord], dict[tuple[str, str], float]]:
    """The records with each row's weight times its (source group, phase)'s Huber weight (:func:`huber_weight` of
    :func:`source_offsets`), rescaled per phase so the weights keep their sum (the priors keep their strength).
    -> (records, {(source, phase): Huber weight})."""
    h = {g: huber_weight(m, c) for g, m in source_offsets(records, predicted).items()}
    before, after = defaultdict(float), defaultdict(float)
    for r in records:
        before[r.phase] += r.weight
        after[r.phase] += r.weight * h[(r.source, r.phase)]
    out = [replace(r, weight=r.weight * h[(r.source, r.phase)] * before[r.phase] / after[r.phase]) for r in records]
    return out, h


def fit_source_robust(records: list[FitRecord], fit, iterations: int = ROBUST_ITERATIONS,
                      c: float = SOURCE_HUBER_C):
    """The source-level Huber M-estimate: ``fit(records, start)`` -> (params, diagnostics), then ``iterations``
    refits on :func:`huber_source_weights` of the current fit's predictions (always reweighting the given records,
    so the result is a function of the data alone), each started from the previous solution (``start``: its
    (pooled, params) for :func:`fit_hierarchical`). diagnostics["huber"] holds the last weights."""
    params, diag = fit(records, None)
    h: dict = {}
    for _ in range(iterations):
        rw, h = huber_source_weights(records, diag["predicted"], c)
        params, diag = fit(rw, (diag.get("pooled", params), params))
    diag["huber"] = h
    return params, diag


# The dequantization factor q of a weight class is a kernel property (a quantized matmul against the same matmul on
# float weights: mlx's affine qmm vs its bf16 gemm, ggml's kernel_mul_mm per type), seen cleanly only inside one
# source: the same Mac, model, build and prompt run on float and on quantized weights. Across sources it is
# confounded with the sources' own speed (issue 33: mlx-lm's q_affine fitted 0.62 when the users measuring only
# 4-bit models were slower, while mlx-lm BENCHMARKS.md measures Qwen3-4B 4-bit at 0.91 of its bf16 prefill).
# So a class with such contrasts gets a prior at their geometric mean, log-sigma QUANT_CONTRAST_SIGMA.
QUANT_CONTRAST_SIGMA = 0.05


def within_source_quant_priors(records: list[FitRecord]) -> dict[str, tuple[float, float]]:
    """{"q_<class>": (ratio, sigma)} from prefill rows that differ only in their weights' class: same source group,
    chip, model geometry (layers, matmul parameters), prompt, depth, batch and build era, one group float. ratio =
    the geometric mean over such groups of (geometric mean of the class's rates) / (that of the float rates).
    Only the matmul part of a prefill scales with q, so the rate ratio lies between q and 1: the prior errs toward
    no dequantization cost, and the data may pull it lower."""
    groups: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        if r.phase != "prefill":
            continue
        key = (r.source, r.chip_id, r.geo.n_layers, round(r.geo.matmul_params), r.prompt, r.depth, r.batch, r.era)
        groups[key][r.geo.quant_class].append(math.log(r.value))
    ratios: dict[str, list[float]] = defaultdict(list)
    for by_class in groups.values():
        if "float" not in by_class:
            continue
        f = float(np.mean(by_class["float"]))
        for c, v in by_class.items():
            if c != "float":
                ratios[c].append(float(np.mean(v)) - f)
    return {f"q_{c}": (min(1.0, math.exp(float(np.mean(v)))), QUANT_CONTRAST_SIGMA) for c, v in sorted(ratios.items())}


# --------------------------------------------------------------------------- params -> constants
def _complete_default(d: dict, allp: dict[str, float], runtime: str) -> None:
    """Complete the default scope of :func:`constants_from_params`: unfitted fields from the fixed values, then
    the priors."""
    for p in SHARED:
        d.setdefault(p, allp.get(p, BASE_PRIORS[p][0]))
    for p in OPTIONAL_FIXED:  # carried when given (a user fit keeps the shipped value), else unset: 0
        if p in allp:
            d.setdefault(p, allp[p])
    for p, v in KERNELS[runtime].items():
        d.setdefault(p, v)
    d.setdefault("eta_bw", allp.get("eta_bw:*", BASE_PRIORS["eta_bw"][0]))
    d.setdefault("eta_c", allp.get("eta_c:*", BASE_PRIORS["eta_c"][0]))
    d["quant_prefill_factor"] = {
        c: d.get("quant_prefill_factor", {}).get(c, allp.get(f"q_{c}", 1.0 if c == "float" else BASE_PRIORS[f"q_{c}"][0]))
        for c in ("float", "legacy", "kquant", "iquant", "mxfp4", "affine", "fp4")}


def constants_from_params(params: dict[str, float], fixed: dict[str, float] | None = None,
                          runtime: str = "llama.cpp") -> dict[str, SpeedConstants]:
    """Split fitted parameters into scoped SpeedConstants: {'default': ..., 'tier-max': ..., 'gen-M3': ...}.

    The default η_bw / η_c is the geometric mean over the fitted groups (for chips of an unseen tier)."""
    allp = {**(fixed or {}), **params}
    out: dict[str, dict] = defaultdict(dict)
    bw = {k.split(":")[1]: v for k, v in params.items() if k.startswith("eta_bw:")}
    ec = {k.split(":")[1]: v for k, v in params.items() if k.startswith("eta_c:")}
    for t, v in bw.items():
        out["default" if t == "*" else f"gen-{t}" if t in GENERATIONS else f"tier-{t}"]["eta_bw"] = v
    bw = {t: v for t, v in bw.items() if t not in GENERATIONS}  # the default: a mean over tiers
    for g, v in ec.items():
        out["default" if g == "*" else f"gen-{g}"]["eta_c"] = v
    if bw and "*" not in bw:
        out["default"]["eta_bw"] = float(np.exp(np.mean(np.log(list(bw.values())))))
    if ec and "*" not in ec:
        out["default"]["eta_c"] = float(np.exp(np.mean(np.log(list(ec.values())))))
    for p in (*SHARED, *OPTIONAL_FIXED):
        if p in params:
            out["default"][p] = params[p]
    tl = {k.split(":")[1]: v for k, v in params.items() if k.startswith("t_layer_s:")}
    for g, v in tl.items():
        out[f"gen-{g}"]["t_layer_s"] = v
    if tl and "t_layer_s" not in params:  # every generation has its own: the default (a chip of none) is their
        out["default"]["t_layer_s"] = layer_time(params, "")  # geometric mean, as eta_c's
    qf = {k[2:]: v for k, v in params.items() if k.startswith("q_")}
    if qf:
        out["default"]["quant_prefill_factor"] = {"float": allp.get("q_float", 1.0), **qf}
    for chip_id, v in _family_eta_bw(params, bw).items():
        out[chip_id]["eta_bw"] = v
    _nax_scopes(out, runtime)
    if fixed is not None:  # complete the default scope: unfitted fields from ``fixed``, then the priors
        _complete_default(out["default"], allp, runtime)
    return {s: SpeedConstants(**{k: (min(v, 1.0) if k.startswith("eta") else v) for k, v in d.items()})
            for s, d in out.items()}


def _nax_scopes(out: dict[str, dict], runtime: str) -> None:
    """MLX: today's expert kernels (NAX_KERNELS) in the scope of each generation with GPU matrix units."""
    if runtime == "mlx-lm":
        for g in sorted({c.generation for c in profiles.builtin_chips() if c.gpu_matrix_units}):
            out[f"gen-{g}"].update(NAX_KERNELS)


def _family_eta_bw(params: dict[str, float], bw: dict[str, float]) -> dict[str, float]:
    """{chip id: eta_bw} of every shipped bin of a family with a fitted factor (FAMILY_ETA_BW), the chip scope of
    the planner's chain (the last before a user's calibration): its generation's or tier's value times the factor.
    The shipped chips only, never a user's own."""
    out = {}
    for key, f in params.items():
        if key.startswith("eta_bw_fam:"):
            for chip in profiles.builtin_chips():
                base = bw.get(chip.generation, bw.get(chip.tier, bw.get("*")))
                if family(chip) == key.split(":")[1] and base is not None:
                    out[chip.id] = base * f
    return out


def full_constants(params: dict[str, float], fixed: dict[str, float], chip: Chip,
                   runtime: str = "llama.cpp") -> SpeedConstants:
    """Constants for one chip from a parameter dict, with the planner's lookup rules (gen falls back to older)."""
    allp = {**fixed, **params}
    k = {p: allp.get(p, BASE_PRIORS[p][0]) for p in SHARED}
    k.update({p: allp.get(p, v) for p, v in OPTIONAL_FIXED.items()})
    k.update(row_kernels(runtime, chip))
    bw = {p.split(":")[1]: v for p, v in allp.items() if p.startswith("eta_bw:")}
    ec = {p.split(":")[1]: v for p, v in allp.items() if p.startswith("eta_c:")}
    tiers = [v for t, v in bw.items() if t not in GENERATIONS]
    # the planner's chain: default -> tier -> generation (a GEN_ETA_BW generation's eta_bw wins over the tier's) -> chip
    k["eta_bw"] = (bw.get(chip.generation) or bw.get(chip.tier) or bw.get("*")
                   or float(np.exp(np.mean(np.log(tiers))))) * allp.get(f"eta_bw_fam:{family(chip)}", 1.0)
    older = [g for g in ec if g != "*" and g <= chip.generation]
    k["eta_c"] = ec.get("*") or (ec[max(older)] if older else float(np.exp(np.mean(np.log(list(ec.values()))))))
    k["t_layer_s"] = layer_time(allp, chip.generation)
    k["quant_prefill_factor"] = {c: allp.get(f"q_{c}", 1.0 if c == "float" else BASE_PRIORS[f"q_{c}"][0])
                                 for c in ("float", "legacy", "kquant", "iquant", "mxfp4", "affine", "fp4")}
    return SpeedConstants(**{a: (min(v, 1.0) if a.startswith("eta") else v) for a, v in k.items()})


def predict_record(r: FitRecord, consts: SpeedConstants) -> float:
    """Aggregate tok/s of one record through planner.throughput (the path the CLI uses)."""
    if r.kernel_overrides:  # the kernels of the row's month, not today's
        consts = consts.model_copy(update=dict(r.kernel_overrides))
    rf = tp.Roofline(geo=r.geo, bw=tp.bandwidth(r.chip),
                     flops=tp.peak_flops(r.chip, profiles.builtin_chips())[0]
                     * (consts.matrix_unit_factor if r.chip.gpu_matrix_units else 1.0),
                     k=consts, runtime_family="mlx-lm" if r.engine == "mlx-lm" else "llama.cpp",
                     flash_attn=r.flash_attn, chunk=r.chunk, prefill_batch=r.prefill_batch,
                     shared_prefix=r.shared_prefix, unified_kv=r.unified_kv,
                     attn_unfused=tp.unfused_attention(r.engine, r.chip))
    if r.phase == "prefill":
        return r.prompt * r.batch / rf.reported_prefill_time(r.prompt, r.depth, r.batch)
    return r.batch * max(r.gen, 1) / rf.decode_time(r.batch, r.depth, max(r.gen, 1))


# --------------------------------------------------------------------------- the shipped fit
def source_weights(records: list[FitRecord]) -> list[FitRecord]:
    """Every source group counts once per phase: a row of group g weighs N / (G · n_g), with n_g the group's rows
    of that phase, G the groups and N the rows of the phase (so the weights still sum to N and the priors keep their
    strength). Two groups of 1 and 9 rows weigh 5 and 5/9 per row: 5 each in all. A source is one benchmark
    table, thread or script with its own build, settings and machine: the fit's centre is the typical source, not
    the source that posted most rows (issue 33: the maintainer's M2 Ultra benches and the best runs of llama.cpp
    discussion #4167 made the model as fast as an expert's idle, tuned Mac)."""
    n = Counter((r.source, r.phase) for r in records)
    rows = Counter(r.phase for r in records)
    groups = Counter(ph for _, ph in n)
    return [replace(r, weight=rows[r.phase] / (groups[r.phase] * n[(r.source, r.phase)])) for r in records]


def load_training_records(paths=None) -> tuple[dict[str, list[FitRecord]], Counter]:
    """Usable rows of the training CSVs (default: every measured-benchmark CSV under calibration/data,
    :func:`training_files`) as FitRecords by runtime, each source group weighted once (:func:`source_weights`).
    Rows of files other than measured_benchmarks_train.csv are labelled ``<file stem> row <id>``."""
    from calibration.dataset import load_measurements, usable_for_efficiency

    paths = [paths] if isinstance(paths, (str, Path)) else (paths or training_files())
    recs, skipped = [], Counter()
    for p in paths:
        ms = [m for m in load_measurements(p) if usable_for_efficiency(m)]
        prefix = "" if Path(p).name == TRAIN_FILES[0].name else f"{Path(p).stem} "
        r, s = records_from_measurements(ms, prefix)
        recs += r
        skipped += s
    by_rt: dict[str, list[FitRecord]] = defaultdict(list)
    for r in recs:
        by_rt[r.runtime].append(r)
    return {k: source_weights(v) for k, v in by_rt.items()}, skipped


# A wrapper's overhead factor per phase (fit_wrapper_factors): each source group's mean log(measured / engine
# prediction) m_g, pooled as a random effect: log f = Σ m_g / (G + (σ_s / σ_p)²). σ_s is the scatter of one source
# around the typical one (the per-source LOSO biases of llama.cpp spread about ±15 %), σ_p the prior on a
# wrapper's log overhead around 1 (no overhead, the engine's speed).
WRAPPER_SOURCE_SIGMA = 0.15
WRAPPER_PRIOR_SIGMA = 0.3


# A batched-decode kernel efficiency (η_mv: 2 <= B <= mv_max_batch on the matrix-vector kernels; η_c_decode: larger
# B on the matrix-matrix kernel) is fitted for a runtime only when this many source groups measured that regime.
# Source weighting gives a group with two batched rows the weight of a whole benchmark table: mlx-lm's one such
# group (jundot/omlx#3348, an MoE hybrid at 3 and 5 streams sharing a prefix) alone drew η_mv from llama.cpp's
# 0.36 to 0.11, which made every speculative draft on mlx-lm a loss (verifying 4 tokens costed like 14).
# Only batched rows of dense models count: they are the kernels' efficiency alone. A MoE's batched step also reads
# the union of its tokens' routed experts (Geometry.expert_reads, uniform routing), so its offset mixes η with the
# routing and gather-kernel model: two MoE groups (omlx#3348 above; EschaLabs/escha-mlx, Qwen3.6-35B-A3B at 2-8
# sequences) drew mlx-lm's η_mv to its bound of 1.0, the mv kernels at the GPU's peak FLOPS.
MIN_BATCHED_SOURCES = 2
# The log-sigma of a borrowed value: held where it is (the rows of one group cannot move it).
BORROWED_SIGMA = 0.01


def borrowed_kernel_priors(records: list[FitRecord], engine_params: dict[str, float],
                           runtime: str) -> dict[str, tuple[float, float]]:
    """{param: (engine's value, BORROWED_SIGMA)} for each batched-decode efficiency whose regime fewer than
    MIN_BATCHED_SOURCES source groups measured on ``runtime`` with a dense model: it keeps the value fitted on
    llama.cpp's rows (the same regime's prior, planner.throughput's step rules) instead of one group's offset."""
    mv = KERNELS[runtime]["mv_max_batch"]
    regime = {"eta_mv": lambda b: 2 <= b <= mv, "eta_c_decode": lambda b: b > mv}
    out = {}
    for p, inside in regime.items():
        groups = {r.source for r in records if r.phase == "decode" and inside(r.batch) and not r.geo.n_experts}
        if len(groups) < MIN_BATCHED_SOURCES and p in engine_params:
            out[p] = (engine_params[p], BORROWED_SIGMA)
    return out


def fit_wrapper_factors(records: list[FitRecord], predicted) -> dict[str, float]:
    """{"decode_factor": f, "prefill_factor": f} of a wrapper from its rows and the engine's predictions for them
    (phases without rows are left out, i.e. 1). Sources count once (the mean of each group, then over groups),
    shrunk toward 1 by the prior; a factor above 1 is clipped to 1 (a wrapper adds work to its engine's step: a
    faster source is the between-source scatter, which the likely range carries).

    The centre is the typical source's, as the engine fit's (fit_source_robust): each source's mean m_s weighs
    h_s = huber_weight(m_s − μ) (1 within ±SOURCE_HUBER_C of the centre, bounded beyond), μ = Σ h_s m_s / (Σ h_s + λ)
    iterated to its fixed point (Huber 1964; Holland & Welsch 1977). With the plain mean one user's Mac far off moved
    every Ollama user's prediction: famstack's M1 Max (its rows 36 % slower than the engine predicts) put the
    held-out Ollama sources' median at -5.2 % (too slow)."""
    out = {}
    lam = (WRAPPER_SOURCE_SIGMA / WRAPPER_PRIOR_SIGMA) ** 2
    for phase in ("decode", "prefill"):
        by_src: dict[str, list[float]] = defaultdict(list)
        for r, p in zip(records, predicted):
            if r.phase == phase:
                by_src[r.source].append(math.log(r.value / p))
        if by_src:
            m = [float(np.mean(v)) for v in by_src.values()]
            out[f"{phase}_factor"] = min(1.0, math.exp(robust_source_centre(m, lam)))
    return out


def robust_source_centre(m: list[float], lam: float, c: float = SOURCE_HUBER_C, iterations: int = 50) -> float:
    """The Huber M-estimate of the sources' offsets ``m`` shrunk toward 0 by ``lam`` (fit_wrapper_factors):
    μ = Σ h_s m_s / (Σ h_s + λ), h_s = huber_weight(m_s − μ, c), from the shrunk mean. Equal to the shrunk mean
    Σ m_s / (k + λ) while every source lies within c of it."""
    mu = sum(m) / (len(m) + lam)
    for _ in range(iterations):
        h = [huber_weight(x - mu, c) for x in m]
        new = sum(w * x for w, x in zip(h, m)) / (sum(h) + lam)
        if abs(new - mu) < 1e-12:
            return new
        mu = new
    return mu


def phase_factors(factors: dict) -> dict[str, float]:
    """The ``*_factor`` entries of a fit_wrapper_engine_factors entry (its "prior" list dropped)."""
    return {k: v for k, v in factors.items() if k.endswith("_factor")}


# An engine's factor is fitted only when this many source groups measured it on that phase; otherwise it keeps the
# prior (1: the engine's speed) and its likely range is the between-source spread of all wrapper sources
# (loso_ranges). One source's offset is its Mac and habits as much as the engine.
MIN_FACTOR_SOURCES = 2
# The engine factor scales the whole step; no per-engine depth slope is fitted. Ollama's own engine attends over the
# used cells only, padded to 256 (kvcache/causal.go buildMask / Get at v0.18.0, CachePadding 256 in
# ml/backend/ggml/ggml.go CacheConfig, as llama.cpp pads n_kv), with the same vendored Metal flash-attention kernels
# as its llama.cpp runner (llama.cpp ec98e2002, v0.14.0 to v0.24.0: the split-KV vector kernel, nwg 32); its mask is
# built on the CPU per step, one float per cell (O(context), microseconds). The held-out deep decodes agree: on
# AlexHiesch's M3 Max (Ollama 0.19-0.23) its qwen3.6-27b decodes at 32-131k tokens within +10 % of the engine's
# slope, while famstack's M1 Max decodes steeper than predicted on both runners (Llama 3.1 8B on the llama.cpp
# runner too: +13 % at 454 tokens, +40 % at 12477): the Mac's or the bench's, not the engine's.


def fit_wrapper_engine_factors(records: list[FitRecord], predicted) -> dict[str, dict]:
    """{engine: {"decode_factor": f, ..., "prior": [phases left at the prior]}} for a wrapper with several
    engines (FitRecord.wrapper_engine: Ollama's llama-server, ollamarunner, llamarunner): fit_wrapper_factors on
    each engine's rows, a phase measured by fewer than MIN_FACTOR_SOURCES source groups left at 1."""
    out: dict[str, dict] = {}
    for eng in sorted({r.wrapper_engine for r in records}):
        rs = [(r, p) for r, p in zip(records, predicted) if r.wrapper_engine == eng]
        fitted = fit_wrapper_factors([r for r, _ in rs], [p for _, p in rs])
        f: dict = {"prior": []}
        for phase in ("decode", "prefill"):
            n_src = len({r.source for r, _ in rs if r.phase == phase})
            if n_src >= MIN_FACTOR_SOURCES:
                f[f"{phase}_factor"] = fitted[f"{phase}_factor"]
            elif n_src:
                f["prior"].append(phase)
        out[eng] = f
    return out


# Wrappers whose decode factor varies by chip family (tier x generation, ``family``): a random effect around the
# wrapper's factor (fit_wrapper_family_effects). Ollama's held-out sources of one family agree with each other more
# than with llama.cpp's family constants (2026-12-07 dump of leave_one_source_out, median log(measured / predicted)
# per source: M1 Max -0.27, -0.25, -0.29 from three users; M3 Pro +0.26, +0.26, +0.07; base M4 +0.06, +0.13, +0.14,
# +0.13; M3 Max -0.14, -0.22), while llama.cpp's own sources of those families do not (M1 Max -0.06, -0.04, -0.03).
# Simulated on that dump, each source held out and the effects taken from the others: Ollama decode MAPE over
# sources 16.3 -> 13.9 %, rows inside the 80 % range 67 -> 74 %. The same effect on mlx-lm made held-out sources
# worse (21.6 -> 23.5 %: its sources of one family disagree, chanunc's and guruswami's M3 Ultras a factor 1.45 apart), and
# LM Studio's engines have one or two sources per family: neither gets one.
WRAPPER_FAMILY_EFFECTS = ("ollama",)
MIN_FAMILY_SOURCES = 2  # source groups of one family before it gets an effect (MIN_FACTOR_SOURCES' reason)


def fit_wrapper_family_effects(records: list[FitRecord], predicted, phase: str = "decode") -> dict[str, float]:
    """{family: factor} on a wrapper's ``phase`` factor, from its rows and their predictions (engine factors
    applied): a one-way random-effects model of the source offsets m_s = mean log(measured / predicted) of each
    source group, m_s = μ + δ_f + e_s, δ_f ~ N(0, τ²), e_s ~ N(0, σ²). μ is the median of the m_s; σ² the pooled
    variance of sources around their family's mean (families with two or more sources); τ² the variance of the
    family means less the part σ² explains, Var(mean_f) − mean(σ² / k_f), floored at 0 (the ANOVA moment estimator
    of an unbalanced one-way layout: Searle, Casella & McCulloch 1992, Variance Components, ch. 3). Each family's
    effect is its shrunk mean deviation Σ (m_s − μ) / (k_f + σ² / τ²) (the BLUP), kept for families measured by
    MIN_FAMILY_SOURCES source groups. Empty without between-family variance."""
    by_src: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r, p in zip(records, predicted):
        if r.phase == phase:
            by_src[(family(r.chip), r.source)].append(math.log(r.value / p))
    offsets = {k: float(np.mean(v)) for k, v in by_src.items()}
    if len(offsets) < 3:
        return {}
    mu = float(np.median(list(offsets.values())))
    by_fam: dict[str, list[float]] = defaultdict(list)
    for (fam, _), m in offsets.items():
        by_fam[fam].append(m - mu)
    multi = [v for v in by_fam.values() if len(v) > 1]
    dof = sum(len(v) - 1 for v in multi)
    if dof == 0 or len(by_fam) < 2:
        return {}
    sigma2 = sum(float(np.sum((np.array(v) - np.mean(v)) ** 2)) for v in multi) / dof
    means = np.array([np.mean(v) for v in by_fam.values()])
    ks = np.array([len(v) for v in by_fam.values()])
    tau2 = float(np.var(means, ddof=1) - np.mean(sigma2 / ks))
    if tau2 <= 0.0:
        return {}
    lam = sigma2 / tau2
    return {fam: math.exp(sum(v) / (len(v) + lam)) for fam, v in sorted(by_fam.items())
            if len(v) >= MIN_FAMILY_SOURCES}


# MLX's prefill efficiency η_c is fitted per GPU family, not per generation: MLX picks its Metal kernels by the
# GPU's architecture generation (Device::get_architecture_gen(), applegpu_g13 = M1, g14 = M2, g15 = M3, g16 = M4,
# g17 = M5) at two thresholds: gen >= 15 (mlx/backend/metal/quantized.cpp at v0.32.0, use_qmv_wide: "affine
# qmv_wide only beats qmv on gen-15+"; the M3 GPU's new shader core with Dynamic Caching, Apple newsroom 2023-10-30)
# and gen >= 17 with macOS 26.2 (the M5 neural accelerators, mlx device.cpp is_nax_available). One source measured
# each generation's prefill (issue 33), so a per-generation η_c was that source's habit: held out, M3 Ultra
# (guruswami-ai) missed by -22 %, M2 Max by +84 %. M2 shares M1's η_c and M4 shares M3's.
MLX_ETA_C_FAMILY = {"M2": "M1", "M4": "M3"}


def mlx_family_eta_c(params: dict[str, float], records: list[FitRecord]) -> dict[str, float]:
    """Fitted mlx-lm params with each family member's η_c written out (eta_c:M2 = eta_c:M1...) for the generations
    the records measured, so the shipped gen-M2 / gen-M4 profiles say their value instead of falling back."""
    out = dict(params)
    for g, lead in MLX_ETA_C_FAMILY.items():
        if f"eta_c:{lead}" in params and any(r.chip.generation == g for r in records):
            out[f"eta_c:{g}"] = params[f"eta_c:{lead}"]
    return out


def engine_constants(fits, runtime: str, r: FitRecord) -> SpeedConstants:
    """The engine's constants for one record (a wrapper: the engine it wraps), its build era applied. An engine the
    refit has no rows for falls back to the priors (mlx-lm) the way the planner's defaults would."""
    engine = WRAPPERS.get(runtime, runtime)
    params, fixed = (fits[engine][0], fits[engine][1]) if engine in fits else ({}, {})
    k = full_constants(params, fixed, r.chip, engine)
    return era_adjusted(k, params, r.era, r.old_matrix_kernels)


def fit_all(data: dict[str, list[FitRecord]], exclude_chip: str | None = None,
            exclude_source: str | None = None) -> dict[str, tuple[dict, dict, dict]]:
    """Fit every runtime; returns {runtime: (params, fixed, diagnostics)}. ``exclude_chip`` drops one chip (LOCO),
    ``exclude_source`` one source_group (LOSO); the rows left are re-weighted so each remaining source counts once.
    Wrappers (:data:`WRAPPERS`) get their params as {"decode_factor", "prefill_factor"} over the engine's fit."""
    def keep(rs):
        return source_weights([r for r in rs if r.chip_id != exclude_chip and r.source != exclude_source])

    out = {}
    lc = keep(data.get("llama.cpp", []))
    lc_spec = Spec("llama.cpp", gen_eta_bw=GEN_ETA_BW, gen_t_layer=GEN_T_LAYER, family_eta_bw=FAMILY_ETA_BW)
    lc_spec.free.add("eta_attn_decode")   # kernel_flash_attn_ext_vec (throughput.Roofline.eta_attn_decode)
    lc_spec.free.add("t_recurrent_layer_s")  # a recurrent layer's kernel chain (throughput.Roofline.fixed_time)
    lc_priors = {**within_source_quant_priors(lc), **LLAMA_CPP_PRIORS}
    p_lc, d_lc = fit_source_robust(lc, lambda rs, x0: fit_hierarchical(rs, lc_spec, priors=lc_priors, start=x0))
    out["llama.cpp"] = (p_lc, {}, d_lc)
    # mlx-lm: llama.cpp's shared constants become priors (sigma 0.5 in log)
    # t_layer is not borrowed: mlx-lm encodes one lazily built graph per step (mlx_lm/generate.py generate_step,
    # mx.async_eval), llama.cpp one ggml graph of per-op Metal dispatches; their fixed costs are separate fits
    shared = {k: (v, 0.5) for k, v in p_lc.items() if k in ("eta_attn", "eta_c_decode", "eta_mv", "moe_bw_factor")}
    mx = keep(data.get("mlx-lm", []))
    if mx:
        # per-tier η_bw and per-generation η_c as llama.cpp's, shrunk toward mlx-lm's pooled values by their
        # source groups (fit_hierarchical): M3 Ultra prefills 1.5x faster per FLOP than M1/M2 users' Macs
        spec = Spec("mlx-lm", tier_eta_bw=True, gen_eta_c=True, eta_c_family=MLX_ETA_C_FAMILY,
                    free={"eta_bw", "eta_c", "eta_attn", "eta_c_decode", "eta_mv", "moe_bw_factor", "t_layer_s",
                          "t_moe_layer_s", "matrix_unit_factor", "q", "eta_kv", "t_wire_s_per_gb"})
        mx_priors = {**shared, **within_source_quant_priors(mx), **borrowed_kernel_priors(mx, p_lc, "mlx-lm")}
        p_mx, d_mx = fit_source_robust(mx, lambda rs, x0: fit_hierarchical(rs, spec, priors=mx_priors, start=x0))
        p_mx = mlx_family_eta_c(p_mx, mx)
        out["mlx-lm"] = (p_mx, {}, d_mx)
    for rt in WRAPPERS:
        recs = keep(data.get(rt, []))
        if not recs:
            continue
        base = [predict_record(r, engine_constants(out, rt, r)) for r in recs]
        # one factor per engine, each phase fitted only when MIN_FACTOR_SOURCES source groups measured it; the
        # shipped one is the current engine's (Ollama), or the wrapper's one engine (LM Studio's, wrapper_engine "")
        per_engine = fit_wrapper_engine_factors(recs, base)
        diag: dict = {}
        engine = ollama_engines()["current_engine"] if any(r.wrapper_engine for r in recs) else ""
        factors = phase_factors(per_engine.get(engine, {}))
        if engine:
            diag["engine_factors"] = per_engine
        if rt in WRAPPER_FAMILY_EFFECTS:  # the family's offset on the rows' own factors (fit_wrapper_family_effects)
            own = [b * _record_factors(rt, r, factors, diag).get(f"{r.phase}_factor", 1.0) for r, b in zip(recs, base)]
            diag["family_factors"] = fit_wrapper_family_effects(recs, own)
        pred = np.array([b * wrapper_factors(rt, r, factors, diag)[f"{r.phase}_factor"] for r, b in zip(recs, base)])
        value = np.array([r.value for r in recs])
        out[rt] = (factors, {}, {"predicted": pred, "ape": np.abs(pred / value - 1) * 100, "n_records": len(recs),
                                 "cost": 0.0, "sources": len({r.source for r in recs}), **diag})
    return out


def held_out_constants(fits, runtime: str, r: FitRecord) -> SpeedConstants:
    """Constants a refit gives one held-out record, with its build era applied: the engine's, and a wrapper's
    measured factors on top (none when the refit has no rows of that wrapper: the engine's speed)."""
    k = engine_constants(fits, runtime, r)
    if runtime in WRAPPERS and runtime in fits:
        k = k.model_copy(update=wrapper_factors(runtime, r, fits[runtime][0], fits[runtime][2]))
    return k


def wrapper_factors(runtime: str, r: FitRecord, shipped: dict, diag: dict) -> dict[str, float]:
    """A wrapper's decode and prefill factors for one record, as the fit and a held-out prediction use them: its
    engine's or the shipped ones (_record_factors, 1 for a phase without), the decode one with its chip family's
    (with_family)."""
    f = {"decode_factor": 1.0, "prefill_factor": 1.0, **_record_factors(runtime, r, shipped, diag)}
    f["decode_factor"] = with_family(f["decode_factor"], diag, r.chip)
    return f


def family_factor(diag: dict, chip: Chip) -> float:
    """A wrapper's decode factor on ``chip``'s family (fit_wrapper_family_effects), 1 for a family without one."""
    return diag.get("family_factors", {}).get(family(chip), 1.0)


def with_family(factor: float, diag: dict, chip: Chip) -> float:
    """A wrapper's decode factor on ``chip``: its own times its family's, at most 1 (fit_wrapper_factors' rule: a
    wrapper adds work to its engine's step, SpeedConstants.decode_factor ≤ 1)."""
    return min(1.0, factor * family_factor(diag, chip))


def _record_factors(runtime: str, r: FitRecord, shipped: dict, diag: dict) -> dict:
    """A wrapper's factors for one record: its engine's (diag["engine_factors"]) when the wrapper has several
    engines, none when the refit has no rows of the record's engine (the prior: the engine's speed), else the
    shipped ones."""
    per_engine = diag.get("engine_factors")
    if per_engine is None or not r.wrapper_engine:
        return shipped
    return phase_factors(per_engine.get(r.wrapper_engine, {}))


def era_factor(params: dict, era: str) -> float:
    """The prefill build-era factor of ``era``: its own fit, else the nearest newer era's that was fitted (a refit
    without the only source of an era: llama.cpp's Metal prefill only got faster through 2023, calibration/data
    README caveat 1, so a build is at most as fast as the next fitted one, and at most as fast as a current one;
    the "llama.cpp PRs" builds of August/September 2023 are predicted at the October 2023 builds' speed instead of
    a current build's), else 1."""
    if f"era:{era}" in params:
        return params[f"era:{era}"]
    newer = sorted(k for k in params if k.startswith("era:") and k[4:] > era)
    return min(1.0, params[newer[0]]) if newer else 1.0  # and at most a current build's speed


def era_adjusted(k: SpeedConstants, params: dict, era: str, old_matrix_kernels: bool = False) -> SpeedConstants:
    """Constants of an old llama.cpp build: the nuisance build-era factors applied (current builds: unchanged), and
    on matrix-unit chips before llama.cpp's tensor kernels (FitRecord.old_matrix_kernels) the era_mu factor on their
    speed-up."""
    if old_matrix_kernels and "era_mu" in params:
        k = k.model_copy(update={"matrix_unit_factor": max(1.0, k.matrix_unit_factor * params["era_mu"])})
    if era == "current":
        return k
    e = era_factor(params, era)
    # batched decode (B > mv_max_batch) runs at eta_c_decode × eta_c · q: the era factor reaches it through eta_c
    d = params.get("era_decode", 1.0)
    return k.model_copy(update={"eta_c": min(1.0, k.eta_c * e), "eta_bw": min(1.0, k.eta_bw * d),
                                "mv_max_batch": mv_max_batch("llama.cpp", era),
                                "t_layer_s": k.t_layer_s * params.get("era_tl", 1.0)})


def leave_one_source_out(data) -> list[tuple[str, FitRecord, float]]:
    """For every source_group: refit without it, predict its rows. -> [(runtime, record, predicted tok/s)].
    A source has its own build, settings and habits, so this is the error on a setup nobody fitted."""
    out = []
    for src in sorted({r.source for recs in data.values() for r in recs}):
        fits = fit_all(data, exclude_source=src)
        for rt, recs in data.items():
            for r in recs:
                if r.source == src:
                    out.append((rt, r, predict_record(r, held_out_constants(fits, rt, r))))
    return out


RANGE_QUANTILES = (10.0, 90.0)  # the 80 % likely range
MIN_RANGE_ROWS = 8              # residuals a group needs to give its own spread
MIN_RANGE_SOURCES = 2           # source groups those residuals must come from (one source's scatter is its habits)
MIN_CENTER_ROWS = 5             # residuals a group needs to give its own centre (median)
REGIMES = {"decode": ("decode", "decode_deep", "decode_batched"), "prefill": ("prefill", "prefill_deep")}
RUNTIMES = ("llama.cpp", "mlx-lm", *WRAPPERS)


def weighted_percentiles(x, w, qs) -> np.ndarray:
    """Percentiles ``qs`` (0-100) of ``x`` with weights ``w``: each sorted value sits at the middle of its share of
    the total weight, (S_i − w_i / 2) / S_n (S the running sum), interpolated linearly between them and flat beyond
    the first and last. Equal weights give (i + 1/2) / n, the Hazen percentile; two sources of one row each put the
    median half-way between them whatever the rows of a third."""
    x, w = np.asarray(x, float), np.asarray(w, float)
    order = np.argsort(x, kind="stable")
    x, w = x[order], w[order]
    s = np.cumsum(w)
    pos = (s - w / 2) / s[-1]
    return np.interp(np.asarray(qs, float) / 100.0, pos, x)


def per_source_weights(sources) -> np.ndarray:
    """1 / (rows of the same source) for each entry: every source group's rows sum to one."""
    n = Counter(sources)
    return np.array([1.0 / n[s] for s in sources])


def regime_of(r: FitRecord) -> str:
    return tp.regime(r.phase, r.prompt, r.depth, r.batch, KERNELS[r.runtime]["mv_max_batch"])


MIN_WRAPPER_SPREAD_SOURCES = 3  # wrapper sources (all wrappers together) their between-source spread needs


def wrapper_source_spread(held: list[tuple[str, FitRecord, float]], phase: str) -> tuple[float, float] | None:
    """(low, high) log offsets around the median of the wrapper sources' typical residuals on ``phase``: each
    source group of any wrapper (Ollama, LM Studio) is one point, its median log(measured / predicted), and the
    range is their 10th and 90th percentile (weighted_percentiles, equal weights) minus their median. A wrapper's
    rows come from few sources with their own Macs and engine versions (Ollama changed engines twice): the scatter
    between those sources, not the rows of the source that posted most, is how far a user's setup lands. None
    with fewer than MIN_WRAPPER_SPREAD_SOURCES sources."""
    by_src: dict[tuple[str, str], list[float]] = defaultdict(list)
    for rt, r, p in held:
        if r.phase == phase:
            by_src[(rt, r.source)].append(math.log(r.value / p))
    if len(by_src) < MIN_WRAPPER_SPREAD_SOURCES:
        return None
    med = [float(np.median(v)) for v in by_src.values()]
    lo, mid, hi = weighted_percentiles(med, np.ones(len(med)), [RANGE_QUANTILES[0], 50, RANGE_QUANTILES[1]])
    return float(lo - mid), float(hi - mid)


def _range_centre(groups: dict, keys: list[tuple[str, str]]) -> float:
    """loso_ranges' centre: the source-weighted median of the first group of ``keys`` with enough rows."""
    for i, k in enumerate(keys):
        g = groups.get(k, [])
        # a regime's own offset needs two sources (one source's regime offset is its own habit); the
        # runtime's offset over a phase may rest on one (mlx-lm, Ollama: the runtime differs, not the source)
        if len(g) >= MIN_CENTER_ROWS and (i > 0 or k[1] in REGIMES or len({s for _, s in g}) >= 2):
            return float(weighted_percentiles([x for x, _ in g], per_source_weights([s for _, s in g]), [50])[0])
    return 0.0


def _range_spread(groups: dict, keys: list[tuple[str, str]]) -> tuple[float, float]:
    """loso_ranges' spread: the source-weighted 10th/90th percentile minus the median, first group with enough."""
    for k in keys:
        g = groups.get(k, [])
        if len(g) >= MIN_RANGE_ROWS and len({s for _, s in g}) >= MIN_RANGE_SOURCES:
            lo, med, hi = weighted_percentiles([x for x, _ in g], per_source_weights([s for _, s in g]),
                                               [RANGE_QUANTILES[0], 50, RANGE_QUANTILES[1]])
            return float(lo - med), float(hi - med)
    return 0.0, 0.0


def loso_ranges(held: list[tuple[str, FitRecord, float]]) -> dict[str, dict[str, tuple[float, float]]]:
    """{runtime: {regime or phase: (low, high) factor on the prediction}} from out-of-source residuals
    r = log(measured / predicted), the shipped likely ranges.

    Every source group counts once (each row weighs 1 / its group's rows in the group of residuals,
    weighted_percentiles): the centre is the typical source's offset and the spread the scatter between sources,
    not the habits of the source that posted most rows.
    Centre and spread are taken apart, each from the most specific group that has enough residuals:
    - centre: the median of r in (runtime, regime) when two or more source groups show it, else (runtime, phase),
      else (all runtimes, phase) (MIN_CENTER_ROWS); a runtime's offset is its own, the pooled rows would carry
      llama.cpp's;
    - spread: the 10th and 90th percentile of r minus its median in (runtime, regime), (runtime, phase),
      (all runtimes, regime), (all runtimes, phase), the first with MIN_RANGE_ROWS rows from MIN_RANGE_SOURCES
      source groups: how far one setup lands from another is only seen across sources, so a runtime measured by
      one or two sources borrows the scatter all runtimes show.
    The range is exp(centre + spread), widened to contain the prediction itself.
    Each phase of a runtime's group (range_group) that MIN_BETWEEN_SOURCES source groups measured replaces these
    by the robust between-source interval (between_source_ranges); the rules above are the fallback of the
    phases measured by fewer sources (Ollama's prefill, LM Studio's llama.cpp engine)."""
    groups: dict[tuple[str, str], list[tuple[float, str]]] = defaultdict(list)
    for rt, r, p in held:
        x = (math.log(r.value / p), r.source)
        for key in ((rt, regime_of(r)), (rt, r.phase), ("*", regime_of(r)), ("*", r.phase)):
            groups[key].append(x)

    def centre(keys):
        return _range_centre(groups, keys)

    def spread(keys):
        return _range_spread(groups, keys)

    # a wrapper's spread: how far one wrapper source's typical row lands from another's (wrapper_source_spread)
    wrapper_spread = {ph: wrapper_source_spread([(rt, r, p) for rt, r, p in held if rt in WRAPPERS], ph)
                      for ph in REGIMES}

    def table_of(rt: str) -> dict[str, tuple[float, float]]:
        table = {}
        for ph, regs in REGIMES.items():
            for reg in (ph, *regs):
                c = centre([(rt, reg), (rt, ph), ("*", ph)] if reg != ph else [(rt, ph), ("*", ph)])
                lo, hi = spread([(rt, reg), (rt, ph), ("*", reg), ("*", ph)])
                if rt in WRAPPERS and wrapper_spread[ph] is not None:
                    lo, hi = min(lo, wrapper_spread[ph][0]), max(hi, wrapper_spread[ph][1])
                table[reg] = (round(min(1.0, math.exp(c + lo)), 3), round(max(1.0, math.exp(c + hi)), 3))
        return table

    out = {}
    for rt in RUNTIMES:
        # a phase measured by MIN_BETWEEN_SOURCES sources of the runtime's group: the between-source interval
        out[rt] = {**table_of(rt), **between_source_ranges(held, range_group(rt))}
    return out


# The MLX engine's runtimes (mlx-lm and LM Studio's MLX engine, which runs mlx-lm's models and kernels with its own
# measured overhead factor already in its predictions) share one range table: a between-source predictive range.
MLX_ENGINE_RUNTIMES = ("mlx-lm", "lmstudio-mlx")
# The between-source scale is Huber's "proposal 2" (Huber 1964, Ann. Math. Statist. 35:73; Huber 1981, Robust
# Statistics, ch. 6; statsmodels.robust.scale.Huber with the location given), the scale companion of the fit's
# source-level Huber weights (fit_source_robust): c = 1.345, the tuning constant of 95 % efficiency at the normal
# (Holland & Welsch 1977), started from the normalised MAD 1.4826 · MAD (Rousseeuw & Croux 1993, JASA 88:1273).
# Why not the sample variance of the source offsets: one source at twice the predicted time (tolkin's M1 Max, mlx-lm)
# widened every mlx-lm source's range to 95 % coverage.
HUBER_SCALE_C = 1.345


def huber_beta(c: float) -> float:
    """E[ψ_c(Z)²] for Z ~ N(0, 1): (2Φ(c) − 1) − 2cφ(c) + 2c²(1 − Φ(c)), the consistency constant of Huber's
    scale equation (huber_scale)."""
    n = NormalDist()
    return (2 * n.cdf(c) - 1) - 2 * c * n.pdf(c) + 2 * c * c * (1 - n.cdf(c))


HUBER_SCALE_BETA = huber_beta(HUBER_SCALE_C)
# Source groups a between-source interval needs, regime or phase; a regime with fewer takes its phase's residuals.
# Why 5: clipping one extreme source leaves the scale equation Σ d² / s² = (k − 1)β − c² for the others (see
# huber_scale); that is ≥ 1 (s² ≤ Σ d², the others' deviations not amplified) only from k − 1 ≥ (1 + c²) / β = 3.96,
# k ≥ 5. With 4 sources it is 0.32 (s² = 3.1 × the others' Σ d²); with 3 it is negative (no source can be clipped).
# Meta-analysis calls fewer than 5 studies "very few" for τ² (Bender et al. 2018, Res Synth Methods 9:382).
MIN_BETWEEN_SOURCES = 5


def range_group(runtime: str) -> tuple[str, ...]:
    """The runtimes whose held-out residuals make ``runtime``'s between-source interval: the MLX engine's runtimes
    together (MLX_ENGINE_RUNTIMES), any other runtime alone."""
    return MLX_ENGINE_RUNTIMES if runtime in MLX_ENGINE_RUNTIMES else (runtime,)


def huber_scale(x, c: float = HUBER_SCALE_C, iterations: int = 100) -> float:
    """Huber's proposal 2 scale of ``x`` about its median: the s > 0 with Σ ψ_c((x_i − med) / s)² = (k − 1) · β,
    ψ_c(u) = max(−c, min(c, u)), β = huber_beta(c) (so s estimates σ of normal data), found by the fixed-point
    iteration s ← s · √(Σ ψ² / ((k − 1) β)) from 1.4826 · MAD (HUBER_SCALE_C's references). A value beyond c · s counts
    as c · s however far it lies: one extreme source cannot widen everyone's range. While no value is clipped
    s = √(Σ d² / ((k − 1) β)), the sample sd / √β; with the j largest clipped s² = Σ_rest d² / ((k − 1) β − j c²).
    0 for fewer than two values or no scatter."""
    x = np.asarray(x, float)
    k = len(x)
    if k < 2:
        return 0.0
    d = x - float(np.median(x))
    s = 1.4826 * float(np.median(np.abs(d))) or math.sqrt(float(np.sum(d ** 2)) / (k - 1))
    if s == 0.0:
        return 0.0
    beta = huber_beta(c)
    for _ in range(iterations):
        s_new = s * math.sqrt(float(np.sum(np.clip(d / s, -c, c) ** 2)) / ((k - 1) * beta))
        if abs(s_new - s) <= 1e-12 * s:
            return s_new
        s = s_new
    return s


def between_source_interval(group: list[tuple[float, str]], quantiles=RANGE_QUANTILES) -> tuple[float, float, float]:
    """(centre, low, high) in log units of where a new source's row lands, from held-out residuals
    ``group`` = [(log(measured / predicted), source)]: a random-effects model, each source offset m_s ~ N(μ, τ²) and
    each row of it m_s + e, e ~ N(0, σ_w²). The predictive distribution of a row of a new source is
    N(μ, τ² (1 + 1/k) + σ_w²) (Higgins, Thompson & Spiegelhalter 2009, J. R. Stat. Soc. A 172:137, the prediction
    interval of a random-effects meta-analysis, their eq. 12: Student's t with k − 2 degrees of freedom, since τ is
    estimated from k sources): μ the median of the k source medians,
    τ their Huber scale (huber_scale: a source far off, such as one user's M1 Max at twice the predicted time, counts
    as c · τ away, not its full distance, as the fit's Huber weights bound its pull), σ_w² the source-weighted mean
    squared deviation of rows from their source's median. The range is centre ± t · sd, t the quantile of
    ``quantiles`` of Student's t with k − 2 degrees of freedom (1.638 for 10/90 % and 5 sources, 1.325 for 22; the
    normal's 1.2816 as k grows). On the same held-out predictions (2026-12-06, report.coverage with either
    quantile) the rows inside the 80 % range were 75.0 % (llama.cpp), 79.8 % (mlx-lm) and 60.8 % (Ollama) with
    the normal quantile, 77.1, 81.6 and 63.0 % with t."""
    by: dict[str, list[float]] = defaultdict(list)
    for x, src in group:
        by[src].append(x)
    k = len(by)
    med = {s: float(np.median(v)) for s, v in by.items()}
    m = np.array(list(med.values()))
    tau = huber_scale(m)
    within = sum(float(np.mean([(x - med[s]) ** 2 for x in v])) for s, v in by.items()) / k
    sd = math.sqrt(tau ** 2 * (1 + 1 / k) + within)
    c = float(np.median(m))
    z_lo, z_hi = (float(student_t.ppf(q / 100, max(k - 2, 1))) for q in quantiles)
    return c, c + z_lo * sd, c + z_hi * sd


def between_source_ranges(held: list[tuple[str, FitRecord, float]],
                          runtimes: tuple[str, ...]) -> dict[str, tuple[float, float]]:
    """{regime or phase: (low, high)} for ``runtimes`` (range_group) from their held-out residuals, for each phase
    that MIN_BETWEEN_SOURCES source groups measured: each regime from its own rows when that many source groups show
    it, else its phase's (a regime seen by a few sources, such as llama.cpp's deep prefill by one, would take its
    scatter from sources that may all differ from the next user's; the phase's sources include them).

    Why not loso_ranges' pooled percentiles: the out-of-source error is mostly each source's own offset (mlx-lm: per
    source MAPE 5-15 % around offsets of -25 % to +35 %, issue 33), and one source can hold most rows, so
    source-weighted percentiles of rows put the range inside the spread of source offsets (mlx-lm 62 % of held-out
    rows covered, llama.cpp prefill 70 %). The random-effects prediction interval (between_source_interval) is the
    spread a new user's setup lands in. Phases with fewer sources are left out (loso_ranges' fallback)."""
    # keyed (phase, regime) and (phase, "*"): the regime "decode" and the phase "decode" are different groups
    groups: dict[tuple[str, str], list[tuple[float, str]]] = defaultdict(list)
    for rt, r, p in held:
        if rt in runtimes:
            x = (math.log(r.value / p), r.source)
            groups[(r.phase, regime_of(r))].append(x)
            groups[(r.phase, "*")].append(x)

    def nsrc(key):
        return len({s for _, s in groups.get(key, [])})
    table = {}
    for ph, regs in REGIMES.items():
        if nsrc((ph, "*")) < MIN_BETWEEN_SOURCES:
            continue
        for reg in regs:
            key = (ph, reg) if nsrc((ph, reg)) >= MIN_BETWEEN_SOURCES else (ph, "*")
            _, lo, hi = between_source_interval(groups[key])
            table[reg] = (round(min(1.0, math.exp(lo)), 3), round(max(1.0, math.exp(hi)), 3))
    return table


def _rows_by_scope(records: list[FitRecord], scope: str) -> int:
    if scope.startswith("tier-"):
        return sum(r.chip.tier == scope[5:] and r.phase == "decode" for r in records)
    if scope.startswith("gen-"):
        return sum(r.chip.generation == scope[4:] for r in records)
    if scope != "default":  # a chip bin: the decode rows of its family (FAMILY_ETA_BW)
        fam = family(next(c for c in profiles.builtin_chips() if c.id == scope))
        return sum(family(r.chip) == fam and r.phase == "decode" for r in records)
    return len(records)


def range_table(records: list[FitRecord], predicted) -> dict[str, tuple[float, float]]:
    """{regime: (10th, 90th percentile of measured / predicted)} over ``records``; ``predicted`` aligned with them.
    In-sample fallback of build_profiles when no out-of-source residuals are given (loso_ranges is the shipped
    method)."""
    by: dict[str, list[float]] = defaultdict(list)
    for r, p in zip(records, predicted):
        by[regime_of(r)].append(r.value / p)
        by[f"all {r.phase}"].append(r.value / p)

    def q(ratios):
        lo, hi = np.percentile(ratios, RANGE_QUANTILES)
        return round(float(lo), 3), round(float(hi), 3)

    out = {reg: q(v) for reg, v in by.items() if len(v) >= MIN_RANGE_ROWS and not reg.startswith("all ")}
    for ph in ("decode", "prefill"):  # the phase fallback: its own regime, else all rows of the phase
        if ph not in out and len(by.get(f"all {ph}", [])) >= 2:
            out[ph] = q(by[f"all {ph}"])
    return out


def _data_note(files=None) -> str:
    names = [Path(p).name for p in (files or training_files())]
    return ("calibration/data/" + " + ".join(names) + " (usable_for_efficiency, catalog models; every source group "
            "weighted once, calibration.fit.source_weights)")


def _scope_text(runtime: str, scope: str, consts: SpeedConstants, diag: dict, eras: dict) -> tuple[str, str]:
    """(method, notes) of one scope's profile (build_profiles)."""
    method = "fit: weighted least squares on log rates (calibration.fit.fit_efficiency_least_squares)"
    notes = ""
    if scope == "default":
        notes = ("shared constants; eta_bw/eta_c here are geometric means over the fitted groups, used for "
                 "chips of a tier/generation with no data.")
        if eras:
            notes += f" Nuisance build-era factors fitted and not shipped: {eras}."
    if scope.startswith(("tier-", "gen-")):
        notes = ("a random effect around the runtime's pooled value, its offset shrunk by the number of "
                 "source groups that measured it (calibration.fit.fit_hierarchical).")
    if scope not in ("default",) and not scope.startswith(("tier-", "gen-")):
        notes = ("eta_bw of this chip's family (its tier and generation): the tier's value times the family's "
                 "factor, a random effect around 1 shrunk by the number of source groups that measured the "
                 "family (calibration.fit.FAMILY_ETA_BW).")
    if scope.startswith("gen-") and consts.eta_bw is not None:
        notes += (f" eta_bw of {scope[4:]} chips, fitted on their own source-weighted rows in place of their "
                  "tier's (calibration.fit.GEN_ETA_BW names the generations that get one).")
    if runtime in WRAPPERS:
        engine = WRAPPERS[runtime]
        method = ("fit: measured overhead over the engine's fitted constants, each source group's mean "
                  "log(measured / predicted) pooled as a random effect and shrunk toward 1 "
                  "(calibration.fit.fit_wrapper_factors)")
        notes = (f"{runtime} runs {engine} with its own defaults (profiles/runtimes/{runtime}.yaml: flash "
                 f"attention, batch sizes, parallel slots) and its own overhead: decode/prefill_factor = its "
                 f"measured rate / {engine}'s predicted one, from {diag['n_records']} rows of "
                 f"{diag['sources']} source group(s); a phase without rows keeps {engine}'s speed.")
        if scope != "default":
            fam = family_name(scope)
            notes += (f" On this chip's family ({fam}) its decode factor times the family's "
                      f"{diag['family_factors'][fam]:.3f}: a random effect of the family's source "
                      "groups around the wrapper's factor, shrunk by the variance between families "
                      "(calibration.fit.fit_wrapper_family_effects).")
        if diag.get("engine_factors"):
            ef = {e: {k: round(v, 3) for k, v in phase_factors(f).items()} or "prior"
                  for e, f in diag["engine_factors"].items()}
            notes += (f" One factor per engine Ollama ran the rows on (calibration/data/ollama_engines.yaml, "
                      f"read in ollama/ollama; fitted when {MIN_FACTOR_SOURCES} source groups measured it, "
                      f"else the prior 1): {ef}; shipped: the current engine's "
                      f"({ollama_engines()['current_engine']}, Ollama >= {ollama_engines()['switch_version']}).")
    return method, notes


def build_profiles(data, fits, ranges: dict[str, dict] | None = None) -> list[CalibrationProfile]:
    """Profiles for every runtime; ``ranges`` ({runtime: range_table}) go into the default scope (in-sample
    residuals when not given). A wrapper's profile holds its measured factors and range only: the rest is its
    engine's chain (planner.profiles.load_speed_constants)."""
    out = []
    data_note = _data_note()
    for runtime, (params, fixed, diag) in fits.items():
        recs = data[runtime]
        rt_range = (ranges or {}).get(runtime) or range_table(recs, diag["predicted"])
        if runtime in WRAPPERS:
            scoped = {"default": SpeedConstants(**params), **wrapper_family_scopes(params, diag)}
        else:
            scoped = constants_from_params(params, fixed, runtime)
        scoped["default"] = scoped.get("default", SpeedConstants()).model_copy(update={"likely_range": rt_range})
        dec = diag["ape"][[r.phase == "decode" for r in recs]]
        pre = diag["ape"][[r.phase == "prefill" for r in recs]]
        resid = {}
        if len(dec):
            resid["decode_mape"] = round(float(dec.mean()), 2)
        if len(pre):
            resid["prefill_mape"] = round(float(pre.mean()), 2)
        eras = {k: round(v, 4) for k, v in params.items() if k.startswith("era")}
        for scope, consts in sorted(scoped.items()):
            method, notes = _scope_text(runtime, scope, consts, diag, eras)
            out.append(CalibrationProfile(
                id=f"{scope}__{runtime}", scope=scope, runtime=runtime, constants=consts,
                provenance=Provenance(method=method, fitted_on=FIT_DATE, rows=_rows_by_scope(recs, scope),
                                      data=data_note, residuals=resid, notes=notes)))
    return out


def family_name(chip_id: str) -> str:
    """``family`` of a built-in chip bin by its id."""
    return family(next(c for c in profiles.builtin_chips() if c.id == chip_id))


def wrapper_family_scopes(params: dict, diag: dict) -> dict[str, SpeedConstants]:
    """{chip id: constants} of a wrapper's chip families with a factor (fit_wrapper_family_effects): each bin of the
    family decodes at the wrapper's factor times its family's (planner.profiles merges a chip scope over default)."""
    fams = diag.get("family_factors", {})
    return {c.id: SpeedConstants(decode_factor=round(with_family(params.get("decode_factor", 1.0), diag, c), 5))
            for c in profiles.builtin_chips() if family(c) in fams}


def _round(d):
    if isinstance(d, float):
        return float(f"{d:.5g}")
    if isinstance(d, dict):
        return {k: _round(v) for k, v in d.items()}
    return d


def write_profiles(profs: list[CalibrationProfile], out_dir: Path = OUT_DIR) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.yaml"):
        old.unlink()
    paths = []
    for p in profs:
        data = p.model_dump(mode="json", exclude_none=True)
        data["constants"] = _round(data["constants"])
        text = ("# Generated by `python -m calibration.fit`; do not edit by hand.\n"
                + yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
        path = out_dir / f"{p.id}.yaml"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def shipped_profiles():
    """-> (profiles, fits, skipped): the full fit with likely ranges from leave-one-source-out residuals."""
    data, skipped = load_training_records()
    fits = fit_all(data)
    return build_profiles(data, fits, loso_ranges(leave_one_source_out(data))), fits, skipped


def main(argv: list[str] | None = None) -> int:
    profs, fits, skipped = shipped_profiles()
    paths = write_profiles(profs)
    for rt, (params, _, diag) in fits.items():
        print(f"{rt}: {diag['n_records']} records, cost {diag['cost']:.3f}")
        for k, v in params.items():
            print(f"  {k:22s} {v:.4g}")
    print(f"skipped rows: {dict(skipped)}")
    print(f"wrote {len(paths)} profiles to {OUT_DIR.relative_to(REPO_ROOT)}")
    profiles.clear_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
