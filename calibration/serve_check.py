"""`plan serve` against the real llama-server on this machine: same model file, slots, lengths and arrivals.

    trace = poisson_trace(rate, n, prompts, gens, seed)    seeded Poisson arrivals and lengths
    with LlamaServer(gguf, slots, slot_context) as srv:    llama-server -np SLOTS on 127.0.0.1 (a free port)
        measured = drive(srv.url, trace, vocab, seed)      an async HTTP client replays the trace: streamed
                                                           /completion, TTFT = first streamed token
    predicted = predict(gguf, chip, ram, slots, ctx, trace) `plan serve --trace` (the CLI, as a user runs it)

The server runs with llama-server's defaults for everything `plan serve` models (``-b 2048 -ub 512``, continuous
batching, ``cache_prompt``) and with the calibration's threads and flash attention (calibration/runners/
llama_cpp.py), so the step model calibrated by ``plan calibrate`` is the one of the server; ``--server`` adds
the server's host work per sampled token (calibration/server_host.py), which llama-bench's steps do not hold. Prompts are random
token ids (no shared prefix, so the prompt cache never hits, as in the simulation with no cached share); answers
ignore EOS, so every request generates exactly its ``gen`` tokens.
"""

from __future__ import annotations

import asyncio
import csv
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calibration.errors import CalibrationError
from calibration.hardware import physical_cores
from calibration.runners.llama_cpp import batched_rows

ROOT = Path(__file__).resolve().parent.parent
# The server and its calibration run on one CPU core of their own (-t 1, pinned), the client on the others: ggml's
# threads meet at a barrier after every op, and on 2 shared cores a thread preempted by the streaming client
# stalled the step (-t 2 ran decode steps 4-40x slower than -t 1 while the client streamed).
_CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
SERVER_CPUS = set(_CPUS[:1]) if len(_CPUS) >= 2 else set()
CLIENT_CPUS = set(_CPUS[1:]) if len(_CPUS) >= 2 else set()
THREADS = 1 if SERVER_CPUS else max(1, physical_cores() - 1)


def _pin_server() -> None:
    """preexec_fn of the server and of `plan calibrate` (inherited by llama-bench): the server's core."""
    if SERVER_CPUS:
        os.sched_setaffinity(0, SERVER_CPUS)


@dataclass(frozen=True)
class Trace:
    """Requests: arrival [s from the start], prompt and answer lengths [tokens]."""

    arrival: np.ndarray
    prompt: np.ndarray
    gen: np.ndarray

    def slowed(self, factor: float) -> Trace:
        """The same requests on a clock ``factor`` × slower: arrivals ÷ factor. A server whose every step takes
        ``factor`` × longer meets this trace exactly as the calibrated one meets the original, with every time ×
        ``factor`` (a queue's event times scale with its service and arrival times together)."""
        return Trace(self.arrival / factor, self.prompt, self.gen)

    def write(self, path: Path) -> Path:
        """The CSV `plan serve --trace` reads (arrival_s,prompt,gen)."""
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["arrival_s", "prompt", "gen"])
            w.writerows((f"{a:.6f}", int(p), int(g)) for a, p, g in zip(self.arrival, self.prompt, self.gen))
        return path


def poisson_trace(rate: float, n: int, prompts: dict[int, float], gens: dict[int, float], seed: int) -> Trace:
    """``n`` requests of a Poisson process of ``rate`` [1/s]; lengths drawn from {tokens: weight}."""
    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(1.0 / rate, n))

    def draw(d: dict[int, float]) -> np.ndarray:
        v, w = zip(*d.items())
        return rng.choice(np.array(v, np.int64), size=n, p=np.array(w) / sum(w))

    return Trace(arrival, draw(prompts), draw(gens))


def length_spec(d: dict[int, float]) -> str:
    """{512: 0.5, 128: 0.5} -> '512:0.5,128:0.5' (the --prompt/--gen form of a weighted distribution)."""
    return ",".join(f"{k}:{v:g}" for k, v in d.items())


