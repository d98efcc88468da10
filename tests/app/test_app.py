"""The Streamlit form logic, headless via streamlit.testing (no browser)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("plotly")

from streamlit.testing.v1 import AppTest

from app import readings
from planner.plan import PlanRequest, plan

APP = str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")


@pytest.fixture
def at():
    return AppTest.from_file(APP, default_timeout=60).run()


def test_default_run_has_no_exception(at):
    assert not at.exception
    assert not at.error
    assert len(at.success) + len(at.warning) == 1  # the one answer
    # lazy tabs: only the open tab (Memory) builds its chart
    assert [c.key for c in at.get("plotly_chart")] == ["chart_memory"]
    # the answer's launch recipe, with the server command of the runtime the answer names
    assert at.code and any(cmd in at.code[0].value for cmd in ("llama-server", "mlx_lm.server"))


def test_70b_on_64gb_shows_the_verdict(at):
    at.selectbox(key="model").set_value("llama-3.3-70b")
    at.radio(key="mac_mode").set_value("RAM only").run()
    at.selectbox(key="ram_only").set_value(64)
    at.run()
    assert not at.exception and not at.error
    assert at.success[0].value.startswith("**Llama 3.3 70B Instruct on a 64 GB Mac: fits comfortably.**")


def test_chip_mode_constrains_ram(at):
    at.selectbox(key="chip").set_value("M3 Max").run()
    at.selectbox(key="cores_M3 Max").set_value(30).run()
    assert at.selectbox(key="ram_M3 Max_30").options == ["36 GB", "96 GB"]
    assert not at.exception and not at.error


def test_unknown_hf_model_shows_error(at, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the Hub source reads it at call time; never touch the network
    at.radio(key="model_source").set_value("Hugging Face id or local path").run()
    at.text_input(key="model_text").input("acme/NoSuchModel-13B-Instruct").run()
    assert not at.exception
    assert len(at.error) == 1 and "NoSuchModel" in at.error[0].value
    assert not at.get("plotly_chart")


def test_unknown_catalog_like_name_shows_error(at):
    at.radio(key="model_source").set_value("Hugging Face id or local path").run()
    at.text_input(key="model_text").input("llama-9.9-70b").run()
    assert not at.exception
    assert len(at.error) == 1 and "Unknown model 'llama-9.9-70b'" in at.error[0].value


def test_local_model_folder_is_planned_like_the_cli(at, tmp_path, monkeypatch):
    """A folder with config.json goes through sources.resolve_model, as `plan --model <folder>` does (local paths
    allowed, as `plan app` on localhost allows them)."""
    from app.uploads import LOCAL_PATHS_ENV
    from sources import resolve_model

    monkeypatch.setenv(LOCAL_PATHS_ENV, "1")

    src = Path(__file__).resolve().parents[1] / "sources" / "fixtures" / "hub" / "meta-llama" / "Llama-3.1-8B-Instruct"
    (tmp_path / "config.json").write_bytes((src / "config.json").read_bytes())
    at.radio(key="model_source").set_value("Hugging Face id or local path").run()
    at.text_input(key="model_text").input(str(tmp_path)).run()
    assert not at.exception and not at.error
    req = PlanRequest(model=str(tmp_path), chip="M4 Max", gpu_cores=40, ram=64)
    p = plan(req, resolve_model(str(tmp_path)))
    assert at.success[0].value == readings.answer(p, None)[1]  # outside the catalog: the plan's best option


def test_impossible_wired_limit_shows_error(at):
    at.radio(key="wired_mode").set_value("Custom").run()
    at.number_input(key="wired_mb").set_value(1_000_000).run()
    assert not at.exception
    assert len(at.error) == 1 and "wired" in at.error[0].value


def test_compare_mode_adds_the_matrix(at):
    at.radio(key="mac_mode").set_value("Compare several Macs").run()
    assert not at.exception and not at.error
    assert [c.key for c in at.get("plotly_chart")] == ["chart_compare", "chart_memory"]
    assert at.table[0].value.columns.tolist()[:4] == ["Mac", "best option", "fit", "tok/s per user"]


def test_buy_mode_always_shows_the_chart_and_says_what_binds(at):
    at.selectbox(key="model").set_value("llama-3.3-70b").run()
    at.radio(key="mac_mode").set_value("Which Mac should I buy?").run()
    assert not at.exception and not at.error
    assert next(c.key for c in at.get("plotly_chart")) == "chart_buy"
    at.number_input(key="tgt_ttft").set_value(0.5).run()   # out of reach for a 70B: best effort, not a dead end
    assert not at.exception and not at.error
    assert next(c.key for c in at.get("plotly_chart")) == "chart_buy"
    text = at.warning[0].value
    assert "No Mac meets every target" in text and "time to first token" in text and "missed by" in text
    assert "What would change the answer" in text


def test_buy_mode_honours_the_budget(at):
    at.selectbox(key="model").set_value("qwen3-30b-a3b").run()
    at.radio(key="mac_mode").set_value("Which Mac should I buy?").run()
    at.number_input(key="budget").set_value(1500).run()
    assert not at.exception and not at.error
    assert any("Budget: $1,500" in c.value for c in at.caption)
    paragraphs = [p for m in at.markdown for p in m.value.split("\n\n")]
    picks = [p for p in paragraphs if p.startswith(("**Cheapest", "**Best value", "**Fastest", "**Details"))]
    assert len(picks) >= 3 and "within $1,500" in " ".join(picks)
    for line in picks:
        prices = [int(x.replace(",", "")) for x in __import__("re").findall(r"\$([\d,]+)", line)]
        assert all(p <= 1500 for p in prices), line


def test_buy_mode_takes_your_price_for_a_used_mac(at):
    at.selectbox(key="model").set_value("llama-3.3-70b").run()
    at.radio(key="mac_mode").set_value("Which Mac should I buy?").run()
    at.text_area(key="quotes").set_value("Mac Studio M2 Ultra 76-core 192GB=3500").run()
    assert not at.exception and not at.error
    rows = at.dataframe[0].value
    used = rows[(rows["chip"] == "M2 Ultra 76-core GPU") & (rows["Mac"] == "Mac Studio")]
    assert list(used["price [$]"]) == [3500] and list(used["price is"]) == ["user"]
    at.text_area(key="quotes").set_value("Mac Studio M2 Ultra 192GB=3500").run()   # two GPU bins: say which
    assert not at.exception and "several configurations" in at.error[0].value


def test_preset_fills_users_and_context(at):
    at.selectbox(key="preset").set_value("batch").run()
    assert at.number_input(key="users").value == 8
    assert not at.exception


def test_uploaded_config_becomes_a_named_model_folder(tmp_path):
    import json

    from app.uploads import config_folder
    from sources import resolve_model

    src = Path(__file__).resolve().parents[1] / "sources" / "fixtures" / "hub" / "meta-llama" / "Llama-3.1-8B-Instruct"
    cfg = json.loads((src / "config.json").read_text())
    cfg["_name_or_path"] = "meta-llama/Llama-3.1-8B-Instruct"
    folder = config_folder(json.dumps(cfg).encode(), root=tmp_path)
    assert Path(folder).name == "Llama-3.1-8B-Instruct"
    assert resolve_model(folder).source == "folder"
    assert Path(config_folder(b"{not json", root=tmp_path)).name == "uploaded-model"


def test_a_first_run_stopped_before_the_form_keeps_the_presets_context():
    """The flaky browser test (issue 34): a click during the first run stops it before the workload widgets are
    drawn and Streamlit drops their state, the preset staying chosen; the context slider then fell back to its
    first step (512 tokens). With the preset chosen and the context gone, the form refills it from the preset."""
    t = AppTest.from_file(APP, default_timeout=60)
    t.session_state["preset"] = "chat"
    t.run()
    assert not t.exception
    assert t.select_slider(key="context").value == 8192 and t.session_state["users"] >= 1


def test_buy_view_details_the_configuration_it_charts_and_lists_the_budget_first(at):
    """Issue 35: the chart said 11.7 tok/s and "Details" 17.2 for the same Mac (a fresh recommendation); over-budget
    laptops headed the table; the heading was the fit page's; notes spoke CLI flags."""
    import re

    from planner.format import fmt_tok_s

    at.selectbox(key="model").set_value("llama-3.3-70b").run()
    at.radio(key="mac_mode").set_value("Which Mac should I buy?").run()
    at.number_input(key="budget").set_value(4000).run()
    assert not at.exception and not at.error
    assert [t.value for t in at.title] == ["Which Mac should I buy?"]
    rows = at.dataframe[0].value
    within = list(rows["within budget"])
    assert within == sorted(within, reverse=True) and within[0] and not within[-1]  # every Mac within first
    details = next(m.value for m in at.markdown if m.value.startswith("**Details for"))
    product, chip, ram = re.match(r"\*\*Details for the [^:]+: (.+?), (.+?), (\d+) GB\*\*", details).groups()
    row = rows[(rows["Mac"] == product) & (rows["chip"] == chip) & (rows["RAM [GB]"] == int(ram))].iloc[0]
    assert f"{row['runtime']} {row['quantization']}" in details
    answer = (list(at.success) + list(at.warning))[0].value
    assert f"about {fmt_tok_s(row['tok/s per user'])} tok/s" in answer  # the chart's figure, not another option's
    assert not any(re.search(r"(?<![\w-])--[a-z]", c.value) for c in at.caption)


