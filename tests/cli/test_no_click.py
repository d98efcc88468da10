"""The core install (`pip install .`, what ./plan bootstraps) has typer but no click package: typer >= 0.2x
vendors click. The CLI must run, and fail cleanly, without it."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODE = ("import sys; sys.modules['click'] = None\n"  # any `import click` now raises ImportError
        "from cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n")


def _run(*args):
    return subprocess.run([sys.executable, "-c", CODE, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_plan_runs_without_click():
    r = _run("--model", "llama-3.1-8b", "--ram", "16")
    assert r.returncode == 0, r.stderr
    assert "Llama 3.1 8B" in r.stdout


def test_usage_errors_without_click_are_one_line_exit_2():
    for args in (["--bogus"], ["--model", "llama-3.1-8b", "--ram", "many"], []):
        r = _run(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("plan: error:"), (args, r.stderr)
        assert "Traceback" not in r.stderr
