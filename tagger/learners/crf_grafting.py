"""L1 CRFs that select their own features: Grafting-Light and greedy Grafting.

Both solve the L1-regularised CRF of ``crf-l1``::

    min_w  L(w) + c1 ||w||_1          L = sum_i log Z(x_i) - F(x_i, y_i; w)

over a working set S of active weights that grows from the transition, start and end weights;
every other weight stays 0 until it joins S. A weight k outside S violates the optimality
conditions when ``|dL/dw_k| > c1`` (at w_k = 0 the subdifferential of the objective must
contain 0); G is the set of such weights.

``crf-grafting``: Grafting-Light, Zhu, Lao & Xing, *Grafting-Light: Fast, Incremental Feature
Selection and Structure Learning of Markov Random Fields* (KDD 2010); ALGORITHMS.md 3. Each
iteration takes ONE orthant-wise quasi-Newton step on S (OWL-QN restricted to S, its L-BFGS
memory kept across iterations), then adds to S the top ``select_unit`` members of G by
``|dL/dw_k| - c1``. The gradient over all weights comes from the same forward-backward pass
that the step's line search evaluated, so growing S costs no extra inference. It stops when G
is empty and the step on S has converged (CRFsuite's relative-decrease rule, or no descent
direction left on S).

``crf-grafting-greedy``: Grafting, Perkins, Lacker & Theiler, *Grafting: Fast, Incremental
Feature Selection by Gradient Descent in Function Space* (JMLR 2003): optimise the objective
on S to convergence, then add the top ``select_unit`` members of G (Perkins et al. add one at a
time; ``select_unit=1``), and repeat until G is empty. The baseline Grafting-Light is compared
with.

Progress rows, one per quasi-Newton iteration: objective, working-set size, non-zeros and the
number of gradient evaluations so far (the cost measure of the paper).
"""

from __future__ import annotations

import numpy as np

from tagger.learners.base import Param, Stopwatch, TrainingProblem
from tagger.learners.crf_lbfgs import CRFLearner
from tagger.learners.owlqn import OWLQN, Convergence


def _violators(g: np.ndarray, active: np.ndarray, c1: float, free: np.ndarray) -> np.ndarray:
    """Indices of weights outside S with |g_k| > c1, most violating first."""
    excess = np.abs(g) - c1
    cand = np.flatnonzero((excess > 0.0) & ~active & free)
    if len(cand) == 0:
        return cand
    return cand[np.argsort(-excess[cand], kind="stable")]


def _initial_set(problem: TrainingProblem, free: np.ndarray) -> np.ndarray:
    active = np.zeros(problem.model.n_weights, dtype=bool)
    active[problem.model.n_state:] = True   # transitions, start, end
    return active & free


_SHARED = (
    Param("c1", 1.0, float, "L1 coefficient c1 (CRFsuite's c1: c1 ||w||_1 on the summed "
          "likelihood)", low=0.0, low_open=True),
    Param("select_unit", 1000, int, "M: weights added to the working set per growth step "
          "(the top M violators of the optimality conditions)", low=1),
    Param("epochs", 1000, int, "maximum number of quasi-Newton iterations", low=1),
    Param("memory", 6, int, "number of (step, gradient change) pairs kept by L-BFGS", low=1),
    Param("delta", 1e-5, float, "convergence on the working set: relative decrease of the "
          "objective over the last 'period' iterations below this", low=0.0),
    Param("period", 10, int, "iterations over which 'delta' is measured", low=1),
    Param("start_end", True, bool, "learn start and end weights (false holds them at 0)"),
)


def _start(learner, problem: TrainingProblem, settings: dict, w0):
    """What both grafting loops begin with: the objective, an OWL-QN optimiser at w0 (or 0),
    the working set (the initial set plus the weights already non-zero), the stopping rule and
    a clock."""
    fun = learner._objective_fn(problem, settings)
    w = np.zeros(fun.n_weights) if w0 is None else np.array(w0, dtype=np.float64)
    active = _initial_set(problem, fun.free) | (w != 0)
    opt = OWLQN(fun, w, settings["c1"], settings["memory"])
    stop = Convergence(settings["delta"], settings["period"])
    return fun, opt, active, stop, Stopwatch()


class GraftingLight(CRFLearner):
    """L1 CRF by Grafting-Light (Zhu, Lao & Xing, KDD 2010): one orthant-wise step on the
    working set per iteration, then growth by the top-M violating features.

    Objective: min_w sum_i [log Z(x_i) - F(x_i, y_i; w)] + c1 ||w||_1.
    """

    name = "crf-grafting"
    params = _SHARED

    def _fit(self, problem: TrainingProblem, settings: dict, seed: int, w0) -> np.ndarray:
        fun, opt, active, stop, clock = _start(self, problem, settings, w0)
        c1, M = settings["c1"], settings["select_unit"]
        for it in range(1, settings["epochs"] + 1):
            moved = opt.step(active)
            F = opt.objective
            converged = stop.update(F) or not moved
            grow = _violators(opt.g, active, c1, fun.free)[:M]
            active[grow] = True
            if len(grow):
                # a grown set is a new problem for the stopping rule
                stop.history.clear()
            self._row(problem, it, F, opt.f, opt.w, fun.n_evals, clock,
                      working_set=int(active.sum()), added=int(len(grow)))
            if converged and not len(grow):
                break
        return opt.w


class GreedyGrafting(CRFLearner):
    """L1 CRF by greedy Grafting (Perkins, Lacker & Theiler, JMLR 2003): optimise fully on the
    working set before each addition of the top-M violating features.

    Objective: min_w sum_i [log Z(x_i) - F(x_i, y_i; w)] + c1 ||w||_1.
    """

    name = "crf-grafting-greedy"
    params = _SHARED

    def _fit(self, problem: TrainingProblem, settings: dict, seed: int, w0) -> np.ndarray:
        fun, opt, active, stop, clock = _start(self, problem, settings, w0)
        c1, M = settings["c1"], settings["select_unit"]
        for it in range(1, settings["epochs"] + 1):
            moved = opt.step(active)
            F = opt.objective
            added = 0
            if stop.update(F) or not moved:
                # S is optimised: graft the strongest violators, or finish
                grow = _violators(opt.g, active, c1, fun.free)[:M]
                active[grow] = True
                added = len(grow)
                stop.history.clear()
                if not added:
                    self._row(problem, it, F, opt.f, opt.w, fun.n_evals, clock,
                              working_set=int(active.sum()), added=0)
                    break
            self._row(problem, it, F, opt.f, opt.w, fun.n_evals, clock,
                      working_set=int(active.sum()), added=int(added))
        return opt.w
