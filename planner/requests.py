"""What each command takes, once: the request models of `plan predict`, `recommend`, `buy` and `cluster`
(`plan` itself takes :class:`planner.plan.PlanRequest`). Field descriptions are the CLI's --help text
(cli/options.py reads them), so an option is described in one place and shared fields read the same everywhere."""


from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field

from ._model import DEFAULT_MACOS, Frozen
from .points import (
    DEFAULT_CACHED_PREFIX,
    DEFAULT_GEN,
    DEFAULT_PROMPT,
    DEFAULT_WORKLOAD,
    CachedPrefix,
    GenDist,
    GenPoint,
    Images,
    ImageSize,
    KvType,
    PresetCachedPrefix,
    PromptPoint,
    TokenDist,
)

# ---------------------------------------------------------------------------------------- shared fields
# (the lengths and the prompt-cache share: planner/points.py)
CatalogModel = Annotated[str, Field(description="Catalog id or alias, e.g. llama-3.3-70b")]
Chip = Annotated[str | None, Field(description="Apple chip, e.g. 'M4 Max' or m4-max-40gpu (for speed)")]
GpuCores = Annotated[int | None, Field(description="GPU cores, to pick a binned chip (M3 Max 30/40)")]
Ram = Annotated[float | None, Field(description="Unified memory [GB]; default: the chip's largest")]
Macos = Annotated[str, Field(description="macOS major version (15 or 26); changes the default GPU limit")]
Runtimes = Annotated[list[str] | None, Field(description="Runtimes to consider (default llama.cpp, mlx-lm)")]
Workload = Annotated[str, Field(description="Preset: chat, rag, agent, batch, code")]
Users = Annotated[int | None, Field(description="Concurrent users (overrides the preset)")]

ReserveContext = Annotated[int | None, Field(description="Context to reserve per sequence [tokens]")]
MinTokS = Annotated[float | None, Field(description="Minimum decode tok/s per user")]
MaxTtft = Annotated[float | None, Field(description="Maximum time to first token [s]")]
MaxRequest = Annotated[float | None, Field(description="Maximum time per request/turn [s]")]


class _Targets(BaseModel):
    """A workload preset and the overrides every workload command takes."""

    model_config = Frozen
    workload: Workload = DEFAULT_WORKLOAD
    users: Users = None
    prompt: TokenDist = None
    gen: GenDist = None
    context: ReserveContext = None
    min_tok_s: MinTokS = None
    max_ttft: MaxTtft = None
    max_request: MaxRequest = None
    cached_prefix: PresetCachedPrefix = None


class PredictRequest(BaseModel):
    model_config = Frozen
    chip: str = Field(description="Apple chip, e.g. 'M3 Max'")
    gpu_cores: GpuCores = None
    ram: Ram = None
    model: CatalogModel
    quant: str | None = Field(None, description="GGUF preset (Q4_K_M) or MLX format (4bit, 8bit-g32, bf16); default: "
                              "the model's own format if it ships quantized, else Q4_K_M / 4bit")
    runtime: str | None = Field(None, description="llama.cpp, mlx-lm or ollama; default: the runtime of the format "
                                "the model name or quant pins (mlx-community/...: mlx-lm), else llama.cpp")
    prompt: PromptPoint = DEFAULT_PROMPT
    gen: GenPoint = DEFAULT_GEN
    depth: int = Field(0, description="Tokens already cached before the prompt (llama-bench @ dD)")
    batch: int = Field(1, description="Concurrent sequences, each with its own prompt")
    macos: Macos = DEFAULT_MACOS
    flash_attn: bool | None = Field(None, description="llama.cpp flash attention")
    ubatch: int | None = Field(None, description="prompt tokens per prefill step: llama.cpp -ub, mlx_lm "
                                "--prefill-step-size (default: the runtime's, 512 / 2048)")
    cached_prefix: CachedPrefix = DEFAULT_CACHED_PREFIX
    kv_type: KvType = None
    images: Images = 0
    image_size: ImageSize = None


class RecommendRequest(_Targets):
    model: str = Field(description="Catalog id, alias or HF repo (e.g. llama-3.3-70b)")
    chip: Chip = None
    gpu_cores: GpuCores = None
    ram: Ram = None
    runtime: Runtimes = None
    quant: list[str] | None = Field(None, description="Restrict to these quantizations")
    macos: Macos = DEFAULT_MACOS
    wired_limit: int | None = Field(None, description="GPU wired limit you set [MB]")
    top: int = Field(8, description="Configurations to list")
    kv_type: KvType = None
    images: Images = 0
    image_size: ImageSize = None


class BuyRequest(_Targets):
    model: list[str] = Field(description="Model(s) that must be resident together")
    budget: float | None = Field(None, description="Most you will spend [USD]")
    price: list[str] | None = Field(None, description="Your price for a configuration, e.g. "
                                    "'Mac Studio M4 Max 128GB=3499' (refurbished or used)")
    prices: Path | None = Field(None, description="CSV of your prices: columns product, chip, gpu_cores, ram_GB, "
                                "us_price_usd (as calibration/data/mac_configs.csv)")
    include_discontinued: bool = Field(False, description="Also consider Macs no longer sold new (at their launch "
                                       "price)")
    include_rumoured: bool = Field(False, description="Also consider rumoured chips")
    max_quality_cost: str = Field("small", description="Worst quant quality cost allowed: lossless, small, "
                                  "noticeable, large")
    runtime: Runtimes = None
    macos: Macos = DEFAULT_MACOS
    all_rows: bool = Field(False, description="List the best configuration of every Mac")
    clusters: bool = Field(False, description="Also set 2-4 identical linked Macs against one larger Mac")
    link: str | None = Field(None, description="Interconnect of the clusters: tb5, tb4, 10gbe (default tb5)")
    kwh_price: float = Field(0.16, gt=0, lt=100, allow_inf_nan=False,
                             description="Electricity price [USD/kWh] for the running cost "
                             "(default: the 2023 US residential average, 16 ¢/kWh, EIA)")
    busy_hours: float = Field(8.0, ge=0, le=24, allow_inf_nan=False,
                              description="Hours a day the Mac generates (running cost)")
    years: float | None = Field(None, gt=0, le=20, allow_inf_nan=False,
                                description="Rank by total cost of ownership over this many "
                                "years: price + energy")


class ClusterRequest(BaseModel):
    model_config = Frozen
    model: CatalogModel
    macs: str = Field(description="e.g. \"2x Mac Studio M3 Ultra 512GB, 1x MacBook Pro M4 Max 128GB\"")
    link: str = Field("tb5", description="Interconnect: tb5, tb4, 10gbe, 2.5gbe (profiles/links)")
    engine: str = Field("mlx", description="mlx, llama.cpp-rpc or exo")
    mode: str = Field("pipeline", description="pipeline (layers split) or tensor (matmuls split)")
    quant: str | None = Field(None, description="Default: the checkpoint's own format (gpt-oss: MXFP4), else mlx-4bit-g64 (mlx/exo) or Q4_K_M (llama.cpp)")
    context: int = Field(8192, description="Context per sequence [tokens]")
    users: int = Field(1, description="Concurrent sequences")
    prompt: PromptPoint = DEFAULT_PROMPT
    gen: GenPoint = DEFAULT_GEN
    cached_prefix: CachedPrefix = DEFAULT_CACHED_PREFIX
    macos: str = Field(DEFAULT_MACOS, description="macOS major version (RDMA over TB5 needs 26.2+)")
    no_rdma: bool = Field(False, description="Use TCP (ring) even over Thunderbolt 5")
