"""Golden values for planner.memory, each derived by hand (comments) or measured by llama.cpp itself.

Measured references: docs/model-facts.md §2.3 (llama_quant_compute_types), §3.3 (KV of
metadata-only GGUFs loaded with no_alloc), §4.1 (compute buffers from the ggml-alloc reserve). Those numbers are
pinned here so the tests need no llama.cpp build.
"""

from __future__ import annotations

import pytest

from planner import memory as M
from planner import profiles as P
from planner.errors import InputError
from planner.units import GB, GiB, MiB

TABLE = P.ggml_types()


def mm(model: str, runtime: str = "llama.cpp", quant: str = "Q4_K_M", **kw) -> M.MemoryModel:
    return M.memory_model(P.load_model(model), P.load_runtime(runtime), P.load_quant(quant), TABLE, **kw)


def rt_with(runtime: str, **update):
    return P.load_runtime(runtime).model_copy(update=update)


# --------------------------------------------------------------------------- weights
def test_llama33_70b_q4_k_m_weights():
    # docs/model-facts.md §2.3: llama_quant_compute_types says 39.59 GiB = 42.51 GB (4.82 bpw); published files 42.52 GB
    w = mm("llama-3.3-70b").weights
    assert w.total_bytes / GB == pytest.approx(42.52, rel=0.01)
    assert w.total_bytes / GiB == pytest.approx(39.59, rel=1e-3)
    assert w.bits_per_weight == pytest.approx(4.82, abs=0.01)


def test_llama33_70b_mlx_4bit_g64_weights():
    # every 2-D weight incl. embedding and head: 70.55e9 x (4 + 32/64)/8 = 39.69e9 B; published mlx-community 39.7 GB
    w = mm("llama-3.3-70b", "mlx-lm", "mlx-4bit-g64").weights
    assert w.total_bytes / GB == pytest.approx(39.7, rel=0.01)
    assert w.bits_per_weight == pytest.approx(4.5, abs=0.01)


def test_llama31_8b_q4_k_m_is_4_58_gib():
    # docs/model-facts.md §2.3 [measured] 4.58 GiB / 4.89 bpw, same as the published 4.58 GiB GGUF
    w = mm("llama-3.1-8b").weights
    assert w.total_bytes / GiB == pytest.approx(4.58, rel=0.005)
    assert w.bits_per_weight == pytest.approx(4.89, abs=0.01)


@pytest.mark.parametrize("quant, gib", [("Q8_0", 7.95), ("Q6_K", 6.14), ("Q5_K_M", 5.33), ("Q4_0", 4.33),
                                        ("IQ4_XS", 4.17), ("Q3_K_M", 3.74), ("Q2_K", 2.95)])
def test_llama31_8b_presets_match_llama_quant(quant, gib):
    # docs/model-facts.md §2.3 column Llama-3.1-8B (rounded to 0.01 GiB -> tolerance 0.5%)
    assert mm("llama-3.1-8b", quant=quant).weights.total_bytes / GiB == pytest.approx(gib, rel=0.005)


def test_llama33_70b_q4_0_is_37_22_gib():
    # docs/model-facts.md §0.2: identical to a real llama.cpp log "model size = 37.22 GiB"
    assert mm("llama-3.3-70b", quant="Q4_0").weights.total_bytes / GiB == pytest.approx(37.22, rel=1e-3)


def test_f16_weights_are_two_bytes_per_param_plus_f32_norms():
    # F16: every quantizable tensor 2 B/elem, norms F32 4 B/elem -> exact integer
    model = P.load_model("llama-3.1-8b")
    from planner import architecture as arch
    ts = arch.tensors(model.config)
    expect = sum(t.n_elements * (4 if (t.group == "norm" or not t.quantizable) else 2) for t in ts)
    assert mm("llama-3.1-8b", quant="F16").weights.total_bytes == expect


# --------------------------------------------------------------------------- KV
def test_llama33_70b_f16_kv_is_327680_bytes_per_token():
    # 2 (K,V) x 80 layers x 8 kv heads x 128 head_dim x 2 B = 327,680 B/token
    assert mm("llama-3.3-70b").kv.bytes_per_token == 2 * 80 * 8 * 128 * 2 == 327_680
    assert mm("llama-3.3-70b", "mlx-lm", "mlx-4bit-g64").kv.bytes_per_token == 327_680


