"""Result models: structured breakdowns that sum exactly, then summaries. Bytes are int, times seconds."""


from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, computed_field, model_validator

from ._model import Frozen

if TYPE_CHECKING:
    from .models_result import ModelRow as ModelRow
    from .models_result import ModelsResult as ModelsResult
    from .serve_result import CurvePoint as CurvePoint
    from .serve_result import Percentiles as Percentiles
    from .serve_result import ServeResult as ServeResult
    from .serve_result import SlotOption as SlotOption
    from .speed_result import ThroughputEstimate as ThroughputEstimate

# The results of `plan models`, `plan serve` and `plan predict` live in planner/models_result.py,
# planner/serve_result.py and planner/speed_result.py: the plain question does not define their classes (pydantic's
# class construction is most of the start-up). Still importable from here, for callers written before the split.
_MOVED = {"ModelRow": "models_result", "ModelsResult": "models_result", "CurvePoint": "serve_result",
          "Percentiles": "serve_result", "ServeResult": "serve_result", "SlotOption": "serve_result",
          "ThroughputEstimate": "speed_result"}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        import importlib

        return getattr(importlib.import_module(f"{__package__}.{_MOVED[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _RoundTrip(BaseModel):
    """Accept our own computed fields back: model_dump_json() writes them (total, sysctl_max_mb) and extra='forbid'
    refused them, so model_validate_json(x.model_dump_json()) failed for every Plan. They are recomputed."""

    model_config = Frozen  # deferred like every model here: no validator is built at import

    @model_validator(mode="before")
    @classmethod
    def _drop_computed(cls, data: Any) -> Any:  # raw input before validation: anything
        if isinstance(data, dict) and any(k in data for k in cls.model_computed_fields):
            data = {k: v for k, v in data.items() if k not in cls.model_computed_fields}
        return data


class WeightsEstimate(BaseModel):
    model_config = Frozen
    total_bytes: int
    """Weight bytes as loaded [bytes]"""
    n_params: int
    bits_per_weight: float
    by_group: dict[str, int]
    """bytes per tensor group (embedding, attention, ffn, experts, ...)"""
    by_type: dict[str, int] = {}
    """bytes per storage type (GGUF) [bytes]"""
    vision_bytes: int = 0
    exact: bool = False
    """True when read from a real file header, not estimated"""


class KVLayout(BaseModel):
    """KV cost of one runtime × KV type, independent of context."""

    model_config = Frozen
    kv_type: str
    bytes_per_token: int
    """KV bytes per token on full-attention layers [bytes]"""
    swa_bytes_per_token: int = 0
    """KV bytes per token on sliding-window layers [bytes]"""
    window: int | None = None
    state_bytes_per_seq: int = 0
    """Recurrent/linear-attention state per sequence [bytes]"""
    # KV-shared layers (Gemma 4) attend over another layer's cache: a decode step reads more than the cache holds
    read_bytes_per_token: int | None = None
    """KV bytes a decode step reads per cached token on full-attention layers, when more than stored [bytes]"""
    swa_read_bytes_per_token: int | None = None
    """Same on sliding-window layers [bytes]"""
    read_window: int | None = None
    ("Tokens a decode step reads of the windowed part when that is not a sliding window (mlx-lm DSA: the indexer's "
     "top-k latents) [tokens]")


class MemoryEstimate(_RoundTrip):
    model_config = Frozen
    weights: int
    kv_cache: int
    recurrent_state: int
    compute_buffer: int
    output_buffer: int
    runtime_overhead: int
    vision: int = 0
    context: int
    """Context per sequence [tokens]"""
    users: int
    kv_cells: int
    """KV cells allocated (llama.cpp) or held (mlx-lm), all sequences [tokens]"""

    @computed_field  # type: ignore[prop-decorator]  # mypy rejects decorators above @property (pydantic docs)
    @property
    def total(self) -> int:
        return (self.weights + self.kv_cache + self.recurrent_state + self.compute_buffer + self.output_buffer
                + self.runtime_overhead + self.vision)


Verdict = Literal["fits", "tight", "raise-limit", "no-fit"]


class WiredLimit(_RoundTrip):
    model_config = Frozen
    ram_bytes: int
    macos: str
    default_bytes: int
    """recommendedMaxWorkingSetSize default for this RAM [bytes]"""
    effective_bytes: int
    """Limit used for verdicts (default, or the wired limit given) [bytes]"""
    max_raise_bytes: int
    """Highest limit we would set, leaving RAM for macOS [bytes]"""
    left_for_macos_bytes: int
    rule: str
    user_set: bool = False

    @computed_field  # type: ignore[prop-decorator]  # mypy rejects decorators above @property (pydantic docs)
    @property
    def sysctl_max_mb(self) -> int:
        return self.max_raise_bytes // (1024 * 1024)

    @property
    def can_raise(self) -> bool:
        """Whether the highest safe limit is above the current one: on 8 GB macOS keeps min_left_for_macos_gb
        (4 GiB), less than the 2/3 default leaves it, so raising gains nothing (capacity.wired_limit)."""
        return self.sysctl_max_mb * 1024 * 1024 > self.effective_bytes


class Fit(BaseModel):
    model_config = Frozen
    verdict: Verdict
    reason: str
    headroom_bytes: int
    """Effective wired limit minus total (negative: over) [bytes]"""
    sysctl: str | None = None
    """Command that raises the limit enough, when that helps"""
    margin_bytes: int = 0
    ("The runtime's own margin the verdict keeps below the limit (Runtime.headroom_mib: llama.cpp common/fit.cpp's "
     "1 GiB) [bytes]")


class SmallestNeed(BaseModel):
    """When nothing fits: the configuration that needs the least memory, and its runtime's margin
    (planner.search.smallest_need; one figure for plan and recommend)."""

    model_config = Frozen
    runtime: str
    quant: str
    kv_type: str
    """The KV cache type assumed: the asked one, else the runtime's advised type that needs least"""
    users: int
    context: int
    memory_bytes: int
    """Weights + KV cache + buffers at users x context [bytes]"""
    margin_bytes: int
    """The runtime's own margin a fit keeps below the limit (Fit.margin_bytes) [bytes]"""

    def with_margin(self) -> int:
        """The need and its runtime's margin: what capacity.fit compares with the limit [bytes]."""
        return self.memory_bytes + self.margin_bytes

    def over(self, wired: WiredLimit) -> int:
        """How far the need and its margin go past the most the GPU may have with the limit raised (what makes the
        verdict no-fit, capacity.fit) [bytes]; one figure for plan and models."""
        return self.with_margin() - wired.max_raise_bytes


# --------------------------------------------------------------------------- speed

Bound = Literal["bandwidth", "compute"]


class Speed(BaseModel):
    """What advice needs from the speed model at one operating point. Rates in tokens/s, times in s."""

    model_config = Frozen
    prefill_tok_s: float
    ttft_s: float
    decode_tok_s_per_user: float
    decode_tok_s: float
    """aggregate over all users"""
    decode_tok_s_range: tuple[float, float]
    """80 % likely range of decode_tok_s_per_user (low, high)"""
    prefill_tok_s_range: tuple[float, float]
    """80 % likely range of prefill_tok_s (low, high)"""
    time_per_request_s: float
    decode_bound: Literal["bandwidth", "compute"]
    prefill_share: float
    """TTFT / time per request"""
    cached_prefix_share: float = 0.0
    """Share of each prompt assumed in the prompt cache (TTFT)"""
    calibration: str = ""


class SpeedSummary(BaseModel):
    """Speed columns of one plan option: prefill/TTFT at the workload's prompt, decode at 1..N users."""

    model_config = Frozen
    prompt_tokens: int
    gen_tokens: int
    cached_prefix_share: float = 0.0
    """Share of the prompt assumed in the prompt cache (TTFT)"""
    prefill_tok_s: float
    """Prefill of one prompt [tok/s]"""
    ttft_s: float
    """Time to first token for one prompt [s]"""
    time_per_request_s: float
    """TTFT + generation, one user [s]"""
    decode_tok_s_per_seq: dict[int, float]
    """Decode speed seen by each user, by concurrent users"""
    decode_tok_s_range: dict[int, tuple[float, float]] = {}
    """80 % likely range of the decode speed seen by each user [tok/s]"""
    prefill_tok_s_range: tuple[float, float] | None = None
    """80 % likely range of prefill [tok/s]"""
    decode_tok_s_total: dict[int, float]
    """Decode speed of all users together, by concurrent users"""
    bound: dict[int, Bound]
    """Decode bound by concurrent users"""
    knee_batch: int | None = None
    calibration: str = ""


# --------------------------------------------------------------------------- serving apps
class ServingDefaults(BaseModel):
    """What a wrapper app (Ollama, LM Studio) does with no settings: its default context and parallel requests,
    the memory that takes and its fit, and (LM Studio) whether its load guardrail lets the model load."""

    model_config = Frozen
    app: str
    version: str
    default_context: int
    """Context per sequence the app uses by default [tokens]"""
    default_parallel: int
    """Parallel requests by default"""
    context_rule: str
    """Why that context: version, GPU memory, model cap"""
    memory_bytes: int
    """Total memory at the default context and parallel requests [bytes]"""
    fit: Fit
    guardrail: str | None = None
    """Load guardrail level checked (LM Studio)"""
    guardrail_allows: bool | None = None
    guardrail_reason: str = ""
    engine_note: str = ""
    """The app runs this model on its own engine / one request at a time"""
    sources: list[str] = []


class OffloadEstimate(BaseModel):
    """llama.cpp partial offload: the largest -ngl whose GPU part fits, and its decode estimate."""

    model_config = Frozen
    gpu_layers: int
    """-ngl: repeating layers on the GPU (n_layer + 1 also puts the output there)"""
    n_layers: int
    gpu_bytes: int
    """Weights, KV and buffers on the GPU [bytes]"""
    cpu_bytes: int
    """Weights and KV left in CPU memory [bytes]"""
    fit: Fit
    """GPU part against the GPU limit"""
    fits_in_ram: bool
    """GPU and CPU parts together leave macOS its reserve"""
    decode_tok_s: float | None = None
    """Decode with CPU layers at CPU bandwidth [tok/s]"""
    full_gpu_decode_tok_s: float | None = None
    """Decode if every layer were on the GPU [tok/s]"""
    cpu_bandwidth_bytes_s: float | None = None
    recommended: bool = False
    reason: str = ""


class DraftEstimate(BaseModel):
    """Speculative decoding with a draft model: its memory (same context and slots as the main model) and the
    decode speed-up at an acceptance rate."""

    model_config = Frozen
    draft_model: str
    draft_quant: str
    draft_tokens: int
    """Tokens drafted per step (llama-server --draft-max, mlx --num-draft-tokens)"""
    acceptance: float
    """Per-token acceptance probability alpha [1]"""
    acceptance_source: str
    weights_bytes: int
    """Draft weights [bytes]"""
    kv_bytes: int
    """Draft KV cache at the main context and slots [bytes]"""
    buffer_bytes: int
    """Draft compute and output buffers [bytes]"""
    total_bytes: int
    """Main model + draft [bytes]"""
    fit: Fit
    """Main + draft against the GPU limit"""
    tokens_per_step: float
    """(1 - alpha^(g+1)) / (1 - alpha) tokens per verification [1]"""
    decode_tok_s: float | None = None
    """Decode with the draft, one sequence [tok/s]"""
    base_decode_tok_s: float | None = None
    """Decode without it [tok/s]"""
    ceiling_tok_s: float | None = None
    """(g+1) tokens per (main + g draft) weight reads at peak bandwidth"""
    speedup: float | None = None
    notes: list[str] = []


# --------------------------------------------------------------------------- beyond the memory wall
# (planner/streaming.py: the estimate's arithmetic and the SSD table; the classes live here, so a plan defines them
# without the table's)
class SSDSpeed(BaseModel):
    """The read speed the planner uses for one Mac: the median of the matching measurements and their spread."""

    model_config = Frozen
    read_bytes_s: float
    """Sequential read used for the estimate [bytes/s]"""
    range_bytes_s: tuple[float, float]
    """Slowest and fastest matching measurement [bytes/s]"""
    storage_gb: int
    """SSD capacity the speed is for [GB]"""
    basis: Literal["measured", "same capacity, other chip", "nearest capacity measured"] = "measured"
    rows: list[str]
    """'product storage: read MB/s (source)' of the rows used"""


class StreamingEstimate(BaseModel):
    """Decode of a model whose weights do not fit in RAM, with llama.cpp paging the mapped GGUF from the SSD."""

    model_config = Frozen
    engine: str = "llama.cpp mmap"
    """Who reads the weights from the SSD"""
    weights_bytes: int
    anon_bytes: int
    """KV cache, compute/output buffers and runtime overhead: memory that cannot be dropped, only swapped [bytes]"""
    ram_for_weights_bytes: int
    """RAM left for weight pages: what macOS can spare minus anon_bytes [bytes]"""
    always_read_bytes: int
    """Weights every token reads (dense part; all of a dense model) [bytes]"""
    routed_expert_bytes: int = 0
    """Routed experts of a MoE, all layers [bytes]"""
    expert_cache_bytes: int = 0
    """Routed experts that stay cached in RAM [bytes]"""
    hit_rate: float = 0.0
    """Share of a token's routed-expert reads found in RAM [0-1]"""
    active_expert_fraction: float = 0.0
    """k / n: share of routed experts a token uses [0-1]"""
    bytes_per_token: float
    """Read from the SSD per decoded token, the estimate [bytes]"""
    bytes_per_token_range: tuple[float, float]
    """Fewest and most bytes per token [bytes]"""
    ssd: SSDSpeed
    compute_s_per_token: float
    """Decode time per token with every weight resident [s]"""
    ssd_s_per_token: float
    """bytes_per_token / SSD read [s]"""
    decode_tok_s: float
    """1 / (compute + SSD time): reads block the kernels [tok/s]"""
    decode_tok_s_range: tuple[float, float]
    """Slow and fast end [tok/s]"""
    overlapped_tok_s: float
    """Bound for an engine that reads while it computes: 1 / max(compute, SSD time) [tok/s]"""
    swaps: bool
    ("The KV cache and buffers alone exceed what macOS can spare: pages would be written to swap (SSD wear), not "
     "only read")
    bound: Literal["ssd", "compute"]
    """Which of the two takes longer per token"""

    @property
    def resident(self) -> bool:
        """Every weight a token reads stays in RAM (no byte per token from the SSD, even at the slow end): the file
        is mapped and read once, not streamed; only weights no token reads stay on the SSD."""
        return self.bytes_per_token_range[1] <= 0
