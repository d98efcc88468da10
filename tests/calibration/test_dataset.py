"""calibration.dataset: the cleaning layer between measured_benchmarks_train.csv and the speed fit."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from calibration.dataset import (
    DEFAULT_PATH,
    FIXES,
    REQUIRED_COLUMNS,
    DatasetError,
    _map_model,
    _normalize_quant,
    explain_exclusion,
    load_measurements,
    usable_for_efficiency,
)
from planner.errors import PlannerError

N_ROWS = 1077  # calibration/data/README.md


@pytest.fixture(scope="module")
def ms():
    return load_measurements()


@pytest.fixture(scope="module")
def by_id(ms):
    return {m.row_id: m for m in ms}


def test_every_row_loads(ms):
    with DEFAULT_PATH.open(newline="") as fh:
        raw_ids = [int(r["row_id"]) for r in csv.DictReader(fh)]
    assert len(ms) == len(raw_ids) == N_ROWS
    assert [m.row_id for m in ms] == raw_ids
    # FIXES name rows of any measurement CSV (row ids are unique across them: the community file's from 20001)
    every = set(raw_ids)
    for other in DEFAULT_PATH.parent.glob("measured_benchmarks_*.csv"):
        with other.open(newline="") as fh:
            every |= {int(r["row_id"]) for r in csv.DictReader(fh)}
    assert FIXES.keys() <= every


def test_measurements_are_frozen(by_id):
    with pytest.raises(ValidationError):
        by_id[5].value = 1.0  # type: ignore[misc]


# (row_id, expected normalized fields), read by hand from the CSV
KNOWN = [
    # llama.cpp #4167 table (secondary transcription), M1 8-core, pp512
    (
        5,
        {
            "chip_id": "m1-8gpu",
            "runtime_family": "llama.cpp",
            "model_id": "llama-2-7b",
            "quant_id": "Q8_0",
            "metric": "pp_tps",
            "value": 117.25,
            "prompt_tokens": 512,
            "context_depth": 0,
            "batch": 1,
            "flash_attn": False,
            "year_month": "2023-11",
        },
    ),
    # same table, tg128 from an empty cache: an average over contexts 0..128
    (6, {"chip_id": "m1-8gpu", "metric": "tg_tps", "value": 7.91, "gen_tokens": 128, "context_depth": 0}),
    # batched-bench README: LLaMA-1 7B (proxy), F16 inferred, maintainer M2 Ultra inferred, B=4 aggregate
    (
        189,
        {
            "chip_id": "m2-ultra-76gpu",
            "model_id": "llama-2-7b",
            "quant_id": "F16",
            "metric": "batched_tg_tps",
            "value": 74.44,
            "batch": 4,
            "flash_attn": False,
            "year_month": "2023-10",
        },
    ),
    # benches/mac-m2-ultra: gpt-oss-20b MXFP4 pp2048, build 7948, FA on
    (
        570,
        {
            "chip_id": "m2-ultra-76gpu",
            "runtime_family": "llama.cpp",
            "model_id": "gpt-oss-20b",
            "quant_id": "MXFP4_MOE",
            "metric": "pp_tps",
            "value": 2713.4,
            "prompt_tokens": 2048,
            "flash_attn": True,
            "llama_cpp_build": 7948,
            "year_month": "2026-02",
        },
    ),
    # ds4 custom engine on an M3 Max 40-core; 'short' prompt label kept, no token count
    (
        291,
        {
            "chip_id": "m3-max-40gpu",
            "runtime_family": "custom",
            "model_id": None,
            "quant_id": None,
            "prompt_tokens": None,
            "prompt_label": "short",
            "params_B": 284.0,
        },
    ),
    # Rapid-MLX: custom engine even though the weights are a stock mlx-community 4-bit
    (
        1078,
        {
            "chip_id": "m3-ultra-60gpu",
            "runtime_family": "custom",
            "model_id": "llama-3.1-8b",
            "quant_id": "mlx-4bit-g64",
            "context_depth": 512,
            "year_month": "2026-06",
        },
    ),
    # llmfit mlx-lm server row: end-to-end, M2 Pro bin unknown
    (440, {"chip_id": None, "runtime_family": "mlx-lm", "model_id": "llama-3.1-8b", "metric": "tg_tps_e2e"}),
    # llmfit ollama on an M5 Max 48 GB (only the 40-core bin ships 48 GB), tag default -> Q4_K_M
    (
        1333,
        {
            "chip_id": "m5-max-40gpu",
            "runtime_family": "ollama",
            "model_id": "llama-3.1-8b",
            "quant_id": "Q4_K_M",
            "value": 89.26,
            "gen_tokens": 214,
            "context_depth": None,
        },
    ),
    # mlx-lm DeepSeek-V3 on an M3 Ultra 512 GB (80-core), 4-bit inferred from memory
    (
        354,
        {
            "chip_id": "m3-ultra-80gpu",
            "runtime_family": "mlx-lm",
            "model_id": "deepseek-v3",
            "quant_id": "mlx-4bit-g64",
            "prompt_tokens": 4096,
            "year_month": "2026-02",
        },
    ),
    # mlx-vlm bf16 K2-Horizon: uncatalogued, params kept
    (
        472,
        {
            "chip_id": "m3-ultra-80gpu",
            "runtime_family": "other-mlx",
            "model_id": None,
            "params_B": 1.0,
            "quant_id": "mlx-bf16",
            "value": 8969.0,
        },
    ),
    # Mac mini M4 (every config is 10-core GPU)
    (
        434,
        {
            "chip_id": "m4-10gpu",
            "runtime_family": "llama.cpp",
            "model_id": "llama-3.1-8b",
            "quant_id": "Q4_K_M",
            "flash_attn": None,
            "year_month": "2026-03",
        },
    ),
]


@pytest.mark.parametrize("row_id,expected", KNOWN, ids=[str(k[0]) for k in KNOWN])
def test_known_rows(by_id, row_id, expected):
    m = by_id[row_id]
    got = {k: getattr(m, k) for k in expected}
    assert got == expected


def test_flags_on_known_rows(by_id):
    assert "old-tg-average" in by_id[6].flags
    assert {"inferred-hardware", "architecture-proxy", "inferred-quant"} <= set(by_id[189].flags)
    assert by_id[189].model_note and "LLaMA-1" in by_id[189].model_note
    assert by_id[189].per_sequence_value == pytest.approx(74.44 / 4)
    assert "custom-engine" in by_id[291].flags
    assert "end-to-end" in by_id[440].flags
    assert {"inferred-hardware", "inferred-quant", "depth-unknown"} <= set(by_id[1333].flags)


def test_qwen3_coder_maps_to_its_own_profile(ms):
    # profiles/models/qwen3-coder-30b-a3b.yaml exists: the exact model, no architecture proxy
    coder = [m for m in ms if m.model.startswith("Qwen3-Coder-30B-A3B")]
    assert coder and all(
        m.model_id == "qwen3-coder-30b-a3b" and "architecture-proxy" not in m.flags for m in coder
    )


def test_uncatalogued_models_stay_none(ms):
    for m in ms:
        low = m.model.lower()
        if any(
            s in low
            for s in (
                "deepseek-v4",
                "k2-horizon",
                "minimax",
                "deepseek-coder-6.7b",
                "nemotron-3-nano:4b",
                "rnj-1",
            )
        ):
            assert m.model_id is None, m.row_id


@pytest.mark.parametrize(
    "raw, expected",
    [
        # Qwen3.5 / 3.6 hybrids: every spelling of the data, sizes never bleed into each other
        ("qwen3.6-35b-a3b (MLX 4bit)", "qwen3.6-35b-a3b"),
        ("Qwen3.6-35B-A3B (hybrid linear-attn MoE)", "qwen3.6-35b-a3b"),
        ("mlx-community/Qwen3.6-35B-A3B-4bit", "qwen3.6-35b-a3b"),
        ("qwen3.6-27b", "qwen3.6-27b"),
        ("qwen3.6-27b (MLX mxfp4)", "qwen3.6-27b"),
        ("qwen3.8-27b (Ollama Q4_K_M, llama.cpp engine)", "qwen3.8-27b"),
        ("mlx-community/Qwen2.5-0.5B-Instruct-4bit", "qwen2.5-0.5b"),
        ("mlx-community/Qwen2.5-3B-Instruct-4bit", "qwen2.5-3b"),
        (
            "Qwen3.5-27B",
            "qwen3.6-27b",
        ),  # architecture proxy (THUDM/slime qwen3.5-27B.sh = Qwen3.6-27B config)
        ("Qwen3.5-35B-A3B-4bit", "qwen3.5-35b-a3b"),
        ("qwen3.5-35b-a3b (LM Studio MLX: qwen3.5-35b-a3b)", "qwen3.5-35b-a3b"),
        ("Qwen3.5-9B", "qwen3.5-9b"),
        ("qwen3.5:9b", "qwen3.5-9b"),
        ("mlx-community/Qwen3.5-4B-4bit", "qwen3.5-4b"),
        # Gemma 4 (E2B/E4B with per-layer embeddings, 26B-A4B MoE, 31B dense)
        ("gemma-4-e2b (MLX 4bit)", "gemma-4-e2b"),
        ("gemma-4-e4b", "gemma-4-e4b"),
        ("gemma-4-31b (MLX mxfp4)", "gemma-4-31b"),
        ("gemma-4-26b-a4b", "gemma-4-26b-a4b"),
        ("gemma4:e2b", "gemma-4-e2b"),
        ("gemma-3-1b-it", "gemma-3-1b"),
        ("gemma-3-1b-it (MLX 4bit)", "gemma-3-1b"),
        # distills and renamed checkpoints that the catalog holds under their own id
        ("DeepSeek-R1-Distill-Qwen-7B", "deepseek-r1-distill-qwen-7b"),
        ("DeepSeek-R1-Distill-Qwen-1.5B (MLX 4bit)", "deepseek-r1-distill-qwen-1.5b"),
        ("DeepSeek-R1-Distill-Qwen-32B-MLX-4bit", "deepseek-r1-distill-qwen-32b"),
        ("deepseek-r1:14b", "deepseek-r1-distill-qwen-14b"),
        ("DeepSeek-R1-Distill-Llama-8B", "deepseek-r1-distill-llama-8b"),
        ("deepseek-r1:70b", "deepseek-r1-distill-llama-70b"),
        ("DeepSeek-R1-0528-Qwen3-8B", "deepseek-r1-0528-qwen3-8b"),
        ("DeepSeek-V3.2 (MLX)", "deepseek-v3.2"),
        ("DeepSeek-V3 (671B MoE, MLA)", "deepseek-v3"),
        ("Phi-4-mini-instruct", "phi-4-mini"),
        ("mlx-community/Phi-4-mini-instruct-4bit", "phi-4-mini"),
        ("Phi-4-mini-reasoning", "phi-4-mini-reasoning"),
        ("Phi-4-reasoning", "phi-4-reasoning"),
        ("Devstral-Small-2-24B-Instruct-2512-4bit", "devstral-small-2-24b"),
        ("devstral-small-2:latest", "devstral-small-2-24b"),
        ("Devstral-Small-24B", "devstral-small-24b"),
        ("devstral:24b", "devstral-small-24b"),
        ("QwQ-32B", "qwq-32b"),
        ("mlx-community/QwQ-32B-4bit", "qwq-32b"),
        ("Mistral-Nemo-12B", "mistral-nemo-12b"),
        ("mlx-community/Mistral-Nemo-Instruct-2407-4bit", "mistral-nemo-12b"),
        ("mlx-community/Mistral-Small-3.1-Text-24B-Instruct-2503-4bit", "mistral-small-3.1-24b"),
        ("Qwen2.5-Coder-32B-Instruct", "qwen2.5-coder-32b"),
        ("GLM-4.7-Flash-4bit", "glm-4.7-flash"),
        ("glm-4.7-flash:q8_0", "glm-4.7-flash"),
        ("glm-4.7", "glm-4.7"),
        ("mlx-community/GLM-4.7-4bit", "glm-4.7"),
        ("granite4.1:8b", "granite-4.1-8b"),
        ("ministral-3:3b", "ministral-3-3b"),
        ("nemotron-3-nano:30b", "nemotron-3-nano-30b-a3b"),
    ],
)
def test_model_rule_maps_real_spelling(raw, expected):
    assert _map_model(raw)[0] == expected


def test_a_further_trained_checkpoint_is_an_architecture_proxy():
    # Phi-4-reasoning-plus shares Phi-4-reasoning's weights' shape but is another checkpoint: mapped, flagged
    assert _map_model("Phi-4-reasoning-plus")[0] == "phi-4-reasoning"
    assert _map_model("Phi-4-reasoning-plus")[2] is True
    assert _map_model("Phi-4-reasoning")[2] is False


@pytest.mark.parametrize(
    "raw, wrong",
    [
        ("qwen3.6-27b", "qwen3.6-35b-a3b"),
        ("qwen3.8-27b", "qwen3.6-27b"),
        ("Qwen2.5-32B-Instruct", "qwen2.5-3b"),
        ("qwen3.6-27b (MLX 8bit)", "qwen3.6-35b-a3b"),
        ("gemma-4-e2b", "gemma-4-e4b"),
        ("gemma-3-12b-it", "gemma-3-1b"),
        ("DeepSeek-R1-Distill-Qwen-14B", "qwen2.5-14b"),
        ("DeepSeek-R1-0528-Qwen3-8B", "deepseek-v3"),
        ("deepseek-r1:8b", "deepseek-v3"),
        ("Phi-4-mini-reasoning", "phi-4-mini"),
        ("devstral-2:123b", "devstral-small-2-24b"),
        ("Qwen3.5-35B-A3B", "qwen3.6-35b-a3b"),
        ("qwen3.5-122b-a10b", "qwen3.5-35b-a3b"),
    ],
)
def test_model_rule_near_miss_is_not_mapped(raw, wrong):
    assert _map_model(raw)[0] != wrong


@pytest.mark.parametrize(
    "raw",
    [
        "ministral-3:8b",
        "ministral-3:14b",
        "nemotron-3-nano:4b",
        "qwen3.6:27b-mtp-q8_0",
        "Qwen3.6-35B-A3B-MTP",
        "gemma-3n-e4b",
        "qwen3.6-9b",
        "granite4.1:1b",
        "deepseek-r1:8b",
    ],
)
def test_models_the_catalog_lacks_stay_unmapped(raw):
    assert _map_model(raw)[0] is None


def test_every_mapped_id_is_a_catalog_profile(ms):
    ids = {p.stem for p in (Path(__file__).resolve().parents[2] / "profiles" / "models").glob("*.yaml")}
    assert not {m.model_id for m in ms if m.model_id} - ids


@pytest.mark.parametrize(
    "quant, family, expected",
    [
        ("mlx 4bit", "mlx-lm", "mlx-4bit-g64"),
        ("mlx 4bit (model name)", "other-mlx", "mlx-4bit-g64"),
        ("mlx 6bit", "mlx-lm", "mlx-6bit-g64"),
        ("mlx 8bit", "mlx-lm", "mlx-8bit-g64"),
        ("mlx mxfp4", "mlx-lm", "mlx-mxfp4"),
        ("mlx nvfp4", "mlx-lm", None),  # NVFP4 has no quant profile: weight bytes unknown
        ("MXFP4_MOE", "llama.cpp", "MXFP4_MOE"),
        ("UD-Q4_K_XL", "llama.cpp", None),  # Unsloth dynamic mix, not a preset
    ],
)
def test_quant_of_the_newly_mapped_rows(quant, family, expected):
    assert _normalize_quant(quant, family, "")[0] == expected


def test_row_fix_applied(by_id):
    # FIXES: 'M4 Max' without config -> 40-core (59 GB peak > 36 GB of the 32-core bin; roofline)
    assert by_id[324].chip_id == "m4-max-40gpu" and "fixed" in by_id[324].flags


def test_custom_engines_never_usable(ms):
    custom = [m for m in ms if m.runtime.lower().startswith(("ds4", "rapid-mlx", "turboquant"))]
    assert len(custom) == 199
    for m in custom:
        assert m.runtime_family == "custom"
        assert not usable_for_efficiency(m)
        for fam in ("llama.cpp", "mlx-lm", "ollama", "other-mlx", "custom"):
            assert not usable_for_efficiency(m, fam)


def test_unreliable_and_low_never_usable(ms):
    bad = [m for m in ms if m.reliability in ("unreliable", "low")]
    assert bad
    assert not any(usable_for_efficiency(m) for m in bad)


def test_unreliable_row_excluded(tmp_path):
    src = DEFAULT_PATH.read_text().splitlines()
    header, row5 = src[0], next(line for line in src if line.startswith("5,"))
    p = tmp_path / "m.csv"
    p.write_text(header + "\n" + row5.replace(",medium", ",unreliable") + "\n")
    (m,) = load_measurements(p)
    assert m.reliability == "unreliable" and "unreliable" in m.flags
    assert not usable_for_efficiency(m, "llama.cpp")
    assert "unreliable" in explain_exclusion(m)


def test_filter_reasons(by_id, ms):
    assert usable_for_efficiency(by_id[5], "llama.cpp")
    assert not usable_for_efficiency(by_id[5], "mlx-lm")
    assert "end-to-end" in explain_exclusion(by_id[440])
    assert "wired" in explain_exclusion(by_id[329])  # not-wired 70B bf16: 0.23 tok/s
    assert "roofline" in explain_exclusion(by_id[1361])  # ollama MoE without active params
    assert all(
        m.metric in {"pp_tps", "tg_tps", "batched_pp_tps", "batched_tg_tps"}
        for m in ms
        if usable_for_efficiency(m)
    )
    assert all(m.chip_id and m.quant_id for m in ms if usable_for_efficiency(m))
    with pytest.raises(PlannerError):
        usable_for_efficiency(by_id[5], "vllm")


def test_batch_parsed(ms):
    batches = {m.batch for m in ms}
    assert batches == {1, 2, 4, 8, 16, 32}
    assert all(isinstance(m.batch, int) for m in ms)


def _write(tmp_path, header, rows):
    p = tmp_path / "bad.csv"
    with p.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return p


def test_missing_column_is_clear(tmp_path):
    header = [c for c in REQUIRED_COLUMNS if c != "metric"]
    p = _write(tmp_path, header, [["1"] * len(header)])
    with pytest.raises(DatasetError, match="missing column.*metric"):
        load_measurements(p)


def test_bad_batch_is_clear(tmp_path):
    src = DEFAULT_PATH.read_text().splitlines()
    header, row5 = src[0], next(line for line in src if line.startswith("5,"))
    fields = next(csv.reader([row5]))
    fields[REQUIRED_COLUMNS.index("batch")] = "two"
    p = _write(tmp_path, header.split(","), [fields])
    with pytest.raises(DatasetError, match=r"row_id 5: column 'batch'"):
        load_measurements(p)


def test_ragged_row_and_missing_file(tmp_path):
    p = tmp_path / "ragged.csv"
    p.write_text(",".join(REQUIRED_COLUMNS) + "\n1,2,3\n")
    with pytest.raises(DatasetError, match="wrong number of fields"):
        load_measurements(p)
    with pytest.raises(DatasetError, match="not found"):
        load_measurements(tmp_path / "nope.csv")


def test_degenerate_ollama_runs_fixed_to_low(by_id):
    # FIXES 1248/1250: 0.12 and 5.09 tok/s where the same submission's row 1252 gets 15.05
    for rid in (1248, 1250):
        assert by_id[rid].reliability == "low" and "fixed" in by_id[rid].flags
        assert not usable_for_efficiency(by_id[rid])
    assert usable_for_efficiency(by_id[1252], "ollama")


def test_stated_physical_batch_is_parsed():
    """Rows that state llama.cpp's -ub are fitted with it (it sets tokens per expert in a MoE prefill)."""
    from calibration.dataset import _parse_ubatch

    assert _parse_ubatch("on, n_ubatch=2048") == 2048
    assert _parse_ubatch("llama-bench -ub 1024 -fa 1") == 1024
    assert _parse_ubatch("on (default)") is None


