"""Energy per token and running cost (planner/power.py): hand-derived watts, J/token, kWh and dollars per day."""

from __future__ import annotations

from datetime import date

import pytest

from planner import beyond, power, profiles
from planner.plan import PlanRequest, plan


def _table(rows, batteries=()):
    return power.PowerTable(id="t", name="t", rows=rows, batteries=list(batteries), sources=["https://x"],
                            verified=date(2026, 12, 5))


def _row(chip, cores, state, w):
    return power.PowerRow(product="p", chip=chip, gpu_cores=cores, state=state, watts=w, source="https://x")


def test_watts_per_gpu_core_above_idle_median_and_spread():
    t = _table([_row("a", 10, "idle", 5), _row("a", 10, "load", 30), _row("a", 10, "load", 45),
                _row("b", 80, "idle", 10), _row("b", 80, "load", 250), _row("b", 80, "decode", 170)])
    # load slopes: (30-5)/10 = 2.5, (45-5)/10 = 4.0, (250-10)/80 = 3.0 -> median 3.0; decode: (170-10)/80 = 2.0
    pm = power.power_model(t, "a", 10)
    assert pm.idle_w == 5 and pm.decode_basis == "decode" and pm.prefill_basis == "load"
    assert pm.decode_w == pytest.approx(5 + 2.0 * 10)
    assert pm.prefill_w == pytest.approx(5 + 3.0 * 10)
    assert pm.prefill_w_range == pytest.approx((5 + 25, 5 + 40))
    other = power.power_model(t, "c", 40)       # not measured: the median measured idle, (5 + 10) / 2
    assert other.idle_w == 7.5 and other.idle_basis == "median of measured Macs"
    with pytest.raises(ValueError):
        power.PowerRow(product="p", chip="a", gpu_cores=10, state="idle", watts=5, source="a forum post")


def test_shipped_table_m4_max_power_and_joules_per_token():
    pm = power.power_model(profiles.power_table(), "m4-max-40gpu", 40)
    # slopes from the shipped rows: Mac mini M4 (30 − 5)/10 = 2.5 and (42.5 − 5)/10 = 3.75, Mac Studio M3 Ultra
    # (260 − 8.25)/80 = 3.146875: median 3.146875 W per core over the M4 Max Studio's measured 7.1 W idle
    assert pm.idle_w == 7.1 and pm.decode_basis == "load"
    assert pm.decode_w == pytest.approx(7.1 + 40 * 3.146875)            # 132.975 W
    assert pm.decode_w_range == pytest.approx((7.1 + 40 * 2.5, 7.1 + 40 * 3.75))
    e = power.energy_per_token(pm, decode_tok_s=20.0, prefill_tok_s=500.0)
    assert e.decode_j_per_token == pytest.approx(132.975 / 20)          # 6.65 J/token
    assert e.prefill_j_per_token == pytest.approx(132.975 / 500)
    half = power.energy_per_token(pm, decode_tok_s=1.0, gpu_share=0.5)  # streaming: GPU waits half the step
    assert half.decode_j_per_token == pytest.approx(7.1 + 0.5 * (132.975 - 7.1))


def test_daily_cost_and_tco_by_hand():
    pm = power.power_model(profiles.power_table(), "m4-max-40gpu", 40)
    d = power.daily_cost(pm, busy_share=0.25, kwh_price=0.16)
    # 24 h × (7.1 W + 0.25 × 125.875 W) = 0.92565 kWh; × $0.16
    assert d.kwh_per_day == pytest.approx(0.92565)
    assert d.usd_per_day == pytest.approx(0.92565 * 0.16)
    assert power.total_cost(3499, 0.92565, 3, 0.16) == pytest.approx(3499 + 0.92565 * 365.25 * 3 * 0.16)
    assert power.DEFAULT_KWH_PRICE_USD == 0.16


def test_battery_hours_on_a_macbook_pro():
    t = profiles.power_table()
    assert power.battery_wh(t, "MacBook Pro 14", "M3", "max") == 72.4
    assert power.battery_wh(t, "MacBook Pro 16", "M3", "max") == 100
    assert power.battery_wh(t, "Mac Studio", "M3", "max") is None
    p = plan(PlanRequest(model="llama-3.1-8b", chip="M3 Max", gpu_cores=40, ram=48, runtimes=["llama.cpp"],
                         quants=["Q4_K_M"]))
    e = p.options[0].energy
    assert e.battery_wh == 72.4 and e.battery_product == "MacBook Pro 14"   # the smaller of the 14 and 16 inch
    assert e.battery_hours_decoding == pytest.approx(72.4 / e.power.decode_w)
    assert e.decode_j_per_token == pytest.approx(e.power.decode_w / p.options[0].speed.decode_tok_s_per_seq[1])


def test_serve_energy_by_hand():
    e = beyond.serve_energy("m4-max-40gpu", utilisation=0.25, throughput_tok_s=30.0, kwh_price=0.16)
    assert e.daily.kwh_per_day == pytest.approx(0.92565)
    assert e.j_per_generated_token == pytest.approx(0.92565 * 3.6e6 / (30 * 86400))
    assert e.usd_per_million_tokens == pytest.approx(0.92565 * 0.16 / (30 * 86400) * 1e6)


def test_buy_ranks_by_total_cost_of_ownership():
    from planner.buy import buy
    from planner.workload import custom_workload

    r = buy(["qwen3-8b"], custom_workload("chat"))
    costs = beyond.running_costs(r.per_mac, busy_hours=8, kwh_price=0.16, years=3)
    assert [c.tco_usd for c in costs] == sorted(c.tco_usd for c in costs)
    mini = next(c for c in costs if c.mac == "mac-mini-2024-11-m4-10gpu-24gb")
    # Mac mini M4: 5 W idle (measured), 5 + 10 × 3.146875 W generating; 8 h a day
    kwh = (24 * 5 + 8 * 10 * 3.146875) / 1000
    assert mini.kwh_per_day == pytest.approx(kwh)
    assert mini.tco_usd == pytest.approx(mini.price_usd + kwh * 365.25 * 3 * 0.16)


def test_serve_and_buy_answer_the_daily_cost(capsys):
    from cli.main import main

    args = ["serve", "--model", "qwen3-30b-a3b", "--chip", "M4 Max", "--gpu-cores", "40", "--ram", "64",
            "--slots", "2", "--rate", "5/min", "--duration", "10min", "--no-sweep", "--kwh-price", "0.30"]
    assert main([*args, "--json"]) == 0
    import json

    r = json.loads(capsys.readouterr().out)
    d = r["energy"]["daily"]
    assert d["kwh_price_usd"] == 0.30 and d["busy_share"] == pytest.approx(min(r["utilisation"], 1.0))
    assert d["usd_per_day"] == pytest.approx(d["kwh_per_day"] * 0.30)
    assert main(args) == 0
    assert "kWh/day" in capsys.readouterr().out
    assert main([*args[:-1], "-1"]) == 2
    assert "--kwh-price" in capsys.readouterr().err
    assert main(["buy", "--model", "qwen3-8b", "--years", "3", "--kwh-price", "0.3"]) == 0
    out = capsys.readouterr().out
    assert "Running cost" in out and "TCO" in out
