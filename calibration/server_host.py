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
