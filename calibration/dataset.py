"""Data-cleaning layer for the speed-model fit: measured_benchmarks_train.csv -> normalized Measurements.

The CSV (calibration/data, described in its README.md) is never edited. Clearly wrong or
under-specified rows are corrected here, by ``row_id`` only, in :data:`FIXES`.

Normalization rules (documented in docs/dataset-notes.md):

- ``chip_id`` is the chip profile id (``m2-ultra-76gpu``, profiles/chips). ``gpu_cores`` from the row when given; otherwise, in order:
  a :data:`FIXES` entry; the chip has a single (non-rumoured) GPU bin; the llama.cpp maintainer's M2 Ultra is
  76-core (README caveat 7); a Mac product that ships one bin (Mac mini M4 -> 10-core, mac_products.csv); the row's
  ``ram_GB`` is offered by exactly one bin (profiles/chips ``ram_options_gb``); a batch-1 decode row of a chip whose
  bins all have one bandwidth -> the smallest bin (``_decode_bin``: the planner's batch-1 decode is the same on
  every such bin). Else ``chip_id`` is None.
- ``runtime_family``: ``llama.cpp`` (llama-bench / batched-bench / llama-server / LM Studio's llama.cpp engine),
  ``mlx-lm`` (any ``mlx-lm`` front end: generate, benchmark, server, python API), ``ollama``, ``other-mlx``
  (stock MLX kernels behind another front end: mlx-vlm, mlx-swift-lm, vllm-mlx, oMLX, mlx-openai-server, LM Studio
  MLX engine), ``custom``
  (ds4, Rapid-MLX, turboquant-mlx: own kernels/schedulers, README caveat 5 -- never mlx-lm/llama.cpp efficiency).
- ``other-mlx`` is not mlx-lm's efficiency (kept out of the fit, except LM Studio's MLX engine, fitted as its own
  wrapper): mlx-vlm runs its own model code (mlx_vlm.generate); vllm-mlx sends text-only checkpoints to mlx-lm but
  auto-detects multimodal ones (Qwen3.5/3.6, Gemma 4) and runs them on mlx-vlm (vllm_mlx/server.py docstring: "LLM
  inference (mlx-lm) / MLLM inference (mlx-vlm) ... MLLM server (auto-detected)"), with its own batching scheduler;
  mlx-openai-server runs mlx-lm only with ``--model-type lm`` (cubist38/mlx-openai-server README: ``--model-type
  <lm|multimodal>``, MLXLMHandler / MLXVLMHandler), which its rows do not state; oMLX adds its own scheduler and
  SSD-paged KV cache (the rows' "KV: ssd-paged"); mlx-swift-lm is a Swift port.
- ``model_id`` maps to catalog ids only when the architecture is the catalog one (proxies are flagged).
- ``quant_id`` uses llama.cpp preset names and ``mlx-<b>bit-g64`` (mlx_lm.convert default group size 64).

Run ``python -m calibration.dataset`` for the summary tables quoted in docs/dataset-notes.md.
"""

from __future__ import annotations

import csv
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from planner import profiles
from planner.errors import DatasetError, PlannerError  # noqa: F401  (DatasetError re-exported)

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PATH = REPO_ROOT / "calibration" / "data" / "measured_benchmarks_train.csv"

REQUIRED_COLUMNS = [
    "row_id",
    "source",
    "source_type",
    "source_group",
    "date",
    "chip",
    "gpu_cores",
    "ram_GB",
    "device",
    "runtime",
    "runtime_version",
    "model",
    "params_B",
    "active_params_B",
    "quant",
    "prompt_tokens",
    "gen_tokens",
    "context_depth",
    "batch",
    "flash_attn",
    "metric",
    "value",
    "unit",
    "notes",
    "reliability",
]

RuntimeFamily = Literal["llama.cpp", "mlx-lm", "ollama", "other-mlx", "custom"]
RUNTIME_FAMILIES: tuple[str, ...] = ("llama.cpp", "mlx-lm", "ollama", "other-mlx", "custom")
EFFICIENCY_METRICS = frozenset({"pp_tps", "tg_tps", "batched_pp_tps", "batched_tg_tps"})
PREFILL_METRICS = frozenset({"pp_tps", "batched_pp_tps"})
DECODE_METRICS = frozenset({"tg_tps", "batched_tg_tps"})
MIN_PREFILL_TOKENS = 64  # below this a prefill is dominated by launch/latency overheads, not compute

# Known flags (tuple order in Measurement.flags follows discovery order; this is the vocabulary).
FLAG_DOC = {
    "inferred-hardware": "GPU bin (or chip) not stated by the source; inferred (device column, RAM rule, FIXES)",
    "inferred-quant": "quant not stated; inferred (ollama tag default, README command, memory size)",
    "architecture-proxy": "model mapped to a catalog id with the same architecture (LLaMA-1 7B, Qwen3-Coder...)",
    "end-to-end": "tg_tps_e2e: output tokens / whole request time, TTFT and HTTP included",
    "custom-engine": "ds4 / Rapid-MLX / turboquant-mlx: own kernels, not mlx-lm or llama.cpp efficiency",
    "old-tg-average": "tg_tps at depth 0 over N>0 tokens: average over contexts 0..N",
    "depth-unknown": "tg_tps without context_depth (server/ollama runs after a short prompt)",
    "thermal": "laptop cooling / power mode mentioned (fan boost, High Power, cooldown)",
    "unreliable": "reliability=unreliable: physically implausible, never fit",
    "low-reliability": "reliability=low: known anomaly",
    "memory-pressure": "model run without wired memory near the GPU working-set limit (pathological)",
    "short-prompt": f"prefill over fewer than {MIN_PREFILL_TOKENS} tokens",
    "speculative": "speculative / MTP decoding: breaks the bandwidth roofline",
    "fixed": "a FIXES entry changed this row",
    "roofline-breaker": "decode tok/s x weight bytes/token > chip bandwidth (missing MoE active params, MTP...)",
    "cold-first-request": "prefill of the first request after a load on an engine without a warm-up run",
}
ROOFLINE_MAX = 1.0  # decode_bandwidth_ratio above this is physically impossible (weights alone, KV ignored)

