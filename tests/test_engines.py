"""planner/engines: every runtime profile has an engine, the products delegate to theirs, and the core outside
planner/engines asks the engine instead of comparing runtime names."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from planner import memory as M
from planner import profiles as P
from planner import throughput as tp
from planner.capacity import fit as judge
from planner.capacity import wired_limit
from planner.engines import Engine, adapters, by_name, engine_for, engines, llamacpp, mlxlm

ROOT = Path(__file__).resolve().parent.parent
TABLE = P.ggml_types()


def mm(model: str, runtime: str, quant: str | None = None, **kw) -> M.MemoryModel:
    rt = P.load_runtime(runtime)
    q = P.load_quant(quant or ("Q4_K_M" if rt.weight_format == "gguf" else "4bit"), rt.weight_format)
    return M.memory_model(P.load_model(model), rt, q, TABLE, **kw)


# --------------------------------------------------------------------------- every runtime has an engine
def test_every_runtime_profile_maps_to_an_engine():
    rts = P.all_runtimes()
    assert {r.id for r in rts} >= {"llama.cpp", "mlx-lm", "ollama", "lmstudio-llama.cpp", "lmstudio-mlx"}
    for rt in rts:
        eng = engine_for(rt)
        assert isinstance(eng, Engine), rt.id
        # the engine is the runtime's family (a wrapper's: the engine it wraps), whose speed constants it starts from
        assert eng.name == rt.family == (getattr(rt, "wraps", None) or rt.family), rt.id
        assert isinstance(eng, type(engines()[eng.name])), rt.id  # an adapter is its engine plus overrides


def test_engines_by_kind_and_products_by_id():
    assert engine_for(P.load_runtime("llama.cpp")) is llamacpp.ENGINE
    assert engine_for(P.load_runtime("mlx-lm")) is mlxlm.ENGINE
    assert isinstance(engine_for(P.load_runtime("ollama")), adapters.Ollama)
    assert isinstance(engine_for(P.load_runtime("lmstudio-llama.cpp")), adapters.LmStudioLlamaCpp)
    assert isinstance(engine_for(P.load_runtime("lmstudio-mlx")), adapters.LmStudioMlx)
    # another product on an engine (a user's wrapper profile) gets that engine's rules, not llama-server's extras
    other = P.load_runtime("ollama").model_copy(update={"id": "my-llama-app"})
    eng = engine_for(other)
    assert isinstance(eng, llamacpp.LlamaCpp) and not eng.context_checkpoints
    lms = P.load_runtime("lmstudio-mlx").model_copy(update={"id": "lmstudio-mlx-beta"})
    assert isinstance(engine_for(lms), adapters.LmStudioMlx)


def test_unknown_engine_name_is_refused():
    with pytest.raises(ValueError, match="no engine named"):
        by_name("vllm")


# --------------------------------------------------------------------------- adapters delegate
@pytest.mark.parametrize("model", ["llama-3.1-8b", "gemma-3-12b", "deepseek-coder-v2-lite", "qwen3-next-80b-a3b"])
@pytest.mark.parametrize(("product", "engine", "kv"), [("ollama", "llama.cpp", "f16"),
                                                       ("lmstudio-llama.cpp", "llama.cpp", "q8_0"),
                                                       ("lmstudio-mlx", "mlx-lm", "bf16")])
def test_product_kv_layout_is_its_engines(model, product, engine, kv):
    """Same model, same KV type: the product's cache layout (rotating SWA, MLA latent, recurrent state) is the
    engine's, whatever else its profile changes."""
    m = P.load_model(model)
    a = M.kv_layout(m, P.load_runtime(product), kv, TABLE)
    b = M.kv_layout(m, P.load_runtime(engine), kv, TABLE)
    assert a == b


BOUNDED_TYPES = P.load_runtime("mlx-lm").swa_model_types
BOUNDED_MODELS = [m for m in P.model_ids() if P.load_model(m).config.model_type in BOUNDED_TYPES]


@pytest.mark.parametrize("product", ["lmstudio-mlx", "mlx-vlm"])
@pytest.mark.parametrize("model", BOUNDED_MODELS)
def test_mlx_products_bound_the_caches_mlx_lm_bounds(model, product):
    """mlx-engine (cache_wrapper.py _make_cache) and mlx-vlm (models/cache.py make_prompt_cache) build the model's own
    make_cache(): a sliding-window or chunked layer keeps a bounded cache in LM Studio's MLX engine and mlx-vlm as in
    mlx-lm. At 32k tokens the layout, and so the KV bytes, are mlx-lm's (both profiles listed gemma3 and gpt_oss only:
    Gemma 4 31B in LM Studio held 27.5 GiB of KV at 32k tokens instead of 4.8 GiB, and decoded at that depth as if it
    read them)."""
    m = P.load_model(model)
    ours = M.kv_layout(m, P.load_runtime(product), "bf16", TABLE)
    assert ours == M.kv_layout(m, P.load_runtime("mlx-lm"), "bf16", TABLE)
    assert mm(model, product).estimate(32768).kv_cache == mm(model, "mlx-lm").estimate(32768).kv_cache