def test_shared_prompt_rows_are_marked(by_id):
    """PR #3545's llama-batched-bench -pps rows: N_KV = PP + B·TG (row 241: 2048 + 32 · 256 = 10240), so the
    prompt's cells are one copy; rows 233/234 (N_KV = B·(PP + TG)) are not shared."""
    assert by_id[241].prompt_shared and by_id[242].prompt_shared
    assert not by_id[233].prompt_shared and not by_id[234].prompt_shared


@pytest.mark.requires_scipy  # calibration.fit imports scipy
def test_shared_prompt_records_prefill_once_and_share_the_decode_prefix():
    pytest.importorskip("scipy", reason="calibration.fit needs scipy (make test installs it)")
    from calibration.fit import load_training_records

    data, _ = load_training_records()
    recs = {r.label: r for r in data["llama.cpp"]}
    assert (
        recs["row 241"].shared_prefix == 2048 and recs["row 241"].batch == 32
    )  # decode from the shared 2048
    assert recs["row 242"].batch == 1  # S_PP of a shared prompt = PP / T_PP: one sequence prefilled
    assert recs["row 233"].shared_prefix == 0
    # a 2023 build: one unified cache (every query scans every sequence's cells); current builds: streams
    assert recs["row 241"].unified_kv and not recs["row 590"].unified_kv


