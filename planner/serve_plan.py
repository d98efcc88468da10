"""`plan serve`: how many people can one Mac serve? Requests, memory, the simulation and the searches around it.

Lengths given as p50/p90 are drawn from a lognormal through both (μ = ln p50, σ = ln(p90/p50) / z₀.₉);
arrivals from a seeded Poisson process or a trace. The simulation is :mod:`planner.serve`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import capacity, profiles
from . import throughput as tp
from .deployment import asked_quant, default_quant, pick_quant, resolve_mac, resolve_runtime
from .engines import engines
from .errors import InputError, NoFitError, PlannerError
from .memory import MemoryModel, memory_model
from .results import WiredLimit
from .schema import QuantFormat, ResolvedFiles, Runtime
from .serve import Scheduler, StepModel, Trace, simulate
from .serve_result import CurvePoint, Percentiles, ServeResult, SlotOption
from .speed_schema import Constants
from .workload import Length

Z90 = 1.2815515655446004          # standard normal 90th percentile
Z99 = 2.3263478740408408
MAX_SIM_REQUESTS = 4_000          # requests in one simulation: a longer run is cut to its first ~4,000 arrivals
SEARCH_REQUESTS = 400             # requests per simulation inside the rate / slot searches
SWEEP_SLOTS = (1, 2, 4, 8, 16, 32)
CURVE_LOADS = (0.1, 0.25, 0.4, 0.55, 0.7, 0.8, 0.9, 1.0, 1.1)   # offered rate / saturation rate


# --------------------------------------------------------------------------- requests
def draw_lengths(length: Length, n: int, rng: np.random.Generator) -> np.ndarray:
    """Token counts: one value, a weighted distribution, or a lognormal through p50 and p90. [tokens]"""
    if length.value is not None:
        return np.full(n, length.value, dtype=np.int64)
    if length.dist is not None:
        v, w = zip(*length.dist)
        return rng.choice(np.array(v, dtype=np.int64), size=n, p=np.array(w) / sum(w))
    assert length.p50 is not None and length.p90 is not None  # the third form of a Length (workload.Length)
    mu, sigma = math.log(max(length.p50, 1)), math.log(max(length.p90, 1) / max(length.p50, 1)) / Z90
    return np.maximum(1, np.rint(rng.lognormal(mu, sigma, n))).astype(np.int64)


def length_p99(length: Length) -> int:
    if length.p50 is not None and length.p90 is not None:
        return int(math.ceil(length.p50 * (length.p90 / max(length.p50, 1)) ** (Z99 / Z90)))
    return length.max_tokens


def poisson_arrivals(rate: float, duration: float, rng: np.random.Generator) -> np.ndarray:
    """Arrival times of a Poisson process of ``rate`` [1/s] over ``duration`` [s]."""
    n = max(int(rate * duration * 1.2 + 10 * math.sqrt(rate * duration) + 10), 1)
    t = np.cumsum(rng.exponential(1.0 / rate, n))
    return t[t < duration]


@dataclass(frozen=True)
class Requests:
    arrival: np.ndarray
    prompt: np.ndarray
    gen: np.ndarray
    cached: np.ndarray

    def at_rate(self, rate: float, base_rate: float) -> Requests:
        """The same requests with their arrival gaps scaled to ``rate`` (common random numbers)."""
        return Requests(self.arrival * (base_rate / rate), self.prompt, self.gen, self.cached)


def make_requests(arrival: np.ndarray, prompt: np.ndarray, gen: np.ndarray, share: float,
                  slot_context: int) -> tuple[Requests, int]:
    """Clip each request to the slot (llama-server refuses longer ones) -> (requests, how many were clipped)."""
    gen = np.minimum(np.asarray(gen, np.int64), slot_context // 2)
    room = slot_context - gen
    prompt = np.asarray(prompt, np.int64)
    clipped = int(np.count_nonzero(prompt > room))
    prompt = np.maximum(np.minimum(prompt, room), 1)
    cached = np.floor(prompt * share).astype(np.int64)
    return Requests(np.asarray(arrival, float), prompt, gen, cached), clipped


# --------------------------------------------------------------------------- statistics
def _ttft(rq: Requests, tr: Trace) -> np.ndarray:
    """Arrival to first token of the requests that finished [s]."""
    out: np.ndarray = (tr.first - rq.arrival)[~np.isnan(tr.end)]
    return out


def summarise(rq: Requests, tr: Trace, slots: int, duration: float, points: int = 12) -> dict[str, Any]:
    ok = ~np.isnan(tr.end)
    ttft = _ttft(rq, tr)
    e2e = (tr.end - rq.arrival)[ok]
    wait = (tr.admit - rq.arrival)[ok]
    multi = ok & (rq.gen > 1)
    rate = (rq.gen[multi] - 1) / np.maximum(tr.end[multi] - tr.first[multi], 1e-9)
    grid = np.linspace(0, max(duration, 1e-9), points + 1)[1:]
    admit = np.sort(np.where(np.isnan(tr.admit), np.inf, tr.admit))
    queue = np.searchsorted(rq.arrival, grid, side="right") - np.searchsorted(admit, grid, side="right")
    return dict(
        ttft_s=_pct(ttft), e2e_s=_pct(e2e), queue_wait_s=_pct(wait),
        decode_tok_s_p50=float(np.percentile(rate, 50)) if rate.size else 0.0,
        decode_tok_s_p5=float(np.percentile(rate, 5)) if rate.size else 0.0,
        throughput_tok_s=float(rq.gen[ok].sum() / max(tr.makespan, 1e-9)),
        slot_occupancy=float(tr.busy_integral / max(tr.makespan, 1e-9) / (tr.capacity or slots)),
        queue_timeline=[(float(a), int(b)) for a, b in zip(grid, queue)], queue_max=int(queue.max(initial=0)))


def _pct(x: np.ndarray) -> Percentiles:
    if not x.size:
        return Percentiles(p50=0.0, p95=0.0, p99=0.0)
    p = np.percentile(x, [50, 95, 99])
    return Percentiles(p50=float(p[0]), p95=float(p[1]), p99=float(p[2]))


def saturation_rate(rq: Requests, sched: Scheduler, steps: StepModel) -> float:
    """Completed requests per second with a queue that never empties (all requests waiting at t = 0), measured
    between the 25th and 75th completion percentiles (no start-up or drain). [1/s]"""
    burst = Requests(np.zeros(len(rq.arrival)), rq.prompt, rq.gen, rq.cached)
    tr = simulate(burst.arrival, burst.prompt, burst.gen, burst.cached, sched, steps)
    a, b = np.percentile(tr.end, [25, 75])
    n = len(tr.end)
    return float((np.searchsorted(np.sort(tr.end), b) - np.searchsorted(np.sort(tr.end), a)) / max(b - a, 1e-9)) \
        if b > a else n / max(tr.makespan, 1e-9)


def ttft_p95(rq: Requests, sched: Scheduler, steps: StepModel) -> float:
    tr = simulate(rq.arrival, rq.prompt, rq.gen, rq.cached, sched, steps)
    return float(np.percentile(tr.first - rq.arrival, 95))


def latency_curve(rq: Requests, sched: Scheduler, steps: StepModel, mu: float) -> list[CurvePoint]:
    """TTFT p50/p95 and throughput at CURVE_LOADS × the saturation rate, on the same requests."""
    out = []
    for load in CURVE_LOADS:
        r = rq.at_rate(load * mu, 1.0)
        tr = simulate(r.arrival, r.prompt, r.gen, r.cached, sched, steps)
        p50, p95 = np.percentile(tr.first - r.arrival, [50, 95])
        out.append(CurvePoint(rate_per_s=load * mu, ttft_p50_s=float(p50), ttft_p95_s=float(p95),
                              throughput_tok_s=float(r.gen.sum() / max(tr.makespan, 1e-9))))
    return out


def max_rate(rq: Requests, base_rate: float, sched: Scheduler, steps: StepModel, target: float,
             mu: float) -> tuple[float | None, float]:
    """Highest rate (below saturation) whose TTFT p95 meets ``target``, by bisection on the same requests.
    -> (rate or None, TTFT p95 at a near-zero rate)."""
    floor = ttft_p95(rq.at_rate(mu * 1e-3, base_rate), sched, steps)
    if floor > target:
        return None, floor
    lo, hi = mu * 1e-3, mu
    if ttft_p95(rq.at_rate(mu / 50, base_rate), sched, steps) <= target:
        lo = mu / 50
    for _ in range(8 if lo > mu * 1e-3 else 11):   # rate to within (hi/lo)^(1/2^n): 50^(1/256) ≈ 1.5 %
        mid = math.sqrt(lo * hi)
        if ttft_p95(rq.at_rate(mid, base_rate), sched, steps) <= target:
            lo = mid
        else:
            hi = mid
    return lo, floor


def speed_range(k: Constants, prompt: int, slots: int) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The calibration's 80 % likely range as (prefill, decode) speed factors at the slow and the fast end:
    the 10th / 90th percentile of measured / predicted in each phase's regime (throughput.likely_range's table),
    for a typical ``prompt`` and ``slots`` sequences decoding. None when the calibration has no range."""
    if not k.likely_range:
        return None
    pf = tp.likely_range(k, 1.0, "prefill", prompt, 0, 1)
    dc = tp.likely_range(k, 1.0, "decode", prompt, 0, slots)
    return (pf[0], dc[0]), (pf[1], dc[1])


