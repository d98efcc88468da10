"""What the plain question (`plan --model ... --ram ...`) loads: no import it does not use, and the stand-in for
pydantic's plugin loader (cli/main.py skip_plugin_discovery) answers as the real one. Timings are in
benchmarks/cli_startup.py, never asserted here."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARGS = ["--model", "llama-3.3-70b", "--ram", "64"]
# runs the plain question, then reports which modules the process imported (stdout: the answer; stderr: modules)
CODE = ("import sys\n"
        "from cli.main import main\n"
        "rc = main(sys.argv[1:])\n"
        "import tokenize\n"
        "compiled = getattr(tokenize, '_compile', None)\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
        "print('tokenize-regex-built', compiled.cache_info().misses if compiled else -1, file=sys.stderr)\n"
        "from pydantic import BaseModel\n"
        "def subs(c): return [s for k in c.__subclasses__() for s in (k, *subs(k))]\n"
        "print('validators-built', *sorted({c.__qualname__ for c in subs(BaseModel)\n"
        "      if c.__module__.startswith('planner') and c.__pydantic_complete__}), file=sys.stderr)\n"
        "from planner import profiles\n"
        "print('chips-read', sum('chips' in k[0] for k in profiles._STORE.objects), file=sys.stderr)\n"
        "sys.exit(rc)\n")
# not needed to answer from the validated-profile cache: the typer application, YAML parsing, numpy (buy's vector
# fit), the file/hub readers, and importlib.metadata (email, zipfile, csv: pydantic's plugin discovery)
UNUSED = ["typer", "click", "yaml", "numpy", "sources", "importlib.metadata", "email", "zipfile", "cli.commands"]


def _run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    full = {**os.environ, "MAC_LLM_PLANNER_CACHE": str(tmp_path / "cache"),
            "MAC_LLM_PLANNER_USER_PROFILES": str(tmp_path / "profiles"), **env}
    full.pop("PYDANTIC_DISABLE_PLUGINS", None)
    full.update(env)
    return subprocess.run([sys.executable, "-c", CODE, *args], cwd=ROOT, env=full, capture_output=True, text=True,
                          timeout=120)


def test_plain_question_imports_only_what_it_uses(tmp_path):
    cold = _run(tmp_path, *ARGS)  # validates the profiles (reads YAML) and writes the cache
    assert cold.returncode == 0, cold.stderr
    warm = _run(tmp_path, *ARGS)
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout == cold.stdout
    modules = set(warm.stderr.splitlines()[0].split())
    assert "planner.plan" in modules and "pydantic" in modules  # the report is real
    assert not [m for m in UNUSED if m in modules]
    # a default_factory=list on a model the plan validates makes pydantic tokenize list's signature (~7 ms)
    assert warm.stderr.splitlines()[1] in ("tokenize-regex-built 0", "tokenize-regex-built -1")
    assert "yaml" in set(cold.stderr.splitlines()[0].split())  # a cache miss does read and validate the YAML
    # the request is the one validation gives without building PlanRequest's validator (planner.plan.plan_request),
    # the results are assembled; --ram without --chip reads the RAM sizes, not the chip profiles (profiles.ram_sizes)
    assert warm.stderr.splitlines()[2] == "validators-built"
    assert warm.stderr.splitlines()[3] == "chips-read 0"
    assert _run(tmp_path, *ARGS, "--chip", "M4 Pro").stderr.splitlines()[3] != "chips-read 0"  # the report is real


def test_plugin_discovery_runs_when_a_user_turns_plugins_on(tmp_path):
    """PYDANTIC_DISABLE_PLUGINS set to anything but the disabling values: pydantic's own loader is used."""
    r = _run(tmp_path, *ARGS, PYDANTIC_DISABLE_PLUGINS="some-plugin")
    assert r.returncode == 0, r.stderr
    assert "importlib.metadata" in set(r.stderr.splitlines()[0].split())


def test_stand_in_matches_pydantics_plugin_loader(monkeypatch):
    """The stand-in replaces pydantic/plugin/_loader.py: pydantic imports only get_plugins from it, and with
    plugins disabled the real get_plugins returns no plugins, as the stand-in does."""
    from pydantic.plugin import _loader, _schema_validator

    src = inspect.getsource(_schema_validator)
    assert src.count("_loader") == 1 and "from ._loader import get_plugins" in src
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "1")
    assert list(_loader.get_plugins()) == []


@pytest.mark.parametrize("value", ["1", "true", "__all__"])
def test_stand_in_only_when_plugins_are_disabled(monkeypatch, value):
    from cli import main as M

    monkeypatch.delitem(sys.modules, "pydantic.plugin._loader", raising=False)
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "x")
    M.skip_plugin_discovery()
    assert "pydantic.plugin._loader" not in sys.modules
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", value)
    M.skip_plugin_discovery()
    assert list(sys.modules["pydantic.plugin._loader"].get_plugins()) == []


def test_subcommands_collect_garbage_as_usual():
    """run() turns the cyclic collector off for the plain question; the typer path turns it back on."""
    import contextlib
    import gc
    import io

    from cli import main as M

    gc.disable()
    try:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert M.main(["models", "--help"]) == 0
        assert "--ram" in out.getvalue()
        assert gc.isenabled()
    finally:
        gc.enable()


def test_models_ranking_imports_no_typer(tmp_path):
    """`plan models --ram 64 --chip "M4 Max"` takes the typer-free path too (cli/main.py MODELS_FAST_FLAGS)."""
    args = ["models", "--ram", "64", "--chip", "M4 Max"]
    assert _run(tmp_path, *args).returncode == 0
    warm = _run(tmp_path, *args)
    assert warm.returncode == 0, warm.stderr
    modules = set(warm.stderr.splitlines()[0].split())
    assert "planner.models" in modules and "What can I run on" in warm.stdout  # the report is real
    assert not [m for m in UNUSED if m in modules]


def _console(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """The installed `plan` script (pyproject [project.scripts]: cli.main:run), with an atexit handler of its own."""
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('atexit ran', file=sys.stderr))\n"
            "from cli.main import run\n"
            "run()\n")
    env = {**os.environ, "MAC_LLM_PLANNER_CACHE": str(tmp_path / "cache"),
           "MAC_LLM_PLANNER_USER_PROFILES": str(tmp_path / "profiles")}
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def test_one_shot_answers_end_as_the_interpreter_would(tmp_path):
    """run() ends the plain question and the models ranking without the interpreter's teardown (os._exit), after
    the exit handlers: the profile cache is written, atexit handlers run, the output is whole, the exit code kept."""
    cold = _console(tmp_path, *ARGS)
    assert cold.returncode == 0 and cold.stderr == "atexit ran\n", cold.stderr
    assert list((tmp_path / "cache").glob("profiles-*.pickle"))  # the cache's save (an atexit handler) ran
    warm = _console(tmp_path, *ARGS)
    assert warm.returncode == 0 and warm.stdout == cold.stdout and cold.stdout.startswith("Bottom line:")
    assert cold.stdout.endswith("\n") and len(cold.stdout) > 1000
    bad = _console(tmp_path, "--model", "no-such-model", "--ram", "64")
    assert bad.returncode == 2 and "atexit ran" in bad.stderr and "plan: error:" in bad.stderr
    ranked = _console(tmp_path, "models", "--ram", "64")
    assert ranked.returncode == 0 and "What can I run on" in ranked.stdout and ranked.stderr == "atexit ran\n"
