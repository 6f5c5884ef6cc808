"""Conditional random fields trained in batch: L2 by L-BFGS, L1 by OWL-QN.

``crf-l2``: Lafferty, McCallum & Pereira (ICML 2001) with a Gaussian prior, as CRFsuite's
``lbfgs`` trainer with ``c2``::

    min_w  L(w) + c2 ||w||_2^2          L = sum_i log Z(x_i) - F(x_i, y_i; w)

minimised by L-BFGS (Liu & Nocedal 1989): by default the quasi-Newton core of our OWL-QN with
c1 = 0 (two-loop recursion, backtracking Armijo line search), or scipy's L-BFGS-B (Byrd, Lu,
Nocedal & Zhu 1995; no bounds, so plain L-BFGS) with ``solver="scipy"``. Both minimise the same
function; scipy's Fortran-derived routine costs O(n m) work of its own per call that measured
as much as a gradient evaluation on CoNLL-2000 (see the README), hence the default.

``crf-l1``: the same likelihood with a Laplacian prior, as CRFsuite's ``lbfgs`` with ``c1``::

    min_w  L(w) + c1 ||w||_1

minimised by OWL-QN (Andrew & Gao, ICML 2007; :mod:`tagger.learners.owlqn`) over every weight.

Both sum the likelihood over sentences (no 1/N), exactly CRFsuite's scaling, so equal c1/c2
give equal objectives. Both stop as CRFsuite does: when the objective decreased by less than a
relative ``delta`` over the last ``period`` iterations, or after ``epochs`` iterations. One
progress row per iteration: objective, likelihood term, non-zeros, gradient evaluations.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from tagger.learners.base import Learner, Param, Stopwatch, TrainingProblem
from tagger.learners.crf_objective import CRFObjective
from tagger.learners.owlqn import OWLQN, Convergence, dot


def _common_params(epochs: int) -> tuple[Param, ...]:
    return (
        Param("epochs", epochs, int, "maximum number of quasi-Newton iterations", low=1),
        Param("memory", 6, int, "number of (step, gradient change) pairs kept by L-BFGS",
              low=1),
        Param("delta", 1e-5, float, "stop when the objective fell by less than this relative "
              "amount over the last 'period' iterations (CRFsuite's rule)", low=0.0),
        Param("period", 10, int, "iterations over which 'delta' is measured", low=1),
        Param("start_end", True, bool, "learn start and end weights (false holds them at 0: "
              "CRFsuite's model, which has none)"),
    )


class CRFLearner(Learner):
    """What the CRF learners share: the objective, progress rows, the model is probabilistic."""

    #: the model's scores define p(y | x): marginals are probabilities
    probabilistic = True

    def _objective_fn(self, problem: TrainingProblem, settings: dict) -> CRFObjective:
        fixed = () if settings.get("start_end", True) else ("ends",)
        return CRFObjective(problem.model, problem.X, problem.y, fixed=fixed)

    def _row(self, problem, iteration, objective, nll, w, evals, clock, **extra) -> None:
        row = {"epoch": iteration, "objective": float(objective), "nll": float(nll),
               "nonzero": int(np.count_nonzero(w)), "grad_evals": int(evals)}
        # every evaluation of crf-l1 / crf-l2 is a gradient over all weights
        row.setdefault("full_grads", int(evals))
        row.update(extra)
        if problem.dev_score is not None:
            row.update(problem.dev_score(w))
        row["time"] = round(clock(), 2)
        self._report(problem, row)


class CRFL2(CRFLearner):
    """L2-regularised CRF by L-BFGS (scipy), CRFsuite's ``lbfgs`` with ``c2``.

    Objective: min_w sum_i [log Z(x_i) - F(x_i, y_i; w)] + c2 ||w||_2^2.
    """

    name = "crf-l2"
    params = (Param("c2", 1.0, float, "L2 coefficient c2 (CRFsuite's c2: c2 ||w||^2 on the "
                    "summed likelihood)", low=0.0, low_open=True),) + _common_params(1000) + (
        Param("solver", "lbfgs", str, "L-BFGS implementation: ours (the OWL-QN core with "
              "c1=0) or scipy's L-BFGS-B", choices=("lbfgs", "scipy")),)

    def _fit(self, problem: TrainingProblem, settings: dict, seed: int, w0) -> np.ndarray:
        fun = self._objective_fn(problem, settings)
        c2 = settings["c2"]
        w = np.zeros(fun.n_weights) if w0 is None else np.array(w0, dtype=np.float64)
        clock = Stopwatch()
        stop = Convergence(settings["delta"], settings["period"])

        def value_grad(x):
            nll, g = fun(x)
            g += 2.0 * c2 * x
            return nll + c2 * dot(x, x), g

        if settings["solver"] == "lbfgs":
            opt = OWLQN(value_grad, w, 0.0, settings["memory"])
            for it in range(1, settings["epochs"] + 1):
                moved = opt.step()
                self._row(problem, it, opt.f, opt.f - c2 * dot(opt.w, opt.w), opt.w,
                          fun.n_evals, clock)
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

        res = minimize(value_grad, w, jac=True, method="L-BFGS-B", callback=callback,
                       options={"maxiter": settings["epochs"], "maxcor": settings["memory"],
                                "maxfun": 100 * settings["epochs"], "ftol": 0.0,
                                "gtol": 0.0})
        w = np.ascontiguousarray(res.x, dtype=np.float64)
        if it[0] == 0:  # stopped before a single iteration (already optimal)
            F, _ = value_grad(w)
            self._row(problem, 1, F, F - c2 * float(w @ w), w, fun.n_evals, clock)
        return w


class CRFL1(CRFLearner):
    """L1-regularised CRF by OWL-QN over every weight (Andrew & Gao 2007), CRFsuite's
    ``lbfgs`` with ``c1``.

    Objective: min_w sum_i [log Z(x_i) - F(x_i, y_i; w)] + c1 ||w||_1.
    """

    name = "crf-l1"
    params = (Param("c1", 1.0, float, "L1 coefficient c1 (CRFsuite's c1: c1 ||w||_1 on the "
                    "summed likelihood)", low=0.0, low_open=True),) + _common_params(1000) + (
        Param("adaptive_step", False, bool, "start each line search at the last accepted "
              "step (doubled back towards 1 after 5 first-trial acceptances) instead of at 1"),)

    def _fit(self, problem: TrainingProblem, settings: dict, seed: int, w0) -> np.ndarray:
        fun = self._objective_fn(problem, settings)
        w = np.zeros(fun.n_weights) if w0 is None else np.array(w0, dtype=np.float64)
        clock = Stopwatch()
        opt = OWLQN(fun, w, settings["c1"], settings["memory"],
                    adaptive_step=settings["adaptive_step"])
        stop = Convergence(settings["delta"], settings["period"])
        for it in range(1, settings["epochs"] + 1):
            moved = opt.step()
            F = opt.objective
            self._row(problem, it, F, opt.f, opt.w, fun.n_evals, clock)
            if not moved or stop.update(F):
                break
        return opt.w
