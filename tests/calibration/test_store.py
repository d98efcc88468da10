"""calibration.store: custom chip profile, atomic calibration files, and the planner's fallback on bad files.

No runtime is needed here: records are synthetic, the device dict is fixed (no measurement)."""

from __future__ import annotations

import csv
import io
import json
from datetime import date

import pytest
import yaml

from calibration import store
from calibration.errors import CalibrationError
from calibration.records import MEASURED_CSV_COLUMNS, RunRecord
from cli.main import main
from planner import profiles
from planner.schema import CalibrationProfile, Provenance, SpeedConstants

DEVICE = {"os": "linux", "os_version": "6.1", "backend": "cpu", "chip": "Test CPU", "chip_id": "custom",
          "cpu_model": "Test CPU", "cpu_cores_physical": 2, "ram_bytes": 8 * 2**30,
          "memory_bandwidth_Bps": 12e9, "matmul_flops": 40e9}


@pytest.fixture
def chip(user_dir):
    c, path, written = store.ensure_custom_chip(DEVICE, hostname="test-host")
    assert written and path.exists()
    return c


def _constants(**over) -> SpeedConstants:
    base = {"eta_bw": 0.5, "eta_c": 0.3, "eta_attn": 0.2, "eta_c_decode": 0.1, "t_layer_s": 1e-5, "noflash_attn_factor": 1.2,
                "quant_prefill_factor": {"float": 1.0, "kquant": 0.8}, "matrix_unit_factor": 2.7}
    return SpeedConstants(**{**base, **over})


def _profile(scope: str, runtime: str = "llama.cpp", **over) -> CalibrationProfile:
    return CalibrationProfile(id=f"{scope}__{runtime}", scope=scope, runtime=runtime, constants=_constants(**over),
                              provenance=Provenance(method="user calibration (test)", fitted_on=date(2026, 11, 30),
                                                    rows=7, data="llama.cpp test", residuals={"mape": 12.3}))


def _record(**over) -> RunRecord:
    base = {"runtime": "llama.cpp", "runtime_version": "llama.cpp 0c1e570 (build 1)", "backend": "cpu",
                "tool": "llama-bench", "device": DEVICE, "model_path": "/m/tiny.gguf", "quant": "Q4_K_M",
                "weights_bytes": 2_259_456, "n_params": 3_672_320, "n_layers": 4, "hidden": 256, "n_heads": 4, "n_kv_heads": 2,
                "head_dim": 64, "vocab": 1024, "ffn": 768, "kind": "prefill", "phase": "prefill", "prompt_tokens": 64, "gen_tokens": 0,
                "context_depth": 0, "batch": 1, "value_tok_s": 1000.0, "trials": 2, "trial_values": [990.0, 1010.0]}
    return RunRecord(**{**base, **over})


# --------------------------------------------------------------------------- custom chip
def test_custom_chip_id_is_stable_and_hashed():
    a = store.custom_chip_id(DEVICE, hostname="h1")
    assert a == store.custom_chip_id(DEVICE, hostname="h1")
    assert a != store.custom_chip_id(DEVICE, hostname="h2")
    assert a.startswith("custom-") and len(a) == len("custom-") + 8


def test_custom_chip_profile_resolves_with_measured_peaks(chip, user_dir):
    assert (user_dir / "chips" / f"{chip.id}.yaml").exists()
    c = profiles.resolve_chip(chip.id)
    assert c == chip
    assert c.memory_bandwidth_gb_s == pytest.approx(12.0)
    assert c.gpu_fp16_tflops == pytest.approx(0.04)
    assert c.ram_options_gb == [8] and c.gpu_cores == 2
    # kept on the next calibration (constants were fitted against it) unless remeasured
    faster = {**DEVICE, "memory_bandwidth_Bps": 99e9}
    again, _, written = store.ensure_custom_chip(faster, hostname="test-host")
    assert not written and again.memory_bandwidth_gb_s == pytest.approx(12.0)
    redone, _, written = store.ensure_custom_chip(faster, hostname="test-host", remeasure=True)
    assert written and redone.memory_bandwidth_gb_s == pytest.approx(99.0)


