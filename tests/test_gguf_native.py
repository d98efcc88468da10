"""Models published already quantized (ModelProfile.native_quant): gpt-oss ships its MoE experts in MXFP4.

llama.cpp's converter writes them as ggml MXFP4 whatever --outtype is (conversion/gpt_oss.py GptOssModel:
dequant_model skipped, repack_mxfp4 with raw_dtype MXFP4) and llama-quantize never turns an already-quantized
tensor into another type (src/llama-quant.cpp llama_model_quantize_impl: a tensor whose target is its own type is
copied, any other is 'requantizing from type MXFP4 is disabled'), so every published preset keeps the experts at
MXFP4 and differs only in the ~1-5 % of attention and embedding weights."""

from __future__ import annotations

import pytest

from planner import profiles as P
from planner.advice import quality_of
from planner.memory import gguf_weights
from planner.search import quants_for

GB, GiB = 1e9, 2**30

# Published GGUF sizes (file or tensor-data size), with where each was read.
BARTOWSKI_20B = "https://huggingface.co/bartowski/openai_gpt-oss-20b-GGUF (README table, llama.cpp b6096)"
UNSLOTH_120B = ("https://huggingface.co/unsloth/gpt-oss-120b-GGUF (sizes as listed by "
                "https://ailocalcheck.com/model/unsloth/gpt-oss-120b-GGUF; the F16 row equals llama-bench's 60.87 GiB "
                "below, so the unit is GiB)")
FRAMEWORK_BENCH = ("https://community.frame.work/t/will-the-ai-max-395-128gb-be-able-to-run-gpt-oss-120b/73280/26 "
                   "(llama-bench 'size' column = tensor bytes)")
PUBLISHED = [
    # model, preset, bytes, source
    ("gpt-oss-20b", "MXFP4_MOE", 12.1 * GB, BARTOWSKI_20B),
    ("gpt-oss-20b", "Q6_K", 12.04 * GB, BARTOWSKI_20B),  # "Q6_K with all FFN kept at MXFP4_MOE"
    ("gpt-oss-120b", "MXFP4_MOE", 59.02 * GiB, FRAMEWORK_BENCH + ", ggml-org/gpt-oss-120b-GGUF mxfp4"),
    ("gpt-oss-120b", "F16", 60.87 * GiB, FRAMEWORK_BENCH + ", unsloth gpt-oss-120b-F16.gguf"),
    ("gpt-oss-120b", "Q8_0", 59.03 * GiB, UNSLOTH_120B),
    ("gpt-oss-120b", "Q6_K", 58.94 * GiB, UNSLOTH_120B),
    ("gpt-oss-120b", "Q5_K_M", 58.57 * GiB, UNSLOTH_120B),
    ("gpt-oss-120b", "Q4_K_M", 58.46 * GiB, UNSLOTH_120B),
    ("gpt-oss-120b", "Q4_0", 58.32 * GiB, UNSLOTH_120B),
    ("gpt-oss-120b", "Q3_K_M", 58.33 * GiB, UNSLOTH_120B),
    ("gpt-oss-120b", "Q2_K", 58.27 * GiB, UNSLOTH_120B),
]


def _weights(model: str, preset: str):
    return gguf_weights(P.load_model(model), P.load_quant(preset, "gguf"), P.ggml_types())


@pytest.mark.parametrize("model,preset,published,source", PUBLISHED)
def test_gpt_oss_presets_match_published_sizes(model, preset, published, source):
    got = _weights(model, preset).total_bytes
    assert abs(got / published - 1) < 0.03, (model, preset, got / GB, published / GB, source)


def test_gpt_oss_120b_mxfp4_is_the_ggml_org_file_to_the_10_mib():
    """ggml-org/gpt-oss-120b-GGUF mxfp4: llama-bench reports 59.02 GiB of tensors (FRAMEWORK_BENCH); with the F32
    biases and sinks the planner's count is within 0.01 GiB of it (well inside the 3 % the issue asks)."""
    assert abs(_weights("gpt-oss-120b", "MXFP4_MOE").total_bytes / GiB - 59.02) < 0.01


@pytest.mark.parametrize("model,layers,experts", [("gpt-oss-20b", 24, 32), ("gpt-oss-120b", 36, 128)])
@pytest.mark.parametrize("preset", ["F16", "Q8_0", "Q6_K", "Q4_K_M", "Q2_K", "IQ4_XS"])
def test_every_preset_keeps_the_experts_in_mxfp4(model, layers, experts, preset):
    """gate, up and down experts: 3 · layers · experts · 2880 · 2880 weights (config.json hidden_size =
    intermediate_size = 2880), MXFP4 = 17 bytes per 32 weights (ggml-common.h block_mxfp4); their biases
    (3 · 2880 per expert per layer) stay F32."""
    w = _weights(model, preset)
    n = 3 * layers * experts * 2880 * 2880
    assert w.by_type["MXFP4"] == n // 32 * 17
    assert w.by_group["experts"] == n // 32 * 17 + 4 * 3 * 2880 * experts * layers


