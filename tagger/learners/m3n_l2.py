"""``m3n-l2``: the L2 M3N (structural SVM with Hamming loss) solved in the dual by the
Sequential Dual Method of :mod:`tagger.learners.solvers.sdm_solver`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from tagger.learners.base import Learner, Stopwatch, TrainingProblem
from tagger.learners.params import (
    EPOCHS,
    HINGE_C,
    MAX_INNER,
    MAX_WORKING_SET,
    SDM_BLOCK_SIZE,
    SDM_BLOCKS,
    SDM_TOL,
)
from tagger.learners.solvers.sdm_solver import SDMSolver, warm_state


class M3NL2(Learner):
    """L2 M3N (structural SVM) trained in the dual by the Sequential Dual Method
    (Balamurugan et al. 2011; Taskar et al. 2003 for the M3N).

    Objective: min_w (1/2)||w||^2 + C sum_i R_i(w), R_i the structured hinge with Hamming
    loss (not averaged over sentences: C weighs each sentence's hinge). Dual coordinate ascent
    one sentence at a time over a working set of competitor labelings found by loss-augmented
    Viterbi; stops when the relative duality gap is at most ``tol`` or after ``epochs`` passes.
    Label-pair templates and second-order chains train the same way (the Viterbi runs over
    their lattice).
    The Python solver with warm starts, per-feature scaling and per-example weights is
    :class:`SDMSolver`.
    """

    name = "m3n-l2"
    label_pairs = True  # its solver (SDMSolver) takes pair templates and order 2
    strength = ("C", -1)  # the regularization parameter, +1: larger is stronger
    params = (
        HINGE_C,
        replace(EPOCHS, default=30),  # a bound: the duality gap (tol) stops it
        SDM_TOL,
        MAX_WORKING_SET,
        MAX_INNER,
        SDM_BLOCKS,
        SDM_BLOCK_SIZE,
    )

    def _fit(self, problem: TrainingProblem, settings: dict, seed: int, w0) -> np.ndarray:
        state = warm_state(self, problem)
        if state is not None:  # a regularization path: continue from the last duals
            solver = state
            solver.set_example_weights(settings["C"])
        else:
            solver = SDMSolver(
                problem.model,
                problem.X,
                problem.y,
                C=settings["C"],
                max_working_set=settings["max_working_set"],
                max_inner=settings["max_inner"],
                seed=seed,
                blocks=settings["blocks"],
                block_size=settings["block_size"],
            )
        self.state_ = (problem, solver)
        clock = Stopwatch()

        def report(epoch, primal, dual, gap):
            w = solver.w
            row = {
                "epoch": epoch,
                "objective": primal,
                "dual": dual,
                "gap": gap,
                "nonzero": int(np.count_nonzero(w)),
                "working_set": int(solver.ws_n.sum()),
            }
            if problem.dev_score is not None:
                row.update(problem.dev_score(w))
            row["time"] = round(clock(), 2)
            self.report(problem, row)

        solver.solve(settings["epochs"], settings["tol"], callback=report)
        return solver.weights()
