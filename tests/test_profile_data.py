"""Data checks for profiles/{chips,macs,models}/*.yaml beyond schema validation: counts, joins, parameter counts."""

from __future__ import annotations

import datetime as dt
import importlib.util
import re
from pathlib import Path

import pytest
import yaml

from planner.schema import Chip, MacProduct, ModelConfig, ModelProfile

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ROOT / "profiles"
DATA = ROOT / "calibration" / "data"  # the reference CSVs the chip and Mac profiles are generated from


def _load_dir(kind: str) -> dict[str, dict]:
    out = {}
    for p in sorted((PROFILES / kind).glob("*.yaml")):
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
        assert isinstance(doc, dict), p
        out[p.stem] = doc
    return out


CHIPS = _load_dir("chips")
MACS = _load_dir("macs")
MODELS = _load_dir("models")

# the strict schemas are the one list of keys; the generated files write every field
CHIP_KEYS = set(Chip.model_fields) - {"backend"}  # only devices measured off a Mac set it (cpu)
MAC_KEYS = set(MacProduct.model_fields)
MODEL_KEYS = set(ModelProfile.model_fields) - {"notes", "native_quant"}  # optional: notes, and native_quant
# (only models published already quantized, e.g. gpt-oss's MXFP4 experts, have one)
OPTIONAL_MODEL_KEYS = {"native_quant"}
CONFIG_KEYS = set(ModelConfig.model_fields)
REQUIRED_MODELS = [
    "llama-2-7b",
    "llama-2-13b",
    "llama-2-70b",
    "llama-3-8b",
    "llama-3-70b",
    "llama-3.1-8b",
    "llama-3.1-70b",
    "llama-3.1-405b",
    "llama-3.2-1b",
    "llama-3.2-3b",
    "llama-3.3-70b",
    "tinyllama-1.1b",
    "qwen2.5-1.5b",
    "qwen2.5-7b",
    "qwen2.5-14b",
    "qwen2.5-32b",
    "qwen2.5-72b",
    "qwen2.5-coder-7b",
    "qwen3-0.6b",
    "qwen3-1.7b",
    "qwen3-4b",
    "qwen3-8b",
    "qwen3-14b",
    "qwen3-32b",
    "qwen3-30b-a3b",
    "qwen3-235b-a22b",
    "qwen3-next-80b-a3b",
    "gemma-2-9b",
    "gemma-2-27b",
    "gemma-3-4b",
    "gemma-3-12b",
    "gemma-3-27b",
    "mistral-7b",
    "mistral-small-24b",
    "mixtral-8x7b",
    "phi-4",
    "deepseek-v3",
    "gpt-oss-20b",
    "gpt-oss-120b",
]
URL = re.compile(r"^https?://\S+$")


def _common(stem: str, doc: dict, keys: set[str], optional: frozenset[str] = frozenset()) -> None:
    assert keys <= set(doc) <= keys | optional, f"{stem}: missing {keys - set(doc)}, extra {set(doc) - keys - optional}"
    assert doc["id"] == stem
    assert isinstance(doc["sources"], list) and doc["sources"], f"{stem}: no sources"
    assert all(isinstance(s, str) and URL.match(s) for s in doc["sources"]), doc["sources"]
    assert isinstance(doc["verified"], dt.date)


# ---------------------------------------------------------------- chips


def test_chip_count():
    assert len(CHIPS) >= 36


@pytest.mark.parametrize("stem", sorted(CHIPS))
def test_chip_file(stem):
    c = CHIPS[stem]
    _common(stem, c, CHIP_KEYS)
    assert stem == f"{c['name'].lower().replace(' ', '-')}-{c['gpu_cores']}gpu"
    assert c["generation"] in {"M1", "M2", "M3", "M4", "M5"} and c["name"].startswith(c["generation"])
    assert c["tier"] in {"base", "pro", "max", "ultra"}
    assert c["status"] in {"shipping", "discontinued", "rumoured"}
    assert c["gpu_matrix_units"] is (c["generation"] == "M5")
    assert c["cpu_cores"] == sorted(set(c["cpu_cores"])) and all(
        isinstance(x, int) and x > 0 for x in c["cpu_cores"]
    )
    assert c["ram_options_gb"] and c["ram_options_gb"] == sorted(set(c["ram_options_gb"]))
    assert isinstance(c["notes"], str) and isinstance(c["tflops_basis"], str)
    if c["status"] != "rumoured":
        assert c["memory_bandwidth_gb_s"] > 50
        assert 2020 <= c["release_year"] <= 2026
    for k in ("gpu_fp32_tflops", "gpu_fp16_tflops", "gpu_clock_ghz"):
        assert c[k] is None or c[k] > 0
    if c["generation"] != "M5":  # Apple publishes no M5 GPU clock/TFLOPS
        assert c["gpu_fp32_tflops"] and c["gpu_clock_ghz"]


