"""calibration.finetune_fit: the shipped profiles/finetune/mlx-lm.yaml is what the fit gives on the runs file, and
the fit recovers coefficients it was built from."""

from __future__ import annotations

import pytest

pytest.importorskip("scipy")

from calibration import finetune_fit as ff  # noqa: E402
from planner import profiles  # noqa: E402

NAMES = ("a_hq", "a_f", "a_s", "a_v", "a_frozen", "c_hq", "c_f", "c_s")


def test_shipped_profile_is_the_fit_of_the_shipped_runs():
    k = profiles.load_finetune(include_user=False)
    fit = ff.fit(ff.load())
    assert {n: getattr(k, n) for n in NAMES} == pytest.approx(fit, abs=0.011)
    assert k.provenance.rows == len(ff.load())


def test_fit_recovers_known_coefficients():
    # synthetic runs built from known coefficients (the no-checkpoint structure): the fit must give them back
    truth = dict(a_hq=3.0, a_f=6.0, a_s=4.0, a_v=4.0, a_frozen=1.0)
    rows = []
    for h, f, V, nh, N, L, B, S in [(128, 384, 512, 4, 4, 4, 2, 128), (256, 384, 512, 4, 4, 4, 2, 128),
                                    (128, 1024, 512, 4, 4, 2, 2, 128), (128, 384, 4096, 4, 4, 4, 1, 64),
                                    (128, 384, 512, 8, 8, 4, 4, 256), (192, 640, 1024, 6, 6, 3, 3, 96)]:
        r = dict(hidden=h, n_layers=N, heads=nh, kv_heads=2, ffn=f, vocab=V, dtype="float32", q_bits=None,
                 fine_tune_type="lora", batch=B, seq=S, rank=8, layers=L, grad_checkpoint=False, weights_bytes=10**6)
        d = ff._dims(r)
        x = ff._x_plain(d)
        r["peak_bytes"] = ff._fixed(r, d) + sum(c * v for c, v in zip(truth.values(), x))
        rows.append(r)
    got = ff.fit(rows)
    assert {n: got[n] for n in truth} == pytest.approx(truth, abs=0.01)
