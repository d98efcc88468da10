"""planner.models (plan models): the ranking rules, pinned on a small hand-made catalog.

The catalog is a copy of the built-in profiles with a handful of models whose published scores are set here, so
each expected order follows from the rules, not from running the code:
  1. rows that meet --min-tok-s / --context / memory rank before rows that miss;
  2. among those, rows with a score on the common benchmark before unscored rows; higher score first;
  3. embedding models are ranked in their own list, on their own benchmark;
  4. without a chip there is no speed at all.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from planner import models as M
from planner import profiles
from planner.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
M4MAX40 = "m4-max-40gpu"   # 546 GB/s (profiles/chips/m4-max-40gpu.yaml)


def _score(bench: str, s: float) -> dict:
    return {"benchmark": bench, "score": s, "source": "https://example.org/model-card"}


@pytest.fixture
def catalog(tmp_path, monkeypatch):
    """Built-in profiles with the models replaced by: qwen3-32b (MMLU-Pro 80), qwen3-0.6b (30), qwen3-8b (50),
    qwen3-4b (unscored), llama-3.3-70b (unscored), and an embedding copy of qwen3-0.6b (MTEB 60)."""
    root = tmp_path / "profiles"
    shutil.copytree(ROOT / "profiles", root, ignore=shutil.ignore_patterns("models"))
    (root / "models").mkdir()
    src = ROOT / "profiles" / "models"
    plan = {"qwen3-32b": _score("MMLU-Pro", 80), "qwen3-0.6b": _score("MMLU-Pro", 30),
            "qwen3-8b": _score("MMLU-Pro", 50), "qwen3-4b": None, "llama-3.3-70b": None}
    for mid, q in plan.items():
        d = yaml.safe_load((src / f"{mid}.yaml").read_text())
        d["quality"] = q
        (root / "models" / f"{mid}.yaml").write_text(yaml.safe_dump(d, sort_keys=False))
    d = yaml.safe_load((src / "qwen3-0.6b.yaml").read_text())
    d.update(id="embed-0.6b", name="Embed 0.6B", aliases=[], hf_repo=None, tasks=["embedding"],
             quality=_score("MTEB", 60))
    (root / "models" / "embed-0.6b.yaml").write_text(yaml.safe_dump(d, sort_keys=False))
    monkeypatch.setenv("MAC_LLM_PLANNER_PROFILES", str(root))
    monkeypatch.setenv("MAC_LLM_PLANNER_USER_PROFILES", str(tmp_path / "none"))
    profiles.clear_cache()
    M.clear_cache()
    yield
    profiles.clear_cache()
    M.clear_cache()


def _ids(rows):
    return [r.model for r in rows]


def test_scored_before_unscored_and_by_score(catalog):
    r = M.what_runs(M.Query(ram_gb=64))
    # every model fits 64 GB at 8K (largest: llama-3.3-70b at Q4_K_M, see below); order = score 80, 50, 30, then
    # the unscored ones
    assert _ids(r.rows)[:3] == ["qwen3-32b", "qwen3-8b", "qwen3-0.6b"]
    assert set(_ids(r.rows)[3:]) == {"qwen3-4b", "llama-3.3-70b"}
    assert r.rows[3].score is None and "MMLU-Pro" in r.quality_basis
    assert any("no published MMLU-Pro score" in n for n in r.notes)


def test_higher_score_missing_min_tok_s_ranks_below(catalog):
    # qwen3-32b cannot reach 60 tok/s on 546 GB/s: its smallest format (Q3_K_M, >= 3.4375 bits on all 32.8e9
    # weights = 14.1 GB) caps decode at 546 / 14.1 = 38.7 tok/s even at full bandwidth. qwen3-0.6b at Q8_0 reads
    # 0.64 GB per token: 60 tok/s needs only 7 % of the bandwidth.
    chip = profiles.resolve_chip(M4MAX40)
    r = M.what_runs(M.Query(ram_gb=64, chip=chip, min_tok_s=60))
    ids = _ids(r.rows)
    assert ids.index("qwen3-0.6b") < ids.index("qwen3-32b")
    slow = r.rows[ids.index("qwen3-32b")]
    assert not slow.meets and slow.misses[0].startswith("speed") and slow.decode_tok_s_per_user < 38.7
    # without the speed floor the higher score wins
    r = M.what_runs(M.Query(ram_gb=64, chip=chip))
    assert _ids(r.rows)[0] == "qwen3-32b" and r.rows[0].decode_tok_s_per_user < 38.7


def test_embedding_ranked_among_themselves(catalog):
    r = M.what_runs(M.Query(ram_gb=64))
    assert "embed-0.6b" not in _ids(r.rows) and _ids(r.embedding_rows) == ["embed-0.6b"]
    assert r.embedding_rows[0].rank == 1 and "MTEB" in r.quality_basis
    only = M.what_runs(M.Query(ram_gb=64, task="embedding"))
    assert only.rows == [] and _ids(only.embedding_rows) == ["embed-0.6b"]


def test_without_chip_no_speed(catalog):
    r = M.what_runs(M.Query(ram_gb=64))
    assert all(x.decode_tok_s_per_user is None and x.prefill_tok_s is None for x in r.rows)
    assert any("speed needs a chip" in n for n in r.notes)


def test_highest_precision_that_fits_comfortably(catalog):
    # llama-3.3-70b (70.5e9 weights) on 64 GB, GPU limit 3/4 of RAM = 48 GiB (profiles/macos): Q8_0 >= 8.5 bpw = 69.8
    # GiB and Q6_K >= 6.5625 bpw = 53.9 GiB exceed the limit; Q5_K_M (~5.7 bpw, 46.8 GiB) + 8K of f16 KV (80
    # layers x 8 KV heads x 128 x 2 x 2 B = 320 KiB/token = 2.5 GiB) = 49.3 GiB is over it too; Q4_K_M (~4.85
    # bpw, 39.8 GiB + 2.5) fits with the 1 GiB margin. qwen3-8b at Q8_0 (8.1 GiB) fits with room: its best format.
    r = M.what_runs(M.Query(ram_gb=64, runtimes=("llama.cpp",), macos="15"))
    row = {x.model: x for x in r.rows}
    assert (row["llama-3.3-70b"].quant, row["llama-3.3-70b"].verdict) == ("Q4_K_M", "fits")
    assert row["qwen3-8b"].quant == "Q8_0" and row["qwen3-8b"].kv_type == "f16"


def test_best_effort_names_the_binding_filter(catalog):
    # qwen3 models stop at 40,960 tokens, llama-3.3-70b at 131,072: a 1M context binds
    r = M.what_runs(M.Query(ram_gb=64, context=1_000_000, task="chat"))
    assert r.best_effort and r.rows and any("[[context]] 1,000,000 binds" in b and "131,072" in b for b in r.binding)
    chip = profiles.resolve_chip(M4MAX40)
    r = M.what_runs(M.Query(ram_gb=64, chip=chip, min_tok_s=5000, task="chat"))
    # 5000 tok/s would need < 0.11 GB read per token at 546 GB/s: not even qwen3-0.6b at Q3_K_M (0.26 GB)
    assert r.best_effort and any(b.startswith("[[min_tok_s]] 5000 binds") and "short" in b for b in r.binding)
    assert r.rows[0].model == "qwen3-0.6b"


def test_filters(catalog):
    assert _ids(M.what_runs(M.Query(ram_gb=64, max_params_b=10)).rows) == ["qwen3-8b", "qwen3-0.6b", "qwen3-4b"]
    r = M.what_runs(M.Query(ram_gb=64, family="llama"))
    assert _ids(r.rows) == ["llama-3.3-70b"] and r.excluded.get("not llama") == 5
    with pytest.raises(InputError, match="^family 'nosuch'"):
        M.what_runs(M.Query(ram_gb=64, family="nosuch"))
    with pytest.raises(InputError, match="^task "):
        M.what_runs(M.Query(ram_gb=64, task="poetry"))
    with pytest.raises(InputError, match="^max_params 0.1 binds"):
        M.what_runs(M.Query(ram_gb=64, max_params_b=0.1))


def test_weights_floor_is_a_lower_bound():
    """The pruning bound never exceeds the real weight bytes (else a model that fits would be skipped)."""
    from planner.search import base_memory_model, quants_for

    profiles.clear_cache()
    M.clear_cache()
    for m in profiles.all_models()[::3]:
        for rt in ("llama.cpp", "mlx-lm"):
            for q in quants_for(m, profiles.load_runtime(rt)):
                assert M.weights_floor(m.id, rt, q.id) <= base_memory_model(m.id, rt, q.id).weights.total_bytes


def test_decode_ceiling_is_an_upper_bound():
    """The speed pruning bound is never below the modelled decode speed (else a fast-enough format is skipped)."""
    from planner.search import base_memory_model, quants_for, speed_at, speed_model

    profiles.clear_cache()
    M.clear_cache()
    chip = profiles.resolve_chip(M4MAX40)
    for m in profiles.all_models()[::2]:
        for rt in ("llama.cpp", "mlx-lm"):
            for q in quants_for(m, profiles.load_runtime(rt)):
                rf = speed_model(base_memory_model(m.id, rt, q.id), chip, q)
                if rf is not None:
                    sp = speed_at(rf, 512, 64, 1, 1, False)
                    assert sp.decode_tok_s_per_user <= M.decode_ceiling(m.id, rt, q.id, chip), (m.id, rt, q.id)


def test_chip_name_and_ram_pick_the_bin():
    # the M4 Max comes as 32-core (36 GB) and 40-core (48/64/128 GB): 64 GB names the 40-core bin
    assert M.resolve_chip_for_ram("M4 Max", 64).id == M4MAX40
    # without RAM both bins are possible: the slower (base) bin, never a refusal
    assert M.resolve_chip_for_ram("M4 Max", None).gpu_cores == 32