def test_the_rest_follows_the_preset():
    """Only the non-expert tensors change with the preset: Q8_0 is larger than Q4_K_M by less than the whole
    non-expert weight count times (8.5 - 4.5) bits, and far less than a Q8_0 of the experts would add."""
    q8, q4 = _weights("gpt-oss-20b", "Q8_0"), _weights("gpt-oss-20b", "Q4_K_M")
    rest = q8.n_params - 3 * 24 * 32 * 2880 * 2880
    assert 0 < q8.total_bytes - q4.total_bytes < rest * 4 / 8


def test_models_without_a_native_format_are_unchanged():
    """A bf16 MoE (qwen3-30b-a3b) keeps the preset's own expert type: Q8_0 experts are 34 bytes per 32."""
    m = P.load_model("qwen3-30b-a3b")
    assert m.native_quant is None
    w = gguf_weights(m, P.load_quant("Q8_0", "gguf"), P.ggml_types())
    assert "MXFP4" not in w.by_type


# --------------------------------------------------------------------------- which formats are searched
def test_mlx_search_does_not_up_cast_a_native_mxfp4_model():
    """mlx-mxfp4 stores 4 + 8/32 = 4.25 bits per weight; the affine formats store bits + 32/group (bf16 scale and
    bias): 4.5 at 4-bit g64, 8.5 at 8-bit g64, so none of them is searched for gpt-oss."""
    for model in ("gpt-oss-20b", "gpt-oss-120b"):
        ids = [q.id for q in quants_for(P.load_model(model), P.load_runtime("mlx-lm"))]
        assert ids == ["mlx-mxfp4"]
        gg = [q.id for q in quants_for(P.load_model(model), P.load_runtime("llama.cpp"))]
        assert gg[0] == "MXFP4_MOE" and "Q8_0" in gg


def test_other_models_keep_the_full_mlx_list():
    ids = [q.id for q in quants_for(P.load_model("qwen3-30b-a3b"), P.load_runtime("mlx-lm"))]
    assert "mlx-8bit-g64" in ids and "mlx-mxfp4" in ids and ids[0] != "mlx-mxfp4"


def test_native_format_counts_as_lossless_for_its_model_only():
    q = P.load_quant("mlx-mxfp4", "mlx")
    assert quality_of(q, P.load_model("gpt-oss-120b")).tier == "lossless"
    assert quality_of(q, P.load_model("qwen3-30b-a3b")) == quality_of(q)


def test_recommend_gpt_oss_120b_on_192gb_is_not_an_8bit_up_cast():
    from planner.advice import recommend
    from planner.workload import load_workload

    rec = recommend("gpt-oss-120b", 192, load_workload("chat"), top=50)
    mlx = [o for o in rec.options if o.runtime == "mlx-lm"]
    assert mlx and all(o.quant == "mlx-mxfp4" for o in mlx)
    # every option holds ~59 GiB of weights, not the 124 GB of a Q8_0 / 8-bit up-cast
    assert all(o.memory_bytes < 70 * GiB for o in rec.options)


def test_a_gpt_oss_folder_in_mxfp4_gets_the_native_format(tmp_path):
    """A local gpt-oss config.json (e.g. a fine-tune) with quantization_config.quant_method mxfp4 resolves with the
    same native format as the catalog entry, so its GGUF presets keep the MXFP4 experts too; without it (a bf16
    fine-tune) the experts follow the preset."""
    import json

    from sources import resolve_folder

    cfg = P.load_model("gpt-oss-20b").config.model_dump(exclude_none=True)
    for quantized in (True, False):
        d = tmp_path / f"oss-{quantized}"
        d.mkdir()
        raw = {**cfg, "architectures": ["GptOssForCausalLM"]}
        if quantized:
            raw["quantization_config"] = {"quant_method": "mxfp4"}
        (d / "config.json").write_text(json.dumps(raw))
        prof = resolve_folder(d).profile
        w = gguf_weights(prof, P.load_quant("Q8_0", "gguf"), P.ggml_types())
        assert (prof.native_quant is not None) == quantized
        assert ("MXFP4" in w.by_type) == quantized


def test_plan_models_on_36gb_runs_gpt_oss_20b_in_its_own_format():
    """Issue 31: plan models on a 36 GB Mac listed gpt-oss-20b as 'Q8_0, 21.5 GiB'. Its Q8_0 and MXFP4_MOE files
    are the same 12.1 GB (experts MXFP4 in both), and the native format sorts first: on llama.cpp the row is
    MXFP4_MOE at < 12 GiB of weights + KV + buffers at 8K; on MLX it is mlx-mxfp4, never an 8-bit up-cast."""
    from planner import models as M

    rows = {rt: next(r for r in M.what_runs(M.Query(ram_gb=36, runtimes=(rt,))).rows if r.model == "gpt-oss-20b")
            for rt in ("llama.cpp", "mlx-lm")}
    assert rows["llama.cpp"].quant == "MXFP4_MOE" and rows["llama.cpp"].memory_bytes < 13 * GiB
    assert rows["mlx-lm"].quant == "mlx-mxfp4" and rows["mlx-lm"].memory_bytes < 13 * GiB
