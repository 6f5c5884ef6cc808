"""``perceptron``: the averaged structured perceptron (Collins, EMNLP 2002), the online baseline
of Wang, Shawe-Taylor & Szedmak's POS table (docs/algorithms.md section 2).

For each sentence in turn (a new random order every epoch):

    y^ = argmax_y F(x_i, y; w)                     (Viterbi)
    w <- w + f(x_i, y_i) - f(x_i, y^)              (only when y^ != y_i)

and the model is the average of the iterates after every visit (Collins' averaging; without it
the last iterate overfits the last sentences). The average is kept in O(update) per visit:
alongside w, u accumulates c * update with c the number of earlier visits, and after T visits
the average is w - u / T.

No regularization: a mistake-driven rule, run for ``epochs`` passes or until a pass makes no
mistake. The progress rows report, per pass, the mistakes (sentences whose Viterbi labeling
was not the gold one), the perceptron loss met along the pass (the mean of
F(x_i, y^) - F(x_i, y_i) at the visit, as ``objective``) and the averaged model's dev score.
"""

from __future__ import annotations

import numpy as np

from tagger._config import NUMBA_OPTS
from tagger.chain import (
    FeatureBatch,
    SparseAccumulator,
    add_difference,
    labeling_score,
    sentence_state_scores,
    transitions_of,
    viterbi_into,
)
from tagger.jit import njit
from tagger.learners.base import Learner, Stopwatch, TrainingProblem
from tagger.learners.params import EPOCHS, SHUFFLE


@njit(**NUMBA_OPTS)
def online_epoch(layout, X, gold, order, w, u, c, acc, pred, clip):
    """One pass in ``order``: decode, update w (and u by c times the update, c the visits
    before this one) on a mistake. ``clip`` = 0: the perceptron's step 1; ``clip`` > 0: MIRA's
    step min(clip, (hamming - w.d) / ||d||^2) along d = f(gold) - f(pred), skipped when not
    positive. Returns the number of mistakes, the summed perceptron loss and the new visit
    count."""
    L = layout.n_labels
    mistakes = 0
    loss = 0.0
    for k in range(order.shape[0]):
        s = order[k]
        a = X.offsets[s]
        b = X.offsets[s + 1]
        if b == a:
            continue
        state = np.empty((b - a, L))
        sentence_state_scores(layout, X, w, a, b, state)
        trans = transitions_of(layout, w)
        best = viterbi_into(state, trans, pred[a:b])
        loss += max(best - labeling_score(state, trans, gold[a:b]), 0.0)
        if np.any(pred[a:b] != gold[a:b]):
            mistakes += 1
            n = add_difference(layout, X, a, b, gold, pred, 1.0, acc, 0)
            step = 1.0
            if clip > 0.0:
                hamming = 0.0
                for i in range(a, b):
                    if pred[i] != gold[i]:
                        hamming += 1.0
                norm2 = 0.0
                dot = 0.0
                for j in range(n):
                    p = acc.touched[j]
                    norm2 += acc.values[p] * acc.values[p]
                    dot += acc.values[p] * w[p]
                step = min(clip, (hamming - dot) / norm2) if norm2 > 0.0 else 0.0
                step = max(step, 0.0)
            for j in range(n):
                p = acc.touched[j]
                v = step * acc.values[p]
                w[p] += v
                u[p] += c * v
                acc.values[p] = 0.0
                acc.mark[p] = False
        c += 1.0
    return mistakes, loss, c


class Perceptron(Learner):
    """Averaged structured perceptron (Collins 2002).

    Objective: none (mistake-driven); update w += f(x_i, y_i) - f(x_i, y^_i) with y^_i the
    Viterbi labeling, the model the average of all iterates. The online baseline of Wang,
    Shawe-Taylor & Szedmak (AISTATS 2009), 100 passes in their table.
    """

    name = "perceptron"
    params = (EPOCHS, SHUFFLE)

    def _clip(self, settings: dict) -> float:
        return 0.0  # the perceptron's unit step

    def _fit(self, problem: TrainingProblem, settings: dict, seed: int, w0) -> np.ndarray:
        model, X = problem.model, problem.X
        layout, batch = model.layout, FeatureBatch.of(X)
        w = np.zeros(model.n_weights) if w0 is None else np.array(w0, dtype=np.float64)
        u = np.zeros(model.n_weights)
        c = 0.0
        acc = SparseAccumulator.new(model.n_weights)
        pred = np.empty(X.n_tokens, dtype=np.int32)
        rng = np.random.default_rng(seed)
        order = np.arange(X.n_sentences, dtype=np.int64)
        clock = Stopwatch()
        for epoch in range(1, settings["epochs"] + 1):
            if settings["shuffle"]:
                order = rng.permutation(X.n_sentences).astype(np.int64)
            mistakes, loss, c = online_epoch(
                layout, batch, problem.y, order, w, u, c, acc, pred, self._clip(settings)
            )
            average = w - u / c
            row = {
                "epoch": epoch,
                "objective": loss / max(X.n_sentences, 1),
                "mistakes": int(mistakes),
                "nonzero": int(np.count_nonzero(average)),
                "converged": mistakes == 0,
            }
            if problem.dev_score is not None:
                row.update(problem.dev_score(average))
            row["time"] = round(clock(), 2)
            self.report(problem, row)
            if mistakes == 0:
                break
        return w - u / c
