"""What a plan carries of planner/power.py: the wall-power model of one chip and the energy per token (the classes
only, with the electricity price). Split from planner/power.py so that the plain question, whose options have an
``energy`` field, does not define the power table's and the running cost's classes; planner.power re-exports them."""


from typing import Literal

from pydantic import BaseModel

from ._model import Frozen

# U.S. average retail price of electricity to the residential sector in 2023: 16 ¢/kWh (EIA analysis of
# 2024-09-11, as digested by JEPIC; EIA's Electricity Monthly Update gives 15.45 ¢/kWh for January 2024)
DEFAULT_KWH_PRICE_USD = 0.16
KWH_PRICE_SOURCE = ("https://jepic-usa.org/digests/2024/9/12/"
                    "usa-retail-electricity-prices-closely-tracked-inflation-over-the-last-10-years")


class PowerModel(BaseModel):
    """Wall power of one chip [W], with the likely range of the load figures."""

    model_config = Frozen
    chip: str
    idle_w: float
    idle_basis: Literal["measured", "median of measured Macs"]
    decode_w: float
    decode_w_range: tuple[float, float]
    decode_basis: Literal["decode", "load"]
    """Rows the decode slope comes from: decode runs, or full-load readings when there are none (leans high)"""
    prefill_w: float
    prefill_w_range: tuple[float, float]
    prefill_basis: Literal["prefill", "load"]
    measured_rows: int
    """Rows of this very chip in the table"""



class EnergyPerToken(BaseModel):
    model_config = Frozen
    decode_j_per_token: float
    """Decode power / decode tok/s (one sequence) [J/token]"""
    decode_j_range: tuple[float, float]
    prefill_j_per_token: float | None = None
    """Prefill power / prefill tok/s [J/token]"""
    battery_wh: float | None = None
    """Battery of the laptop [Wh]; None for desktops or unknown"""
    battery_product: str | None = None
    """Laptop whose battery battery_wh is"""
    battery_hours_decoding: float | None = None
    """Battery Wh / decode power: hours of continuous generation on a full charge [h]"""
    decode_w: float
    """Average wall power while decoding [W]"""
    streamed: bool = False
    """Decode streams weights from the SSD: the GPU works gpu_share of the time"""
    gpu_share: float = 1.0
    """Share of a decode step the GPU computes (rest: idle, waiting) [0-1]"""
    power: PowerModel