def test_llama33_70b_kv_at_8k_is_exactly_2_5_gib():
    # 8192 cells (already a multiple of 256) x 327,680 B = 2,684,354,560 B = 2.5 GiB
    assert mm("llama-3.3-70b").estimate(8192, 1).kv_cache == 8192 * 327_680 == int(2.5 * GiB)


def test_deepseek_v3_mla_kv_70272_bytes_per_token():
    # MLA caches the latent (512) + rope key (64) = 576 elements, no V; 61 layers x 576 x 2 B = 70,272
    assert mm("deepseek-v3").kv.bytes_per_token == 61 * 576 * 2 == 70_272
    assert mm("deepseek-v3", "mlx-lm", "mlx-4bit-g64").kv.bytes_per_token == 70_272


def test_gemma3_27b_swa_default_vs_full():
    # docs/model-facts.md §3.3 [measured, ub 512]: default iSWA 8k 1264 MiB, 32k 3184 MiB, 128k 10864 MiB; --swa-full 32k 15872 MiB
    # by hand at 32k: 10 global layers x 32768 cells x 8192 B (16 kv x 128 x 2 x 2 B) = 2560 MiB
    #               + 52 local layers x PAD(1024 + 512, 256) = 1536 cells x 8192 B = 624 MiB -> 3184 MiB (error 0)
    m = mm("gemma-3-27b")
    got = {c: m.estimate(c, 1).kv_cache / MiB for c in (8192, 32768, 131072)}
    assert got == {8192: 1264.0, 32768: 3184.0, 131072: 10864.0}
    full = M.memory_model(P.load_model("gemma-3-27b"), rt_with("llama.cpp", swa_full=True), P.load_quant("Q4_K_M"), TABLE)
    assert full.estimate(32768, 1).kv_cache / MiB == 15872.0  # 62 layers x 32768 x 8192 B
    assert got[32768] < full.estimate(32768, 1).kv_cache / 4


def test_gemma3_27b_parallel_streams():
    # [measured] -np 4 at 32k total: non-unified 5056 MiB, unified 4432 MiB
    assert mm("gemma-3-27b").estimate(8192, 4).kv_cache / MiB == 5056.0
    assert mm("gemma-3-27b", kv_unified=True).estimate(8192, 4).kv_cache / MiB == 4432.0


def test_gpt_oss_20b_kv_matches_measured():
    # [measured] 8k 210 MiB, 32k 786 MiB, 128k 3090 MiB. By hand at 8k: 12 full layers x 8 kv x 64 x 2 x 2 B = 24,576 B/tok
    # x 8192 = 192 MiB; 12 SWA layers x PAD(128 + 512, 256) = 768 cells x 24,576 B = 18 MiB -> 210 MiB
    m = mm("gpt-oss-20b", quant="MXFP4_MOE")
    assert [m.estimate(c, 1).kv_cache / MiB for c in (8192, 32768, 131072)] == [210.0, 786.0, 3090.0]


def test_qwen3_next_state_per_sequence():
    # 36 linear layers x ((4-1) x (4096 + 2 x 2048) + 128 x 4096) x 4 B = 79,036,416 B = 75.375 MiB (llama.cpp, f32)
    m = mm("qwen3-next-80b-a3b")
    assert m.kv.state_bytes_per_seq == 36 * (3 * 8192 + 128 * 4096) * 4 == 79_036_416
    assert m.estimate(8192, 3).recurrent_state == 3 * 79_036_416
    # mlx-lm ArraysCache: conv (3 x 8192) bf16 + recurrent 32 x 128 x 128 f32 per layer -> 73.69 MiB
    x = mm("qwen3-next-80b-a3b", "mlx-lm", "mlx-4bit-g64")
    assert x.kv.state_bytes_per_seq == 36 * (3 * 8192 * 2 + 32 * 128 * 128 * 4)
    assert x.kv.state_bytes_per_seq / MiB == pytest.approx(73.7, abs=0.05)
    # full-attention KV: 12 layers x 2 kv x 256 x 2 x 2 B = 24 KiB/token
    assert m.kv.bytes_per_token == 24_576


