"""calibration.records and the store under hostile conditions: concurrent writers, a full disk, files that are not
record files (binary, a folder, a FIFO, /dev/zero). Nothing is lost and every failure is one line."""

from __future__ import annotations

import multiprocessing as mp
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_store import DEVICE, _profile, _record

from calibration import store
from calibration.errors import CalibrationError
from calibration.records import append_jsonl, read_jsonl
from cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def _writer(path: str, wid: int, n: int, barrier) -> None:
    barrier.wait()
    for i in range(n):
        append_jsonl(path, [_record(seed=wid * 1000 + i)])


@pytest.mark.parametrize("writers,each", [(2, 50), (8, 25)])
def test_concurrent_writers_lose_nothing(tmp_path, writers, each):
    path = tmp_path / "cal" / "x__llama.cpp.jsonl"
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(writers)
    procs = [ctx.Process(target=_writer, args=(str(path), w, each, barrier)) for w in range(writers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert all(p.exitcode == 0 for p in procs)
    seeds = sorted(r.seed for r in read_jsonl(path))
    assert seeds == sorted(w * 1000 + i for w in range(writers) for i in range(each))
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


_FULL_DISK = """
import sys
from calibration import store
from calibration.errors import CalibrationError
sys.path.insert(0, sys.argv[2])
from test_store import _record
try:
    store.save_records("x", "llama.cpp", [_record(seed=100 + i) for i in range(30)], root=__import__("pathlib").Path(sys.argv[1]), replace=True)
except CalibrationError as e:
    print(e, file=sys.stderr)
    sys.exit(2)
"""


def _full_disk(limit: int):
    def pre():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, like ENOSPC
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return pre


def test_replace_on_a_full_disk_keeps_the_old_records(tmp_path):
    store.save_records("x", "llama.cpp", [_record(seed=i) for i in range(20)], root=tmp_path)
    path = store.records_path("x", "llama.cpp", tmp_path)
    before = path.read_bytes()
    p = subprocess.run([sys.executable, "-c", _FULL_DISK, str(tmp_path), str(Path(__file__).parent)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120, preexec_fn=_full_disk(len(before) + 100),
                       check=False)
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    assert "cannot write" in p.stderr and "previous content is kept" in p.stderr
    assert path.read_bytes() == before and len(read_jsonl(path)) == 20
    assert [q.name for q in path.parent.iterdir() if q.name.endswith(".tmp")] == []


def test_replace_writes_the_new_records(tmp_path):
    store.save_records("x", "llama.cpp", [_record(seed=i) for i in range(20)], root=tmp_path)
    store.save_records("x", "llama.cpp", [_record(seed=99)], root=tmp_path, replace=True)
    assert [r.seed for r in store.load_records("x", "llama.cpp", tmp_path)] == [99]


def test_profile_write_failure_keeps_the_old_profile(tmp_path, monkeypatch):
    path = store.write_profile(_profile("custom-aaaa1111"), tmp_path)
    before = path.read_bytes()
    real = os.fsync

    def failing(fd):
        real(fd)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(CalibrationError, match=r"No space left on device\); free some disk space"):
        store.write_profile(_profile("custom-aaaa1111", eta_bw=0.9), tmp_path)
    assert path.read_bytes() == before
    assert [q.name for q in path.parent.iterdir() if q.name.endswith(".tmp")] == []


# --------------------------------------------------------------------------- not record files
def _one_line(capsys, argv) -> str:
    rc = main(argv)
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, (rc, err)
    return err


def _cal(user_dir) -> Path:
    d = user_dir / "calibration"
    d.mkdir(parents=True)
    return d


def test_show_and_export_with_a_binary_jsonl(user_dir, capsys, tmp_path):
    (_cal(user_dir) / "x__llama.cpp.jsonl").write_bytes(b"\xff\xfe\x00binary" * 100)
    assert "binary data" in _one_line(capsys, ["calibrate", "--export", str(tmp_path / "o.csv")])


def test_export_with_a_folder_named_jsonl(user_dir, capsys, tmp_path):
    (_cal(user_dir) / "x__llama.cpp.jsonl").mkdir()
    assert "not a regular file" in _one_line(capsys, ["calibrate", "--export", str(tmp_path / "o.csv")])


@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_fifo_and_dev_zero_in_the_calibration_folder(user_dir, capsys, tmp_path, kind):
    d = _cal(user_dir)
    target = d / "x__llama.cpp.jsonl"
    if kind == "fifo":
        os.mkfifo(target)
        os.mkfifo(d / "x__llama.cpp.yaml")
    else:
        target.symlink_to("/dev/zero")
    assert "not a regular file" in _one_line(capsys, ["calibrate", "--export", str(tmp_path / "o.csv")])
    assert main(["calibrate", "--show"]) in (0, 2)
    assert "Traceback" not in capsys.readouterr().err


def test_export_to_a_folder_target(user_dir, capsys, tmp_path):
    store.save_records("x", "llama.cpp", [_record()], root=user_dir)
    (tmp_path / "out.csv").mkdir()
    assert "cannot write" in _one_line(capsys, ["calibrate", "--export", str(tmp_path / "out.csv")])


def test_corrupt_line_is_named(tmp_path):
    p = tmp_path / "x.jsonl"
    append_jsonl(p, [_record()])
    with open(p, "a") as f:
        f.write('{"runtime": "nope"}\n')
    with pytest.raises(CalibrationError, match=r"x.jsonl:2: not a valid calibration record"):
        read_jsonl(p)


def test_device_dict_in_records_survives(tmp_path):
    append_jsonl(tmp_path / "r.jsonl", [_record()])
    assert read_jsonl(tmp_path / "r.jsonl")[0].device == DEVICE
