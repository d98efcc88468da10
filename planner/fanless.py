"""Fanless Macs under sustained load: the products that have no fan, and how far public runs on them slowed down.

A MacBook Air sheds heat through its case only, so a long generation slows as the chip heats; every speed the planner
gives assumes full clocks. Nothing here is a model of the heat: the answer is the measured spread of sustained runs
(profiles/hardware/fanless.yaml), said next to the speeds of a chip and RAM that Apple sells in a fanless Mac."""

from datetime import date

from pydantic import BaseModel, Field

from ._model import Frozen


class SustainedRun(BaseModel):
    """One public run on a fanless Mac: its first decode rate and a later one on the same machine."""

    model_config = Frozen
    mac: str
    runtime: str
    model: str
    first_tok_s: float = Field(gt=0)
    later_tok_s: float = Field(gt=0)
    what: str
    rows: list[int] = Field(min_length=1, description="The same measurements' row ids in calibration/data/")
    source: str

    @property
    def slowdown(self) -> float:
        """Share of the first run's rate lost by the later one (0.33: a third slower)."""
        return 1 - self.later_tok_s / self.first_tok_s


class FanlessTable(BaseModel):
    model_config = Frozen
    id: str
    name: str
    products: list[str] = Field(min_length=1, description="Product names (prefixes) without a fan")
    runs: list[SustainedRun] = Field(min_length=1)
    sources: list[str] = Field(min_length=1)
    verified: date


class Fanless(BaseModel):
    """A chip and RAM Apple sells in a fanless Mac: which one, and the slowdown range of the runs measured on one."""

    model_config = Frozen
    products: list[str] = Field(min_length=1)
    slowdown: tuple[float, float]
    runs: int


def fanless(table: FanlessTable, products: list[str]) -> Fanless | None:
    """``products``: the product names sold with the asked chip and RAM (profiles/macs) -> the fanless ones with
    the measured slowdown range (min, max over the table's runs), or None when none is fanless."""
    found = sorted({p for p in products if any(p.startswith(f) for f in table.products)})
    if not found:
        return None
    return Fanless(products=found, slowdown=slowdown_range(table), runs=len(table.runs))


def slowdown_range(table: FanlessTable) -> tuple[float, float]:
    """(least, most) share of the first run's decode rate lost in the table's sustained runs."""
    s = [r.slowdown for r in table.runs]
    return min(s), max(s)


def note(f: Fanless) -> str:
    """The note a plan carries for a chip and RAM sold in a fanless Mac."""
    lo, hi = f.slowdown
    return (f"if this Mac is a {' or '.join(f.products)} (no fan): a long generation slows as the chip heats; "
            f"{f.runs} public runs on MacBook Airs decoded {100 * lo:.0f}–{100 * hi:.0f} % slower after minutes of "
            "continuous load than at the start. The speeds here assume full clocks, which a Mac with a fan holds")