@pytest.mark.parametrize("kv, bpt", [("q8_0", 327_680 * 8.5 / 16), ("q4_0", 327_680 * 4.5 / 16), ("f32", 655_360)])
def test_llama_cpp_quantized_kv_bytes(kv, bpt):
    # ggml_row_size: q8_0 34 B / 32, q4_0 18 B / 32, f32 4 B
    assert mm("llama-3.3-70b", kv_type=kv).kv.bytes_per_token == bpt


@pytest.mark.parametrize("kv, bits", [("kv8", 8.5), ("kv4", 4.5)])
def test_mlx_quantized_kv_bytes(kv, bits):
    # QuantizedKVCache: bits + 2 x 16-bit (scale, bias) per group of 64 = bits + 0.5
    assert mm("llama-3.3-70b", "mlx-lm", "mlx-4bit-g64", kv_type=kv).kv.bytes_per_token == 327_680 * bits / 16


def test_llama_cpp_padding_and_streams():
    # docs/model-facts.md §3.2 [measured] Llama-3.1-8B: -c 5000 -> 5120 cells = 640 MiB; -c 5000 -np 3 non-unified ->
    # 3 x PAD(5120/3, 256) = 3 x 1792 = 5376 cells = 672 MiB. Our -c is context x users (per-slot context).
    m = mm("llama-3.1-8b")
    e = m.estimate(5000, 1)
    assert (e.kv_cells, e.kv_cache / MiB) == (5120, 640.0)
    e3 = m.estimate(1667, 3)  # -c 5001 -> PAD 5120; per stream PAD(1706, 256) = 1792
    assert (e3.kv_cells, e3.kv_cache / MiB) == (5376, 672.0)


def test_mlx_kv_grows_in_256_steps():
    m = mm("llama-3.1-8b", "mlx-lm", "mlx-4bit-g64")
    assert m.estimate(1, 1).kv_cache == 256 * 131_072
    assert m.estimate(257, 2).kv_cache == 2 * 512 * 131_072


# --------------------------------------------------------------------------- mlx-lm prefill peak (planner.engines.mlxlm MlxLm.activations)
def test_mlx_prefill_peak_fused_attention():
    # Llama-3.1-8B (h 4096, ffn 14336, 32 layers, 8 KV heads x 128, vocab 128256), head_dim 128: fused kernel, no
    # scores. Last 2048-token chunk at L = 32768:
    #   MLP phase    2048 x (2 x 4096 + 3 x 14336) x 2 B           = 209,715,200
    #   cache growth one layer's old K/V: 131072 / 32 x (32768 - 2048) = 125,829,120
    #   logits       128256 x 4 B                                   =     513,024
    e = mm("llama-3.1-8b", "mlx-lm", "mlx-4bit-g64").estimate(32768)
    assert e.compute_buffer == 209_715_200 + 125_829_120 + 513_024


def test_mlx_prefill_peak_unfused_mla_scores():
    # DeepSeek-V3 in mlx-lm (MLA: unfused): h 7168, widest FFN 18432 (dense layers = 8 x 2048 + 2048 shared),
    # 128 heads, 61 layers, KV 70272 B/token, vocab 129280. At L = 16384, S = 2048:
    #   MLP phase      2048 x (2 x 7168 + 3 x 18432) x 2               =    285,212,672
    #   scores         2 (pe_scores + fallback scores) x 128 x 2048 x 16384 x 2 = 17,179,869,184
    #   causal mask    2048 x 16384 x 1 B                              =     33,554,432
    #   cache growth   70272 x (16384 - 2048) / 61                     =     16,515,072
    #   logits         129280 x 4                                      =        517,120
    e = mm("deepseek-v3", "mlx-lm", "mlx-4bit-g64").estimate(16384)
    assert e.compute_buffer == 285_212_672 + 17_179_869_184 + 33_554_432 + 16_515_072 + 517_120


