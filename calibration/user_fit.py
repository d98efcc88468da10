"""Fit a user's calibration runs with the shipped constants as priors, and turn the fit into a profile.

The fit is the very one that produced the shipped profiles (:func:`calibration.fit.fit_efficiency_least_squares`,
weighted least squares on log rates) run on :func:`calibration.fit.records_from_runs` of the local records, with:

- one instance of each efficiency (the device is one chip): ``eta_bw:*``, ``eta_c:*``, ``eta_attn``,
  ``eta_c_decode``, ``t_layer_s`` are free;
- priors centred on the shipped constants of that chip and runtime (the planner's own lookup without the user
  dir), log-sigma :data:`PRIOR_SIGMA`, so a parameter the runs hardly see stays at the shipped value and a
  one-minute run cannot produce wild constants;
- everything a single model cannot separate (dequantization factor per weight class, no-flash factor, matrix
  unit factor) fixed at the shipped value, but for one thing off a Mac: on a device whose runtimes run on the CPU
  (Chip.on_cpu) the ggml runtimes' dequantization factor of each weight class the prefill runs measured is freed
  too (MLX's CPU matmuls are modelled by η_c alone, with the CPU-wide priors). The shipped
  factors describe Metal's dequantizing matmul kernels; ggml-cpu multiplies quantized weights by int8-quantized
  activations (ggml-cpu quants.c ``ggml_vec_dot_q4_K_q8_K``), which can outrun the fp32 GEMM the chip's peak is
  measured with, so with η_c capped at 1 the shipped factor held every prefill 8-18 % slow on this repo's 2-vCPU VM;
- ``eta_attn_decode``, the decode attention vector kernel's FLOP efficiency relative to prefill's (the shipped
  llama.cpp fit has its own; unset = 1 for mlx-lm; throughput.Roofline.eta_attn_decode says where it applies): a
  decode point deep in the cache tells it from η_attn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from calibration.errors import CalibrationError

#: log-sigma of the priors: one sigma is a factor e^0.5 = 1.65 from the shipped value.
PRIOR_SIGMA = 0.5
#: ... on a device whose runtimes run on the CPU (Chip.on_cpu): the shipped constants describe Apple-GPU kernels
#: (a CPU's naive MLX matmuls run at ~1 % of its GEMM peak where Metal reaches 60 %), so they centre the fit without
#: holding it (e^2 = 7.4× per sigma). With 0.5 the priors outweighed the runs: on this repo's 2-vCPU VM the fitted
#: mlx-lm per-column batch cost stayed so close to its Metal prior that batch 2 fitted 10 % off in-sample.
CPU_PRIOR_SIGMA = 2.0
# eta_kv: a depth point (decode at d512) tells the KV stream apart from the weight stream
BASE_FREE = ("eta_bw", "eta_c", "eta_attn", "eta_c_decode", "t_layer_s", "eta_mv", "eta_kv", "eta_attn_decode")


def free_params() -> tuple[str, ...]:
    """The efficiencies a user fit frees: those of BASE_FREE that both the schema and calibration.fit know."""
    from calibration import fit as F
    from planner.schema import SpeedConstants

    return tuple(p for p in BASE_FREE if p in SpeedConstants.model_fields and p in F.BASE_PRIORS)


def value(k, p: str) -> float:
    """The value of fitted parameter ``p`` in constants ``k``: a field by name, ``q_<class>`` that weight class's
    dequantization factor; an optional field that is unset at its neutral value (eta_attn_decode: 1)."""
    if p.startswith("q_"):
        return (k.quant_prefill_factor or {}).get(p[2:], 1.0)
    v = getattr(k, p)
    return 1.0 if v is None else v


FREE = ("eta_bw", "eta_c", "eta_attn", "eta_c_decode", "t_layer_s")  # always free (kept for callers)
QUANT_CLASSES = ("float", "legacy", "kquant", "iquant", "mxfp4", "affine", "fp4")


@dataclass
class UserFit:
    """Result of :func:`fit_user`."""

    runtime: str
    chip_id: str
    constants: Any                       # SpeedConstants, complete
    prior: Any                           # SpeedConstants the fit started from (shipped)
    prior_source: str
    params: dict[str, float]
    residuals: dict[str, float]          # mape / decode_mape / prefill_mape [%], through planner.throughput
    n_records: int
    status: int
    nfev: int
    message: str
    rows: list[dict[str, Any]] = field(default_factory=list)  # label, phase, measured, predicted, ape
    prior_sigma: float = PRIOR_SIGMA     # log-sigma the priors had
    free: tuple[str, ...] = ()           # the parameters the fit freed (free_params(), then q_<class> on a CPU)

    @property
    def converged(self) -> bool:
        return self.status > 0 and all(math.isfinite(v) and v > 0 for v in self.params.values())


def shipped_constants(chip, runtime: str):
    """ResolvedSpeedConstants from the shipped profiles only (the priors of a user fit)."""
    from planner import profiles

    return profiles.load_speed_constants(chip, runtime, include_user=False)


def _mape(apes: list[float]) -> float | None:
    return round(sum(apes) / len(apes), 2) if apes else None


def predict_runs(records, chip, constants) -> list[float]:
    """Aggregate tok/s that planner.throughput predicts for each RunRecord with ``constants``."""
    from calibration import fit as F

    return [F.predict_record(r, constants) for r in F.records_from_runs(records, chip)]


def ape_rows(records, chip, constants) -> list[dict[str, Any]]:
    out = []
    for r, pred in zip(records, predict_runs(records, chip, constants)):
        out.append({"label": r.label, "phase": r.phase, "kind": r.kind, "batch": r.batch,
                    "prompt_tokens": r.prompt_tokens, "gen_tokens": r.gen_tokens, "depth": r.context_depth,
                    "measured": r.value_tok_s, "predicted": pred, "ape": abs(pred / r.value_tok_s - 1) * 100})
    return out


def residuals_of(rows: list[dict[str, Any]]) -> dict[str, float]:
    res = {"mape": _mape([x["ape"] for x in rows]),
           "decode_mape": _mape([x["ape"] for x in rows if x["phase"] == "decode"]),
           "prefill_mape": _mape([x["ape"] for x in rows if x["phase"] == "prefill"])}
    return {k: v for k, v in res.items() if v is not None}


def prior_sigma_for(chip) -> float:
    """The log-sigma of a user fit's priors on ``chip``: PRIOR_SIGMA on a Mac, CPU_PRIOR_SIGMA off the GPU."""
    return CPU_PRIOR_SIGMA if chip.on_cpu else PRIOR_SIGMA