def at_speed(steps: StepModel, factors: tuple[float, float]) -> StepModel:
    """The same step model on a machine whose prompt and decode rows run ``factors`` × as fast. It shares the
    unscaled prefill memo; the decode tables hold scaled times and are rebuilt."""
    return StepModel(steps.rf, steps.ctx_max, prefill_scale=1 / factors[0], decode_scale=1 / factors[1],
                     _memo=steps._memo)


# --------------------------------------------------------------------------- the plan
@dataclass(frozen=True)
class Setup:
    """Everything the simulation needs about one (chip, runtime, model, quant)."""

    mm: MemoryModel
    rf: tp.Roofline
    rt: Runtime
    wired: WiredLimit
    names: dict[str, Any]  # model, quant, chip ids and labels, RAM, max context, notes: what the CLI prints

    def scheduler(self, slots: int, kv_unified: bool = False) -> Scheduler:
        """The server's batching settings (Engine.scheduler: llama-server or mlx_lm.server)."""
        return self.mm.engine.scheduler(self.mm, slots, kv_unified)

    def memory(self, slots: int, slot_context: int) -> int:
        """llama-server -c slots × slot_context split over -np slots; mlx-lm one cache per sequence. [bytes]"""
        return self.mm.total(slot_context, slots)

    def most_slots(self, slot_context: int) -> int:
        """Most slots of ``slot_context`` tokens under the GPU limit less the runtime's margin, like every other
        fit (capacity.safe_budget; the bare limit left no room for the runtime's own allocations)."""
        return capacity.safe_users(self.mm, slot_context, capacity.safe_budget(self.wired, self.rt))


