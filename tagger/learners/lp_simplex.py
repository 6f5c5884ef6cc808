"""``lp-simplex``: the large-margin LP with column generation solved by HiGHS dual simplex (Wang,
Shawe-Taylor & Szedmak, AISTATS 2009; docs/algorithms.md section 2).
"""

from __future__ import annotations

from tagger.learners.base import Param
from tagger.learners.solvers.highs_solver import ENGINES, HighsSolver
from tagger.learners.solvers.working_set_learner import (
    LP_PARAMS,
    PURGE_AFTER,
    TIME_LIMIT,
    WorkingSetLearner,
)

#: the engine of each round's LP (tagger.learners.solvers.highs_solver; why the simplex is the
#: default: LPSimplex's docstring)
ENGINE = Param(
    "engine",
    "auto",
    str,
    "HiGHS engine of each round's LP: 'auto' (the interior point method for the first LP and "
    "for LPs of more than 50,000 rows, the warm-started dual simplex for the rest), 'simplex' "
    "(dual simplex warm-started from the last basis), 'ipm' (interior point with crossover, "
    "from scratch each round) or 'pdlp' (first-order PDLP to its tolerance, from scratch; the "
    "rounds that certify the end are solved by the simplex)",
    choices=ENGINES,
)


class LPSimplex(WorkingSetLearner):
    """Large-margin LP with column generation, solved by HiGHS simplex (Wang, Shawe-Taylor &
    Szedmak, AISTATS 2009).

    Objective: min_{w >= 0} ||w||_1 + C sum_i [1 - min_{y != y_i} (F(x_i, y_i; w) - F(x_i, y; w))]_+
    as the LP min 1.w + C 1.xi s.t. H w >= 1 - M xi over generated rows (second-best Viterbi
    separation), re-solved by dual simplex warm-started from the last basis.

    ``engine`` chooses HiGHS's method for each round's LP
    (:mod:`tagger.learners.solvers.highs_solver`). The dual simplex restarts each round from the
    last optimal basis; the interior point method (with crossover) and PDLP start every round
    from scratch. The default, ``auto``, takes the interior point method where there is no
    basis yet or the LP is large (the early rounds on thousands of sentences, before rows that
    stopped binding have left) and the simplex for the rest: on 2,000 CoNLL-2000 sentences the
    first rounds took the interior point method 3.5 to 8.3 s against the simplex's 15.7 to
    52.7 s, while on 1,000 the two reached the same objective in the same time. On the first
    200 and 1,000 sentences of GUM UPOS (bench/lp_engines.py: hmm preset, C = 100, one
    thread, a shared 2-core machine), each engine alone: the simplex and the interior point
    method reached the same certified optimum with about the same LP time (200: 35 s over 76
    rounds against 32 s over 101; 1,000: 265 s over 85 rounds against 308 s over 100); PDLP
    took 16 times the simplex's LP time at 200 sentences and at 1,000 had done 21 rounds, 10 %
    above the optimum, when the 20-minute bound stopped it. PDLP's rounds are approximate
    (their rows say so in ``lp_status``, with the gap reached); the rounds that decide
    convergence are then solved by the simplex, so a converged model is certified on exact LP
    solutions with every engine. Training stops once the objective is within
    ``optimality_gap`` of the optimum (:mod:`tagger.learners.solvers.trust_region`).
    """

    name = "lp-simplex"
    strength = ("C", -1)  # the regularization parameter, +1: larger is stronger
    params = LP_PARAMS + (TIME_LIMIT, ENGINE, PURGE_AFTER)

    def lp_solver(self, ws, settings):
        return HighsSolver(
            ws,
            settings["C"],
            signed=False,
            time_limit=settings["time_limit"],
            engine=settings["engine"],
            purge_after=settings["purge_after"],
        )