def test_roofline_check_takes_bits_from_the_quant_profiles():
    """The fewest bits a weight takes, from profiles/quants and the ggml type table (no table of its own):
    Q8_0 34 B / 32 = 8.5 (its Q5_K attn_v rule needs a Q3_K/Q4_K tensor, which Q8_0 never has);
    Q4_K_M: Q4_K 144 B / 256 = 4.5; MXFP4_MOE: MXFP4 experts 17 B / 32 = 4.25;
    mlx 5-bit group 32: 5 + 8 · (2 + 2) / 32 = 6.0."""
    from calibration.dataset import _bits_per_weight

    assert _bits_per_weight("Q8_0") == pytest.approx(8.5)
    assert _bits_per_weight("Q4_K_M") == pytest.approx(4.5)
    assert _bits_per_weight("MXFP4_MOE") == pytest.approx(4.25)
    assert _bits_per_weight("mlx-5bit-g32") == pytest.approx(6.0)
    assert _bits_per_weight("no-such-format") is None


def test_superseded_mlx_lm_build_row_is_not_a_current_efficiency(by_id):
    """mlx-lm PR #40 measures the same M2 Ultra Mistral-7B 33,898-token prefill before (row 330) and after (row 332)
    its causal-mask change: only the build the planner models (after) feeds the fit."""
    assert not usable_for_efficiency(by_id[330]) and "fixed" in by_id[330].flags
    assert usable_for_efficiency(by_id[332])
    assert by_id[332].value > by_id[330].value


