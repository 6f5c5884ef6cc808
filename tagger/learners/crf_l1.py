"""``crf-l1``: the same likelihood with a Laplacian prior, as CRFsuite's ``lbfgs`` with ``c1``,
or the elastic net with ``c2`` > 0 as well (CRFsuite's ``lbfgs`` with both)::

    min_w  L(w) + c1 ||w||_1 + c2 ||w||_2^2

minimised by OWL-QN (Andrew & Gao, ICML 2007; :mod:`tagger.learners.solvers.owlqn`) over every
weight, the L2 term joining the smooth part (Zou & Hastie, JRSS B 2005, for the elastic net).
"""

from __future__ import annotations

import numpy as np

from tagger.learners.base import Stopwatch, TrainingProblem
from tagger.learners.params import ADAPTIVE_STEP, C1, C2, ON_A_CLUSTER
from tagger.learners.solvers.crf_base import QUASI_NEWTON, CRFLearner, with_l2
from tagger.learners.solvers.owlqn import OWLQN, Convergence


class CRFL1(CRFLearner):
    """L1-regularised CRF by OWL-QN over every weight (Andrew & Gao 2007), CRFsuite's
    ``lbfgs`` with ``c1``.

    Objective: min_w sum_i [log Z(x_i) - F(x_i, y_i; w)] + c1 ||w||_1 + c2 ||w||_2^2.
    """

    name = "crf-l1"
    label_pairs = True  # its objective (CRFObjective) takes pair templates and order 2
    strength = ("c1", 1)  # the regularization parameter, +1: larger is stronger
    #: a path ranks strengths after 100 iterations; the chosen point then runs to convergence
    path_settings = {"epochs": 100}
    #: the path then tries an L2 term at the chosen c1 (the elastic net), kept if it helps
    mix = "c2"
    params = (C1, C2) + QUASI_NEWTON + (ADAPTIVE_STEP,) + ON_A_CLUSTER

    def _fit(self, problem: TrainingProblem, settings: dict, seed: int, w0) -> np.ndarray:
        fun = self._objective_fn(problem, settings)
        w = np.zeros(fun.n_weights) if w0 is None else np.array(w0, dtype=np.float64)
        clock = Stopwatch()
        c2 = settings["c2"]
        opt = OWLQN(
            with_l2(fun, c2),
            w,
            settings["c1"],
            settings["memory"],
            adaptive_step=settings["adaptive_step"],
        )
        stop = Convergence(settings["delta"], settings["period"])
        for it in range(1, settings["epochs"] + 1):
            moved = opt.step()
            F = opt.objective
            self._row(problem, it, F, opt.f - c2 * float(opt.w @ opt.w), opt.w, fun.n_evals, clock)
            if not moved or stop.update(F):
                break
        return opt.w