def test_custom_chip_needs_measurements(user_dir):
    with pytest.raises(CalibrationError, match="measured"):
        store.ensure_custom_chip({**DEVICE, "memory_bandwidth_Bps": None}, hostname="x")


def test_corrupt_custom_chip_is_rewritten(user_dir):
    cid = store.custom_chip_id(DEVICE, hostname="h")
    p = store.chip_file(cid)
    p.parent.mkdir(parents=True)
    p.write_text("{{{ not yaml")
    c, _, written = store.ensure_custom_chip(DEVICE, hostname="h")
    assert written and c.id == cid


def test_macos_device_maps_to_shipped_chip(user_dir):
    mac = {**DEVICE, "os": "macos", "chip": "Apple M3 Max", "chip_id": "m3-max-40gpu", "gpu_cores": 40}
    c, path, written = store.device_chip(mac)
    assert c.id == "m3-max-40gpu" and path is None and not written
    with pytest.raises(CalibrationError, match="not in the planner's chip profiles"):
        store.device_chip({**mac, "chip_id": "m9-giga-999gpu"})


# --------------------------------------------------------------------------- profiles
def test_profile_round_trip_atomic(chip, user_dir):
    prof = _profile(chip.id)
    path = store.write_profile(prof)
    assert path == user_dir / "calibration" / f"{chip.id}__llama.cpp.yaml"
    assert not list(path.parent.glob(".*.tmp"))
    back = store.read_profile(path, chip_id=chip.id, runtime="llama.cpp")
    assert back == prof
    res = profiles.load_speed_constants(chip, "llama.cpp")
    # every scalar it sets overrides the shipped scopes (fields it lacks come from them); quant factors merge
    mine = prof.constants.model_dump(exclude={"quant_prefill_factor"}, exclude_none=True)
    assert {k: v for k, v in res.constants.model_dump().items() if k in mine} == mine
    assert not res.constants.missing()
    assert res.constants.quant_prefill_factor["kquant"] == 0.8
    assert "calibrated on this machine on 2026-11-30, residual 12%" in res.source
    assert res.scopes[-1] == prof.id
    shipped = profiles.load_speed_constants(chip, "llama.cpp", include_user=False)
    assert "calibrated" not in shipped.source and shipped.constants != prof.constants


