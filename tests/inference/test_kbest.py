"""The k-best kernels (tagger.inference.kbest) against brute-force enumeration of all L^T
labelings: the k best scores in order, each labeling scoring what it is reported to, distinct
labelings, rows past the allowed labelings at -inf, and log Z."""

from __future__ import annotations

import numpy as np
import pytest
from test_second_order import enumerate_labelings, random_model, same_score

from tagger.inference.kbest import kbest_into, order2_kbest_into

from _brute import NEG_INF, labelings, logsumexp

SEEDS = list(range(60))


def _first_order(seed):
    rng = np.random.default_rng(seed)
    T = int(rng.integers(1, 6))
    L = int(rng.integers(1, 5))
    scale = float(rng.choice([1.0, 5.0, 50.0]))
    state = rng.normal(size=(T, L)) * scale
    edge = rng.normal(size=(1 if seed % 2 else T, L, L)) * scale
    p = float(rng.choice([0.0, 0.0, 0.2]))
    state[rng.random(state.shape) < p] = NEG_INF
    edge[rng.random(edge.shape) < p] = NEG_INF
    return state, np.ascontiguousarray(edge)


def _reference_first_order(state, edge):
    T, L = state.shape
    paths = labelings(T, L)
    scores = state[np.arange(T), paths].sum(axis=1)
    for t in range(1, T):
        e = edge[0] if edge.shape[0] == 1 else edge[t]
        scores = scores + e[paths[:, t - 1], paths[:, t]]
    return paths, scores


def _check(paths, ref_scores, labels, scores, log_z, got_log_z):
    k = scores.shape[0]
    order = np.argsort(-ref_scores, kind="stable")
    expected = ref_scores[order][:k]
    if len(expected) < k:
        expected = np.concatenate([expected, np.full(k - len(expected), NEG_INF)])
    for j in range(k):
        assert same_score(scores[j], expected[j]), (j, scores, expected)
    finite = [j for j in range(k) if scores[j] > NEG_INF]
    index = {tuple(p): i for i, p in enumerate(paths.tolist())}
    seen = set()
    for j in finite:
        row = tuple(int(x) for x in labels[j])
        assert row not in seen  # distinct labelings
        seen.add(row)
        assert same_score(ref_scores[index[row]], scores[j])
    for j in range(k):
        if j not in finite:
            assert (labels[j] == 0).all()
    assert same_score(got_log_z, log_z, rel=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", [1, 3, 7])
def test_first_order_k_best_is_the_enumeration(seed, k):
    state, edge = _first_order(seed)
    T = state.shape[0]
    labels = np.full((k, T), -5, dtype=np.int32)
    scores = np.full(k, np.nan)
    log_z = kbest_into(state, edge, labels, scores)
    paths, ref = _reference_first_order(state, edge)
    _check(paths, ref, labels, scores, logsumexp(ref), log_z)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("k", [1, 4, 9])
def test_second_order_k_best_is_the_enumeration(seed, k):
    state, edge, s = random_model(seed)
    T = state.shape[0]
    labels = np.full((k, T), -5, dtype=np.int32)
    scores = np.full(k, np.nan)
    args = (s.pair_a, s.pair_b, s.pred_ptr, s.pred_src, s.pred_score)
    log_z = order2_kbest_into(state, edge, *args, labels, scores)
    paths, ref, _, _ = enumerate_labelings(state, edge, s)
    _check(paths, ref, labels, scores, logsumexp(ref), log_z)


def test_the_best_of_the_list_is_viterbi():
    """k = 1 is Viterbi: on a chain with a known best path, the list's head is that path."""
    state = np.array([[2.0, 0.0], [0.0, 1.0], [3.0, 0.0]])
    edge = np.array([[[0.0, 5.0], [0.0, 0.0]]])  # label 0 then 1 earns 5
    labels = np.zeros((2, 3), dtype=np.int32)
    scores = np.zeros(2)
    kbest_into(state, edge, labels, scores)
    # 0,1,0: 2 + 1 + 3 + 5 = 11; next 0,1,1: 2 + 1 + 0 + 5 = 8 (then 0,0,0: 5)
    assert labels[0].tolist() == [0, 1, 0] and scores[0] == 11.0
    assert labels[1].tolist() == [0, 1, 1] and scores[1] == 8.0
