"""Run the CLI (or any module) on hostile input in a subprocess with a memory cap and a generous time cap.

The cap is an address-space limit (RLIMIT_AS) of the child: the address space of the same command on a good input
plus EXTRA_BYTES. A memory bomb then fails inside the child (MemoryError: a traceback, or a kill) instead of taking
the machine, and the test fails because the answer is not the one clean line. Time is only a safety net
(TIMEOUT_S, far above the real run); no test asserts a duration.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXTRA_BYTES = 200 * 2**20      # the bound: under 200 MB above a normal run
TIMEOUT_S = 60                 # a hang fails here; real runs take about a second
_PROBE = ("import atexit, os, runpy, sys\n"
          "def _peak():\n"
          "    for l in open('/proc/self/status'):\n"
          "        if l.startswith(('VmPeak', 'VmHWM')):\n"
          "            os.write(2, ('@@' + l.replace(chr(9), ' ')).encode())\n"
          "atexit.register(_peak)\n"
          "sys.argv = sys.argv[1:]\n"
          "mod, _, fn = sys.argv[0].partition(':')\n"
          "if fn:\n"
          "    import importlib\n"
          "    getattr(importlib.import_module(mod), fn)()\n"
          "else:\n"
          "    runpy.run_module(mod, run_name='__main__', alter_sys=True)\n")


@dataclass
class Run:
    rc: int
    out: str
    err: str
    peak_vm: int     # bytes of address space at its peak (VmPeak), 0 when the child died before exit
    peak_rss: int    # bytes resident at the peak (VmHWM)

    @property
    def lines(self) -> list[str]:
        return [ln for ln in self.err.splitlines() if ln.strip() and not ln.startswith("@@")]


def run_module(module: str, args: list[str], *, as_limit: int | None = None, env: dict | None = None,
               cwd: Path = ROOT, timeout: float = TIMEOUT_S, fsize: int | None = None,
               wrap: list[str] | None = None) -> Run:
    """``python -m module args`` (or ``module:function``, called with sys.argv = args) under RLIMIT_AS=as_limit (and RLIMIT_FSIZE=fsize: a full disk).

    ``wrap`` prefixes the command (e.g. ``setpriv`` dropping capabilities)."""
    def limits():
        if as_limit:
            resource.setrlimit(resource.RLIMIT_AS, (as_limit, as_limit))
        if fsize is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    e = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT),
         **(env or {})}
    p = subprocess.run([*(wrap or []), sys.executable, "-c", _PROBE, module, *args], check=False, capture_output=True, text=True,
                       cwd=cwd, env=e, timeout=timeout, preexec_fn=limits)
    vm = rss = 0
    for ln in p.stderr.splitlines():
        if ln.startswith("@@VmPeak"):
            vm = int(ln.split()[1]) * 1024
        elif ln.startswith("@@VmHWM"):
            rss = int(ln.split()[1]) * 1024
    return Run(p.returncode, p.stdout, p.stderr, vm, rss)


_BASE: dict[str, int] = {}


def baseline(module: str = "cli.main:run", args: tuple[str, ...] = ("--model", "llama-3.3-70b", "--ram", "64")) -> int:
    """Peak address space of a normal run of the same entry point (measured once per session)."""
    key = f"{module} {args}"
    if key not in _BASE:
        r = run_module(module, list(args))
        assert r.rc == 0 and r.peak_vm, r.err[-500:]
        _BASE[key] = r.peak_vm
    return _BASE[key]


def run_bounded(args: list[str], module: str = "cli.main:run", **kw) -> Run:
    """The CLI on hostile input with the address space capped at a normal run + EXTRA_BYTES."""
    return run_module(module, args, as_limit=baseline() + EXTRA_BYTES, **kw)


def assert_one_line(r: Run, *needles: str) -> str:
    """Exit 2 with exactly one line on stderr naming the input; no traceback."""
    assert r.rc == 2, (r.rc, r.err[-800:])
    assert len(r.lines) == 1 and "Traceback" not in r.err, r.err[-800:]
    line = r.lines[0]
    for n in needles:
        assert n in line, line
    return line
