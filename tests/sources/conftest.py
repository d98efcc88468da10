import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

FIX = HERE / "fixtures" / "hub"


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """A FakeHub on localhost with HF_ENDPOINT pointing at it and every cache in tmp_path."""
    from fakehub import FakeHub

    h = FakeHub()
    monkeypatch.setenv("HF_ENDPOINT", h.url)
    monkeypatch.setenv("MAC_LLM_PLANNER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    for k in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(k, raising=False)
    # huggingface_hub freezes HF_HUB_OFFLINE at import; other suites (calibration, crosscheck) import it offline.
    # Reset the client's own flag the way a fresh process without the variable would have it.
    import huggingface_hub.constants as hfc

    monkeypatch.setattr(hfc, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1")
    yield h
    h.close()


from fakehub import fixture_config  # noqa: E402,F401  (re-exported; tests import it from fakehub)


def fixture_json(repo: str) -> dict:
    return json.loads(fixture_config(repo))
