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


def hinge_qp(rows, n_sentences: int, n_weights: int, C, scale=None):
    """The primal QP of an L2 structured SVM over enumerated labelings, solved by HiGHS:
    min (1/2)||w||^2 + sum_i C_i xi_i subject to xi_i >= loss - (s * w) . df for every row
    ``(i, df, loss)`` of ``rows`` (df = f(x_i, gold) - f(x_i, y), loss its Hamming loss),
    with per-weight scaling ``s`` (``scale``, ones by default). Returns the effective weights
    s * w and the optimal value."""
    import highspy

    n, K = n_sentences, n_weights
    s = np.ones(K) if scale is None else np.asarray(scale, float)
    C = np.broadcast_to(np.asarray(C, float), (n,))
    A = np.array([np.concatenate([s * df, np.eye(n)[i]]) for i, df, _ in rows])
    inf = highspy.kHighsInf
    qp = highspy.HighsModel()
    lp = qp.lp_
    lp.num_col_, lp.num_row_ = K + n, len(rows)
    lp.col_cost_ = np.concatenate([np.zeros(K), C])
    lp.col_lower_ = np.concatenate([np.full(K, -inf), np.zeros(n)])
    lp.col_upper_ = np.full(K + n, inf)
    lp.row_lower_ = np.array([loss for _, _, loss in rows])
    lp.row_upper_ = np.full(len(rows), inf)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    nz = A != 0
    lp.a_matrix_.start_ = np.concatenate([[0], np.cumsum(nz.sum(axis=1))]).astype(np.int32)
    lp.a_matrix_.index_ = np.nonzero(nz)[1].astype(np.int32)
    lp.a_matrix_.value_ = A[nz]
    hess = qp.hessian_  # (1/2) w'w: identity on the w block, nothing on xi
    hess.dim_ = K + n
    hess.format_ = highspy.HessianFormat.kTriangular
    hess.start_ = np.concatenate([np.arange(K + 1), np.full(n, K)]).astype(np.int32)
    hess.index_ = np.arange(K, dtype=np.int32)
    hess.value_ = np.ones(K)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(qp)
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    z = np.array(h.getSolution().col_value)
    return s * z[:K], h.getInfo().objective_function_value
