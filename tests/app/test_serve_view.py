"""The app's "Serve a team" view (plan serve), headless via streamlit.testing, and its chart."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("plotly")

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")


def test_serve_view_draws_the_latency_curve_and_recommends_slots():
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.selectbox(key="model").set_value("qwen3-30b-a3b").run()
    at.radio(key="mac_mode").set_value("Serve a team").run()
    assert not at.exception and not at.error
    assert [c.key for c in at.get("plotly_chart")] == ["chart_serve"]
    labels = [m.label for m in at.metric]
    assert "TTFT p50 / p95" in labels and "Recommended slots" in labels
    at.number_input(key="serve_rate").set_value(600.0).run()     # far past saturation
    assert not at.exception and not at.error
    sat = next(m for m in at.metric if m.label == "Saturation")
    assert "overloaded" in str(sat.delta)


def test_serve_view_simulates_one_kv_stream_when_asked():
    """The --kv-unified toggle reaches the simulation: the per-user figures are plan serve's for the same settings
    with and without one KV stream, and the caption says which one is shown."""
    from planner.format import fmt_seconds
    from planner.serve_plan import ServeRequest, serve, setup

    at = AppTest.from_file(APP, default_timeout=120).run()
    at.selectbox(key="model").set_value("qwen3-30b-a3b").run()
    at.radio(key="mac_mode").set_value("Serve a team").run()
    at.number_input(key="serve_slots").set_value(4).run()
    at.number_input(key="serve_rate").set_value(12.0).run()
    chip = at.selectbox(key="chip").value
    cores = at.selectbox(key=f"cores_{chip}").value
    ram = float(at.selectbox(key=f"ram_{chip}_{cores}").value)
    slots = int(at.number_input(key="serve_slots").value)
    wl = at.session_state["_wl"]
    shown = {}
    for unified in (False, True):
        at.checkbox(key="serve_kv_unified").set_value(unified).run()
        assert not at.exception and not at.error
        captions = " ".join(c.value for c in at.caption)
        assert ("one unified KV stream" if unified else "a KV stream per slot") in captions
        shown[unified] = {m.label: m.value for m in at.metric}
    s = setup(chip, cores, ram, "qwen3-30b-a3b", None, "llama.cpp")
    for unified in (False, True):
        r = serve(s, ServeRequest(slots=slots, rate=0.2, prompt=wl.prompt_tokens, gen=wl.gen_tokens,
                                  duration=3600.0, kv_unified=unified,
                                  cached_prefix_share=wl.cached_prefix_share))   # the workload's, as every view
        assert shown[unified]["TTFT p50 / p95"] == f"{fmt_seconds(r.ttft_s.p50)} / {fmt_seconds(r.ttft_s.p95)}"
        ttft = next(m for m in at.metric if m.label == "TTFT p50 / p95") if unified else None
        if ttft is not None:   # the last run shown is the unified one
            assert ttft.delta == f"p50 likely {fmt_seconds(r.ttft_s_fast.p50)}–{fmt_seconds(r.ttft_s_slow.p50)}"
        assert shown[unified]["Per user (median / slowest 5 %)"] == \
            f"{r.decode_tok_s_p50:.0f} / {r.decode_tok_s_p5:.0f} tok/s"
    assert shown[False] != shown[True]   # 4 slots share batches: the per-slot split costs weight passes


def test_serve_curve_chart_marks_saturation_and_the_target():
    from app import charts
    from planner.serve_plan import ServeRequest, serve, setup
    from planner.workload import Length

    r = serve(setup("M4 Max", 40, 128, "qwen3-30b-a3b", None, "llama.cpp"),
              ServeRequest(slots=4, rate=0.05, prompt=Length(p50=500, p90=1500), gen=Length(p50=100, p90=300),
                           duration=600.0, max_ttft_p95=5.0, sweep=False, cached_prefix_share=0.0))
    fig = charts.serve_curve(r)
    assert [t.name for t in fig.data] == ["TTFT p95", "TTFT p50"]
    assert list(fig.data[0].x) == pytest.approx([p.rate_per_s * 60 for p in r.curve])
    xs = [s.x0 for s in fig.layout.shapes if s.x0 is not None]
    assert any(x == pytest.approx(r.saturation_rate_per_s * 60) for x in xs)
    assert any(s.y0 == 5.0 for s in fig.layout.shapes)
    band = [s for s in fig.layout.shapes if s.type == "rect"]          # the saturation rate's likely range
    assert len(band) == 1 and (band[0].x0, band[0].x1) == pytest.approx(
        (r.saturation_slow_per_s * 60, r.saturation_fast_per_s * 60))


def test_serve_view_starts_at_plan_serves_default_question():
    """Issue 32, one answer everywhere: with nothing changed the serve view asks `plan serve`'s default question,
    the default workload of planner/points.py (its lengths, its prompt-cache share and its rate, one user reading
    each answer: 5.3 tok/s over 750 tokens = 0.424/min, not a rate of the app's own), and shows the CLI's TTFT."""
    import contextlib
    import io
    import json

    from cli.main import main
    from planner.format import fmt_seconds
    from planner.points import DEFAULT_CACHED_PREFIX, DEFAULT_GEN_LENGTHS, DEFAULT_PROMPT_LENGTHS
    from planner.workload import parse_length

    at = AppTest.from_file(APP, default_timeout=120).run()
    at.radio(key="mac_mode").set_value("Serve a team").run()
    assert not at.exception and not at.error
    per_min = at.number_input(key="serve_rate").value
    assert per_min == pytest.approx(1 * 5.3 / 750 * 60)     # chat.yaml: 1 user, 5.3 tok/s reading, 750-token mean
    wl = at.session_state["_wl"]
    assert wl.prompt_tokens == parse_length(DEFAULT_PROMPT_LENGTHS, "prompt")
    assert wl.gen_tokens == parse_length(DEFAULT_GEN_LENGTHS, "gen")
    assert wl.cached_prefix_share == DEFAULT_CACHED_PREFIX
    chip = at.selectbox(key="chip").value
    cores = at.selectbox(key=f"cores_{chip}").value
    ram = at.selectbox(key=f"ram_{chip}_{cores}").value
    argv = ["serve", "--model", at.selectbox(key="model").value, "--chip", chip, "--gpu-cores", str(cores),
            "--ram", str(ram), "--runtime", "llama.cpp", "--slots", str(at.number_input(key="serve_slots").value),
            "--json"]   # no rate, lengths or share: the CLI's defaults
    target = at.number_input(key="serve_target").value
    argv += ["--max-ttft-p95", f"{target:g}"] if target else []
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    cli = json.loads(out.getvalue())
    assert cli["rate_per_s"] == pytest.approx(per_min / 60)
    shown = next(m.value for m in at.metric if m.label == "TTFT p50 / p95")
    assert shown == f"{fmt_seconds(cli['ttft_s']['p50'])} / {fmt_seconds(cli['ttft_s']['p95'])}"
