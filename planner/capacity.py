"""Capacity: the GPU wired limit, the fit verdict, safe concurrency and the longest context. [bytes, tokens]

References: recommendedMaxWorkingSetSize defaults (docs/model-facts.md §1.1, profiles/macos/*.yaml);
llama.cpp common/fit.cpp (1 GiB fit margin); mlx_lm/generate.py wired_limit() (0.9 × working-set warning).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from ._model import assemble
from .engines import engine_for
from .errors import InputError
from .memory import MemoryModel
from .results import Fit, WiredLimit
from .schema import MacOS, ModelProfile, Runtime
from .units import GiB, MiB

if TYPE_CHECKING:
    import numpy as np

MAX_USERS = 4096


def cap_context(context: int, model: ModelProfile) -> tuple[int, str | None]:
    """(context, note): a context above the model's maximum (config.json max_position_embeddings) is planned at the
    maximum, and the note says so; one rule and one note for every command (plan, recommend, cluster)."""
    most = model.config.max_position_embeddings
    if context <= most:
        return context, None
    return most, f"the context {context:,} is above {model.name}'s maximum of {most:,} tokens: capped at {most:,}"


def hold_request(context: int, prompt: int, gen: int, most: int) -> tuple[int, str | None]:
    """(context, note): a context shorter than one request (prompt + gen) is planned at the request's length, up to
    the model's maximum ``most``, and the note says so; one rule for every command that takes a context and lengths
    (plan, cluster), as a workload's context holds its longest request (planner/workload.py). A server refuses a
    request longer than its context (llama.cpp tools/server/server-context.cpp: "request (%d tokens) exceeds the
    available context size")."""
    need = min(prompt + gen, most)
    if context >= need:
        return context, None
    return need, (f"[[context]] {context:,} is shorter than [[prompt]] {prompt:,} + [[gen]] {gen:,} tokens, which a "
                  f"server refuses: planned at {need:,}")


def wired_limit(ram_gb: float, macos: MacOS, user_limit_mb: int | None = None) -> WiredLimit:
    """Default GPU wired-memory limit for a RAM size, and the highest limit worth setting."""
    ram = int(ram_gb * GiB)
    rule = next(r for r in macos.wired_rules if r.max_ram_gb is None or ram_gb <= r.max_ram_gb)
    default = int(ram * rule.fraction)
    reserve = max(int(macos.min_left_for_macos_gb * GiB), int(ram * macos.left_for_macos_fraction))
    max_raise = max(default, (ram - reserve) // MiB * MiB)
    frac = "2/3" if abs(rule.fraction - 2 / 3) < 1e-6 else f"{rule.fraction:.0%}"
    effective = default
    if user_limit_mb is not None:
        if user_limit_mb <= 0 or user_limit_mb * MiB > ram:
            raise InputError(f"[[wired_limit]] {user_limit_mb} MB must be between 1 and the RAM size ({ram // MiB} MB)")
        effective = user_limit_mb * MiB
    return assemble(WiredLimit, ram_bytes=ram, macos=macos.name, default_bytes=default, effective_bytes=effective,
                    max_raise_bytes=max_raise, left_for_macos_bytes=ram - effective,
                    rule=f"{frac} of RAM ({rule.evidence})", user_set=user_limit_mb is not None)


def raised_limit(ram_gb: float, macos: MacOS, wired: WiredLimit) -> WiredLimit:
    """The limit after `sysctl iogpu.wired_limit_mb=<max>` (whole MB), never below the current one: when the
    maximum floors to the default (2/3 of 8 GiB is not a whole MiB) raising changes nothing."""
    mb = wired.max_raise_bytes // MiB
    return wired_limit(ram_gb, macos, mb) if mb * MiB > wired.effective_bytes else wired


def safe_budget(wired: WiredLimit, runtime: Runtime) -> int:
    """Bytes a plan may use and still be 'comfortable': the limit minus the runtime's margin."""
    return wired.effective_bytes - int(runtime.headroom_mib * MiB)


def comfortable_budget(wired: WiredLimit, runtime: Runtime, weights: int) -> int:
    """Bytes that get the verdict 'fits': the safe budget, or -1 (nothing) when mlx-lm warns about the weights
    alone (above warn_fraction x the limit), which makes every configuration 'tight' (see fit)."""
    warn = warn_fraction(runtime)
    return -1 if warn and weights > warn * wired.effective_bytes else safe_budget(wired, runtime)


def sysctl_for(total_bytes: int, runtime: Runtime) -> str:
    mb = math.ceil((total_bytes + runtime.headroom_mib * MiB) / MiB / 1024) * 1024
    return f"sudo sysctl iogpu.wired_limit_mb={mb}"


def warn_fraction(runtime: Runtime) -> float | None:
    """Share of the working set above which the runtime warns (mlx_lm/generate.py wired_limit()); only mlx-lm."""
    return engine_for(runtime).warn_fraction(runtime)


def fit(total: int, weights: int, wired: WiredLimit, runtime: Runtime) -> Fit:
    """Verdict for one configuration against the wired limit."""
    head = wired.effective_bytes - total
    margin = int(runtime.headroom_mib * MiB)
    warn = warn_fraction(runtime)
    if total <= comfortable_budget(wired, runtime, weights):
        return assemble(Fit, verdict="fits", headroom_bytes=head, margin_bytes=margin,
                        reason=f"{head / GiB:.1f} GiB below the {wired.effective_bytes / GiB:.1f} GiB GPU limit")
    if total <= wired.effective_bytes:
        why = (f"weights exceed {warn:.0%} of the GPU limit, mlx-lm warns and may slow down"
               if warn and weights > warn * wired.effective_bytes else
               f"only {head / GiB:.2f} GiB below the GPU limit (runtime margin {runtime.headroom_mib / 1024:.0f} GiB); "
               "close other GPU apps")
        return assemble(Fit, verdict="tight", headroom_bytes=head, margin_bytes=margin, reason=why)
    if total + margin <= wired.max_raise_bytes:
        return assemble(Fit, verdict="raise-limit", headroom_bytes=head, margin_bytes=margin,
                        sysctl=sysctl_for(total, runtime),
                        reason=f"needs {total / GiB:.1f} GiB, {-head / GiB:.1f} GiB over the default GPU limit; "
                               f"raising it leaves {(wired.ram_bytes - total - runtime.headroom_mib * MiB) / GiB:.1f} "
                               "GiB to macOS")
    return assemble(Fit, verdict="no-fit", headroom_bytes=head, margin_bytes=margin,
                    reason=f"needs {total / GiB:.1f} GiB and its runtime's {margin / GiB:.1f} GiB margin: over the "
                           f"{wired.max_raise_bytes / GiB:.1f} GiB the GPU limit can be raised to (macOS keeps the "
                           "rest)")


VERDICTS = ("fits", "tight", "raise-limit", "no-fit")


def fit_codes(total: np.ndarray, weights: np.ndarray, effective: np.ndarray, max_raise: np.ndarray,
              headroom_mib: np.ndarray, warn: np.ndarray) -> np.ndarray:
    """:func:`fit`'s verdict for many configurations at once, as indices into :data:`VERDICTS`.

    Arguments are numpy arrays that broadcast together (bytes; the runtime's headroom_mib and warn_fraction, 0 for
    none). Same comparisons as :func:`fit`, in the same order, including the ``<=`` boundaries and the integer
    runtime margin of :func:`safe_budget`; tests/test_capacity.py checks they agree on every verdict."""
    import numpy as np

    head = headroom_mib * MiB
    warned = (warn > 0) & (weights > warn * effective)
    fits = (total <= effective - np.trunc(head)) & ~warned
    return np.where(fits, 0, np.where(total <= effective, 1, np.where(total + head <= max_raise, 2, 3)))


def safe_users(mm: MemoryModel, context: int, budget: int, cap: int = MAX_USERS, guess: int | None = None) -> int:
    """Most concurrent sequences of ``context`` tokens that fit in ``budget`` (0 if not even one). Memory grows
    monotonically with users, so a bracketed search (:func:`largest_fitting`), from ``guess`` when given."""
    return _largest(lambda u: mm.total(context, u), budget, cap, guess)


def max_context(mm: MemoryModel, users: int, budget: int, limit: int, step: int = 256, guess: int | None = None) -> int:
    """Longest context per sequence (a multiple of ``step``, at most ``limit``) for ``users`` sequences; ``guess``
    (tokens) only saves evaluations."""
    top = limit // step
    if top < 1:
        return 0
    return step * _largest(lambda k: mm.total(k * step, users), budget, top, None if guess is None else guess // step)


def safe_users_by_context(mm: MemoryModel, contexts: list[int], budget: int) -> dict[int, int]:
    """:func:`safe_users` at each of the ascending ``contexts``. Memory grows with the context too, so a longer
    context fits no more sequences than a shorter one: that answer caps the next search (0 stays 0), and scaled by
    the contexts' ratio it is the next search's first guess (memory is close to sequences x context)."""
    out: dict[int, int] = {}
    prev: tuple[int, int] | None = None
    for c in contexts:
        if prev is None:
            out[c] = safe_users(mm, c, budget)
        else:
            out[c] = prev[1] and safe_users(mm, c, budget, prev[1], prev[1] * prev[0] // c)
        prev = (c, out[c])
    return out


def max_context_by_users(mm: MemoryModel, user_counts: list[int], budget: int, limit: int) -> dict[int, int]:
    """:func:`max_context` for each of the ascending ``user_counts``: more sequences fit no longer a context, so
    the answer caps the next search (0 stays 0) and, scaled by the users' ratio, is its first guess."""
    out: dict[int, int] = {}
    prev: tuple[int, int] | None = None
    for u in user_counts:
        if prev is None:
            out[u] = max_context(mm, u, budget, limit)
        else:
            out[u] = prev[1] and max_context(mm, u, budget, prev[1], guess=prev[1] * prev[0] // u)
        prev = (u, out[u])
    return out


def _largest(f: Callable[[int], int], budget: int, last: int, guess: int | None) -> int:
    """Largest x in [1, last] with f(x) <= budget, 0 if none (f non-decreasing). Without a guess: the ends, then
    :func:`largest_fitting` between them. With one: f at the guess and its neighbour first (two evaluations when
    it is right), then the bracket that leaves."""
    if guess is None:
        return _between(f, budget, (1, None), (last, None))
    g = min(max(guess, 1), last)
    fg = f(g)
    if fg <= budget:
        if g == last:
            return g
        nxt = f(g + 1)
        return g if nxt > budget else _between(f, budget, (g + 1, nxt), (last, None))
    if g == 1:
        return 0
    prv = f(g - 1)
    return g - 1 if prv <= budget else _between(f, budget, (1, None), (g - 1, prv))


def _between(f: Callable[[int], int], budget: int, lo: tuple[int, int | None], hi: tuple[int, int | None]) -> int:
    """Largest x in [lo, hi] with f(x) <= budget, lo[0] - 1 if none; an end's f(x) is given or evaluated here."""
    a, fa = lo[0], f(lo[0]) if lo[1] is None else lo[1]
    if fa > budget:
        return a - 1
    b, fb = hi[0], f(hi[0]) if hi[1] is None else hi[1]
    if fb <= budget:
        return b
    return largest_fitting(f, budget, (a, fa), (b, fb))


SLACK = 2  # evaluations the search may spend beyond bisection's worst case, ceil(log2(hi - lo))


def largest_fitting(f: Callable[[int], int], budget: int, lo: tuple[int, int], hi: tuple[int, int]) -> int:
    """Largest integer x in [lo, hi) with f(x) <= budget, for f non-decreasing with f(lo) <= budget < f(hi)
    (``lo`` and ``hi`` are (x, f(x)) pairs): the answer bisection gives, in fewer evaluations of f.

    Interpolation search with a bisection safeguard, on the integer grid: the guess is where the chord between
    the bracket's ends crosses the budget (regula falsi), projected into the interval that keeps the bracket
    halvable within the remaining allowance of ceil(log2(hi - lo)) + SLACK evaluations (the ITP method's
    projection: I. F. D. Oliveira, R. H. C. Takahashi, "An Enhancement of the Bisection Method Average
    Performance Preserving Minmax Optimality", ACM TOMS 47(1), 2020). Memory is close to affine in context and
    users, where the chord lands on the answer: two evaluations instead of ~9-12."""
    (a, fa), (b, fb) = lo, hi
    allowance = (b - a - 1).bit_length() + SLACK
    while b - a > 1:
        allowance -= 1
        reach = 1 << allowance  # either side of the guess may keep at most this many points
        chord = a + (budget - fa) * (b - a) // (fb - fa)
        x = min(max(chord, a + 1, b - reach), b - 1, a + reach)
        fx = f(x)
        if fx <= budget:
            a, fa = x, fx
        else:
            b, fb = x, fx
    return a