def setup(chip: str, gpu_cores: int | None, ram: float | None, model: str | ResolvedFiles, quant: str | None,
          runtime: str | None, macos: str = profiles.DEFAULT_MACOS) -> Setup:
    """``model``: a catalog id, or a sources.ResolvedModel (duck-typed, as in planner.plan) read from a local GGUF
    or folder, whose exact weight bytes replace the estimate when its quant is the one served. ``runtime`` None:
    the runtime the files, the name or the quant pin (planner.deployment.resolve_runtime), as `plan predict`."""
    mac = resolve_mac(chip, gpu_cores, ram)
    c, chip_note, ram_gb = mac.chip, mac.bin_note, mac.ram_gb
    assert c is not None  # a chip name was given
    resolved = None if isinstance(model, str) else model
    files_rt = _files_runtime(resolved)
    rt, runtime_note = resolve_runtime(runtime, model if isinstance(model, str) else model.profile.name, files_rt,
                                       quant)
    if rt.family not in engines():
        raise InputError(f"[[runtime]] {rt.id}: plan serve simulates llama-server (llama.cpp) and mlx_lm.server "
                         "(mlx-lm); give one of those")
    m = profiles.load_model(model) if isinstance(model, str) else model.profile
    asked = quant or _file_quant(resolved, rt)
    # without one: the rule of `plan predict` (the checkpoint's own format, else the 4-bit download), so both
    # commands answer the same model with the same weights (gpt-oss: MXFP4_MOE, not Q4_K_M)
    q, quant_note = (asked_quant(asked, rt) if asked else pick_quant(None, model, m, rt) if isinstance(model, str)
                     else default_quant(m, rt))
    files_fmt = profiles.load_runtime(files_rt).weight_format if files_rt is not None else None
    if files_fmt is not None and files_fmt != rt.weight_format:  # best effort: a note
        quant_note = (f"[[model]] {m.name} holds {files_fmt.upper()} weights, which "
                      f"{rt.id} does not load: answered for the same model as {q.id}"
                      + (f", the class of its {asked}" if asked and not quant else "") + " (change [[runtime]] for "
                      "its own files)" + (f"; {quant_note}" if quant and quant_note else ""))
    mm = _exact_weights(memory_model(m, rt, q, profiles.ggml_types()), q, rt, resolved)
    rf = tp.roofline_for(mm, c, profiles.load_speed_constants(c, rt.id), tp.geometry(mm, q.kind, q.mode),
                         profiles.all_chips())
    wired = capacity.wired_limit(ram_gb, profiles.load_macos(macos))
    names: dict[str, Any]  # heterogeneous: ids, labels, sizes, notes
    names = dict(model=m.id, quant=q.id, chip=c.id, chip_label=c.label, ram_gb=ram_gb, runtime=rt.id,
                 max_context=m.config.max_position_embeddings, notes=[n for n in (chip_note, profiles.library_note(model) if isinstance(model, str) else None,
                                       runtime_note, quant_note) if n])
    if rt.id != mm.engine.name:  # a product on an engine (Ollama, LM Studio, mlx-vlm)
        names["notes"].append(f"{rt.id} is simulated with the scheduler of the server it wraps "
                              f"({mm.engine.server})")
    return Setup(mm, rf, rt, wired, names)


