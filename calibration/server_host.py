"""llama-server's host work per sampled token on this machine, for `plan serve` (`plan calibrate --server`). [s]

    h = Σ_B (server step_B − bench step_B) / Σ_B B        B = 1 and 4 sequences decoding together

After every ``llama_decode`` the server samples each generating slot's token (tools/server/server-context.cpp
``update_slots``: ``common_sampler_sample`` over the whole vocabulary with the default chain) and streams it
(``send_partial_response``): work that llama-bench and llama-batched-bench, whose steps the speed model is fitted to,
never do. The server's step is timed from the streamed tokens of B requests sent at once (prompt 48, 128 tokens
each), the benchmark's from ``llama-batched-bench -npl B`` with the same model, threads and flash attention,
alternating, the median difference of ``reps`` pairs. Measured on this 2-core VM with the 29 M-parameter serve-check
model (vocabulary 4,096, one thread): server/bench step 1.14 at B = 1 and 1.17 at B = 4, every one of 8 pairs above 1;
two calibrations of 3 pairs each then gave 0.68 and 0.04 ms per token. The difference is small against this VM's
speed swings, so it is a median of 5 pairs, and on a quiet Mac it is far steadier than here.

Beyond that per-token work, the server's phases run slower than the benchmarks' on the same core: on this VM,
with the step model fitted to llama-bench within 2-3 %, the simulated prompt and decode phases of `plan serve` came
out 0.90-0.95 × the server's own ``timings.prompt_ms`` and ``predicted_ms`` under load. :func:`measure_phases`
measures that on a short burst of real requests, queued over the slots as in serving (:data:`BURST_PROMPTS`), and returns
the factors by which the server's prompt and decode phases exceed what `plan serve` simulates for the same burst
with the fitted steps and h (``server_prefill_factor``, ``server_decode_factor``; `plan serve` multiplies its
prompt and decode steps by them).

The client runs on the cores the calibration is not pinned to, when it is pinned to some (as a chat client runs
beside the server); otherwise where the OS puts it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calibration.errors import CalibrationError
from calibration.runners.llama_cpp import batched_rows

PROMPT, GEN = 48, 128
BATCHES = (1, 4)
# the burst of measure_phases: 8 requests 10 ms apart into 4 slots (the later four wait for a slot and prefill
# beside the others' decoding, as in serving); prompts of 64-512 tokens, 32 tokens each answer
BURST_SLOTS, BURST_GAP_S, BURST_GEN = 4, 0.01, 32
BURST_PROMPTS = (512, 64, 256, 128, 384, 192, 512, 96)


@dataclass(frozen=True)
class HostToken:
    seconds: float                      # h [s per sampled token]
    server_step_s: dict[int, float]     # B -> median server decode step [s]
    bench_step_s: dict[int, float]      # B -> median llama-batched-bench decode step [s]

    def describe(self) -> str:
        steps = ", ".join(f"B={b}: {self.server_step_s[b] * 1e3:.2f} vs {self.bench_step_s[b] * 1e3:.2f} ms"
                          for b in sorted(self.server_step_s))
        return (f"llama-server host work {self.seconds * 1e3:.3f} ms per sampled token (decode step, server vs "
                f"llama-batched-bench: {steps})")


def client_cpus() -> set[int] | None:
    """The CPUs outside this process's affinity when it is pinned to a strict subset of the machine, else None."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    mine, every = os.sched_getaffinity(0), set(range(os.cpu_count() or 1))
    rest = every - mine
    return rest or None


def bench_step(model: Path, threads: int, flash_attn: bool, batch: int) -> float:
    """One llama-batched-bench run (a warm-up repetition, then one timed) -> its decode step [s]."""
    exe = shutil.which("llama-batched-bench")
    if exe is None:
        raise CalibrationError("llama-batched-bench is not on PATH")
    argv = [exe, "-m", str(model), "-t", str(threads), "-fa", "on" if flash_attn else "off",
            "-c", str(batch * (PROMPT + GEN) + 256), "-npp", str(PROMPT), "-ntg", str(GEN),
            "-npl", f"{batch},{batch}", "--output-format", "jsonl"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600).stdout
    rows = batched_rows(out)
    if not rows:
        raise CalibrationError(f"llama-batched-bench gave no timings: {out[-200:]!r}")
    return float(rows[-1]["t_tg"]) / GEN


