"""Brute force over every labeling: the independent reference the kernel and learner tests
compare with. Nothing here calls the package's kernels; chains are small enough to enumerate."""

from __future__ import annotations

import itertools

import numpy as np

NEG_INF = -np.inf


def labelings(T: int, L: int, dtype=np.int64) -> np.ndarray:
    """Every labeling of T tokens with L labels, one per row, in lexicographic order."""
    return np.array(list(itertools.product(range(L), repeat=T)), dtype=dtype).reshape(-1, T)


def path_scores(state: np.ndarray, trans: np.ndarray, paths: np.ndarray) -> np.ndarray:
    """F(y) = sum_t state[t, y_t] + sum_t trans[y_{t-1}, y_t] of each row of ``paths``."""
    T = state.shape[0]
    scores = state[np.arange(T), paths].sum(axis=1)
    if T > 1:
        scores = scores + trans[paths[:, :-1], paths[:, 1:]].sum(axis=1)
    return scores


def path_score(state, trans, path) -> float:
    return float(path_scores(state, trans, np.asarray(path, dtype=np.int64)[None, :])[0])


def logsumexp(x: np.ndarray) -> float:
    m = x.max()
    if m == NEG_INF:
        return NEG_INF
    return float(m + np.log(np.exp(x - m).sum()))


def marginals(state, trans):
    """(log Z, node marginals, edge marginals summed over positions) by enumeration."""
    T, L = state.shape
    paths = labelings(T, L)
    scores = path_scores(state, trans, paths)
    log_z = logsumexp(scores)
    node = np.zeros((T, L))
    edge = np.zeros((L, L))
    if log_z == NEG_INF:
        return log_z, node, edge
    p = np.exp(scores - log_z)
    for t in range(T):
        np.add.at(node[t], paths[:, t], p)
    for t in range(1, T):
        np.add.at(edge, (paths[:, t - 1], paths[:, t]), p)
    return log_z, node, edge


def sentence_features(model, X, s: int) -> tuple[np.ndarray, np.ndarray]:
    """Every labeling of sentence ``s`` of the featurized ``X`` (int32 rows) and its joint
    feature vector f(x_s, y) under ``model`` (one row each)."""
    T = int(X.offsets[s + 1] - X.offsets[s])
    paths = labelings(T, model.n_labels, np.int32)
    return paths, np.array([model.joint_features(X, s, p) for p in paths])


def check_nbest_batch(X, L: int, k: int, nbest, score_of) -> None:
    """``nbest`` (labels, scores, log Z of the batch ``X`` for k best, as
    tagger.chain.kbest.nbest returns them) against ``score_of(s, path)``, the reference score
    of each labeling of sentence s, sentence by sentence (:func:`check_nbest`)."""
    labels, scores, log_z = nbest
    assert labels.shape == (X.n_tokens, k) and scores.shape == (X.n_sentences, k)
    for s in range(X.n_sentences):
        a, b = int(X.offsets[s]), int(X.offsets[s + 1])
        check_nbest(lambda path, s=s: score_of(s, path), b - a, L, labels[a:b], scores[s], log_z[s])


def check_nbest(score_of, T: int, L: int, labels, scores, log_z, rel: float = 1e-9) -> None:
    """The k-best rows of one sentence (``labels`` (T, k) as the batch writes them, ``scores``
    (k,), ``log_z``) against every labeling's score ``score_of(path)`` (-inf when not allowed):
    the k best scores in order, each row scoring what it reports, distinct rows, the rows past
    the allowed labelings at -inf, and log Z."""
    paths = labelings(T, L)
    ref = np.array([score_of(p) for p in paths])
    k = len(scores)
    expected = np.sort(ref)[::-1][:k]
    expected = np.concatenate([expected, np.full(k - len(expected), NEG_INF)])
    seen = set()
    for j in range(k):
        if expected[j] == NEG_INF:
            assert scores[j] == NEG_INF
            continue
        assert abs(scores[j] - expected[j]) <= rel * max(1.0, abs(expected[j]))
        row = tuple(int(x) for x in labels[:, j])
        assert row not in seen
        seen.add(row)
        got = score_of(np.array(row))
        assert abs(got - scores[j]) <= rel * max(1.0, abs(got))
    want = logsumexp(ref)
    assert (want == NEG_INF and log_z == NEG_INF) or abs(log_z - want) <= rel * max(1.0, abs(want))