def test_mlx_prefill_peak_vs_published_mlx_lm_runs():
    # calibration/data/measured_benchmarks_train.csv, mx.get_peak_memory() printed by mlx_lm.generate:
    # rows 333 (Mistral-7B 4-bit, 33898-token prompt, M2 Ultra, after mlx-lm PR #40: 9.111 GB) and 356/359/362
    # (DeepSeek-V3 4-bit, prompts 4096/8192/16384: 383.213/388.343/398.605 GB). Within 2 % each; the growth of
    # the DeepSeek peak with the prompt (scores grow with S x L) within 15 % (it was 53 % low without the scores
    # of MLA's pe_scores and the grown cache).
    m7 = mm("mistral-7b", "mlx-lm", "mlx-4bit-g64")
    assert m7.total(33898) / GB == pytest.approx(9.111, rel=0.02)
    ds = mm("deepseek-v3", "mlx-lm", "mlx-4bit-g64")
    measured = {4096: 383.213, 8192: 388.343, 16384: 398.605}
    for n, gb in measured.items():
        assert ds.total(n) / GB == pytest.approx(gb, rel=0.02)
    assert (ds.total(16384) - ds.total(8192)) / GB == pytest.approx(398.605 - 388.343, rel=0.15)


def test_ffn_width_is_the_widest_layer():
    # dense: intermediate_size. Qwen3-30B-A3B (every layer MoE): 8 active x 768 = 6144. DeepSeek-V3: the 3 dense
    # layers (18432) and the MoE layers (8 x 2048 + 1 shared x 2048 = 18432) tie. Llama 4 Maverick: MoE layers
    # 1 x 8192 + 8192 shared = 16384, dense layers intermediate_size_mlp 16384.
    assert P.load_model("llama-3.1-8b").config.ffn_width == 14336
    assert P.load_model("qwen3-30b-a3b").config.ffn_width == 6144
    assert P.load_model("deepseek-v3").config.ffn_width == 18432
    assert P.load_model("llama-4-maverick").config.ffn_width == 16384


# --------------------------------------------------------------------------- compute buffer (docs/model-facts.md §4.1 measured)
# Planner formula (profiles/runtimes/llama.cpp.yaml): FA on ub x (4 n_vocab + 8 n_embd); FA off adds the f32 KQ
# matrix ub x 4 x n_kv x (n_head + 1) (+ 22 n_embd). Measured on llama.cpp's CPU allocator; tolerance 8 %:
# the worst case is gpt-oss-20b at 8k (435.3 measured vs 404.0 ours, -7.2 %; llama.cpp reserves a slightly
# larger graph for the 8k SWA view), all other cells are within 1.5 %.
COMPUTE_MEASURED = [
    # model, quant, n_ctx, flash_attn, ubatch, measured MiB
    ("llama-3.1-8b", "Q4_K_M", 4096, True, 512, 266.5),
    ("llama-3.1-8b", "Q4_K_M", 131072, True, 2048, 1066.0),
    ("llama-3.1-8b", "Q4_K_M", 4096, False, 512, 308.0),
    ("llama-3.1-8b", "Q4_K_M", 8192, False, 512, 572.0),
    ("llama-3.1-8b", "Q4_K_M", 32768, False, 512, 2156.0),
    ("llama-3.1-8b", "Q4_K_M", 131072, False, 512, 8492.0),
    ("llama-3.1-8b", "Q4_K_M", 4096, False, 2048, 1232.0),
    ("llama-3.1-8b", "Q4_K_M", 131072, False, 2048, 33968.0),
    ("qwen3-30b-a3b", "Q4_K_M", 32768, True, 512, 304.8),
    ("qwen3-30b-a3b", "Q4_K_M", 32768, True, 2048, 1219.0),
    ("qwen3-30b-a3b", "Q4_K_M", 32768, False, 512, 2142.0),
    ("gemma-3-27b", "Q4_K_M", 32768, True, 512, 533.1),
    ("gemma-3-27b", "Q4_K_M", 32768, True, 2048, 2132.5),
    ("gemma-3-27b", "Q4_K_M", 32768, False, 512, 2178.5),
    ("gpt-oss-20b", "MXFP4_MOE", 32768, True, 512, 409.6),
    ("gpt-oss-20b", "MXFP4_MOE", 8192, True, 512, 435.3),
    ("gpt-oss-20b", "MXFP4_MOE", 32768, True, 2048, 1638.5),
    ("gpt-oss-20b", "MXFP4_MOE", 32768, False, 512, 4198.4),
]
COMPUTE_TOL = 0.08


