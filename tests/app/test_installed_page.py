"""The app's "What is installed?" page (app/installed_page.py) over a fixture tree: the same models, bytes and verdicts
as `plan models --installed --json` (cli/installed.py) for the same Mac."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("gguf")
from streamlit.testing.v1 import AppTest  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sources"))
from test_installed import ollama_tree, tiny_mlx  # noqa: E402

from app.installed_page import PAGE_TITLE, table_rows  # noqa: E402
from cli.installed import installed  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")


@pytest.fixture
def tree(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for k in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "LLAMA_CACHE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "om"))
    ollama_tree(tmp_path / "om", tmp_path)
    tiny_mlx(tmp_path / "mine" / "Tiny-4bit")
    return tmp_path


def test_page_lists_what_the_cli_lists(tree):
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.radio(key="page").set_value(PAGE_TITLE).run()
    at.selectbox(key="in_chip").set_value("M4").run()
    at.selectbox(key="in_cores_M4").set_value(10).run()
    at.selectbox(key="in_ram_M4_10").set_value(16).run()
    at.text_input(key="in_dirs").set_value(str(tree / "mine")).run()
    assert not at.exception and not at.error
    df = at.dataframe[0].value
    want = installed([str(tree / "mine")], ram=16.0, chip="M4", gpu_cores=10, context=8192, users=1, macos="15")
    rows = table_rows(want)
    assert list(df["model"]) == [r["model"] for r in rows] == ["tiny:latest", "Tiny-4bit"]
    assert list(df["bytes"]) == [f"{m.bytes:,}" for m in want.models]
    assert list(df["fit"]) == ["fits", "fits"]
    assert list(df["run"])[0] == "ollama run tiny:latest"
