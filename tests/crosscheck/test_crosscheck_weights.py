"""Weights: the planner's GGUF byte count for a tiny Llama equals the tensor-data size of the real file, for files
written by gguf-py (F32/F16) and by llama.cpp's own quantizer (every preset below, llama_tensor_get_type rules)."""

from __future__ import annotations

import shutil

import pytest

from planner import memory as M
from planner import profiles as P

from .conftest import tiny_profile

pytestmark = pytest.mark.requires_llama_cpp
PRESETS = ["Q8_0", "Q6_K", "Q5_K_M", "Q5_K_S", "Q5_0", "Q5_1", "Q4_K_M", "Q4_K_S", "Q4_0", "Q4_1", "Q3_K_L", "Q3_K_M",
           "Q3_K_S", "Q2_K", "IQ4_NL", "IQ4_XS"]


def _file_tensor_bytes(path) -> int:
    from gguf import GGUFReader

    return sum(int(t.n_bytes) for t in GGUFReader(str(path)).tensors)


def _planner_bytes(hf, quant: str) -> int:
    return M.gguf_weights(tiny_profile(hf), P.load_quant(quant, "gguf"), P.ggml_types()).total_bytes


@pytest.mark.parametrize("ftype", ["F32", "F16"])
def test_gguf_py_files(xc_gguf, xc_hf, ftype):
    assert _planner_bytes(xc_hf, ftype) == _file_tensor_bytes(xc_gguf[ftype])


@pytest.mark.parametrize("preset", PRESETS)
def test_llama_quantize_files(xc_root, xc_gguf, xc_hf, preset):
    if not shutil.which("llama-quantize"):
        from .conftest import llama_cpp_or_skip
        llama_cpp_or_skip()
    from calibration.tinymodels import quantize_gguf

    out = quantize_gguf(xc_gguf["F32"], xc_root / f"tiny-{preset}.gguf", preset)
    assert _planner_bytes(xc_hf, preset) == _file_tensor_bytes(out)
