"""Energy per token and the running cost of a Mac (pure: the measurements come in as a PowerTable).

Power model (per chip, wall power): P = P_idle + w · gpu_cores, with w [W per GPU core] the median over the public
wall-meter rows of (P_measured − P_idle of that Mac) / its GPU cores, separately for GPU-bound decode and prefill
(rows of that phase; full-load rows when there are none), and the likely range the spread (min, max) of those
per-core values. Idle: the chip's own measurement, else the median of the measured idle rows. Full-load readings
overstate decode (memory-bound, the GPU's ALUs partly idle), so a decode figure from load rows leans high. Joules per token = P × time per token; energy per day =
24 h × P_idle + busy hours × (P_load − P_idle); battery hours = battery Wh / P_load.
"""


from datetime import date
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from ._model import Frozen
from .energy import DEFAULT_KWH_PRICE_USD as DEFAULT_KWH_PRICE_USD
from .energy import KWH_PRICE_SOURCE as KWH_PRICE_SOURCE
from .energy import EnergyPerToken as EnergyPerToken
from .energy import PowerModel as PowerModel


class PowerRow(BaseModel):
    """One public wall-power reading of a Mac."""

    model_config = Frozen
    product: str
    chip: str = Field(description="Chip profile id, e.g. m4-10gpu, m3-ultra-80gpu")
    gpu_cores: int = Field(gt=0, le=256)
    state: Literal["idle", "load", "decode", "prefill"] = Field(
        description="idle; load (whole-system maximum under load); decode / prefill (an LLM run mostly in that phase)")
    watts: float = Field(gt=0, lt=1000, description="Wall power [W]")
    workload: str = ""
    source: str
    note: str = ""

    @field_validator("source")
    @classmethod
    def _url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("source must be the URL the reading was published at")
        return v


class Battery(BaseModel):
    model_config = Frozen
    product: str = Field(description="Product name as in profiles/macs (e.g. 'MacBook Pro 14')")
    generations: list[str] = Field(min_length=1, description="Chip generations it applies to (M1..M5)")
    tiers: list[Literal["base", "pro", "max"]] = Field(min_length=1)
    wh: float = Field(gt=10, lt=120, description="Battery capacity [Wh]")
    source: str


class PowerTable(BaseModel):
    model_config = Frozen
    id: str
    name: str
    rows: list[PowerRow] = Field(min_length=1)
    batteries: list[Battery] = []
    sources: list[str] = Field(min_length=1)
    verified: date


def _idle_of(table: PowerTable, chip: str) -> float | None:
    from statistics import median  # on first use: the plain fit question (no chip) needs none

    v = [r.watts for r in table.rows if r.chip == chip and r.state == "idle"]
    return median(v) if v else None


def _per_core(table: PowerTable, state: str) -> list[float]:
    out = []
    for r in table.rows:
        if r.state != state:
            continue
        idle = _idle_of(table, r.chip)
        if idle is not None:
            out.append((r.watts - idle) / r.gpu_cores)
    return out


def power_model(table: PowerTable, chip_id: str, gpu_cores: int) -> PowerModel:
    """P = P_idle + w · cores for decode and prefill (w: median over the rows, range: their min and max)."""
    from statistics import median  # on first use: the plain fit question (no chip) needs none

    idle = _idle_of(table, chip_id)
    basis = "measured"
    if idle is None:
        idle, basis = median(r.watts for r in table.rows if r.state == "idle"), "median of measured Macs"
    load = _per_core(table, "load")
    dec, pre = _per_core(table, "decode"), _per_core(table, "prefill")
    dec_basis, pre_basis = ("decode" if dec else "load"), ("prefill" if pre else "load")
    dec, pre = dec or load, pre or load
    return PowerModel(chip=chip_id, idle_w=idle, idle_basis=basis,
                      decode_w=idle + median(dec) * gpu_cores,
                      decode_w_range=(idle + min(dec) * gpu_cores, idle + max(dec) * gpu_cores),
                      decode_basis=dec_basis, prefill_basis=pre_basis,
                      prefill_w=idle + median(pre) * gpu_cores,
                      prefill_w_range=(idle + min(pre) * gpu_cores, idle + max(pre) * gpu_cores),
                      measured_rows=sum(r.chip == chip_id for r in table.rows))


