"""mlx-lm's own accounting vs the planner: a tiny float32 MLX model generates at several prompt lengths and
mx.get_peak_memory() (weights + KV + activations, excluding the free-buffer cache) is compared with the planner's
MLX prediction minus its fixed runtime overhead (Metal library/allocator slack is not an MLX array).

Runtime profile adjusted to what runs here: float32 activations/caches (activation_bytes 4), no fused SDPA
kernel (the Linux CPU backend always takes the unfused fallback of mlx/fast.cpp, which materialises the H x S x L
scores and the S x L causal mask; on a Mac head_dim 64 is fused), and the prefill step of the run. Prompts up to
8192 tokens in 2048- and 512-token chunks, so the score matrix, the chunked cache growth and the chunk
activations each carry the peak somewhere. Tolerance 15 %: the CPU backend keeps up to 10 tasks' buffers in
flight (mlx/transforms.cpp MAX_ACTIVE_TASKS), which the planner's Metal-side accounting does not model.
"""

from __future__ import annotations

import pytest

from planner import memory as M
from planner import profiles as P

from .conftest import tiny_profile

pytestmark = pytest.mark.requires_mlx
CASES = [(16, 2048), (64, 2048), (512, 2048), (2048, 2048), (8192, 2048), (2048, 512), (8192, 512)]
GEN = 2
TOL = 0.15
RESULTS: list[tuple[int, int, float, float, float]] = []


@pytest.fixture(scope="session")
def mlx_tiny(xc_root, xc_hf):
    pytest.importorskip("mlx.core")
    pytest.importorskip("mlx_lm")
    from mlx_lm import load

    from calibration.tinymodels import build_mlx_model

    path = build_mlx_model(xc_hf, xc_root / "tiny-mlx-f32")
    model, tok = load(str(path))
    return model, tok


@pytest.mark.parametrize(("length", "step"), CASES)
def test_peak_memory_vs_planner(mlx_tiny, xc_hf, length, step):
    import mlx.core as mx
    from mlx_lm.generate import generate_step
    from mlx_lm.sample_utils import make_sampler

    model, _ = mlx_tiny
    prompt = mx.array([5 + (i % 900) for i in range(length)])
    mx.clear_cache()
    mx.reset_peak_memory()
    n = 0
    for _ in zip(range(GEN), generate_step(prompt, model, max_tokens=GEN, sampler=make_sampler(0.0),
                                           prefill_step_size=step)):
        n += 1
    assert n == GEN
    peak = mx.get_peak_memory()
    rt = P.load_runtime("mlx-lm").model_copy(
        update={"activation_bytes": 4, "fused_sdpa_head_dims": [], "prefill_step_size": step})
    mm = M.memory_model(tiny_profile(xc_hf), rt, P.load_quant("mlx-bf16", "mlx"), P.ggml_types())
    est = mm.estimate(length + GEN, 1)
    pred = est.total - est.runtime_overhead
    err = pred / peak - 1
    RESULTS.append((length, step, peak, pred, err))
    assert abs(err) <= TOL, (length, step, peak, pred)


def test_report():
    if not RESULTS:
        pytest.skip("no mlx results collected")
    worst = max(RESULTS, key=lambda r: abs(r[-1]))
    for r in RESULTS:
        print(f"\n{r[0]:6d} tokens, step {r[1]:5d}: mx.get_peak_memory {r[2] / 2**20:8.2f} MiB, "
              f"planner {r[3] / 2**20:8.2f} MiB ({r[4]:+.1%})", end="")
    print(f"\nmlx-lm peak memory: {len(RESULTS)} cases, worst error {worst[4]:+.1%} at {worst[0]} prompt tokens "
          f"in {worst[1]}-token chunks")