# --------------------------------------------------------------------------------------------- row fixes
# {row_id: {field: value}}; fields are Measurement fields (post-normalization). "flags" entries are appended.
FIXES: dict[int, dict] = {
    # Qwen2.5-72B mlx 6bit on an "M4 Max" (config not stated). 7.92 tok/s x ~59 GB of weights (peak 59.3 GB, row
    # 325) ~= 467 GB/s > 410 GB/s of the 32-core bin, and the 32-core bin only ships 36 GB (< 59 GB peak):
    # it must be the 40-core / 546 GB/s bin.
    323: {"gpu_cores": 40, "flags": ("inferred-hardware",)},
    324: {"gpu_cores": 40, "flags": ("inferred-hardware",)},
    325: {"gpu_cores": 40, "flags": ("inferred-hardware",)},
    # Same M3 Pro 36 GB, same qwen2.5-coder:14b Q4_K_M, same submission as row 1252 (15.05 tok/s, min/max
    # 14.98/15.15): these two runs report 0.12 tok/s (min/max 0.05/0.16) and 5.09 tok/s (min/max 0.27/13.3), i.e.
    # 1% and 29% of the weight-bandwidth bound -- the GPU was contended or the model was paging. Not a speed.
    1248: {"reliability": "low"},
    1250: {"reliability": "low"},
    # mlx-lm PR #40 (ml-explore/mlx-lm, 2025-03) measures one M2 Ultra Mistral-7B 4-bit 33,898-token prefill before
    # (676 tok/s, this row) and after (869 tok/s, row 332) its causal-mask change: the "before" build built an
    # explicit mask array for the prompt, every build since passes mask="causal" to the fused kernel
    # (mlx_lm/models/base.py create_attention_mask). The planner models current builds, as it drops llama.cpp's
    # old build eras: the superseded build's row is not a current efficiency.
    330: {"reliability": "low"},
    # enescingoz/mac-llm-bench, the same M5 10-core 32 GB and mlx_lm.benchmark: Qwen3.6-35B-A3B-4bit (2026-04-20)
    # prefills 277.7 and decodes 20.3 tok/s, Qwen3.5-35B-A3B-4bit (2026-04-07, rows 33027/33028) 618.8 and 58.8 --
    # the same architecture and size (qwen3_5_moe, 40 layers, 256 experts top-8; profiles/models), ~20 GB of
    # weights near a 32 GB Mac's GPU working-set limit: a third of the speed is paging, not the model.
    33029: {"reliability": "low"},
    33030: {"reliability": "low"},


    # AtomGradient's M2 Ultra Qwen3.5-4B llama-bench rows (Q3_K_M, Q2_K; the other quants are already low) ran
    # build 8240 (d088d5b74), before Metal's fused gated-DeltaNet kernel: llama.cpp #19504 (b8233) added the
    # GATED_DELTA_NET op for CPU and CUDA only, so Metal ran each such layer as a graph of small ops until #20340/#20361
    # (b8299) fused it; that kernel read its [S_v, S_v] state column-wise (strided) until #20443 (b8333). Qwen3.5 9B
    # Q8_0 on an M4 Pro decoded 21.60 -> 25.08 tok/s (+16 %) and prefilled 413 -> 452 (+9 %) between b8192 and b8416
    # (github.com/ggml-org/Llama-macOS/issues/67). Every Qwen3.5/3.6/3.8 layer of that kind ran the unfused graph: a
    # superseded build's speed for the hybrids, not a current efficiency (as row 330).
    20901: {"reliability": "low"},
    20902: {"reliability": "low"},
    20903: {"reliability": "low"},
    20904: {"reliability": "low"},
    # llama.cpp #19366 (ggml-org/llama.cpp, 2026-02-05, labelled bug-unconfirmed) is a bug report: "token generation
    # speed is roughly one third of speed in MLX for Qwen 3 coder next" (Qwen3-Next's hybrid layers, b7935), with a
    # "roughly 24 t/s" from chat use. A reported slow path, in round numbers, not a llama.cpp efficiency.
    20087: {"reliability": "low"},
    # enescingoz/mac-llm-bench MLX rows: lib/run_bench_mlx.sh (commit d9512e59) runs ``mlx_lm.benchmark -p PP -g TG``
    # for (PP, TG) in (128, 128), (128, 256), (256, 128), (256, 256), (512, 128) and stores ``tg{TG}`` from each run,
    # so the tg128 it keeps is the (512, 128) run's: 128 tokens generated after a 512-token prompt
    # (mlx_lm/benchmark.py: one stream_generate of the random prompt, then the generation), not from an empty cache
    # as llama-bench's tg128. The result files (e.g. results/m5/base/.../Qwen3-0.6B-4bit_4bit_ngl99.json) hold
    # pp128, pp256, pp512, tg128, tg256, the keys of that loop.
    **{rid: {"context_depth": 512} for rid in (20134, 20136, 20138, 20206, 20208, 20276, 20278, 20280, 20282, 20284,
                                                20286, 20288, 20290, 20292, 20294, 20296, 20298, 20300, 20302, 20306,
                                                20308, 20310, 20312, 20314, 20316,
                                                # measured_benchmarks_enescingoz_more.csv, the same M5 runs
                                                # (results/m5/base/raw/m5_10c-10g_32gb/mlx/*.json)
                                                33024, 33026, 33028)},
    # DavidRagone/llm-speed-test: `ollama run MODEL --verbose`, the prompt pasted (README), load_duration 31-57 ms (the
    # model was already loaded by `ollama run`'s preload) -> the first request after the load. Ollama before v0.30.0 ran
    # no warm-up decode (no warm-up in runner/ or llm/server.go at v0.6.7, 2025-04-30, the release of the rows' month;
    # none up to f63eea3, the commit before the llama-server switch), while llama.cpp warms up at init because "the
    # first run takes extra time ... especially for Metal" (ggml-org/llama.cpp PR #1824, common.cpp
    # common_init_from_params ``params.warmup``; llama-bench times after a warm-up run). Ollama's prompt eval duration
    # (runner/llamarunner/runner.go at v0.6.7: startGenerationTime - startProcessingTime, from NewSequence to the return
    # of the Decode that ends the prompt, sampling excluded; ollamarunner the same) holds that first pass (its prompt
    # eval count is every prompt token, numPromptInputs = len(inputs) before LoadCacheSlot drops a cached prefix: on a
    # fresh cache, the tokens evaluated): measured minus the planner's warm prefill is 0.22 s (4.4 GB of weights), 0.86
    # s (19.3 GB), 0.53 s (16.5 GB), i.e. it grows with the weight bytes (20-31 GB/s), not a fixed time per request. One
    # source measured it, so its rate is not fitted (MIN_FACTOR_SOURCES); the planner predicts the warm prefill (Ollama
    # >= 0.30 runs llama-server, which warms up: llm/llama_server.go at fb30760 passes no --no-warmup).
    **{rid: {"flags": ("cold-first-request",)} for rid in (47901, 47903, 47905)},
    # Ollama "-mlx" tags run Ollama's MLX engine, not a GGUF: the "ollama tag default (usually Q4_K_M)" quant is
    # wrong for them. Handled by rule in _normalize_quant (any ollama model tag containing "mlx"), listed here
    # for the record: rows 1365-1406 (M5 Max), 1407-1432 (M5 Pro), 1327 (M4 Pro) among others.
}