def energy_per_token(pm: PowerModel, decode_tok_s: float, prefill_tok_s: float | None = None,
                     battery_wh: float | None = None, gpu_share: float = 1.0) -> EnergyPerToken:
    """J/token = P / (tok/s). ``gpu_share`` < 1 (weights streamed from the SSD): the GPU draws its load power that
    share of each step and idles the rest (the SSD's own draw is not counted): P = idle + share · (load − idle)."""
    def at(load: float) -> float:
        return pm.idle_w + gpu_share * (load - pm.idle_w)

    lo, hi = at(pm.decode_w_range[0]), at(pm.decode_w_range[1])
    p = at(pm.decode_w)
    return EnergyPerToken(
        decode_j_per_token=p / decode_tok_s, decode_j_range=(lo / decode_tok_s, hi / decode_tok_s),
        prefill_j_per_token=pm.prefill_w / prefill_tok_s if prefill_tok_s else None, battery_wh=battery_wh,
        battery_hours_decoding=battery_wh / p if battery_wh else None, decode_w=p, streamed=gpu_share < 1,
        gpu_share=gpu_share, power=pm)


class DailyCost(BaseModel):
    model_config = Frozen
    busy_share: float = Field(description="Share of the day the GPU works on requests [0-1]")
    kwh_per_day: float
    kwh_per_day_range: tuple[float, float]
    usd_per_day: float
    kwh_price_usd: float
    power: PowerModel


def daily_cost(pm: PowerModel, busy_share: float, kwh_price: float = DEFAULT_KWH_PRICE_USD) -> DailyCost:
    """24 h at idle plus the busy share of the day at decode power (decode dominates a serving day)."""
    b = min(max(busy_share, 0.0), 1.0)

    def kwh(load: float) -> float:
        return 24 * (pm.idle_w + b * (load - pm.idle_w)) / 1000

    k = kwh(pm.decode_w)
    return DailyCost(busy_share=b, kwh_per_day=k, kwh_per_day_range=(kwh(pm.decode_w_range[0]),
                                                                     kwh(pm.decode_w_range[1])),
                     usd_per_day=k * kwh_price, kwh_price_usd=kwh_price, power=pm)


class ServeEnergy(BaseModel):
    """Energy and money per day of one server at the simulated load, the rate running all day."""

    model_config = Frozen
    daily: DailyCost
    j_per_generated_token: float | None = Field(None, description="Energy of the day / tokens generated in it "
                                                                  "(idle included) [J/token]")
    usd_per_million_tokens: float | None = None


class RunningCost(BaseModel):
    """One Mac of `plan buy`: energy per day at the workload's busy hours, and price + energy over the years."""

    model_config = Frozen
    mac: str
    label: str
    price_usd: float
    kwh_per_day: float
    kwh_per_day_range: tuple[float, float]
    usd_per_day: float
    j_per_token: float | None = Field(None, description="Decode energy at the row's per-user speed [J/token]")
    battery_hours: float | None = Field(None, description="Hours of generation on a full battery (laptops)")
    years: float | None = None
    tco_usd: float | None = Field(None, description="Price + energy over `years` [USD]")


def total_cost(price_usd: float, kwh_per_day: float, years: float, kwh_price: float = DEFAULT_KWH_PRICE_USD) -> float:
    """Price + energy over ``years`` (365.25 days a year) [USD]."""
    return price_usd + kwh_per_day * 365.25 * years * kwh_price


def battery_wh(table: PowerTable, product: str, generation: str, tier: str) -> float | None:
    for b in table.batteries:
        if product.startswith(b.product) and generation in b.generations and tier in b.tiers:
            return b.wh
    return None