def measure(model: Path, threads: int, flash_attn: bool = True, vocab: int = 4096, reps: int = 5) -> HostToken:
    """Alternate ``reps`` pairs of (llama-batched-bench, llama-server) decode steps at each B of :data:`BATCHES`."""
    from calibration.serve_check import LlamaServer, Trace, drive, warm_up

    cpus = client_cpus()
    server, bench = {b: [] for b in BATCHES}, {b: [] for b in BATCHES}
    with LlamaServer(model, max(BATCHES), PROMPT + GEN + 64, threads=threads, pin=False,
                     flash_attn=flash_attn) as srv:
        warm_up(srv.url, vocab)
        for rep in range(reps):
            for b in BATCHES:
                bench[b].append(bench_step(model, threads, flash_attn, b))
                trace = Trace(np.zeros(b), np.full(b, PROMPT), np.full(b, GEN))
                m = drive(srv.url, trace, vocab, seed=1000 + rep * 10 + b, client_cpus=cpus)
                if np.any(m.tokens != GEN):
                    raise CalibrationError("llama-server did not generate the requested tokens")
                server[b].append(float(np.median((m.end - m.ttft) / (GEN - 1))))
    srv_med = {b: float(np.median(v)) for b, v in server.items()}
    bench_med = {b: float(np.median(v)) for b, v in bench.items()}
    diffs = [float(np.median(np.array(server[b]) - np.array(bench[b]))) for b in BATCHES]
    h = max(0.0, sum(diffs) / sum(BATCHES))
    return HostToken(h, srv_med, bench_med)


@dataclass(frozen=True)
class PhaseFactors:
    prefill: float      # the server's prompt phases / the simulated ones, over the burst [1]
    decode: float       # the same for the decode phases (first token to last) [1]
    bursts: int

    def describe(self) -> str:
        return (f"llama-server's phases over plan serve's on a burst of {len(BURST_PROMPTS)} requests into "
                f"{BURST_SLOTS} slots: prompt ×{self.prefill:.3f}, decode ×{self.decode:.3f} (median of {self.bursts})")


def burst_trace():
    from calibration.serve_check import Trace

    n = len(BURST_PROMPTS)
    return Trace(np.arange(n) * BURST_GAP_S, np.array(BURST_PROMPTS), np.full(n, BURST_GEN))


def solve_factors(simulate_phases, measured_prompt: float, measured_decode: float, rounds: int = 6) -> tuple[float, float]:
    """The (prompt, decode) step multipliers under which the simulated phase totals equal the measured ones.
    ``simulate_phases(fp, fd)`` -> (total prompt phase, total decode phase) [s]. A fixed point: each round scales a
    factor by measured / simulated (the decode phase holds the unscaled host work, the prompt phase its first
    token's, and prompts and decodes share batches, so one division is not exact)."""
    fp = fd = 1.0
    for _ in range(rounds):
        sp, sd = simulate_phases(fp, fd)
        fp, fd = fp * measured_prompt / sp, fd * measured_decode / sd
    return fp, fd


def measure_phases(model: Path, threads: int, flash_attn: bool, vocab: int, rf, reps: int = 7) -> PhaseFactors:
    """``reps`` bursts (:func:`burst_trace`) against llama-server -np 4, each against plan serve's simulation of
    it with the roofline ``rf`` (the fitted steps and h): -> the median over bursts of :func:`solve_factors` on the
    server's own timings (timings.prompt_ms, predicted_ms summed over the burst)."""
    import dataclasses

    from calibration.serve_check import LlamaServer, drive, warm_up
    from planner.serve import Scheduler, StepModel, simulate

    trace = burst_trace()
    ctx = max(BURST_PROMPTS) + BURST_GEN + 64
    sched = Scheduler("llama.cpp", BURST_SLOTS)

    def phases(fp: float, fd: float) -> tuple[float, float]:
        k = rf.k.model_copy(update={"server_prefill_factor": fp, "server_decode_factor": fd})
        tr = simulate(trace.arrival, trace.prompt, trace.gen, np.zeros(len(trace.prompt), int), sched,
                      StepModel(dataclasses.replace(rf, k=k), ctx))
        return float(np.sum(tr.first - tr.admit)), float(np.sum(tr.end - tr.first))

    cpus = client_cpus()
    found = []
    with LlamaServer(model, BURST_SLOTS, ctx, threads=threads, pin=False, flash_attn=flash_attn) as srv:
        warm_up(srv.url, vocab)
        for rep in range(reps):
            m = drive(srv.url, trace, vocab, seed=2000 + rep, client_cpus=cpus)
            if np.any(m.tokens != BURST_GEN) or m.prompt_s is None or not np.all(np.isfinite(m.prompt_s)):
                raise CalibrationError("llama-server did not answer the burst with its timings")
            found.append(solve_factors(phases, float(np.sum(m.prompt_s)), float(np.sum(m.decode_s))))
    # within the schema's bounds (SpeedConstants.server_*_factor), so a wild burst cannot void the profile
    fp, fd = (float(np.clip(np.median([f[i] for f in found]), 0.5, 3.0)) for i in (0, 1))
    return PhaseFactors(fp, fd, reps)
