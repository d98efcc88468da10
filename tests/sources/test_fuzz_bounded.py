"""Runs the reader fuzzers (tests/sources/fuzz_readers.py) in a child capped at an idle child's address space
+ 200 MB and a time cap: a generated memory bomb or hang fails here (MemoryError, a kill) instead of the machine."""

from __future__ import annotations

from pathlib import Path

import pytest
from bounded import EXTRA_BYTES, run_module

HERE = Path(__file__).parent


@pytest.mark.slow  # 600 generated inputs in a capped child (~35 s on a busy machine); make test runs it
def test_reader_fuzzers_stay_bounded():
    env = {"PYTHONPATH": f"{HERE.parent.parent}:{HERE}"}
    idle = run_module("fuzz_readers:warm_up", [], env=env)  # imports everything, runs nothing
    assert idle.rc == 0 and idle.peak_vm, idle.err[-800:]
    r = run_module("fuzz_readers:run_all", [], env=env, as_limit=idle.peak_vm + EXTRA_BYTES, timeout=600)
    assert r.rc == 0, r.err[-2000:]
    assert r.err.count("ok fuzz_") == 3, r.err[-800:]
