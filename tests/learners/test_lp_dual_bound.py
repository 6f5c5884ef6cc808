"""The dual bound that stops the first-order LP rounds (``lp_operators.dual_bound``) is a lower
bound on the LP's optimum for any duals v >= 0, with and without a box on the weights, and is
the optimum at the optimal duals: checked against HiGHS (scipy's linprog) on random LPs of the
working sets' form, min 1.w + C 1.xi s.t. H w + M xi >= 1, lo <= w <= hi, xi >= 0."""

from __future__ import annotations

import numpy as np
import pytest
from _lp import highs_optimum, lp_rows

from tagger.learners.solvers.lp_operators import dual_bound


def _lp(seed: int, boxed: bool):
    rng = np.random.default_rng(seed)
    R, K, N, C = 12, 7, 4, 1.5
    H = rng.normal(size=(R, K)) * (rng.random((R, K)) < 0.5)
    rsent = np.sort(rng.integers(0, N, size=R))
    lo = np.where(rng.random(K) < 0.5, rng.random(K), 0.0) if boxed else np.zeros(K)
    hi = lo + rng.random(K) * 3 if boxed else np.full(K, np.inf)
    res = highs_optimum(H, rsent, N, C, lo, hi)
    v_opt = -res.ineqlin.marginals  # the duals of H w + M xi >= 1
    return lp_rows(H, rsent), C, lo, hi, res.fun, v_opt, K, N


@pytest.mark.parametrize("boxed", [False, True], ids=["open", "boxed"])
@pytest.mark.parametrize("seed", range(20))
def test_the_dual_bound_is_below_the_optimum_and_reaches_it(seed, boxed):
    A, C, lo, hi, optimum, v_opt, K, N = _lp(seed, boxed)
    rng = np.random.default_rng(100 + seed)
    print(f"seed {seed}")

    def bound(v):
        return dual_bound(A, C, v, np.empty(K), np.empty(N), lo, hi)

    for _ in range(50):  # any v >= 0, some with sentences whose duals sum far above C
        v = rng.random(len(v_opt)) * rng.choice([0.1, 1.0, 5.0])
        assert bound(v) <= optimum + 1e-9
    assert bound(np.maximum(v_opt, 0.0)) == pytest.approx(optimum, rel=1e-7, abs=1e-9)
