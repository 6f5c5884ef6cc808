"""``m3n-cutting-plane``: the L1-M3N by the cutting-plane method with an LP (Zhu, Xing & Zhang,
KDD 2009, Algorithm 1; docs/algorithms.md section 1b).
"""

from __future__ import annotations

from tagger.learners.base import Param
from tagger.learners.solvers.highs_solver import HighsSolver
from tagger.learners.solvers.working_set_learner import COMMON_PARAMS, TIME_LIMIT, WorkingSetLearner
from tagger.learners.solvers.working_sets import LOSS_AUGMENTED


class M3NCuttingPlane(WorkingSetLearner):
    """L1-M3N by the cutting-plane method with an LP (Zhu, Xing & Zhang, KDD 2009, Algorithm 1).

    Objective: min_w ||w||_1 + C sum_i max_y [Delta(y_i, y) + F(x_i, y; w) - F(x_i, y_i; w)]
    (P1), as the LP over working sets of loss-augmented Viterbi labelings, re-solved by HiGHS
    dual simplex with rows added in place (warm start). See the module docstring.
    """

    name = "m3n-cutting-plane"
    strength = ("C", -1)  # the regularization parameter, +1: larger is stronger
    mode = LOSS_AUGMENTED
    signed = True
    params = COMMON_PARAMS + (
        Param(
            "resolve_every",
            0,
            int,
            "re-solve the LP after this many added constraints "
            "(1 = the paper's Algorithm 1; 0 = once per pass over the sentences)",
            low=0,
        ),
        TIME_LIMIT,
    )

    def lp_solver(self, ws, settings):
        return HighsSolver(ws, settings["C"], signed=True, time_limit=settings["time_limit"])
