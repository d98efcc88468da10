"""Field descriptions written as attribute docstrings (planner/_model.py: a string on the line after a result or
profile field, which costs nothing at start-up) reach pydantic when MAC_LLM_PLANNER_FIELD_DOCS is set, and the
published JSON Schema (docs/schema, scripts/gen_schema.py) carries each of them word for word."""

from __future__ import annotations

import ast
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _docstrings() -> dict[str, dict[str, dict[str, str]]]:
    """module file stem -> class name -> field -> its attribute docstring, read from planner/ source (the rule
    pydantic applies: a string statement right after an annotated assignment, cleaned as inspect.cleandoc)."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    for path in sorted((ROOT / "planner").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            docs = {}
            for a, b in zip(cls.body, cls.body[1:]):
                if (isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name) and isinstance(b, ast.Expr)
                        and isinstance(b.value, ast.Constant) and isinstance(b.value.value, str)):
                    docs[a.target.id] = inspect.cleandoc(b.value.value)
            if docs:
                mod = ".".join(path.relative_to(ROOT).with_suffix("").parts)
                out.setdefault(mod, {})[cls.name] = docs
    return out


def test_the_results_describe_their_fields_in_docstrings():
    docs = _docstrings()
    assert sum(len(f) for c in docs.values() for f in c.values()) >= 70  # planner/results.py's, at least


def test_every_field_docstring_is_its_description_when_asked_for():
    """In an interpreter with MAC_LLM_PLANNER_FIELD_DOCS set, each docstring is its field's description (a class
    whose config does not read them would lose them without a word)."""
    docs = _docstrings()
    code = ("import importlib, json, sys\n"
            "docs = json.loads(sys.stdin.read())\n"
            "got = {}\n"
            "for mod, classes in docs.items():\n"
            "    m = importlib.import_module(mod)\n"
            "    for cls, fields in classes.items():\n"
            "        c = getattr(m, cls)\n"
            "        got[f'{mod}.{cls}'] = {f: c.model_fields[f].description for f in fields}\n"
            "print(json.dumps(got))\n")
    env = {**os.environ, "MAC_LLM_PLANNER_FIELD_DOCS": "1", "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", code], input=json.dumps(docs), capture_output=True, text=True,
                       env=env, cwd=ROOT, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout)
    want = {f"{mod}.{cls}": fields for mod, classes in docs.items() for cls, fields in classes.items()}
    assert got == want


def test_the_published_schema_carries_every_field_docstring():
    """Each model of docs/schema/*.json (a $defs entry, or the answer itself) that has field docstrings in
    planner/ shows each as that property's description: the schema lost none of them."""
    by_name: dict[str, list[dict[str, str]]] = {}
    for classes in _docstrings().values():
        for cls, fields in classes.items():
            by_name.setdefault(cls, []).append(fields)
    roots = {"plan": "Plan", "recommend": "Recommendation", "buy": "BuyResult", "serve": "ServeResult",
             "finetune": "FinetunePlan", "models": "ModelsResult"}
    checked = 0
    for path in sorted((ROOT / "docs" / "schema").glob("*.json")):
        schema = json.loads(path.read_text())
        models = dict(schema.get("$defs", {}))
        if path.stem in roots:
            models[roots[path.stem]] = schema
        for name, model in models.items():
            if len(by_name.get(name, [])) != 1:  # no docstrings, or a name two modules define
                continue
            for field, doc in by_name[name][0].items():
                prop = model.get("properties", {}).get(field)
                if prop is not None:
                    assert prop.get("description") == doc, (path.name, name, field)
                    checked += 1
    assert checked >= 70
