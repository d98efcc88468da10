"""Profile schemas: frozen, strict pydantic models validated at load time.

Model fields use Hugging Face ``config.json`` key names verbatim (mlx-lm ``ModelArgs`` reads the same names).
"""


from datetime import date
from functools import cached_property
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Protocol, Self

from pydantic import (
    BaseModel,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    model_validator,
)

from ._model import Frozen

if TYPE_CHECKING:
    from .results import WeightsEstimate
    from .schema_extra import CpuMemory as CpuMemory
    from .schema_extra import DraftPair as DraftPair
    from .schema_extra import MacProduct as MacProduct
    from .schema_extra import SpeculativePairs as SpeculativePairs
    from .schema_extra import VisionFamily as VisionFamily
    from .speed_schema import OPTIONAL_CONSTANTS as OPTIONAL_CONSTANTS
    from .speed_schema import QUANT_CLASSES as QUANT_CLASSES
    from .speed_schema import CalibrationProfile as CalibrationProfile
    from .speed_schema import Constants as Constants
    from .speed_schema import FinetuneConstants as FinetuneConstants
    from .speed_schema import Provenance as Provenance
    from .speed_schema import ResolvedSpeedConstants as ResolvedSpeedConstants
    from .speed_schema import SpeedConstants as SpeedConstants