def test_mlx_benchmark_tg128_of_enescingoz_follows_the_512_token_prompt():
    """enescingoz/mac-llm-bench lib/run_bench_mlx.sh keeps tg128 from its ``mlx_lm.benchmark -p 512 -g 128`` run:
    the 128 tokens are decoded after the 512-token prompt, so the rows' depth is 512 (not llama-bench's empty
    cache), and they are not the 'tg N from depth 0' averages."""
    ms = {
        m.row_id: m
        for m in load_measurements(
            Path(__file__).resolve().parents[2] / "calibration" / "data" / "measured_benchmarks_community.csv"
        )
    }
    for rid in (20134, 20206, 20276, 20302, 20316):
        m = ms[rid]
        assert m.metric == "tg_tps" and m.gen_tokens == 128 and m.context_depth == 512
        assert "old-tg-average" not in m.flags and "fixed" in m.flags


def test_qwen36_paging_run_on_the_m5_is_not_a_speed():
    """Same M5 32 GB, same tool, same architecture and size: Qwen3.6-35B-A3B decodes at 20.3 tok/s where
    Qwen3.5-35B-A3B decoded at 58.8 (a third): paging, kept out of the fit; the Qwen3.5 run stays usable."""
    by_id = {m.row_id: m for m in load_measurements(DEFAULT_PATH.parent / "measured_benchmarks_enescingoz_more.csv")}
    assert by_id[33030].value < by_id[33028].value / 2
    assert explain_exclusion(by_id[33030]) == "reliability=low: known anomaly"
    assert explain_exclusion(by_id[33029]) == "reliability=low: known anomaly"
    assert explain_exclusion(by_id[33028]) is None and by_id[33028].model_id == "qwen3.5-35b-a3b"


