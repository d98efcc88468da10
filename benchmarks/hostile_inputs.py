"""Hostile inputs against a checkout of the planner: exit code, first error line, peak memory and wall time.

Usage: python benchmarks/hostile_inputs.py [--root CHECKOUT] [--cap-mb 2048] [--timeout 20] [--only NAME]

Builds each reproduction in a temp folder (tests/sources/hostile_gen.py; a misbehaving FakeHub on 127.0.0.1 for the
hub cases) and runs the CLI of CHECKOUT (default: this one) on it, one child per case, under an address-space cap
(--cap-mb, so a memory bomb stops at the cap instead of taking the machine) and a time cap (--timeout). Peak RSS is
the child's ru_maxrss (os.wait4), also when it was killed. The calibration cases run 8 writers x 25 records and a
full-disk replace (RLIMIT_FSIZE) with the checkout's calibration.records / calibration.store.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "tests" / "sources"))

import hostile_gen as hg  # noqa: E402
from fakehub import Repo, fixture_config  # noqa: E402
from gguf_gen import write_llama8b  # noqa: E402
from st_gen import llama_8b, shard  # noqa: E402


def run(root: Path, args: list[str], env: dict, cap: int, timeout: float, code: str | None = None,
        fsize: int | None = None):
    def pre():
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        if fsize is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    cmd = [sys.executable, "-c", code or "from cli.main import run; run()", *args]
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, cwd=root, env={**os.environ, "PYTHONPATH": str(root), **env}, stdout=subprocess.DEVNULL,
                             stderr=err, preexec_fn=pre)  # noqa: PLW1509 - single-threaded parent
        killed = False
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t0 > timeout:
                p.kill()
                killed = True
                pid, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.05)
        p.returncode = 0  # reaped above
        dt = time.monotonic() - t0
        err.seek(0)
        text = err.read().decode(errors="replace")
    rc = os.waitstatus_to_exitcode(status)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    tb = "Traceback" in text
    if killed:
        first = f"(killed after {timeout:.0f} s)"
    elif "MemoryError" in text:
        first = f"MemoryError at the {cap // 2**20} MiB cap"
    else:
        first = (lines[-1] if tb else (lines[0] if lines else "")).strip()
    return rc, first, ru.ru_maxrss / 1024, dt, tb, len(lines), lines


def local_cases(d: Path) -> list[tuple[str, list[str]]]:
    def m(name: str) -> Path:
        return d / name

    cases = [
        ("config 1e9 layers + sliding_window", hg.config(m("c1"), num_hidden_layers=10**9, sliding_window=4096)),
        ("GGUF 1e9 layers + sliding_window", hg.gguf_config(m("g1"))),
        ("GGUF array of 2^62 items", hg.gguf_huge_array(m("g2"))),
        ("GGUF 1M keys", hg.gguf_many_keys(m("g3"))),
        ("GGUF 1M tensors", hg.gguf_many_tensors(m("g4"))),
        ("GGUF 4M strings", hg.gguf_many_strings(m("g5"))),
        ("GGUF tensor of 2^126 values", hg.gguf_giant_tensor(m("g6"))),
    ]
    hg.fifo(m("f1"), "m.gguf")
    cases.append(("FIFO m.gguf in folder", m("f1")))
    (m("f2")).mkdir()
    (m("f2") / "config.json").symlink_to("/dev/zero")
    cases.append(("config.json -> /dev/zero", m("f2")))
    hg.write(m("n1"), "config.json", hg.deep_json())
    cases.append(("config.json nested 100k deep", m("n1")))
    st = hg.config(m("n2"))
    hg.safetensors(st, hg.deep_json())
    cases.append(("safetensors header nested 100k", st))
    cases.append(("model_type a list", hg.config(m("t1"), model_type=["llama"])))
    cases.append(("sliding_window_pattern 'six'", hg.config(m("t2"), model_type="gemma3_text", sliding_window=512,
                                                              sliding_window_pattern="six")))
    for i, shape in enumerate((["ab"], [1e999])):
        f = hg.config(m(f"s{i}"))
        hg.safetensors(f, json.dumps({"w": {"dtype": "F16", "shape": shape, "data_offsets": [0, 8]}}).encode())
        cases.append((f"safetensors shape {shape}", f))
    cases.append(("x-00001-of-00000.gguf", hg.write(m("z"), "x-00001-of-00000.gguf", b"GGUF")))
    cases.append(("3 KV heads of 4", hg.config(m("h1"), num_key_value_heads=3, num_attention_heads=4, hidden_size=512)))
    cases.append(("8-of-2 experts", hg.config(m("h2"), model_type="mixtral", num_local_experts=2,
                                              num_experts_per_tok=8)))
    return [(label, ["--model", str(p), "--ram", "64"]) for label, p in cases]


def hub_cases(d: Path, hub) -> list[tuple[str, list[str]]]:
    cfg = {"config.json": fixture_config("meta-llama/Llama-3.1-8B-Instruct"), **shard(llama_8b(), 4)}
    p = d / "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"
    write_llama8b(p)
    hub.repos["x/ignore-range"] = Repo({p.name: p}, misbehave={p.name: "ignore_range"})
    hub.repos["x/endless-info"] = Repo(cfg, misbehave={"api": "endless"})
    hub.repos["x/endless-st"] = Repo(cfg, misbehave={"model-00001-of-00004.safetensors": "endless"})
    hub.repos["x/drip"] = Repo(cfg, misbehave={"config.json": "drip"})
    hub.repos["x/huge-config"] = Repo(cfg, misbehave={"config.json": "huge"})
    return [(f"hub {r.split('/')[1]}", ["--model", r, "--ram", "64"]) for r in
            ("x/ignore-range", "x/endless-info", "x/endless-st", "x/drip", "x/huge-config")]


WRITERS = """
import multiprocessing as mp, sys
sys.path.insert(0, sys.argv[2])
from calibration.records import append_jsonl, read_jsonl
from test_store import _record
def w(i, b):
    b.wait()
    for j in range(25):
        append_jsonl(sys.argv[1], [_record(seed=i * 1000 + j)])
