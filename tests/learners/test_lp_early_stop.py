"""A first-order LP solve asked only on which side of a value the LP's minimum lies (the trust
region's open check) stops as soon as it knows: once a feasible point's objective is at most
the lower stop value (the minimum is below it) or its dual bound at least the upper one (the
minimum is above it); one asked for a sufficient decrease from a center (a trust-region step)
stops once a feasible point decreases the objective by a share of the most the dual bound
allows. Each in fewer iterations than the solve to its gap tolerance, and what it returns is
still a feasible primal value and a valid dual bound: checked against HiGHS (scipy's linprog)
on random LPs of the working sets' form, for PDHG and the paper's extragradient."""

from __future__ import annotations

import numpy as np
import pytest
from _lp import highs_optimum, lp_rows

from tagger.learners.solvers.extragradient import extragradient
from tagger.learners.solvers.lp_operators import NEVER, spectral_norm
from tagger.learners.solvers.pdhg import pdhg


def _ends(below=-np.inf, above=np.inf):
    return (below, above) + NEVER[2:]


def _lp(seed: int):
    rng = np.random.default_rng(seed)
    R, K, N, C = 60, 30, 15, 2.0
    H = rng.normal(size=(R, K)) * (rng.random((R, K)) < 0.3)
    rsent = np.sort(rng.integers(0, N, size=R))
    res = highs_optimum(H, rsent, N, C, np.zeros(K), np.full(K, np.inf))
    return lp_rows(H, rsent), C, K, N, R, res.fun


def _solve(method: str, A, C, K, N, R, stop):
    """(iterations, best primal, best dual) from w = 0, xi = 0, v = 0 at a 1e-9 gap."""
    point = (np.zeros(K), np.zeros(N), np.zeros(R))
    box = (np.zeros(K), np.full(K, np.inf))
    ones = (np.ones(K), np.ones(N), np.ones(R))
    step = 1.0 / (1.02 * spectral_norm(A, *ones, 60))
    if method == "pdhg":
        its, primal, dual, *_ = pdhg(
            A, C, point, box, ones, (step, 1.0, 0), 200_000, 10, 1e-9, True, stop, 1000
        )
    else:
        steps = tuple(step * s for s in ones)
        its, primal, dual, _ = extragradient(
            A, C, point, box, steps, 1.0, 200_000, 10, 1e-9, True, stop
        )
    return its, primal, dual


@pytest.mark.parametrize("method", ["pdhg", "extragradient"])
@pytest.mark.parametrize("seed", range(8))
def test_a_solve_stops_once_it_knows_the_side_of_the_value(seed, method):
    print(f"seed {seed}")
    A, C, K, N, R, optimum = _lp(seed)
    its, primal, dual = _solve(method, A, C, K, N, R, NEVER)
    assert primal == pytest.approx(optimum, rel=1e-6)
    assert its > 100  # the early stops below have something to save

    higher = optimum + 0.02 * abs(optimum)  # a feasible point gets below it: "the minimum is lower"
    its_b, primal_b, dual_b = _solve(method, A, C, K, N, R, _ends(below=higher))
    assert optimum - 1e-9 <= primal_b <= higher
    assert dual_b <= optimum + 1e-9
    assert its_b < its

    lower = optimum - 0.02 * abs(optimum)  # the dual bound gets above it: "the minimum is higher"
    its_a, primal_a, dual_a = _solve(method, A, C, K, N, R, _ends(above=lower))
    assert lower <= dual_a <= optimum + 1e-9
    assert primal_a >= optimum - 1e-9
    assert its_a < its


@pytest.mark.parametrize("method", ["pdhg", "extragradient"])
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("share", [0.5, 0.9])
def test_a_solve_stops_at_a_sufficient_decrease(seed, method, share):
    print(f"seed {seed}")
    A, C, K, N, R, optimum = _lp(seed)
    its, primal, _ = _solve(method, A, C, K, N, R, NEVER)
    assert primal == pytest.approx(optimum, rel=1e-6)
    # a trust region's center: the objective somewhere above the minimum
    center = optimum + 0.5 * abs(optimum) + 1.0
    least = 0.01 * (center - optimum)
    its_s, primal_s, dual_s = _solve(method, A, C, K, N, R, (-np.inf, np.inf, center, share, least))
    assert optimum - 1e-9 <= primal_s and dual_s <= optimum + 1e-9
    # the decrease it stopped at is the share of the most the dual bound allows, hence of the
    # most any point can make (HiGHS's optimum)
    assert center - primal_s >= share * (center - dual_s) - 1e-12
    assert center - primal_s >= share * (center - optimum) - 1e-9
    assert its_s < its
    # a decrease larger than any point makes never stops it early
    its_n, primal_n, _ = _solve(
        method, A, C, K, N, R, (-np.inf, np.inf, center, share, 2.0 * (center - optimum))
    )
    assert its_n == its and primal_n == primal