def test_adapters_override_only_what_differs():
    for product, base in (("ollama", llamacpp.LlamaCpp), ("lmstudio-llama.cpp", llamacpp.LlamaCpp),
                          ("lmstudio-mlx", mlxlm.MlxLm), ("mlx-vlm", mlxlm.MlxLm)):
        eng = engine_for(P.load_runtime(product))
        own = {k for cls in type(eng).__mro__ if cls is not base and issubclass(cls, base) for k in vars(cls)}
        own -= {"__module__", "__doc__", "__qualname__", "__firstlineno__", "__static_attributes__"}
        # memory and step rules are inherited: an adapter overrides the launch line and product facts only
        # (which loader a product runs: mlx-vlm's keeps a multimodal checkpoint's vision tower)
        assert own <= {"launch", "drafts", "context_checkpoints", "loads_vision_tower"}, (product, own)


def test_product_launch_lines():
    o = mm("llama-3.1-8b", "ollama")
    wl = wired_limit(64, P.load_macos(P.DEFAULT_MACOS))
    fit = judge(o.total(8192, 1), o.weights.total_bytes, wl, o.runtime)
    assert o.engine.launch(o, P.load_quant("Q4_K_M"), 8192, 1, fit).server.endswith("ollama serve")
    s = mm("llama-3.1-8b", "lmstudio-llama.cpp")
    assert s.engine.launch(s, P.load_quant("Q4_K_M"), 8192, 1, fit).server.startswith("lms load")
    ll = mm("llama-3.1-8b", "llama.cpp")
    assert ll.engine.launch(ll, P.load_quant("Q4_K_M"), 8192, 1, fit).server.startswith("llama-server")


def test_ollama_takes_no_draft_and_mlx_drafts_serve_one_request():
    assert not engine_for(P.load_runtime("ollama")).drafts
    assert engine_for(P.load_runtime("llama.cpp")).drafts
    assert engine_for(P.load_runtime("mlx-lm")).draft_one_at_a_time
    assert not engine_for(P.load_runtime("llama.cpp")).draft_one_at_a_time


# --------------------------------------------------------------------------- the rules, once
def test_prefill_chunk_rule():
    """The memory model's chunk, the user's when given: llama.cpp's -ub, mlx-lm's --prefill-step-size; by default
    the runtime's (llama.cpp 512, mlx-lm prefill_step_size 2048)."""
    ll = mm("llama-3.1-8b", "llama.cpp", n_ubatch=1024)
    assert ll.engine.prefill_chunk(ll) == 1024
    mx = mm("llama-3.1-8b", "mlx-lm", n_ubatch=1024)
    rt = P.load_runtime("mlx-lm")
    assert mx.engine.prefill_chunk(mx) == 1024 != rt.prefill_step_size
    default = mm("llama-3.1-8b", "mlx-lm")
    assert default.engine.prefill_chunk(default) == rt.prefill_step_size == 2048
    chip = P.resolve_chip("M4 Max", 40)
    for m in (ll, mx):
        rf = tp.roofline_for(m, chip, P.load_speed_constants(chip, m.runtime.id), tp.geometry(m), P.all_chips())
        assert rf.chunk == m.engine.prefill_chunk(m) and rf.runtime_family == m.engine.name


def test_an_mlx_prefill_step_changes_steps_memory_and_the_launch_line():
    """mlx_lm --prefill-step-size 512 for a 4,096-token prompt: 8 prefill steps instead of 2, each chunk's
    activations a quarter of 2,048's MLP part (S·(2h + 3·ffn)·2 bytes in bf16), and the launch lines
    carry the step asked."""
    from planner.recipes import recipe

    small, big = mm("llama-3.1-8b", "mlx-lm", n_ubatch=512), mm("llama-3.1-8b", "mlx-lm")
    assert small.engine.prefill_steps(4096, 1, small.engine.prefill_chunk(small)) == 8
    assert big.engine.prefill_steps(4096, 1, big.engine.prefill_chunk(big)) == 2
    cfg = small.model.config
    mlp = (2 * cfg.hidden_size + 3 * cfg.ffn_width) * 2  # bytes per chunk token of the MLP phase (bf16)
    a_small, a_big = small.estimate(8192).compute_buffer, big.estimate(8192).compute_buffer
    # the last chunk holds one layer's older K/V (context - chunk tokens) too: a bigger chunk holds less of it
    kv, nl = small.kv.bytes_per_token, cfg.num_hidden_layers
    assert a_big - a_small == (2048 - 512) * mlp + kv * (8192 - 2048) // nl - kv * (8192 - 512) // nl
    chip = P.resolve_chip("M4 Max", 40)
    times = [tp.roofline_for(m, chip, P.load_speed_constants(chip, "mlx-lm"), tp.geometry(m), P.all_chips())
             .prefill_time(4096)[0] for m in (small, big)]
    assert times[0] != times[1]
    fit = judge(small.total(8192, 1), small.weights.total_bytes, wired_limit(64, P.load_macos("15")), small.runtime)
    lines = recipe(small, P.load_quant("4bit", "mlx"), 8192, 1, fit)
    assert "--prefill-step-size 512" in lines.server and "--prefill-step-size 512" in (lines.generate or "")


