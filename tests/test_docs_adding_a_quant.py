"""docs/adding-a-quant.md is true: its examples are (parts of) the shipped files, and the bits per weight it
derives by hand are what planner/memory.py computes."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from planner import architecture as arch
from planner import memory as M
from planner import profiles as P

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "adding-a-quant.md").read_text(encoding="utf-8")
EXAMPLES = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", DOC, flags=re.DOTALL)]


def _shipped(kind: str, qid: str) -> dict:
    return yaml.safe_load((ROOT / "profiles" / "quants" / kind / f"{qid}.yaml").read_text(encoding="utf-8"))


def test_mlx_example_is_the_shipped_file_and_costs_3_5_bits():
    ex = EXAMPLES[0]
    shipped = _shipped("mlx", ex["id"])
    assert {k: shipped[k] for k in ex} == ex
    assert "3 + 8 x 4 / 64 = **3.5 bits**" in DOC
    # llama-3.1-8b: every attention row (4096 wide) divides the group of 64, so attention costs exactly 3.5 bits
    model, rt = P.load_model("llama-3.1-8b"), P.load_runtime("mlx-lm")
    w = M.mlx_weights(model, P.load_quant(ex["id"]), rt)
    elems = sum(n for group, _, _, n in arch.tensor_summary(model.config) if group == "attention")
    assert w.by_group["attention"] * 8 / elems == 3.5


def test_gguf_example_is_a_prefix_of_the_shipped_preset_and_q4_0_is_4_5_bits():
    ex = EXAMPLES[1]
    shipped = _shipped("gguf", ex["id"])
    assert {k: shipped[k] for k in ex if k != "rules"} == {k: v for k, v in ex.items() if k != "rules"}
    assert shipped["rules"][: len(ex["rules"])] == ex["rules"]
    q4_0 = next(t for t in P.ggml_types().types if t.name == "Q4_0")
    assert (q4_0.block_size, q4_0.bytes_per_block) == (32, 18)
    assert q4_0.bytes_per_block * 8 / q4_0.block_size == 4.5
    assert "18 x 8 / 32 = **4.5 bits**" in DOC


def test_named_files_exist():
    for path in re.findall(r"`((?:planner|scripts|tests|profiles)/[\w./-]+\.(?:py|yaml))`", DOC):
        assert (ROOT / path).exists(), path
