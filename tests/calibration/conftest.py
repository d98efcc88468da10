"""Session fixtures: tiny random-weight models built once (seed 0) into a temp folder.

The llama.cpp tools and HF_HUB_OFFLINE are set up for the whole suite in tests/conftest.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

# PATH / LLAMA_CPP_LIB_PATH / HF_HUB_OFFLINE are set once in tests/conftest.py


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tinymodels")


@pytest.fixture(scope="session")
def tiny_hf(tiny_root: Path) -> Path:
    pytest.importorskip("tokenizers")
    pytest.importorskip("safetensors")
    from calibration.tinymodels import build_hf_llama

    return build_hf_llama(tiny_root / "tiny-hf")


@pytest.fixture(scope="session")
def tiny_gguf(tiny_root: Path, tiny_hf: Path) -> dict[str, Path]:
    """F32 / F16 / Q8_0 / Q4_0 GGUFs written by gguf-py."""
    pytest.importorskip("gguf")
    from calibration.tinymodels import build_gguf

    return {ft: build_gguf(tiny_hf, tiny_root / f"tiny-{ft}.gguf", ft) for ft in ("F32", "F16", "Q8_0", "Q4_0")}


@pytest.fixture(scope="session")
def tiny_q4km(tiny_root: Path, tiny_gguf: dict[str, Path]) -> Path:
    """Q4_K_M quantized by llama.cpp itself."""
    if not shutil.which("llama-quantize"):
        pytest.importorskip("llama_cpp")
    from calibration.tinymodels import quantize_gguf

    return quantize_gguf(tiny_gguf["F32"], tiny_root / "tiny-Q4_K_M.gguf", "Q4_K_M")


@pytest.fixture(scope="session")
def tiny_mlx(tiny_root: Path, tiny_hf: Path) -> dict[str, Path]:
    """mlx-f32 and mlx-4bit-g64 folders (float32 activations: fast on the Linux CPU backend)."""
    pytest.importorskip("mlx.core")
    pytest.importorskip("mlx_lm")
    from calibration.tinymodels import build_mlx_model

    return {
        "mlx-f32": build_mlx_model(tiny_hf, tiny_root / "tiny-mlx-f32"),
        "mlx-4bit-g64": build_mlx_model(tiny_hf, tiny_root / "tiny-mlx-4bit-g64", q_bits=4),
    }


@pytest.fixture(scope="session")
def linux_device() -> dict:
    """A fixed device dict so runner tests don't spend time measuring bandwidth."""
    return {"os": "linux", "backend": "cpu", "chip": "test CPU", "chip_id": "custom", "cpu_cores_physical": 2,
            "ram_bytes": 8 * 2**30}


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    """An empty user profiles/calibration folder; profile caches cleared around the test."""
    from planner import profiles

    d = tmp_path / "user"
    monkeypatch.setenv("MAC_LLM_PLANNER_USER_PROFILES", str(d))
    profiles.clear_cache()
    yield d
    profiles.clear_cache()
