"""`plan calibrate --finetune`: real mlx_lm.lora runs on this machine refit the fine-tuning profile, which
`plan finetune` then uses; each run's peak memory is within 10 % of the refit prediction."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.requires_mlx, pytest.mark.slow]


def test_calibrate_finetune_writes_the_user_profile(tmp_path, monkeypatch, capsys):
    pytest.importorskip("mlx_lm")
    from cli.main import main
    from planner import finetune as ft
    from planner import profiles

    monkeypatch.setenv("MAC_LLM_PLANNER_USER_PROFILES", str(tmp_path))
    profiles.clear_cache()
    try:
        assert main(["calibrate", "--finetune", "--budget", "1200"]) == 0
        out = capsys.readouterr().out
        assert "fine-tuning calibration: 9 mlx_lm.lora runs" in out
        k = profiles.load_finetune()
        assert k.provenance.method.startswith("user calibration") and k.provenance.rows == 9
        assert k.provenance.residuals["peak_max_abs_pct"] <= 10.0
        assert (tmp_path / "calibration" / "finetune__mlx-lm.jsonl").read_text().count("\n") == 9
        # plan finetune now reads the user coefficients
        m = profiles.load_model("llama-3.1-8b")
        assert ft.activations(m, 1, 100, 1, 2, checkpoint=False) == int(
            100 * (k.a_hq * 10240 + k.a_f * 14336) * 2 + k.a_frozen * 100 * 31 * 4096 * 2)
    finally:
        profiles.clear_cache()


def test_calibrate_finetune_budget_too_small_is_one_line(tmp_path, monkeypatch, capsys):
    pytest.importorskip("mlx_lm")
    from cli.main import main
    from planner import profiles

    monkeypatch.setenv("MAC_LLM_PLANNER_USER_PROFILES", str(tmp_path))
    profiles.clear_cache()
    try:
        rc = main(["calibrate", "--finetune", "--budget", "0.001"])
        err = capsys.readouterr().err
        errors = [ln for ln in err.splitlines() if ln.startswith("plan: error")]  # the rest is run progress
        assert rc != 0 and len(errors) == 1 and "give a larger --budget" in errors[0] and "Traceback" not in err
        assert not (tmp_path / "calibration" / "finetune__mlx-lm.yaml").exists()
    finally:
        profiles.clear_cache()