def _files_runtime(resolved: ResolvedFiles | None) -> str | None:
    """The runtime whose weight format the model files are in (a GGUF: llama.cpp, an MLX folder: mlx-lm), if any."""
    return getattr(resolved, "runtime_hint", None)


def _file_quant(resolved: ResolvedFiles | None, rt: Runtime) -> str | None:
    """The quant of the model files, in their own format (one the runtime does not load is converted by the quant
    rule, planner.deployment.resolve_quant)."""
    hint = _files_runtime(resolved)
    if resolved is None or hint is None:
        return None
    fmt = "gguf" if hint == "llama.cpp" else "mlx"
    qid = resolved.quant_id
    try:
        return profiles.load_quant(qid, fmt).id if qid else None
    except PlannerError:
        return None


def _exact_weights(mm: MemoryModel, q: QuantFormat, rt: Runtime, resolved: ResolvedFiles | None) -> MemoryModel:
    """Exact weight bytes read from the files, when the simulated quant is the files' own."""
    w = getattr(resolved, "exact_weights", None)
    if w is None or _file_quant(resolved, rt) != q.id:
        return mm
    return dataclasses.replace(mm, weights=w)


def default_slot_context(prompt: Length, gen: Length, limit: int) -> int:
    """p99 prompt + p99 answer, rounded up to 1024 tokens, at most the model's context. [tokens]"""
    need = length_p99(prompt) + length_p99(gen)
    return int(min(limit, math.ceil(need / 1024) * 1024))


@dataclass(frozen=True)
class ServeRequest:
    slots: int
    rate: float                 # [1/s]
    prompt: Length
    gen: Length
    # no default: the share belongs to the workload, as prompt and gen do; every caller passes its workload's
    # (the CLI's, the app's and the questions' default is planner/points.py DEFAULT_CACHED_PREFIX), one rule
    cached_prefix_share: float
    duration: float = 3600.0    # [s]
    seed: int = 0
    slot_context: int | None = None
    max_ttft_p95: float | None = None
    sweep: bool = True
    trace: tuple[list[float], list[int], list[int]] | None = None  # (arrival [s], prompt, gen) from a trace file
    kv_unified: bool = False    # llama-server --kv-unified: one KV stream for all slots (no per-slot batch split)
    users: int | None = None    # the people behind the rate (plan serve's default: the default workload's; [[users]]);
    # None: a bare rate or a trace, with no person's rate to divide the capacity by


