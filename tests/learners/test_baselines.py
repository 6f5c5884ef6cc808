"""The HMM and the averaged perceptron against independent plain-Python versions of the same
rules: the HMM's decoding is the argmax of P(x, y) written from its formulas over every
labeling; the perceptron's weights are those of a loop that keeps every iterate."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from tagger.chain.layout import ChainModel
from tagger.features import Featurized
from tagger.learners import LEARNERS, TrainingProblem

from _brute import labelings

L = 3
V = 5  # words 0..V-1 are attributes 1..V; attribute 0 is the bias on every token


def _corpus(seed: int, n: int = 15, all_pairs: bool = False, valued: bool = False):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 5, size=n)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    N = int(offsets[-1])
    words = rng.integers(0, V, N)
    y = np.where(rng.random(N) < 0.7, words % L, rng.integers(0, L, N)).astype(np.int32)
    attrs = np.stack([np.zeros(N, np.int64), words + 1], axis=1).ravel().astype(np.int32)
    vals = rng.uniform(0.5, 1.5, 2 * N) if valued else None
    X = Featurized(np.arange(0, 2 * N + 1, 2, dtype=np.int64), attrs, offsets, vals)
    model = ChainModel.from_data(X, y, L, V + 1)
    if all_pairs:
        model = ChainModel(
            L,
            np.arange(0, (V + 2) * L, L, dtype=np.int64),
            np.tile(np.arange(L, dtype=np.int32), V + 1),
        )
    return TrainingProblem(model, X, y), words


def _log_joint(words_s, ys, words, y, offsets, alpha=1.0):
    """log P(x, y) of one sentence under the add-alpha HMM counted from the corpus."""
    n_lab = Counter(y.tolist())
    seen = set(words.tolist())
    emit = Counter(zip(words.tolist(), y.tolist()))
    trans, end, start = Counter(), Counter(), Counter()
    for s in range(len(offsets) - 1):
        a, b = offsets[s], offsets[s + 1]
        start[int(y[a])] += 1
        end[int(y[b - 1])] += 1
        for t in range(a + 1, b):
            trans[(int(y[t - 1]), int(y[t]))] += 1
    n = len(offsets) - 1
    out = {li: sum(trans[(li, k)] for k in range(L)) + end[li] for li in range(L)}
    lp = math.log((start[ys[0]] + alpha) / (n + alpha * L))
    for t, (wd, lab) in enumerate(zip(words_s, ys)):
        c = emit[(wd, lab)] if wd in seen else 0
        lp += math.log((c + alpha) / (n_lab[lab] + alpha * (len(seen) + 1)))
        if t:
            lp += math.log((trans[(ys[t - 1], lab)] + alpha) / (out[ys[t - 1]] + alpha * (L + 1)))
    return lp + math.log((end[ys[-1]] + alpha) / (out[ys[-1]] + alpha * (L + 1)))


def test_hmm_decodes_the_argmax_of_the_smoothed_joint_probability():
    for all_pairs in (False, True):
        problem, words = _corpus(4, all_pairs=all_pairs)
        w = LEARNERS["hmm"]().fit(problem)
        m, X = problem.model, problem.X
        for s in range(X.n_sentences):
            a, b = X.offsets[s], X.offsets[s + 1]
            ys = labelings(b - a, L, np.int32)
            ours = np.array([m.score(X, s, yy, w) for yy in ys])
            direct = np.array(
                [
                    _log_joint(words[a:b].tolist(), yy.tolist(), words, problem.y, X.offsets)
                    for yy in ys
                ]
            )
            # the weights are the log-probabilities themselves: equal scores, not only argmax
            np.testing.assert_allclose(ours, direct, rtol=1e-10, atol=1e-10)


def _plain_perceptron(problem, orders, w0, mira_cap=None):
    """The averaged perceptron, or with ``mira_cap`` single-best MIRA: the step solving
    min ||w' - w||^2 s.t. w'.d >= Hamming, capped, written as the textbook formula."""
    m, X = problem.model, problem.X
    w = w0.copy()
    total = np.zeros(m.n_weights)
    visits = 0
    for order in orders:
        for s in order:
            a, b = X.offsets[s], X.offsets[s + 1]
            ys = labelings(b - a, L, np.int32)
            scores = [m.score(X, s, yy, w) for yy in ys]
            pred = ys[int(np.argmax(scores))]
            gold = problem.y[a:b]
            if np.any(pred != gold):
                d = m.joint_features(X, s, gold) - m.joint_features(X, s, pred)
                step = 1.0
                if mira_cap is not None:
                    step = max(0.0, min(mira_cap, (np.sum(pred != gold) - w @ d) / (d @ d)))
                w = w + step * d
            total += w
            visits += 1
    return total / visits


def test_perceptron_average_equals_the_mean_of_every_iterate():
    # real-valued features and a random start: no two labelings tie, so the brute-force argmax
    # and Viterbi pick the same labeling
    problem, _ = _corpus(7, n=10, valued=True)
    w0 = np.random.default_rng(2).normal(size=problem.model.n_weights)
    learner = LEARNERS["perceptron"](epochs=3)
    w = learner.fit(problem, seed=5, w0=w0)
    assert all(row["mistakes"] > 0 for row in learner.trace_)
    # the visiting orders the learner used: the same generator, the same draws
    rng = np.random.default_rng(5)
    n = problem.X.n_sentences
    orders = [rng.permutation(n) for _ in range(len(learner.trace_))]
    np.testing.assert_allclose(w, _plain_perceptron(problem, orders, w0), atol=1e-9)


@pytest.mark.parametrize("cap", [0.05, 100.0])
def test_mira_average_equals_the_mean_of_every_passive_aggressive_iterate(cap):
    problem, _ = _corpus(7, n=10, valued=True)
    w0 = np.random.default_rng(3).normal(size=problem.model.n_weights)
    learner = LEARNERS["mira"](epochs=3, C=cap)
    w = learner.fit(problem, seed=4, w0=w0)
    assert all(row["mistakes"] > 0 for row in learner.trace_)
    rng = np.random.default_rng(4)
    n = problem.X.n_sentences
    orders = [rng.permutation(n) for _ in range(len(learner.trace_))]
    np.testing.assert_allclose(w, _plain_perceptron(problem, orders, w0, mira_cap=cap), atol=1e-9)
    # a small cap binds and a large one does not: the two runs differ
    other = LEARNERS["mira"](epochs=3, C=1e-3 if cap > 1 else 1e3).fit(problem, seed=4, w0=w0)
    assert np.abs(other - w).max() > 1e-6