# --------------------------------------------------------------------------- the real server
def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """llama-server on 127.0.0.1 for the duration of a ``with`` block (stopped on exit; its log kept on failure)."""

    def __init__(self, model: Path, slots: int, slot_context: int, threads: int | None = None,
                 timeout_s: float = 120.0, pin: bool = True, flash_attn: bool = True):
        exe = shutil.which("llama-server")
        if exe is None:
            raise CalibrationError("llama-server is not on PATH (scripts/bootstrap.sh full builds it)")
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.threads = threads or THREADS
        # -c is the whole KV cache, split over the -np slots (tools/server/server-context.cpp load_model)
        self.argv = [exe, "-m", str(model), "--host", "127.0.0.1", "--port", str(self.port),
                     "-np", str(slots), "-c", str(slots * slot_context), "-t", str(self.threads),
                     "-ngl", "99", "-fa", "on" if flash_attn else "off", "--no-webui", "--log-disable"]
        self.timeout_s = timeout_s
        self.pin = pin   # on the check's server core (else where this process may run)
        self.proc: subprocess.Popen | None = None
        fd, name = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
        os.close(fd)
        self.log_path = Path(name)

    def __enter__(self) -> LlamaServer:
        import httpx

        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT,
                                         preexec_fn=_pin_server if self.pin else None)
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise CalibrationError(f"llama-server exited {self.proc.returncode}: {self._tail()}")
            try:
                if httpx.get(self.url + "/health", timeout=2.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.__exit__(CalibrationError)   # stop it, keep its log
        raise CalibrationError(f"llama-server did not answer /health within {self.timeout_s:g} s: {self._tail()}")

    def __exit__(self, exc_type=None, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if exc_type is None:   # the log is kept only when something failed
            self.log_path.unlink(missing_ok=True)

    def _tail(self) -> str:
        lines = self.log_path.read_text(errors="replace").strip().splitlines()
        return " | ".join(lines[-3:]) or "(no output)"


# --------------------------------------------------------------------------- the client
@dataclass(frozen=True)
class Measured:
    """Per request: TTFT and end [s after its arrival], tokens received, prompt tokens the server processed."""

    ttft: np.ndarray
    end: np.ndarray
    tokens: np.ndarray
    prompt_processed: np.ndarray
    start_lag: np.ndarray   # how late the client sent each request [s] (its own scheduling delay)
    prompt_s: np.ndarray | None = None   # the server's own timings.prompt_ms: its prompt phase [s]
    decode_s: np.ndarray | None = None   # timings.predicted_ms: from the first token to the last [s]


async def _one(client, url: str, t0: float, arrival: float, ids: list[int], gen: int) -> tuple:
    await asyncio.sleep(max(0.0, t0 + arrival - time.perf_counter()))
    sent = time.perf_counter()
    body = {"prompt": ids, "n_predict": gen, "ignore_eos": True, "stream": True, "cache_prompt": True,
            "return_tokens": True}
    first = None
    n = 0
    processed = -1
    timings: dict = {}
    async with client.stream("POST", url + "/completion", json=body) as r:
        if r.status_code != 200:
            raise CalibrationError(f"llama-server answered {r.status_code}: {(await r.aread())[:200]!r}")
        async for line in r.aiter_lines():
            if not line.startswith("data: "):
                continue
            ev = json.loads(line[6:])
            if first is None and (ev.get("tokens") or ev.get("content")):
                first = time.perf_counter()
            if ev.get("stop"):
                n = int(ev.get("tokens_predicted", -1))
                timings = ev.get("timings") or {}
                processed = int(timings.get("prompt_n", -1))
    end = time.perf_counter()
    base = t0 + arrival
    return ((first or end) - base, end - base, n, processed, sent - base,
            float(timings.get("prompt_ms", "nan")) / 1e3, float(timings.get("predicted_ms", "nan")) / 1e3)


async def _drive(url: str, trace: Trace, vocab: int, seed: int) -> Measured:
    import httpx

    rng = np.random.default_rng(seed)
    # random ids above the 3 special tokens of calibration/tinymodels.py: no two prompts share a prefix
    prompts = [rng.integers(3, vocab, int(p)).tolist() for p in trace.prompt]
    limits = httpx.Limits(max_connections=len(prompts) + 1, max_keepalive_connections=len(prompts) + 1)
    async with httpx.AsyncClient(timeout=httpx.Timeout(600.0), limits=limits) as client:
        t0 = time.perf_counter() + 0.2
        rows = await asyncio.gather(*(_one(client, url, t0, float(a), ids, int(g))
                                      for a, ids, g in zip(trace.arrival, prompts, trace.gen)))
    cols = list(zip(*rows))
    return Measured(*(np.array(c, float) for c in cols))


def drive(url: str, trace: Trace, vocab: int, seed: int = 0, client_cpus: set[int] | None = None) -> Measured:
    """Replay ``trace`` against the server: every request is sent at its arrival time, streamed, timed (from
    ``client_cpus``, by default the cores the check's server does not use)."""
    cpus = CLIENT_CPUS if client_cpus is None else client_cpus
    before = os.sched_getaffinity(0) if cpus else None
    try:
        if cpus:
            os.sched_setaffinity(0, cpus)
        return asyncio.run(_drive(url, trace, vocab, seed))
    finally:
        if before:
            os.sched_setaffinity(0, before)


def warm_up(url: str, vocab: int) -> None:
    """One short request, so the first measured one does not pay for page faults of the weights."""
    drive(url, Trace(np.zeros(1), np.array([32]), np.array([4])), vocab, seed=12345)


def summary(m: Measured, trace: Trace) -> dict:
    """p50/p95 TTFT [s] and total generated tokens/s over the run (from the first arrival's clock origin to the
    last completion, as `plan serve` reports throughput_tok_s); with the server's timings, the mean wait before a
    slot took the request [s]: TTFT less the server's own prompt phase (timings.prompt_ms runs from the slot's
    start), i.e. the time in llama-server's task queue plus HTTP and streaming."""
    p50, p95 = np.percentile(m.ttft, [50, 95])
    makespan = float(np.max(trace.arrival + m.end))
    out = dict(ttft_p50_s=float(p50), ttft_p95_s=float(p95), throughput_tok_s=float(m.tokens.sum() / makespan),
               client_lag_p95_s=float(np.percentile(m.start_lag, 95)))
    ok = np.isfinite(m.prompt_s) if m.prompt_s is not None else np.zeros(0, bool)
    if ok.any():
        out["wait_mean_s"] = float(np.mean(m.ttft[ok] - m.prompt_s[ok]))
    return out


# --------------------------------------------------------------------------- the planner, as a user runs it
def plan_serve(args: list[str]) -> dict:
    """`python -m cli.main serve ... --json` -> the parsed result."""
    proc = subprocess.run([sys.executable, "-m", "cli.main", "serve", *args, "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=os.environ.copy())
    if proc.returncode != 0:
        raise CalibrationError(f"plan serve failed: {proc.stderr.strip()[-300:]}")
    return json.loads(proc.stdout)


def serve_args(model: Path, chip: str, ram: float, slots: int, slot_context: int) -> list[str]:
    return ["--model", str(model), "--chip", chip, "--ram", f"{ram:g}", "--runtime", "llama.cpp",
            "--slots", str(slots), "--slot-context", str(slot_context), "--no-sweep",
            "--cached-prefix", "0"]  # the check's prompts share no prefix: llama-server's prompt cache never hits


# --------------------------------------------------------------------------- the whole check
# A 29 M-parameter Llama (calibration/tinymodels.py, random weights, every dim a multiple of 256 as K-quants need):
# a decode step is milliseconds of real matmul work on one CPU core, so llama-server's own per-step work (sampling,
# streaming the token) stays a small part of it, and the model builds in seconds. Slots of 1 024 tokens hold the
# longest request.
MODEL = dict(size="tiny", hidden=512, layers=8, heads=8, kv_heads=2, ffn=1536, vocab=4096, ctx=4096)
PROMPTS = {48: 0.3, 192: 0.4, 512: 0.3}
GENS = {16: 0.3, 32: 0.4, 96: 0.3}
SLOTS, SLOT_CONTEXT = 4, 1024
LOADS = (0.3, 0.6, 0.85)   # offered rate / the calibrated saturation rate: light, moderate, near saturation
SENSITIVITY = 1.1            # the ±10 % speed of Row.sensitivity: step times / 1.1 and × 1.1


def build_model(root: Path) -> Path:
    """The Q4_K_M GGUF of :data:`MODEL` (llama.cpp's own quantizer); kept in ``root`` and reused."""
    from calibration.tinymodels import build_gguf, build_hf_llama, quantize_gguf

    out = root / "serve-Q4_K_M.gguf"
    if out.exists():
        return out
    shutil.rmtree(root / "serve-hf", ignore_errors=True)
    hf = build_hf_llama(root / "serve-hf", **MODEL)
    return quantize_gguf(build_gguf(hf, root / "serve-F16.gguf", "F16"), out, "Q4_K_M")


def calibrate(model: Path, budget_s: float, replace: bool = False) -> tuple[str, float]:
    """`plan calibrate --runtime llama.cpp --model MODEL --server` as a user runs it (the step model, then the
    server's host work per token; ``replace``: ``--replace``, a fresh fit that drops the earlier records) ->
    (chip id, RAM [GB]) of this machine."""
    from planner import profiles

    argv = [sys.executable, "-m", "cli.main", "calibrate", "--runtime", "llama.cpp", "--model", str(model),
            "--budget", f"{budget_s:g}", "--threads", str(THREADS), "--server", *(["--replace"] if replace else [])]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=budget_s * 4 + 120,
                          env=os.environ.copy(), preexec_fn=_pin_server)
    if proc.returncode != 0:
        raise CalibrationError(f"plan calibrate failed: {proc.stderr.strip()[-300:]}")
    chips = sorted((profiles.user_dir() / "chips").glob("custom-*.yaml"))
    if not chips:
        raise CalibrationError("plan calibrate wrote no chip profile for this machine")
    profiles.clear_cache()
    chip = profiles.resolve_chip(chips[-1].stem, None)
    return chip.id, float(max(chip.ram_options_gb))


def calibrate_probed(model: Path, budget_s: float, replace: bool = False) -> tuple[str, float, float, float]:
    """:func:`calibrate` between two speed probes -> (chip id, RAM [GB], the probe time while calibrating (mean of
    the two) [s], how far the two probes are apart)."""
    before = speed_probe(model)
    chip, ram = calibrate(model, budget_s, replace)
    after = speed_probe(model)
    return chip, ram, (before + after) / 2, drift([before, after])


def speed_probe(model: Path, reps: int = 3) -> float:
    """Seconds of a fixed llama-batched-bench run (4 × 192 prompt tokens, 32 decode steps) on the server's core,
    median of ``reps``: the machine's speed now, to tell a drift (a shared machine) from a model error."""
    exe = shutil.which("llama-batched-bench")
    if exe is None:
        raise CalibrationError("llama-batched-bench is not on PATH")
    argv = [exe, "-m", str(model), "-t", str(THREADS), "-fa", "on", "-c", "1024", "-npp", "192", "-ntg", "32",
            "-npl", ",".join(["4"] * (reps + 1)), "--output-format", "jsonl"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=300, preexec_fn=_pin_server).stdout
    rows = batched_rows(out)
    if len(rows) < 2:
        raise CalibrationError(f"llama-batched-bench gave no timings: {out[-200:]!r}")
    return float(np.median([r["t_pp"] + r["t_tg"] for r in rows[1:]]))   # the first is the warm-up


@dataclass(frozen=True)
class Replay:
    """One replay of a load's trace: the measured and predicted figures and the machine's speed around it."""

    measured: dict
    predicted: dict
    speed: float = 1.0        # probe time around this replay / at calibration: > 1 when the machine ran slower
    probe_drift: float = 0.0  # the probes just before and after it: how much the speed moved during it
    phases: dict | None = None   # phase_ratios: where a miss is (prompt phase, decode phase)
    ttft: np.ndarray | None = None        # per request, measured [s]
    ttft_pred: np.ndarray | None = None   # per request, simulated as `plan serve --trace` does [s]
    ttft_band: tuple[np.ndarray, np.ndarray] | None = None   # the same, the machine 10 % faster / slower [s]


def _median(dicts: list[dict]) -> dict:
    keys = set.intersection(*(set(d) for d in dicts)) if dicts else set()
    return {k: float(np.median([d[k] for d in dicts])) for k in sorted(keys)}


@dataclass(frozen=True)
class Row:
    """A load: its replays and, over those whose probes moved at most ``max_drift``, its figures (TTFT percentiles
    of all their requests pooled, the rest medians)."""

    load: float
    rate_per_s: float
    n: int
    replays: tuple[Replay, ...]
    max_drift: float | None = None

    @property
    def kept(self) -> tuple[Replay, ...]:
        """The replays on a stretch whose speed held (all of them when none did: :attr:`probe_drift` says so)."""
        ok = tuple(r for r in self.replays if self.max_drift is None or r.probe_drift <= self.max_drift)
        return ok or self.replays

    def _pooled(self, which: str) -> dict:
        """Medians over the kept replays, but TTFT p50/p95 of all their requests pooled when each replay has them
        (a queue's TTFT over 40 requests can jump at its median: pooling rounds of distinct traces smooths it)."""
        out = _median([getattr(r, which) for r in self.kept])
        arrays = [r.ttft if which == "measured" else r.ttft_pred for r in self.kept]
        if all(a is not None and len(a) for a in arrays):
            p50, p95 = np.percentile(np.concatenate(arrays), [50, 95])
            out.update(ttft_p50_s=float(p50), ttft_p95_s=float(p95))
        return out

    @property
    def measured(self) -> dict:
        return self._pooled("measured")

    @property
    def predicted(self) -> dict:
        return self._pooled("predicted")

    @property
    def phases(self) -> dict:
        return _median([r.phases for r in self.kept if r.phases])

    @property
    def speed(self) -> float:
        return float(np.median([r.speed for r in self.kept]))

    @property
    def probe_drift(self) -> float:
        return max(r.probe_drift for r in self.kept)

    @property
    def spread(self) -> float:
        """How far the kept replays' own TTFT p50 errors lie apart (largest - smallest): round-to-round scatter."""
        v = [r.predicted["ttft_p50_s"] / r.measured["ttft_p50_s"] for r in self.kept]
        return max(v) - min(v)

    @property
    def sensitivity(self) -> tuple[float, float] | None:
        """Predicted pooled TTFT p50 with the machine 10 % faster and 10 % slower, / the predicted p50 - 1: how
        far a speed error the size of this VM's drift moves the figure (the queue amplifies it near saturation)."""
        bands = [r.ttft_band for r in self.kept]
        if not all(b is not None for b in bands):
            return None
        p50 = self.predicted["ttft_p50_s"]
        return tuple(float(np.percentile(np.concatenate([b[j] for b in bands]), 50)) / p50 - 1 for j in (0, 1))

    def error(self, key: str) -> float:
        """(predicted - measured) / measured."""
        return self.predicted[key] / self.measured[key] - 1.0


def simulated(setup, trace: Trace, speed: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What `plan serve --trace` simulates for ``trace`` (planner.serve with the same scheduler and step model: slots
    of SLOT_CONTEXT, one KV stream per slot, nothing cached), on a machine ``speed`` × slower (the slowed trace, its
    times scaled back) -> per request (admitted, first token, end) [s on the trace's clock]."""
    from planner.serve import StepModel, simulate

    t = trace.slowed(speed)
    tr = simulate(t.arrival, t.prompt, t.gen, np.zeros(len(t.prompt), int), setup.scheduler(SLOTS),
                  StepModel(setup.rf, SLOT_CONTEXT))
    return tr.admit * speed, tr.first * speed, tr.end * speed


def phase_ratios(times: tuple[np.ndarray, np.ndarray, np.ndarray], m: Measured) -> dict:
    """Request by request, the simulation's phases against the server's own timings, as medians of predicted /
    measured: ``prompt`` (admission to first token, against timings.prompt_ms) and ``decode`` (first token to
    last, against timings.predicted_ms). ``times`` are :func:`simulated`'s (the simulation `plan serve --trace`
    runs), read per request: 1.0 for both with a TTFT miss puts it in the queue; both off alike puts it in the
    speed the machine had."""
    admit, first, end = times
    out = {}
    for key, pred, meas in (("prompt", first - admit, m.prompt_s), ("decode", end - first, m.decode_s)):
        ok = np.isfinite(meas) & (meas > 0) if meas is not None else np.zeros(0, bool)
        if ok.any():
            out[key] = float(np.median(pred[ok] / meas[ok]))
    return out


def drift(probes: list[float]) -> float:
    """Slowest / fastest speed probe - 1: how much the machine's speed moved during the check."""
    return max(probes) / min(probes) - 1.0


def compare(model: Path, chip: str, ram: float, n_requests: int, seed: int = 0, loads=LOADS,
            log=lambda s: None, calibration_probe: float | None = None,
            scale_by_probe: bool = False, rounds: int = 1, max_drift: float | None = None,
            recalibrate=None, calibration_moved: float = 0.0) -> tuple[float, list[Row]]:
    """Saturation rate from `plan serve`, then at each load: the real server and `plan serve` on the same trace.
    -> (saturation rate [1/s], rows)

    This runs in ``rounds``, the loads taking turns (0.3, 0.6, 0.85, 0.3, ...), so a slow or fast stretch of a
    shared machine falls on every load alike. Each round draws a fresh seeded trace per load at the same rate (the
    first round's are ``seed + i``) and sends fresh random prompt ids, so the server's prompt cache never hits. A
    row pools the requests of its rounds whose probes moved at most ``max_drift``: TTFT p50/p95 over all of them,
    measured and simulated alike, the total rate as a median. The prediction is `plan serve --trace` as a user
    runs it, read per request from the same simulation in-process (checked against the CLI's percentiles). Pooled
    rounds matter: 40 requests in a queue can have a gap at their median (at 0.6 load the 18th-21st simulated
    TTFTs of one trace were 413, 631, 743 and 779 ms), so one trace's p50 jumps with a small change of speed.

    With ``recalibrate`` (a callable returning :func:`calibrate_probed`'s tuple) every round after the first starts
    with a fresh `plan calibrate` and is predicted from it, so each round is a whole trial (calibrate, then serve
    the three loads) and a calibration meets the server within minutes; the rates stay those of the first
    calibration. A calibration whose probes moved more than ``max_drift`` voids its round (the first one's figure
    is ``calibration_moved``).

    With ``calibration_probe`` (the speed probe's time while `plan calibrate` ran) every replay is bracketed by
    probes (one between two replays): their ratio to the calibration's is the ``speed`` column, and how far the two
    are apart tells a stretch in which the machine's speed moved. With ``scale_by_probe`` the prediction's step
    times are multiplied by ``speed`` (:meth:`Trace.slowed`). That used to be the default and is not: over 6 loads
    in 4 runs on this VM the probes read speeds of 0.85–1.28; scaled by them, the simulated prompt phases were
    0.73–1.29 × the server's own timings, and 0.86–1.03 once divided by the probes' speed again. The probe's own
    runs do not see the speed the server sees."""
    base = serve_args(model, chip, ram, SLOTS, SLOT_CONTEXT)
    mu = plan_serve([*base, "--prompt", length_spec(PROMPTS), "--gen", length_spec(GENS), "--rate", "1/s",
                     "--duration", "60s"])["saturation_rate_per_s"]
    log(f"calibrated saturation rate {mu:.2f}/s")
    from planner.serve_plan import setup
    from sources import resolve_model

    resolved = resolve_model(str(model), quant=None)
    vocab = int(MODEL["vocab"])
    replays: list[list[Replay]] = [[] for _ in loads]
    with tempfile.TemporaryDirectory(prefix="serve-check-") as tmp, LlamaServer(model, SLOTS, SLOT_CONTEXT) as srv:

        def predict(trace: Trace, f: float) -> tuple[dict, tuple]:
            """`plan serve --trace` (its percentiles) and the same simulation in-process, per request (:func:`simulated`,
            checked against the CLI's percentiles, so the pooled figures are the CLI's simulation)."""
            p = plan_serve([*base, "--trace", str(trace.slowed(f).write(Path(tmp) / "trace.csv"))])
            pred = {k: p["ttft_s"][k.split("_")[1]] * f for k in ("ttft_p50_s", "ttft_p95_s")}
            pred["throughput_tok_s"] = p["throughput_tok_s"] / f
            times = simulated(sim, trace, f)
            mine = np.percentile(times[1] - trace.arrival, [50, 95])
            if not np.allclose(mine, [pred["ttft_p50_s"], pred["ttft_p95_s"]], rtol=1e-3, atol=1e-4):
                raise CalibrationError(f"the in-process simulation ({mine}) is not plan serve's ({pred})")
            return pred, times

        warm_up(srv.url, vocab)
        cal_moved = calibration_moved
        for r in range(rounds):
            if r and recalibrate is not None:
                chip, ram, calibration_probe, cal_moved = recalibrate()
                base = serve_args(model, chip, ram, SLOTS, SLOT_CONTEXT)
                log(f"round {r + 1}: recalibrated (probes moved {cal_moved:.0%})")
            if r == 0 or recalibrate is not None:
                sim = setup(chip, None, ram, resolved, None, "llama.cpp")
                before = speed_probe(model) if calibration_probe else None
            for i, load in enumerate(loads):
                # round 1 replays the seeded trace of each load; later rounds draw fresh ones at the same rate
                trace = poisson_trace(load * mu, n_requests, PROMPTS, GENS, seed + i + 100 * r)
                m = drive(srv.url, trace, vocab, seed + i + 1000 * r)   # fresh prompt ids: no cache hit
                if np.any(m.tokens != trace.gen) or np.any(m.prompt_processed > trace.prompt):
                    raise CalibrationError("llama-server did not generate exactly the requested tokens")
                speed, moved = 1.0, 0.0
                if calibration_probe and before:
                    after = speed_probe(model)
                    speed, moved = (before + after) / 2 / calibration_probe, drift([before, after])
                    before = after
                f = speed if scale_by_probe else 1.0
                pred, times = predict(trace, f)
                band = tuple(simulated(sim, trace, f * g)[1] - trace.arrival for g in (1 / SENSITIVITY, SENSITIVITY))
                replays[i].append(Replay(summary(m, trace), pred, speed, max(moved, cal_moved),
                                         phase_ratios(times, m), m.ttft, times[1] - trace.arrival, band))
                one = Row(load, load * mu, n_requests, (replays[i][-1],))
                log(f"round {r + 1}/{rounds}: " + render([one]).splitlines()[1])
    return mu, [Row(load, load * mu, n_requests, tuple(replays[i]), max_drift) for i, load in enumerate(loads)]


def render(rows: list[Row]) -> str:
    head = (f"{'load':>5} {'rate/s':>7} {'n':>4} | {'TTFT p50 meas':>13} {'pred':>7} {'err':>6} | "
            f"{'TTFT p95 meas':>13} {'pred':>7} {'err':>6} | {'tok/s meas':>10} {'pred':>7} {'err':>6} | "
            f"{'lag p95':>7} | {'speed':>5} {'moved':>5} | {'prompt':>6} {'decode':>6} | {'runs':>4} {'spread':>6} | "
            f"{'±10 % speed':>11}")
    out = [head]
    for r in rows:
        cells = [f"{r.load:>5.2f} {r.rate_per_s:>7.2f} {r.n:>4}"]
        for k, unit in (("ttft_p50_s", 1000), ("ttft_p95_s", 1000), ("throughput_tok_s", 1)):
            w = 13 if k != "throughput_tok_s" else 10
            cells.append(f"{r.measured[k] * unit:>{w}.0f} {r.predicted[k] * unit:>7.0f} "
                         f"{r.error(k):>+6.0%}")
        cells.append(f"{r.measured['client_lag_p95_s'] * 1000:>7.1f}")
        cells.append(f"{r.speed:>5.2f} {r.probe_drift:>5.0%}")
        ph = r.phases or {}
        cells.append(" ".join(f"{ph[k]:>6.2f}" if k in ph else f"{'':>6}" for k in ("prompt", "decode")))
        cells.append(f"{len(r.kept)}/{len(r.replays)}".rjust(4) + f" {r.spread:>6.0%}")
        sens = r.sensitivity
        cells.append(f"{sens[0]:+.0%}/{sens[1]:+.0%}".rjust(11) if sens else f"{'':>11}")
        out.append(" | ".join(cells))
    return "\n".join(out) + ("\n(TTFT in ms; err = predicted / measured - 1; lag p95 [ms]: how late the client sent "
                             "its requests; speed: probe time around the load / at calibration; moved: the probes before "
                             "and after the load apart; prompt, decode: "
                             "the simulation's prompt and decode phases / the server's own timings, median over "
                             "requests; over the rounds kept (runs: kept / run): TTFT of all their requests pooled, the "
                             "rest medians; spread: how far the rounds' own p50 errors lie apart; ±10 % speed: the "
                             "predicted p50 with the machine 10 % faster / slower, against the predicted)")