ctx = mp.get_context("fork"); b = ctx.Barrier(8)
ps = [ctx.Process(target=w, args=(i, b)) for i in range(8)]
[p.start() for p in ps]; [p.join() for p in ps]
print(f"{len(read_jsonl(sys.argv[1]))} of 200 records kept", file=sys.stderr)
"""
FULL_DISK = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from calibration import store
from test_store import _record
root = Path(sys.argv[1])
try:
    store.save_records("x", "llama.cpp", [_record(seed=100 + i) for i in range(30)], root=root, replace=True)
except Exception as e:
    print(f"{e.__class__.__name__}: {e}", file=sys.stderr)
n = len(store.load_records("x", "llama.cpp", root))
print(f"{n} of 20 old records kept", file=sys.stderr)
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, default=HERE)
    ap.add_argument("--cap-mb", type=int, default=2048)
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    cap = a.cap_mb * 2**20
    root = a.root.resolve()
    from fakehub import FakeHub

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        hub = FakeHub()
        env = {"HF_ENDPOINT": hub.url, "HF_HUB_OFFLINE": "0", "MAC_LLM_PLANNER_CACHE_DIR": str(d / "cache"),
               "HF_HOME": str(d / "hf"), "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1", "HF_HUB_DEADLINE": "3",
               "OPENBLAS_NUM_THREADS": "1"}
        cases = local_cases(d / "local") + hub_cases(d, hub)
        print(f"{'case':36} {'rc':>3} {'peak MB':>8} {'time s':>7}  first line (or last line of a traceback)")
        for label, args in cases:
            if a.only and a.only not in label:
                continue
            rc, first, mb, dt, tb, n, _ = run(root, args, env, cap, a.timeout)
            flag = "TRACEBACK " if tb else ("" if n <= 1 else f"[{n} lines] ")
            print(f"{label:36} {rc:>3} {mb:8.0f} {dt:7.2f}  {flag}{first[:110]}")
        tests = str(HERE / "tests" / "calibration")
        if not a.only or "calib" in a.only:
            cal = d / "cal.jsonl"
            rc, first, mb, dt, tb, _, lines = run(root, [str(cal), tests], env, cap, 120, code=WRITERS)
            print(f"{'calibration 8 writers x 25':36} {rc:>3} {mb:8.0f} {dt:7.2f}  {lines[-1][:110] if lines else ''}")
            code = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[2]); from calibration import store;"
                    "from test_store import _record; store.save_records('x', 'llama.cpp', "
                    "[_record(seed=i) for i in range(20)], root=Path(sys.argv[1]))")
            subprocess.run([sys.executable, "-c", code, str(d / "u"), tests], cwd=root, check=True,
                           env={**os.environ, "PYTHONPATH": str(root)})
            size = (d / "u" / "calibration" / "x__llama.cpp.jsonl").stat().st_size
            rc, first, mb, dt, tb, _, lines = run(root, [str(d / "u"), tests], env, cap, 60, code=FULL_DISK,
                                                  fsize=size + 100)
            print(f"{'calibration replace on a full disk':36} {rc:>3} {mb:8.0f} {dt:7.2f}  "
                  + " | ".join(ln[-70:] for ln in lines[-2:]))
        hub.close()


if __name__ == "__main__":
    main()