# --------------------------------------------------------------------------------------------- chip bins


class _Bin(BaseModel):
    model_config = ConfigDict(frozen=True)
    chip_id: str
    name: str
    generation: str
    tier: str
    gpu_cores: int
    bandwidth_gb_s: float | None
    ram_options_gb: tuple[int, ...]
    rumoured: bool


def _load_bins() -> dict[str, list[_Bin]]:
    """Chip name ('M2 Ultra') -> GPU bins, from the shipped chip profiles (planner.profiles, schema-validated)."""
    bins: dict[str, list[_Bin]] = defaultdict(list)
    for c in sorted(profiles.builtin_chips(), key=lambda c: c.id):
        bins[c.name].append(_Bin(chip_id=c.id, name=c.name, generation=c.generation, tier=c.tier,
                                 gpu_cores=c.gpu_cores, bandwidth_gb_s=c.memory_bandwidth_gb_s,
                                 ram_options_gb=tuple(c.ram_options_gb), rumoured=c.status == "rumoured"))
    return dict(bins)


_BINS_CACHE: dict[str, list[_Bin]] | None = None


def chip_bins() -> dict[str, list[_Bin]]:
    global _BINS_CACHE
    if _BINS_CACHE is None:
        _BINS_CACHE = _load_bins()
    return _BINS_CACHE


# --------------------------------------------------------------------------------------------- the model


