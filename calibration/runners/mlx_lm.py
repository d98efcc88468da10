"""mlx-lm runner: the mlx_lm library in-process, following ``mlx_lm/benchmark.py``.

- prefill: ``stream_generate(prompt of P random tokens, max_tokens=1)`` -> ``prompt_tps``.
- decode @ depth D: D random tokens are prefilled into a prompt cache (untimed), then
  ``stream_generate(1 token, max_tokens=G, prompt_cache=cache)`` -> ``generation_tps``; the cache is
  trimmed back to D between trials.
- batch B: B == 1 uses ``stream_generate``, B > 1 ``batch_generate`` (BatchGenerator); both give
  ``prompt_tps`` and ``generation_tps`` (aggregate over the batch).

EOS is disabled (``tokenizer._eos_token_ids = set()``), as mlx_lm.benchmark does, so every trial
generates exactly G tokens. Peak memory is ``mx.get_peak_memory()`` (bytes), reset per config.
mlx is imported lazily so importing this module is cheap.
"""

from __future__ import annotations

from typing import Any, Self

from calibration.errors import CalibrationError
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


def versions() -> str:
    """``mlx-lm 0.32.2, mlx 0.32.4``."""
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for pkg in ("mlx-lm", "mlx"):
        try:
            out.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            out.append(f"{pkg} ?")
    return ", ".join(out)


