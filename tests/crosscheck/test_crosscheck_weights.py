"""Weights: the planner's GGUF byte count for a tiny Llama equals the tensor-data size of the real file, for files
written by gguf-py (F32/F16) and by llama.cpp's own quantizer (every preset below, llama_tensor_get_type rules)."""

from __future__ import annotations

import shutil
import subprocess

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


# --------------------------------------------------------------------------- Phi-3 layout: fused attn_qkv
PHI3_PRESETS = ["Q4_K_M", "Q5_K_M", "Q4_K_S", "Q3_K_M", "Q3_K_L", "Q2_K", "Q6_K", "IQ4_XS"]


@pytest.fixture(scope="module")
def xc_phi3(xc_root, xc_hf):
    """The tiny Llama's weights in Phi-3's layout (attn_qkv, fused gate/up in ffn_up), written as a phi3 GGUF."""
    pytest.importorskip("gguf")
    from calibration.tinymodels import build_gguf

    prof = tiny_profile(xc_hf, "tiny-phi3")
    prof = prof.model_copy(update={"config": prof.config.model_copy(update={"model_type": "phi3"})})
    return build_gguf(xc_hf, xc_root / "tiny-phi3-F32.gguf", "F32", arch="phi3"), prof


def test_phi3_gguf_py_file(xc_phi3):
    path, prof = xc_phi3
    assert M.gguf_weights(prof, P.load_quant("F32", "gguf"), P.ggml_types()).total_bytes == _file_tensor_bytes(path)


@pytest.mark.parametrize("preset", PHI3_PRESETS)
def test_llama_quantize_fused_qkv_is_attn_v(xc_root, xc_phi3, preset):
    """llama-quantize gives blk.N.attn_qkv attn_v's rules and counter (src/llama-quant.cpp category_is_attn_v):
    the planner's bytes equal the real file's for every preset."""
    if not shutil.which("llama-quantize"):
        from .conftest import llama_cpp_or_skip
        llama_cpp_or_skip()
    from calibration.tinymodels import quantize_gguf

    path, prof = xc_phi3
    out = quantize_gguf(path, xc_root / f"tiny-phi3-{preset}.gguf", preset)
    assert M.gguf_weights(prof, P.load_quant(preset, "gguf"), P.ggml_types()).total_bytes == _file_tensor_bytes(out)


# --------------------------------------------------------------------------- tensors already in MXFP4 (gpt-oss)
@pytest.fixture(scope="module")
def xc_mxfp4(xc_root, xc_hf):
    """The tiny Llama converted as gpt-oss is: FFN weights already MXFP4, the rest F32."""
    pytest.importorskip("gguf")
    from calibration.tinymodels import build_gguf

    return build_gguf(xc_hf, xc_root / "tiny-mxfp4-ffn.gguf", "F32", ffn_type="MXFP4")


def _llama_quantize(*args) -> subprocess.CompletedProcess:
    exe = shutil.which("llama-quantize")
    if not exe:
        pytest.skip("llama-quantize not on PATH")
    return subprocess.run([exe, *map(str, args)], capture_output=True, text=True, check=False)


def test_llama_quantize_refuses_to_requantize_mxfp4(xc_root, xc_mxfp4):
    """src/llama-quant.cpp llama_model_quantize_impl: a quantized tensor whose target differs from its type is
    'requantizing from type mxfp4 is disabled' (no --allow-requantize): no preset turns the MXFP4 FFN into
    Q8_0 / Q4_K behind the user's back."""
    p = _llama_quantize(xc_mxfp4, xc_root / "tiny-mxfp4-Q8_0.gguf", "Q8_0")
    assert p.returncode != 0 and "requantizing from type mxfp4 is disabled" in (p.stdout + p.stderr)


@pytest.mark.parametrize("preset", ["Q8_0", "Q6_K", "Q4_K_M", "Q3_K_M"])
def test_mxfp4_ffn_kept_at_every_preset(xc_root, xc_hf, xc_mxfp4, preset):
    """The published gpt-oss presets keep the MXFP4 FFN (bartowski: 'Q6_K with all FFN kept at MXFP4_MOE'): with
    the FFN targeted at its own type, llama-quantize copies it (cur_type == new_type) and quantizes the rest by
    the preset. The planner's native_quant path gives the same bytes."""
    from planner.schema import NativeQuant

    out = xc_root / f"tiny-mxfp4-{preset}.gguf"
    p = _llama_quantize("--tensor-type", "ffn_=mxfp4", xc_mxfp4, out, preset)
    assert p.returncode == 0, (p.stdout + p.stderr)[-500:]
    prof = tiny_profile(xc_hf, "tiny-mxfp4")
    prof = prof.model_copy(update={"native_quant": NativeQuant(groups=["ffn"], gguf_type="MXFP4", source="test")})
    assert M.gguf_weights(prof, P.load_quant(preset, "gguf"), P.ggml_types()).total_bytes == _file_tensor_bytes(out)
