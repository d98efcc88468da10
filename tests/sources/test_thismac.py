"""This Mac (sources/thismac.py, cli/thismac.py): on a stand-in macOS, recorded outputs of real Macs on PATH.

Rules pinned: the detector reads the chip, GPU cores, RAM, wired limit and macOS version of several generations
(M1 Max, M2 Pro, M3 Max, M4 Max, A18 Pro) and maps them to the chip profile of that exact bin; a chip the profiles
do not know (the A18 Pro) or a bin it cannot tell (GPU cores not read) is said in one line and answered for the RAM
only, never for another bin; `plan --model qwen3-8b` with no other flag answers for the detected Mac, with the
Mac on its first line, exactly as the same question with the Mac's flags typed; off a Mac nothing is run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sources import thismac
from tests.sources.mac_recordings import MACS

ROOT = Path(__file__).resolve().parents[2]

STANDIN = '''#!{python}
import json, sys
from pathlib import Path
rec = json.loads(Path({data!r}).read_text())
Path({calls!r}).open("a").write(" ".join(sys.argv) + "\\n")
name, args = Path(sys.argv[0]).name, sys.argv[1:]
if name == "sysctl":
    keys = [a for a in args if a != "-n"]
    bad = 0
    for k in keys:
        if k in rec["sysctl"]:
            print(rec["sysctl"][k])
        else:
            print(f"sysctl: unknown oid '{{k}}'", file=sys.stderr)
            bad = 1
    sys.exit(bad)
if name == "system_profiler" and args == ["SPDisplaysDataType", "-json"] and "system_profiler" in rec:
    sys.stdout.write(rec["system_profiler"])
    sys.exit(0)
if name == "sw_vers" and args == ["-productVersion"] and "sw_vers" in rec:
    print(rec["sw_vers"])
    sys.exit(0)
print(f"{{name}}: not recorded for this Mac", file=sys.stderr)
sys.exit(1)
'''


def standins(tmp_path: Path, mac: str) -> tuple[dict[str, str], Path]:
    """Env with stand-in sysctl/system_profiler/sw_vers first on PATH (and the fake-macOS switch); the calls log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    data = tmp_path / f"{mac}.json"
    data.write_text(json.dumps(MACS[mac]))
    calls = tmp_path / "calls.log"
    for name in ("sysctl", "system_profiler", "sw_vers"):
        p = bin_dir / name
        p.write_text(STANDIN.format(python=sys.executable, data=str(data), calls=str(calls)))
        p.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env[thismac.FAKE_ENV] = "1"
    return env, calls


