"""`plan app`: finds the bundled Streamlit script and execs streamlit on it (exec is stubbed here)."""

from __future__ import annotations

import json
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


# --------------------------------------------------------------------------- local paths (issue 34)
@pytest.mark.parametrize("argv,allowed", [
    (["app"], "1"), (["app", "--address", "0.0.0.0"], "0"),
    (["app", "--address", "0.0.0.0", "--allow-local-paths"], "1"), (["app", "--address", "::1"], "1"),
])
def test_local_paths_are_off_beyond_localhost_unless_allowed(monkeypatch, argv, allowed):
    """`plan app` beyond localhost tells the page that server-side paths are off (the operator may allow them)."""
    pytest.importorskip("streamlit")
    from app.uploads import LOCAL_PATHS_ENV, LOOPBACK

    assert (app_cmd.LOCAL_PATHS_ENV, app_cmd.LOOPBACK) == (LOCAL_PATHS_ENV, LOOPBACK)  # the page reads what cli sets
    monkeypatch.delenv(LOCAL_PATHS_ENV, raising=False)
    monkeypatch.setattr(app_cmd.os, "execv", lambda exe, a: None)
    assert main(argv) == 0
    assert app_cmd.os.environ[LOCAL_PATHS_ENV] == allowed
    monkeypatch.delenv(LOCAL_PATHS_ENV, raising=False)


def test_the_page_refuses_server_paths_when_off(tmp_path, monkeypatch):
    """A path typed into a page served beyond localhost is one line, not a listing of the server's folders; catalog
    ids, Hub repo ids and the page's own uploads still work; with local paths on, a path passes."""
    from app.uploads import LOCAL_PATHS_ENV, check_model_spec, config_folder, local_paths_allowed
    from planner.errors import InputError

    monkeypatch.delenv(LOCAL_PATHS_ENV, raising=False)
    assert local_paths_allowed("127.0.0.1") and local_paths_allowed("localhost")
    assert not local_paths_allowed("0.0.0.0") and not local_paths_allowed(None)  # streamlit's default: every interface
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    for spec in ("/etc", str(tmp_path), str(gguf), "~/models/x.gguf", "./x", str(tmp_path / "up" / ".." / "..")):
        with pytest.raises(InputError, match="local paths are off"):
            check_model_spec(spec, False, root=tmp_path / "up")
    up = config_folder(json.dumps({"model_type": "llama"}).encode(), root=tmp_path / "up")
    for spec in ("llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct", up):
        check_model_spec(spec, False, root=tmp_path / "up")
    check_model_spec(str(gguf), True)
    monkeypatch.setenv(LOCAL_PATHS_ENV, "1")
    assert local_paths_allowed("0.0.0.0")