# ---------------------------------------------------------------- macs


@pytest.mark.parametrize("stem", sorted(MACS))
def test_mac_file(stem):
    m = MACS[stem]
    _common(stem, m, MAC_KEYS)
    assert m["chip"] in CHIPS, f"{stem}: unknown chip {m['chip']}"
    assert isinstance(m["launch"], str) and re.fullmatch(r"20\d\d-(0[1-9]|1[0-2])", m["launch"])
    slug = re.sub(r"[^a-z0-9]+", "-", m["product"].lower()).strip("-")
    base = f"{slug}-{m['launch']}-{m['chip']}-{m['ram_gb']}gb"
    assert stem in (base, f"{base}-{m['cpu_cores']}cpu")
    assert m["form_factor"] == ("laptop" if m["product"].startswith("MacBook") else "desktop")
    assert m["price_usd"] > 0 and isinstance(m["discontinued"], bool)
    # an estimated price names its anchor; a found one says how it was found
    assert (m["price_confidence"] == "estimated") == m["price_basis"].startswith("estimated: anchor ")
    assert m["storage_gb"] is None or m["storage_gb"] >= 256
    if m["ram_gb"] not in CHIPS[m["chip"]]["ram_options_gb"]:
        assert "not in apple_skus.csv ram options" in m["notes"], f"{stem}: {m['ram_gb']} GB not on {m['chip']}"


def test_every_mac_configuration_is_a_profile():
    # calibration/data/mac_configs.csv: one profile per row (196 product × chip bin × RAM configurations)
    with open(ROOT / "calibration" / "data" / "mac_configs.csv", encoding="utf-8") as f:
        assert len(MACS) == sum(1 for _ in f) - 1


def _load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_hardware_profiles_up_to_date(tmp_path):
    """profiles/chips and profiles/macs are exactly what the generators make from calibration/data."""
    _load_script("gen_hardware_profiles").main(["--out-dir", str(tmp_path)])
    _load_script("gen_mac_configs").main(["--out-dir", str(tmp_path)])
    for kind in ("chips", "macs"):
        fresh = {p.name: p.read_text() for p in (tmp_path / kind).glob("*.yaml")}
        committed = {p.name: p.read_text() for p in (PROFILES / kind).glob("*.yaml")}
        assert fresh == committed, f"profiles/{kind} is stale: re-run scripts/gen_hardware_profiles.py / gen_mac_configs.py"


# ---------------------------------------------------------------- models


