"""L1 CRFs that select their own features: Grafting-Light and greedy Grafting.

Both solve the L1-regularised CRF of ``crf-l1`` (the elastic net with ``c2`` > 0)::

    min_w  L(w) + c1 ||w||_1 + c2 ||w||_2^2          L = sum_i log Z(x_i) - F(x_i, y_i; w)

over a working set S of active weights that grows from the transition, start and end weights;
every other weight stays 0 until it joins S. A weight k outside S violates the optimality
conditions when ``|dL/dw_k| > c1`` (at w_k = 0 the subdifferential of the objective must
contain 0); G is the set of such weights.

``crf-grafting``: Grafting-Light, Zhu, Lao & Xing, *Grafting-Light: Fast, Incremental Feature
Selection and Structure Learning of Markov Random Fields* (KDD 2010); docs/algorithms.md
section 3. Each iteration takes ONE orthant-wise quasi-Newton step on S (OWL-QN restricted to S,
its L-BFGS
memory kept across iterations), then adds to S the top ``select_unit`` members of G by
``|dL/dw_k| - c1``. The step works on S alone: token scores from S's weights, the gradient
over S, L-BFGS vectors of length |S|, one forward-backward pass per line-search trial (a
*working-set pass*); the gradient over all weights, which growth needs, is then scattered once
from the accepted trial's marginals (a *full-gradient pass*, no second inference). It stops
when G is empty and the step on S has converged (CRFsuite's relative-decrease rule, or no
descent direction left on S).

``crf-grafting-greedy``: Grafting, Perkins, Lacker & Theiler, *Grafting: Fast, Incremental
Feature Selection by Gradient Descent in Function Space* (JMLR 2003): optimise the objective
on S to convergence, then add the top ``select_unit`` members of G (Perkins et al. add one at a
time; ``select_unit=1``), and repeat until G is empty. The baseline Grafting-Light is compared
with.

Progress rows, one per quasi-Newton iteration: objective, working-set size, non-zeros, the
number of working-set passes (``grad_evals``: forward-backward passes over the data, each
giving the objective and its gradient on S) and of full-gradient passes (``full_grads``)
so far.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from tagger.learners.base import Param, Stopwatch, TrainingProblem
from tagger.learners.params import ADAPTIVE_STEP, C1, C2
from tagger.learners.solvers.crf_base import QUASI_NEWTON, CRFLearner, with_l2
from tagger.learners.solvers.crf_objective import WorkingSetObjective
from tagger.learners.solvers.owlqn import OWLQN, Convergence


def violators(g: np.ndarray, active: np.ndarray, c1: float, free: np.ndarray) -> np.ndarray:
    """Indices of weights outside S with |g_k| > c1, most violating first."""
    excess = np.abs(g) - c1
    cand = np.flatnonzero((excess > 0.0) & ~active & free)
    if len(cand) == 0:
        return cand
    return cand[np.argsort(-excess[cand], kind="stable")]


def initial_set(problem: TrainingProblem, free: np.ndarray) -> np.ndarray:
    active = np.zeros(problem.model.n_weights, dtype=bool)
    problem.model.edge_weights(active)[:] = True  # transitions, start, end
    return active & free


GRAFTING_PARAMS = (
    (
        C1,
        C2,
        Param(
            "select_unit",
            1000,
            int,
            "M: weights added to the working set per growth step "
            "(the top M violators of the optimality conditions)",
            low=1,
        ),
    )
    + QUASI_NEWTON
    + (
        # on here, off for crf-l1: the adaptive first step measured faster on the working-set
        # problems of Grafting and worse on crf-l1's full problem
        replace(ADAPTIVE_STEP, default=True),
    )
)


class GraftingWorkingSet:
    """What both grafting loops share: the working-set objective, OWL-QN on the compact vector
    of S, the set itself and its growth.

    Each quasi-Newton step evaluates only S (scores from S's weights, gradient over S,
    O(|S|) vector work; one forward-backward pass per line-search trial); the gradient over
    every weight, which growth needs, is scattered from the marginals of the accepted trial,
    once per growth check (:meth:`WorkingSetObjective.full_gradient`)."""

    def __init__(self, learner, problem: TrainingProblem, settings: dict, w0):
        fixed = () if settings.get("start_end", True) else ("ends",)
        model = problem.model
        self.fun = WorkingSetObjective(model, problem.X, problem.y, fixed=fixed)
        w = np.zeros(model.n_weights) if w0 is None else np.array(w0, dtype=np.float64)
        self.c1, self.M = settings["c1"], settings["select_unit"]
        self.active = initial_set(problem, self.fun.free) | (w != 0)
        model.edge_weights(self.active)[:] = True  # the compact layout keeps the whole tail
        index = self.fun.set_active(self.active)
        self.c2 = settings["c2"]
        # the L2 term of an elastic net is smooth: it joins the likelihood on S; outside S
        # every weight is 0, so it changes no growth test
        self.opt = OWLQN(
            with_l2(self.fun, self.c2),
            w[index],
            self.c1,
            settings["memory"],
            adaptive_step=settings["adaptive_step"],
        )
        self.stop = Convergence(settings["delta"], settings["period"])
        self.clock = Stopwatch()

    def grow(self) -> int:
        """Add the top M violators of the optimality conditions to S; returns how many."""
        fun, opt = self.fun, self.opt
        g = fun.full_gradient(opt.w, opt.g)
        grow = violators(g, self.active, self.c1, fun.free)[: self.M]
        if len(grow):
            old = fun.index
            self.active[grow] = True
            new = fun.set_active(self.active)
            opt.relayout(len(new), np.searchsorted(new, old), g[new])
            # a grown set is a new problem for the stopping rule and for the line search's
            # first step (new coordinates often need a different step than the last one)
            self.stop.history.clear()
            opt.first_step = 1.0
        return len(grow)

    def row(self, learner, problem, it, added):
        fun, opt = self.fun, self.opt
        nll = opt.f - self.c2 * float(opt.w @ opt.w)
        learner._row(
            problem,
            it,
            opt.objective,
            nll,
            fun.expand(opt.w),
            fun.n_evals,
            self.clock,
            working_set=int(fun.n_weights - (~fun.free).sum()),
            added=int(added),
            full_grads=fun.n_full,
        )


class CRFGrafting(CRFLearner):
    """L1 CRF by Grafting-Light (Zhu, Lao & Xing, KDD 2010): one orthant-wise step on the
    working set per iteration, then growth by the top-M violating features.

    Objective: min_w sum_i [log Z(x_i) - F(x_i, y_i; w)] + c1 ||w||_1 + c2 ||w||_2^2.
    """

    name = "crf-grafting"
    strength = ("c1", 1)  # the regularization parameter, +1: larger is stronger
    params = GRAFTING_PARAMS

    def _fit(self, problem: TrainingProblem, settings: dict, seed: int, w0) -> np.ndarray:
        ws = GraftingWorkingSet(self, problem, settings, w0)
        for it in range(1, settings["epochs"] + 1):
            moved = ws.opt.step()
            converged = ws.stop.update(ws.opt.objective) or not moved
            added = ws.grow()
            ws.row(self, problem, it, added)
            if converged and not added:
                break
        return ws.fun.expand(ws.opt.w)