# The speed-calibration and fine-tune profiles live in planner/speed_schema.py, the Mac catalog, CPU memory, draft
# pairs and vision families in planner/schema_extra.py: the plain question (no chip) does not define their classes
# (pydantic's class construction is most of its start-up). Still importable from here.
_MOVED = {**dict.fromkeys(("QUANT_CLASSES", "Provenance", "OPTIONAL_CONSTANTS", "SpeedConstants", "Constants",
                           "CalibrationProfile", "ResolvedSpeedConstants", "FinetuneConstants"), "speed_schema"),
          **dict.fromkeys(("MacProduct", "CpuMemory", "DraftPair", "SpeculativePairs", "VisionFamily", "Workload"),
                           "schema_extra")}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        import importlib

        return getattr(importlib.import_module(f"{__package__}.{_MOVED[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Upper bounds on user-editable sizes: ~100x the largest real value, so a hostile or mistyped profile
# (num_hidden_layers: 1e12, params_b: 1e400 = inf) is a ProfileError instead of a hang or a nonsense plan.
MAX_DIM = 1 << 24          # hidden/ffn/vocab/head sizes [elements] (largest real: vocab 262,144)
MAX_LAYERS = 10_000
MAX_CTX = 100_000_000      # tokens (largest real: 10M)
MAX_RAM_GB = 65_536
PosInt = Annotated[int, Field(gt=0, le=MAX_DIM)]
# ModelConfig's optional sizes: one shared constraint each instead of a Field call per field (the same FieldInfo;
# pydantic builds a class with fewer Field calls faster: 38 fields, ~4 M instructions of the plain question)
OptPosInt = Annotated[int | None, Field(gt=0, le=MAX_DIM)]
OptCount = Annotated[int | None, Field(ge=0, le=MAX_DIM)]
# A profile field with one of these shared constraints (or pydantic's PositiveInt, NonNegativeFloat...) takes the
# alias and an attribute docstring: no Field call of its own (27 fields, ~3.5 M instructions of the plain question)
NonEmptyStr = Annotated[str, Field(min_length=1)]
NonEmptyStrs = Annotated[list[str], Field(min_length=1)]


class _Profile(BaseModel):
    model_config = Frozen
    sources: NonEmptyStrs
    """URLs the numbers come from"""
    verified: date
    """Date the numbers were last checked"""


# --------------------------------------------------------------------------- hardware
class Chip(_Profile):
    id: str
    name: str
    """Marketing chip name, e.g. 'M3 Max'"""
    generation: Literal["M1", "M2", "M3", "M4", "M5", "M6"]
    tier: Literal["base", "pro", "max", "ultra"]
    gpu_cores: int = Field(gt=0, le=256)
    cpu_cores: list[PosInt]
    memory_bandwidth_gb_s: float | None = Field(None, gt=0, le=5000, description="Vendor memory bandwidth [GB/s]; None if unknown (rumoured)")
    ram_options_gb: list[Annotated[int, Field(gt=0, le=MAX_RAM_GB)]] = Field(min_length=1)
    gpu_fp32_tflops: float | None = Field(None, gt=0, le=500, description="Estimated FP32 peak [TFLOPS]; None if unpublished")
    gpu_fp16_tflops: float | None = Field(None, gt=0, le=1000)
    gpu_clock_ghz: float | None = None
    gpu_matrix_units: bool = False
    """Per-core GPU matrix units (M5 neural accelerators)"""
    release_year: int
    status: Literal["shipping", "discontinued", "rumoured"]
    tflops_basis: str = ""
    backend: Literal["metal", "cpu"] = "metal"
    ("What the runtimes compute on: an Apple GPU (Metal) or, for a device `plan calibrate` measured off a Mac, the "
     "CPU")
    notes: str = ""

    @property
    def label(self) -> str:
        return f"{self.name} {self.gpu_cores}-core GPU"

    @property
    def on_cpu(self) -> bool:
        """The runtimes run on the CPU here (custom devices written before ``backend`` existed included)."""
        return self.backend == "cpu" or self.id.startswith("custom-")


class WiredRule(BaseModel):
    model_config = Frozen
    max_ram_gb: float | None = None
    """Rule applies to RAM up to this size [GB]; None = any"""
    fraction: float = Field(gt=0, le=1)
    evidence: str = ""


class MacOS(_Profile):
    id: str
    name: str
    wired_rules: list[WiredRule] = Field(min_length=1, description="First rule whose max_ram_gb >= RAM wins")
    min_left_for_macos_gb: PositiveFloat
    """RAM to leave to macOS when raising the wired limit [GB]"""
    left_for_macos_fraction: float = Field(ge=0, lt=1, description="...or this fraction of RAM, if larger")
    notes: str = ""


# --------------------------------------------------------------------------- quantization
class GgmlType(BaseModel):
    model_config = Frozen
    name: str
    block_size: PositiveInt
    bytes_per_block: PositiveInt
    fallback: str | None = None
    """Type used when a row is not a multiple of block_size"""


class KeptTensor(BaseModel):
    """A tensor llama-quantize never quantizes (src/llama-quant.cpp tensor_allows_quantization): it keeps the type
    the converter wrote (convert_hf_to_gguf: F32 for the names it forces to F32, else the --outtype)."""

    model_config = Frozen
    name: str
    """Substring of the llama.cpp tensor name (llama.cpp matches with name.find)"""
    type: str
    """Its type in every preset"""


class QuantizeClasses(BaseModel):
    """Tensor classes of llama-quantize that hold for every preset and architecture (src/llama-quant.cpp)."""

    model_config = Frozen
    attn_v_like: list[str] = []
    ("tensor_get_category + category_is_attn_v: these take attn_v's rules and share its counter (i_attention_wv / "
     "n_attention_wv)")
    token_embd_like: list[str] = []
    """tensor_name_match_token_embd: token-embedding rules (the output rules when the model has no output.weight)"""
    kept: list[KeptTensor] = []


class GgmlTypeTable(_Profile):
    id: str
    types: list[GgmlType]
    # built without validation (its defaults are valid): QuantizeClasses() here built its validator at import
    llama_quantize: QuantizeClasses = QuantizeClasses.model_construct()


class PresetRule(BaseModel):
    """One branch of llama.cpp ``llama_tensor_get_type_impl`` (src/llama-quant.cpp)."""

    model_config = Frozen
    tensor: str
    """Substring of the llama.cpp tensor name, e.g. 'attn_v', 'ffn_down', 'output'"""
    type: str
    when: list[str] = []
    """Conditions, all must hold"""
    if_type_in: list[str] | None = None


class Quality(BaseModel):
    model_config = Frozen
    ppl_delta_pct: float | None = None
    """Perplexity increase vs 16-bit [%], approximate"""
    kld: float | None = None
    """Mean KL divergence vs 16-bit, approximate"""
    mmlu_pro_delta: float | None = None
    """MMLU-Pro points vs bf16 (mlx-lm BENCHMARKS.md)"""
    source: str = ""


class QuantFormat(_Profile):
    id: str
    kind: Literal["gguf", "mlx"]
    aliases: list[str] = []
    description: str = ""
    # gguf
    ftype: int | None = None
    base_type: str | None = None
    rules: list[PresetRule] = []
    expert_type: str | None = None
    """Type for 3-D expert tensors (MXFP4_MOE)"""
    # mlx
    mode: Literal["affine", "mxfp4", "nvfp4", "mxfp8", "none"] | None = None
    bits: int | None = Field(None, ge=2, le=16)
    group_size: int | None = Field(None, gt=0)
    scale_bytes: int | None = Field(None, ge=0, description="Bytes per group for the scale")
    bias_bytes: int | None = Field(None, ge=0, description="Bytes per group for the bias")
    quality: Quality | None = None

    @model_validator(mode="after")
    def _check_kind(self) -> Self:
        if self.kind == "gguf" and not self.base_type:
            raise ValueError("gguf formats need base_type")
        if self.kind == "mlx" and (self.mode is None or self.bits is None):
            raise ValueError("mlx formats need mode and bits")
        return self


# --------------------------------------------------------------------------- runtimes
class _RuntimeBase(_Profile):
    """Fields every runtime has. ``family`` names the engine whose memory and speed rules apply."""

    family: ClassVar[Literal["llama.cpp", "mlx-lm"]]
    id: str
    name: str
    weight_format: Literal["gguf", "mlx"]
    version_note: str = ""
    kv_types: NonEmptyStrs
    """KV cache element types this runtime offers"""
    default_kv_type: str
    advised_kv_types: NonEmptyStrs
    ("KV types that recommend/buy/plan tables search, "
     "best quality first (a subset of kv_types)")
    runtime_overhead_mib: NonNegativeFloat
    """Metal/runtime fixed overhead [MiB]"""
    headroom_mib: NonNegativeFloat
    """Margin below the wired limit for a 'comfortable' verdict [MiB]"""
    prefix_cache: bool = False
    ("The server keeps the previous request's KV and prefills only the part of a new prompt after the common "
     "prefix")

    @model_validator(mode="after")
    def _advised_subset(self) -> Self:
        extra = [k for k in self.advised_kv_types if k not in self.kv_types]
        if extra:
            raise ValueError(f"advised_kv_types {extra} are not in kv_types")
        return self


class LlamaCppFamily(_RuntimeBase):
    """llama.cpp settings (common/common.h ``common_params``), shared by llama.cpp itself and its wrappers."""

    family: ClassVar[Literal["llama.cpp"]] = "llama.cpp"
    weight_format: Literal["gguf"]
    n_ubatch: PositiveInt
    """llama.cpp physical batch -ub [tokens]"""
    n_batch: PositiveInt
    """llama.cpp logical batch -b [tokens]"""
    flash_attn: bool
    """flash attention on by default (-fa)"""
    kv_unified: bool
    """one KV stream shared by all slots (llama-server --kv-unified)"""
    swa_full: bool
    """full-size sliding-window cache (--swa-full)"""
    ctx_pad: PositiveInt
    """n_ctx is padded up to this multiple [tokens]"""
    default_parallel: PositiveInt
    """slots (-np) when the user does not say"""
    default_context: PositiveInt
    """context (-c) when the user does not say [tokens]"""
    fit_margin_mib: NonNegativeFloat
    """--fit-target margin [MiB]"""
    compute_vocab_bytes: NonNegativeFloat
    """compute buffer per ubatch token per vocab entry [B]"""
    compute_embd_factor: NonNegativeFloat
    """compute buffer per ubatch token per n_embd [B]"""
    compute_noflash_embd_factor: NonNegativeFloat
    """same without flash attention [B]"""
    output_bytes_per_vocab: NonNegativeFloat
    """host logits buffer per seq per vocab entry [B]"""

    @property
    def prefill_chunk(self) -> int:
        """Prompt tokens per prefill step: the physical batch -ub. The one chunk rule for llama.cpp."""
        return self.n_ubatch

    @property
    def prefill_batch(self) -> int:
        """Sequences per prefill step: llama.cpp packs every sequence's tokens into the -ub chunks, so the chunk
        rule alone counts the steps."""
        return 1


class LlamaCppRuntime(LlamaCppFamily):
    kind: Literal["llama.cpp"]


class WrapperRuntime(LlamaCppFamily):
    """A product that runs llama.cpp underneath with its own defaults (Ollama: num_batch, OLLAMA_NUM_PARALLEL...)."""

    kind: Literal["wrapper"]
    wraps: Literal["llama.cpp"]
    """engine underneath; its memory and speed rules apply"""


class MlxRuntime(_RuntimeBase):
    """mlx-lm settings (mlx_lm/generate.py, mlx_lm/models/cache.py, mlx_lm/server.py), shared by mlx-lm itself and
    the products whose memory follows its caches (MlxWrapperRuntime: LM Studio's mlx-engine, mlx-vlm)."""

    family: ClassVar[Literal["mlx-lm"]] = "mlx-lm"
    kind: Literal["mlx-lm"]
    weight_format: Literal["mlx"]
    prefill_step_size: PositiveInt
    """prompt tokens per prefill step [tokens]"""
    kv_step: PositiveInt
    """KVCache growth step [tokens]"""
    kv_group_size: PositiveInt
    """--kv-group-size of the quantized KV cache"""
    quantized_kv_start: NonNegativeInt
    """--quantized-kv-start [tokens]"""
    activation_bytes: PositiveInt
    """bytes per activation / unquantized cache element [B]"""
    fused_sdpa_head_dims: list[int]
    """head dims with a fused prefill SDPA kernel"""
    warn_fraction: float = Field(gt=0, le=1, description="mlx-lm warns above this x working set")
    router_bits: int = Field(gt=0, le=16, description="bits of MoE router weights")
    decode_concurrency: PositiveInt
    """mlx_lm.server --decode-concurrency"""
    prefill_batch_size: PositiveInt
    """concurrent prompt prefills (--prompt-concurrency)"""
    swa_model_types: list[str]
    """model_types with sliding-window (rotating) caches"""

    @property
    def prefill_chunk(self) -> int:
        """Prompt tokens per prefill step: prefill_step_size. The one chunk rule for mlx-lm."""
        return self.prefill_step_size

    @property
    def prefill_batch(self) -> int:
        """Sequences per prefill step: mlx_lm/generate.py BatchGenerator._process_prompts runs up to
        prefill_batch_size prompts as one (B, step) array per step; generate_step (one request) runs one."""
        return self.prefill_batch_size


class MlxWrapperRuntime(MlxRuntime):
    """A product on MLX whose KV caches and buffers follow mlx-lm's (LM Studio mlx-engine, mlx-vlm)."""

    kind: Literal["mlx-wrapper"]  # type: ignore[assignment]  # its own tag in the Runtime union (MlxRuntime: mlx-lm)
    wraps: Literal["mlx-lm"]
    """engine whose memory and speed rules apply"""


Runtime = Annotated[LlamaCppRuntime | WrapperRuntime | MlxRuntime | MlxWrapperRuntime, Field(discriminator="kind")]
"""A runtime profile (profiles/runtimes/*.yaml); ``kind`` picks the schema."""


# --------------------------------------------------------------------------- serving apps (Ollama, LM Studio)
class ContextRule(BaseModel):
    """A wrapper app's default context per sequence, by app version and GPU memory (first match wins)."""

    model_config = Frozen
    since_version: str
    """First app version the rule applies to, e.g. '0.15.5'"""
    min_gpu_gib: NonNegativeFloat = 0
    """Rule applies when the GPU memory the app sees is at least this [GiB]"""
    context: int = Field(gt=0, le=MAX_CTX, description="Default context per sequence [tokens]")
    source: NonEmptyStr
    """URL of the code or doc that sets it"""


class ParallelRule(BaseModel):
    model_config = Frozen
    since_version: str
    parallel: int = Field(ge=0, le=256, description="Default parallel requests; 0 = automatic (4 if it fits, else 1)")
    source: NonEmptyStr


class GuardrailLevel(BaseModel):
    """One model-loading guardrail setting of LM Studio and how strongly it refuses (its thresholds are not
    published, so only 'never' (off) and a user memory cap (custom) give an exact verdict)."""

    model_config = Frozen
    name: str
    strength: int = Field(ge=0, le=3, description="0 off, 1 relaxed, 2 balanced, 3 strict")
    custom_cap: bool = False
    """Refuses a load whose estimate exceeds the user's memory limit"""
    description: str = ""


class ServingApp(_Profile):
    """A wrapper app around llama.cpp / mlx-lm: its defaults (context, parallel requests) and load guardrails."""

    id: str
    name: str
    current_version: str
    """Version the defaults describe when the user gives none"""
    runtimes: NonEmptyStrs
    """Runtime profiles (one per engine) this app serves with"""
    context_rules: list[ContextRule] = Field(min_length=1, description="Newest first")
    parallel_rules: list[ParallelRule] = []
    """Newest first"""
    context_capped_at_train: bool = True
    """Default context is cut to the model's max context"""
    context_per_parallel: bool = False
    """The server multiplies the context by the parallel count"""
    guardrails: list[GuardrailLevel] = []
    default_guardrail: str | None = None
    own_engine: list[str] = []
    """Catalog model_types or ids the app runs on its own engine instead of the wrapped one"""
    own_engine_source: str = ""
    own_engine_until: str | None = None
    """First app version that no longer runs any model on its own engine (None: the list holds for every version)"""
    own_engine_until_source: str = ""
    single_parallel: list[str] = []
    """model_types or ids served one request at a time whatever the parallel setting"""
    single_parallel_source: str = ""
    notes: str = ""

    def runs_own_engine(self, model_id: str, model_type: str, version: tuple[int, ...] | None = None) -> bool:
        """``version``: the app's version as a tuple (planner.serving.version_tuple); None = current_version."""
        if self.own_engine_until is not None:
            until = tuple(int(x) for x in self.own_engine_until.split("."))
            now = version or tuple(int(x) for x in self.current_version.split("."))
            if now >= until:
                return False
        return model_id in self.own_engine or model_type in self.own_engine

    def one_at_a_time(self, model_id: str, model_type: str) -> bool:
        return model_id in self.single_parallel or model_type in self.single_parallel




# --------------------------------------------------------------------------- models
LayerType = Literal["full_attention", "sliding_attention", "linear_attention", "chunked_attention"]


class ModelConfig(BaseModel):
    """The text-model part of a HF ``config.json``, keys verbatim; defaults normalised as mlx-lm does."""

    model_config = Frozen
    model_type: str
    hidden_size: PosInt
    num_hidden_layers: int = Field(gt=0, le=MAX_LAYERS)
    num_attention_heads: PosInt
    # left out or null: derived by _normalise (0 until then), so both are ints wherever a config is used
    num_key_value_heads: PosInt = 0
    head_dim: PosInt = 0
    intermediate_size: PosInt
    vocab_size: PosInt
    tie_word_embeddings: bool = False
    max_position_embeddings: int = Field(4096, gt=0, le=MAX_CTX)
    sliding_window: int | None = Field(None, gt=0, le=MAX_CTX)
    layer_types: list[LayerType] | None = None
    attention_bias: bool = False
    torch_dtype: str | None = None
    # MoE
    num_experts: OptCount = None
    num_local_experts: OptCount = None
    n_routed_experts: OptCount = None
    num_experts_per_tok: OptCount = None
    moe_intermediate_size: OptPosInt = None
    shared_expert_intermediate_size: OptCount = None
    n_shared_experts: OptCount = None
    first_k_dense_replace: OptCount = None
    moe_layer_freq: OptPosInt = None
    decoder_sparse_step: OptPosInt = None
    # duplicates dropped (_null_is_unset), so the list is at most MAX_LAYERS long
    mlp_only_layers: list[Annotated[int, Field(ge=0, le=MAX_LAYERS)]] | None = Field(None, max_length=MAX_LAYERS + 1)
    # Llama 4: every step-th layer is MoE, the others dense with their own FFN width (configuration_llama4.py)
    interleave_moe_layer_step: int | None = Field(None, gt=0, le=MAX_LAYERS)
    intermediate_size_mlp: OptPosInt = None
    attention_chunk_size: int | None = Field(None, gt=0, le=MAX_CTX)
    # MLA
    kv_lora_rank: OptPosInt = None
    q_lora_rank: OptPosInt = None
    qk_rope_head_dim: OptPosInt = None
    qk_nope_head_dim: OptPosInt = None
    v_head_dim: OptPosInt = None
    # hybrid linear attention (Qwen3-Next gated delta net)
    full_attention_interval: OptPosInt = None
    linear_num_value_heads: OptPosInt = None
    linear_num_key_heads: OptPosInt = None
    linear_key_head_dim: OptPosInt = None
    linear_value_head_dim: OptPosInt = None
    linear_conv_kernel_dim: OptPosInt = None
    # --- Gemma 4, DSA indexer, MLA variants, encoders (planner/arch_gemma4.py, planner/arch_attention.py)
    global_head_dim: OptPosInt = None
    num_global_key_value_heads: OptPosInt = None
    attention_k_eq_v: bool = False
    num_kv_shared_layers: int | None = Field(None, ge=0, le=MAX_LAYERS)
    hidden_size_per_layer_input: OptCount = None
    vocab_size_per_layer_input: OptPosInt = None
    use_double_wide_mlp: bool = False
    enable_moe_block: bool = False
    index_head_dim: OptPosInt = None   # DSA lightning indexer key size
    index_n_heads: OptPosInt = None
    index_topk: int | None = Field(None, gt=0, le=MAX_CTX)       # latents each query attends to
    # --- recurrent hybrids (Mamba-2, gated delta net, short conv, KDA): planner/hybrid.py lays them out
    # Qwen3.5/3.6: MTP block after the last layer (not in num_hidden_layers; neither runtime loads it by default)
    mtp_num_hidden_layers: int | None = Field(None, ge=0, le=MAX_LAYERS)
    # Mamba-2 / Mamba-1 mixers, Nemotron-H key names (sources/hfconfig.py maps Granite, Falcon-H1, Jamba spellings)
    hybrid_override_pattern: str | None = Field(None, max_length=MAX_LAYERS)  # Nemotron-H: M mamba, * attn, E moe, - mlp
    layers_block_type: list[Literal["mamba", "attention", "moe", "mlp", "conv"]] | None = None
    mamba_num_heads: OptPosInt = None
    mamba_head_dim: OptPosInt = None
    ssm_state_size: OptPosInt = None
    n_groups: OptCount = None
    conv_kernel: OptPosInt = None
    mamba_d_inner: OptPosInt = None   # Mamba-1 (Jamba): expand x hidden
    mamba_dt_rank: OptPosInt = None   # Mamba-1 (Jamba) x_proj rank
    mamba_proj_bias: bool = False
    mamba_rms_norm: bool = True  # Falcon-H1 writes false: no gated norm before out_proj (the others always have one)
    use_conv_bias: bool = True
    moe_shared_expert_intermediate_size: OptPosInt = None
    # Nemotron 3 Super latent MoE: routed experts run at this width between ffn_latent_down / ffn_latent_up
    # (mlx_lm nemotron_h.py fc1/fc2_latent_proj, llama.cpp src/models/nemotron-h.cpp moe_n_embd)
    moe_latent_size: OptPosInt = None
    # LFM2 short convolution (conv_L_cache taps, depthwise over hidden_size) and LFM2-MoE's expert bias
    conv_L_cache: OptPosInt = None
    conv_bias: bool = False
    use_expert_bias: bool = False

    @model_validator(mode="before")
    @classmethod
    def _null_is_unset(cls, data: Any) -> Any:  # raw input before validation: anything
        # HF configs write `head_dim: null` for "derive it", as if the key were left out
        if isinstance(data, dict) and any(data.get(k, 0) is None for k in ("num_key_value_heads", "head_dim")):
            data = {k: v for k, v in data.items() if not (k in ("num_key_value_heads", "head_dim") and v is None)}
        mol = data.get("mlp_only_layers") if isinstance(data, dict) else None
        if isinstance(mol, list) and all(type(i) is int for i in mol):
            # a set of layer indices: a hostile config repeats one index 400,000 times (the work stays O(layers))
            data = {**data, "mlp_only_layers": sorted(set(mol))}
        return data

    @model_validator(mode="after")
    def _normalise(self) -> Self:
        # mlx_lm/models/*.py ModelArgs.__post_init__: kv heads default to heads, head_dim to hidden/heads
        if not self.num_key_value_heads:
            object.__setattr__(self, "num_key_value_heads", self.num_attention_heads)
        if not self.head_dim:
            object.__setattr__(self, "head_dim", self.hidden_size // self.num_attention_heads)
        if self.layer_types is not None and len(self.layer_types) != self.num_hidden_layers:
            raise ValueError(
                f"layer_types has {len(self.layer_types)} entries but num_hidden_layers is {self.num_hidden_layers}"
            )
        if self.layer_types is None and self.full_attention_interval:
            # mlx_lm/models/qwen3_next.py: layer i is linear iff (i + 1) % interval != 0
            lt = ["full_attention" if (i + 1) % self.full_attention_interval == 0 else "linear_attention"
                  for i in range(self.num_hidden_layers)]
            object.__setattr__(self, "layer_types", lt)
        if self.layer_types and "sliding_attention" in self.layer_types and not self.sliding_window:
            raise ValueError("layer_types has sliding_attention layers but sliding_window is missing")
        if self.layer_types and "chunked_attention" in self.layer_types and not self.attention_chunk_size:
            raise ValueError("layer_types has chunked_attention layers but attention_chunk_size is missing")
        if self.n_experts and not self.num_experts_per_tok:
            raise ValueError("MoE config needs num_experts_per_tok")
        return self

    # derived, spelled out
    @property
    def n_experts(self) -> int:
        return self.num_experts or self.num_local_experts or self.n_routed_experts or 0

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 1

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @cached_property
    def _dense_layers(self) -> frozenset[int]:
        """mlp_only_layers as a set, built once: is_moe_layer runs once per layer, often per layer again."""
        return frozenset(self.mlp_only_layers or ())

    def layer_type(self, i: int) -> str:
        return self.layer_types[i] if self.layer_types else "full_attention"

    def is_moe_layer(self, i: int) -> bool:
        if not self.is_moe:
            return False
        if i in self._dense_layers:
            return False
        if self.first_k_dense_replace is not None and i < self.first_k_dense_replace:
            return False
        if self.interleave_moe_layer_step:
            # transformers configuration_llama4.py: moe_layers = range(step - 1, n_layers, step)
            return (i + 1) % self.interleave_moe_layer_step == 0
        step = self.decoder_sparse_step or self.moe_layer_freq or 1
        return (i + 1) % step == 0 if self.decoder_sparse_step else i % step == 0

    @property
    def dense_ffn(self) -> int:
        """FFN width of the dense (non-MoE) layers: Llama 4 gives them intermediate_size_mlp."""
        return self.intermediate_size_mlp or self.intermediate_size

    @property
    def expert_ffn(self) -> int:
        return self.moe_intermediate_size or self.intermediate_size

    @cached_property
    def ffn_width(self) -> int:
        """Widest FFN a token passes through (the activations a layer holds): the dense FFN, or the active
        experts plus the shared ones, whichever is wider among the layer kinds the model has."""
        moe = (self.num_experts_per_tok or 0) * self.expert_ffn + self.shared_ffn if self.is_moe else 0
        has_dense = not self.is_moe or any(not self.is_moe_layer(i) for i in range(self.num_hidden_layers))
        return max(self.dense_ffn if has_dense else 0, moe)

    @property
    def shared_ffn(self) -> int:
        if self.shared_expert_intermediate_size:
            return self.shared_expert_intermediate_size
        if self.n_shared_experts:
            return self.n_shared_experts * self.expert_ffn
        return 0


Task = Literal["chat", "code", "reasoning", "vision", "embedding"]


class ModelQuality(BaseModel):
    """One published benchmark score for ranking models against each other (plan models)."""

    model_config = Frozen
    benchmark: str
    """Benchmark name, e.g. MMLU-Pro (the same one across the catalog's chat models)"""
    score: float = Field(ge=0, le=100, description="Published score [%]")
    source: NonEmptyStr
    """URL of the model card or paper that reports it"""
    caveats: list[Literal["third-party", "base-model", "other-protocol"]] = []
    ("Why the score may not compare like for like: measured by someone other than the maker, on the base (not "
     "instruct) model, or with another scoring protocol")


class NativeQuant(BaseModel):
    """Tensors the original checkpoint already stores quantized, and the formats that keep them as published.

    gpt-oss ships its MoE experts in MXFP4 (config.json ``quantization_config.quant_method: mxfp4``). llama.cpp's
    converter writes them as ggml MXFP4 whatever --outtype says (conversion/gpt_oss.py GptOssModel.dequant_model
    skips the dequantization, repack_mxfp4 adds them with raw_dtype MXFP4), and llama-quantize does not turn an
    already-quantized tensor into another type (src/llama-quant.cpp llama_model_quantize_impl: 'requantizing from
    type ... is disabled' without --allow-requantize; a tensor whose target equals its type is copied), so every
    published GGUF preset of the model keeps them in that type."""

    model_config = Frozen
    groups: list[str] = Field(["experts"], min_length=1, description="Tensor groups (planner.architecture) stored "
                              "quantized in the checkpoint")
    gguf_type: str
    """ggml type of those tensors in every GGUF of the model (e.g. MXFP4)"""
    gguf_preset: str | None = None
    """The llama-quantize preset that matches the checkpoint (e.g. MXFP4_MOE), searched first"""
    mlx_quant: str | None = None
    ("The MLX format id that holds the checkpoint without an up-cast (e.g. mlx-mxfp4); MLX formats with more bits "
     "per weight are not searched")
    source: NonEmptyStr
    """Where the native format was read"""

    def preset_for(self, weight_format: str) -> str | None:
        """The format id that holds the checkpoint as published for a runtime loading ``weight_format`` weights
        (gguf_preset or mlx_quant), None when there is none."""
        return self.gguf_preset if weight_format == "gguf" else self.mlx_quant


class ModelProfile(_Profile):
    id: str
    name: str
    family: str | None = None
    """Model family for filtering (llama, qwen, gemma, ...)"""
    tasks: list[Task] = Field(default_factory=lambda: list[Task](["chat"]), description="What the model is for")
    quality: ModelQuality | None = None
    """Published benchmark score; None when none is known"""
    hf_repo: str | None = None
    aliases: list[str] = []
    params_b: float = Field(gt=0, le=1e6, description="Published total parameters [billions]")
    active_params_b: float | None = Field(None, gt=0, le=1e6)
    vision_params_b: float | None = Field(None, ge=0, le=1e6, description="Vision tower + projector [billions]")
    gated: bool = False
    notes: str = ""
    native_quant: NativeQuant | None = None
    """Tensors the checkpoint ships already quantized"""
    config: ModelConfig


class ResolvedFiles(Protocol):
    """What the core reads of a model resolved from local files or the Hub (sources.ResolvedModel, passed in by
    the edge: the core does not import sources)."""

    @property
    def profile(self) -> ModelProfile: ...
    @property
    def source(self) -> str: ...
    @property
    def exact_weights(self) -> "WeightsEstimate | None": ...
    @property
    def quant_id(self) -> str | None: ...
    @property
    def runtime_hint(self) -> str | None: ...
    @property
    def notes(self) -> list[str]: ...