def test_ollama_decode_depth_is_the_prompt_ollama_evaluated():
    """famstack-dev/local-llm-bench (lib/backends.py stream_ollama) saves Ollama's prompt_eval_count, the tokens in
    context before the reply is decoded; its ctx_tokens_est is a characters-based estimate (German documents: 8496
    estimated, 16299 evaluated for gemma3). Every famstack Ollama decode row that has the count decodes from it, and
    its note says so with the number: e.g. the qwen3:30b ops-agent turn 8 (row 31199) from 6125, not 5021."""
    here = Path(__file__).resolve().parents[2] / "calibration" / "data"
    ms = [m for f in ("measured_benchmarks_community.csv", "measured_benchmarks_famstack_more.csv")
          for m in load_measurements(here / f)]
    fam = [m for m in ms if m.source_group.startswith("famstack") and m.runtime_family == "ollama"
           and m.metric == "tg_tps" and ("turn" in m.notes and "run 1" in m.notes or "prefill-test" in m.notes)]
    assert len(fam) >= 50
    for m in fam:
        counted = re.search(r"prompt_eval_count (\d+)", m.notes)
        assert counted, m.row_id
        assert m.context_depth == int(counted.group(1)), m.row_id
    assert {m.row_id: m.context_depth for m in fam}[31199] == 6125


