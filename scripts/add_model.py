"""Write profiles/models/<id>.yaml from a model's Hugging Face config.json and its model-card facts.

Usage:
    python scripts/add_model.py STUB.yaml [STUB.yaml ...] [--force] [--out-dir DIR]

A stub holds what a person reads off the model card, plus the config.json contents verbatim:

    id: qwq-32b
    name: QwQ 32B
    family: qwen
    tasks: [chat, reasoning]
    hf_repo: Qwen/QwQ-32B
    aliases: ['qwq:32b', mlx-community/QwQ-32B-4bit]
    params_b: 32.76            # safetensors total on the model card
    active_params_b: null      # MoE only
    vision_params_b: null      # VLM only: vision tower + projector
    gated: false
    quality: {benchmark: MMLU-Pro, score: 69.0, source: https://...}   # or null
    sources: ['https://huggingface.co/Qwen/QwQ-32B/blob/main/config.json']
    comment: optional first-line comment (why a number differs from the card, ...)
    native_quant: {...}        # optional, a checkpoint published already quantized (gpt-oss's MXFP4 experts)
    hf_config: {...}           # the config.json object, or `hf_config_file: path/to/config.json`

The config goes through the same reader the planner uses for hub models (sources/hfconfig.py), so a
profile never holds keys or defaults the planner would not derive itself. The script prints the parameter
count the planner computes from the config next to the card's total; tests/test_catalog.py enforces it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from planner import architecture as arch  # noqa: E402  (after the sys.path line above)
from planner.schema import ModelConfig, ModelProfile  # noqa: E402
from sources.hfconfig import from_hf_config  # noqa: E402

OUT = ROOT / "profiles" / "models"
TOP_KEYS = ["id", "name", "family", "tasks", "quality", "hf_repo", "aliases", "params_b", "active_params_b",
            "vision_params_b", "gated", "sources", "verified", "config"]


def _flow(v) -> str:
    text = yaml.safe_dump(v, default_flow_style=True, width=10_000, sort_keys=False).strip()
    return text.removesuffix("...").strip()  # PyYAML ends a bare scalar document with "..."


def render(doc: dict, comment: str | None) -> str:
    lines = [f"# {comment}"] if comment else []
    for k in TOP_KEYS[:-1] + ["native_quant", "config"]:  # native_quant (optional) before the config block
        if k not in doc:
            continue
        v = doc[k]
        if k == "config":
            lines.append("config:")
            for ck, cv in v.items():
                lines.append(f"  {ck}: {_flow(cv)}")
        else:
            lines.append(f"{k}: {_flow(v)}")
    return "\n".join(lines) + "\n"


def build(stub: dict, base: Path) -> tuple[dict, str | None]:
    raw = stub.get("hf_config")
    if raw is None:
        raw = json.loads((base / stub["hf_config_file"]).read_text(encoding="utf-8"))
    cfg = from_hf_config(raw, f"{stub['id']}: config.json")
    config = cfg.model_dump(exclude_none=True, exclude_defaults=False)
    # keep only keys the file states or the reader derived (defaults left out stay implicit)
    config = {k: v for k, v in config.items() if k in cfg.model_fields_set or k in ("num_key_value_heads", "head_dim")}
    doc = {k: stub.get(k) for k in TOP_KEYS if k not in ("verified", "config")}
    doc["aliases"] = list(stub.get("aliases") or [])
    doc["tasks"] = list(stub.get("tasks") or ["chat"])
    doc["gated"] = bool(stub.get("gated", False))
    doc["verified"] = dt.date.today()
    if stub.get("native_quant"):
        doc["native_quant"] = stub["native_quant"]
    doc["config"] = config
    ModelProfile.model_validate(doc)  # strict schema: fail here, not at load time
    return doc, stub.get("comment")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stubs", nargs="+", type=Path)
    ap.add_argument("--force", action="store_true", help="overwrite existing profiles")
    ap.add_argument("--out-dir", type=Path, default=OUT, help="where to write (default profiles/models)")
    args = ap.parse_args(argv)
    for path in args.stubs:
        for stub in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if not stub:
                continue
            doc, comment = build(stub, path.parent)
            out = args.out_dir / f"{doc['id']}.yaml"
            if out.exists() and not args.force:
                print(f"skip {out.name}: exists (use --force)")
                continue
            out.write_text(render(doc, comment), encoding="utf-8")
            cfg = ModelConfig.model_validate(doc["config"])
            derived = arch.n_params(cfg) / 1e9 + (doc["vision_params_b"] or 0.0)
            dev = 100 * (derived / doc["params_b"] - 1)
            print(f"{doc['id']:32s} card {doc['params_b']:9.2f}B  planner {derived:9.2f}B  ({dev:+.1f} %)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
