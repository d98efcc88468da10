"""Serving under load: a seeded discrete-event simulation of the servers' own schedulers. [s, tokens]

Two schedulers, each followed from its code:

* **llama-server** (llama.cpp tools/server/server-context.cpp ``update_slots``). ``-np`` slots; a request waits in
  the task queue (FIFO) until a slot is free. Every server iteration builds ONE batch: first one token for every
  slot in ``SLOT_STATE_GENERATING``, then prompt tokens of the slots still processing their prompt, in slot
  order, ``while (batch.size() < n_batch)``; ``llama_decode`` splits it into ``n_ubatch`` physical batches. The
  first token is sampled from the logits of the step that consumes the prompt's last token (``post_decode`` ->
  ``SLOT_STATE_GENERATING``). ``cache_prompt`` (default on, ``get_common_prefix``) skips the cached prefix.
* **mlx_lm.server** (mlx_lm/generate.py ``BatchGenerator._next``). Every step first decodes one token for the
  generation batch; if that batch is below ``completion_batch_size`` (= max(--decode-concurrency,
  --prompt-concurrency)) waiting prompts join the prompt batch (at most ``--prompt-concurrency``), prompts with
  one token left move to the generation batch (their first token comes from the next decode), and every prompt
  in the prompt batch advances by up to ``--prefill-step-size`` tokens, right-padded to the longest
  (``PromptProcessingBatch.prompt``). The last prompt token is the first decode input (``generate``).

Each step's duration comes from the planner's step model (:class:`planner.throughput.Roofline`), so calibration
carries over. Between events the batch does not change: decode-only stretches are jumped in one go (a
cumulative table of the decode step time over depth), so an hour at 1 request/s takes well under a second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .throughput import Roofline

GRID = 256  # tokens between decode-table points (the step time is piecewise linear in depth)


@dataclass(frozen=True)
class Scheduler:
    """A server's batching settings."""

    kind: str                 # "llama.cpp" | "mlx-lm"
    slots: int                # llama-server -np | mlx_lm.server --decode-concurrency
    n_batch: int = 2048       # llama.cpp -b | mlx --prefill-step-size (per sequence)
    prompt_concurrency: int = 8   # mlx --prompt-concurrency (llama.cpp: every slot may prefill)


