"""The result of `plan serve`: latency under load of one server configuration (split from planner/results.py, so
that the plain question does not define these classes)."""

from pydantic import BaseModel, Field

from ._model import Frozen
from .power import ServeEnergy
from .results import Verdict


class Percentiles(BaseModel):
    model_config = Frozen
    p50: float
    p95: float
    p99: float


class SlotOption(BaseModel):
    """One slot count in the `plan serve` sweep."""

    model_config = Frozen
    slots: int
    saturation_rate_per_s: float = Field(description="Request rate at which the queue starts to grow without bound [1/s]")
    max_rate_per_s: float | None = Field(None, description="Highest rate meeting the TTFT p95 target (None: none) [1/s]")
    ttft_p95_floor_s: float = Field(description="TTFT p95 at a near-zero rate: the prefill alone [s]")
    fits: bool = True


class CurvePoint(BaseModel):
    """One point of the latency–throughput curve at the chosen slot count."""

    model_config = Frozen
    rate_per_s: float = Field(description="Offered request rate [1/s]")
    ttft_p50_s: float
    ttft_p95_s: float
    throughput_tok_s: float = Field(description="Generated tokens per second, all users [tok/s]")


class ServeResult(BaseModel):
    """Latency under load of one server configuration (`plan serve`), from a seeded simulation."""

    model_config = Frozen
    model: str
    quant: str
    chip: str = Field(description="Chip profile id (m4-max-40gpu)")
    chip_label: str | None = Field(None, description="The chip's name for people (M4 Max 40-core GPU)")
    ram_gb: float
    runtime: str
    slots: int = Field(description="Parallel sequences: llama-server -np / mlx_lm.server --decode-concurrency")
    slot_context: int = Field(description="Tokens of KV cache per slot [tokens]")
    rate_per_s: float = Field(description="Offered request rate [1/s]")
    duration_s: float
    seed: int
    n_requests: int
    prompt: str
    gen: str
    cached_prefix_share: float = 0.0
    kv_unified: bool | None = Field(None, description="one KV stream for all slots (llama-server --kv-unified), "
                                    "else one per slot, whose batches split by slot; None for mlx_lm.server")
    ttft_s: Percentiles = Field(description="Time to first token, arrival to first token [s]")
    e2e_s: Percentiles = Field(description="Arrival to last token [s]")
    queue_wait_s: Percentiles = Field(description="Arrival to the start of prompt processing [s]")
    decode_tok_s_p50: float = Field(description="Per-user decode rate after the first token, median [tok/s]")
    decode_tok_s_p5: float = Field(description="Per-user decode rate, 5th percentile (the slow users) [tok/s]")
    throughput_tok_s: float = Field(description="Generated tokens per second, all users [tok/s]")
    slot_occupancy: float = Field(description="Mean sequences in flight / the most the server holds at once [0-1]")
    queue_timeline: list[tuple[float, int]] = Field(description="(time [s], requests waiting) samples")
    queue_max: int
    saturation_rate_per_s: float = Field(description="Rate at which the queue grows without bound [1/s]")
    utilisation: float = Field(description="Offered rate / saturation rate")
    stable: bool
    memory_bytes: int
    wired_limit_bytes: int
    verdict: Verdict = Field(description="fits / tight / raise-limit / no-fit (the key of the memory verdict in "
                             "every command)")
    target_ttft_p95_s: float | None = None
    max_rate_per_s: float | None = Field(None, description="Highest rate meeting the TTFT p95 target [1/s]")
    sweep: list[SlotOption] = []
    curve: list[CurvePoint] = Field([], description="TTFT against offered rate, 10-110 % of "
                                                                       "the saturation rate")
    best_slots: int | None = Field(None, description="Slot count with the highest sustainable rate")
    binding: str | None = Field(None, description="Which target binds when no rate meets it, and by how much")
    users: int | None = Field(None, description="People behind the offered rate (None: a bare rate or a trace)")
    users_sustained: int | None = Field(None, description="People each asking at the offered rate per person that "
                                        "the server sustains: the highest rate under the TTFT p95 target, else the "
                                        "saturation rate, ÷ (offered rate / users), rounded down; None without users")
    host_s_per_token: float = Field(0.0, description="The server's host work per sampled token counted in every "
                                    "step (sampling, streaming; the server calibration, plan calibrate) [s]")
    server_scales: tuple[float, float] = Field((1.0, 1.0), description="(prompt, decode) multipliers of the server's "
                                               "phases over the benchmark-fitted steps (the server calibration, plan calibrate) [1]")
    speed_range: tuple[tuple[float, float], tuple[float, float]] | None = Field(
        None, description="(prefill, decode) speed factors at the slow and the fast end of the calibration's 80 % "
                          "likely range; None when it has none")
    ttft_s_slow: Percentiles | None = Field(None, description="TTFT on a Mac at the slow end of the speed range [s]")
    ttft_s_fast: Percentiles | None = Field(None, description="TTFT on a Mac at the fast end of the speed range [s]")
    saturation_slow_per_s: float | None = Field(None, description="Saturation rate at the slow end [1/s]")
    saturation_fast_per_s: float | None = Field(None, description="Saturation rate at the fast end [1/s]")
    calibration: str = ""
    notes: list[str] = []
    energy: ServeEnergy | None = Field(None, description="kWh and money per day at this load (planner/power.py)")
