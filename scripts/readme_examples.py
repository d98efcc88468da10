"""Regenerate (or check) the command outputs embedded in README.md and docs/*.md.

Blocks look like:  <!-- example: plan --model llama-3.3-70b --ram 64 -->  ```...```  <!-- /example -->
`python scripts/readme_examples.py` rewrites them from real runs; `--check` exits 1 if any block drifted
(tests/test_readme.py runs the check, so the README cannot go stale).
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's planner/cli, not whichever copy is installed in the environment
BLOCK = re.compile(r"(<!-- example: (?P<cmd>.+?) -->\n)```\n(?P<body>.*?)```\n(<!-- /example -->)", re.S)


def run(cmd: str) -> str:
    from cli.main import main

    argv = shlex.split(cmd)
    assert argv[0] == "plan", cmd
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(argv[1:])
    if rc != 0:
        raise SystemExit(f"{cmd!r} exited {rc}")
    return f"$ {cmd}\n{buf.getvalue().rstrip()}\n"


def blocks(text: str):
    return [(m, run(m.group("cmd"))) for m in BLOCK.finditer(text)]


def main() -> int:
    stale, n = [], 0
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        found = blocks(text)
        n += len(found)
        if "--check" in sys.argv:
            stale += [f"{path.name}: {m.group('cmd')}" for m, out in found if m.group("body") != out]
            continue
        for m, out in reversed(found):
            text = text[:m.start()] + f"{m.group(1)}```\n{out}```\n{m.group(4)}" + text[m.end():]
        path.write_text(text, encoding="utf-8")
    if "--check" in sys.argv:
        for c in stale:
            print(f"example block drifted: {c}", file=sys.stderr)
        return 1 if stale else 0
    print(f"updated {n} blocks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