@pytest.mark.parametrize("model, quant, n_ctx, fa, ub, measured", COMPUTE_MEASURED)
def test_compute_buffer_vs_llama_cpp_measured(model, quant, n_ctx, fa, ub, measured):
    got = mm(model, quant=quant, flash_attn=fa, n_ubatch=ub).estimate(n_ctx, 1).compute_buffer / MiB
    assert got == pytest.approx(measured, rel=COMPUTE_TOL)


def test_compute_buffer_worst_error_is_what_the_docs_say():
    errs = [abs(mm(m, quant=q, flash_attn=fa, n_ubatch=ub).estimate(c, 1).compute_buffer / MiB / meas - 1)
            for m, q, c, fa, ub, meas in COMPUTE_MEASURED]
    assert max(errs) < 0.075  # docs/invariants.md reports 7.2 % (gpt-oss-20b 8k FA)
    assert sorted(errs)[-2] < 0.015


def test_llama31_8b_fa_compute_by_hand():
    # 512 x (4 x 128,256 + 8 x 4096) = 512 x 545,792 = 279,445,504 B = 266.5 MiB exactly
    assert mm("llama-3.1-8b").estimate(8192).compute_buffer == 512 * (4 * 128_256 + 8 * 4096)


def test_output_buffer_per_sequence():
    # llama_context::output_reserve: n_vocab floats per sequence
    assert mm("llama-3.1-8b").estimate(4096, 7).output_buffer == 7 * 128_256 * 4


# --------------------------------------------------------------------------- errors
def test_kv_type_not_offered():
    with pytest.raises(InputError, match="kv_type"):
        mm("llama-3.1-8b", kv_type="q2_k")


def test_quantized_kv_needs_flash_attn():
    with pytest.raises(InputError, match="flash"):
        mm("llama-3.1-8b", kv_type="q4_0", flash_attn=False)


def test_mlx_cannot_quantize_rotating_cache():
    with pytest.raises(InputError, match="RotatingKVCache"):
        mm("gemma-3-27b", "mlx-lm", "mlx-4bit-g64", kv_type="kv8")


def test_gguf_quant_on_mlx_runtime_is_an_input_error():
    with pytest.raises(InputError, match="gguf"):
        M.memory_model(P.load_model("llama-3.1-8b"), P.load_runtime("mlx-lm"), P.load_quant("Q4_K_M"), TABLE)


@pytest.mark.parametrize("ctx, users", [(0, 1), (-1, 1), (8192, 0), (8192, -3)])
def test_estimate_rejects_non_positive(ctx, users):
    with pytest.raises(InputError):
        mm("llama-3.1-8b").estimate(ctx, users)


def test_a_shared_memory_model_remembers_a_bounded_number_of_totals():
    # memory_model hands one instance to every caller of a long-lived process (the MCP and HTTP servers, the app):
    # the totals it remembers stay under TOTALS_KEPT however many points are asked, and stay right
    a = mm("llama-3.2-3b")
    asked = range(1, M.TOTALS_KEPT + 600)
    got = [a.total(c * 16, 1) for c in asked]
    assert len(a._totals) <= M.TOTALS_KEPT
    assert got[::997] == [a.estimate(c * 16, 1).total for c in asked[::997]]


def test_memory_model_is_one_instance_per_profiles_and_settings():
    # a plan and its bottom line's search share one MemoryModel (and the totals it remembers); other settings,
    # or another profile object with the same values, get their own
    a = mm("llama-3.1-8b")
    assert mm("llama-3.1-8b") is a
    assert mm("llama-3.1-8b", kv_type="f16") is a  # the runtime's default KV type, named
    assert mm("llama-3.1-8b", kv_type="q8_0") is not a
    assert mm("llama-3.1-8b", n_ubatch=256) is not a
    assert mm("llama-3.1-8b", flash_attn=False) is not a
    rt = rt_with("llama.cpp", ctx_pad=256)
    b = M.memory_model(P.load_model("llama-3.1-8b"), rt, P.load_quant("Q4_K_M"), TABLE)
    assert b is not a and b == a
