"""``m3n-owlqn``: the L1 (or elastic-net) max-margin Markov network solved to a certified
optimum, with exact zeros.

Objective: the penalized form of the L1-M3N (Zhu, Xing & Zhang, *Primal sparse max-margin
Markov networks*, KDD 2009; the structured hinge of Taskar, Guestrin & Koller, NIPS 2003, with
Hamming cost)::

    min_w  P(w) = H(w) + c1 ||w||_1 + c2 ||w||_2^2
           H(w) = sum_i max_y [F(x_i, y; w) + cost * hamming(y_i, y)] - F(x_i, y_i; w)

summed over sentences (no 1/N), the scale of ``crf-l1``'s c1 and c2.

Method. The hinge is smoothed at a temperature tau (Nesterov, *Smooth minimization of
non-smooth functions*, Math. Prog. 2005; for structured outputs the softmax-margin of Gimpel &
Smith, NAACL 2010)::

    H_tau(w) = sum_i tau log sum_y exp((F(x_i, y; w) + cost * hamming(y_i, y)) / tau)
               - F(x_i, y_i; w),        H <= H_tau <= H + tau sum_i T_i log L,

a differentiable function computed by forward-backward on the cost-augmented scores divided by
tau, with gradient sum_i E_p[f] - f(x_i, y_i). OWL-QN (Andrew & Gao, ICML 2007) minimises
H_tau + c1 ||w||_1 + c2 ||w||^2, whose iterates have exact zeros; tau then shrinks by
``tau_factor`` and the next stage starts from the last weights, until the certificate below
says the hinge objective is within ``gap`` (relative) of its optimum, or ``stages`` ran out.

Certificate. By weak duality, for any distributions mu_i over each sentence's labelings,
``D(mu) = cost sum_i E_mu_i[hamming] - r*(-sum_i (E_mu_i[f] - f(x_i, y_i)))`` is at most
min P, where r* is the conjugate of the regularizer. At the end of a stage we take mu_i = the
smoothed model's own distribution p_i at w, whose feature term is the gradient g of H_tau.
With c2 > 0, ``r*(v) = sum_k max(0, |v_k| - c1)^2 / (4 c2)``. With c2 = 0, r* is 0 on the box
``||v||_inf <= c1`` and infinite outside, so each p_i is mixed with the gold labeling
(mu_i = s p_i + (1 - s) delta_{y_i}, s = min(1, c1 / ||g||_inf)), which scales the feature term
and the expected Hamming cost by s. Every stage's D is a valid bound, so the best one is kept;
``P(w) - D`` (P by loss-augmented Viterbi) bounds the distance to the optimum of the
*unsmoothed* objective and is printed at the end of each stage. The bound is loose while
OWL-QN is far from the stage's optimum (the mixing factor s then falls well below 1), so the
gap it certifies is an upper bound, often much larger than the true distance.

Stage selection. The colder stages fit the training hinge more closely, which is not always
better on new text (the temperature smooths like a regularizer): on UD English GUM UPOS and on
a held-out tenth of CoNLL-2000 chunking the first stage scored best on dev. With dev data and
``select = dev`` the stages stop after the first one that scores lower on dev than the best
before it, and the best stage's weights are returned; ``chosen_`` then holds its stage and
iteration count, which train the same model on other data (a held-out path's final training).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from tagger.chain import loss_augmented_viterbi_batch_into
from tagger.learners.base import Param, Stopwatch, TrainingProblem, main_score
from tagger.learners.params import (
    C1,
    C2,
    DELTA,
    MEMORY,
    ON_A_CLUSTER,
    PERIOD,
    QN_EPOCHS,
    SELECT,
    START_END,
)
from tagger.learners.solvers.crf_base import CRFLearner, with_l2
from tagger.learners.solvers.owlqn import OWLQN, Convergence


def hinge(problem: TrainingProblem, w: np.ndarray, cost: float) -> float:
    """H(w): the summed structured hinge with Hamming cost (loss-augmented Viterbi)."""
    model, X, gold = problem.model, problem.X, np.ascontiguousarray(problem.y, dtype=np.int32)
    if not model.plain:
        _, best, gold_scores = model.decode(X, w, gold, cost)
        return float(best.sum() - gold_scores.sum())
    state = model.state_scores(X, w)
    trans = np.ascontiguousarray(model.transitions(w))
    offsets = np.ascontiguousarray(X.offsets, dtype=np.int64)
    out = np.empty(len(gold), dtype=np.int32)
    best = np.empty(len(offsets) - 1)
    loss_augmented_viterbi_batch_into(state, offsets, trans, gold, cost, out, best)
    inner = np.ones(len(gold), dtype=bool)
    inner[offsets[:-1][offsets[:-1] < len(gold)]] = False  # first token of each sentence
    idx = np.flatnonzero(inner)
    gold_score = state[np.arange(len(gold)), gold].sum() + trans[gold[idx - 1], gold[idx]].sum()
    return float(best.sum() - gold_score)


def dual_bound(g: np.ndarray, expected_misses: float, cost: float, c1: float, c2: float) -> float:
    """D: the weak-duality lower bound on min P from the smoothed model's distributions at w
    (``g`` = grad H_tau(w), ``expected_misses`` = sum_i E_p[hamming(y_i, y)])."""
    if c2 > 0.0:
        excess = np.maximum(np.abs(g) - c1, 0.0)
        return cost * expected_misses - float(excess @ excess) / (4.0 * c2)
    top = float(np.abs(g).max()) if g.size else 0.0
    s = 1.0 if top <= c1 else c1 / top
    return s * cost * expected_misses


class M3NOWLQN(CRFLearner):
    """L1 / elastic-net M3N by OWL-QN on a smoothed hinge, tau shrinking stage by stage, each
    stage ending with a certified duality gap (Zhu, Xing & Zhang 2009's objective in penalized
    form; Andrew & Gao 2007; Nesterov 2005).

    Objective: min_w sum_i [max_y F(x_i,y;w) + cost*hamming(y_i,y) - F(x_i,y_i;w)]
    + c1 ||w||_1 + c2 ||w||_2^2.
    """

    name = "m3n-owlqn"
    label_pairs = True  # its objective (CRFObjective) takes pair templates and order 2
    strength = ("c1", 1)  # the regularization parameter, +1: larger is stronger
    #: a path ranks strengths by the first stage alone (the softmax-margin at tau = 1, whose
    #: dev scores measured as good as the later stages' on citations and UD English GUM),
    #: each point warm-started with the point before's weights and curvature pairs and
    #: stopped once 5 iterations lower its objective by less than 1 %, or after 30 (on GUM
    #: the dev score stops moving well before the objective does; the iterations after that
    #: mostly zero weights, which the polish does for the kept point alone). Shorter points
    #: mislead: at 12 iterations each point inherits the training of the points before it,
    #: and the path drifts to ever weaker penalties (GUM: c1 = 1/128, 110,844 weights)
    #: Nor does a point compute the certificate: it costs an evaluation and a loss-augmented
    #: Viterbi pass and decides nothing with one stage (the kept point's polish computes it)
    path_settings = {"stages": 1, "epochs": 30, "delta": 1e-2, "period": 5, "certify": False}
    #: the points stronger than the default are there to bring the weights down to the
    #: default's sparsely (a warm start from zero at the default keeps 2.5x the weights on
    #: CoNLL-2000 chunking) and were never the kept point on GUM, CoNLL-2000 or citations:
    #: half the iterations do that job
    lead_in_settings = {"epochs": 15}
    #: the kept point is then trained on at the same temperature until 10 iterations lower the
    #: objective by less than 0.3 %: colder stages scored no better on dev on GUM and on
    #: CoNLL-2000's held-out tenth, and cost as much again (``--set stages=4`` asks for them)
    polish_settings = {"stages": 1, "epochs": 100, "delta": 3e-3, "period": 10}
    #: the path then tries an L2 term at the chosen c1 (the elastic net), kept if it helps
    mix = "c2"
    #: the scores are max-margin scores, not log-probabilities
    probabilistic = False
    params = (
        C1,
        C2,
        Param(
            "cost",
            1.0,
            float,
            "Hamming cost of each wrong label in the margin",
            low=0.0,
            low_open=True,
        ),
        Param(
            "tau",
            1.0,
            float,
            "temperature of the first stage (1: the softmax-margin)",
            low=0.0,
            low_open=True,
        ),
        Param(
            "tau_factor",
            0.25,
            float,
            "the temperature is multiplied by this after each stage",
            low=0.0,
            high=1.0,
            low_open=True,
        ),
        Param(
            "stages",
            4,
            int,
            "most smoothing stages (the iterations of 'epochs' are shared "
            "by the stages; a stage ends early when OWL-QN converges)",
            low=1,
        ),
        Param(
            "gap",
            0.01,
            float,
            "stop once the certified gap P(w) - D is at most this fraction of P(w)",
            low=0.0,
        ),
        SELECT,
        Param(
            "certify",
            True,
            bool,
            "compute the duality gap at the end of the last stage (the points of a "
            "regularization path skip it)",
        ),
        # a budget the stages share, each ending when OWL-QN converges at its temperature
        replace(QN_EPOCHS, default=400),
        MEMORY,
        DELTA,
        PERIOD,
        START_END,
        *ON_A_CLUSTER,
    )

    def _fit(self, problem: TrainingProblem, settings: dict, seed: int, w0) -> np.ndarray:
        fun = self._objective_fn(problem, settings)
        fun.cost = settings["cost"]
        c1, c2 = settings["c1"], settings["c2"]
        w = np.zeros(fun.n_weights) if w0 is None else np.array(w0, dtype=np.float64)
        clock = Stopwatch()
        n_stages, budget = settings["stages"], settings["epochs"]
        tau, it, best_dual = settings["tau"], 0, -np.inf
        # the stage scoring best on dev so far: (score, weights, its row)
        selecting = settings["select"] == "dev" and problem.dev_score is not None and n_stages > 1
        best = (-np.inf, None, None)
        # on a path (warm_start), the L-BFGS pairs of the point before: the smooth part at the
        # same temperature differs only by the L2 term, whose change load_memory adds exactly
        carried = getattr(self, "_carried", None) if self.warm_start else None
        for stage in range(1, n_stages + 1):
            fun.temperature = tau
            opt = OWLQN(with_l2(fun, c2), w, c1, settings["memory"])
            if stage == 1 and carried is not None and carried[0] is problem and carried[1] == tau:
                opt.load_memory(carried[3], l2_change=c2 - carried[2])
            stop = Convergence(settings["delta"], settings["period"])
            # the iterations left are shared evenly by the stages left
            cap = max(1, -(-(budget - it) // (n_stages - stage + 1)))
            for k in range(1, cap + 1):
                moved = opt.step()
                it += 1
                if moved and not stop.update(opt.objective) and k < cap:
                    self._row(problem, it, stage, tau, opt.objective, opt.w, fun.n_evals, clock)
                    continue
                w = opt.w
                if stage == n_stages and not settings["certify"]:
                    # the last stage: a gap would decide nothing
                    row = self._row(
                        problem, it, stage, tau, opt.objective, w, fun.n_evals, clock, last=True
                    )
                    done = True
                    break
                cert = self._certificate(problem, fun, w, settings, best_dual)
                best_dual = cert["dual"]
                done = cert["rel_gap"] <= settings["gap"]
                row = self._row(
                    problem,
                    it,
                    stage,
                    tau,
                    opt.objective,
                    w,
                    fun.n_evals,
                    clock,
                    last=True,
                    **cert,
                    converged=done,
                )
                break
            if selecting:
                if main_score(row) <= best[0]:
                    break  # colder and no better on dev: the stages after it would fit closer
                best = (main_score(row), w.copy(), row)
                self.chosen_ = {"stages": stage, "epochs": it}
            if done or it >= budget:
                break
            tau *= settings["tau_factor"]
        self._carried = (problem, fun.temperature, c2, opt.memory()) if self.warm_start else None
        if selecting:
            best[2]["selected"] = True
            return best[1]
        return w

    @staticmethod
    def _certificate(problem, fun, w, settings, best_dual) -> dict:
        """The hinge objective P(w), the best dual bound so far and their gap."""
        c1, c2, cost = settings["c1"], settings["c2"], settings["cost"]
        _, g = fun(w)  # the distributions at w itself (the last call was a trial point)
        primal = hinge(problem, w, cost) + c1 * float(np.abs(w).sum()) + c2 * float(w @ w)
        # every stage's bound is valid: keep the best
        dual = max(best_dual, dual_bound(g, fun.expected_misses, cost, c1, c2))
        gap = primal - dual
        return {
            "primal": primal,
            "dual": dual,
            "gap": gap,
            "rel_gap": gap / max(abs(primal), 1e-300),
        }

    def _row(
        self, problem, iteration, stage, tau, smoothed, w, evals, clock, last=False, **certificate
    ):
        """One progress row per iteration (the smoothed objective); a stage's ``last`` row
        also has, when certified, the hinge objective P(w), the best dual bound so far, their
        gap and whether the gap rule stopped training."""
        row = {
            "epoch": iteration,
            "stage": stage,
            "tau": tau,
            "objective": float(smoothed),
            **{k: (v if isinstance(v, bool) else float(v)) for k, v in certificate.items()},
            "nonzero": int(np.count_nonzero(w)),
            "grad_evals": int(evals),
        }
        # on a path (warm_start) only a stage's last row is scored on dev: the path compares
        # the points' ends, and scoring every iteration would cost a third of the training
        if problem.dev_score is not None and (last or not self.warm_start):
            row.update(problem.dev_score(w))
        row["time"] = round(clock(), 2)
        self.report(problem, row)
        return row
