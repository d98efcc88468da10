"""Router pairs (planner/router.py): a llama.cpp option and an mlx-lm option resident together, searched over
every pair that fits together under the GPU limit, ranked by the workload objective against one runtime."""

import pytest

from cli.main import main
from planner import profiles
from planner.advice import recommend
from planner.search import speed_available
from planner.units import GiB
from planner.workload import custom_workload

needs_speed = pytest.mark.skipif(not speed_available(), reason="planner/throughput.py not available")
ISSUE = ["recommend", "--model", "llama-3.3-70b", "--chip", "M3 Ultra", "--gpu-cores", "60", "--ram", "96",
         "--prompt", "1024:0.5,12000:0.5"]


@needs_speed
@pytest.mark.parametrize("extra", [[], ["--max-ttft", "10000", "--min-tok-s", "1"], ["--users", "4"]])
def test_issue_command_answers_with_a_fitting_pair_or_one_runtime(capsys, extra):
    assert main([*ISSUE, *extra]) == 0
    out = capsys.readouterr().out
    assert "Router (mixed workload):" in out
    assert "does NOT fit" not in out  # the old answer: a pair that needs 114 GiB of a 72 GiB limit


@needs_speed
@pytest.mark.parametrize("model,ram,chip", [("llama-3.3-70b", 96, "m3-ultra-60gpu"), ("llama-3.1-8b", 64, "m4-max-40gpu"),
                                            ("qwen3-30b-a3b", 36, "m3-max-30gpu")])
def test_never_a_pair_that_does_not_fit(model, ram, chip):
    wl = custom_workload("code", min_tok_s=1, max_ttft=3600)
    r = recommend(model, ram, wl, chip=profiles.resolve_chip(chip), best_effort=True)
    assert r.router is not None
    if r.router.fits:
        # two processes, each keeping its 1 GiB runtime margin (profiles/runtimes/*.yaml headroom_mib: 1024),
        # under the highest limit we would set
        assert r.router.memory_bytes + 2 * GiB <= r.wired.max_raise_bytes
        assert len(r.router.recipes) == 2 and {"--port 8081", "--port 8082"} <= {
            rec.server[-11:] for rec in r.router.recipes}
        assert sum(float(s.split("%")[0]) for s in r.router.split) == pytest.approx(100, abs=1)


@needs_speed
def test_70b_on_64gb_no_pair_fits_and_says_why():
    # smallest weights: llama.cpp Q3_K_M 31.9 GiB, mlx-lm mxfp4 34.9 GiB (README fit table) = 66.8 GiB before any KV,
    # above the 56 GiB we would ever raise the limit to on 64 GB (8 GiB left to macOS): no pair can fit
    wl = custom_workload("code", min_tok_s=1, max_ttft=36000)
    r = recommend("llama-3.3-70b", 64, wl, chip=profiles.resolve_chip("m3-max-40gpu"), best_effort=True)
    assert r.router is not None and not r.router.fits and r.router.rule == "one runtime"
    assert "no pair fits together" in r.router.reason and len(r.router.recipes) == 1
    assert r.router.pairs_fitting == 0 and r.router.pairs_searched > 0


@needs_speed
def test_long_prompts_and_short_prompts_go_to_different_runtimes_when_a_pair_wins():
    wl = custom_workload("code", min_tok_s=1, max_ttft=3600)
    r = recommend("llama-3.1-8b", 64, wl, chip=profiles.resolve_chip("m4-max-40gpu"), best_effort=True)
    if r.router.fits:
        assert r.router.prefill_runtime != r.router.decode_runtime
        assert r.router.score < r.router.single_score  # latency objective: mean time per request


@needs_speed
def test_best_effort_lists_the_closest_and_says_which_target_binds():
    wl = custom_workload("chat", prompt="12000", max_ttft=3)
    r = recommend("llama-3.3-70b", 96, wl, chip=profiles.resolve_chip("m3-ultra-60gpu"), best_effort=True)
    assert not r.targets_met and r.options
    assert any("TTFT" in n and "> 3 s" in n for n in r.notes)


@needs_speed
def test_throughput_objective_ranks_by_requests_per_second():
    wl = custom_workload("batch", prompt="512:0.5,16000:0.5", users=8)
    r = recommend("llama-3.1-8b", 64, wl, chip=profiles.resolve_chip("m4-max-40gpu"), best_effort=True)
    assert wl.objective == "throughput" and r.router is not None
    if r.router.fits:
        assert r.router.score > r.router.single_score  # requests/s: higher is better
        assert "requests/s" in r.router.reason


def test_every_pair_counted_as_fitting_keeps_both_runtimes_margins():
    """Rule (issue 34): a pair counts as fitting together only when both processes' memory plus both runtimes'
    margins (headroom_mib) fit under the highest GPU limit we would set; one byte more and it does not."""
    from types import SimpleNamespace

    from planner import capacity
    from planner.router import _fit_together
    from planner.units import MiB

    wired = capacity.wired_limit(64, profiles.load_macos("15"))
    ctx = SimpleNamespace(wired=wired)
    fam = {r: profiles.load_runtime(r) for r in ("llama.cpp", "mlx-lm")}
    margins = sum(int(rt.headroom_mib * MiB) for rt in fam.values())
    room = wired.max_raise_bytes - margins
    for share in (0.1, 0.5, 0.9):
        a_bytes = int(room * share)
        for extra, fits in ((0, True), (1, False)):
            a = SimpleNamespace(memory_bytes=a_bytes, runtime="llama.cpp")
            b = SimpleNamespace(memory_bytes=room - a_bytes + extra, runtime="mlx-lm")
            assert (_fit_together(ctx, a, b, fam).verdict != "no-fit") is fits, (share, extra)