def _usable_context(s: Setup, ctx: int, max_ctx: int, notes: list[str]) -> int:
    """The tokens a request may use in a ``ctx``-token slot, with a note when the slot is over the model's context:
    llama-server allocates the KV cache for the whole slot but caps what a request may use at the model's training
    context (tools/server/server-context.cpp n_ctx_slot(): min(n_ctx_seq, n_ctx_train)); mlx-lm does not cap."""
    if ctx <= max_ctx:
        return ctx
    caps = s.mm.engine.refuses_long_prompts
    notes.append(f"[[slot_context]] {ctx:,} is over {s.names['model']}'s {max_ctx:,}-token context: "
                 + (f"{s.mm.engine.server} still allocates the whole slot but caps each request at {max_ctx:,} "
                    f"tokens; a [[slot_context]] of {max_ctx:,} holds the same requests in less memory" if caps
                    else "past it the model runs beyond its training"))
    return max_ctx if caps else ctx


def serve(s: Setup, r: ServeRequest) -> ServeResult:
    """Simulate the requested configuration, then the saturation rate, the target search and the slot sweep."""
    if r.slots < 1 or not (0 < r.rate < math.inf) or not (0 < r.duration < math.inf):
        raise InputError("[[slots]], [[rate]] and [[duration]] must be positive and finite")
    if r.kv_unified and not s.mm.engine.kv_unified_option:  # was ignored
        raise InputError(f"[[kv_unified]] is llama-server's (llama.cpp); {s.mm.engine.server} keeps a KV cache per "
                         "sequence: drop it or choose [[runtime]] llama.cpp")
    notes = list(s.names["notes"])
    ctx = r.slot_context or default_slot_context(r.prompt, r.gen, s.names["max_context"])
    slots = r.slots
    most = s.most_slots(ctx)
    max_ctx = s.names["max_context"]
    if most < 1:
        longest = _longest_slot(s, ctx)
        longest = None if longest is None else min(longest, max_ctx)  # a longer slot is capped at the model's
        shorter = f"a [[slot_context]] of at most {longest}" if longest else "a shorter [[slot_context]]"
        raise NoFitError(f"[[ram]] {s.names['ram_gb']:g}: {s.names['model']} with one {ctx}-token slot does not fit "
                         f"under the GPU limit; pick more RAM, a smaller [[quant]] or {shorter}",
                         fields={"model": s.names["model"], "quant": s.names["quant"], "ram_gb": s.names["ram_gb"],
                                 "slot_context": ctx, "wired_limit_bytes": s.wired.effective_bytes,
                                 "longest_slot_context": longest})
    if most < slots:
        notes.append(f"{slots} slots of {ctx} tokens do not fit under the {s.wired.effective_bytes / 2**30:.1f} GiB "
                     f"GPU limit: simulated with {most}, the most that fit")
        slots = most
    usable = _usable_context(s, ctx, max_ctx, notes)
    arrival, prompt, gen, duration = _arrivals(r, np.random.default_rng(r.seed), notes)
    rq, clipped = make_requests(arrival, prompt, gen, r.cached_prefix_share, usable)
    if clipped:
        refuse = "llama-server refuses them" if s.mm.engine.refuses_long_prompts else "they would not fit the slot's memory"
        fix = ("raise [[slot_context]]" if usable < max_ctx else  # a slot at the model's context holds no more
               f"they are over {s.names['model']}'s {max_ctx:,}-token context: shorter prompts, or another model")
        notes.append(f"{clipped} of {len(arrival)} prompts exceed the {usable:,}-token slot and were cut to fit "
                     f"({refuse}; {fix})")
    steps = StepModel(s.rf, ctx)
    if not steps.host and s.mm.engine.host_step:
        notes.append("llama-server's host work per token (sampling, streaming) is not in these steps: "
                     "`[[calibrate_server]]` times it on this machine")
    sched = s.scheduler(slots, r.kv_unified)
    tr = simulate(rq.arrival, rq.prompt, rq.gen, rq.cached, sched, steps)
    stats = summarise(rq, tr, slots, duration)
    search = _search_requests(r, ctx, np.random.default_rng(r.seed + 1))
    mu = saturation_rate(search, sched, steps)
    likely = _likely(rq, search, sched, steps, speed_range(s.rf.k, int(np.median(rq.prompt)), slots))
    sweep, best, binding, top = _sweep(s, r, ctx, search, steps, slots, most)
    rate = len(rq.arrival) / duration if r.trace is not None else r.rate
    mem = s.memory(slots, ctx)
    fit = capacity.fit(mem, s.mm.weights.total_bytes, s.wired, s.rt)
    return ServeResult(
        **{k: s.names[k] for k in ("model", "quant", "chip", "chip_label", "ram_gb", "runtime")}, slots=slots, slot_context=ctx,
        rate_per_s=rate, duration_s=duration,
        seed=r.seed, n_requests=len(rq.arrival), prompt=r.prompt.label(), gen=r.gen.label(),
        cached_prefix_share=r.cached_prefix_share, kv_unified=r.kv_unified if s.mm.engine.kv_unified_option else None,
        **stats, saturation_rate_per_s=mu,
        utilisation=rate / mu, stable=rate < mu, memory_bytes=mem,
        wired_limit_bytes=s.wired.effective_bytes, verdict=fit.verdict, target_ttft_p95_s=r.max_ttft_p95,
        max_rate_per_s=top, sweep=sweep, curve=latency_curve(search, sched, steps, mu), best_slots=best, binding=binding, calibration=s.rf.calibration,
        host_s_per_token=steps.host, server_scales=steps.server_scales, **likely,
        users=r.users if r.trace is None else None, users_sustained=users_sustained(r, rate, mu, top), notes=notes)