def test_prefill_steps_by_hand():
    # llama.cpp: ceil(P·B / ub); mlx-lm: ceil(B / prefill_batch) · ceil(P / step)
    assert llamacpp.ENGINE.prefill_steps(3000, 12, 512) == math.ceil(36000 / 512) == 71
    assert mlxlm.ENGINE.prefill_steps(3000, 12, 2048, 8) == 2 * 2
    assert engine_for(P.load_runtime("ollama")).prefill_steps(3000, 12, 512) == 71


def test_one_slot_with_quantized_mlx_kv():
    assert mlxlm.ENGINE.max_slots("kv8") == 1 and mlxlm.ENGINE.max_slots("bf16") is None
    assert llamacpp.ENGINE.max_slots("q4_0") is None


def test_kv_spellings():
    assert llamacpp.ENGINE.kv_alias("q8") == "q8_0" and mlxlm.ENGINE.kv_alias("q8") == "kv8"
    assert llamacpp.ENGINE.quantized_v_needs_flash("q8_0") and not llamacpp.ENGINE.quantized_v_needs_flash("f16")
    assert not mlxlm.ENGINE.quantized_v_needs_flash("kv4")


# --------------------------------------------------------------------------- no runtime names in the core
_NAMES = r"""["'](?:llama\.cpp|mlx-lm|mlx-vlm|ollama|lmstudio[\w.-]*)["']"""
_BRANCH = re.compile(
    r"(?:family|\.kind|\.id)\s*(?:==|!=|not\s+in|in)\s*[\(\[{]?\s*" + _NAMES  # rt.family == "mlx-lm", id in (...)
    + r"|\.id\.startswith\(\s*" + _NAMES  # rt.id.startswith("lmstudio")
    + r"|getattr\([^)]*[\"']kind[\"']")  # getattr(rt, "kind", "") == ...

# branches that stay outside planner/engines, each with why
ALLOWED = {
    ("planner/serve.py", 'sched.kind != "mlx-lm"'):
        "the discrete-event loops of llama-server and mlx_lm.server are the simulator's own; the engine builds the "
        "Scheduler whose kind picks the loop (Engine.scheduler)",
    ("planner/setups.py", 'rt.id == "mlx-lm"'):
        "a product choice, not a rule: with images the plan offers mlx-vlm instead of mlx-lm (both the mlx-lm engine)",
}


def _branches() -> list[tuple[str, str]]:
    out = []
    for p in sorted((ROOT / "planner").rglob("*.py")):
        rel = p.relative_to(ROOT).as_posix()
        if rel.startswith("planner/engines/"):
            continue
        for line in p.read_text(encoding="utf-8").splitlines():
            code = line.split("#", 1)[0]
            for m in _BRANCH.finditer(code):
                out.append((rel, m.group(0), line.strip()))
    return out


def test_the_grep_finds_the_old_branches():
    """The pattern below would have caught the branches this package replaced."""
    for old in ('chunk = rt.prefill_chunk if rt.family == "mlx-lm" else mm.n_ubatch',
                'if runtime.family == "llama.cpp" and lazy > LAZY_MIN_BYTES:',
                'if rt.family not in ("llama.cpp", "mlx-lm"):',
                'if rt.id not in ("llama.cpp", "mlx-lm"):',
                'elif rt.id.startswith("lmstudio"):',
                'if getattr(rt, "kind", "") == "llama.cpp" and first.kv.state_bytes_per_seq:',
                'if mm.runtime.id == "ollama":'):
        assert _BRANCH.search(old), old
    assert not _BRANCH.search('if rt.family not in engines():')


def test_no_runtime_name_branches_outside_engines():
    found = _branches()
    unexplained = [f"{rel}: {line}" for rel, hit, line in found
                   if not any(rel == a and a_hit in line for a, a_hit in ALLOWED)]
    assert not unexplained, "ask planner.engines.engine_for(runtime) instead:\n" + "\n".join(unexplained)
    # the allow-list holds only what is still there
    for rel, hit in ALLOWED:
        assert any(r == rel and hit in line for r, _, line in found), (rel, hit)


