"""Benchmark: reading a local 70B GGUF (header + tensor table only), median of several runs.

    python benchmarks/gguf_read.py [--runs 7] [--keep PATH]

Writes a sparse Llama-3.3-70B-shaped Q4_K_M GGUF (80 layers, 723 tensors, the data region a hole) with a real
sized tokenizer (128,256 token strings, scores and types, 280,147 merges: what makes a real header ~8 MiB), then
times the header read (sources.local.read_gguf) and sources.resolve_model(path) — what `plan --model ./model.gguf` does — in fresh processes. Also times
gguf.GGUFReader on the same file for comparison. Prints medians; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESOLVE = ("import sys, time; from pathlib import Path; import sources, sources.local, gguf.constants\n"
           "t, c = time.perf_counter(), time.process_time(); sources.local.read_gguf(Path(sys.argv[1]))\n"
           "t1, c1 = time.perf_counter(), time.process_time(); r = sources.resolve_model(sys.argv[1])\n"
           "print(t1 - t, c1 - c, time.perf_counter() - t1, r.exact_weights.total_bytes)")
READER = "import sys, time; t = time.perf_counter(); import gguf; r = gguf.GGUFReader(sys.argv[1], 'r');" \
         " print(time.perf_counter() - t, len(r.tensors))"


def write_70b(path: Path) -> int:
    from tests.sources.gguf_gen import LLAMA8B_KV, llama_tensors, write_gguf

    kv = {**LLAMA8B_KV, "block_count": 80, "embedding_length": 8192, "feed_forward_length": 28672,
          "attention.head_count": 64, "general.name": "Llama 3.3 70B Instruct (benchmark)",
          "tokenizer.ggml.model": "gpt2",
          "tokenizer.ggml.tokens": [f"tok{i}" for i in range(128256)],
          "tokenizer.ggml.scores": [0.0] * 128256,
          "tokenizer.ggml.token_type": [1] * 128256,
          "tokenizer.ggml.merges": [f"a{i} b{i}" for i in range(280147)]}
    return write_gguf(path, "llama", kv, llama_tensors(n_layers=80, h=8192, heads=64, kv_heads=8, ffn=28672),
                      file_type=15)


def _median(code: str, path: Path, runs: int) -> list[float]:
    """Median of each number the probe prints, over fresh processes."""
    rows = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code, str(path)], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
        rows.append([float(x) for x in out])
    return [statistics.median(col) for col in zip(*rows)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--keep", type=Path, help="write the GGUF here and keep it")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = a.keep or Path(tmp) / "Llama-3.3-70B-Instruct-Q4_K_M.gguf"
        t = time.perf_counter()
        total = write_70b(path)
        print(f"wrote {path.name}: {path.stat().st_size / 1e9:.1f} GB apparent ({total / 1e9:.1f} GB of tensors), "
              f"in {time.perf_counter() - t:.1f} s")
        rd, rd_cpu, res, nbytes = _median(RESOLVE, path, a.runs)
        print(f"read_gguf (header + tensor table, after imports): median {rd:.3f} s wall, {rd_cpu:.3f} s CPU over "
              f"{a.runs} runs")
        print(f"resolve_model (what plan --model ./file.gguf does, warm imports): median {res:.3f} s wall; "
              f"{nbytes / 1e9:.1f} GB of weights read from the header")
        med, n = _median(READER, path, 1)
        print(f"gguf.GGUFReader (for comparison): median {med:.3f} s wall in one run ({int(n)} tensors)")

if __name__ == "__main__":
    main()
