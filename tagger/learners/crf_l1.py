"""``crf-l1``: the same likelihood with a Laplacian prior, as CRFsuite's ``lbfgs`` with ``c1``::

    min_w  L(w) + c1 ||w||_1

minimised by OWL-QN (Andrew & Gao, ICML 2007; :mod:`tagger.learners.owlqn`) over every weight.
"""

from __future__ import annotations

import numpy as np

from tagger.learners.base import Param, Stopwatch, TrainingProblem
from tagger.learners.crf_base import CRFLearner, quasi_newton_params
from tagger.learners.owlqn import OWLQN, Convergence


class CRFL1(CRFLearner):
    """L1-regularised CRF by OWL-QN over every weight (Andrew & Gao 2007), CRFsuite's
    ``lbfgs`` with ``c1``.

    Objective: min_w sum_i [log Z(x_i) - F(x_i, y_i; w)] + c1 ||w||_1.
    """

    name = "crf-l1"
    params = (Param("c1", 1.0, float, "L1 coefficient c1 (CRFsuite's c1: c1 ||w||_1 on the "
                    "summed likelihood)", low=0.0, low_open=True),) + quasi_newton_params(1000) + (
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
