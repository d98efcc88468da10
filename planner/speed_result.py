"""The speed of one operating point (`plan predict`, planner.throughput.predict): split from planner/results.py, so
that the plain question does not define the class."""

from pydantic import BaseModel, Field

from ._model import Frozen
from .results import Bound


class ThroughputEstimate(BaseModel):
    """Speed of one (chip, runtime, model, quant) at one workload. Rates are tokens per second."""

    model_config = Frozen
    prefill_tok_s: float = Field(description="Prompt tokens processed per second, all sequences together [tok/s]")
    ttft_s: float = Field(description="Time to first token: the prefill (llama.cpp), the prefill of all but the last "
                          "prompt token plus one decode step (mlx-lm); throughput.first_token_time [s]")
    decode_tok_s: float = Field(description="Generated tokens per second, all sequences together [tok/s]")
    decode_tok_s_per_seq: float = Field(description="Generated tokens per second seen by one sequence [tok/s]")
    decode_tok_s_range: tuple[float, float] = Field(
        description="80 % likely range (low, high) of the per-sequence decode rate, from out-of-source residuals [tok/s]")
    prefill_tok_s_range: tuple[float, float] = Field(
        description="80 % likely range (low, high) of the prefill rate, from out-of-source residuals [tok/s]")
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
    notes: list[str] = []