def test_decode_attention_vector_kernel_rule():
    """ggml-metal-ops.cpp ggml_metal_op_flash_attn_ext_use_vec: ``(ne01 < 20) && (ne00 % 32 == 0)``: 19 queries of
    one KV stream still run kernel_flash_attn_ext_vec, 20 the tiled kernel; a query head size that is no multiple
    of 32 never does; -fa off runs KQ / KQV mul_mat, not this kernel. mlx-lm: its vector kernel every step, whatever
    the batch, where mlx has one for the head size (scaled_dot_product_attention.cpp sdpa_vector_supported_head_dim:
    query and value heads of one size in 64/96/128/256)."""
    e = llamacpp.ENGINE
    h128, h80, mla = ((128, 128),), ((80, 80),), ((576, 512),)
    assert e.decode_attn_vec(True, 1, h128) and e.decode_attn_vec(True, 19, h128)
    assert not e.decode_attn_vec(True, 20, h128)
    assert not e.decode_attn_vec(True, 1, h80)
    assert not e.decode_attn_vec(False, 1, h128)
    assert e.decode_attn_vec(True, 1, mla)       # 576 = 18 x 32: llama.cpp's vector kernel takes absorbed MLA
    assert not e.decode_attn_vec(True, 1, ((128, 128), (80, 80)))   # one layer without it: the step is not all vec
    assert engine_for(P.load_runtime("ollama")).decode_attn_vec(True, 1, h128)
    m = mlxlm.ENGINE
    assert m.decode_attn_vec(False, 64, h128) and m.decode_attn_vec(False, 1, ((256, 256), (64, 64)))
    # the rule can fail: 80 (EXAONE) and 512 (Gemma 4 full layers) are not mlx vector sizes, nor MLA's 576 over 512
    assert not m.decode_attn_vec(False, 1, h80)
    assert not m.decode_attn_vec(False, 1, ((256, 256), (512, 512)))
    assert not m.decode_attn_vec(False, 1, mla)
    assert engine_for(P.load_runtime("lmstudio-mlx")).decode_attn_vec(False, 1, h128)
    assert not engine_for(P.load_runtime("lmstudio-mlx")).decode_attn_vec(False, 1, mla)


def test_mlx_prefill_unfused_layers_follow_the_fused_kernel_head_sizes():
    """mlx's fused full-attention kernel (more than 8 queries) takes query = value head sizes {64, 72, 80, 96, 128}
    (scaled_dot_product_attention.cpp use_fallback; profiles/runtimes/*mlx*.yaml fused_sdpa_head_dims); any other
    layer runs mlx/fast.cpp's fallback, 6 trips of its score matrix. Gemma 4 26B-A4B: all 30 layers (25 sliding of 256,
    5 global of 512); EXAONE 3.5 2.4B's 80 and Llama 3.1 8B's 128 stay fused; DeepSeek-V3's MLA prefill calls the
    fused kernel on 128-wide decompressed heads (deepseek_v3.py, L > 1): none. gemma2 soft-caps: every layer, 12
    trips. llama.cpp: none (its kernels take them all)."""
    m = mlxlm.ENGINE

    def unfused(model, runtime="mlx-lm"):
        rt = P.load_runtime(runtime)
        layers, passes = engine_for(rt).unfused_prefill_layers(P.load_model(model).config, rt)
        return sorted({c.head_dim or P.load_model(model).config.head_dim for c in layers}), len(layers), passes

    assert unfused("gemma-4-26b-a4b") == ([256, 512], 30, 6)
    assert unfused("gemma-4-26b-a4b", "lmstudio-mlx") == ([256, 512], 30, 6)
    assert unfused("exaone-3.5-2.4b")[1] == 0 and unfused("llama-3.1-8b")[1] == 0
    assert unfused("deepseek-v3")[1] == 0
    assert unfused("gemma-2-9b") == ([256], 42, 12)
    assert unfused("gemma-4-26b-a4b", "llama.cpp") == ([], 0, 0)
    assert m.unfused_prefill_layers(P.load_model("llama-3.1-8b").config, P.load_runtime("mlx-lm")) == ([], 6)


def test_vector_kernel_head_sizes_from_the_config():
    """Absorbed MLA queries are kv_lora_rank + rope = 512 + 64 = 576 wide (GLM-4.7-Flash: 576 % 32 == 0); EXAONE 3.5
    2.4B's 80-wide heads are no multiple of 32 (80 = 2·32 + 16), Llama 3.1 8B's 128 are."""
    assert tp.geometry(mm("glm-4.7-flash", "llama.cpp")).attn_heads == ((576, 512),)
    assert tp.geometry(mm("llama-3.1-8b", "llama.cpp")).attn_heads == ((128, 128),)
    assert tp.geometry(mm("exaone-3.5-2.4b", "llama.cpp")).attn_heads == ((80, 80),)
