"""``crf-grafting-greedy``: greedy Grafting (Perkins, Lacker & Theiler, *Grafting: Fast,
Incremental Feature Selection by Gradient Descent in Function Space*, JMLR 2003), the baseline
Grafting-Light (:mod:`tagger.learners.crf_grafting`) is compared with.
"""

from __future__ import annotations

import numpy as np

from tagger.learners.base import TrainingProblem
from tagger.learners.crf_grafting import GRAFTING_PARAMS, GraftingWorkingSet
from tagger.learners.solvers.crf_base import CRFLearner


class CRFGraftingGreedy(CRFLearner):
    """L1 CRF by greedy Grafting (Perkins, Lacker & Theiler, JMLR 2003): optimise fully on the
    working set before each addition of the top-M violating features.

    Objective: min_w sum_i [log Z(x_i) - F(x_i, y_i; w)] + c1 ||w||_1 + c2 ||w||_2^2.
    """

    name = "crf-grafting-greedy"
    strength = ("c1", 1)  # the regularization parameter, +1: larger is stronger
    params = GRAFTING_PARAMS

    def _fit(self, problem: TrainingProblem, settings: dict, seed: int, w0) -> np.ndarray:
        ws = GraftingWorkingSet(self, problem, settings, w0)
        for it in range(1, settings["epochs"] + 1):
            moved = ws.opt.step()
            added = 0
            if ws.stop.update(ws.opt.objective) or not moved:
                # S is optimised: graft the strongest violators, or finish
                added = ws.grow()
                ws.stop.history.clear()
                if not added:
                    ws.row(self, problem, it, 0)
                    break
            ws.row(self, problem, it, added)
        return ws.fun.expand(ws.opt.w)
