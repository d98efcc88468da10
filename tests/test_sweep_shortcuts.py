"""The catalog sweep's shortcuts (plan models: planner/models.py what_runs) give what the plain computation gives:
llama-quantize's counters in one pass equal the counters by their definition, the Tensor constructor keeps the
frozen dataclass's behaviour, the per-config matmul sums equal the sums over the tensors, and the per-profile
engine is the registry's. The end-to-end check (byte-identical `plan models` JSON on both CLI paths) is in
tests/cli/test_options.py."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from planner import architecture as arch
from planner import profiles as P
from planner import throughput as tp
from planner.engines import _registry, engine_for
from planner.memory import _FFN_CATEGORIES, quantize_counters

TABLE = P.ggml_types()
CLASSES = TABLE.llama_quantize


def _models():
    out = []
    for m in P.all_models():
        try:
            arch.tensors(m.config)
        except Exception:  # an architecture not modelled yet is refused elsewhere
            continue
        out.append(m)
    return out


def _slow_counters(cfg, ts) -> dict:
    """By the definition (src/llama-quant.cpp init_quantize_state_counters; file order by layer, then name)."""
    v_like = [t for t in ts if t.name in CLASSES.attn_v_like]
    layers = [t.layer for t in ts if t.layer is not None]
    mtp = cfg.mtp_num_hidden_layers or 0
    out = {"n_attn_v": len(v_like) + mtp, "n_layer_all": (max(layers) + 1 if layers else cfg.num_hidden_layers) + mtp,
           "attn_v_index": {k: j for j, k in enumerate(sorted({(t.layer, t.name) for t in v_like
                                                                  if t.layer is not None}))},
           "ffn_index": {}}
    if cfg.n_experts <= 1:  # gguf_tensor_type reads the FFN counters only for models without experts
        for c in _FFN_CATEGORIES:
            picked = sorted({(t.layer, t.name) for t in ts if t.quantizable and t.layer is not None
                             and next((x for x in _FFN_CATEGORIES if x in t.name), None) == c})
            out["ffn_index"].update({(c, *k): j for j, k in enumerate(picked)})
    return out


def test_quantize_counters_equal_their_definition_for_every_catalog_model():
    ms = _models()
    assert len(ms) > 100
    dense = 0
    for m in ms:
        ts = arch.tensors(m.config)
        got = quantize_counters(m.config, ts, CLASSES)
        assert got == _slow_counters(m.config, ts), m.id
        dense += bool(got["ffn_index"])
    assert dense > 10  # the FFN counters are exercised


def test_matmul_sums_once_per_config_equal_the_sums_over_tensors():
    for m in _models():
        cfg = m.config
        k = cfg.num_experts_per_tok or 1
        head = sum(t.ne0 * t.ne1 for t in arch.tensors(cfg)
                   if t.group == "output" or (t.group == "embedding" and cfg.tie_word_embeddings))
        experts = sum(t.ne0 * t.ne1 * min(k, t.n) for t in arch.tensors(cfg) if t.group == "experts")
        rest = sum(t.n_elements for t in arch.tensors(cfg)
                   if t.group not in ("embedding", "output", "experts", "norm", "lookup"))
        assert tp._matmul_params(cfg) == (head, rest + experts, experts), m.id


def test_tensor_is_still_a_frozen_dataclass():
    t = arch.Tensor("ffn_down_exps", 3, 768, 2048, 128, group="experts")
    assert (t.name, t.layer, t.ne0, t.ne1, t.n, t.group, t.quantizable) == ("ffn_down_exps", 3, 768, 2048, 128,
                                                                            "experts", True)
    assert t.n_elements == 768 * 2048 * 128
    assert arch.Tensor("attn_q", 0, 8, 8) == arch.Tensor("attn_q", 0, 8, 8, 1, "attention", True)
    assert hash(arch.Tensor("attn_q", 0, 8, 8)) == hash(arch.Tensor("attn_q", 0, 8, 8))
    assert arch.Tensor("attn_q", 0, 8, 8) != arch.Tensor("attn_q", 1, 8, 8)
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.ne0 = 1  # type: ignore[misc]
    assert dataclasses.replace(t, layer=4).layer == 4 and dataclasses.replace(t, layer=4).ne1 == 2048
    assert pickle.loads(pickle.dumps(t)) == t
    assert [f.name for f in dataclasses.fields(t)] == ["name", "layer", "ne0", "ne1", "n", "group", "quantizable"]


def test_engine_for_is_the_registry_answer_per_profile_object():
    base, adapter_for = _registry()
    for rt in P.all_runtimes():
        want = adapter_for(rt) or base[rt.family]
        assert engine_for(rt) is want and engine_for(rt) is want, rt.id
        copy = rt.model_copy()  # another object with the same id: answered for itself, not from the first
        assert engine_for(copy) is (adapter_for(copy) or base[copy.family])


def test_n_params_is_the_sum_over_tensors():
    for m in _models():
        assert arch.n_params(m.config) == sum(t.n_elements for t in arch.tensors(m.config)), m.id


def test_kv_bytes_per_token_sum_every_layer():
    """The layout computes each distinct cache layer's bytes once; the sum is the per-layer sum all the same."""
    import math

    from planner.memory import kv_layout

    checked = 0
    for m in _models():
        layers = arch.cache_layers(m.config)
        if any(c.owner is not None or c.kind == "linear" for c in layers):
            continue  # KV-shared and recurrent layers: tests/test_gemma4.py, tests/test_hybrid.py
        for rt in (P.load_runtime("llama.cpp"), P.load_runtime("mlx-lm")):
            eng = engine_for(rt)
            rotating = eng.rotating(m, rt)
            per = [eng.cache_layer_bytes(c, rt.default_kv_type, rt, TABLE) for c in layers]
            full = sum(p for c, p in zip(layers, per) if not (c.kind == "sliding" and rotating))
            kv = kv_layout(m, rt, rt.default_kv_type, TABLE)
            assert kv.bytes_per_token == math.ceil(full), (m.id, rt.id)
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("ram,chip,extra", [(16, "M4", {}), (64, "M4 Max", {}), (128, "M4 Max", {"task": "chat"}),
                                            (192, "M2 Ultra", {"users": 4}),
                                            (128, "M4 Max", {"min_tok_s": 30, "context": 32768})])
