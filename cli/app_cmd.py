"""`plan app`: start the web form (app/streamlit_app.py, bundled in the package) on localhost."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import typer

from planner.errors import PlannerError


def app_file() -> Path:
    """The bundled Streamlit script: the installed `app` package, or the checkout's app/ next to planner/."""
    spec = importlib.util.find_spec("app")
    cands = [Path(p) / "streamlit_app.py" for p in (spec.submodule_search_locations or [])] if spec else []
    cands.append(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")
    for c in cands:
        if c.is_file():
            return c
    raise PlannerError("plan app: the web form (app/streamlit_app.py) is not installed; reinstall mac-llm-planner")


def streamlit_argv(port: int, address: str) -> list[str]:
    return [sys.executable, "-m", "streamlit", "run", str(app_file()), "--server.headless", "true",
            "--server.port", str(port), "--server.address", address, "--browser.gatherUsageStats", "false",
            "--client.toolbarMode", "minimal"]


# app/uploads.py reads these (cli does not import app; tests/app/test_app_cmd.py checks that the names agree)
LOCAL_PATHS_ENV = "MAC_LLM_PLANNER_APP_LOCAL_PATHS"
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


def app_cmd(
    port: int = typer.Option(8501, "--port", help="Port to serve on"),
    address: str = typer.Option("127.0.0.1", "--address", help="Interface to listen on (localhost by default)"),
    allow_local_paths: bool = typer.Option(False, "--allow-local-paths", help="Let the page read server-side "
                                           "paths (.gguf files, model folders) when listening beyond localhost"),
):
    """Open the web form with charts: serves on http://localhost:8501 (Ctrl-C stops it)."""
    if importlib.util.find_spec("streamlit") is None or importlib.util.find_spec("plotly") is None:
        # the exact command for this interpreter (the app extra's requirements, pyproject.toml)
        raise PlannerError(f"plan app needs Streamlit and Plotly: {sys.executable} -m pip install 'streamlit>=1.38' "
                           "'plotly>=5.20' (or run `make app` in a checkout)")
    loopback = address.strip().lower() in LOOPBACK or address.startswith("127.")
    # a page served beyond localhost must not read the server's files unless the operator allows it
    os.environ[LOCAL_PATHS_ENV] = "1" if loopback or allow_local_paths else "0"
    if not loopback and not allow_local_paths:
        typer.echo("Local paths typed into the page are off (listening beyond localhost); "
                   "--allow-local-paths turns them on", err=True)
    argv = streamlit_argv(port, address)
    typer.echo(f"Serving the planner on http://{address}:{port} (Ctrl-C to stop)", err=True)
    sys.stdout.flush()
    os.execv(sys.executable, argv)
