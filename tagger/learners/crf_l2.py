"""Conditional random fields trained in batch: L2 by L-BFGS, L1 by OWL-QN.

``crf-l2``: Lafferty, McCallum & Pereira (ICML 2001) with a Gaussian prior, as CRFsuite's
``lbfgs`` trainer with ``c2``::

    min_w  L(w) + c2 ||w||_2^2          L = sum_i log Z(x_i) - F(x_i, y_i; w)

minimised by L-BFGS (Liu & Nocedal 1989): by default the quasi-Newton core of our OWL-QN with
c1 = 0 (two-loop recursion, backtracking Armijo line search), or scipy's L-BFGS-B (Byrd, Lu,
Nocedal & Zhu 1995; no bounds, so plain L-BFGS) with ``solver="scipy"``. Both minimise the same
function; scipy's Fortran-derived routine costs O(n m) work of its own per call that measured
as much as a gradient evaluation on CoNLL-2000 (see docs/crf.md), hence the default.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy.optimize import minimize

from tagger.learners.base import Param, Stopwatch, TrainingProblem
from tagger.learners.params import C2, ON_A_CLUSTER
from tagger.learners.solvers.crf_base import QUASI_NEWTON, CRFLearner, with_l2
from tagger.learners.solvers.owlqn import OWLQN, Convergence, dot


class CRFL2(CRFLearner):
    """L2-regularised CRF by L-BFGS (scipy), CRFsuite's ``lbfgs`` with ``c2``.

    Objective: min_w sum_i [log Z(x_i) - F(x_i, y_i; w)] + c2 ||w||_2^2.
    """

    name = "crf-l2"
    label_pairs = True  # its objective (CRFObjective) takes pair templates and order 2
    strength = ("c2", 1)  # the regularization parameter, +1: larger is stronger
    # c2 is the only penalty here: it starts at CRFsuite's default of 1, and 0 (an
    # unregularized likelihood, unbounded on separable data) is outside its range
    params = (
        (replace(C2, default=1.0, low_open=True),)
        + QUASI_NEWTON
        + (
            Param(
                "solver",
                "lbfgs",
                str,
                "L-BFGS implementation: ours (the OWL-QN core with c1=0) or scipy's L-BFGS-B",
                choices=("lbfgs", "scipy"),
            ),
        )
        + ON_A_CLUSTER
    )

    def _fit(self, problem: TrainingProblem, settings: dict, seed: int, w0) -> np.ndarray:
        fun = self._objective_fn(problem, settings)
        c2 = settings["c2"]
        w = np.zeros(fun.n_weights) if w0 is None else np.array(w0, dtype=np.float64)
        clock = Stopwatch()
        stop = Convergence(settings["delta"], settings["period"])

        value_grad = with_l2(fun, c2)
        if settings["solver"] == "lbfgs":
            opt = OWLQN(value_grad, w, 0.0, settings["memory"])
            for it in range(1, settings["epochs"] + 1):
                moved = opt.step()
                self._row(
                    problem, it, opt.f, opt.f - c2 * dot(opt.w, opt.w), opt.w, fun.n_evals, clock
                )
                if not moved or stop.update(opt.f):
                    break
            return opt.w

        it = [0]

        def callback(intermediate_result):
            it[0] += 1
            x = intermediate_result.x
            F = float(intermediate_result.fun)
            self._row(problem, it[0], F, F - c2 * float(x @ x), x, fun.n_evals, clock)
            if stop.update(F):
                raise StopIteration

        res = minimize(
            value_grad,
            w,
            jac=True,
            method="L-BFGS-B",
            callback=callback,
            options={
                "maxiter": settings["epochs"],
                "maxcor": settings["memory"],
                "maxfun": 100 * settings["epochs"],
                "ftol": 0.0,
                "gtol": 0.0,
            },
        )
        w = np.ascontiguousarray(res.x, dtype=np.float64)
        if it[0] == 0:  # stopped before a single iteration (already optimal)
            F, _ = value_grad(w)
            self._row(problem, 1, F, F - c2 * float(w @ w), w, fun.n_evals, clock)
        return w
