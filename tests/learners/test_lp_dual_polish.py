"""Dual feasibility polishing (``dual_polish.polish_dual``): from a dual point that is good in
objective but violates some column limits, the bound it returns is still below the LP's
optimum (HiGHS, scipy's linprog) and much nearer it than the scaled bound of the point it
started from; and PDHG with polishing certifies the same optimum HiGHS finds."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from _lp import highs_optimum, lp_rows

from tagger.learners.solvers.lp_operators import dual_bound
from tagger.learners.solvers.pdhg import pdhg, scalings


def _lp(seed: int):
    """Many sentences of a few rows each, rows with mostly positive entries (a gold
    labeling's features against a competitor's), so that the optimum has weights."""
    rng = np.random.default_rng(seed)
    N, per, K, C = 60, 3, 40, 10.0
    R = N * per
    H = rng.normal(0.3, 1.0, size=(R, K)) * (rng.random((R, K)) < 0.1)
    rsent = np.repeat(np.arange(N), per)
    lo, hi = np.zeros(K), np.full(K, np.inf)
    res = highs_optimum(H, rsent, N, C, lo, hi)
    A = lp_rows(H, rsent)
    scale = scalings(sp.csr_matrix(H), A.rsent, N, 10)
    return A, C, (lo, hi), scale, res.fun, np.maximum(-res.ineqlin.marginals, 0.0), K, N


@pytest.mark.parametrize("seed", range(10))
def test_polishing_a_slightly_infeasible_optimal_dual_recovers_the_bound(seed):
    """The optimal duals times 1 + 2 % noise: near the optimum in objective, over the limit
    of many columns; their scaled bound is a few per cent short, the polished one far less."""
    from tagger.learners.solvers.dual_polish import polish_dual

    A, C, box, scale, optimum, v_opt, K, N = _lp(seed)
    rng = np.random.default_rng(100 + seed)
    print(f"seed {seed}")
    v = v_opt * (1.0 + 0.02 * rng.random(len(v_opt)))
    plain = dual_bound(A, C, v, np.empty(K), np.empty(N), *box)
    out = np.empty(len(v))
    bound, its = polish_dual(A, C, v, box, scale, 2000, 50, np.inf, out)
    assert its > 0
    assert optimum - plain >= 0.005 * optimum
    assert plain < bound <= optimum + 1e-9
    assert optimum - bound < 0.25 * (optimum - plain)
    assert np.all(out >= 0.0)
    assert dual_bound(A, C, out, np.empty(K), np.empty(N), *box) == bound


@pytest.mark.parametrize("seed", range(10))
def test_a_polish_that_starts_at_its_target_does_nothing(seed):
    from tagger.learners.solvers.dual_polish import polish_dual

    A, C, box, scale, optimum, v_opt, K, N = _lp(seed)
    plain = dual_bound(A, C, v_opt, np.empty(K), np.empty(N), *box)
    out = np.empty(len(v_opt))
    assert polish_dual(A, C, v_opt, box, scale, 2000, 50, plain, out) == (plain, 0)
    assert np.array_equal(out, v_opt)


@pytest.mark.parametrize("polish", [0, 1000], ids=["plain", "polished"])
@pytest.mark.parametrize("seed", range(10))
def test_pdhg_certifies_the_optimum_with_and_without_polishing(seed, polish):
    A, C, box, scale, optimum, v_opt, K, N = _lp(seed)
    R = len(v_opt)
    print(f"seed {seed}")
    point = (np.zeros(K), np.zeros(N), np.zeros(R))
    never = (-np.inf, np.inf, -np.inf, 1.0, np.inf)
    its, primal, dual, *_ = pdhg(
        A, C, point, box, scale, (0.5, 1.0, 0), 200_000, 50, 1e-6, True, never, polish
    )
    assert dual <= optimum + 1e-9 <= primal + 2e-9
    assert primal - dual <= 1e-6 * max(1.0, abs(primal))