def test_speeds_only_for_candidates_that_can_win(monkeypatch, ram, chip, extra):
    """Without --min-tok-s the sweep estimates speed only for the candidates tied on (fits, quant tier) with the
    best: the same answer as estimating every candidate's speed (the slow path, computed here)."""
    from planner import models as MD

    qy = MD.Query(ram_gb=ram, chip=MD.resolve_chip_for_ram(chip, ram), **extra)
    fast = MD.what_runs(qy).model_dump_json()

    def every(cands, qy, notes):
        for c in cands:
            if c.speed is None:
                MD._add_speed(c, qy)
        return cands

    monkeypatch.setattr(MD, "_speeds_for_choice", every)
    slow = MD.what_runs(qy)
    assert slow.model_dump_json() == fast
    assert any(r.decode_tok_s_per_user for r in slow.rows)  # speeds are there to compare


@pytest.mark.parametrize("preset", ["Q8_0", "Q6_K", "Q4_K_M", "Q3_K_M"])
def test_gguf_weights_equal_the_per_tensor_sum(preset):
    """gguf_weights sizes a name's tensors together when no rule of the preset depends on the layer, and builds
    llama-quantize's counters only when one does: the same bytes per type as typing every tensor on its own with
    the full counters (the slow path, here)."""
    from planner.memory import gguf_tensor_type, gguf_weights, row_bytes

    q = P.load_quant(preset, "gguf")
    types = {t.name: t for t in TABLE.types}
    for m in _models():
        ts = arch.tensors(m.config)
        counters = quantize_counters(m.config, ts, CLASSES)
        by_type: dict[str, int] = {}
        for t in ts:
            typ = gguf_tensor_type(t, q, m, types, counters, None, CLASSES)
            by_type[typ] = by_type.get(typ, 0) + row_bytes(types, typ, t.ne0) * t.ne1 * t.n
        w = gguf_weights(m, q, TABLE)
        assert w.by_type == by_type and w.total_bytes == sum(by_type.values()), (m.id, preset)
