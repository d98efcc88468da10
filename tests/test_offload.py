"""llama.cpp partial offload (planner/offload.py): largest -ngl under the GPU limit and its decode."""

import pytest

from planner import capacity, profiles
from planner.offload import largest_ngl, layer_split, offload_decode
from planner.plan import PlanRequest, plan
from planner.search import base_memory_model
from planner.units import GiB


def test_70b_q8_on_64gb_offloads_52_layers():
    # Llama-3.3-70B Q8_0: 74.97 GB file = 69.8 GiB; token embedding and output 1.04 GiB each (128,256 × 8,192 at
    # 8.5 bits), so 80 repeating layers of (69.8 - 2.08) / 80 = 0.847 GiB; f16 KV at 8K is 2.5 GiB = 0.031 GiB per
    # layer. GPU budget: 48 GiB limit - 1 GiB margin = 47 GiB, minus ~0.53 GiB of buffers (compute 0.27 + Metal 0.25
    # + logits): (47 - 0.53) / (0.847 + 0.031) = 52.9 -> -ngl 52.
    mm = base_memory_model("llama-3.3-70b", "llama.cpp", "Q8_0")
    wired = capacity.wired_limit(64, profiles.load_macos("15"))
    assert largest_ngl(mm, 8192, 1, wired) == 52
    gpu, cpu = layer_split(mm, 8192, 1, 52)
    assert gpu <= 47 * GiB < layer_split(mm, 8192, 1, 53)[0]
    # everything but the 52 layers: 28 layers (28 × 0.878 = 24.6 GiB) + embedding + output (2.08 GiB) = 26.7 GiB
    assert cpu / GiB == pytest.approx(26.7, abs=0.1)


def test_ngl_above_n_layer_moves_the_output_layer():
    mm = base_memory_model("llama-3.3-70b", "llama.cpp", "Q8_0")
    out = mm.weights.by_group["output"]
    g80, _ = layer_split(mm, 4096, 1, 80)
    g81, _ = layer_split(mm, 4096, 1, 81)
    assert g81 - g80 == out


def test_offload_decode_by_hand():
    # 80 layers, 1 GiB output on the CPU (ngl 40 <= 80), 81 GiB read per token, 5 tok/s all on GPU, CPU 200 GB/s:
    # CPU reads (81 - 1) × 40/80 + 1 = 41 GiB, GPU 40 GiB; t = (40/81)/5 + 41 × 2^30 / 200e9 = 0.098765 + 0.220117
    # = 0.318882 s -> 3.1359 tok/s
    mm = base_memory_model("llama-3.3-70b", "llama.cpp", "Q8_0")
    one_gib_out = mm.weights.by_group["output"]
    tok_s = offload_decode(_with_output(mm, GiB), 40, 5.0, 81 * GiB, 200e9)
    assert tok_s == pytest.approx(3.1359, rel=1e-3)
    assert one_gib_out > 0


def _with_output(mm, out_bytes):
    import dataclasses

    w = mm.weights.model_copy(update={"by_group": {**mm.weights.by_group, "output": out_bytes}})
    return dataclasses.replace(mm, weights=w)


def test_plan_marks_offload_slower_and_not_recommended_when_a_smaller_quant_fits():
    p = plan(PlanRequest(model="llama-3.3-70b", chip="M3 Max", gpu_cores=40, ram=64, runtimes=["llama.cpp"],
                         quants=["Q4_K_M", "Q5_K_M"], macos="15"))
    q6 = next(o for o in p.options if o.quant == "Q5_K_M")
    assert q6.fit.verdict == "raise-limit" and q6.offload is not None and q6.offload.fits_in_ram
    assert not q6.offload.recommended and "Q4_K_M fits whole" in q6.offload.reason
    assert q6.offload.decode_tok_s < q6.offload.full_gpu_decode_tok_s
    # M3 Max 400 GB/s × 0.593 (CPU share measured on M1 Max) × 0.43 (llama.cpp CPU decode efficiency) = 102 GB/s
    assert q6.offload.cpu_bandwidth_bytes_s == pytest.approx(400e9 * 0.593 * 0.43)
    assert next(o for o in p.options if o.quant == "Q4_K_M").offload is None


def test_offload_without_raising_the_limit_when_nothing_smaller_fits():
    # Q5_K_M needs 49.5 GiB: over the 48 GiB default limit, inside the 56 GiB we would raise it to
    p = plan(PlanRequest(model="llama-3.3-70b", ram=64, runtimes=["llama.cpp"], quants=["Q5_K_M"], macos="15"))
    off = p.options[0].offload
    assert off.recommended and off.fits_in_ram and off.decode_tok_s is None  # no chip: memory only
    assert off.gpu_bytes <= 47 * GiB and "iogpu.wired_limit_mb" in off.reason


def test_offload_that_would_swap_is_not_recommended():
    # Q6_K: 56.9 GiB in all, more than the 56 GiB macOS can spare on 64 GB (8 GiB kept)
    p = plan(PlanRequest(model="llama-3.3-70b", ram=64, runtimes=["llama.cpp"], quants=["Q6_K"]))
    off = p.options[0].offload
    assert not off.fits_in_ram and not off.recommended and "swap" in off.reason


def test_cpu_decode_efficiency_is_derived_from_its_source():
    # profiles/hardware/cpu-memory.yaml: Mistral 7B Q8_0 at 27 tok/s on the M2 Ultra CPU (7.70 GB file less the
    # 0.14 GB embedding read one row at a time) over 0.593 × 800 GB/s
    cm = profiles.cpu_memory()
    assert cm.decode_efficiency == pytest.approx(27 * 7.56e9 / (cm.fraction_of_vendor_bandwidth * 800e9), abs=0.005)


def test_offload_decode_never_beats_the_cpu_free_rate():
    # a CPU far faster than the GPU (1 TB/s against 10 GiB × 5 tok/s = 53.7 GB/s) still reads at most at the GPU's
    # rate: partial offload can tie all-on-GPU, never beat it
    mm = base_memory_model("llama-3.3-70b", "llama.cpp", "Q8_0")
    assert offload_decode(mm, 40, 5.0, 10 * GiB, 1e12) == pytest.approx(5.0)


@pytest.mark.parametrize(("model", "chip", "ram"), [("qwen3-30b-a3b", "M4", 16), ("gpt-oss-120b", "M4 Max", 64),
                                                     ("llama-3.3-70b", "M3 Max", 64), ("qwen3-30b-a3b", "M2", 8)])
def test_partial_offload_is_slower_than_all_on_gpu(model, chip, ram):
    # issue 35: "slower; decode ≈ 67.3 tok/s (all on GPU would be 63.2)" — every layer moved to the CPU costs time
    p = plan(PlanRequest(model=model, chip=chip, ram=ram, runtimes=["llama.cpp"]))
    offloads = [o.offload for o in p.options if o.offload is not None and o.offload.decode_tok_s]
    assert offloads
    for off in offloads:
        assert off.decode_tok_s < off.full_gpu_decode_tok_s