def param_count(c: dict) -> int:  # noqa: C901 - one branch per layer kind, as the transformers files read
    """Total parameters from a HF-style config [count]: embeddings (+ untied head), attention, MLP/MoE, norms.

    Layouts follow transformers modeling_{llama,qwen2,qwen3_moe,qwen3_next,mixtral,gpt_oss,deepseek_v3}.py.
    Tiny terms (conv kernels, sinks, A_log/dt_bias, per-head q/k norms) are ignored: well below 0.1%.
    """
    h, n_layers, vocab = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
    nh, kvh, hd = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    total = vocab * h * (1 if c.get("tie_word_embeddings") else 2) + h  # embed (+ lm_head) + final norm
    types = c.get("layer_types") or ["full_attention"] * n_layers
    for i, kind in enumerate(types):
        total += 2 * h  # input / post-attention norms
        # --- token mixer
        if kind == "linear_attention":  # Qwen3-Next gated DeltaNet
            key_dim = c["linear_num_key_heads"] * c["linear_key_head_dim"]
            value_dim = c["linear_num_value_heads"] * c["linear_value_head_dim"]
            total += h * (2 * key_dim + 2 * value_dim)  # in_proj_qkvz
            total += h * 2 * c["linear_num_value_heads"]  # in_proj_ba
            total += (2 * key_dim + value_dim) * c["linear_conv_kernel_dim"]  # depthwise conv1d
            total += value_dim * h  # out_proj
        elif "kv_lora_rank" in c:  # MLA (DeepSeek V2/V3)
            qk = c["qk_nope_head_dim"] + c["qk_rope_head_dim"]
            qr, kvr = c.get("q_lora_rank"), c["kv_lora_rank"]
            total += (h * qr + qr + qr * nh * qk) if qr else h * nh * qk
            total += (
                h * (kvr + c["qk_rope_head_dim"]) + kvr + kvr * nh * (c["qk_nope_head_dim"] + c["v_head_dim"])
            )
            total += nh * c["v_head_dim"] * h
        else:
            # gated attention (Qwen3-Next, Qwen3.5/3.6 attn_output_gate): q_proj emits query + gate
            q_mult = 2 if c["model_type"] in ("qwen3_next", "qwen3_5", "qwen3_5_moe") else 1
            total += h * nh * hd * q_mult + 2 * h * kvh * hd + nh * hd * h
            if c.get("attention_bias"):
                total += nh * hd + 2 * kvh * hd + (0 if c["model_type"] == "qwen2" else h)
        # --- MLP / MoE
        n_exp = c.get("num_experts") or c.get("num_local_experts") or c.get("n_routed_experts")
        if c.get("n_routed_experts"):
            is_moe = i >= c.get("first_k_dense_replace", 0) and i % c.get("moe_layer_freq", 1) == 0
        elif c.get("num_experts"):
            is_moe = i not in c.get("mlp_only_layers", []) and (i + 1) % c.get("decoder_sparse_step", 1) == 0
        elif c.get("interleave_moe_layer_step"):  # Llama 4: layers step-1, 2*step-1, ... are MoE
            is_moe = (i + 1) % c["interleave_moe_layer_step"] == 0
        else:
            is_moe = bool(n_exp)
        if is_moe:
            f = c.get("moe_intermediate_size") or c["intermediate_size"]
            total += n_exp * 3 * h * f + h * n_exp  # experts + router
            if c["model_type"] == "gpt_oss":
                total += n_exp * (3 * f + h) + n_exp  # expert and router biases
            if c.get("n_shared_experts"):
                total += c["n_shared_experts"] * 3 * h * f
            if c.get("shared_expert_intermediate_size"):
                total += 3 * h * c["shared_expert_intermediate_size"]
                total += h if c["model_type"] == "qwen2_moe" else 0  # Qwen2-MoE gates its shared expert
        elif c.get("use_double_wide_mlp"):  # Gemma 4 E2B/E4B: the KV-shared layers' MLP is twice as wide
            wide = i >= n_layers - c.get("num_kv_shared_layers", 0)
            total += 3 * h * c["intermediate_size"] * (2 if wide else 1)
        elif c["model_type"] == "apertus":  # modeling_apertus.py ApertusMLP: up_proj and down_proj, no gate (xIELU)
            total += 2 * h * c["intermediate_size"]
        else:
            total += 3 * h * c.get("intermediate_size_mlp", c["intermediate_size"])
        if c.get("hidden_size_per_layer_input"):  # Gemma 4 per-layer input: gate, projection, post norm
            total += 2 * h * c["hidden_size_per_layer_input"] + h
    if c.get("hidden_size_per_layer_input"):  # transformers modeling_gemma4.py Gemma4TextModel: the PLE table and
        ple = c["hidden_size_per_layer_input"]  # the model-wide projection into it (+ its norm)
        total += c["vocab_size_per_layer_input"] * n_layers * ple + h * n_layers * ple + ple
    if c.get("mtp_num_hidden_layers"):  # Qwen3.5/3.6 checkpoints hold the MTP block the card total counts:
        # mtp.fc (2h -> h), pre-fc norms for the embedding and the hidden state, one full-attention decoder layer
        # and its final norm (transformers modeling_qwen3_5.py / vLLM qwen3_5_mtp.py)
        one = {**c, "num_hidden_layers": 1, "layer_types": ["full_attention"], "vocab_size": 0,
               "tie_word_embeddings": True, "mlp_only_layers": [], "mtp_num_hidden_layers": 0}
        layer = param_count(one) - h  # one layer and its norms, no embedding, no final norm
        total += c["mtp_num_hidden_layers"] * (layer + 2 * h * h + 3 * h)
    return total


