"""`plan --model <folder>` for a recurrent hybrid: the KV table charges only the full-attention layers and shows
the recurrent state per sequence (planner/hybrid.py)."""

from __future__ import annotations

import json

from cli.main import main
from tests.test_hybrid import QWEN35_MOE_RAW


def test_plan_local_qwen35_moe_folder(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps(QWEN35_MOE_RAW))
    assert main(["--model", str(tmp_path), "--ram", "48", "--chip", "M4 Pro", "--gpu-cores", "20"]) == 0
    out = capsys.readouterr().out
    assert "hybrid: 30 linear-attention + 10 full-attention layers" in out
    # f16: 10 layers x 2 x 2 x 256 x 2 B = 20 KiB/token; llama.cpp state 30 x (3 x 8192 + 128 x 4096) x 4 B
    assert "20.0 KiB + 62.8 MiB/seq state" in out
    # mlx-lm: 30 x (3 x 8192 x 2 + 32 x 128 x 128 x 4) B = 61.4 MiB
    assert "20.0 KiB + 61.4 MiB/seq state" in out
    # llama-server: up to 32 checkpoints of that state per slot in host memory: 32 x 62.8125 MiB = 1.96 GiB
    assert "up to 32 context checkpoints of the recurrent state per slot" in out and "1.96 GiB per slot" in out
