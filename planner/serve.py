"""Serving under load: a seeded discrete-event simulation of the servers' own schedulers. [s, tokens]

Two schedulers, each followed from its code:

* **llama-server** (llama.cpp tools/server/server-context.cpp ``update_slots``). ``-np`` slots; a request waits in
  the task queue (FIFO) until a slot is free. Every server iteration builds ONE batch: first one token for every
  slot in ``SLOT_STATE_GENERATING``, then prompt tokens of the slots still processing their prompt, in slot
  order, ``while (batch.size() < n_batch)``; ``llama_decode`` splits it into ``n_ubatch`` physical batches. The
  first token is sampled from the logits of the step that consumes the prompt's last token (``post_decode`` ->
  ``SLOT_STATE_GENERATING``). ``cache_prompt`` (default on, ``get_common_prefix``) skips the cached prefix.
  A new request takes the least recently released idle slot (``get_available_slot``: ``t_last_used <= t_last``,
  so ties go to the higher slot). With one KV stream per slot (``-np N``, not ``llama-server --kv-unified``),
  llama.cpp splits the batch with ``split_equal(n_ubatch, sequential = true)`` (src/llama-kv-cache.cpp ``init_batch``,
  src/llama-batch.cpp): a physical batch takes only sequences with consecutive ids, in batch order, the same
  number of tokens from each. So decoding slots 0 and 2 are two graphs, each reading all the weights, and a
  prompt whose slot does not follow the decoding ones runs in a graph of its own (:func:`split_equal`).
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
from typing import TYPE_CHECKING

import numpy as np

from .throughput import Roofline

if TYPE_CHECKING:
    import numpy.typing as npt

# a request in a server's batch: [rid, left_prompt, ctx, left_gen] (+ slot on llama.cpp), updated in place
Row = list[int]
# the requests by arrival: (arrival [s], prompt, gen, cached tokens)
RequestLists = tuple[list[float], list[int], list[int], list[int]]

GRID = 256  # tokens between decode-table points (the step time is piecewise linear in depth)


@dataclass(frozen=True)
class Scheduler:
    """A server's batching settings."""

    kind: str                 # "llama.cpp" | "mlx-lm"
    slots: int                # llama-server -np | mlx_lm.server --decode-concurrency
    n_batch: int = 2048       # llama.cpp -b | mlx --prefill-step-size (per sequence)
    prompt_concurrency: int = 8   # mlx --prompt-concurrency (llama.cpp: every slot may prefill)
    kv_unified: bool = False  # llama-server --kv-unified (default with -np auto): one KV stream, no per-slot split


