"""calibration.bench_holdout: --json keeps the measurements and --replay refits them to the same answer."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("scipy", reason="the user fit needs scipy (calibration extra; make test installs it)")
pytestmark = pytest.mark.requires_scipy

from calibration import bench_holdout as BH  # noqa: E402
from calibration.records import RunRecord  # noqa: E402
from calibration.user_fit import predict_runs, shipped_constants  # noqa: E402
from planner import profiles  # noqa: E402

SHAPE = {"weights_bytes": 4_000_000_000, "n_params": 7_000_000_000, "n_layers": 32, "hidden": 4096, "n_heads": 32,
         "n_kv_heads": 8, "head_dim": 128, "vocab": 32000, "ffn": 14336}


def _rec(runtime: str, kind: str, phase: str, p: int = 0, g: int = 0, d: int = 0, b: int = 1) -> RunRecord:
    return RunRecord(runtime=runtime, runtime_version="test 1", backend="metal", tool="llama-bench",
                     model_path="/m/x", quant="Q4_K_M", **SHAPE, kind=kind, phase=phase, prompt_tokens=p,
                     gen_tokens=g, context_depth=d, batch=b, flash_attn=True, value_tok_s=1.0, trials=1,
                     trial_values=[1.0])


def test_replay_refits_the_saved_measurements(tmp_path):
    chip = profiles.resolve_chip("m3-max-40gpu")
    recs = [_rec("llama.cpp", c.kind, "decode" if c.kind == "decode" else "prefill", p=c.prompt_tokens,
                 g=c.gen_tokens, d=c.depth, b=c.batch) for c in BH.TRAIN + BH.HELD_OUT if c.kind != "batch"]
    recs += [_rec("llama.cpp", "batch", ph, p=128, g=32, d=128 if ph == "decode" else 0, b=b)
             for b in (1, 2, 4, 8) for ph in ("prefill", "decode")]
    # measured = the shipped model's own prediction, slowed by 20 %: the fit recovers it, the held-out points follow
    consts = shipped_constants(chip, "llama.cpp").constants
    recs = [r.model_copy(update={"value_tok_s": 0.8 * v, "trial_values": [0.8 * v]})
            for r, v in zip(recs, predict_runs(recs, chip, consts))]
    first = BH.evaluate("llama.cpp", recs, chip)
    assert {x["label"] for x in first["held_out"]} == {r.label for r in recs if BH._is_held_out(r)}
    assert max(x["ape"] for x in first["held_out"]) < 10
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({"results": [first]}, default=str))
    again = BH.replay(path)
    assert [x["predicted"] for x in again[0]["held_out"]] == pytest.approx([x["predicted"] for x in first["held_out"]])
