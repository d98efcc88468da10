"""Write docs/schema/<command>.json: the JSON Schema of every command's --json answer, generated from the result
models (the same models the commands dump), plus the error and "no"-answer envelopes (cli/contract.py).

    python scripts/gen_schema.py          # rewrite docs/schema/
    python scripts/gen_schema.py --check  # exit 1 when a file differs (tests/cli/test_schema_docs.py runs it)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, create_model

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "schema"
FIELD_DOCS = "MAC_LLM_PLANNER_FIELD_DOCS"  # planner._model.FIELD_DOCS, not imported: planner must not load first


def _models() -> dict[str, Any]:
    from planner.advice import Recommendation
    from planner.buy import BuyResult
    from planner.cluster.recipe import ClusterRecipe
    from planner.cluster.results import ClusterPlan
    from planner.finetune import FinetunePlan
    from planner.plan import Plan
    from planner.results import ModelsResult, ServeResult, ThroughputEstimate

    # plan predict dumps a dict: ThroughputEstimate's fields plus the operating point and the memory fit
    predict = create_model(
        "PredictResult", __base__=ThroughputEstimate, chip=(str, ...), chip_label=(str, ...), ram_gb=(float, ...),
        runtime=(str, ...), model=(str, ...), quant=(str, ...), fits=(bool, ...), verdict=(str, ...),
        peak_memory_bytes=(int, ...), wired_limit_bytes=(int, ...), weights_bytes=(int, ...),
        kv_cache_bytes=(int, ...), kv_type=(str, ...), cached_prefix_share=(float, ...), cached_tokens=(int, ...))
    cluster = create_model("ClusterResult", plan=(ClusterPlan, ...), recipe=(ClusterRecipe, ...))
    catalog = create_model("Catalog", models=(list[create_model(
        "CatalogModel", id=(str, ...), name=(str, ...), params=(int, ...), aliases=(list[str], ...))], ...))
    return {"plan": Plan, "predict": predict, "recommend": Recommendation, "buy": BuyResult, "serve": ServeResult,
            "finetune": FinetunePlan, "models": ModelsResult, "models-catalog": catalog, "cluster": cluster}


def _envelope(name: str) -> dict[str, Any]:
    return {"type": "object", "required": ["code", "message"], "additionalProperties": True,
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
            "description": f"{name}: a stable code, one line of text, and structured fields"}


def schemas() -> dict[str, dict[str, Any]]:
    """command -> JSON Schema of its --json answer (schema_version first)."""
    from cli.contract import SCHEMA_VERSION

    version = {"schema_version": {"const": SCHEMA_VERSION, "type": "string",
                                  "description": "Bumped on any rename or removal of a field"}}
    out = {}
    for name, model in _models().items():
        s: dict[str, Any] = (model if isinstance(model, type) and issubclass(model, BaseModel)
                             else model).model_json_schema(mode="serialization")
        s["properties"] = {**version, **s.get("properties", {})}
        s["required"] = ["schema_version", *s.get("required", [])]
        out[name] = {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": f"plan {name} --json", **s}
    for name, what in (("error", "Bad input (exit 2)"), ("answer", "A valid question answered no (exit 0): "
                                                         "does not fit, targets missed, over budget")):
        out[name] = {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": f"--json {name}",
                     "description": what, "type": "object", "required": ["schema_version", name],
                     "properties": {**version, name: _envelope(what)}}
    return out


def render(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def main(argv: list[str]) -> int:
    if FIELD_DOCS not in os.environ:
        # the models' field descriptions are attribute docstrings, read at class creation only with FIELD_DOCS
        # set (planner/_model.py): this interpreter may have built them without, so a fresh one writes the schema
        env = {**os.environ, FIELD_DOCS: "1"}
        return subprocess.run([sys.executable, str(Path(__file__).resolve()), *argv], env=env, check=False).returncode
    want = {f"{k}.json": render(v) for k, v in schemas().items()}
    if "--check" in argv:
        have = {p.name: p.read_text() for p in OUT.glob("*.json")} if OUT.exists() else {}
        stale = sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
        if stale:
            print(f"docs/schema is stale ({', '.join(stale)}): run python scripts/gen_schema.py", file=sys.stderr)
            return 1
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    for p in OUT.glob("*.json"):
        if p.name not in want:
            p.unlink()
    for k, v in want.items():
        (OUT / k).write_text(v)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main(sys.argv[1:]))
