"""``lp-simplex``: the large-margin LP with column generation solved by HiGHS dual simplex (Wang,
Shawe-Taylor & Szedmak, AISTATS 2009; docs/algorithms.md section 2).
"""

from __future__ import annotations

from tagger.learners.solvers.highs_solver import HighsSolver
from tagger.learners.solvers.working_set_learner import LP_PARAMS, TIME_LIMIT, WorkingSetLearner


class LPSimplex(WorkingSetLearner):
    """Large-margin LP with column generation, solved by HiGHS simplex (Wang, Shawe-Taylor &
    Szedmak, AISTATS 2009).

    Objective: min_{w >= 0} ||w||_1 + C sum_i [1 - min_{y != y_i} (F(x_i, y_i; w) - F(x_i, y; w))]_+
    as the LP min 1.w + C 1.xi s.t. H w >= 1 - M xi over generated rows (second-best Viterbi
    separation), re-solved by dual simplex warm-started from the last basis.
    """

    name = "lp-simplex"
    strength = ("C", -1)  # the regularization parameter, +1: larger is stronger
    params = LP_PARAMS + (TIME_LIMIT,)

    def lp_solver(self, ws, settings):
        return HighsSolver(ws, settings["C"], signed=False, time_limit=settings["time_limit"])