def test_batch1_decode_of_an_unstated_bin_takes_the_smallest_bin_of_one_bandwidth(by_id):
    """normiebench #40 (M1 Max 64 GB, GPU bin not stated; 64 GB ships with the 24- and 32-core bins) decodes at
    batch 1: both bins have 400 GB/s, so the row is fitted on the 24-core bin, flagged inferred-hardware; its pp512
    row (row 436) keeps no bin (prefill runs on the GPU's FLOPs). A chip whose bins differ in bandwidth (M3 Max:
    300 vs 400 GB/s) gets no bin."""
    from calibration.dataset import _decode_bin, chip_bins

    m = by_id[437]
    assert (m.metric, m.batch, m.chip_id) == ("tg_tps", 1, "m1-max-24gpu")
    assert "inferred-hardware" in m.flags and usable_for_efficiency(m)
    assert by_id[436].chip_id is None and not usable_for_efficiency(by_id[436])
    assert _decode_bin(chip_bins()["M2 Ultra"]) == 60
    assert _decode_bin(chip_bins()["M3 Max"]) is None


def test_the_planner_decodes_at_batch_1_alike_on_every_bin_of_one_bandwidth(by_id):
    """Why the smallest bin may stand for an unstated one: the shipped constants predict the same batch-1 decode
    rate on the 24- and the 32-core M1 Max (one bandwidth, one tier, one generation), and on the 60- and 76-core
    M2 Ultra, for the normiebench Llama-3.1-8B Q4_K_M tg128 row: the weights stream at one bandwidth; only the
    decode attention's compute (flash_attn_ext_vec at η_attn_decode, a few dozen keys at tg128) scales with the
    cores, a few parts per 100,000 of the step, so within 0.1 %."""
    from calibration import fit as F
    from planner import profiles

    def rate(chip_id: str, rt: str = "llama.cpp") -> float:
        c = profiles.resolve_chip(chip_id)
        m = by_id[437].model_copy(update={"chip_id": chip_id, "gpu_cores": c.gpu_cores})
        (r,), _ = F.records_from_measurements([m])
        return F.predict_record(r, profiles.load_speed_constants(c, rt).constants)

    assert rate("m1-max-24gpu") == pytest.approx(rate("m1-max-32gpu"), rel=1e-3)
    assert rate("m2-ultra-60gpu") == pytest.approx(rate("m2-ultra-76gpu"), rel=1e-3)


