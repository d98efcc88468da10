"""The web form's prompt-cache share (issue 32, "One answer everywhere"): an input "Share of each prompt already
cached" (0-0.99, default the chosen preset's share, shown as the default) flows into every TTFT on the page exactly
as `--cached-prefix` does in the CLI, and the page states the share each TTFT assumed."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

pytest.importorskip("streamlit")
pytest.importorskip("plotly")

from streamlit.testing.v1 import AppTest

from app import readings
from cli.main import main
from planner.format import cached_label, fmt_seconds
from planner.search import speed_available
from planner.workload import load_workload

pytestmark = pytest.mark.skipif(not speed_available(), reason="speed model not installed")
APP = str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")


def cli_plan(at: AppTest, share: float) -> dict:
    """`plan --json` for the form's model, Mac and workload (the default form: llama-3.1-8b on an M4 Max 40-core
    GPU, 64 GB) with --cached-prefix ``share``."""
    s = at.session_state
    argv = ["--model", "llama-3.1-8b", "--chip", "M4 Max", "--gpu-cores", "40", "--ram", "64",
            "--context", str(s["context"]), "--users", str(s["users"]), "--prompt", str(s["prompt"]),
            "--gen", str(s["gen"]), "--cached-prefix", f"{share:g}", "--json"]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return json.loads(out.getvalue())


def answer_ttft(at: AppTest) -> tuple[str, str]:
    """(option, 'first token in X (share)') of the verdict at the top of the page."""
    text = (at.success or at.warning)[0].value
    m = re.search(r"option: \*\*(.+?)\*\*.*first token in (.+? \(.+?cached\))", text)
    assert m, text
    return m.group(1), m.group(2)


def speed_ttfts(at: AppTest) -> dict[str, str]:
    """option -> 'X (share)' of the Speed tab's TTFT reading."""
    at.session_state["tab"] = "Speed"
    at.run()
    assert not at.exception and not at.error
    (reading,) = [m.value for m in at.markdown if "waits" in m.value]
    return dict(re.findall(r"\*\*(.+?)\*\*: your [\dK,.]+-token prompt waits (.+? \(.+?cached\))", reading))


def test_the_share_defaults_to_the_presets_and_says_so():
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception and not at.error
    chat = load_workload("chat").cached_prefix_share
    box = at.number_input(key="cached")
    assert box.value == chat and box.label == readings.LABELS["cached_prefix"] == "Share of each prompt already cached"
    assert (box.min, box.max) == (0.0, 0.99)
    assert any(c.value.startswith(f"Default: {chat:g}, the Chat assistant preset's") for c in at.sidebar.caption)
    # another preset fills in its own share (profiles/workloads/rag.yaml: no share, 0)
    at.selectbox(key="preset").set_value("rag").run()
    assert at.number_input(key="cached").value == load_workload("rag").cached_prefix_share


def test_the_share_reaches_the_verdict_and_the_speed_tab_as_the_cli_flag_does():
    at = AppTest.from_file(APP, default_timeout=120).run()
    before_option, before = answer_ttft(at)
    share = 0.3
    at.number_input(key="cached").set_value(share).run()
    assert not at.exception and not at.error
    option, after = answer_ttft(at)
    speed = speed_ttfts(at)

    cli = cli_plan(at, share)
    bl = cli["bottom_line"]["option"]
    name = f"{bl['runtime']} · {bl['quant']} · KV {bl['kv_type']}"
    want = f"{fmt_seconds(bl['speed']['ttft_s'])} ({cached_label(share)})"
    assert bl["speed"]["cached_prefix_share"] == share
    # the verdict: the CLI's bottom line at --cached-prefix 0.3, and it moved from the preset's 0.75
    assert (option, after) == (name, want)
    assert option == before_option and after != before and "75 % of each prompt cached" in before
    # the Speed tab: the same option waits the same time, and every TTFT there states the share
    assert speed[option] == after
    assert speed and all(v.endswith(f"({cached_label(share)})") for v in speed.values())
    # each drawn option as `plan --json --cached-prefix 0.3` answers it (its speed table)
    for o in cli["options"]:
        n = f"{o['runtime']} · {o['quant']} · KV {o['kv_type']}"
        if n in speed:
            assert o["speed"]["cached_prefix_share"] == share
            assert speed[n] == f"{fmt_seconds(o['speed']['ttft_s'])} ({cached_label(share)})"
