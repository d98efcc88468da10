"""The README's example outputs are real: regenerate them with `python scripts/readme_examples.py`."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_examples_match_the_cli():
    # PYTHONPATH: the script must run this checkout's code, not whichever copy the environment installed
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "scripts/readme_examples.py", "--check"], cwd=ROOT, capture_output=True,
                       text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr


def test_readme_quick_start_commands_exist():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "./plan --model llama-3.3-70b --ram 64" in text and "make test" in text
    assert (ROOT / "plan").stat().st_mode & 0o111
    assert "make test" in (ROOT / ".ci" / "run").read_text()
