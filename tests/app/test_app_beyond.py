"""The app shows the streamed-from-SSD verdict of a model larger than RAM, and the energy of a serve setup."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("plotly")

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")


def test_a_moe_larger_than_ram_is_streamed_from_the_ssd():
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.selectbox(key="model").set_value("qwen3-235b-a22b").run()
    at.selectbox(key="chip").set_value("M4 Max").run()
    at.selectbox(key="cores_M4 Max").set_value(40).run()
    at.selectbox(key="ram_M4 Max_40").set_value(64).run()
    assert not at.exception
    texts = [i.value for i in at.info]
    if not any("streamed from SSD" in t for t in texts):       # the chosen option may be an MLX one: pick llama.cpp
        sb = next(s for s in at.selectbox if s.label.startswith("Option shown"))
        sb.set_value(next(o for o in sb.options if o.startswith("llama.cpp"))).run()
        texts = [i.value for i in at.info]
    assert any("streamed from SSD" in t and "reads only" in t for t in texts)


def test_serve_view_gives_the_daily_energy():
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.selectbox(key="model").set_value("qwen3-30b-a3b").run()
    at.radio(key="mac_mode").set_value("Serve a team").run()
    assert not at.exception and not at.error
    assert any("kWh/day" in c.value for c in at.caption)
