"""Profile schemas that only some questions read: the Mac catalog (buy, SSD and battery look-ups), the CPU side's
memory bandwidth (partial offload), speculative-decoding pairs (draft models) and vision families (images). Split
from planner/schema.py (which still exports every name here), so that the plain question does not define them."""

from typing import Literal, Self

from pydantic import BaseModel, Field, model_validator

from ._model import Frozen
from .schema import MAX_RAM_GB, _Profile


class MacProduct(_Profile):
    """One Mac configuration Apple sold (product × chip bin × RAM), generated from calibration/data/mac_configs.csv
    by scripts/gen_mac_configs.py. ``price_basis`` says where the price comes from; ``estimated`` prices follow
    the rule documented in that script (anchor price + RAM step + GPU-bin step)."""

    id: str
    product: str
    form_factor: Literal["desktop", "laptop"]
    launch: str
    chip: str
    cpu_cores: int | None = None
    ram_gb: int = Field(gt=0, le=MAX_RAM_GB)
    storage_gb: int | None = None
    price_usd: float = Field(gt=0, description="US launch price of this configuration [USD]")
    price_confidence: Literal["high", "medium", "low", "estimated"]
    price_basis: str = Field("", description="list | base+upgrades | estimate | estimated: <anchor and steps>")
    discontinued: bool = False
    notes: str = ""


class CpuMemory(_Profile):
    """Share of the vendor memory bandwidth the CPU cores reach (llama.cpp layers kept on the CPU read at it)."""

    id: str
    name: str
    fraction_of_vendor_bandwidth: float = Field(gt=0, le=1, description="CPU-side / vendor bandwidth [1]")
    measured_on: str = ""
    decode_efficiency: float = Field(gt=0, le=1, description="llama.cpp CPU decode bytes/s / CPU-side bandwidth [1]")


class DraftPair(BaseModel):
    model_config = Frozen
    targets: list[str] = Field(min_length=1, description="Catalog ids of the main models")
    drafts: list[str] = Field(min_length=1, description="Catalog ids of the draft models")
    acceptance: float = Field(gt=0, lt=1, description="Per-token acceptance probability alpha [1]")
    measured: str = ""
    source: str = Field(min_length=1)


class SpeculativePairs(_Profile):
    """Speculative decoding: default draft length per runtime and acceptance rates per (main, draft) pair."""

    id: str
    name: str
    default_acceptance: float = Field(gt=0, lt=1)
    default_source: str = Field(min_length=1)
    draft_tokens: dict[str, int] = Field(description="Tokens drafted per step by default, by runtime family")
    pairs: list[DraftPair] = []


class VisionFamily(_Profile):
    """How a family of vision models turns an image into prompt tokens: a fixed count; one token per
    ``pixels_per_token_side``² pixels after scaling into [min_pixels, max_pixels] or to ``max_long_side``; or
    ``tokens_per_tile`` per ``tile_px`` tile (up to ``max_tiles``, plus a global tile)."""

    id: str
    name: str
    models: list[str] = Field(min_length=1, description="Catalog ids this rule applies to")
    tokens_per_image: int | None = Field(None, gt=0, le=100_000, description="Fixed soft tokens per image")
    pixels_per_token_side: int | None = Field(None, gt=0, le=1024, description="Side of the square one token covers [px]")
    min_pixels: int | None = Field(None, gt=0)
    max_pixels: int | None = Field(None, gt=0)
    max_long_side: int | None = Field(None, gt=0, description="Images are scaled down to this longest side [px]")
    row_break_tokens: bool = Field(False, description="One break token after each row of image tokens")
    tile_px: int | None = Field(None, gt=0, le=4096, description="Side of one image tile [px]")
    tokens_per_tile: int | None = Field(None, gt=0, le=10_000)
    max_tiles: int | None = Field(None, gt=0, le=256)
    global_tile: bool = Field(False, description="A downscaled whole-image tile is added when there are several")
    extra_tokens: int = Field(0, ge=0, le=64, description="Marker tokens around each image")
    notes: str = ""

    @model_validator(mode="after")
    def _one_rule(self) -> Self:
        rules = [self.tokens_per_image, self.pixels_per_token_side, self.tile_px]
        if sum(r is not None for r in rules) != 1:
            raise ValueError("give one of tokens_per_image (fixed), pixels_per_token_side (per pixel area) or "
                             "tile_px (tiles)")
        if self.tile_px is not None and (self.tokens_per_tile is None or self.max_tiles is None):
            raise ValueError("tile_px needs tokens_per_tile and max_tiles")
        return self


# --------------------------------------------------------------------------- workload
# one operating point (WorkloadProfile.at); split from planner/schema.py, which still exports it
class Workload(BaseModel):
    model_config = Frozen
    context: int = Field(8192, gt=0, le=10_000_000, description="Context tokens per sequence (prompt + output)")
    users: int = Field(1, gt=0, le=4096, description="Concurrent sequences")
    prompt_tokens: int = Field(1024, ge=0, le=10_000_000, description="New prompt tokens per request")
    gen_tokens: int = Field(256, ge=0, le=10_000_000, description="Generated tokens per request")
