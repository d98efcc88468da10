"""Cross-checks against the real runtimes: tiny models built once per session (calibration.tinymodels, seed 0).

Needs the llama.cpp build of scripts/bootstrap.sh (.cache/llama-build/bin: libllama for llama-cpp-python and
llama-quantize) and mlx[cpu] + mlx-lm; CI installs both. Tests skip (never fail) when a runtime is missing.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

# PATH / LLAMA_CPP_LIB_PATH / HF_HUB_OFFLINE are set once in tests/conftest.py


def tiny_profile(hf_dir: Path, model_id: str = "tiny-llama"):
    """A planner ModelProfile for an HF folder written by calibration.tinymodels."""
    from planner.schema import ModelConfig, ModelProfile

    c = json.loads((Path(hf_dir) / "config.json").read_text())
    keys = set(ModelConfig.model_fields)
    cfg = ModelConfig(**{k: v for k, v in c.items() if k in keys and v is not None})
    return ModelProfile(id=model_id, name=model_id, params_b=1e-3, sources=["calibration.tinymodels"],
                        verified=dt.date.today(), config=cfg)


def llama_cpp_or_skip():
    try:
        import llama_cpp
    except (ImportError, OSError) as e:  # OSError/FileNotFoundError: bindings without libllama
        pytest.skip(f"llama-cpp-python unusable: {e}")
    return llama_cpp


@pytest.fixture(scope="session")
def xc_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("crosscheck")


def _build_hf(root: Path, name: str, **dims) -> Path:
    pytest.importorskip("tokenizers")
    pytest.importorskip("safetensors")
    from calibration.tinymodels import build_hf_llama

    return build_hf_llama(root / name, **dims)


@pytest.fixture(scope="session")
def xc_hf(xc_root) -> Path:
    """The standard tiny Llama: hidden 256, 4 layers, 4 heads / 2 kv, ffn 768, vocab 1024 (3.67 M params)."""
    return _build_hf(xc_root, "tiny-hf")


@pytest.fixture(scope="session")
def xc_hf_wide(xc_root) -> Path:
    """Same body with a real-model vocab/hidden ratio (8192/256 = 32, Llama-3: 128256/4096 = 31), so the logits
    term dominates the compute buffer as it does for real models."""
    return _build_hf(xc_root, "tiny-hf-wide", vocab=8192)


@pytest.fixture(scope="session")
def xc_gguf(xc_root, xc_hf, xc_hf_wide) -> dict[str, Path]:
    pytest.importorskip("gguf")
    from calibration.tinymodels import build_gguf

    out = {ft: build_gguf(xc_hf, xc_root / f"tiny-{ft}.gguf", ft) for ft in ("F32", "F16")}
    out["wide-F16"] = build_gguf(xc_hf_wide, xc_root / "tiny-wide-F16.gguf", "F16")
    return out