def test_a_bug_report_of_a_slow_path_is_not_an_efficiency():
    """llama.cpp #19366 (bug-unconfirmed: Qwen3-Coder-Next decoding at "roughly one third" of MLX's speed, "roughly 24
    t/s") resolves to an M4 Pro bin as a batch-1 decode, but it is a reported slow path in round numbers: low."""
    here = Path(__file__).resolve().parents[2] / "calibration" / "data" / "measured_benchmarks_community.csv"
    m = {m.row_id: m for m in load_measurements(here)}[20087]
    assert m.chip_id is not None and m.reliability == "low" and not usable_for_efficiency(m)


def test_ollama_first_request_prefill_is_cold_not_a_prefill_rate():
    """DavidRagone/llm-speed-test pasted one prompt into `ollama run --verbose` (load_duration 31 ms: the model was
    preloaded, this is the first request after the load). Ollama's runners before v0.30 ran no warm-up decode, so
    the prompt eval duration holds the first pass over the weights: 157 tokens in 0.325 s (482.62 tok/s) for a 7B.
    The prefill rows are excluded with that reason; the same requests' decode rows (warm) stay."""
    here = Path(__file__).resolve().parents[2] / "calibration" / "data"
    ms = {m.row_id: m for m in load_measurements(here / "measured_benchmarks_ollama_m3ultra_ragone.csv")}
    assert ms[47901].value == pytest.approx(157 / 0.32531, rel=1e-3)
    for rid in (47901, 47903, 47905):
        assert "cold-first-request" in ms[rid].flags
        assert "first request after a load" in explain_exclusion(ms[rid])
    for rid in (47902, 47904, 47906):
        assert "cold-first-request" not in ms[rid].flags and usable_for_efficiency(ms[rid], "ollama")


