"""bfloat16 on the GPUs that emulate it: which chips, which MLX builds compute in it, and how much a float16 build
gained in public A/B runs (profiles/hardware/bf16.yaml). The speeds stay as fitted (on rows of both kinds of build);
this is advice, said next to an MLX option on an M1 or M2 when the model's own dtype is bfloat16 (builds made
before mlx-lm#117 are float16: the note says so rather than guess which one the user has)."""

from datetime import date
from typing import Literal

from pydantic import BaseModel, Field

from ._model import Frozen


class DtypeRun(BaseModel):
    """One public A/B on an emulating GPU: the same model and engine, a bfloat16 build against a float16 one."""

    model_config = Frozen
    mac: str
    engine: str
    model: str
    phase: Literal["decode", "prefill"]
    bf16_tok_s: float = Field(gt=0)
    fp16_tok_s: float = Field(gt=0)
    what: str
    source: str

    @property
    def gain(self) -> float:
        """How much faster the float16 build ran (0.34: 34 % more tokens per second)."""
        return self.fp16_tok_s / self.bf16_tok_s - 1


class Bf16Table(BaseModel):
    model_config = Frozen
    id: str
    name: str
    generations: list[str] = Field(min_length=1, description="Chip generations whose GPU emulates bfloat16")
    runs: list[DtypeRun] = Field(min_length=1)
    sources: list[str] = Field(min_length=1)
    verified: date


def applies(table: Bf16Table, generation: str, torch_dtype: str | None, build_dtype_compute: bool) -> bool:
    """An MLX build of this model computes in bfloat16 (its dtype since mlx-lm#117) on a GPU that emulates it.
    ``build_dtype_compute``: the engine computes in its build's float dtype (Engine.build_dtype_compute)."""
    return build_dtype_compute and generation in table.generations and torch_dtype == "bfloat16"


def gains(table: Bf16Table) -> dict[str, tuple[float, float]]:
    """{phase: (least, most) gain of the float16 build} over the table's runs of that phase."""
    by: dict[str, list[float]] = {}
    for r in table.runs:
        by.setdefault(r.phase, []).append(r.gain)
    return {p: (min(g), max(g)) for p, g in by.items()}


def flag(table: Bf16Table) -> str:
    """The short form for a row of a list of Macs (plan buy): the span of every run's gain."""
    g = [r.gain for r in table.runs]
    return f"no native bfloat16: a float16 MLX build ran {_pct(min(g), max(g))} faster (measured)"


def _pct(lo: float, hi: float) -> str:
    return f"{100 * lo:.0f} %" if round(100 * lo) == round(100 * hi) else f"{100 * lo:.0f}–{100 * hi:.0f} %"


def note(table: Bf16Table, generation: str) -> str:
    """The note for an MLX option of a bfloat16 model on a chip of ``generation`` (one that emulates bfloat16)."""
    g = gains(table)
    verb = {"prefill": "prefilled", "decode": "decoded"}
    measured = " and ".join(f"{verb[p]} {_pct(*g[p])} faster" for p in ("prefill", "decode") if p in g)
    return (f"MLX on an {generation}: its GPU has no native bfloat16, and an MLX build of this model made since "
            "April 2025 computes in it (mlx-lm's convert keeps the model's dtype since then; earlier builds are "
            "float16). A float16 build "
            f"(mlx_lm.convert --dtype float16) {measured} in {len(table.runs)} public A/B "
            f"run{'s' if len(table.runs) > 1 else ''} on M1/M2 Macs; "
            "the speeds here do not tell the two builds apart")
