"""Result models of planner.cluster (per-node shares, cluster speed, the whole plan). [bytes, s, tok/s]"""

from __future__ import annotations

from pydantic import BaseModel, Field

from .._model import Frozen
from .links import Transport


class NodeShare(BaseModel):
    model_config = Frozen
    label: str
    chip: str
    ram_gb: int
    layers: tuple[int, int] | None = Field(None, description="[start, end) for pipeline stages")
    weights_bytes: int
    kv_bytes: int
    buffers_bytes: int
    total_bytes: int
    wired_limit_bytes: int = Field(description="The node's GPU (wired) limit [bytes]")
    verdict: str
    reason: str
    sysctl: str | None = None
    decode_step_s: float | None = Field(None, description="This node's compute/bandwidth time per decode step [s]")
    decode_bound: str | None = None


class SingleMac(BaseModel):
    model_config = Frozen
    label: str
    verdict: str
    decode_tok_s: float | None = None
    prefill_tok_s: float | None = None


class ClusterSpeed(BaseModel):
    model_config = Frozen
    decode_tok_s_per_user: float
    decode_tok_s_total: float
    prefill_tok_s: float
    ttft_s: float
    cached_prefix_share: float = Field(0.0, description="Share of each prompt in the prompt cache (TTFT, prefill): "
                                       "only the rest is prefilled")
    compute_s_per_step: float
    comm_s_per_step: float
    comm_latency_s_per_step: float
    pipelined_ceiling_tok_s: float | None = None


class ClusterPlan(BaseModel):
    model_config = Frozen
    model: str
    engine: str
    mode: str
    runtime: str
    quant: str
    transport: Transport
    context: int
    users: int
    prompt_tokens: int
    gen_tokens: int
    cached_prefix_share: float = Field(0.0, description="Share of each prompt in the prompt cache (TTFT)")
    nodes: list[NodeShare]
    fits: bool
    speed: ClusterSpeed | None
    single_macs: list[SingleMac]
    best_single: SingleMac | None
    slower_than_single: bool
    scaling: dict[int, float | None] = Field(default_factory=dict, description="Decode tok/s with the first k Macs")
    binding: str
    suggestions: list[str] = Field(default_factory=list, description="When it does not fit: what would")
    calibration: str = ""
    notes: list[str] = Field(default_factory=list)


class ClusterCandidate(BaseModel):
    """One cluster option for `plan buy`: k identical Macs, their total list price and speed."""

    model_config = Frozen
    macs: str
    mac_id: str
    count: int
    price_usd: float
    decode_tok_s_per_user: float
    prefill_tok_s: float
    ttft_s: float
    binding: str
    engine: str
    mode: str
    link: str
    needs_raised_limit: bool = Field(False, description="a Mac's share fits only with iogpu.wired_limit_mb raised")
