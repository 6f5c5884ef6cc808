"""A learner's ``max_seconds`` bounds its LP solves, not only its rounds: a solve that would run
past the deadline ends there and says so (``lp_stopped``), and what it returns is never taken
for a lower bound that could certify a model. HiGHS's own ``time_limit`` counts the run time of
all the model's solves together; ``lp-simplex``'s ``time_limit`` is per solve, so it is handed
to HiGHS on top of that total. The bounds are checked against HiGHS solving the same LP
without a limit."""

from __future__ import annotations

import time

import numpy as np
import pytest
from test_lp import _problem

from tagger.learners import LEARNERS
from tagger.learners.solvers.extragradient import ExtragradientSolver
from tagger.learners.solvers.highs_solver import HighsSolver
from tagger.learners.solvers.working_sets import SECOND_BEST, WorkingSets


def _first_round(seed: int):
    """Working sets holding each sentence's best wrong labeling at w = 0."""
    problem = _problem(seed, n=30)
    ws = WorkingSets(problem)
    ws.separate(np.zeros(problem.model.n_weights), SECOND_BEST)
    ws.add(np.arange(problem.X.n_sentences))
    return ws


def _optimum(ws) -> float:
    return HighsSolver(ws, 1.0, signed=False, time_limit=0.0, engine="simplex").solve()[1]


@pytest.mark.parametrize("engine", ["simplex", "ipm"])
def test_a_highs_solve_past_the_deadline_stops_and_bounds_nothing(engine):
    ws = _first_round(3)
    solver = HighsSolver(ws, 1.0, signed=False, time_limit=0.0, engine=engine)
    solver.deadline = time.perf_counter() - 1.0
    solver.solve()
    assert solver.last["lp_stopped"] is True
    assert solver.last["lp_status"] == "Time limit reached"
    assert solver.lower_bound == -np.inf
    # the same solver without the deadline solves the LP to HiGHS's optimum, a bound again
    solver.deadline = None
    _, value = solver.solve()
    assert "lp_stopped" not in solver.last
    assert value == pytest.approx(_optimum(ws), rel=1e-9)
    assert solver.lower_bound == value


def test_highs_time_limit_is_per_solve_not_for_all_solves_together():
    """After solves that took longer in all than ``time_limit``, the next one still gets
    ``time_limit`` of its own and ends optimal (HiGHS's option alone would stop it at once)."""
    ws = _first_round(4)
    limit = 0.1
    solver = HighsSolver(ws, 1.0, signed=False, time_limit=limit, engine="simplex")
    _, value = solver.solve()
    solver.h.setOptionValue("time_limit", solver.inf)
    while solver.h.getRunTime() <= 2 * limit:
        solver.h.clearSolver()  # from scratch, so that each solve adds run time
        solver.h.run()
    _, again = solver.solve()
    assert "lp_stopped" not in solver.last
    assert again == pytest.approx(value, rel=1e-9)


@pytest.mark.parametrize("method", ["pdhg", "extragradient"])
def test_a_first_order_solve_past_the_deadline_runs_one_check_and_stays_a_bound(method):
    learner = LEARNERS["lp-extragradient"](method=method, C=1.0)
    settings = learner.validated()
    ws = _first_round(5)
    solver = ExtragradientSolver(ws, 1.0, settings)
    solver.solve()  # the rate of an iteration comes from a solve
    assert solver.rate is not None and solver.rate > 0
    optimum = _optimum(ws)
    # a new LP (the slacks' weight changed), solved after the deadline
    solver.set_C(3.0)
    exact = HighsSolver(ws, 3.0, signed=False, time_limit=0.0, engine="simplex").solve()[1]
    solver.deadline = time.perf_counter() - 1.0
    _, value = solver.solve()
    assert solver.last["lp_iterations"] <= settings["check_every"]
    tol = max(solver.tight_tol(), settings["early_gap_tol"]) if solver.loose else solver.tight_tol()
    assert solver.last["lp_gap"] > tol  # 50 iterations do not solve the new LP
    assert solver.last["lp_stopped"] is True
    # a feasible point's value and a dual bound, however early the solve ended
    assert value >= exact - 1e-9 * abs(exact)
    assert solver.lower_bound <= exact + 1e-9 * abs(exact)
    assert optimum != pytest.approx(exact)


def test_lp_simplex_with_a_bound_already_spent_stops_after_one_round():
    problem = _problem(6, n=30)
    learner = LEARNERS["lp-simplex"](C=1.0, max_seconds=1e-9, smoothing=0)
    learner.fit(problem)
    assert len(learner.trace_) == 1
    row = learner.trace_[0]
    assert row["converged"] is False
    assert row["lp_stopped"] is True


def test_auto_hands_a_stalled_interior_point_solve_to_the_simplex(monkeypatch):
    """An interior point solve of ``auto`` that runs past its cap (here none at all) is
    stopped and the dual simplex solves the LP from the last optimal basis: the same optimum
    as HiGHS alone, inside the trust region's box and without it."""
    from tagger.learners.solvers import highs_solver

    monkeypatch.setattr(highs_solver, "AUTO_IPM_ROWS", 0)
    monkeypatch.setattr(highs_solver, "AUTO_IPM_FLOOR", 0.0)
    monkeypatch.setattr(highs_solver, "AUTO_IPM_CAP", 0.0)
    ws = _first_round(7)
    solver = HighsSolver(ws, 1.0, signed=False, time_limit=0.0, engine="auto")
    _, first = solver.solve()  # the first solve has no basis to fall back to: the IPM's own
    assert solver.last["lp_engine"] == "ipm"
    assert first == pytest.approx(_optimum(ws), rel=1e-9)
    k = len(ws.coords)
    solver.set_box(np.zeros(k), np.full(k, 0.05))
    _, boxed = solver.solve()
    assert solver.last["lp_engine"] == "simplex"
    assert "lp_ipm_stopped_after" in solver.last
    assert "lp_stopped" not in solver.last
    reference = HighsSolver(ws, 1.0, signed=False, time_limit=0.0, engine="simplex")
    reference.set_box(np.zeros(k), np.full(k, 0.05))
    assert boxed == pytest.approx(reference.solve()[1], rel=1e-9)
    assert boxed > first
    solver.set_box(np.zeros(k), np.full(k, np.inf))
    _, open_value = solver.solve()
    assert solver.last["lp_engine"] == "simplex"
    assert open_value == pytest.approx(first, rel=1e-9)
