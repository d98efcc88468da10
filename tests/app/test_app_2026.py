"""The web form answers for a 2026 hybrid model with its real cache layout: KV only on the full-attention layers and
the recurrent state per user, as the CLI does (issue: the models of 2026)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("plotly")

from streamlit.testing.v1 import AppTest  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")


def test_qwen36_on_an_m4_pro_names_an_option_and_its_hybrid_cache():
    from planner import architecture as arch
    from planner import profiles

    at = AppTest.from_file(APP, default_timeout=120).run()
    at.selectbox(key="model").set_value("qwen3.6-35b-a3b").run()
    at.selectbox(key="chip").set_value("M4 Pro").run()
    at.selectbox(key="cores_M4 Pro").set_value(20).run()
    at.selectbox(key="ram_M4 Pro_20").set_value(48).run()
    assert not at.exception and not at.error
    page = "\n".join([m.value for m in at.markdown] + [s.value for s in at.success] + [w.value for w in at.warning]
                     + [c.value for c in at.caption])
    assert "Qwen3.6 35B-A3B" in page
    # the layout the page plans: KV on the 10 full-attention layers only, a constant state on the 30 linear ones
    kinds = [c.kind for c in arch.cache_layers(profiles.load_model("qwen3.6-35b-a3b").config)]
    assert kinds.count("full") == 10 and kinds.count("linear") == 30
    assert "runs your chat assistant workload" in page and "mlx-lm or llama.cpp?" in page
    # the "Users x context" tab's KV table (readings.kv_rows of the page's plan): per token plus the state per user
    from app import readings
    from planner.plan import PlanRequest, plan

    p = plan(PlanRequest(model="qwen3.6-35b-a3b", chip="M4 Pro", gpu_cores=20, ram=48))
    rows = readings.kv_rows(p)
    assert rows and all("/seq state" in r["per token"] for r in rows), rows
