"""llama.cpp runner: the real llama.cpp tools when on PATH, else the llama-cpp-python low-level API.

Tools (``mode="cli"``), exactly what a Mac user runs:

- prefill p:        ``llama-bench -m M -p P -n 0 -r N -o json``            -> ``samples_ts`` (median)
- decode g @ d:     ``llama-bench -m M -p 0 -n G -d D -r N -o json``
- batch b (p, g):   ``llama-batched-bench -m M -npp P -ntg G -npl b,b,...,b --output-format jsonl``
  (the first repetition is the warm-up; S_PP and S_TG of the others are the trials)

Python fallback (``mode="python"``): ``llama_batch_init`` + ``llama_decode`` with ``n_seq_max = batch``,
timed with ``time.perf_counter`` around ``llama_synchronize`` (``llama_perf_context`` is wrong for
multi-sequence batches), mirroring batched-bench's decode pattern.

All layers on the GPU (``-ngl 99`` / ``n_gpu_layers=-1``), flash attention on, threads = physical
(performance) cores. Failures raise CalibrationError with the tool's last stderr lines.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import time
from typing import Any, Literal, Self

from calibration.errors import CalibrationError
from calibration.hardware import physical_cores
from calibration.protocol import (
    DEFAULT_SEED,
    DEFAULT_TRIALS,
    DEFAULT_WARMUP,
    RunConfig,
    median,
    random_prompts,
)
from calibration.records import RunRecord
from calibration.runners import ModelInfo

Mode = Literal["auto", "cli", "python"]
N_BATCH = 2048  # llama.cpp defaults (-b 2048 -ub 512)
N_UBATCH = 512


def cli_available() -> bool:
    """True when llama-bench and llama-batched-bench are on PATH."""
    return bool(shutil.which("llama-bench") and shutil.which("llama-batched-bench"))


SPARE_REPS = 2


def batched_rows(out: str) -> list[dict]:
    """The result rows of `llama-batched-bench --output-format jsonl` (one per -npl entry)."""
    rows = []
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("{") and '"speed_tg"' in line:
            try:
                rows.append(json.loads(line))
            except ValueError as e:
                raise CalibrationError(f"llama-batched-bench jsonl line not understood: {line[:200]}") from e
    return rows


def _tail(text: str, n: int = 3) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:]) or "(no output)"


class LlamaCppRunner:
    """Measure a GGUF with llama.cpp. ``mode``: "auto" (CLI if on PATH), "cli" or "python"."""

    runtime = "llama.cpp"

    def __init__(
        self,
        info: ModelInfo,
        *,
        trials: int = DEFAULT_TRIALS,
        warmup: int = DEFAULT_WARMUP,
        seed: int = DEFAULT_SEED,
        device: dict[str, Any] | None = None,
        mode: Mode = "auto",
        threads: int | None = None,
        flash_attn: bool = True,
        timeout_s: float = 1800,
    ) -> None:
        if info.format != "gguf":
            raise CalibrationError(f"{info.path}: llama.cpp needs a .gguf file, got a {info.format} model")
        self.info = info
        self.trials, self.warmup, self.seed = trials, warmup, seed
        self.device = device or {}
        self.threads = threads or (physical_cores() if not device else _threads_from_device(device))
        self.flash_attn = flash_attn
        self.timeout_s = timeout_s
        if mode == "auto":
            mode = "cli" if cli_available() else "python"
        if mode == "cli" and not cli_available():
            raise CalibrationError("llama-bench / llama-batched-bench not on PATH; add the llama.cpp build "
                                   "bin folder to PATH or use mode='python'")
        self.mode: Literal["cli", "python"] = mode
        self._version: str | None = None
        self._backend: Literal["metal", "cpu"] = "cpu"
        self._py: _PyBackend | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    def open(self) -> None:
        if self.mode == "python" and self._py is None:
            self._py = _PyBackend(self.info.path, self.threads, self.flash_attn)
            self._version = self._py.version
            self._backend = self._py.backend

    def close(self) -> None:
        if self._py is not None:
            self._py.free()
            self._py = None

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- measurement -------------------------------------------------------------------------------

    def measure(self, config: RunConfig) -> list[RunRecord]:
        """Warm-up + trials of one config; returns 1 record (prefill/decode) or 2 (batch)."""
        self.open()
        if self.mode == "cli":
            if config.kind == "batch":
                pp, tg = self._batched_bench(config)
                tool = "llama-batched-bench"
            else:
                values = self._llama_bench(config)
                tool = "llama-bench"
        else:
            assert self._py is not None
            pp, tg, values = [], [], []
            for i in range(self.warmup + self.trials):
                res = self._py.run(config, self.info.vocab, self.seed)
                if i >= self.warmup:
                    if config.kind == "batch":
                        pp.append(res[0])
                        tg.append(res[1])
                    else:
                        values.append(res[0])
            tool = "llama-cpp-python"
        if config.kind == "batch":
            return [self._record(config, "prefill", tool, pp, 0),
                    self._record(config, "decode", tool, tg, config.prompt_tokens)]
        phase = "prefill" if config.kind == "prefill" else "decode"
        return [self._record(config, phase, tool, values, config.depth)]

    def _run(self, argv: list[str]) -> str:
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=self.timeout_s)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise CalibrationError(f"`{argv[0]}` failed to run on {self.info.path}: {e}") from e
        if proc.returncode != 0:
            raise CalibrationError(f"{os.path.basename(argv[0])} exited {proc.returncode} on {self.info.path}: "
                                   f"{_tail(proc.stderr or proc.stdout)}")
        return proc.stdout

    def _common_args(self) -> list[str]:
        return ["-m", self.info.path, "-t", str(self.threads), "-ngl", "99",
                "-fa", "on" if self.flash_attn else "off"]

    def _llama_bench(self, config: RunConfig) -> list[float]:
        if config.kind == "prefill":
            shape = ["-p", str(config.prompt_tokens), "-n", "0"]
        else:
            shape = ["-p", "0", "-n", str(config.gen_tokens), "-d", str(config.depth)]
        argv = [shutil.which("llama-bench") or "llama-bench", *self._common_args(), *shape,
                "-r", str(self.trials), "-o", "json"]
        if self.warmup == 0:
            argv.append("--no-warmup")
        out = self._run(argv)
        try:
            tests = json.loads(out)
            test = tests[0]
            samples = [float(x) for x in test["samples_ts"]]
        except (ValueError, KeyError, IndexError, TypeError) as e:
            raise CalibrationError(f"llama-bench -o json output not understood ({e}): {out[:200]!r}") from e
        self._note_build(test)
        return samples

    def _batched_bench(self, config: RunConfig) -> tuple[list[float], list[float]]:
        b, p, g = config.batch, config.prompt_tokens, config.gen_tokens
        n_ctx = b * (p + g)
        n_ctx = int(math.ceil(n_ctx / 256) * 256)
        reps = self.warmup + self.trials
        argv = [shutil.which("llama-batched-bench") or "llama-batched-bench", *self._common_args(),
                "-c", str(n_ctx), "-b", str(N_BATCH), "-ub", str(N_UBATCH),
                "-npp", str(p), "-ntg", str(g), "-npl", ",".join([str(b)] * (reps + SPARE_REPS)),
                "--output-format", "jsonl"]
        # llama.cpp's asynchronous logger (common/log.cpp) can drop the last jsonl lines at exit (seen in ~1 of 6
        # runs on a loaded 2-vCPU VM, rc 0): spare repetitions are run, only warmup + trials rows are kept, and a
        # run that still comes up short is repeated once.
        rows: list[dict] = []
        for _attempt in range(2):
            out = self._run(argv)
            got = batched_rows(out)
            if len(got) > len(rows):
                rows = got
            if len(rows) >= reps:
                break
        if len(rows) < self.warmup + 1 or len(rows) > reps + SPARE_REPS:
            raise CalibrationError(f"llama-batched-bench returned {len(rows)} rows, expected {reps} "
                                   f"(-c {n_ctx} too small?): {_tail(out)}")
        rows = rows[self.warmup:reps]
        if self._version is None:
            self._version = _bench_version()
        return [float(r["speed_pp"]) for r in rows], [float(r["speed_tg"]) for r in rows]

    def _note_build(self, test: dict[str, Any]) -> None:
        if self._version is None:
            self._version = f"llama.cpp {test.get('build_commit', '?')} (build {test.get('build_number', '?')})"
        backends = str(test.get("backends", "")) + str(test.get("gpu_info", ""))
        self._backend = "metal" if "metal" in backends.lower() else "cpu"

    def _record(self, config: RunConfig, phase: str, tool: str, values: list[float], depth: int) -> RunRecord:
        if self._version is None:
            self._version = _bench_version() if self.mode == "cli" else "llama-cpp-python ?"
        return RunRecord(
            runtime="llama.cpp", runtime_version=self._version, backend=self._backend,
            tool=tool, device=self.device, **self.info.record_fields(),  # type: ignore[arg-type]
            kind=config.kind, phase=phase,  # type: ignore[arg-type]
            prompt_tokens=config.prompt_tokens, gen_tokens=config.gen_tokens, context_depth=depth,
            batch=config.batch, flash_attn=self.flash_attn, threads=self.threads,
            value_tok_s=median(values), trials=len(values), trial_values=values, seed=self.seed,
            notes=f"ngl 99; n_batch {N_BATCH}; n_ubatch {N_UBATCH}; warmup {self.warmup}",
        )


def _threads_from_device(device: dict[str, Any]) -> int:
    n = device.get("cpu_cores_performance") or device.get("cpu_cores_physical")
    return int(n) if n else physical_cores()


def _bench_version() -> str:
    """``llama.cpp 0c1e570 (build 1)`` from ``llama-bench --version``."""
    exe = shutil.which("llama-bench")
    if not exe:
        return "llama.cpp ?"
    try:
        proc = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "llama.cpp ?"
    text = proc.stdout + proc.stderr
    # "version: 0.5.0-dev (build 1, commit 0c1e570)"
    for line in text.splitlines():
        if "commit" in line:
            commit = line.rsplit("commit", 1)[1].strip(" )")
            build = line.split("build", 1)[1].split(",", 1)[0].strip() if "build" in line else "?"
            return f"llama.cpp {commit} (build {build})"
    return f"llama.cpp {_tail(text, 1)}"


# ----------------------------------------------------------------------------------------------
# llama-cpp-python low-level fallback
# ----------------------------------------------------------------------------------------------


class _PyBackend:
    """One loaded llama_model; a llama_context per config (n_seq_max depends on the batch)."""

    def __init__(self, path: str, threads: int, flash_attn: bool) -> None:
        try:
            import logging

            import llama_cpp as L
        except Exception as e:
            raise CalibrationError(f"llama-cpp-python is unavailable ({e}); install it and set "
                                   "LLAMA_CPP_LIB_PATH to the llama.cpp build bin folder") from e
        logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)  # silence llama.cpp's load log
        self.L = L
        self.threads = threads
        self.flash_attn = flash_attn
        L.llama_backend_init()
        mp = L.llama_model_default_params()
        mp.n_gpu_layers = -1
        self.model = L.llama_model_load_from_file(path.encode(), mp)
        if not self.model:
            raise CalibrationError(f"llama_model_load_from_file failed for {path} (see llama.cpp log)")
        info = (L.llama_print_system_info() or b"").decode(errors="replace")
        self.backend: Literal["metal", "cpu"] = "metal" if "METAL" in info.upper() else "cpu"
        self.version = f"llama-cpp-python {getattr(L, '__version__', '?')}"

    def free(self) -> None:
        if self.model:
            self.L.llama_model_free(self.model)
            self.model = None

    def run(self, config: RunConfig, vocab: int, seed: int) -> tuple[float, ...]:
        """One trial: (prefill tok/s,), (decode tok/s,) or (pp, tg) aggregate for a batch config."""
        L = self.L
        b = config.batch
        n_ctx = int(math.ceil(b * config.max_context / 256) * 256)
        cp = L.llama_context_default_params()
        cp.n_ctx = n_ctx
        cp.n_batch = N_BATCH
        cp.n_ubatch = N_UBATCH
        cp.n_seq_max = b
        cp.kv_unified = True
        cp.n_threads = cp.n_threads_batch = self.threads
        cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_ENABLED if self.flash_attn else L.LLAMA_FLASH_ATTN_TYPE_DISABLED
        ctx = L.llama_init_from_model(self.model, cp)
        if not ctx:
            raise CalibrationError(f"llama_init_from_model failed (n_ctx {n_ctx}, n_seq_max {b})")
        batch = L.llama_batch_init(N_BATCH, 0, b)
        try:
            L.llama_memory_clear(L.llama_get_memory(ctx), True)
            rng_seed = seed + 7
            if config.kind == "prefill":
                toks = random_prompts(vocab, 1, config.prompt_tokens, seed=rng_seed)[0]
                t = self._timed(ctx, batch, [(tk, i, 0, i == len(toks) - 1) for i, tk in enumerate(toks)])
                return (config.prompt_tokens / t,)
            if config.kind == "decode":
                d = config.depth
                if d:
                    toks = random_prompts(vocab, 1, d, seed=rng_seed)[0]
                    self._timed(ctx, batch, [(tk, i, 0, i == d - 1) for i, tk in enumerate(toks)])
                gen = random_prompts(vocab, 1, config.gen_tokens, seed=rng_seed + 1)[0]
                t0 = time.perf_counter()
                for i, tk in enumerate(gen):
                    self._decode(ctx, batch, [(tk, d + i, 0, True)])
                    L.llama_synchronize(ctx)
                return (config.gen_tokens / (time.perf_counter() - t0),)
            p, g = config.prompt_tokens, config.gen_tokens
            prompts = random_prompts(vocab, b, p, seed=rng_seed)
            items = [(tk, i, j, i == p - 1) for j in range(b) for i, tk in enumerate(prompts[j])]
            t_pp = self._timed(ctx, batch, items)
            gen = random_prompts(vocab, g, b, seed=rng_seed + 1)
            t0 = time.perf_counter()
            for i in range(g):
                self._decode(ctx, batch, [(gen[i][j], p + i, j, True) for j in range(b)])
                L.llama_synchronize(ctx)
            t_tg = time.perf_counter() - t0
            return (b * p / t_pp, b * g / t_tg)
        finally:
            L.llama_batch_free(batch)
            L.llama_free(ctx)

    def _timed(self, ctx: Any, batch: Any, items: list[tuple[int, int, int, bool]]) -> float:
        t0 = time.perf_counter()
        for i in range(0, len(items), N_BATCH):
            self._decode(ctx, batch, items[i:i + N_BATCH])
        self.L.llama_synchronize(ctx)
        return time.perf_counter() - t0

    def _decode(self, ctx: Any, batch: Any, items: list[tuple[int, int, int, bool]]) -> None:
        batch.n_tokens = len(items)
        for k, (tok, pos, seq, logits) in enumerate(items):
            batch.token[k] = tok
            batch.pos[k] = pos
            batch.n_seq_id[k] = 1
            batch.seq_id[k][0] = seq
            batch.logits[k] = logits
        rc = self.L.llama_decode(ctx, batch)
        if rc != 0:
            raise CalibrationError(f"llama_decode returned {rc} ({len(items)} tokens; KV cache full?)")
