"""Per-option additions applied by planner.plan beyond the memory wall and onto the power bill: the streamed-from-SSD
estimate of a llama.cpp option too big for the RAM (planner/streaming.py) and the energy per token of every option
with a speed answer (planner/power.py), and what the Macs sold with the chip and RAM add (battery, no fan:
planner/fanless.py). The profile tables are read here; the arithmetic lives in those modules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import profiles
from .energy import DEFAULT_KWH_PRICE_USD
from .memory import MemoryModel
from .results import WiredLimit
from .schema import Chip, Runtime

if TYPE_CHECKING:
    from . import power, streaming
    from .buy import BuyRow
    from .plan import FitOption as Option
    from .schema_extra import MacProduct


def default_storage_gb(chip: Chip, ram_gb: float) -> int:
    """The smallest SSD sold with this chip and RAM (profiles/macs), else the smallest with this chip, else 512."""
    macs = [(m.ram_gb, m.storage_gb) for m in profiles.all_macs() if m.chip == chip.id and m.storage_gb]
    same = [s for r, s in macs if r == int(ram_gb)]
    sizes = same or [s for _, s in macs]
    return min(sizes) if sizes else 512


def ssd_for(chip: Chip, ram_gb: float, storage_gb: int | None) -> streaming.SSDSpeed:
    from . import streaming  # on first use, as below: the plain question streams nothing

    size = storage_gb or default_storage_gb(chip, ram_gb)
    return streaming.ssd_speed(profiles.ssd_speeds(), chip.generation, chip.tier, size)


def with_streaming(opt: Option, mm: MemoryModel, chip: Chip | None, wired: WiredLimit,
                   storage_gb: int | None = None) -> Option:
    """A llama.cpp option whose weights + KV + buffers exceed what macOS can spare: stream the weights from the SSD
    (mmap, the default) instead of a bare 'does not fit'. Needs the chip (SSD and compute speed)."""
    if opt.memory.total <= wired.max_raise_bytes:
        return opt
    if not mm.engine.mmap_streams:  # mlx_lm/utils.py load_model: mx.load, then mx.eval(model.parameters())
        return opt.model_copy(update={"notes": [*opt.notes, (
            "larger than RAM: mlx-lm evaluates every weight into memory at load, so it would swap (SSD writes); "
            "llama.cpp maps the GGUF and streams it from the SSD instead")]})
    if chip is None or opt.speed is None:
        return opt
    one = min(opt.speed.decode_tok_s_per_seq)
    full = opt.speed.decode_tok_s_per_seq[one]
    rng = opt.speed.decode_tok_s_range.get(one)
    c = mm.model.config
    from . import streaming

    est = streaming.streaming(
        weights_bytes=opt.weights.total_bytes, by_group=opt.weights.by_group,
        anon_bytes=opt.memory.total - opt.memory.weights, ram_budget_bytes=wired.max_raise_bytes,
        n_experts=c.n_experts if c.is_moe else 0, experts_per_tok=c.num_experts_per_tok or 0,
        compute_s_per_token=1 / full, compute_range_s=(1 / rng[0], 1 / rng[1]) if rng else None,
        ssd=ssd_for(chip, wired.ram_bytes / 2**30, storage_gb))
    return opt.model_copy(update={"streaming": est})


def sold_with(chip: Chip, ram_gb: float) -> list[MacProduct]:
    """The Mac configurations Apple sells with this chip bin and RAM (profiles/macs)."""
    return [m for m in profiles.all_macs() if m.chip == chip.id and m.ram_gb == int(ram_gb)]


def fanless_notes(chip: Chip, ram_gb: float) -> list[str]:
    """The note for a chip and RAM that Apple sells in a fanless Mac (planner/fanless.py), else none."""
    from . import fanless

    f = fanless.fanless(profiles.fanless_table(), [m.product for m in sold_with(chip, ram_gb)])
    return [] if f is None else [fanless.note(f)]


def bf16_notes(chip: Chip, torch_dtype: str | None, runtimes: list[Runtime]) -> list[str]:
    """The note for options of a bfloat16 model, on an engine that computes in its build's dtype (MLX), on a GPU that
    emulates bfloat16 (planner/bf16.py), else none. ``runtimes``: the runtimes planned."""
    from . import bf16
    from .engines import engine_for

    table = profiles.bf16_table()
    ok = bf16.applies(table, chip.generation, torch_dtype, any(engine_for(r).build_dtype_compute for r in runtimes))
    return [bf16.note(table, chip.generation)] if ok else []


def _battery(chip: Chip, ram_gb: float) -> tuple[str | None, float | None]:
    """(product, Wh) of the smallest-battery laptop sold with this chip and RAM whose battery the table knows."""
    from . import power  # on first use, as below: the plain question (no chip) needs no power table class
    table = profiles.power_table()
    found = []
    for m in sold_with(chip, ram_gb):
        if m.form_factor == "laptop":
            wh = power.battery_wh(table, m.product, chip.generation, chip.tier)
            if wh is not None:
                found.append((wh, m.product))
    if not found:
        return None, None
    wh, product = min(found)
    return product, wh


def with_energy(opt: Option, chip: Chip | None, ram_gb: float) -> Option:
    """Joules per token at the option's decode (one user) and prefill, and battery hours on a laptop. An option
    that does not fit has none, unless it streams from the SSD (then at the streamed speed, the GPU busy only for
    the compute share of each step)."""
    if chip is None or opt.speed is None:
        return opt
    s = opt.streaming
    if opt.fit.verdict == "no-fit" and s is None:
        return opt
    from . import power

    pm = power.power_model(profiles.power_table(), chip.id, chip.gpu_cores)
    one = min(opt.speed.decode_tok_s_per_seq)
    product, wh = _battery(chip, ram_gb)
    if s is not None:
        share = s.compute_s_per_token / (s.compute_s_per_token + s.ssd_s_per_token)
        e = power.energy_per_token(pm, s.decode_tok_s, None, wh, gpu_share=share)  # prefill streams too: not modelled
    else:
        e = power.energy_per_token(pm, opt.speed.decode_tok_s_per_seq[one], opt.speed.prefill_tok_s, wh)
    return opt.model_copy(update={"energy": e.model_copy(update={"battery_product": product})})


# --------------------------------------------------------------------------- running cost (plan serve, plan buy)
def _chip(chip_id: str) -> Chip:
    return next(c for c in profiles.all_chips() if c.id == chip_id)


def serve_energy(chip_id: str, utilisation: float, throughput_tok_s: float,
                 kwh_price: float = DEFAULT_KWH_PRICE_USD) -> power.ServeEnergy:
    """The GPU is busy the offered/saturation share of the time (1 when the queue grows without bound)."""
    from . import power

    c = _chip(chip_id)
    d = power.daily_cost(power.power_model(profiles.power_table(), c.id, c.gpu_cores), utilisation, kwh_price)
    tokens = throughput_tok_s * 86400
    return power.ServeEnergy(daily=d, j_per_generated_token=d.kwh_per_day * 3.6e6 / tokens if tokens else None,
                       usd_per_million_tokens=d.usd_per_day / tokens * 1e6 if tokens else None)


def running_costs(rows: list[BuyRow], busy_hours: float, kwh_price: float = DEFAULT_KWH_PRICE_USD,
                  years: float | None = None) -> list[power.RunningCost]:
    """Per buy row (planner.buy.BuyRow): kWh and USD per day with the GPU busy ``busy_hours`` a day; ranked by
    total cost of ownership when ``years`` is given, else by cost per day."""
    from . import power

    macs = {m.id: m for m in profiles.all_macs()}
    table = profiles.power_table()
    out = []
    for r in rows:
        m = macs.get(r.mac)
        if m is None:
            continue
        c = _chip(m.chip)
        pm = power.power_model(table, c.id, c.gpu_cores)
        d = power.daily_cost(pm, busy_hours / 24, kwh_price)
        wh = power.battery_wh(table, m.product, c.generation, c.tier) if m.form_factor == "laptop" else None
        out.append(power.RunningCost(
            mac=r.mac, label=r.label, price_usd=r.price_usd, kwh_per_day=d.kwh_per_day,
            kwh_per_day_range=d.kwh_per_day_range, usd_per_day=d.usd_per_day,
            j_per_token=pm.decode_w / r.decode_tok_s_per_user if r.decode_tok_s_per_user else None,
            battery_hours=wh / pm.decode_w if wh else None, years=years,
            tco_usd=power.total_cost(r.price_usd, d.kwh_per_day, years, kwh_price) if years else None))
    return sorted(out, key=lambda x: (x.tco_usd if years else x.usd_per_day, x.price_usd))
