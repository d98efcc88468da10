"""`plan calibrate` end to end with the REAL runtimes on this CPU and tiny models (conftest fixtures):
records -> fit -> profile written to a temp user dir -> picked up by `plan predict` and `plan --chip`.

Assertions are about the pipeline (positive finite records, converged fit, round-trip, the source string),
never about timings."""

from __future__ import annotations

import csv
import io
import json
import math
from datetime import date

import pytest

from calibration import store
from calibration.records import MEASURED_CSV_COLUMNS, read_jsonl
from cli.main import main
from planner.schema import CalibrationProfile


def _calibrate(capsys, runtime: str, model, *extra: str) -> tuple[str, str]:
    budget = [] if "--budget" in extra else ["--budget", "40"]  # a single-valued option is given once
    code = main(["calibrate", "--runtime", runtime, "--model", str(model), *budget, "--quick",
                 "--trials", "2", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out, err


def _check_pipeline(user_dir, runtime: str, out: str, err: str, predict_args: list[str], capsys) -> str:
    today = date.today().isoformat()
    # the progress bar went to stderr; the summary to stdout
    assert "done:" in err and "/40 s" in err
    assert "fit: converged" in out
    chips = list((user_dir / "chips").glob("custom-*.yaml"))
    assert len(chips) == 1
    cid = chips[0].stem
    prof_path = user_dir / "calibration" / f"{cid}__{runtime}.yaml"
    recs = read_jsonl(prof_path.with_suffix(".jsonl"))
    # records: real, positive, finite, of this runtime on this device
    assert recs and all(r.runtime == runtime and r.backend == "cpu" for r in recs)
    assert all(math.isfinite(r.value_tok_s) and r.value_tok_s > 0 for r in recs)
    assert {r.phase for r in recs} == {"prefill", "decode"}
    # profile: round-trips, belongs to this chip/runtime/version, converged, residuals present
    prof = store.read_profile(prof_path, chip_id=cid, runtime=runtime)
    assert CalibrationProfile.model_validate_json(prof.model_dump_json()) == prof
    assert prof.provenance.fitted_on.isoformat() == today and prof.provenance.rows == len(recs)
    assert recs[0].runtime_version in prof.provenance.data
    assert "fit status" in prof.provenance.notes
    assert all(math.isfinite(v) and v > 0 for v in prof.provenance.residuals.values())
    k = prof.constants
    assert all(0 < getattr(k, p) <= 1 for p in ("eta_bw", "eta_c", "eta_attn", "eta_c_decode"))
    # the planner picks it up: plan predict on the custom chip says where its constants come from
    code = main(["predict", "--chip", cid, "--runtime", runtime, *predict_args, "--json"])
    pout, perr = capsys.readouterr()
    assert code == 0, perr
    r = json.loads(pout)
    assert f"calibrated on this machine on {today}, residual" in r["calibration"]
    assert r["decode_tok_s"] > 0 and r["prefill_tok_s"] > 0
    # plan with --chip shows it too
    code = main(["--model", "llama-3.2-1b", "--chip", cid, "--runtime", runtime, "--context", "4096"])
    pout, perr = capsys.readouterr()
    assert code == 0, perr
    assert "calibrated on this machine on" in pout
    return cid


@pytest.mark.requires_llama_cpp
def test_calibrate_llama_cpp_end_to_end(user_dir, tiny_q4km, capsys, tmp_path):
    out, err = _calibrate(capsys, "llama.cpp", tiny_q4km)
    cid = _check_pipeline(user_dir, "llama.cpp", out, err, ["--model", "llama-2-7b", "--quant", "Q4_0"], capsys)
    # a second calibration appends records and refits on all of this runtime version's records
    n1 = len(read_jsonl(user_dir / "calibration" / f"{cid}__llama.cpp.jsonl"))
    _calibrate(capsys, "llama.cpp", tiny_q4km, "--budget", "5")
    recs = read_jsonl(user_dir / "calibration" / f"{cid}__llama.cpp.jsonl")
    assert len(recs) > n1
    assert store.read_profile(user_dir / "calibration" / f"{cid}__llama.cpp.yaml").provenance.rows == len(recs)
    # --show and --export
    assert main(["calibrate", "--show"]) == 0
    shown = capsys.readouterr().out
    assert cid in shown and "llama.cpp" in shown and date.today().isoformat() in shown
    csv_path = tmp_path / "runs.csv"
    assert main(["calibrate", "--export", str(csv_path), "--runtime", "llama.cpp"]) == 0
    capsys.readouterr()
    rows = list(csv.DictReader(io.StringIO(csv_path.read_text())))
    assert tuple(rows[0]) == MEASURED_CSV_COLUMNS and len(rows) >= len(recs)
    assert all(float(r["value"]) > 0 for r in rows)


@pytest.mark.requires_mlx
def test_calibrate_mlx_lm_end_to_end(user_dir, tiny_mlx, capsys):
    out, err = _calibrate(capsys, "mlx-lm", tiny_mlx["mlx-f32"])
    _check_pipeline(user_dir, "mlx-lm", out, err, ["--model", "llama-2-7b", "--quant", "4bit"], capsys)
    recs = store.all_records(runtime="mlx-lm")
    assert any(r.peak_memory_bytes for r in recs)


@pytest.mark.requires_llama_cpp
def test_calibrate_rejects_wrong_format(user_dir, tiny_mlx, tiny_q4km, capsys):
    assert main(["calibrate", "--runtime", "llama.cpp", "--model", str(tiny_mlx["mlx-f32"]), "--quick"]) == 2
    err = capsys.readouterr().err
    assert "needs a .gguf file" in err and len(err.strip().splitlines()) == 1
    assert not list((user_dir / "calibration").glob("*.yaml")) if (user_dir / "calibration").exists() else True


@pytest.mark.parametrize("args", [["--runtime", "llama.cpp", "--threads", "0"], ["--runtime", "mlx-lm", "--threads", "2"]])
def test_threads_is_checked_before_any_run(user_dir, tmp_path, capsys, args):
    code = main(["calibrate", "--model", str(tmp_path / "m.gguf"), *args])
    err = capsys.readouterr().err
    assert code == 2 and "--threads" in err and len(err.strip().splitlines()) == 1


@pytest.mark.requires_llama_cpp
def test_calibrate_server_times_llama_servers_host_work(user_dir, tiny_q4km, capsys):
    """--server: llama-server's decode step against llama-batched-bench's, stored as t_token_host_s in the profile
    that `plan serve` reads, and its prompt and decode phases on a burst against plan serve's simulation of it. The host work is part of the server's step, so it is below the whole B = 1 step."""
    from calibration.cli import calibrate
    from planner import profiles
    from planner.serve_plan import setup
    from sources import resolve_model

    out, _ = _calibrate(capsys, "llama.cpp", tiny_q4km, "--budget", "10", "--server")
    assert "server: llama-server host work" in out and "`plan serve` adds it" in out
    cid = next((user_dir / "chips").glob("custom-*.yaml")).stem
    prof = store.read_profile(user_dir / "calibration" / f"{cid}__llama.cpp.yaml")
    h = prof.constants.t_token_host_s
    assert h is not None and math.isfinite(h) and h >= 0
    assert "llama-server host work" in prof.provenance.notes
    profiles.clear_cache()
    s = setup(cid, None, None, resolve_model(str(tiny_q4km), quant=None), None, "llama.cpp")
    assert s.rf.k.t_token_host_s == pytest.approx(h)
    # and the server's phases over plan serve's on the burst, which plan serve multiplies its steps by
    assert "scales its prompt and decode steps" in out and "phases over plan serve's" in prof.provenance.notes
    fp, fd = prof.constants.server_prefill_factor, prof.constants.server_decode_factor
    assert 0.5 <= fp <= 3 and 0.5 <= fd <= 3
    assert (s.rf.k.server_prefill_factor, s.rf.k.server_decode_factor) == pytest.approx((fp, fd))
    # the measurement itself: both steps positive, and the server's B = 1 step holds the host work
    res = calibrate("llama.cpp", str(tiny_q4km), 5, quick=True, trials=1, server=True)
    ht = res.host
    assert all(v > 0 for v in [*ht.server_step_s.values(), *ht.bench_step_s.values()])
    assert ht.seconds < ht.server_step_s[1]
    assert res.phases.bursts == 7 and res.profile.constants.server_prefill_factor == pytest.approx(res.phases.prefill)


def test_server_needs_llama_cpp(user_dir, tmp_path, capsys):
    code = main(["calibrate", "--runtime", "mlx-lm", "--model", str(tmp_path / "m"), "--server"])
    err = capsys.readouterr().err
    assert code == 2 and "--server" in err and len(err.strip().splitlines()) == 1


def test_the_client_runs_off_the_cores_the_calibration_is_pinned_to():
    import multiprocessing as mp
    import os

    if not hasattr(os, "sched_getaffinity") or (os.cpu_count() or 1) < 2:
        pytest.skip("needs CPU affinity and two CPUs")
    from calibration.server_host import client_cpus

    ctx = mp.get_context("fork")
    with ctx.Pool(1, initializer=os.sched_setaffinity, initargs=(0, {0})) as pool:
        pinned = pool.apply(client_cpus)
    assert pinned == set(range(1, os.cpu_count()))
    if os.sched_getaffinity(0) == set(range(os.cpu_count())):
        assert client_cpus() is None
