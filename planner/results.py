"""Result models: structured breakdowns that sum exactly, then summaries. Bytes are int, times seconds."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

Frozen = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class _RoundTrip(BaseModel):
    """Accept our own computed fields back: model_dump_json() writes them (total, sysctl_max_mb) and extra='forbid'
    refused them, so model_validate_json(x.model_dump_json()) failed for every Plan. They are recomputed."""

    @model_validator(mode="before")
    @classmethod
    def _drop_computed(cls, data):
        if isinstance(data, dict) and any(k in data for k in cls.model_computed_fields):
            data = {k: v for k, v in data.items() if k not in cls.model_computed_fields}
        return data


class WeightsEstimate(BaseModel):
    model_config = Frozen
    total_bytes: int = Field(description="Weight bytes as loaded [bytes]")
    n_params: int
    bits_per_weight: float
    by_group: dict[str, int] = Field(description="bytes per tensor group (embedding, attention, ffn, experts, ...)")
    by_type: dict[str, int] = Field(default_factory=dict, description="bytes per storage type (GGUF) [bytes]")
    vision_bytes: int = 0
    exact: bool = Field(False, description="True when read from a real file header, not estimated")


class KVLayout(BaseModel):
    """KV cost of one runtime × KV type, independent of context."""

    model_config = Frozen
    kv_type: str
    bytes_per_token: int = Field(description="KV bytes per token on full-attention layers [bytes]")
    swa_bytes_per_token: int = Field(0, description="KV bytes per token on sliding-window layers [bytes]")
    window: int | None = None
    state_bytes_per_seq: int = Field(0, description="Recurrent/linear-attention state per sequence [bytes]")


class MemoryEstimate(_RoundTrip):
    model_config = Frozen
    weights: int
    kv_cache: int
    recurrent_state: int
    compute_buffer: int
    output_buffer: int
    runtime_overhead: int
    vision: int = 0
    context: int = Field(description="Context per sequence [tokens]")
    users: int
    kv_cells: int = Field(description="KV cells allocated (llama.cpp) or held (mlx-lm), all sequences [tokens]")

    @computed_field
    @property
    def total(self) -> int:
        return (self.weights + self.kv_cache + self.recurrent_state + self.compute_buffer + self.output_buffer
                + self.runtime_overhead + self.vision)


Verdict = Literal["fits", "tight", "raise-limit", "no-fit"]


class WiredLimit(_RoundTrip):
    model_config = Frozen
    ram_bytes: int
    macos: str
    default_bytes: int = Field(description="recommendedMaxWorkingSetSize default for this RAM [bytes]")
    effective_bytes: int = Field(description="Limit used for verdicts (default, or --wired-limit) [bytes]")
    max_raise_bytes: int = Field(description="Highest limit we would set, leaving RAM for macOS [bytes]")
    left_for_macos_bytes: int
    rule: str
    user_set: bool = False

    @computed_field
    @property
    def sysctl_max_mb(self) -> int:
        return self.max_raise_bytes // (1024 * 1024)


class Fit(BaseModel):
    model_config = Frozen
    verdict: Verdict
    reason: str
    headroom_bytes: int = Field(description="Effective wired limit minus total (negative: over) [bytes]")
    sysctl: str | None = Field(None, description="Command that raises the limit enough, when that helps")
