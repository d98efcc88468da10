"""`plan app`: finds the bundled Streamlit script and execs streamlit on it (exec is stubbed here)."""

from __future__ import annotations

import sys

import pytest

from cli import app_cmd
from cli.main import main


def test_app_file_is_the_bundled_script():
    f = app_cmd.app_file()
    assert f.name == "streamlit_app.py" and f.parent.name == "app" and f.is_file()


def test_plan_app_execs_streamlit_headless(monkeypatch):
    pytest.importorskip("streamlit")
    calls = []
    monkeypatch.setattr(app_cmd.os, "execv", lambda exe, argv: calls.append((exe, argv)))
    assert main(["app", "--port", "8599"]) == 0
    (exe, argv), = calls
    assert exe == sys.executable
    assert argv[1:4] == ["-m", "streamlit", "run"] and argv[4] == str(app_cmd.app_file())
    assert argv[argv.index("--server.port") + 1] == "8599"
    assert argv[argv.index("--server.headless") + 1] == "true"
    assert argv[argv.index("--server.address") + 1] == "127.0.0.1"


def test_plan_app_without_streamlit_is_one_line(monkeypatch, capsys):
    real = app_cmd.importlib.util.find_spec
    monkeypatch.setattr(app_cmd.importlib.util, "find_spec", lambda n: None if n == "streamlit" else real(n))
    assert main(["app"]) == 2
    assert f"{sys.executable} -m pip install 'streamlit>=1.38' 'plotly>=5.20'" in capsys.readouterr().err