# ----------------------------------------------------------------------- source audit (session 13), row by row

_DATA = Path(__file__).resolve().parents[2] / "calibration" / "data"


def _rows(*files: str) -> dict[int, object]:
    return {m.row_id: m for f in files for m in load_measurements(_DATA / f)}


def test_enescingoz_more_mlx_tg128_also_decodes_after_the_512_token_prompt():
    """The enescingoz_more file holds more rows of the same M5 mlx_lm.benchmark runs (same lib/run_bench_mlx.sh
    loop): their tg128 is the (512, 128) run's too, so depth 512, like the community file's rows."""
    by_id = _rows("measured_benchmarks_enescingoz_more.csv")
    for rid in (33024, 33026, 33028):
        m = by_id[rid]
        assert m.metric == "tg_tps" and m.gen_tokens == 128 and m.context_depth == 512 and "fixed" in m.flags


def test_an_unsloth_dynamic_q8_is_not_a_q8_0_preset():
    """AtomGradient's '9B_Q8' is Qwen3.5-9B-UD-Q8_K_XL.gguf: 12.96 GB for 8.95 B params (1.45 bytes/param) where a
    Q8_0 preset is 34 bytes per 32 weights (1.0625); llama-bench prints the majority tensor type. The rows keep the
    file's own name, which names no preset: no weight bytes, not an efficiency."""
    assert 12.963072e9 / 8.953803264e9 > 34 / 32 * 1.3
    by_id = _rows("measured_benchmarks_community.csv")
    for rid in (20885, 20886, 20887, 20888, 20889, 20890, 20905, 20906):
        m = by_id[rid]
        assert m.quant.startswith("UD-Q8_K_XL") and m.quant_id is None and not usable_for_efficiency(m)


def test_runs_that_shared_the_gpu_with_another_benchmark_are_low():
    """AtomGradient's logs put F16..Q4_K_M of the Qwen3.5-4B llama-bench ladder inside its MLX benchmark's run on
    the same M2 Ultra (00:19:06-00:20:02 vs 00:18:22-00:20:00): low."""
    by_id = _rows("measured_benchmarks_community.csv")
    assert all(by_id[rid].reliability == "low" for rid in range(20891, 20901))


def test_hybrid_rows_of_a_build_with_the_metal_gated_deltanet_regression_are_low():
    """Q3_K_M and Q2_K ran after the MLX benchmark, but on build 8240: before b8299 Metal ran the gated-DeltaNet
    layers as a graph of small ops, and the fused kernel read its state strided until b8333 (Llama-macOS#67: Qwen3.5
    9B decode +16 % from b8192 to b8416). A superseded build's hybrid speed is not a current efficiency."""
    by_id = _rows("measured_benchmarks_community.csv")
    for rid in range(20901, 20905):
        m = by_id[rid]
        assert "8240" in m.runtime_version and m.reliability == "low" and not usable_for_efficiency(m)


def test_a_slow_path_the_runtime_reported_is_not_its_efficiency():
    """Ollama's own Go engine for qwen35moe GGUFs (ollama #14861, bug/performance: 32.5 vs llama.cpp's 53.5 tok/s)
    and Qwen3-Next on an unrecorded llama.cpp build (#19366) are low; the same sources' other rows stay usable."""
    by_id = _rows("measured_benchmarks_kristianbonnici_more.csv", "measured_benchmarks_hiesch_more.csv",
                  "measured_benchmarks_community.csv")
    for rid in (35001, 35003, 32023, 32024, 32049, 32050, 32039, 32067, 32089, 32092):
        assert by_id[rid].reliability == "low" and not usable_for_efficiency(by_id[rid]), rid
    assert by_id[32023].value < by_id[32216].value * 0.7  # same M3 Max, same model: Ollama 0.19 vs llama.cpp b8920
    for rid in (20079, 20080, 32216, 20321, 20325):
        assert usable_for_efficiency(by_id[rid]), rid


def test_ollama_bench_decodes_after_the_prompt_it_evaluated():
    """kristianbonnici/ollama-bench summary.json: avg_prompt_eval_count is the context the decode starts from."""
    by_id = _rows("measured_benchmarks_kristianbonnici_more.csv", "measured_benchmarks_community.csv")
    assert {rid: by_id[rid].context_depth for rid in (20079, 20080, 35001, 35003)} == {
        20079: 567, 20080: 77, 35001: 609, 35003: 84}