BAD_FILES = {
    "garbage": "::: {{ not yaml at all\n\t- [",
    "other schema": yaml.safe_dump({"id": "x", "name": "M3 Max", "generation": "M3", "tier": "max"}),
    "a list": "- 1\n- 2\n",
}


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_bad_user_calibration_falls_back(kind, chip, user_dir, capsys):
    path = user_dir / "calibration" / f"{chip.id}__llama.cpp.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(BAD_FILES[kind])
    res = profiles.load_speed_constants(chip, "llama.cpp")
    assert res.constants == profiles.load_speed_constants(chip, "llama.cpp", include_user=False).constants
    assert "user calibration ignored" in res.source and str(path) in res.source
    assert "calibrated on this" not in res.source
    # plan predict still answers (exit 0) and says why
    code = main(["predict", "--chip", chip.id, "--model", "llama-2-7b", "--quant", "Q4_0", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "user calibration ignored" in json.loads(out)["calibration"]
    # --show names the file and the reason
    assert main(["calibrate", "--show"]) == 0
    out, _ = capsys.readouterr()
    assert "ignored:" in out and path.name in out
    with pytest.raises(CalibrationError):
        store.read_profile(path)


def test_calibration_of_another_chip_falls_back(chip, user_dir):
    other = _profile("m3-max-40gpu")  # a Mac's file copied under this device's name
    path = store.profile_path(chip.id, "llama.cpp")
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(other.model_dump(mode="json") | {"id": f"{chip.id}__llama.cpp"}))
    res = profiles.load_speed_constants(chip, "llama.cpp")
    assert "user calibration ignored" in res.source and "m3-max-40gpu" in res.source
    with pytest.raises(CalibrationError, match="m3-max-40gpu"):
        store.read_profile(path)
    # and a file for another runtime under this runtime's name
    mlx = _profile(chip.id, runtime="mlx-lm")
    path.write_text(yaml.safe_dump(mlx.model_dump(mode="json") | {"id": f"{chip.id}__llama.cpp"}))
    assert "user calibration ignored" in profiles.load_speed_constants(chip, "llama.cpp").source


def test_other_chips_file_is_not_used(chip, user_dir):
    store.write_profile(_profile("m3-max-40gpu"))
    assert "calibrated" not in profiles.load_speed_constants(chip, "llama.cpp").source
    m3 = profiles.resolve_chip("m3-max-40gpu")
    assert "calibrated on this Mac" in profiles.load_speed_constants(m3, "llama.cpp").source


def test_list_calibrations_reports_good_and_bad(chip, user_dir):
    store.write_profile(_profile(chip.id))
    store.save_records(chip.id, "llama.cpp", [_record(), _record(prompt_tokens=128)])
    (user_dir / "calibration" / "junk__mlx-lm.yaml").write_text("nope: [")
    items = {i.path.name: i for i in store.list_calibrations()}
    assert items[f"{chip.id}__llama.cpp.yaml"].ok and items[f"{chip.id}__llama.cpp.yaml"].records == 2
    assert not items["junk__mlx-lm.yaml"].ok


# --------------------------------------------------------------------------- records and export
def test_records_append_replace_and_version_filter(chip, user_dir):
    store.save_records(chip.id, "llama.cpp", [_record(runtime_version="old")])
    store.save_records(chip.id, "llama.cpp", [_record(), _record(prompt_tokens=128)])
    assert len(store.load_records(chip.id, "llama.cpp")) == 3
    assert len(store.load_records(chip.id, "llama.cpp", runtime_version="old")) == 1
    store.save_records(chip.id, "llama.cpp", [_record()], replace=True)
    assert len(store.load_records(chip.id, "llama.cpp")) == 1


def test_export_csv_has_training_columns(chip, user_dir, tmp_path):
    store.save_records(chip.id, "llama.cpp", [_record(), _record(kind="decode", phase="decode", prompt_tokens=0,
                                                                 gen_tokens=32, value_tok_s=100.0)])
    out = tmp_path / "runs.csv"
    assert main(["calibrate", "--export", str(out)]) == 0
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert tuple(rows[0].keys()) == MEASURED_CSV_COLUMNS
    assert [r["metric"] for r in rows] == ["pp_tps", "tg_tps"]
    assert all(r["source_group"] == "plan calibrate" for r in rows)


def test_cli_errors_are_one_line(user_dir, capsys):
    assert main(["calibrate", "--export", str(user_dir / "x.csv")]) == 2
    assert "no calibration records" in capsys.readouterr().err
    assert main(["calibrate", "--runtime", "llama.cpp"]) == 2
    assert "needs --runtime" in capsys.readouterr().err
    assert main(["calibrate", "--runtime", "ollama", "--model", "x.gguf"]) == 2
    assert "mlx-lm or llama.cpp" in capsys.readouterr().err
    assert main(["calibrate", "--runtime", "llama.cpp", "--model", "/nonexistent/m.gguf"]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and len(err.strip().splitlines()) == 1
    assert main(["calibrate", "--show"]) == 0
    assert "no calibration yet" in capsys.readouterr().out


def test_corrupt_record_file_is_not_extended(chip, user_dir):
    path = store.records_path(chip.id, "llama.cpp")
    path.parent.mkdir(parents=True)
    path.write_text("{not json\n")
    with pytest.raises(CalibrationError, match="--replace"):
        store.save_records(chip.id, "llama.cpp", [_record()])
    assert path.read_text() == "{not json\n"
    store.save_records(chip.id, "llama.cpp", [_record()], replace=True)
    assert len(store.load_records(chip.id, "llama.cpp")) == 1
