"""Column generation for the large-margin LP, stabilized by a trust region (boxstep) and started
from the smoothed objective's minimizer: the loop of ``lp-simplex`` and ``lp-extragradient``
when ``trust_region > 0`` (their default).

Column generation is Kelley's cutting-plane method on the whole objective

    P(w) = 1.w + C sum_i [1 - min_{y != y_i} w.Delta f_i(y)]_+ ,   w >= 0,

whose LP over the working sets is a piecewise-linear model m <= P. Unstabilized, each round's
LP solution jumps to a far vertex of the model where most sentences' unseen labelings win, so
the rounds add rows that say little about the optimum (docs/lp_paper.md measures it: 500
sentences, 50 rounds, 496 still violated). Here every LP is solved inside a box around a
center c (Marsten's boxstep; a trust region in a scaled max norm):

    w = argmin m(w)  s.t.  max(c - r (1 + c), 0) <= w <= c + r (1 + c)

(a weight far from 0 may move in proportion; with one radius for all, the rounds on 500
CoNLL-2000 sentences were 229 instead of 111).

The point w is then separated exactly (second-best Viterbi gives P(w)). A *serious* step
(P(w) <= P(c) - 0.1 (P(c) - m(w))) moves the center to w, and doubles r when the model
predicted at least half the actual decrease while the box bound; a *null* step keeps c, adds
the rows violated at w and halves r. The step asks only a sufficient decrease of the model:
with ``sufficient_decrease`` = s > 0 (``lp-extragradient``'s default 0.5), a first-order solver
ends the boxed LP once a feasible point w has P(c) - m(w) >= s (P(c) - d), d its dual bound (so
at least s times the decrease the box allows), and then w and m(w) take the minimizer's place
in the tests above (a trust region's inexact step; the box counts as binding for the radius).
The start is the minimizer of the smoothed objective
(:mod:`tagger.learners.solvers.lp_smoothing`), a point where the separation finds the
competitors that bind near the optimum, where w = 0 makes every labeling tie.

Stopping rule, the certificate of plain column generation in two forms: either the box does
not bind at w (so w solves the LP over the working sets) and no sentence has a labeling
violated by more than ``epsilon`` beyond its slack at w, and w is optimal for the LP over every
labeling; or the model cannot decrease inside the box by more than tol = max(1e-9 relative
rounding, C ``epsilon`` per sentence): the working sets hold every row violated at c by more
than epsilon, so m(c) >= P(c) - tol, and the model without the box is then solved as well; its
minimum within tol of P(c) certifies c to that precision (m <= P). Checking on the boxed model
alone is not enough: null steps halve the box until no decrease can exceed the tolerance,
optimum or not.

The model's minimum without the box (solved there, or read off a round whose box did not bind)
is a lower bound on min P however few rows the model has, so the highest one seen bounds how far
the center can be above the optimum. ``optimality_gap`` (default 1e-3) stops the loop once
that is within a fraction of P(c), and an unboxed check passes within it too (the check is
still opened only when the box predicts less than tol). On larger corpora the exact
certificate can take long to come: a center whose box predicts little decrease opens the
check, misses tol, and takes the unboxed model's far minimizer as a trial point that fails,
round after round (:data:`~tagger.learners.solvers.working_set_learner.OPTIMALITY_GAP` gives
the run). The check only asks whether the model's minimum without the box is within that
tolerance of P(c): a first-order solver (``lp-extragradient``) stops it as soon as a feasible
point is below it (then that point, not the far minimizer, is the round's trial point, and it
is not taken for a minimizer of the model) or its dual bound is above it. Each
progress row reports the center's whole objective (never above the start's: centers only move
on decrease), the model's value at w, the radius, the step taken and the relative gap to the
lower bound (``gap``, once there is one); the first also reports
the start (its objective, the smoothed objective's gradient evaluations and the seconds they
took). The smoothed start logs one line per temperature.

On a regularization path over C the points share their rows: a row Delta f_i(y) and its margin
do not depend on C, so every row a point generated is a valid cut of the next point's model,
which starts with them (the LP solver given the slacks' new weight; the simplex keeps its
basis) from the previous point's weights as its center, instead of rebuilding them round by
round (``carried_rows`` in the first progress row; ``bench/lp_path.py`` measures it).

The loop drives its learner through :class:`ColumnGenerationLearner`, the public part of
:class:`~tagger.learners.solvers.working_set_learner.WorkingSetLearner` it needs.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
from scipy.optimize import Bounds, minimize

from tagger.learners.base import Stopwatch, TrainingProblem, log
from tagger.learners.solvers.lp_smoothing import SmoothedLPObjective
from tagger.learners.solvers.working_sets import WorkingSets


class ColumnGenerationLearner(Protocol):
    """What :func:`stabilized_generation` asks of the learner it trains."""

    name: str
    #: the separation mode of :meth:`WorkingSets.separate` (``SECOND_BEST`` for the LP)
    mode: int

    def working_state(self, problem: TrainingProblem, settings: dict):
        """(working sets, solver of the LP over them, whether both were carried from the
        previous point of a path over C). The solver's ``solve()`` returns (w, LP objective),
        ``set_box(lower, upper)`` bounds the working set's columns, ``loose`` says it still
        solves at its loose tolerance, ``last`` holds its statistics."""

    def violations(self, value: np.ndarray) -> np.ndarray:
        """Per sentence, the right-hand side minus w . Delta f at the oracle's labeling,
        from the values :meth:`WorkingSets.separate` returns."""

    def slacks(self, ws: WorkingSets, w: np.ndarray, solver=None) -> np.ndarray:
        """Per sentence, the slack that the rows of its working set give ``w`` (with a
        ``solver`` that keeps only some rows in its LP, those rows')."""

    def report(self, problem: TrainingProblem, row: dict) -> None:
        """Record and log one progress row."""


def revive(solver, w: np.ndarray, xi: np.ndarray, eps: float) -> int:
    """Rows that left ``solver``'s LP and that ``w`` violates by more than ``eps`` beyond the
    slacks ``xi`` back into it (:meth:`HighsSolver.revive`; 0 for a solver that keeps every
    row). Returns how many came back."""
    back = getattr(solver, "revive", None)
    return back(w, xi, eps) if back is not None else 0


def set_deadline(solver, clock: Stopwatch, max_seconds: float) -> None:
    """Every later solve of ``solver`` ends by ``max_seconds`` after ``clock`` started (0: no
    limit), so that the round running at that moment stops there rather than at its end: on
    CoNLL-2000 POS at the paper's size one round of ``lp-simplex`` took 3,970 s and another's
    of ``lp-extragradient`` 1,712 s (CHANGELOG.md). A solver without a ``deadline`` runs its
    rounds whole."""
    if hasattr(solver, "deadline"):
        solver.deadline = clock.t0 + max_seconds if max_seconds > 0 else None


#: temperatures of the smoothed start, each stage warm-started from the last. A last stage at
#: 0.05 took 564 of the 939 s of the start on CoNLL-2000 at the paper's size: there the scaled
#: forward-backward declines many sentences (13 of 1,000 at 0.05, 929 at 0.025, none at 0.1,
#: at the start's weights), which the log-space tier then takes with an exp per lattice edge.
#: Without it the rounds converged as well and the whole training was shorter: on the first
#: 2,000 CoNLL-2000 POS sentences 415 s in all, where the rounds after the five-stage start
#: alone took 395 s (the start itself 180 to 270 s on this machine; CHANGELOG.md)
TEMPERATURES = (1.0, 0.5, 0.25, 0.1)
#: fraction of the predicted decrease a serious step must achieve
SERIOUS = 0.1


def smoothed_start(
    problem: TrainingProblem, C: float, iterations: int, report=None
) -> tuple[np.ndarray, int]:
    """The minimizer of the smoothed objective under w >= 0 (L-BFGS-B, ``iterations`` per
    temperature); ``report(row)`` is called after each temperature. Returns (w, gradient
    evaluations)."""
    model = problem.model
    objective = SmoothedLPObjective(model, problem.X, problem.y, C)
    w = np.zeros(model.n_weights)
    bounds = Bounds(np.zeros(model.n_weights), np.full(model.n_weights, np.inf))
    for tau in TEMPERATURES:
        objective.temperature = tau
        result = minimize(
            objective,
            w,
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            options={"maxiter": iterations, "ftol": 1e-10, "gtol": 1e-8},
        )
        w = np.maximum(result.x, 0.0)
        if report is not None:
            report(
                {
                    "temperature": tau,
                    "smoothed_objective": float(result.fun),
                    "lbfgs_iterations": int(result.nit),
                    "nonzero": int(np.count_nonzero(w)),
                }
            )
    return w, objective.n_evals


def lower_bound(solver, value: float) -> float:
    """A lower bound on the minimum of the model without the box, from the solve that gave
    ``value``: that value where the solve is exact and the box did not bind (the simplex),
    the dual bound of the last iterate on the LP without the box where the solver stops at a
    relative gap (a first-order method's ``lower_bound``), so that a certificate never rests
    on a primal value above the minimum."""
    return float(getattr(solver, "lower_bound", value))


def stabilized_generation(
    learner: ColumnGenerationLearner, problem: TrainingProblem, settings: dict, w0
) -> np.ndarray:
    """The trust-region column generation of the module docstring; returns the weights."""
    C, eps = settings["C"], settings["epsilon"]
    clock = Stopwatch()
    nonempty = np.diff(problem.X.offsets) > 0
    n_sentences = int(np.count_nonzero(nonempty))
    evals = 0
    if w0 is not None:
        center = np.maximum(np.asarray(w0, dtype=np.float64), 0.0)
    elif settings["smoothing"] > 0:

        def report(row):
            # the start's stages go to the log (the console shows them) but are not
            # progress rows: those are one per LP round, epoch 1, 2, ...
            log.info(
                "%s: start %s time=%.2f",
                learner.name,
                " ".join(f"{k}={v:.6g}" for k, v in row.items()),
                clock(),
            )

        center, evals = smoothed_start(problem, C, settings["smoothing"], report)
    else:
        center = np.zeros(problem.model.n_weights)
    ws, solver, carried = learner.working_state(problem, settings)
    set_deadline(solver, clock, settings["max_seconds"])
    ws.add_columns(np.flatnonzero(center))
    radius = settings["trust_region"]
    gap = settings.get("optimality_gap", 0.0)
    share = settings.get("sufficient_decrease", 0.0)
    # the highest minimum of the model without the box so far: a lower bound on min P
    bound = -np.inf

    def evaluate(w):
        viol = learner.violations(ws.separate(w, learner.mode).copy())
        viol[~nonempty] = 0.0
        return viol, float(w.sum() + C * np.maximum(viol, 0.0).sum())

    def add_rows(w, viol, xi):
        """Rows for the labelings violated at w beyond the slacks ``xi`` the working sets
        give w: the second-best labeling of each sentence (``ws.pred`` from the last
        separation, which must be at w) and, with ``local_rows``, every violated single-token
        change of the gold labeling."""
        # rows that left the LP (the solver's purge_after) and that w violates come back: the
        # separation's labeling of such a sentence is one of them, which ws.add would skip
        added = revive(solver, w, xi, eps)
        added += ws.add(np.flatnonzero(nonempty & (viol > xi + eps)))[0]
        if settings["local_rows"]:
            tokens, labels = ws.local_violations(w, 1.0 - xi - eps)
            added += ws.add_local(tokens, labels)[0]
        return added

    viol_c, f_c = evaluate(center)
    start = {
        "start_objective": f_c,
        "start_evaluations": evals,
        "start_time": round(clock(), 2),
        "carried_rows": ws.n_rows if carried else 0,
    }
    added = add_rows(center, viol_c, learner.slacks(ws, center, solver))
    for epoch in range(1, settings["epochs"] + 1):
        cc = center[ws.coords]
        # a weight far from 0 may move in proportion: the half-width is r (1 + c_k)
        half = radius * (1.0 + cc)
        solver.set_box(np.maximum(cc - half, 0.0), cc + half)
        tol = max(1e-9 * max(1.0, abs(f_c)), C * eps * n_sentences)
        if share > 0.0:
            # a step needs a sufficient decrease of the model, not its minimizer: a first-order
            # solver ends once a point decreases it by that share of the most its dual bound
            # allows, and by more than twice the tolerance (so that a round stopped early never
            # opens the check below). Solved to the gap instead, late boxed rounds ran to the
            # 200,000-iteration cap on GUM UPOS at the paper's size (CHANGELOG.md)
            w, model_value = solver.solve(decrease=(f_c, share, 2.0 * tol))
        else:
            w, model_value = solver.solve()
        cut_short = bool(solver.last.get("lp_stopped", False))
        viol_w, f_w = evaluate(w)
        wc = w[ws.coords]
        boxed = bool(
            np.any(wc >= cc + half - 1e-9) or np.any((cc - half > 0.0) & (wc <= cc - half + 1e-9))
        )
        xi_w = learner.slacks(ws, w, solver)
        violated = int(np.count_nonzero(nonempty & (viol_w > xi_w + eps)))
        predicted = f_c - model_value
        # the model has every row violated at c by more than epsilon, so m(c) >= P(c) - tol
        # (C epsilon per sentence, or rounding): when it cannot decrease by more than tol in
        # the box, c minimizes the (convex) model everywhere to within tol, hence P. A box
        # shrunk by null steps decreases little even where c is far from optimal, so the
        # claim is checked on the model without the box (its minimum within tol of P(c)
        # certifies c); otherwise that minimizer is this round's trial point
        if not boxed and not solver.loose:
            # the box did not bind: the model's minimum (a first-order solver's dual bound)
            bound = max(bound, lower_bound(solver, model_value))
        # optimality_gap: a lower bound already within it of P(c) certifies c
        c_optimal = not solver.loose and f_c - bound <= gap * abs(f_c)
        stopped = False
        if not c_optimal and predicted <= tol:
            k = len(ws.coords)
            solver.set_box(np.zeros(k), np.full(k, np.inf))
            # the check only asks on which side of P(c) minus the tolerance the open model's
            # minimum lies: a first-order solver may stop once a feasible point is below it
            # (the check fails; that point is the trial point, nearer the center than the
            # minimizer) or its dual bound above it (c is certified). Solved to its gap
            # tolerance instead, such a check ran to the 200,000-iteration cap on GUM UPOS and
            # CoNLL-2000 at the paper's size (CHANGELOG.md)
            within = f_c - max(tol, gap * abs(f_c))
            w_open, open_value = solver.solve(stop=(np.nextafter(within, -np.inf), within))
            stopped = bool(solver.last.get("lp_stopped", False))
            open_lower = lower_bound(solver, open_value)
            if not solver.loose:
                bound = max(bound, open_lower)
            c_optimal = f_c - open_lower <= max(tol, gap * abs(f_c))
            if not c_optimal:
                boxed, radius = False, settings["trust_region"]
                w, model_value = w_open, open_value
                viol_w, f_w = evaluate(w)
                xi_w = learner.slacks(ws, w, solver)
                violated = int(np.count_nonzero(nonempty & (viol_w > xi_w + eps)))
                predicted = f_c - model_value
        # w solves the model without the box, unless a stopped check left a mere trial point
        w_optimal = not boxed and violated == 0 and not stopped and not cut_short
        if (c_optimal or w_optimal) and solver.loose:
            step = "tighten"  # converged at the loose tolerance: solve tightly
            solver.loose = False
        elif c_optimal or w_optimal:
            step = "optimal"
            if w_optimal and f_w < f_c:
                center, f_c = w, f_w
        elif f_w <= f_c - SERIOUS * predicted:
            step = "serious"
            # a round cut short may end inside a box its minimizer binds
            if (boxed or cut_short) and f_c - f_w >= 0.5 * predicted:
                radius *= 2.0
            center, f_c = w, f_w
        else:
            step = "null"
            radius *= 0.5
        row = {
            "epoch": epoch,
            "objective": f_c,
            "lp_objective": model_value,
            "step": step,
            "radius": radius,
            "added": int(added),
            "rows": ws.n_rows,
            "columns": ws.n_cols,
            "violated": violated,
            "nonzero": int(np.count_nonzero(center)),
        }
        if np.isfinite(bound):  # how far the center may be above the optimum, relative
            row["gap"] = (f_c - bound) / max(abs(f_c), 1e-300)
        row.update(solver.last)
        if epoch == 1:
            row.update(start)
        row["converged"] = step == "optimal"
        if problem.dev_score is not None:
            row.update(problem.dev_score(center))
        row["time"] = round(clock(), 2)
        learner.report(problem, row)
        if step == "optimal":
            break
        if settings["max_seconds"] and clock() > settings["max_seconds"]:
            break
        # the rows violated at w (the new center after a serious step) cut it off
        added = add_rows(w, viol_w, xi_w)
    return center