def test_serve_view_starts_at_the_recommended_slots_and_is_not_green_over_the_target(at):
    """Issue 35: "Serve a team" defaulted to 1 slot while recommending 32, and showed a green "stable at 93 % load"
    next to a p95 TTFT of 53 s against a 3 s target."""
    at.selectbox(key="model").set_value("qwen3-8b").run()
    at.radio(key="mac_mode").set_value("Serve a team").run()
    assert not at.exception and not at.error
    rec = next(m for m in at.metric if m.label == "Recommended slots")
    assert at.number_input(key="serve_slots").value == int(rec.value)
    at.number_input(key="serve_slots").set_value(1).run()
    at.number_input(key="serve_target").set_value(0.01).run()   # no server answers in 10 ms
    sat = next(m for m in at.metric if m.label == "Saturation")
    assert "misses" in str(sat.delta) or "overloaded" in str(sat.delta)
    from streamlit.proto.Metric_pb2 import Metric

    assert sat.proto.color == Metric.RED   # never green


def test_serve_status_is_good_news_only_when_stable_and_within_the_target():
    from types import SimpleNamespace as NS

    from planner.results import Percentiles

    r = NS(stable=True, utilisation=0.93, target_ttft_p95_s=3.0, ttft_s=Percentiles(p50=10, p95=53, p99=60))
    text, ok = readings.serve_status(r)
    assert not ok and "misses the 3 s target" in text
    assert readings.serve_status(NS(**{**vars(r), "target_ttft_p95_s": None}))[1]
    assert not readings.serve_status(NS(**{**vars(r), "stable": False}))[1]