def fit_user(records, chip, runtime: str, prior=None, prior_sigma: float | None = None) -> UserFit:
    """Fit ``records`` (RunRecords of one runtime, measured on ``chip``) starting from the shipped constants;
    ``prior_sigma`` defaults to :func:`prior_sigma_for` the chip."""
    if prior_sigma is None:
        prior_sigma = prior_sigma_for(chip)
    from calibration import fit as F
    from planner.schema import SpeedConstants

    recs = [r for r in records if r.runtime == runtime]
    if not recs:
        raise CalibrationError(f"no {runtime} records to fit")
    if prior is None:
        resolved = shipped_constants(chip, runtime)
        prior, prior_source = resolved.constants, resolved.source
    else:
        prior_source = "given"
    k: SpeedConstants = prior
    fit_recs = F.records_from_runs(recs, chip)
    # off a Mac, the dequantization factor of each weight class the prefill runs measured (module docstring)
    classes = sorted({r.geo.quant_class for r in fit_recs if r.phase == "prefill"} - {"float"}) \
        if chip.on_cpu and runtime != "mlx-lm" else []
    free = free_params() + tuple(f"q_{c}" for c in classes)
    qf = k.quant_prefill_factor or {}
    # everything the fit does not free stays at the shipped value (every scalar of the schema, by name)
    fixed = {f"q_{c}": qf.get(c, 1.0 if c == "float" else F.BASE_PRIORS[f"q_{c}"][0]) for c in QUANT_CLASSES}
    fixed.update({n: v for n, v in k.model_dump().items() if isinstance(v, int | float) and v is not None})
    fixed.update({"eta_bw:*": k.eta_bw, "eta_c:*": k.eta_c})
    priors = {p: (value(k, p), prior_sigma) for p in free}
    spec = F.Spec(runtime, tier_eta_bw=False, gen_eta_c=False, free=set(free_params()) | ({"q"} if classes else set()))
    # plain least squares, not the shipped fit's source-level Huber reweighting (calibration.fit.fit_source_robust):
    # a user's runs are one source, whose Huber weight per phase rescales to the same weight
    params, diag = F.fit_efficiency_least_squares(fit_recs, spec, priors=priors, fixed=fixed)
    fitted = {p: params.get(f"{p}:*", params.get(p)) for p in free_params()}
    consts = k.model_copy(update={p: (min(v, 1.0) if p.startswith("eta") else v)
                                  for p, v in fitted.items() if v is not None})
    if classes:
        consts = consts.model_copy(update={"quant_prefill_factor": {
            **qf, **{c: params[f"q_{c}"] for c in classes if f"q_{c}" in params}}})
    consts = SpeedConstants.model_validate(consts.model_dump())
    rows = ape_rows(recs, chip, consts)
    return UserFit(runtime=runtime, chip_id=chip.id, constants=consts, prior=k, prior_source=prior_source,
                   params=params, residuals=residuals_of(rows), n_records=len(recs), status=int(diag["status"]),
                   nfev=int(diag["nfev"]), message=str(diag["message"]), rows=rows, prior_sigma=prior_sigma,
                   free=free)


def build_profile(uf: UserFit, records, fitted_on: date | None = None):
    """The CalibrationProfile a user fit is stored as (scope = chip id, runtime version in the provenance)."""
    from planner.schema import CalibrationProfile, Provenance

    versions = sorted({r.runtime_version for r in records})
    models = sorted({f"{r.model_id or r.model_path.rsplit('/', 1)[-1]} ({r.quant})" for r in records})
    tools = sorted({r.tool for r in records})
    ratios = {p: round(value(uf.constants, p) / value(uf.prior, p), 3) for p in uf.free}
    return CalibrationProfile(
        id=f"{uf.chip_id}__{uf.runtime}", scope=uf.chip_id, runtime=uf.runtime, constants=uf.constants,
        provenance=Provenance(
            method=("user calibration: plan calibrate, calibration.fit.fit_efficiency_least_squares with the "
                    f"shipped constants as priors (log-sigma {uf.prior_sigma:g})"),
            fitted_on=fitted_on or date.today(), rows=len(records),
            data=f"{uf.runtime} {', '.join(versions)}; records {uf.chip_id}__{uf.runtime}.jsonl",
            residuals=uf.residuals,
            notes=(f"runtime version {', '.join(versions)}; models {', '.join(models)}; tools {', '.join(tools)}; "
                   f"fit status {uf.status} in {uf.nfev} evaluations; calibrated/shipped ratios {ratios}; "
                   f"priors: {uf.prior_source}")))