@dataclass
class StepModel:
    """Step times from a Roofline, tabulated for speed. [s]"""

    rf: Roofline
    ctx_max: int
    _dec: dict = field(default_factory=dict)
    _memo: dict = field(default_factory=dict)

    def _table(self, batch: int):
        t = self._dec.get(batch)
        if t is None:
            xs = np.arange(0, self.ctx_max + 3 * GRID, GRID, dtype=float)
            ys = np.array([self.rf.step_time(batch, x) for x in xs])
            cum = np.concatenate([[0.0], np.cumsum((ys[1:] + ys[:-1]) / 2 * GRID)])
            t = self._dec[batch] = (ys.tolist(), cum.tolist(), cum)
        return t

    def decode(self, batch: int, ctx: float) -> float:
        """One decode step of ``batch`` sequences at mean depth ``ctx``."""
        ys, _, _ = self._table(batch)
        i = min(int(ctx // GRID), len(ys) - 2)
        f = ctx / GRID - i
        return ys[i] + (ys[i + 1] - ys[i]) * f

    def _integral(self, batch: int, x: float) -> float:
        ys, cum, _ = self._table(batch)
        x = max(x, 0.0)
        i = min(int(x // GRID), len(ys) - 2)
        u = x - i * GRID
        return cum[i] + u * (ys[i] + (ys[i + 1] - ys[i]) * u / (2 * GRID))

    def span(self, batch: int, ctx: float, k: int) -> float:
        """k consecutive decode steps from mean depth ``ctx`` (midpoint rule: exact for a linear step time)."""
        return self._integral(batch, ctx + k - 0.5) - self._integral(batch, ctx - 0.5)

    def steps_within(self, batch: int, ctx: float, dt: float) -> int:
        """Fewest decode steps from depth ``ctx`` that take at least ``dt`` (≥ 1): invert the piecewise-quadratic
        integral in its segment, then settle the rounding."""
        ys, cum, arr = self._table(batch)
        target = self._integral(batch, ctx - 0.5) + dt
        i = min(max(int(np.searchsorted(arr, target)) - 1, 0), len(ys) - 2)
        a, slope, rest = ys[i], (ys[i + 1] - ys[i]) / GRID, target - cum[i]
        u = (2 * rest / (a + math.sqrt(a * a + 2 * slope * rest))) if a > 0 else rest   # a·u + slope·u²/2 = rest
        k = max(1, math.ceil(i * GRID + u - (ctx - 0.5) - 1e-9))
        while k > 1 and self.span(batch, ctx, k - 1) >= dt:
            k -= 1
        while self.span(batch, ctx, k) < dt:
            k += 1
        return k

    def _pf(self, tokens: int, depth: int, batch: int = 1) -> float:
        key = (-(-tokens // 16) * 16, depth // GRID * GRID, batch)
        v = self._memo.get(key)
        if v is None:
            v = self._memo[key] = self.rf.prefill_time(key[0], key[1], batch)[0]
        return v

    def mixed(self, batch: int, ctx: float, pieces: list[tuple[int, int]]) -> float:
        """llama.cpp: one batch of ``batch`` decode tokens + prompt pieces (tokens, cached depth), split into
        n_ubatch graphs (Roofline.chunk). The weight matmuls run over all the batch's rows at once; each piece's
        queries attend only to its own sequence (its cached depth and its own earlier tokens: the KQ mask of
        llama-graph.cpp blocks other sequences' cells, and the flash-attention kernels skip masked keys), and the
        decode tokens to their own caches (kv_time)."""
        total = batch + sum(p for p, _ in pieces)
        t = self._pf(total, 0) - self._attn(total, 0)
        for p, d in pieces:
            t += self._attn(p, d)
        if batch:
            t += self.rf.kv_time(batch, ctx)
        return t

    def _attn(self, tokens: int, depth: int) -> float:
        key = (-(-tokens // 16) * 16, depth // GRID * GRID)
        v = self._memo.get(("attn", *key))
        if v is None:
            v = self._memo[("attn", *key)] = self.rf.prefill_attn_time(key[0], key[1])
        return v

    def prompt_batch(self, chunk: int, depth: float, n: int) -> float:
        """mlx-lm: ``n`` prompts advanced by ``chunk`` tokens each (right-padded) at mean depth ``depth``."""
        return self._pf(chunk, int(depth), n)


@dataclass
class Trace:
    """Per-request times [s] (NaN: not reached) and the time-integral of busy slots [slot·s]."""

    admit: np.ndarray
    first: np.ndarray
    end: np.ndarray
    busy_integral: float = 0.0
    makespan: float = 0.0


def simulate(arrival, prompt, gen, cached, sched: Scheduler, steps: StepModel) -> Trace:
    """Run the scheduler over requests sorted by ``arrival`` [s] with ``prompt``/``gen``/``cached`` tokens."""
    n = len(arrival)
    tr = Trace(np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan))
    if n == 0:
        return tr
    req = (np.asarray(arrival, float).tolist(), np.asarray(prompt, int).tolist(), np.asarray(gen, int).tolist(),
           np.asarray(cached, int).tolist())
    run = _run_llama if sched.kind != "mlx-lm" else _run_mlx
    run(req, sched, steps, tr)
    return tr


def _jump(act, nfree_ok: bool, nxt_arrival: float | None, t: float, steps: StepModel):
    """Decode-only stretch: k steps until the first sequence finishes or (when it could be admitted) the next
    request arrives. Slot rows are [rid, left_prompt, ctx, left_gen]. -> (k, dt)"""
    b = len(act)
    ctx = sum(s[2] for s in act) / b
    k = min(s[3] for s in act)
    if nfree_ok and nxt_arrival is not None:
        k = min(k, steps.steps_within(b, ctx, nxt_arrival - t))
    return k, steps.span(b, ctx, k)


def _finish(act, t: float, tr: Trace) -> tuple[list, int]:
    keep = [s for s in act if s[1] > 0 or s[3] > 0]
    for s in act:
        if s[1] <= 0 and s[3] <= 0:
            tr.end[s[0]] = t
    return keep, len(act) - len(keep)


def _run_llama(req, sched: Scheduler, steps: StepModel, tr: Trace) -> None:
    arr, pr, gn, ca = req
    n, nslot, nb = len(arr), sched.slots, sched.n_batch
    act: list[list] = []
    t, nxt, done, busy = 0.0, 0, 0, 0.0
    while done < n:
        while len(act) < nslot and nxt < n and arr[nxt] <= t:
            tr.admit[nxt] = t
            act.append([nxt, max(pr[nxt] - ca[nxt], 1), ca[nxt], max(gn[nxt], 1)])
            nxt += 1
        if not act:
            t = arr[nxt]
            continue
        gens = [s for s in act if s[1] == 0]
        if len(gens) == len(act):   # decode only
            k, dt = _jump(act, len(act) < nslot, arr[nxt] if nxt < n else None, t, steps)
            for s in act:
                s[2] += k
                s[3] -= k
        else:
            budget, pieces = nb - len(gens), []
            for s in act:
                if s[1] > 0 and budget > 0:
                    p = min(s[1], budget)
                    pieces.append((s, p))
                    budget -= p
            ctx = sum(s[2] for s in gens) / len(gens) if gens else 0.0
            dt = steps.mixed(len(gens), ctx, [(p, s[2]) for s, p in pieces])
            for s in gens:
                s[2] += 1
                s[3] -= 1
            for s, p in pieces:
                s[1] -= p
                s[2] += p
                if s[1] == 0:   # prompt done: the first token is sampled from this batch's logits
                    tr.first[s[0]] = t + dt
                    s[3] -= 1
        t += dt
        busy += len(act) * dt
        act, d = _finish(act, t, tr)
        done += d
    tr.busy_integral, tr.makespan = busy, t


def _run_mlx(req, sched: Scheduler, steps: StepModel, tr: Trace) -> None:
    arr, pr, gn, ca = req
    n, step = len(arr), sched.n_batch
    cap = max(sched.slots, sched.prompt_concurrency)   # BatchGenerator.completion_batch_size
    gens: list[list] = []
    pb: list[list] = []        # prompt batch rows: [rid, left_prompt, ctx, left_gen]
    t, nxt, done, busy = 0.0, 0, 0, 0.0
    while done < n:
        waiting = nxt < n and arr[nxt] <= t
        if not gens and not pb and not waiting:
            t = arr[nxt]
            continue
        if gens and (len(gens) >= cap or (not pb and not waiting)):   # decode only until the next event
            k, dt = _jump(gens, len(gens) < cap, arr[nxt] if nxt < n else None, t, steps)
            _advance(gens, k, t, t + dt, tr)
            t += dt
            busy += len(gens) * dt
            gens, d = _finish(gens, t, tr)
            done += d
            continue
        dt = 0.0
        if gens:
            dt = steps.decode(len(gens), sum(s[2] for s in gens) / len(gens))
            _advance(gens, 1, t, t + dt, tr)
        if len(gens) < cap:
            room = min(sched.prompt_concurrency - len(pb), cap - len(gens))
            while room > 0 and nxt < n and arr[nxt] <= t:
                tr.admit[nxt] = t
                pb.append([nxt, max(pr[nxt] - ca[nxt] - 1, 0), ca[nxt], max(gn[nxt], 1)])
                nxt += 1
                room -= 1
            gens += [s for s in pb if s[1] == 0]
            pb = [s for s in pb if s[1] > 0]
            if pb:
                chunk = min(step, max(s[1] for s in pb))
                dt += steps.prompt_batch(chunk, sum(s[2] for s in pb) / len(pb), len(pb))
                for s in pb:
                    p = min(step, s[1])
                    s[1] -= p
                    s[2] += p
        t += dt
        busy += (len(gens) + len(pb)) * dt
        gens, d = _finish(gens, t, tr)
        done += d
    tr.busy_integral, tr.makespan = busy, t


def _advance(gens, k: int, t0: float, t1: float, tr: Trace) -> None:
    """k decode steps of the generation batch between t0 and t1; a sequence's first decode is its first token."""
    for s in gens:
        if math.isnan(tr.first[s[0]]):
            tr.first[s[0]] = t0 + (t1 - t0) / k
        s[2] += k
        s[3] -= k