def plan(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli.main", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=300)


@pytest.fixture
def on_path(tmp_path, monkeypatch):
    def use(mac: str) -> Path:
        env, calls = standins(tmp_path, mac)
        monkeypatch.setenv("PATH", env["PATH"])
        monkeypatch.setenv(thismac.FAKE_ENV, "1")
        return calls
    return use


@pytest.mark.parametrize("mac, chip_id, ram, macos, wired, headline", [
    ("m2-pro-19gpu-32gb-macos14", "m2-pro-19gpu", 32, "15", None, "This Mac: M2 Pro 19-core GPU, 32 GB, macOS 14.5"),
    ("m3-max-40gpu-64gb", "m3-max-40gpu", 64, None, None, "This Mac: M3 Max 40-core GPU, 64 GB, macOS version not read"),
    ("m4-max-40gpu-64gb", "m4-max-40gpu", 64, None, None, "This Mac: M4 Max 40-core GPU, 64 GB, macOS version not read"),
    ("m1-max-32gb-wired26000", None, 32, None, 26000,
     "This Mac: M1 Max, 32 GB, macOS version not read, GPU limit 26,000 MB (iogpu.wired_limit_mb) — GPU cores not "
     "read"),
    ("a18-pro-5gpu-8gb-macos26", None, 8, "26", None,
     "This Mac: A18 Pro 5-core GPU, 8 GB, macOS 26.5.2 — the A18 Pro is not in this tool's chip profiles yet"),
])
def test_recorded_macs_map_to_their_profile(on_path, mac, chip_id, ram, macos, wired, headline):
    on_path(mac)
    m = thismac.detect()
    assert (m.chip_id, m.ram_gb, m.macos, m.wired_limit_mb) == (chip_id, ram, macos, wired)
    assert m.headline().startswith(headline)
    assert "\n" not in m.headline()
    assert (m.unknown is None) == (chip_id is not None)


def test_facts_are_read_as_printed(on_path):
    on_path("a18-pro-5gpu-8gb-macos26")
    f = thismac.read_facts()
    assert (f.brand, f.gpu_cores, f.ram_bytes, f.macos_version) == ("Apple A18 Pro", 5, 8 * 2**30, "26.5.2")
    assert f.wired_limit_mb is None and f.cpu_cores_performance == 2   # iogpu.wired_limit_mb not recorded


def test_no_sysctl_is_one_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no sysctl at all
    with pytest.raises(thismac.CommandFailed):
        thismac.read_facts()


def test_a_bin_the_profiles_do_not_sell_is_not_answered_with_another():
    # an M3 Max 40-core GPU with 36 GB: the 36 GB M3 Max is the 30-core bin (profiles/chips); never answer for it
    facts = thismac.MacFacts(brand="Apple M3 Max", gpu_cores=40, ram_bytes=36 * 2**30, macos_version="15.1")
    m = thismac.map_to_profile(facts)
    assert m.chip_id is None and m.ram_gb == 36 and "not in the chip profiles" in m.unknown
    # and an Intel Mac is not an Apple GPU
    intel = thismac.map_to_profile(thismac.MacFacts(brand="Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz",
                                                    ram_bytes=16 * 2**30, macos_version="13.6"))
    assert intel.chip_id is None and "not an Apple silicon chip" in intel.unknown and intel.macos == "15"


# ----------------------------------------------------------------------------------------- the command line
def test_plan_without_flags_answers_for_the_detected_mac(tmp_path):
    env, calls = standins(tmp_path, "m2-pro-19gpu-32gb-macos14")
    text = plan(env, "--model", "qwen3-8b")
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[0] == "This Mac: M2 Pro 19-core GPU, 32 GB, macOS 14.5"
    assert "machdep.cpu.brand_string" in calls.read_text()
    auto = plan(env, "--model", "qwen3-8b", "--json")
    assert auto.returncode == 0, auto.stderr
    assert auto.stderr.startswith("This Mac: M2 Pro 19-core GPU")   # stdout stays JSON
    off = {k: v for k, v in env.items() if k != thismac.FAKE_ENV}
    # macOS 14.5 answers with the "Sequoia and earlier" rules: the typed question names them
    typed = plan(off, "--model", "qwen3-8b", "--chip", "M2 Pro", "--gpu-cores", "19", "--ram", "32", "--macos", "15",
                 "--json")
    assert typed.returncode == 0, typed.stderr
    a, b = json.loads(auto.stdout), json.loads(typed.stdout)
    assert a["mac"] == b["mac"] and a["options"] == b["options"] and a["wired"] == b["wired"]


def test_unknown_chip_is_one_line_and_memory_only(tmp_path):
    env, _ = standins(tmp_path, "a18-pro-5gpu-8gb-macos26")
    r = plan(env, "--model", "qwen3-8b", "--json")
    assert r.returncode == 0, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "not in this tool's chip profiles" in r.stderr
    off = {k: v for k, v in env.items() if k != thismac.FAKE_ENV}
    typed = json.loads(plan(off, "--model", "qwen3-8b", "--ram", "8", "--macos", "26", "--json").stdout)
    got = json.loads(r.stdout)
    assert got["request"]["chip"] is None and got["options"] == typed["options"]


def test_user_wired_limit_is_used(tmp_path):
    env, _ = standins(tmp_path, "m1-max-32gb-wired26000")
    r = plan(env, "--model", "qwen3-8b", "--json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["request"]["wired_limit_mb"] == 26000 and got["request"]["ram"] == 32


def test_a_named_mac_and_off_a_mac_run_nothing(tmp_path):
    env, calls = standins(tmp_path, "m2-pro-19gpu-32gb-macos14")
    r = plan(env, "--model", "qwen3-8b", "--ram", "64")
    assert r.returncode == 0 and not calls.exists() and "This Mac" not in r.stdout
    off = {k: v for k, v in env.items() if k != thismac.FAKE_ENV}
    r = plan(off, "--model", "qwen3-8b")
    assert r.returncode == 2 and "--ram" in r.stderr and not calls.exists()


def test_subcommands_take_the_mac_flags_they_have(tmp_path):
    env, _ = standins(tmp_path, "m2-pro-19gpu-32gb-macos14")
    r = plan(env, "recommend", "--model", "qwen3-8b", "--json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["chip"] == "m2-pro-19gpu" and got["ram_gb"] == 32
    r = plan(env, "models")   # the catalog listing stays the catalog
    assert r.returncode == 0 and "This Mac" not in r.stdout


def test_gpu_cores_alone_pick_the_bin_of_this_mac(tmp_path):
    # the M1 Max report has no GPU core count: --gpu-cores 32 names the bin, chip and RAM still come from this Mac
    env, _ = standins(tmp_path, "m1-max-32gb-wired26000")
    r = plan(env, "--model", "qwen3-8b", "--gpu-cores", "32", "--json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["mac"]["chip"]["id"] == "m1-max-32gpu" and got["request"]["ram"] == 32


def test_calibration_reads_the_mac_through_the_same_detector(on_path):
    from calibration.hardware import detect

    calls = on_path("m4-max-40gpu-64gb")
    dev = detect(system="Darwin")
    assert (dev.chip, dev.gpu_cores, dev.ram_bytes, dev.chip_id) == ("Apple M4 Max", 40, 64 * 2**30, "m4-max-40gpu")
    assert (dev.cpu_cores_physical, dev.cpu_cores_performance) == (16, 12)
    assert "system_profiler SPDisplaysDataType -json" in calls.read_text()
    assert thismac.detect().chip_id == dev.chip_id


def test_agents_questions_are_asked_for_this_mac_too(on_path):
    from cli.questions import _detected, answer

    on_path("m2-pro-19gpu-32gb-macos14")
    _detected.cache_clear()
    auto = answer("plan", {"model": "qwen3-8b"})
    typed = answer("plan", {"model": "qwen3-8b", "chip": "M2 Pro", "gpu_cores": 19, "ram": 32})
    assert auto["mac"] == typed["mac"] and auto["options"] == typed["options"]
    assert answer("what_runs", {})["chip"] == answer("what_runs", {"ram": 32, "chip": "M2 Pro", "gpu_cores": 19})["chip"]
    _detected.cache_clear()


def test_a_rumoured_profile_is_used_and_said():
    from planner import profiles

    rumoured = [c for c in profiles.all_chips() if c.status == "rumoured"]
    if not rumoured:
        pytest.skip("no rumoured chip profile in this checkout")
    c = rumoured[0]
    m = thismac.map_to_profile(thismac.MacFacts(brand=f"Apple {c.name}", gpu_cores=c.gpu_cores,
                                                ram_bytes=max(c.ram_options_gb) * 2**30, macos_version="26.2"))
    assert m.chip_id == c.id and "rumoured" in m.headline() and m.unknown is None