@pytest.mark.parametrize("stem", sorted(MODELS))
def test_model_file(stem):
    m = MODELS[stem]
    _common(stem, m, MODEL_KEYS, frozenset(OPTIONAL_MODEL_KEYS))
    c = m["config"]
    assert set(c) <= CONFIG_KEYS, f"{stem}: keys not allowed {set(c) - CONFIG_KEYS}"
    for k in (
        "model_type",
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "intermediate_size",
        "vocab_size",
    ):
        assert k in c, f"{stem}: config.{k} missing"
    assert c["num_attention_heads"] % c["num_key_value_heads"] == 0
    assert isinstance(m["gated"], bool) and re.fullmatch(r"[\w.-]+/[\w.-]+", m["hf_repo"])
    assert m["params_b"] > 0
    is_moe = any(c.get(k) for k in ("num_experts", "num_local_experts", "n_routed_experts"))  # 0: no experts
    assert (m["active_params_b"] is not None) == is_moe
    if is_moe:
        assert 0 < m["active_params_b"] < m["params_b"]
    assert m["vision_params_b"] is None or 0 < m["vision_params_b"] < 0.2 * m["params_b"]


@pytest.mark.parametrize("stem", sorted(MODELS))
def test_model_layer_types(stem):
    c = MODELS[stem]["config"]
    n = c["num_hidden_layers"]
    types = c.get("layer_types")
    mt = c["model_type"]
    if mt in {"gemma2", "gemma3_text", "gpt_oss", "qwen3_next"}:
        assert types is not None and len(types) == n, f"{stem}: layer_types must list all {n} layers"
    if types is None:
        assert "sliding_window" not in c, f"{stem}: sliding_window without layer_types"
        return
    assert len(types) == n and set(types) <= {"full_attention", "sliding_attention", "linear_attention",
                                              "chunked_attention"}
    assert ("chunked_attention" in types) == (c.get("attention_chunk_size") is not None)
    assert ("sliding_attention" in types) == (c.get("sliding_window") is not None)
    if mt in {"gemma2", "gpt_oss"}:
        expected = ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n)]
    elif mt == "gemma3_text":
        expected = ["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(n)]
    elif mt == "llama4":  # transformers configuration_llama4.py: every 4th layer is global NoPE attention
        expected = ["full_attention" if (i + 1) % 4 == 0 else "chunked_attention" for i in range(n)]
    elif mt == "qwen3_next":
        iv = c["full_attention_interval"]
        expected = ["full_attention" if (i + 1) % iv == 0 else "linear_attention" for i in range(n)]
    else:
        expected = types
    assert types == expected


def test_qwen25_has_no_sliding_window():
    for m in MODELS.values():
        if m["config"]["model_type"] == "qwen2":
            assert "sliding_window" not in m["config"] and "layer_types" not in m["config"]


# Layouts this independent count does not restate (Mamba-2 / short-conv / KDA hybrids): their parameter counts are
# pinned against mlx-lm's own model (tests/crosscheck/test_crosscheck_hybrid.py) and tests/test_hybrid.py by hand
NOT_COUNTED_HERE = {"nemotron_h", "granitemoehybrid", "falcon_h1", "jamba", "lfm2", "lfm2_moe", "kimi_linear",
                    # ERNIE 4.5's MoE keys (moe_num_experts, moe_layer_start_index...): the planner's reading is
                    # cross-checked against mlx-lm in tests/crosscheck/test_crosscheck_families26.py
                    "ernie4_5_moe"}


@pytest.mark.parametrize("stem", sorted(s for s, m in MODELS.items() if m["config"]["model_type"] not in NOT_COUNTED_HERE))
def test_model_param_count(stem):
    m = MODELS[stem]
    derived_b = param_count(m["config"]) / 1e9 + (m["vision_params_b"] or 0.0)
    # a published total counts the MTP block (the Hub totals of Qwen3.5 0.8B/2B/4B) or not (the 35B-A3B card's 35B)
    no_mtp_b = param_count({**m["config"], "mtp_num_hidden_layers": 0}) / 1e9 + (m["vision_params_b"] or 0.0)
    assert any(d == pytest.approx(m["params_b"], rel=0.025) for d in (derived_b, no_mtp_b)), (
        f"{stem}: derived {derived_b:.3f}B ({no_mtp_b:.3f}B without MTP) vs {m['params_b']}B"
    )


@pytest.mark.parametrize(
    ("stem", "expected_b"),
    [
        ("llama-3.1-8b", 8.03),
        ("llama-3.1-405b", 405.85),
        ("qwen3-30b-a3b", 30.53),
        ("deepseek-v3", 671.0),
        ("gpt-oss-120b", 116.83),
        ("mixtral-8x7b", 46.70),
        ("qwen3-next-80b-a3b", 79.67),
    ],
)
def test_param_count_golden(stem, expected_b):
    assert param_count(MODELS[stem]["config"]) / 1e9 == pytest.approx(expected_b, rel=0.005)


def test_required_models_present():
    assert sorted(set(REQUIRED_MODELS) - set(MODELS)) == []


def test_aliases_unique():
    def norm(name: str) -> str:  # the matcher is case-insensitive and strips an "org/" prefix
        return name.lower().split("/", 1)[-1]

    owner: dict[str, str] = {}
    for stem, m in MODELS.items():
        names = {norm(stem), norm(m["hf_repo"])} | {norm(a) for a in m["aliases"]}
        assert all(isinstance(a, str) and a for a in m["aliases"])
        for n in names:
            assert owner.setdefault(n, stem) == stem, f"alias {n!r} used by {owner[n]} and {stem}"


@pytest.mark.parametrize(
    "alias",
    [
        "llama3.1:8b",
        "qwen3:30b-a3b",
        "gemma3:27b",
        "gpt-oss:20b",
        "mistral-small:24b",
        "phi4:14b",
        "deepseek-r1:671b",
        "mixtral:8x7b",
        "qwen2.5-coder:7b",
        "deepseek-r1",
        "deepseek-ai/DeepSeek-R1",
    ],
)
def test_common_aliases_present(alias):
    all_aliases = {a.lower() for m in MODELS.values() for a in m["aliases"]}
    assert alias.lower() in all_aliases


def test_estimated_price_rule_hand_checked():
    # Mac Studio (2025) M4 Max 16/40 with 128 GB has no price in mac_configs.csv. Anchor: the 14/32 36 GB at $1,999
    # (high). RAM step of Max/Ultra chips: MacBook Pro 16 M4 Max 48 → 128 GB, $3,999 → $4,999 = $12.50/GB (the
    # median of such pairs). Bin step of the M4 Max: MacBook Pro 16 14/32 36 GB $3,499 → 16/40 48 GB $3,999, less
    # 12 GB × $12.50 = $350. So 1,999 + 92 × 12.5 + 350 = 3,499.
    m = MACS["mac-studio-2025-03-m4-max-40gpu-128gb"]
    assert m["price_usd"] == 3499 and m["price_confidence"] == "estimated"
    assert "$1,999" in m["price_basis"] and "$350 GPU bin step" in m["price_basis"]
    # Mac mini M4 Pro 12/16 with 64 GB: $1,399 (24 GB) + 40 GB × $25 (base/Pro step: Mac mini M4 16 → 24 GB,
    # $599 → $799) = $2,399
    assert MACS["mac-mini-2024-11-m4-pro-16gpu-64gb"]["price_usd"] == 2399
    # a found price stays as found
    assert MACS["mac-studio-2025-03-m4-max-32gpu-36gb"]["price_usd"] == 1999
    assert MACS["mac-studio-2025-03-m4-max-32gpu-36gb"]["price_confidence"] == "high"


def test_chip_bandwidth_is_data_rate_times_bus_width_over_8():
    """Rule (issue 34): each chip row's memory_bandwidth_GBps is its memory_type's data rate [MT/s] × bus width
    [bit] / 8, from the CSV's own columns (Apple quotes LPDDR5-6400 × 128 bit = 102.4 GB/s as 100: within 3 %);
    rows that do not state both are skipped."""
    import csv

    with open(Path(__file__).resolve().parent.parent / "calibration" / "data" / "apple_skus.csv",
              encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    checked = 0
    for r in rows:
        m = re.search(r"-(\d{4,5}),\s*(\d{2,4})-bit", r["memory_type"])
        if not m or not r["memory_bandwidth_GBps"]:
            continue
        calc = int(m[1]) * int(m[2]) / 8 / 1000
        assert abs(float(r["memory_bandwidth_GBps"]) - calc) <= 0.03 * calc, (r["chip"], r["variant"], calc)
        checked += 1
    assert checked >= 30
