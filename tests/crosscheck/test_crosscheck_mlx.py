"""mlx-lm's own accounting vs the planner: a tiny float32 MLX model generates at several prompt lengths and
mx.get_peak_memory() (weights + KV + activations, excluding the free-buffer cache) is compared with the planner's
MLX prediction minus its fixed runtime overhead (Metal library/allocator slack is not an MLX array).

Runtime profile adjusted to what runs here: float32 activations/caches (activation_bytes 4) and no fused SDPA
kernel (the Linux CPU backend always takes the unfused fallback that materialises the H x S x L_kv scores; on a
Mac head_dim 64 is fused). Measured: within 1 % up to 64 tokens, planner low by 9-14 % from 512 to 2000 tokens
(the fallback's softmax/mask temporaries are not modelled). Tolerance 20 %.
"""

from __future__ import annotations

import pytest

from planner import memory as M
from planner import profiles as P

from .conftest import tiny_profile

pytestmark = pytest.mark.requires_mlx
LENGTHS = [16, 64, 512, 1024, 2000]
GEN = 8
TOL = 0.20
RESULTS: list[tuple[int, float, float, float]] = []


@pytest.fixture(scope="session")
def mlx_tiny(xc_root, xc_hf):
    pytest.importorskip("mlx.core")
    pytest.importorskip("mlx_lm")
    from mlx_lm import load

    from calibration.tinymodels import build_mlx_model

    path = build_mlx_model(xc_hf, xc_root / "tiny-mlx-f32")
    model, tok = load(str(path))
    return model, tok


@pytest.mark.parametrize("length", LENGTHS)
def test_peak_memory_vs_planner(mlx_tiny, xc_hf, length):
    import mlx.core as mx
    from mlx_lm import stream_generate
    from mlx_lm.sample_utils import make_sampler

    model, tok = mlx_tiny
    prompt = [5 + (i % 900) for i in range(length)]
    mx.clear_cache()
    mx.reset_peak_memory()
    n = 0
    for _ in stream_generate(model, tok, prompt, max_tokens=GEN, sampler=make_sampler(0.0)):
        n += 1
    assert n >= 1
    peak = mx.get_peak_memory()
    rt = P.load_runtime("mlx-lm").model_copy(update={"activation_bytes": 4, "fused_sdpa_head_dims": []})
    mm = M.memory_model(tiny_profile(xc_hf), rt, P.load_quant("mlx-bf16", "mlx"), P.ggml_types())
    est = mm.estimate(length + GEN, 1)
    pred = est.total - est.runtime_overhead
    err = pred / peak - 1
    RESULTS.append((length, peak, pred, err))
    assert abs(err) <= TOL, (length, peak, pred)


def test_report():
    if not RESULTS:
        pytest.skip("no mlx results collected")
    worst = max(RESULTS, key=lambda r: abs(r[-1]))
    print(f"\nmlx-lm peak memory: {len(RESULTS)} lengths, worst error {worst[3]:+.1%} at {worst[0]} prompt tokens "
          f"(mx.get_peak_memory {worst[1] / 2**20:.2f} MiB, planner {worst[2] / 2**20:.2f} MiB)")