class MlxLmRunner:
    """Measure an MLX model folder with the mlx_lm library. Use as a context manager."""

    runtime = "mlx-lm"

    def __init__(
        self,
        info: ModelInfo,
        *,
        trials: int = DEFAULT_TRIALS,
        warmup: int = DEFAULT_WARMUP,
        seed: int = DEFAULT_SEED,
        device: dict[str, Any] | None = None,
        prefill_step_size: int = 2048,
    ) -> None:
        if info.format != "mlx":
            raise CalibrationError(f"{info.path}: mlx-lm needs an MLX folder, got a {info.format} model")
        self.info = info
        self.trials, self.warmup, self.seed = trials, warmup, seed
        self.device = device or {}
        self.prefill_step_size = prefill_step_size
        self._model: Any = None
        self._tokenizer: Any = None
        self._backend = "cpu"

    # -- lifecycle ---------------------------------------------------------------------------------

    def open(self) -> None:
        if self._model is not None:
            return
        try:
            import mlx.core as mx
            from mlx_lm import load
        except ImportError as e:
            raise CalibrationError(f"mlx-lm is not installed ({e}); install the [calibration] extra") from e
        try:
            mx.random.seed(self.seed)
            self._model, self._tokenizer = load(self.info.path)
        except Exception as e:
            raise CalibrationError(f"mlx_lm.load({self.info.path}) failed: {e}") from e
        self._tokenizer._eos_token_ids = set()  # ignore EOS, as mlx_lm.benchmark does
        self._backend = "metal" if mx.metal.is_available() else "cpu"

    def close(self) -> None:
        self._model = self._tokenizer = None

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- measurement -------------------------------------------------------------------------------

    def measure(self, config: RunConfig) -> list[RunRecord]:
        """Warm-up + trials of one config; returns 1 record (prefill/decode) or 2 (batch)."""
        import mlx.core as mx

        self.open()
        mx.reset_peak_memory()
        try:
            if config.kind == "prefill":
                values = self._trials(lambda: (self._single(config.prompt_tokens, 1, None, 0)[0],))
                return [self._record(config, "prefill", "mlx_lm.stream_generate", values[0], depth=0)]
            if config.kind == "decode":
                return [self._decode_at_depth(config)]
            return self._batch(config)
        except CalibrationError:
            raise
        except Exception as e:
            raise CalibrationError(f"mlx-lm failed on {config.label} for {self.info.path}: {e}") from e

    def _trials(self, fn) -> list[list[float]]:  # type: ignore[no-untyped-def]
        for _ in range(self.warmup):
            fn()
        per_metric: list[list[float]] = []
        for _ in range(self.trials):
            vals = fn()
            if not per_metric:
                per_metric = [[] for _ in vals]
            for acc, v in zip(per_metric, vals):
                acc.append(float(v))
        return per_metric

    def _single(self, n_prompt: int, max_tokens: int, cache: Any, seed_offset: int) -> tuple[float, float]:
        from mlx_lm import stream_generate

        prompt = random_prompts(self.info.vocab, 1, n_prompt, seed=self.seed + seed_offset)[0]
        last = None
        for last in stream_generate(self._model, self._tokenizer, prompt, max_tokens=max_tokens,  # noqa: B007
                                    prompt_cache=cache, prefill_step_size=self.prefill_step_size):
            pass  # only the final response (its counts and rates) is kept
        if last is None:
            raise CalibrationError("stream_generate produced no tokens")
        if max_tokens > 1 and last.generation_tokens != max_tokens:
            raise CalibrationError(f"stream_generate stopped after {last.generation_tokens}/{max_tokens} tokens")
        return last.prompt_tps, last.generation_tps

    def _decode_at_depth(self, config: RunConfig) -> RunRecord:
        import mlx.core as mx
        from mlx_lm.models.cache import make_prompt_cache, trim_prompt_cache

        cache = make_prompt_cache(self._model)
        if config.depth:
            tokens = mx.array(random_prompts(self.info.vocab, 1, config.depth, seed=self.seed + 1))
            step = self.prefill_step_size
            for i in range(0, config.depth, step):
                self._model(tokens[:, i:i + step], cache=cache)
                mx.eval([c.state for c in cache])

        def one() -> tuple[float]:
            _, gen_tps = self._single(1, config.gen_tokens, cache, seed_offset=2)
            trim_prompt_cache(cache, cache[0].offset - config.depth)
            return (gen_tps,)

        (values,) = self._trials(one)
        return self._record(config, "decode", "mlx_lm.stream_generate", values, depth=config.depth)

    def _batch(self, config: RunConfig) -> list[RunRecord]:
        if config.batch == 1:
            tool = "mlx_lm.stream_generate"

            def one() -> tuple[float, float]:
                return self._single(config.prompt_tokens, config.gen_tokens, None, seed_offset=3)
        else:
            from mlx_lm import batch_generate

            tool = "mlx_lm.batch_generate"
            prompts = random_prompts(self.info.vocab, config.batch, config.prompt_tokens, seed=self.seed + 3)

            def one() -> tuple[float, float]:
                stats = batch_generate(self._model, self._tokenizer, prompts, max_tokens=config.gen_tokens,
                                       prefill_step_size=self.prefill_step_size).stats
                if stats.generation_tokens < config.batch * (config.gen_tokens - 1):
                    raise CalibrationError(f"batch_generate produced {stats.generation_tokens} tokens, "
                                           f"expected about {config.batch * config.gen_tokens}")
                return stats.prompt_tps, stats.generation_tps

        pp, tg = self._trials(one)
        return [self._record(config, "prefill", tool, pp, depth=0),
                self._record(config, "decode", tool, tg, depth=config.prompt_tokens)]

    def _record(self, config: RunConfig, phase: str, tool: str, values: list[float], depth: int) -> RunRecord:
        import mlx.core as mx

        return RunRecord(
            runtime="mlx-lm", runtime_version=versions(), backend=self._backend, tool=tool,  # type: ignore[arg-type]
            device=self.device, **self.info.record_fields(),
            kind=config.kind, phase=phase,  # type: ignore[arg-type]
            prompt_tokens=config.prompt_tokens, gen_tokens=config.gen_tokens, context_depth=depth,
            batch=config.batch, flash_attn=None, value_tok_s=median(values), trials=len(values),
            trial_values=values, peak_memory_bytes=int(mx.get_peak_memory()), seed=self.seed,
            notes=f"prefill_step_size {self.prefill_step_size}; warmup {self.warmup}",
        )
