"""Real mlx_lm.lora runs: peak memory (mx.get_peak_memory) and step time of a fine-tune, to check and calibrate
planner.finetune.

Each configuration runs in its own Python process (a clean allocator and peak counter), through mlx-lm's own
``train_model`` (mlx_lm/lora.py) with the arguments ``mlx_lm.lora`` would build, on a synthetic dataset of
full-length sequences (so every batch is batch x max_seq_length, the case the planner models).

    python -m calibration.finetune_runs --model-dir DIR --config '{"batch": 2, "seq": 128, ...}'

prints one JSON line: the configuration, ``peak_bytes``, ``weights_bytes`` (active memory after load),
``step_s`` (median step time after the first) and ``tokens_per_s``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import types
from dataclasses import asdict, dataclass
from pathlib import Path

from calibration.errors import CalibrationError


@dataclass(frozen=True)
class RunConfig:
    batch: int = 2
    seq: int = 128
    rank: int = 8
    layers: int = 4
    grad_checkpoint: bool = False
    fine_tune_type: str = "lora"
    iters: int = 3


class _Dataset:
    """What mlx-lm's CacheDataset expects: items, process(), len (tuner/datasets.py)."""

    def __init__(self, items):
        self.items = items

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self):
        return len(self.items)

    def process(self, d):
        return d


def _run_here(model_dir: str, cfg: RunConfig) -> dict:
    import contextlib
    import io

    import mlx.core as mx
    import numpy as np
    from mlx_lm import load
    from mlx_lm.lora import CONFIG_DEFAULTS, train_model
    from mlx_lm.tuner.callbacks import TrainingCallback

    model, _ = load(model_dir)
    weights = mx.get_active_memory()
    vocab = model.args.vocab_size
    rng = np.random.default_rng(0)
    items = [(rng.integers(3, vocab - 1, size=cfg.seq).tolist(), 0) for _ in range(cfg.batch * 4)]
    steps: list[float] = []

    class Timer(TrainingCallback):
        def on_train_loss_report(self, info):
            steps.append(info["iterations_per_second"])

    args = types.SimpleNamespace(**{
        **CONFIG_DEFAULTS, "train": True, "fine_tune_type": cfg.fine_tune_type, "num_layers": cfg.layers,
        "batch_size": cfg.batch, "iters": cfg.iters, "val_batches": 0, "steps_per_report": 1,
        "steps_per_eval": 10**9, "adapter_path": tempfile.mkdtemp(prefix="ft-"), "save_every": 10**9,
        "max_seq_length": cfg.seq, "grad_checkpoint": cfg.grad_checkpoint,
        "lora_parameters": {"rank": cfg.rank, "dropout": 0.0, "scale": 20.0}, "seed": 0})
    mx.reset_peak_memory()
    with contextlib.redirect_stdout(io.StringIO()):
        train_model(args, model, _Dataset(items), _Dataset(items[:cfg.batch]), Timer())
    step_s = sorted(1 / s for s in steps[1:] or steps)[len(steps[1:] or steps) // 2] if steps else None
    return {**asdict(cfg), "peak_bytes": int(mx.get_peak_memory()), "weights_bytes": int(weights),
            "step_s": step_s, "tokens_per_s": cfg.batch * (cfg.seq - 1) / step_s if step_s else None}


def run(model_dir: str | os.PathLike[str], cfg: RunConfig, timeout_s: float = 900) -> dict:
    """One configuration in a fresh process. mx.compile is disabled (MLX_DISABLE_COMPILE): on the Linux CPU
    backend compiling the training step takes minutes; the fused kernels it saves are elementwise temporaries."""
    env = {**os.environ, "MLX_DISABLE_COMPILE": "1"}
    cmd = [sys.executable, "-m", "calibration.finetune_runs", "--model-dir", str(model_dir),
           "--config", json.dumps(asdict(cfg))]
    root = Path(__file__).resolve().parent.parent
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=root, check=False)
    if r.returncode != 0:
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
        raise CalibrationError(f"mlx_lm.lora run {asdict(cfg)} failed: {tail}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--config", required=True, help="JSON of RunConfig fields")
    a = ap.parse_args(argv)
    cfg = RunConfig(**json.loads(a.config))
    t = time.perf_counter()
    out = _run_here(a.model_dir, cfg)
    out["wall_s"] = time.perf_counter() - t
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
