"""``lp-extragradient``: the large-margin LP with column generation solved by the extragradient
method (Wang, Shawe-Taylor & Szedmak, AISTATS 2009; docs/algorithms.md section 2).
"""

from __future__ import annotations

from dataclasses import replace

from tagger.learners.base import Param
from tagger.learners.solvers.extragradient import ExtragradientSolver
from tagger.learners.solvers.working_set_learner import (
    LP_PARAMS,
    PURGE_AFTER,
    PURGE_DEFAULT,
    WorkingSetLearner,
)


class LPExtragradient(WorkingSetLearner):
    """Large-margin LP with column generation, solved by the extragradient method (Wang,
    Shawe-Taylor & Szedmak, AISTATS 2009).

    Objective: min_{w >= 0} ||w||_1 + C sum_i [1 - min_{y != y_i} (F(x_i, y_i; w) - F(x_i, y; w))]_+
    as the LP min 1.w + C 1.xi s.t. H w >= 1 - M xi over generated rows; each round's LP is
    solved by a first-order primal-dual method on its saddle point, warm-started (weights,
    duals, step and primal weight carried from the last round), until the certified duality
    gap is below ``gap_tol``, or below a tenth of ``optimality_gap`` where that is looser
    (tagger/learners/solvers/extragradient.py). The lower bounds that stop the loop within
    ``optimality_gap`` are the rounds' dual bounds on the LP without the trust region's box,
    valid however early a round stops.

    The method is our own, not HiGHS's PDLP (measured slower than the simplex as
    ``lp-simplex``'s engine): by default PDLP's primal-dual hybrid gradient (``method=pdhg``:
    Ruiz and Pock-Chambolle scaling, adaptive steps, primal weight re-balanced at restarts,
    restarts on the KKT error), which needs half the matrix products per iteration of the
    paper's extragradient and fewer iterations; ``method=extragradient`` is the paper's
    method (with restarts and diagonal steps unless turned off). With PDHG, a dual point that
    is good enough in objective but a little infeasible is made feasible by PDLP's dual
    feasibility polishing before it is bounded (``polish_iter``;
    tagger/learners/solvers/dual_polish.py).
    """

    name = "lp-extragradient"
    strength = ("C", -1)  # the regularization parameter, +1: larger is stronger
    params = LP_PARAMS + (
        Param(
            "gap_tol",
            1e-6,
            float,
            "relative duality gap (feasible primal and dual bounds) at which an LP round "
            "stops; a tenth of optimality_gap where that is looser",
            low=0.0,
            low_open=True,
        ),
        Param(
            "early_gap_tol",
            1e-3,
            float,
            "relative duality gap of the rounds before the "
            "separation finds nothing new (then one more round at gap_tol decides)",
            low=0.0,
            low_open=True,
        ),
        Param(
            "max_iter", 200000, int, "at most this many extragradient iterations per round", low=1
        ),
        Param(
            "method",
            "pdhg",
            str,
            "pdhg: PDLP's primal-dual hybrid gradient with adaptive steps; extragradient: "
            "Korpelevich's method as in the paper (module docstring)",
            choices=("pdhg", "extragradient"),
        ),
        Param(
            "ruiz",
            10,
            int,
            "rounds of Ruiz equilibration before the Pock-Chambolle scaling (pdhg)",
            low=0,
        ),
        Param("check_every", 50, int, "iterations between duality-gap checks", low=1),
        Param(
            "polish_iter",
            1000,
            int,
            "pdhg: at most this many iterations of dual feasibility polishing when a dual "
            "point as good as PDHG's but feasible would end the round (0: none)",
            low=0,
        ),
        Param(
            "sufficient_decrease",
            0.5,
            float,
            "a round inside the trust region's box ends once a point decreases the model by "
            "this share of the most its dual bound allows (0: solved to its gap tolerance)",
            low=0.0,
            high=1.0,
        ),
        replace(PURGE_AFTER, default=PURGE_DEFAULT),
        Param(
            "precondition",
            True,
            bool,
            "diagonal step sizes from the row and column sums "
            "of |[H M]| (Pock & Chambolle); off = one scalar step as in the paper",
        ),
        Param(
            "restart",
            True,
            bool,
            "restart from the averaged iterate when its duality gap "
            "has shrunk five-fold (adaptive restarts); off = plain extragradient",
        ),
        Param(
            "step_scale",
            0.9,
            float,
            "step a = step_scale / ||[H M]||_2 (must stay below 1)",
            low=0.0,
            high=0.999,
            low_open=True,
        ),
    )

    def lp_solver(self, ws, settings):
        return ExtragradientSolver(ws, settings["C"], settings)