def users_sustained(r: ServeRequest, rate: float, mu: float, top: float | None) -> int | None:
    """People asking as the offered ones do that the server sustains: the highest rate under the TTFT p95 target
    (else the saturation rate, above which the queue grows without bound) ÷ one person's rate (the offered rate over
    its people), rounded down: one person more would pass it. Poisson arrivals add up, so N people at λ each are one
    stream at N λ. None when the rate has no people behind it (a bare rate, a trace)."""
    if r.users is None or r.trace is not None:
        return None
    limit = (top or 0.0) if r.max_ttft_p95 else mu
    return math.floor(limit / (rate / r.users))


def _arrivals(r: ServeRequest, rng: np.random.Generator,
              notes: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """-> (arrival [s], prompt, gen [tokens], duration [s]): the request trace sorted by arrival, or seeded Poisson
    arrivals (at most ~MAX_SIM_REQUESTS) with lengths drawn from the request's distributions."""
    if r.trace is not None:
        if len(r.trace[0]) > MAX_SIM_REQUESTS:
            raise InputError(f"[[trace]]: {len(r.trace[0]):,} requests, over the {MAX_SIM_REQUESTS:,} one simulation "
                             "runs; give a shorter trace")
        order = np.argsort(np.asarray(r.trace[0], float), kind="stable")
        arrival, prompt, gen = (np.asarray(x)[order] for x in r.trace)
        return arrival, prompt, gen, float(arrival.max(initial=0.0)) or r.duration
    arrival, duration = _bounded_arrivals(r, rng, notes)
    return arrival, draw_lengths(r.prompt, len(arrival), rng), draw_lengths(r.gen, len(arrival), rng), duration


def _longest_slot(s: Setup, ctx: int) -> int | None:
    """The longest slot context (>= 64 tokens, < ``ctx``) with which one slot fits; None when not even 64 does.
    Bisection: memory grows with the slot context (capacity.safe_users is monotone in it)."""
    lo, hi = 64, ctx
    if s.most_slots(lo) < 1:
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if s.most_slots(mid) >= 1 else (lo, mid)
    return lo


def _bounded_arrivals(r: ServeRequest, rng: np.random.Generator, notes: list[str]) -> tuple[np.ndarray, float]:
    """Poisson arrivals of at most ~MAX_SIM_REQUESTS: the work is bounded by the requests simulated, not by the
    time asked for (a steady state is reached long before 4,000 requests; an overloaded queue keeps growing past
    the cut, which the capacity line says). -> (arrival times [s], simulated duration [s])."""
    duration = r.duration
    if r.rate * r.duration > MAX_SIM_REQUESTS:
        duration = MAX_SIM_REQUESTS / r.rate
        notes.append(f"simulated the first {duration:,.4g} s of the {r.duration:,.0f} s asked for "
                     f"(~{MAX_SIM_REQUESTS:,} requests at {r.rate * 60:,.4g}/min, the most one run simulates)")
    arrival = poisson_arrivals(r.rate, duration, rng)
    if not len(arrival):
        raise InputError(f"[[rate]] {r.rate * 60:.3g}/min for [[duration]] {r.duration:g} s: no request arrives "
                         f"(expected {r.rate * r.duration:.2g}); give a higher [[rate]] or a longer [[duration]]")
    return arrival, duration


def _likely(rq: Requests, search: Requests, sched: Scheduler, steps: StepModel,
            ends: tuple[tuple[float, float], tuple[float, float]] | None) -> dict[str, Any]:
    """TTFT percentiles and the saturation rate at the slow and the fast end of the speed range (the same
    requests, so only the speed differs). Near saturation the queue amplifies a speed error: this is how much."""
    if ends is None:
        return {}
    out: dict[str, Any] = {}
    for name, f in zip(("slow", "fast"), ends):
        st = at_speed(steps, f)
        out[f"ttft_s_{name}"] = _pct(_ttft(rq, simulate(rq.arrival, rq.prompt, rq.gen, rq.cached, sched, st)))
        out[f"saturation_{name}_per_s"] = saturation_rate(search, sched, st)
    out["speed_range"] = ends
    return out


def _search_requests(r: ServeRequest, ctx: int, rng: np.random.Generator) -> Requests:
    """SEARCH_REQUESTS requests at unit rate; searches rescale their arrivals (common random numbers)."""
    n = SEARCH_REQUESTS
    arrival = np.cumsum(rng.exponential(1.0, n))
    rq, _ = make_requests(arrival, draw_lengths(r.prompt, n, rng), draw_lengths(r.gen, n, rng),
                          r.cached_prefix_share, ctx)
    return rq


def _sweep(s: Setup, r: ServeRequest, ctx: int, search: Requests, steps: StepModel, slots: int,
           most: int) -> tuple[list[SlotOption], int, str | None, float | None]:
    """Saturation rate and the highest rate under the TTFT target for each slot count that fits.
    -> (options, best slot count, what binds when no rate meets the target, best rate at the chosen slots)"""
    counts = sorted({slots, *(c for c in SWEEP_SLOTS if c <= most)}) if r.sweep else [slots]
    opts = []
    for c in counts:
        sched = s.scheduler(c, r.kv_unified)
        mu = saturation_rate(search, sched, steps)
        top, floor = (max_rate(search, 1.0, sched, steps, r.max_ttft_p95, mu) if r.max_ttft_p95
                      else (None, ttft_p95(search.at_rate(mu * 1e-3, 1.0), sched, steps)))
        opts.append(SlotOption(slots=c, saturation_rate_per_s=mu, max_rate_per_s=top, ttft_p95_floor_s=floor))
    key = (lambda o: o.max_rate_per_s or 0.0) if r.max_ttft_p95 else (lambda o: o.saturation_rate_per_s)
    best = max(opts, key=key)
    binding = None
    if r.max_ttft_p95 and best.max_rate_per_s is None:
        low = min(opts, key=lambda o: o.ttft_p95_floor_s)
        binding = (f"TTFT p95 ≤ {r.max_ttft_p95:g} s binds: even at a near-zero rate the p95 prompt takes "
                   f"{low.ttft_p95_floor_s:.1f} s to prefill ({low.ttft_p95_floor_s - r.max_ttft_p95:.1f} s over, "
                   f"best with {low.slots} slots); shorter prompts, a cached prefix or a faster chip would change it")
        best = low
    mine = next(o for o in opts if o.slots == slots)
    return opts, best.slots, binding, mine.max_rate_per_s