@dataclass
class StepModel:
    """Step times from a Roofline, tabulated for speed. [s]"""

    rf: Roofline
    ctx_max: int
    prefill_scale: float = 1.0   # step-time multipliers of prompt and decode rows: 1 / a speed factor (the likely
    decode_scale: float = 1.0    # range's ends, serve_plan.speed_range), on top of server_scales; the host work
    #                              is not scaled
    _dec: dict[int, tuple[list[float], list[float], npt.NDArray[np.float64]]] = field(default_factory=dict)
    _memo: dict[tuple[str | int, ...], float] = field(default_factory=dict)

    @property
    def host(self) -> float:
        """The server's host work per sampled token [s] (SpeedConstants.t_token_host_s; 0 where unmeasured):
        llama-server samples every sequence's token and streams it between llama_decode calls (update_slots,
        then send_partial_response), work that llama-bench's step does not include."""
        return self.rf.k.t_token_host_s or 0.0

    @property
    def server_scales(self) -> tuple[float, float]:
        """(prompt, decode) multipliers of the server's phases over the benchmark-fitted steps
        (SpeedConstants.server_prefill_factor / server_decode_factor, 1 where unmeasured): what the server
        calibration (`plan calibrate`) measured on a burst of real requests beyond the host work per token."""
        k = self.rf.k
        return k.server_prefill_factor or 1.0, k.server_decode_factor or 1.0

    @property
    def n_ubatch(self) -> int:
        """Tokens per physical batch (llama.cpp -ub): the roofline's prefill chunk."""
        return self.rf.chunk

    def _table(self, batch: int) -> tuple[list[float], list[float], npt.NDArray[np.float64]]:
        t = self._dec.get(batch)
        if t is None:
            xs = np.arange(0, self.ctx_max + 3 * GRID, GRID, dtype=float)
            ys = np.array([self.rf.step_time(batch, x) for x in xs]) * self.decode_scale * self.server_scales[1] \
                + batch * self.host
            cum = np.concatenate([[0.0], np.cumsum((ys[1:] + ys[:-1]) / 2 * GRID)])
            t = self._dec[batch] = (ys.tolist(), cum.tolist(), cum)
        return t

    def decode(self, batch: int, ctx: float) -> float:
        """One decode step of ``batch`` sequences at mean depth ``ctx``, each sampling its token."""
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

    def mixed(self, batch: int, ctx: float, pieces: list[tuple[int, int]], sampled: int = 0) -> float:
        """llama.cpp: one batch of ``batch`` decode tokens + prompt pieces (tokens, cached depth), split into
        n_ubatch graphs (Roofline.chunk). The weight matmuls run over all the batch's rows at once; each piece's
        queries attend only to its own sequence (its cached depth and its own earlier tokens: the KQ mask of
        llama-graph.cpp blocks other sequences' cells, and the flash-attention kernels skip masked keys), and the
        decode tokens to their own caches (kv_time). The decode tokens and the ``sampled`` pieces (those that end
        their prompt) each sample a token (:attr:`host`). With scales, each row's share of the weight matmuls takes
        its phase's scale."""
        prompt = sum(p for p, _ in pieces)
        total = batch + prompt
        sp, sd = self.server_scales
        ps, ds = self.prefill_scale * sp, self.decode_scale * sd
        t = (self._pf(total, 0) - self._attn(total, 0)) * (batch * ds + prompt * ps) / max(total, 1)
        for p, d in pieces:
            t += self._attn(p, d) * ps
        if batch:
            t += self.rf.kv_time(batch, ctx) * ds
        return t + (batch + sampled) * self.host

    def _attn(self, tokens: int, depth: int) -> float:
        key = (-(-tokens // 16) * 16, depth // GRID * GRID)
        v = self._memo.get(("attn", *key))
        if v is None:
            v = self._memo[("attn", *key)] = self.rf.prefill_attn_time(key[0], key[1])
        return v

    def prompt_batch(self, chunk: int, depth: float, n: int) -> float:
        """mlx-lm: ``n`` prompts advanced by ``chunk`` tokens each (right-padded) at mean depth ``depth``."""
        return self._pf(chunk, int(depth), n) * self.prefill_scale * self.server_scales[0]


@dataclass
class Trace:
    """Per-request times [s] (NaN: not reached), the time-integral of sequences in flight [seq·s] and the most
    sequences the scheduler can hold at once (``capacity``; slot occupancy = busy_integral / makespan / capacity)."""

    admit: np.ndarray
    first: np.ndarray
    end: np.ndarray
    busy_integral: float = 0.0
    makespan: float = 0.0
    capacity: int = 0


def simulate(arrival: np.ndarray, prompt: np.ndarray, gen: np.ndarray, cached: np.ndarray, sched: Scheduler,
             steps: StepModel) -> Trace:
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


def _jump(act: list[Row], nfree_ok: bool, nxt_arrival: float | None, t: float, steps: StepModel,
          groups: list[list[Row]] | None = None) -> tuple[int, float]:
    """Decode-only stretch: k steps until the first sequence finishes or (when it could be admitted) the next
    request arrives. Slot rows are [rid, left_prompt, ctx, left_gen, ...]; ``groups`` (lists of rows) are the
    physical batches of each step (split_equal), None = all rows in one. -> (k, dt)"""
    k = min(s[3] for s in act)
    if not groups or len(groups) == 1:
        b = len(act)
        ctx = sum(s[2] for s in act) / b
        if nfree_ok and nxt_arrival is not None:
            k = min(k, steps.steps_within(b, ctx, nxt_arrival - t))
        return k, steps.span(b, ctx, k)
    parts = [(len(g), sum(s[2] for s in g) / len(g)) for g in groups]

    def span(j: int) -> float:
        return sum(steps.span(b, c, j) for b, c in parts)
    if nfree_ok and nxt_arrival is not None and span(k) > nxt_arrival - t:
        lo, hi = 1, k            # fewest steps that reach the arrival: span(hi) ≥ dt
        while lo < hi:
            mid = (lo + hi) // 2
            if span(mid) >= nxt_arrival - t:
                hi = mid
            else:
                lo = mid + 1
        k = lo
    return k, span(k)


def split_equal(seqs: list[tuple[int, int]], n_ubatch: int) -> list[list[tuple[int, int]]]:
    """llama.cpp's split of one batch over per-sequence KV streams (src/llama-batch.cpp
    ``llama_batch_allocr::split_equal`` with ``sequential``): ``seqs`` are (sequence id, tokens) in batch order;
    each physical batch gathers, in batch order, sequences whose id is one more than the last taken, then takes
    the same number of tokens from each (the fewest any has left, at most n_ubatch / sequences). -> physical
    batches of (sequence id, tokens)."""
    left = [[sid, n] for sid, n in seqs if n > 0]
    out = []
    while left:
        chain = [left[0]]
        for x in left[1:]:
            if x[0] == chain[-1][0] + 1:
                chain.append(x)
        n = max(1, min(min(x[1] for x in chain), n_ubatch // len(chain)))
        out.append([(x[0], n) for x in chain])
        for x in chain:
            x[1] -= n
        left = [x for x in left if x[1] > 0]
    return out


def _decode_groups(rows: list[Row], n_ubatch: int) -> list[list[Row]]:
    """Decoding slots (rows[4] the slot id) as split_equal groups one decode token each: the physical batches."""
    by = {s[4]: s for s in rows}
    return [[by[sid] for sid, _ in ub] for ub in split_equal([(sid, 1) for sid in sorted(by)], n_ubatch)]


def _split_step(gens: list[Row], pieces: list[tuple[Row, int]], steps: StepModel) -> float:
    """One llama-server batch over per-slot streams: decode tokens in slot order, then prompt pieces in slot
    order (update_slots), split by split_equal; each physical batch is timed by the step model (decode tokens
    only: a decode step of that many sequences; with prompt tokens: StepModel.mixed, each piece on its depth)."""
    rows = {s[4]: s for s in gens}
    prompt = {s[4]: s for s, _ in pieces}
    left = {s[4]: s[1] for s, _ in pieces}   # prompt tokens each piece's slot has left before this batch
    done = dict.fromkeys(prompt, 0)
    order = [(s[4], 1) for s in sorted(gens, key=lambda r: r[4])] + \
            [(s[4], p) for s, p in sorted(pieces, key=lambda x: x[0][4])]
    dt = 0.0
    for ub in split_equal(order, steps.n_ubatch):
        dec = [rows[sid] for sid, _ in ub if sid in rows]
        pr, ends = [], 0
        for sid, n in ub:
            if sid in prompt:
                pr.append((n, prompt[sid][2] + done[sid]))
                done[sid] += n
                ends += done[sid] == left[sid]
        ctx = sum(s[2] for s in dec) / len(dec) if dec else 0.0
        dt += steps.mixed(len(dec), ctx, pr, ends) if pr else steps.decode(len(dec), ctx)
    return dt


def _finish(act: list[Row], t: float, tr: Trace) -> tuple[list[Row], int]:
    keep = [s for s in act if s[1] > 0 or s[3] > 0]
    for s in act:
        if s[1] <= 0 and s[3] <= 0:
            tr.end[s[0]] = t
    return keep, len(act) - len(keep)


def _run_llama(req: RequestLists, sched: Scheduler, steps: StepModel, tr: Trace) -> None:
    arr, pr, gn, ca = req
    n, nslot, nb = len(arr), sched.slots, sched.n_batch
    split = not sched.kv_unified and nslot > 1
    last_used = [-1.0] * nslot   # slot.t_last_used: -1 until released, then the release time
    tr.capacity = nslot          # a request holds a slot from admission to its last token
    act: list[Row] = []          # [rid, left_prompt, ctx, left_gen, slot]
    t, nxt, done, busy = 0.0, 0, 0, 0.0
    while done < n:
        while len(act) < nslot and nxt < n and arr[nxt] <= t:
            tr.admit[nxt] = t
            act.append([nxt, max(pr[nxt] - ca[nxt], 1), ca[nxt], max(gn[nxt], 1), _lru_slot(act, last_used)])
            nxt += 1
        if not act:
            t = arr[nxt]
            continue
        gens = [s for s in act if s[1] == 0]
        if len(gens) == len(act):   # decode only
            k, dt = _jump(act, len(act) < nslot, arr[nxt] if nxt < n else None, t, steps,
                          _decode_groups(act, steps.n_ubatch) if split else None)
            for s in act:
                s[2] += k
                s[3] -= k
        else:
            pieces, dt = _llama_batch(act, gens, nb, split, steps)
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
        for s in act:
            if s[1] <= 0 and s[3] <= 0:
                last_used[s[4]] = t   # server_slot::release
        act, d = _finish(act, t, tr)
        done += d
    tr.busy_integral, tr.makespan = busy, t


def _llama_batch(act: list[Row], gens: list[Row], n_batch: int, split: bool,
                 steps: StepModel) -> tuple[list[tuple[Row, int]], float]:
    """One update_slots batch: a token per generating slot, then prompt tokens of the slots in slot order up to
    n_batch, timed as one llama_decode call. -> (prompt pieces [(row, tokens)], duration [s])"""
    budget, pieces = n_batch - len(gens), []
    for s in sorted(act, key=lambda r: r[4]):   # update_slots walks the slots in order
        if s[1] > 0 and budget > 0:
            p = min(s[1], budget)
            pieces.append((s, p))
            budget -= p
    if split:
        return pieces, _split_step(gens, pieces, steps)
    ctx = sum(s[2] for s in gens) / len(gens) if gens else 0.0
    ends = sum(p == s[1] for s, p in pieces)
    return pieces, steps.mixed(len(gens), ctx, [(p, s[2]) for s, p in pieces], ends)


def _lru_slot(act: list[Row], last_used: list[float]) -> int:
    """server_context::get_available_slot without a prompt match: the idle slot released longest ago, the later
    slot on a tie (``slot.t_last_used <= t_last``)."""
    busy = {s[4] for s in act}
    best = None
    for i, tl in enumerate(last_used):
        if i not in busy and (best is None or tl <= last_used[best]):
            best = i
    assert best is not None
    return best


def _run_mlx(req: RequestLists, sched: Scheduler, steps: StepModel, tr: Trace) -> None:
    arr, pr, gn, ca = req
    n, step = len(arr), sched.n_batch
    cap = max(sched.slots, sched.prompt_concurrency)   # BatchGenerator.completion_batch_size
    # BatchGenerator._next admits min(prefill - len(prompt batch), completion - len(generation batch)) prompts: the
    # prompt batch is not counted against the completion size, so up to cap + prefill - 1 sequences are in flight
    tr.capacity = cap + sched.prompt_concurrency - 1
    gens: list[Row] = []
    pb: list[Row] = []         # prompt batch rows: [rid, left_prompt, ctx, left_gen]
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


def _advance(gens: list[Row], k: int, t0: float, t1: float, tr: Trace) -> None:
    """k decode steps of the generation batch between t0 and t1; a sequence's first decode is its first token."""
    for s in gens:
        if math.isnan(tr.first[s[0]]):
            tr.first[s[0]] = t0 + (t1 - t0) / k
        s[2] += k
        s[3] -= k
