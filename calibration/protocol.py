"""The calibration run protocol and the plan of configurations to measure.

Protocol (from ``mlx_lm/benchmark.py``): fixed seed, random prompt tokens, EOS ignored, 1 warm-up,
``trials`` timed trials, the **median** is the recorded value (all trial values are kept).

A :class:`BenchPlan` is a list of :class:`RunConfig` sorted cheapest first. :func:`execute` runs them in that
order until the time budget is spent, so a longer budget only adds longer configurations: a 10 s
budget still yields the short prefill/decode points, a 120 s budget adds long prompts, deep caches
and big batches.

Config kinds and the records a runner returns for each:

=========  =================================================  =========================================
kind       what is timed                                      records (metric in the training CSV)
=========  =================================================  =========================================
prefill    one sequence of ``prompt_tokens`` from an empty     1 prefill record (``pp_tps``)
           cache
decode     ``gen_tokens`` steps of one sequence after          1 decode record (``tg_tps``), depth = D
           ``depth`` tokens were prefilled (llama-bench
           ``tgN @ dD``)
batch      ``batch`` sequences, each its own prompt of          prefill + decode records
           ``prompt_tokens`` then ``gen_tokens`` steps          (``batched_pp_tps`` / ``batched_tg_tps``,
           (llama-batched-bench, mlx ``batch_generate``)        aggregate), decode depth = prompt_tokens
=========  =================================================  =========================================
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from calibration.errors import CalibrationError
from calibration.records import RunRecord

Kind = Literal["prefill", "decode", "batch"]
ProgressCallback = Callable[[int, int, str], None]

DEFAULT_SEED = 0
DEFAULT_TRIALS = 3
DEFAULT_WARMUP = 1
# Relative cost of one decode step vs one prefill token, for ordering only (a decode step re-reads all
# weights for one token; prefill amortizes the read over a whole ubatch). Any value in 4..32 gives
# the same ordering on the default plan.
DECODE_STEP_COST = 8.0
# Extra cost per extra sequence of a batched decode step (activations + KV reads grow with batch).
BATCH_STEP_COST = 0.25


@dataclass(frozen=True, order=True)
class RunConfig:
    """One configuration to measure (see the module table for what each kind records)."""

    kind: Kind
    prompt_tokens: int = 0
    gen_tokens: int = 0
    depth: int = 0
    batch: int = 1

    def __post_init__(self) -> None:
        if self.kind == "prefill" and (self.prompt_tokens < 1 or self.batch != 1 or self.gen_tokens):
            raise CalibrationError(f"prefill config needs prompt_tokens >= 1, batch 1, no gen: {self}")
        if self.kind == "decode" and (self.gen_tokens < 1 or self.batch != 1 or self.prompt_tokens):
            raise CalibrationError(f"decode config needs gen_tokens >= 1, batch 1, no prompt: {self}")
        if self.kind == "batch" and (self.prompt_tokens < 1 or self.gen_tokens < 1 or self.batch < 1):
            raise CalibrationError(f"batch config needs prompt_tokens, gen_tokens and batch >= 1: {self}")
        if self.depth < 0:
            raise CalibrationError(f"depth must be >= 0: {self}")

    @property
    def label(self) -> str:
        if self.kind == "prefill":
            return f"prefill p{self.prompt_tokens}"
        if self.kind == "decode":
            return f"decode g{self.gen_tokens} @ d{self.depth}"
        return f"batch {self.batch} p{self.prompt_tokens} g{self.gen_tokens}"

    @property
    def max_context(self) -> int:
        """KV-cache cells one sequence needs."""
        return self.depth + self.prompt_tokens + self.gen_tokens

    @property
    def cost(self) -> float:
        """Relative cost of one trial in 'prefill-token units' (ordering and budget prediction only)."""
        prefill = self.depth + self.batch * self.prompt_tokens
        steps = self.gen_tokens * DECODE_STEP_COST * (1 + BATCH_STEP_COST * (self.batch - 1))
        return float(prefill + steps)


@dataclass(frozen=True)
class BenchPlan:
    """Configurations (cheapest first) plus the protocol constants."""

    configs: tuple[RunConfig, ...]
    trials: int = DEFAULT_TRIALS
    warmup: int = DEFAULT_WARMUP
    seed: int = DEFAULT_SEED

    def __post_init__(self) -> None:
        if self.trials < 1 or self.warmup < 0:
            raise CalibrationError(f"trials must be >= 1 and warmup >= 0 (got {self.trials}, {self.warmup})")
        ordered = tuple(sorted(set(self.configs), key=lambda c: (c.cost * (self.trials + self.warmup), c)))
        object.__setattr__(self, "configs", ordered)

    def __len__(self) -> int:
        return len(self.configs)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.configs)

    @classmethod
    def build(
        cls,
        *,
        prompt_lengths: Iterable[int] = (64, 128, 256, 512, 1024),
        depths: Iterable[int] = (0, 256, 1024),
        batches: Iterable[int] = (1, 2, 4, 8),
        gen_tokens: int = 32,
        batch_prompt_tokens: int = 128,
        max_context: int | None = None,
        trials: int = DEFAULT_TRIALS,
        warmup: int = DEFAULT_WARMUP,
        seed: int = DEFAULT_SEED,
    ) -> BenchPlan:
        """The standard sweep; configs that need more than ``max_context`` KV cells are dropped."""
        configs = [RunConfig("prefill", prompt_tokens=p) for p in prompt_lengths]
        configs += [RunConfig("decode", gen_tokens=gen_tokens, depth=d) for d in depths]
        configs += [RunConfig("batch", prompt_tokens=batch_prompt_tokens, gen_tokens=gen_tokens, batch=b)
                    for b in batches]
        if max_context is not None:
            configs = [c for c in configs if c.max_context <= max_context]
        if not configs:
            raise CalibrationError(f"no configuration fits a context of {max_context} tokens")
        return cls(tuple(configs), trials=trials, warmup=warmup, seed=seed)

    @classmethod
    def default(cls, max_context: int | None = None, trials: int = DEFAULT_TRIALS, seed: int = DEFAULT_SEED) -> BenchPlan:
        """prefill p64..p1024, decode g32 @ d0/256/1024, batch 1/2/4/8 (p128 g32)."""
        return cls.build(max_context=max_context, trials=trials, seed=seed)

    @classmethod
    def quick(cls, max_context: int | None = None, trials: int = DEFAULT_TRIALS, seed: int = DEFAULT_SEED) -> BenchPlan:
        """A seconds-long plan for tests and smoke runs: p32/p64, g8 @ d0/d64, batch 1/2/4 (p32 g8)."""
        return cls.build(prompt_lengths=(32, 64), depths=(0, 64), batches=(1, 2, 4), gen_tokens=8,
                         batch_prompt_tokens=32, max_context=max_context, trials=trials, seed=seed)


@dataclass
class ExecutionReport:
    """What :func:`execute` did: records, configs run/skipped, wall time."""

    records: list[RunRecord] = field(default_factory=list)
    done: list[RunConfig] = field(default_factory=list)
    skipped: list[RunConfig] = field(default_factory=list)
    elapsed_s: float = 0.0


def execute(
    plan: BenchPlan,
    measure: Callable[[RunConfig], list[RunRecord]],
    *,
    budget_s: float | None = None,
    on_progress: ProgressCallback | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> ExecutionReport:
    """Run ``measure`` on each config of ``plan`` (cheapest first) until ``budget_s`` is spent.

    The first config always runs. Before each later one, its time is predicted from the seconds per
    cost unit seen so far; if that would overrun the budget, it and every (costlier) config after it
    are skipped. ``on_progress(done, total, label)`` is called with (0, n, "start"), after each config,
    and once at the end with done == total (label says how many were skipped).
    """
    report = ExecutionReport()
    total = len(plan.configs)
    if on_progress:
        on_progress(0, total, "start")
    t0 = clock()
    cost_done = 0.0
    for i, cfg in enumerate(plan.configs):
        elapsed = clock() - t0
        if budget_s is not None and i > 0:
            per_cost = elapsed / cost_done if cost_done > 0 else 0.0
            if elapsed >= budget_s or elapsed + per_cost * cfg.cost > budget_s:
                report.skipped = list(plan.configs[i:])
                break
        report.records.extend(measure(cfg))
        report.done.append(cfg)
        cost_done += cfg.cost
        if on_progress:
            on_progress(i + 1, total, cfg.label)
    report.elapsed_s = clock() - t0
    if on_progress:
        tail = f"done: {len(report.done)} configs" + (
            f", {len(report.skipped)} skipped (time budget)" if report.skipped else "")
        on_progress(total, total, tail)
    return report


# ----------------------------------------------------------------------------------------------
# Helpers shared by the runners
# ----------------------------------------------------------------------------------------------


def random_prompts(vocab: int, batch: int, n_tokens: int, seed: int = DEFAULT_SEED,
                   reserved: int = 3) -> list[list[int]]:
    """``batch`` prompts of ``n_tokens`` random token ids in [reserved, vocab) (skips BOS/EOS/PAD)."""
    import numpy as np

    if n_tokens < 0 or batch < 1 or vocab <= reserved:
        raise CalibrationError(f"bad prompt request: vocab={vocab} batch={batch} n_tokens={n_tokens}")
    rng = np.random.default_rng(seed)
    return rng.integers(reserved, vocab, size=(batch, n_tokens)).tolist()


def median(values: Sequence[float]) -> float:
    """Median of positive finite trial values; raises CalibrationError otherwise."""
    vals = [float(v) for v in values]
    if not vals or not all(math.isfinite(v) and v > 0 for v in vals):
        raise CalibrationError(f"trial values must be positive and finite, got {vals}")
    return float(statistics.median(vals))
