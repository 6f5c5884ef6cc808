"""Max-margin Markov networks trained by (projected) stochastic subgradient descent.

Two learners share this code:

``m3n-subgradient``: the primal sparse L1-M3N of Zhu, Xing & Zhang, *Primal Sparse Max-Margin
Markov Networks* (KDD 2009), Algorithm 2 (docs/algorithms.md section 1a)::

    min_w  (1/N) sum_i R_i(w)   s.t.  ||w||_1 <= lambda   (``radius``)
    R_i(w) = max_y [Delta(y_i, y) + F(x_i, y; w)] - F(x_i, y_i; w)     (structured hinge)

    w <- Proj_{||w||_1 <= lambda}(w - eta_t g),  g = (1/|B|) sum_{i in B} f(x_i, y*_i) - f(x_i, y_i)

with y*_i the loss-augmented Viterbi labeling and B a mini-batch (``batch_size``; a size of
at least N is the batch form of the algorithm). The projection is Duchi et al. (ICML 2008)
and yields exact zeros. The step size is eta_t = (eta0 / a) / sqrt(1 + t) (``decay="sqrt"``),
(eta0 / a) / (1 + t) or eta0 / a, with t the number of epochs done (fractional) and a the mean
number of active attributes per token plus one: a sentence's subgradient grows with its number
of active features, so dividing by a makes one eta0 serve feature sets of any width.

``m3n-l2-subgradient``: the L2 M3N baseline, the same loop with the Pegasos step
(Shalev-Shwartz et al. 2007)::

    min_w  (lambda/2) ||w||_2^2 + (1/N) sum_i R_i(w)
    w <- Proj_{||w||_2 <= 1/sqrt(lambda)}( (1 - eta_t lambda) w - eta_t g ),
    eta_t = 1/(lambda (t0 + t)),  t0 = a/(lambda eta0)

with t counting updates (the offset t0 makes the first step eta0 / a instead of 1/lambda).

Two departures from the plain algorithm, both about the path, not the objective:

- *Growing mini-batches* (``batch_growth``): the batch starts at ``batch_size`` (by default
  N/256 sentences) and is multiplied by ``batch_growth`` after every epoch until it is the
  whole training set, so the last epochs are the batch form of Algorithm 2.
- *Heavy-ball momentum* (``momentum`` = beta): the step follows
  v <- beta v + (1 - beta) g instead of g. The hinge's subgradient flickers between labelings
  from one step to the next; each flicker pushes new coordinates just past the projection's
  threshold, and the raw iterates keep tens of thousands of tiny weights that carry no
  accuracy. Averaging the subgradient removes most of them (CoNLL-2000: 83k -> 36k non-zero
  weights at radius 3000, same F1). ``momentum=0`` and ``batch_growth=1`` give the paper's
  update exactly.

One optional second stage (``max_nonzero`` = K, off by default): after the epochs, keep the K
largest state weights in magnitude and zero the rest, then (``refit_epochs``) go on with the
same steps on that support only, still inside the ball. Subgradient iterates end with a long
tail of small weights (the paper's Table 1 counts them); on the CoNLL-2000 dev split (the last
10 % of train) the tail carries no accuracy: at radius 8000, 106k non-zero weights give F1
94.15 and the largest 45k alone 94.23. A larger ball with the tail cut is both more accurate
and sparser than a small ball (radius 3000: 31k weights, F1 93.85).

Both learners are deterministic for a given seed (the seed orders the examples; the parallel
part only decodes, and gradients are summed in a fixed order).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from tagger._config import NUMBA_OPTS, NUMBA_PARALLEL_OPTS
from tagger.chain import (
    FeatureBatch,
    SparseAccumulator,
    add_difference,
    labeling_score,
    loss_augmented_viterbi_into,
    sentence_state_scores,
    transitions_of,
)
from tagger.jit import njit, prange
from tagger.learners.base import Learner, Param, Stopwatch, TrainingProblem
from tagger.learners.params import BATCH_GROWTH, BATCH_SIZE, EPOCHS, ETA0, MOMENTUM, SHUFFLE
from tagger.learners.solvers.l1_ball import project_l1_ball_into


@njit(**NUMBA_PARALLEL_OPTS)
def _decode_batch(layout, X, w, gold, order, lo, hi, pred, hinge):
    """Loss-augmented Viterbi for sentences order[lo:hi]; hinge[k] = R_i at the current w."""
    L = layout.n_labels
    trans = transitions_of(layout, w)
    for k in prange(lo, hi):
        s = order[k]
        a = X.offsets[s]
        b = X.offsets[s + 1]
        state = np.empty((b - a, L))
        sentence_state_scores(layout, X, w, a, b, state)
        aug = loss_augmented_viterbi_into(state, trans, gold[a:b], 1.0, pred[a:b])
        g = labeling_score(state, trans, gold[a:b])
        # R_i >= 0 exactly (the gold labeling is a candidate); the sums differ only by rounding
        hinge[k] = max(aug - g, 0.0)


@njit(**NUMBA_OPTS)
def _accumulate_difference(layout, X, gold, pred, order, lo, hi, grad):
    """grad += sum_k f(x, pred) - f(x, gold) over sentences order[lo:hi]; only where they differ."""
    n = 0
    for k in range(lo, hi):
        s = order[k]
        n = add_difference(layout, X, X.offsets[s], X.offsets[s + 1], pred, gold, 1.0, grad, n)
    return n


@njit(**NUMBA_OPTS)
def _apply_step(w, grad, n, step):
    for j in range(n):
        k = grad.touched[j]
        w[k] -= step * grad.values[k]
        grad.values[k] = 0.0
        grad.mark[k] = False


@njit(**NUMBA_OPTS)
def _momentum_step(w, velocity, beta, grad, n, scale, step):
    """velocity <- beta velocity + scale grad;  w <- w - step velocity (grad is cleared)."""
    for k in range(w.shape[0]):
        velocity[k] *= beta
    for j in range(n):
        k = grad.touched[j]
        velocity[k] += scale * grad.values[k]
        grad.values[k] = 0.0
        grad.mark[k] = False
    for k in range(w.shape[0]):
        w[k] -= step * velocity[k]


def _epoch(
    problem,
    w,
    order,
    batch_size,
    step_of,
    apply_penalty,
    scratch,
    average=None,
    momentum=0.0,
    velocity=None,
):
    """One pass over the data in the given order; returns the mean hinge seen during the pass.

    With ``average`` (a pair [sum array, count]), every iterate is added to the running sum.
    With ``momentum`` > 0 the step follows the exponentially averaged subgradient (heavy ball)
    kept in ``velocity``.
    """
    layout, X = problem.model.layout, FeatureBatch.of(problem.X)
    grad, pred, hinge = scratch
    n = len(order)
    B = batch_size
    for lo in range(0, n, B):
        hi = min(lo + B, n)
        _decode_batch(layout, X, w, problem.y, order, lo, hi, pred, hinge)
        m = _accumulate_difference(layout, X, problem.y, pred, order, lo, hi, grad)
        eta = step_of(hi - lo)
        apply_penalty(w, eta)
        if momentum > 0.0:
            _momentum_step(w, velocity, momentum, grad, m, (1.0 - momentum) / (hi - lo), eta)
        else:
            _apply_step(w, grad, m, eta / (hi - lo))
        apply_penalty.project(w)
        if average is not None:
            average[0] += w
            average[1] += 1
    return float(hinge[:n].mean())


class _L1Ball:
    def __init__(self, radius: float, n: int):
        self.radius = radius
        self.buf = np.empty(n)

    def __call__(self, w, eta):
        pass

    def project(self, w):
        project_l1_ball_into(w, self.radius, self.buf)


class M3NSubgradient(Learner):
    """L1-M3N by projected stochastic subgradient (Zhu, Xing & Zhang, KDD 2009, Algorithm 2).

    Objective: min_w (1/N) sum_i R_i(w) s.t. ||w||_1 <= radius, R_i the structured hinge with
    Hamming loss. See the module docstring for the update.
    """

    name = "m3n-subgradient"
    strength = ("radius", -1)  # the regularization parameter, +1: larger is stronger
    penalty = "l1"
    params = (
        Param(
            "radius",
            3000.0,
            float,
            "radius lambda of the L1 ball ||w||_1 <= lambda",
            low=0.0,
            low_open=True,
        ),
        replace(EPOCHS, default=40),  # each online learner sets its own number of passes
        BATCH_SIZE,
        ETA0,
        Param(
            "decay",
            "sqrt",
            str,
            "step size schedule over epochs t: eta0/sqrt(1+t), eta0/(1+t) or constant",
            choices=("sqrt", "inverse", "constant"),
        ),
        SHUFFLE,
        BATCH_GROWTH,
        MOMENTUM,
        Param(
            "average_from",
            0,
            int,
            "average the iterates of the epochs from this one on "
            "(Polyak averaging; the average stays inside the ball); 0 = no averaging",
            low=0,
        ),
        Param(
            "max_nonzero",
            0,
            int,
            "after the epochs, keep only this many state weights (the "
            "largest in magnitude) and refit them for refit_epochs more epochs inside the "
            "same ball; 0 = keep every non-zero",
            low=0,
        ),
        Param(
            "refit_epochs",
            0,
            int,
            "epochs of the refit on the kept weights (with max_nonzero)",
            low=0,
        ),
    )

    def _penalty(self, settings, n_weights):
        return _L1Ball(settings["radius"], n_weights)

    def _step_rule(self, settings, n_sentences, width):
        eta0, decay = settings["eta0"] / width, settings["decay"]
        seen = [0]

        def step_of(batch: int) -> float:
            t = seen[0] / n_sentences
            seen[0] += batch
            if decay == "sqrt":
                return eta0 / math.sqrt(1.0 + t)
            if decay == "inverse":
                return eta0 / (1.0 + t)
            return eta0

        return step_of

    def _fit(self, problem: TrainingProblem, settings: dict, seed: int, w0) -> np.ndarray:
        model, X = problem.model, problem.X
        w = np.zeros(model.n_weights) if w0 is None else np.array(w0, dtype=np.float64, copy=True)
        rng = np.random.default_rng(seed)
        # mean squared norm of a token's attribute vector (its number of attributes when
        # they are indicators)
        sq = float(np.dot(X.values, X.values)) if X.values is not None else float(len(X.attrs))
        width = 1.0 + sq / max(X.n_tokens, 1)
        step_of = self._step_rule(settings, X.n_sentences, width)
        clock = Stopwatch()
        last = settings["epochs"]
        w = self._epochs(problem, w, settings, rng, step_of, clock, 1, last, None)
        keep = settings.get("max_nonzero", 0)
        if keep and np.count_nonzero(model.state_weights(w)) > keep:
            w = self._refit_on_strongest(problem, w, settings, rng, step_of, clock, keep, last)
        return w

    def _refit_on_strongest(self, problem, w, settings, rng, step_of, clock, keep, last):
        """Keep the ``keep`` largest state weights and go on with the same steps on that
        support only: the L1 ball has chosen the features; the refit lets the survivors take
        up the score of the small weights that were dropped (a relaxed-lasso style second
        stage, still inside the same ball)."""
        model = problem.model
        kept = np.sort(np.argpartition(-np.abs(model.state_weights(w)), keep - 1)[:keep])
        support, index = model.restrict(kept)

        def widen(w_support):
            full = np.zeros(model.n_weights)
            full[index] = w_support
            return full

        dev = problem.dev_score
        sub = TrainingProblem(
            support,
            problem.X,
            problem.y,
            dev_score=None if dev is None else (lambda ws: dev(widen(ws))),
            progress=problem.progress,
        )
        w_support = w[index]
        w_support = self._epochs(
            sub,
            w_support,
            settings,
            rng,
            step_of,
            clock,
            last + 1,
            last + settings["refit_epochs"],
            keep,
        )
        return widen(w_support)

    def _epochs(self, problem, w, settings, rng, step_of, clock, first, last, support):
        model, X = problem.model, problem.X
        n_w = model.n_weights
        n = X.n_sentences
        scratch = (SparseAccumulator.new(n_w), np.empty(X.n_tokens, dtype=np.int32), np.empty(n))
        penalty = self._penalty(settings, n_w)
        penalty.project(w)
        order = np.arange(n, dtype=np.int64)
        average_from = settings.get("average_from", 0)
        velocity = np.zeros(n_w)
        average = None
        for epoch in range(first, last + 1):
            if settings["shuffle"]:
                order = rng.permutation(n).astype(np.int64)
            if average_from and epoch >= average_from and average is None:
                average = [np.zeros(n_w), 0]
            batch = settings["batch_size"] or -(-n // 256)
            batch = min(n, int(round(batch * settings["batch_growth"] ** (epoch - 1))))
            hinge = _epoch(
                problem,
                w,
                order,
                batch,
                step_of,
                penalty,
                scratch,
                average,
                settings.get("momentum", 0.0),
                velocity,
            )
            current = w if average is None else average[0] / average[1]
            row = {
                "epoch": epoch,
                "batch": batch,
                "objective": self._objective(hinge, current, settings),
                "hinge": hinge,
                "nonzero": int(np.count_nonzero(current)),
                "below_1e-4": int(np.count_nonzero((current != 0) & (np.abs(current) < 1e-4))),
                "l1": float(np.abs(current).sum()),
            }
            if support is not None:
                row["support"] = support
            if problem.dev_score is not None:
                row.update(problem.dev_score(current))
            row["time"] = round(clock(), 2)
            self.report(problem, row)
        return w if average is None else average[0] / average[1]

    def _objective(self, hinge, w, settings):
        # the constrained problem's objective is the mean hinge (w stays inside the ball)
        return hinge