class Measurement(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    row_id: int
    source: str
    source_type: str
    source_group: str
    # hardware
    chip: str  # raw chip name, 'unknown' kept
    gpu_cores: int | None  # as resolved (row value, FIXES or documented rule)
    chip_id: str | None
    generation: str | None  # 'M1'..'M5'
    tier: str | None  # base / pro / max / ultra
    bandwidth_gb_s: float | None
    ram_GB: float | None
    device: str
    # runtime
    runtime: str  # raw string
    runtime_family: RuntimeFamily
    runtime_version: str
    llama_cpp_build: int | None  # build number when the version names one ("(7948)", "b6900")
    # model / quant
    model: str  # raw string
    model_id: str | None
    model_note: str | None
    params_B: float | None
    active_params_B: float | None
    quant: str  # raw string
    quant_id: str | None
    # measurement
    metric: str
    value: float | None
    unit: str
    prompt_tokens: int | None
    prompt_label: str  # raw prompt_tokens ('short', '512', '~11 (...)')
    gen_tokens: int | None
    context_depth: int | None
    batch: int
    flash_attn: bool | None
    n_ubatch: int | None = None  # physical batch when the row states it (llama.cpp -ub; "n_ubatch=2048")
    prefill_step: int | None = None  # MLX prefill chunk when the row states it ("prefill_step_size=2048")
    prompt_shared: bool = False  # llama-batched-bench -pps: one prompt shared by every sequence ("prompt shared")
    date: str  # raw
    year_month: str | None  # 'YYYY-MM'
    year: int | None
    reliability: str
    notes: str
    flags: tuple[str, ...]

    @property
    def per_sequence_value(self) -> float | None:
        """Batched rows are aggregate over ``batch`` sequences (README caveat 4)."""
        return None if self.value is None else self.value / self.batch


# --------------------------------------------------------------------------------------------- parsing helpers


def _int_or_none(s: str, *, row_id: int, column: str, strict: bool) -> int | None:
    s = (s or "").strip()
    if not s:
        return None
    try:
        f = float(s)
    except ValueError:
        if strict:
            raise DatasetError(
                f"row_id {row_id}: column {column!r} = {s!r} is not a number; fix the CSV row"
            ) from None
        return None
    if f != int(f):
        if strict:
            raise DatasetError(
                f"row_id {row_id}: column {column!r} = {s!r} is not an integer; fix the CSV row"
            )
        return None
    return int(f)


def _float_or_none(s: str) -> float | None:
    s = (s or "").strip()
    try:
        return float(s) if s else None
    except ValueError:
        return None


_UBATCH = re.compile(r"n_ubatch\s*=\s*(\d+)|-ub\s+(\d+)")


def _parse_ubatch(s: str) -> int | None:
    """The physical batch a row states ('n_ubatch=2048', '-ub 2048'); None = the runtime default."""
    m = _UBATCH.search(s)
    return int(m.group(1) or m.group(2)) if m else None


_PREFILL_STEP = re.compile(r"prefill[-_]step[-_]size[\s=]+(\d+)", re.IGNORECASE)


def _parse_prefill_step(s: str) -> int | None:
    """The MLX prefill chunk a row states ('prefill_step_size=2048', '--prefill-step-size 512'); None = default."""
    m = _PREFILL_STEP.search(s)
    return int(m.group(1)) if m else None


def _parse_flash_attn(s: str) -> bool | None:
    s = s.strip().lower()
    if s.startswith("on"):
        return True
    if s.startswith("off"):
        return False
    return None  # 'n/a', 'n/a (MLX SDPA)', 'default', 'unknown'


_YM = re.compile(r"(20\d\d)-(\d\d)")
_Y = re.compile(r"\b(20\d\d)\b")


def _parse_date(s: str) -> tuple[str | None, int | None]:
    m = _YM.search(s)
    if m:
        return f"{m.group(1)}-{m.group(2)}", int(m.group(1))
    m = _Y.search(s)
    return None, (int(m.group(1)) if m else None)


def _llama_cpp_build(version: str) -> int | None:
    m = re.search(r"\((\d{3,5})\)", version) or re.search(r"\bb(\d{3,5})\b", version)
    return int(m.group(1)) if m else None


def is_lm_studio(runtime: str) -> bool:
    """LM Studio's engines ('llama.cpp (LM Studio, ...)', 'mlx (LM Studio MLX engine)', 'LM Studio 0.3 (MLX)'): the
    planner models them as wrappers (profiles/runtimes/lmstudio-*.yaml), fitted on their own rows."""
    r = runtime.lower()
    return "lm studio" in r or "lmstudio" in r


def _runtime_family(runtime: str) -> str:
    r = runtime.lower()
    if r.startswith(("ds4", "rapid-mlx", "turboquant")):
        return "custom"
    if r.startswith("ollama"):
        return "ollama"
    if r.startswith("llama.cpp"):
        return "llama.cpp"  # includes llama-server and LM Studio's bundled llama.cpp engine
    if r.startswith("mlx-lm"):
        return "mlx-lm"
    if r.startswith(("lm studio", "lmstudio")):  # the app named first: its MLX engine, else its llama.cpp engine
        return "other-mlx" if "mlx" in r else "llama.cpp"
    if "mlx" in r:  # mlx-vlm, mlx-swift-lm, vllm-mlx, 'mlx (LM Studio MLX engine)'
        return "other-mlx"
    raise DatasetError(f"unknown runtime {runtime!r}; add it to calibration.dataset._runtime_family")


# model patterns: (regex on the cleaned lowercase name, catalog id, note or None, proxy?)
_MODEL_RULES: list[tuple[str, str | None, str | None, bool]] = [
    # multi-token-prediction (MTP) builds decode speculatively: not the catalog model's speed
    (r"mtp", None, None, False),
    # 2025-2026 models the catalog has (profiles/models/<id>.yaml, configs read from their hf_repo): checked before
    # the not-in-catalog rule below. A size must end the number ('(?![\d.])'), so 'qwen3.6-27b' never
    # becomes 'qwen3.6-35b-a3b' and 'gemma-4-e2b' never 'gemma-4-e4b'.
    (r"qwen3\.([56])[-:]35b(-a3b)?(?![\d.])", "qwen3.{0}-35b-a3b", None, False),
    (r"qwen3\.5[-:](9b|4b|2b|0\.8b|122b-a10b)(?![\d.])", "qwen3.5-{0}", None, False),
    (r"qwen3\.6[-:]27b(?![\d.])", "qwen3.6-27b", None, False),
    (r"qwen3\.8[-:]27b(?![\d.])", "qwen3.8-27b", None, False),
    (
        r"qwen3\.5[-:]27b(?![\d.])",
        "qwen3.6-27b",
        # THUDM/slime scripts/models/qwen3.5-27B.sh: 64 layers, hidden 5120, 24/4 heads x 256, FFN 17408,
        # vocab 248320, untied -- the Qwen/Qwen3.6-27B config.json values of profiles/models/qwen3.6-27b.yaml
        "Qwen3.5-27B: the Qwen3.6-27B architecture (same layer/head/FFN/vocab config)",
        True,
    ),
    (r"gemma-?4[-:](26b-a4b|31b|e2b|e4b)(?![\d.])", "gemma-4-{0}", None, False),
    (r"glm-4\.7-flash", "glm-4.7-flash", None, False),
    (r"glm-4\.7(?![\d.]|-flash)", "glm-4.7", None, False),  # GLM-4.7 355B-A32B (profiles/models/glm-4.7.yaml)
    (r"granite-?4\.1[-:](3|8|30)b(?![\d.])", "granite-4.1-{0}b", None, False),
    (r"ministral-3[-:]3b(?![\d.])", "ministral-3-3b", None, False),
    (r"nemotron-3-nano[-:]30b", "nemotron-3-nano-30b-a3b", None, False),
    (r"devstral-small-2[-:]", "devstral-small-2-24b", None, False),
    (r"devstral(-small)?[-:]24b|devstral-small-25(05|07)", "devstral-small-24b", None, False),
    (r"phi-?4-mini-reasoning", "phi-4-mini-reasoning", None, False),
    (r"phi-?4-mini(-instruct)?\b(?!-reasoning)", "phi-4-mini", None, False),
    # not in the catalog (checked first so the qwen3 / llama / gemma rules below do not catch them)
    (
        (
            r"qwen3\.[5-9]|deepseek-v4|dsv4|deepseek-coder|glm|k2-horizon|minimax|gemma4|gemma-4"
            r"|gemma-3n|nemotron|granite|phi-4-mini|phi-3|lfm|smollm|falcon|exaone|yi-1\.5|aya"
            r"|apertus|internlm|codestral|ernie|afm-|rnj|ornith|laguna|north-mini|devstral|ministral|muse-|mtp"
        ),
        None,
        None,
        False,
    ),
    (r"qwen3-coder-30b-a3b", "qwen3-coder-30b-a3b", None, False),
    (r"qwen3-30b-a3b", "qwen3-30b-a3b", None, False),
    (r"qwen3-235b-a22b", "qwen3-235b-a22b", None, False),
    (r"qwen3-next-80b-a3b", "qwen3-next-80b-a3b", None, False),
    (r"qwen3-coder-next", "qwen3-coder-next", None, False),
    (r"^qwen3[-:](0\.6|1\.7|4|8|14|32)b", "qwen3-{0}b", None, False),
    (r"qwq[-:]32b", "qwq-32b", None, False),
    (r"qwen2\.5-coder[-:](1\.5|3|7|14|32)b", "qwen2.5-coder-{0}b", None, False),
    (r"deepseek-r1-distill-qwen-(1\.5|7|14|32)b", "deepseek-r1-distill-qwen-{0}b", None, False),
    # Ollama's deepseek-r1 tags: 1.5b/7b/14b/32b are the Qwen distills, 70b the Llama distill; 8b was the Llama
    # distill until 2025-05 and is DeepSeek-R1-0528-Qwen3-8B since, so it stays unmapped
    (r"deepseek-r1:(1\.5|7|14|32)b", "deepseek-r1-distill-qwen-{0}b", None, False),
    (r"deepseek-r1-distill-llama-(8|70)b|deepseek-r1:(70)b", "deepseek-r1-distill-llama-{0}b", None, False),
    (r"deepseek-r1-0528-qwen3-8b", "deepseek-r1-0528-qwen3-8b", None, False),
    (r"deepseek-r1:8b", None, None, False),
    (r"qwen2\.5-(0\.5|1\.5|3|7|14|32|72)b", "qwen2.5-{0}b", None, False),
    (r"deepseek-v3\.2", "deepseek-v3.2", None, False),
    (r"deepseek-v3", "deepseek-v3", None, False),
    (r"deepseek-r1(?![-:]?distill)", "deepseek-v3", "DeepSeek-R1: DeepSeek-V3 architecture", False),
    (r"llama-3\.3-70b|llama3\.3:70b", "llama-3.3-70b", None, False),
    (r"llama-3\.1-(8|70|405)b|llama3\.1:(8|70|405)b", "llama-3.1-{0}b", None, False),
    (r"llama-3\.2-(1|3)b|llama3\.2:(1|3)b", "llama-3.2-{0}b", None, False),
    (r"llama-3-(8|70)b|llama3:(8|70)b", "llama-3-{0}b", None, False),
    (r"llama-2-(7|13|70)b", "llama-2-{0}b", None, False),
    (r"^llama-7b", "llama-2-7b", "LLaMA-1 7B: same architecture as LLaMA-2-7B", True),
    (r"tinyllama", "tinyllama-1.1b", None, False),
    (r"gemma-3-(1|4|12|27)b|gemma3:(1|4|12|27)b", "gemma-3-{0}b", None, False),
    (r"gemma-2-(9|27)b|gemma2:(9|27)b", "gemma-2-{0}b", None, False),
    (r"mistral-small-3\.([12])(-text)?-24b", "mistral-small-3.{0}-24b", None, False),
    (r"mistral-small(-3(\.\d)?)?-24b", "mistral-small-24b", None, False),
    (r"mistral-nemo(-instruct-2407|-12b|:12b)", "mistral-nemo-12b", None, False),
    (r"mixtral-8x7b", "mixtral-8x7b", None, False),
    (r"^mistral-7b", "mistral-7b", None, False),
    (r"phi-?4-reasoning-plus", "phi-4-reasoning",
     "Phi-4-reasoning-plus: the same Phi-4 14B architecture as Phi-4-reasoning, further RL-trained", True),
    (r"phi-?4-reasoning", "phi-4-reasoning", None, False),
    (r"^phi-4\b", "phi-4", None, False),
    (r"gpt-oss[-:](20|120)b", "gpt-oss-{0}b", None, False),
]


def _clean_model(s: str) -> str:
    s = s.strip().lower()
    for prefix in ("mlx-community/", "hf.co/unsloth/", "meta-llama/", "qwen/", "microsoft_", "mistralai_", "meta-"):
        s = s.removeprefix(prefix)
    return s.replace("meta-llama", "llama").replace(".gguf", "")


def _map_model(raw: str) -> tuple[str | None, str | None, bool]:
    s = _clean_model(raw)
    for pattern, target, note, proxy in _MODEL_RULES:
        m = re.search(pattern, s)
        if not m:
            continue
        if target is None:
            return None, None, False
        groups = [g for g in m.groups() if g]
        model_id = target.format(*groups) if groups else target
        if "qat" in s and model_id.startswith("gemma-3"):
            note = "Gemma-3 QAT checkpoint: same architecture"
        if model_id == "mistral-7b" and "v0.3" in s:
            note = "Mistral-7B v0.3 (vocab 32768)"
        return model_id, note, proxy
    return None, None, False


_GGUF_QUANTS = {
    "Q4_0",
    "Q4_1",
    "Q5_0",
    "Q5_1",
    "Q8_0",
    "Q2_K",
    "Q3_K_S",
    "Q3_K_M",
    "Q3_K_L",
    "Q4_K_S",
    "Q4_K_M",
    "Q5_K_S",
    "Q5_K_M",
    "Q6_K",
    "IQ4_XS",
    "IQ4_NL",
    "F16",
    "BF16",
    "F32",
    "MXFP4_MOE",
}


def _normalize_quant(raw: str, family: str, model_raw: str) -> tuple[str | None, bool]:
    """-> (quant_id, inferred?)."""
    q = raw.strip()
    ql = q.lower()
    inferred = "infer" in ql or "default" in ql
    if family == "custom" and not ql.startswith(("mlx", "mxfp4")):
        # ds4 q2/q4 GGUF mixes, TurboQuant tq3: no standard preset (Rapid-MLX mlx quants are kept)
        return None, False
    if family == "ollama" and "mlx" in model_raw.lower():
        return None, False  # Ollama MLX-engine tag: not a GGUF preset, format not stated
    mlx_like = family in ("mlx-lm", "other-mlx", "custom")
    if ql.startswith("mlx") or (mlx_like and (ql == "bf16" or ql.startswith("mxfp4"))):
        if "bf16" in ql:
            return "mlx-bf16", inferred
        if "mxfp4" in ql:
            return "mlx-mxfp4", inferred
        m = re.search(r"(\d)\s*bit", ql)
        if m:
            g = re.search(r"g(\d+)", ql)
            return f"mlx-{m.group(1)}bit-g{g.group(1) if g else 64}", inferred
        return None, False
    if family in ("llama.cpp", "ollama"):
        if "ollama" in ql and "default" in ql:
            return "Q4_K_M", True  # Ollama library tags default to Q4_K_M
        if ql.startswith("mxfp4"):
            return "MXFP4_MOE", inferred  # gpt-oss GGUF: MXFP4 experts (llama.cpp preset MXFP4_MOE)
        head = q.split()[0].upper() if q else ""
        if head in _GGUF_QUANTS:
            return head, inferred
        return None, False  # 'not stated', 'UD-Q4_K_M' (Unsloth dynamic mix), '4bit (MLX) / GGUF 4-bit class'
    return None, False


_THERMAL = re.compile(r"fan|high power|throttl|cooldown|cool-down|thermal", re.IGNORECASE)
_HW_INFERRED = re.compile(r"infer|assum|implies", re.IGNORECASE)


def _resolve_gpu_cores(
    chip: str, cores: int | None, ram: float | None, device: str, row_id: int, decode_b1: bool = False
) -> tuple[int | None, bool]:
    """-> (gpu_cores, inferred?) following the rules in the module docstring. ``decode_b1``: the row is a decode
    rate at batch 1 (:func:`_decode_bin`)."""
    if cores is not None:
        return cores, False
    bins = [b for b in chip_bins().get(chip, []) if not b.rumoured]
    if not bins:
        return None, False  # 'unknown' chip or unknown name
    if len(bins) == 1:
        return bins[0].gpu_cores, False
    d = device.lower()
    if chip == "M2 Ultra" and "maintainer" in d:
        return 76, True  # README caveat 7: maintainer's M2 Ultra is 76-core/192 GB
    if chip == "M4" and "mac mini" in d:
        return 10, True  # every Mac mini M4 config ships the 10-core GPU (mac_products.csv)
    if ram is not None:
        hits = [b for b in bins if int(ram) in b.ram_options_gb]
        if len(hits) == 1:
            return hits[0].gpu_cores, True
    if decode_b1:
        return _decode_bin(bins), True
    return None, False


def _decode_bin(bins: list[_Bin]) -> int | None:
    """The GPU bin a batch-1 decode row of an unstated bin is fitted on: the smallest, when every bin of the chip has
    the same memory bandwidth (M1/M2 Max 400 GB/s, M1/M2 Ultra 800 GB/s, M2 Pro 200 GB/s...), else None. A batch-1
    decode step reads the weights and the cache at eta_bw x the chip's bandwidth (planner/throughput.py
    Roofline.step_parts: the per-column compute starts at the second sequence), so the planner predicts the same
    rate for every such bin (tests/calibration/test_dataset.py pins it) and the row measures what the fit needs; the
    smallest bin has the fewest FLOPs, the conservative choice for the attention FLOPs at depth. What the bin does
    change in practice (llama.cpp #4167: M1 Max 24- vs 32-core, Q4_0 7B 54.6 vs 61.2 tok/s) is the scatter the
    likely range carries. The row is flagged inferred-hardware."""
    if len({b.bandwidth_gb_s for b in bins}) != 1 or bins[0].bandwidth_gb_s is None:
        return None
    return min(b.gpu_cores for b in bins)


def _add(flags: list[str], f: str) -> None:
    if f not in flags:
        flags.append(f)


def _normalize(row: dict[str, str], path: Path) -> Measurement:
    rid = _int_or_none(row["row_id"], row_id=-1, column="row_id", strict=True)
    if rid is None:
        raise DatasetError(f"{path}: a row has an empty row_id; every row needs an integer row_id")
    flags: list[str] = []
    fix = FIXES.get(rid, {})

    chip = row["chip"].strip()
    ram = _float_or_none(row["ram_GB"])
    device = row["device"].strip()
    cores = _int_or_none(row["gpu_cores"], row_id=rid, column="gpu_cores", strict=True)
    if "gpu_cores" in fix:
        cores, hw_inferred = fix["gpu_cores"], True
    else:
        decode_b1 = row["metric"].strip() in DECODE_METRICS and row["batch"].strip() in ("", "1")
        cores, hw_inferred = _resolve_gpu_cores(chip, cores, ram, device, rid, decode_b1)
    if hw_inferred or _HW_INFERRED.search(device):
        _add(flags, "inferred-hardware")
    chip_id = generation = tier = None
    bandwidth = None
    if cores is not None:
        for b in chip_bins().get(chip, []):
            if b.gpu_cores == cores:
                chip_id, generation, tier, bandwidth = b.chip_id, b.generation, b.tier, b.bandwidth_gb_s
        if chip_id is None:
            raise DatasetError(
                f"row_id {rid}: chip {chip!r} with {cores} GPU cores is not a known bin "
                f"(profiles/chips); fix gpu_cores or add a FIXES entry"
            )

    runtime = row["runtime"].strip()
    family = _runtime_family(runtime)
    if family == "custom":
        _add(flags, "custom-engine")

    model_raw = row["model"].strip()
    model_id, model_note, proxy = _map_model(model_raw)
    if proxy:
        _add(flags, "architecture-proxy")
    quant_id, q_inferred = _normalize_quant(row["quant"], family, model_raw)
    if q_inferred:
        _add(flags, "inferred-quant")

    metric = row["metric"].strip()
    batch = _int_or_none(row["batch"], row_id=rid, column="batch", strict=True)
    batch = 1 if batch is None else batch
    if batch < 1:
        raise DatasetError(f"row_id {rid}: batch {batch} < 1; fix the CSV row")
    prompt = _int_or_none(row["prompt_tokens"], row_id=rid, column="prompt_tokens", strict=False)
    gen = _int_or_none(row["gen_tokens"], row_id=rid, column="gen_tokens", strict=False)
    depth = _int_or_none(row["context_depth"], row_id=rid, column="context_depth", strict=True)
    depth = fix.get("context_depth", depth)  # a FIXES depth decides the depth flags below too
    value = _float_or_none(row["value"])
    if value is None and metric != "gpu_run_status":
        raise DatasetError(f"row_id {rid}: value {row['value']!r} is not a number for metric {metric!r}")

    if metric == "tg_tps_e2e":
        _add(flags, "end-to-end")
    if metric == "tg_tps" and depth == 0 and (gen or 0) > 0:
        _add(flags, "old-tg-average")
    if metric in DECODE_METRICS and depth is None:
        _add(flags, "depth-unknown")
    if metric in PREFILL_METRICS and prompt is not None and prompt < MIN_PREFILL_TOKENS:
        _add(flags, "short-prompt")
    text = f"{device} {row['notes']}"
    if _THERMAL.search(text):
        _add(flags, "thermal")
    if "not wired" in row["runtime_version"].lower() or "not wired" in row["notes"].lower():
        _add(flags, "memory-pressure")
    # MTP checkpoints / a draft model in use (QA notes that merely *suspect* speculation do not count)
    if re.search(r"\bmtp\b", model_raw, re.IGNORECASE) or re.search(
        r"draft[- ]model|num-draft", row["notes"], re.IGNORECASE
    ):
        _add(flags, "speculative")
    reliability = fix.get("reliability", row["reliability"].strip())
    if reliability == "unreliable":
        _add(flags, "unreliable")
    elif reliability == "low":
        _add(flags, "low-reliability")

    ym, year = _parse_date(row["date"])
    fields = {
        "row_id": rid,
        "source": row["source"],
        "source_type": row["source_type"],
        "source_group": row["source_group"],
        "chip": chip,
        "gpu_cores": cores,
        "chip_id": chip_id,
        "generation": generation,
        "tier": tier,
        "bandwidth_gb_s": bandwidth,
        "ram_GB": ram,
        "device": device,
        "runtime": runtime,
        "runtime_family": family,
        "runtime_version": row["runtime_version"],
        "llama_cpp_build": _llama_cpp_build(row["runtime_version"]) if family == "llama.cpp" else None,
        "model": model_raw,
        "model_id": model_id,
        "model_note": model_note,
        "params_B": _float_or_none(row["params_B"]),
        "active_params_B": _float_or_none(row["active_params_B"]),
        "quant": row["quant"],
        "quant_id": quant_id,
        "metric": metric,
        "value": value,
        "unit": row["unit"],
        "prompt_tokens": prompt,
        "prompt_label": row["prompt_tokens"],
        "gen_tokens": gen,
        "context_depth": depth,
        "batch": batch,
        "flash_attn": _parse_flash_attn(row["flash_attn"]),
        "n_ubatch": _parse_ubatch(row["flash_attn"] + " " + row["notes"]),
        "prefill_step": _parse_prefill_step(row["runtime_version"] + " " + row["notes"]),
        "prompt_shared": "prompt shared" in row["notes"].lower(),
        "date": row["date"],
        "year_month": ym,
        "year": year,
        "reliability": reliability,
        "notes": row["notes"],
    }
    for k, v in fix.items():
        if k not in ("gpu_cores", "flags", "reliability"):
            fields[k] = v
    for f in fix.get("flags", ()):
        _add(flags, f)
    if fix:
        _add(flags, "fixed")
    fields["flags"] = tuple(flags)
    m = Measurement(**fields)
    ratio = decode_bandwidth_ratio(m)
    if ratio is not None and ratio > ROOFLINE_MAX:
        m = m.model_copy(update={"flags": m.flags + ("roofline-breaker",)})
    return m


def _row_ids_of_other_files(p: Path) -> set[int]:
    """Row ids of the other measurement CSVs next to ``p`` (row ids are unique across the files, README: the
    community file's from 20001), which FIXES may name too."""
    ids: set[int] = set()
    for other in p.parent.glob("measured_benchmarks_*.csv"):
        if other != p:
            with other.open(newline="", encoding="utf-8") as fh:
                ids |= {int(r["row_id"]) for r in csv.DictReader(fh) if (r.get("row_id") or "").strip().isdigit()}
    return ids


def load_measurements(path: str | Path | None = None) -> list[Measurement]:
    """Read the benchmark CSV (default: the repo copy) into normalized, validated Measurements, one per row."""
    p = Path(path) if path is not None else DEFAULT_PATH
    if not p.is_file():
        raise DatasetError(f"measurements CSV not found: {p}; pass path= or restore calibration/data/")
    with p.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        missing = [c for c in REQUIRED_COLUMNS if c not in header]
        if missing:
            raise DatasetError(
                f"{p}: missing column(s) {', '.join(missing)}; expected the "
                f"measured_benchmarks_train.csv header"
            )
        out: list[Measurement] = []
        seen: set[int] = set()
        for line_no, row in enumerate(reader, start=2):
            if None in row or any(v is None for v in row.values()):
                raise DatasetError(
                    f"{p}:{line_no}: wrong number of fields (row_id {row.get('row_id')!r}); "
                    f"check quoting of that line"
                )
            try:
                m = _normalize(row, p)
            except DatasetError as e:  # name the file and line: several CSVs feed the fit (calibration.fit)
                raise DatasetError(f"{p.name}:{line_no}: {e}") from None
            if m.row_id in seen:
                raise DatasetError(f"{p}:{line_no}: duplicate row_id {m.row_id}; row ids must be unique")
            seen.add(m.row_id)
            out.append(m)
    unknown_fixes = set(FIXES) - seen - (_row_ids_of_other_files(p) if path is None else set())
    if unknown_fixes and path is None:
        raise DatasetError(f"FIXES name row_id(s) {sorted(unknown_fixes)} absent from {p}")
    return out


# --------------------------------------------------------------------------------------------- the fit filter


def explain_exclusion(m: Measurement, runtime: str | None = None) -> str | None:
    """Why ``m`` must not feed a per-runtime efficiency fit (None = usable). ``runtime`` restricts the family."""
    if runtime is not None and runtime not in RUNTIME_FAMILIES:
        raise DatasetError(f"unknown runtime family {runtime!r}; use one of {', '.join(RUNTIME_FAMILIES)}")
    if m.reliability == "unreliable":
        return "reliability=unreliable: physically implausible (README), never fit"
    if m.reliability == "low":
        return "reliability=low: known anomaly"
    if m.metric == "tg_tps_e2e":
        return "end-to-end rate (TTFT + HTTP overhead included), below true decode speed"
    if m.metric not in EFFICIENCY_METRICS:
        return f"metric {m.metric} is not a throughput (pp/tg) metric"
    if m.runtime_family == "custom":
        return f"custom engine ({m.runtime}): not mlx-lm or llama.cpp efficiency (README caveat 5)"
    if runtime is not None and m.runtime_family != runtime:
        return f"runtime family {m.runtime_family}, not {runtime}"
    if m.chip_id is None:
        return f"GPU bin unknown for chip {m.chip!r} (no gpu_cores and no resolving rule)"
    if m.bandwidth_gb_s is None:
        return f"chip {m.chip_id} has no bandwidth figure"
    if m.quant_id is None:
        return f"quant unknown ({m.quant!r}): weight bytes cannot be computed"
    if m.model_id is None and m.params_B is None:
        return "model not in the catalog and params_B missing"
    if m.value is None or m.value <= 0:
        return "no positive value"
    if "memory-pressure" in m.flags:
        return "run without wired memory near the working-set limit (pathological paging)"
    if "speculative" in m.flags:
        return "speculative/MTP decoding breaks the bandwidth roofline"
    if "roofline-breaker" in m.flags:
        return (
            f"decode roofline broken ({decode_bandwidth_ratio(m):.2f} x bandwidth): size metadata wrong "
            f"(MoE without active_params_B?)"
        )
    if "cold-first-request" in m.flags:
        return "first request after a load without a warm-up run: the first pass over the weights, not a prefill rate"
    if "short-prompt" in m.flags:
        return f"prefill of {m.prompt_tokens} tokens (< {MIN_PREFILL_TOKENS}) is latency-bound"
    return None


def usable_for_efficiency(m: Measurement, runtime: str | None = None) -> bool:
    """The filter the speed fit uses; see :func:`explain_exclusion` for each reason."""
    return explain_exclusion(m, runtime) is None


# --------------------------------------------------------------------------------------------- roofline check

def _bits_per_weight(quant_id: str | None) -> float | None:
    """Fewest bits a weight of this format takes, from the quant profiles and the ggml type table
    (planner.models.floor_bits_per_weight): the ratio below stays a lower bound. None for unknown formats."""
    from planner.models import floor_bits_per_weight

    if not quant_id:
        return None
    try:
        return floor_bits_per_weight("mlx-lm" if quant_id.startswith("mlx") else "llama.cpp", quant_id)
    except PlannerError:
        return None


def decode_bandwidth_ratio(m: Measurement) -> float | None:
    """Per-sequence-step weight bytes x steps/s / chip bandwidth (weights only, KV ignored -> a lower bound).

    > 1 breaks the decode roofline (README caveat 9). Uses active_params_B for MoE, else params_B.
    """
    if m.metric not in DECODE_METRICS or m.value is None or m.bandwidth_gb_s is None:
        return None
    params = m.active_params_B or m.params_B
    bpw = _bits_per_weight(m.quant_id)
    if not params or not bpw:
        return None
    steps_per_s = m.value / m.batch  # one weight pass per step serves the whole batch
    return steps_per_s * params * 1e9 * bpw / 8 / (m.bandwidth_gb_s * 1e9)


# --------------------------------------------------------------------------------------------- summary (CLI)


def summarize(ms: list[Measurement]) -> str:
    lines: list[str] = []
    w = lines.append
    usable = [m for m in ms if usable_for_efficiency(m)]
    w(f"rows: {len(ms)}; usable for efficiency (any runtime): {len(usable)}")
    w("\n## exclusion reasons (first reason per row)")
    reasons = Counter(re.sub(r"\(.*?\)|'.*?'|\d+", "…", explain_exclusion(m) or "usable") for m in ms)
    for r, n in reasons.most_common():
        w(f"{n:5d}  {r}")
    w("\n## usable rows by runtime_family x metric")
    for (fam, met), n in sorted(Counter((m.runtime_family, m.metric) for m in usable).items()):
        w(f"{fam:10s} {met:15s} {n:4d}")
    w("\n## usable decode rows by context kind (old-tg-average = depth 0 over N tokens)")
    kinds = Counter(
        (
            m.runtime_family,
            "old-tg-average"
            if "old-tg-average" in m.flags
            else "depth-unknown"
            if m.context_depth is None
            else "fixed-depth",
        )
        for m in usable
        if m.metric in DECODE_METRICS
    )
    for (fam, kind), n in sorted(kinds.items()):
        w(f"{fam:10s} {kind:15s} {n:4d}")
    w(
        "\n## usable tg_tps rows: weights-only bandwidth ratio by family x generation x tier (median, min-max, n)"
    )
    groups: dict[tuple, list[float]] = defaultdict(list)
    for m in usable:
        r = decode_bandwidth_ratio(m)
        if m.metric == "tg_tps" and r is not None:
            groups[(m.runtime_family, m.generation, m.tier)].append(r)
    for k, rs in sorted(groups.items()):
        rs.sort()
        w(
            f"{k[0]:10s} {k[1]} {k[2]:6s} median {rs[len(rs) // 2]:.2f}  range {rs[0]:.2f}-{rs[-1]:.2f}  n={len(rs)}"
        )
    w("\n## usable rows by runtime_family / metric / chip_id")
    c = Counter((m.runtime_family, m.metric, m.chip_id) for m in usable)
    for (fam, met, chip), n in sorted(c.items()):
        w(f"{fam:10s} {met:15s} {chip:18s} {n:4d}")
    w("\n## usable rows: chip_id x runtime_family")
    chips = sorted({m.chip_id for m in usable})
    fams = [f for f in RUNTIME_FAMILIES if f != "custom"]
    w(f"{'chip_id':18s} " + " ".join(f"{f:>9s}" for f in fams))
    for ch in chips:
        w(
            f"{ch:18s} "
            + " ".join(
                f"{sum(1 for m in usable if m.chip_id == ch and m.runtime_family == f):9d}" for f in fams
            )
        )
    w("\n## usable rows by generation x tier x runtime_family")
    c = Counter((m.generation, m.tier, m.runtime_family) for m in usable)
    for k, n in sorted(c.items()):
        w(f"{k[0]} {k[1]:6s} {k[2]:10s} {n:4d}")
    w("\n## usable rows by model_id (None = uncatalogued, params_B + quant used)")
    for k, n in Counter(m.model_id for m in usable).most_common():
        w(f"{n:4d}  {k}")
    w("\n## usable rows by quant_id")
    for k, n in Counter(m.quant_id for m in usable).most_common():
        w(f"{n:4d}  {k}")
    w("\n## usable llama.cpp rows by year_month / runtime_version / flash_attn")
    c = Counter(
        (m.year_month or m.date, m.runtime_version[:60], m.flash_attn)
        for m in usable
        if m.runtime_family == "llama.cpp"
    )
    for k, n in sorted(c.items(), key=lambda kv: str(kv[0])):
        w(f"{n:4d}  {k[0]:10s} fa={k[2]!s:5s} {k[1]}")
    w("\n## flags over all rows")
    for k, n in Counter(f for m in ms for f in m.flags).most_common():
        w(f"{n:4d}  {k}")
    w("\n## chip resolution: rows without chip_id, by chip / ram_GB")
    for k, n in sorted(Counter((m.chip, m.ram_GB) for m in ms if m.chip_id is None).items(), key=str):
        w(f"{n:4d}  {k}")
    w("\n## decode roofline: weight-bytes x tok/s / bandwidth > 0.9 (all rows with a computable ratio)")
    rows = [(decode_bandwidth_ratio(m), m) for m in ms]
    rows = [(r, m) for r, m in rows if r is not None and r > 0.9]
    for r, m in sorted(rows, key=lambda t: -t[0]):
        w(
            f"{m.row_id:5d} ratio {r:4.2f} {m.chip_id} {m.runtime_family} {m.model[:40]} {m.quant_id} "
            f"{m.metric}={m.value} B={m.batch} rel={m.reliability} usable={usable_for_efficiency(m)}"
        )
    return "\n".join(lines)


if __name__ == "__main__":  # python -m calibration.dataset [path]
    print(summarize(load_measurements(sys.argv[1] if len(sys.argv) > 1 else None)))
