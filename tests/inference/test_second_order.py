"""The second-order kernels (tagger.inference.second_order) against brute-force enumeration of
all L^T labelings.

Models are small (T <= 5, L <= 4) and drawn from fixed seeds: a random set of allowed pairs
(all of them, a sparse subset, sometimes none), a random set of allowed triples over them,
pair-state ids in lexicographic or shuffled order, random triple scores, and state and edge
scores with some entries at -inf. Edge entries of pairs that are not allowed are NaN: the
kernels must never read them. A labeling is allowed iff all its pairs and triples are, and
scores the sum of its state, edge and triple scores; the reference enumerates every labeling.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np
import pytest

from tagger.inference import second_order, second_order_exact
from tagger.inference.pair_chain import pair_fb_buffers, pair_forward_backward, pair_viterbi_into
from tagger.inference.second_order import (
    order2_buffers,
    order2_forward_backward,
    order2_tables,
    order2_viterbi_into,
)
from tagger.inference.sum_product import fb_tables

from _brute import NEG_INF, logsumexp

SEEDS = list(range(60))
NO_GOLD = np.empty(0, dtype=np.int32)


# ---------------------------------------------------------------------------------------------
# Structures, models and the brute-force reference
# ---------------------------------------------------------------------------------------------


class Structure(NamedTuple):
    pair_a: np.ndarray
    pair_b: np.ndarray
    pair_id: np.ndarray
    pred_ptr: np.ndarray
    pred_src: np.ndarray
    pred_score: np.ndarray
    triple_id: np.ndarray  # (L, L, L): k of each allowed triple, -1 elsewhere (reference only)

    def args(self):
        return self.pair_a, self.pair_b, self.pair_id, self.pred_ptr, self.pred_src, self.pred_score


def build_structure(allowed, triples, pred_score=None, rng=None):
    """The kernels' arrays for allowed pairs ``allowed`` (L, L) and triples ``triples``
    (L, L, L; only those over allowed pairs count); ids shuffled when ``rng`` is given."""
    L = allowed.shape[0]
    pairs = [(a, b) for a in range(L) for b in range(L) if allowed[a, b]]
    if rng is not None:
        pairs = [pairs[i] for i in rng.permutation(len(pairs))]
    pair_id = np.full((L, L), -1, dtype=np.int32)
    for q, (a, b) in enumerate(pairs):
        pair_id[a, b] = q
    ptr, src, triple_id = [0], [], np.full((L, L, L), -1, dtype=np.int64)
    for b, c in pairs:
        preds = sorted(int(pair_id[a, b]) for a in range(L) if allowed[a, b] and triples[a, b, c])
        for p in preds:
            triple_id[pairs[p][0], b, c] = len(src)
            src.append(p)
        ptr.append(len(src))
    K = len(src)
    if pred_score is None:
        pred_score = np.zeros(K)
    return Structure(
        np.array([a for a, _ in pairs], dtype=np.int32),
        np.array([b for _, b in pairs], dtype=np.int32),
        pair_id,
        np.array(ptr, dtype=np.int64),
        np.array(src, dtype=np.int32),
        np.ascontiguousarray(pred_score, dtype=np.float64),
        triple_id,
    )


def _with_forbidden(rng, x, p):
    x = x.copy()
    x[rng.random(x.shape) < p] = NEG_INF
    return x


def random_model(seed, scale=None, max_t=5, max_l=4):
    """(state, edge, structure) from ``seed``."""
    rng = np.random.default_rng(seed)
    T = int(rng.integers(1, max_t + 1))
    L = int(rng.integers(1, max_l + 1))
    if scale is None:
        scale = float(rng.choice([1.0, 5.0, 5.0, 50.0]))
    p = float(rng.choice([0.0, 0.0, 0.15, 0.4]))
    if seed % 3 == 0:
        allowed = np.ones((L, L), dtype=bool)
        triples = rng.random((L, L, L)) < float(rng.choice([1.0, 1.0, 0.7]))
    else:
        allowed = rng.random((L, L)) < float(rng.choice([0.3, 0.6, 0.9]))
        triples = rng.random((L, L, L)) < float(rng.choice([0.4, 0.8, 1.0]))
    s = build_structure(allowed, triples, rng=rng if seed % 2 else None)
    s = s._replace(pred_score=rng.normal(size=s.pred_src.shape[0]) * scale)
    state = _with_forbidden(rng, rng.normal(size=(T, L)) * scale, p)
    edge = _with_forbidden(rng, rng.normal(size=(T, L, L)) * scale, p)
    edge[:, ~allowed] = np.nan
    return state, np.ascontiguousarray(edge), s


def labelings(T, L):
    return np.array(list(itertools.product(range(L), repeat=T)), dtype=np.int64).reshape(-1, T)


def score_paths(state, edge, s, paths):
    """(F of each row of ``paths``, -inf where not allowed; allowed mask; the triple id of each
    row at each t >= 2, -1 where not allowed)."""
    T = state.shape[0]
    allowed = np.ones(paths.shape[0], dtype=bool)
    scores = state[np.arange(T), paths].sum(axis=1)
    ks = np.zeros((paths.shape[0], max(T - 2, 0)), dtype=np.int64)
    for t in range(1, T):
        allowed &= s.pair_id[paths[:, t - 1], paths[:, t]] >= 0
        scores = scores + edge[t, paths[:, t - 1], paths[:, t]]  # NaN where not allowed
    for t in range(2, T):
        k = s.triple_id[paths[:, t - 2], paths[:, t - 1], paths[:, t]]
        allowed &= k >= 0
        ks[:, t - 2] = k
        scores = scores + np.append(s.pred_score, 0.0)[k]  # k = -1: 0 (masked below)
    return np.where(allowed, scores, NEG_INF), allowed, ks


def enumerate_labelings(state, edge, s):
    T, L = state.shape
    paths = labelings(T, L)
    return (paths, *score_paths(state, edge, s, paths))


def brute_marginals(state, edge, s):
    """(log Z, node, per-position pair, summed triple marginals) by enumeration."""
    T, L = state.shape
    paths, scores, allowed, ks = enumerate_labelings(state, edge, s)
    log_z = logsumexp(scores)
    node, pair, trip = np.zeros((T, L)), np.zeros((T, L, L)), np.zeros(s.pred_src.shape[0])
    if log_z == NEG_INF:
        return log_z, node, pair, trip
    prob = np.exp(scores - log_z)
    for t in range(T):
        np.add.at(node[t], paths[:, t], prob)
    for t in range(1, T):
        np.add.at(pair[t], (paths[:, t - 1], paths[:, t]), prob)
    for t in range(2, T):
        np.add.at(trip, ks[allowed, t - 2], prob[allowed])
    return log_z, node, pair, trip


def path_score(state, edge, s, path):
    return score_paths(state, edge, s, np.asarray(path, dtype=np.int64)[None])[0][0]


def same_score(a, b, rel=1e-12):
    if a == NEG_INF or b == NEG_INF:
        return a == b
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


# ---------------------------------------------------------------------------------------------
# Calling the kernels
# ---------------------------------------------------------------------------------------------


def _buffers(T, L, s, spare_rows=0):
    """Buffers larger than the sentence and full of NaN, as a caller's reused ones may be."""
    buffers = order2_buffers(T + spare_rows, L, s.pair_a.shape[0], s.pred_src.shape[0])
    for buf in buffers:
        buf[:] = np.nan
    return buffers


def viterbi(state, edge, s, spare_rows=0):
    T, L = state.shape
    out = np.full(T, -7, dtype=np.int32)
    score = order2_viterbi_into(state, edge, *s.args(), _buffers(T, L, s, spare_rows), out)
    assert ((out >= 0) & (out < L)).all()
    return out, score


def forward_backward(state, edge, s, spare_rows=0):
    """order2_forward_backward with outputs full of NaN (they must be overwritten)."""
    T, L = state.shape
    node = np.full((T, L), np.nan)
    pair = np.full((T, L, L), np.nan)
    trip = np.full(s.pred_src.shape[0], np.nan)
    tables = order2_tables(s.pred_score, s.pred_ptr, s.pair_a.shape[0])
    buffers = _buffers(T, L, s, spare_rows)
    log_z = order2_forward_backward(state, edge, *s.args(), tables, buffers, node, pair, trip)
    for x in (node, pair, trip):
        assert not np.isnan(x).any()
    return log_z, node, pair, trip


def scaled_tier(state, edge, s):
    """(log Z, accepted) of the scaled tier alone (T >= 2)."""
    T, L = state.shape
    K = s.pred_src.shape[0]
    return second_order._fb_scaled(
        state,
        edge,
        *s.args()[:5],
        order2_tables(s.pred_score, s.pred_ptr, s.pair_a.shape[0]),
        order2_buffers(T, L, s.pair_a.shape[0], K),
        np.empty((T, L)),
        np.empty((T, L, L)),
        np.empty(K),
    )


def exact_tier(state, edge, s):
    T, L = state.shape
    K = s.pred_src.shape[0]
    node, pair, trip = np.empty((T, L)), np.empty((T, L, L)), np.empty(K)
    log_z = second_order_exact.fb_exact(
        state,
        edge,
        s.args()[:5],
        s.pred_score,
        order2_buffers(T, L, s.pair_a.shape[0], K),
        node,
        pair,
        trip,
    )
    return log_z, node, pair, trip


def check_marginals(got, want, atol=1e-12):
    log_z, node, pair, trip = got
    assert same_score(log_z, want[0]), (log_z, want[0])
    if want[0] == NEG_INF:
        assert (node == 0).all() and (pair == 0).all() and (trip == 0).all()
        return
    for x, y in zip(got[1:], want[1:]):
        np.testing.assert_allclose(x, y, rtol=0, atol=atol)
    assert (pair[0] == 0).all() and (node >= 0).all() and (pair >= 0).all() and (trip >= 0).all()


# ---------------------------------------------------------------------------------------------
# Viterbi
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_viterbi_matches_brute_force(seed):
    state, edge, s = random_model(seed)
    _, scores, _, _ = enumerate_labelings(state, edge, s)
    path, score = viterbi(state, edge, s, spare_rows=seed % 2)
    assert same_score(score, scores.max()), (score, scores.max())
    if score > NEG_INF:  # the path is allowed and attains the maximum
        assert same_score(path_score(state, edge, s, path), score)


def test_viterbi_breaks_ties_towards_the_lowest_pair_state():
    L = 3
    s = build_structure(np.ones((L, L), dtype=bool), np.ones((L, L, L), dtype=bool))
    path, score = viterbi(np.zeros((4, L)), np.zeros((4, L, L)), s)
    assert path.tolist() == [0, 0, 0, 0] and score == 0.0
    # [1, 2] and [2, 1] tie: the lower pair-state id (lexicographic here) wins
    state = np.array([[0.0, 1.0, 1.0], [0.0, 1.0, 1.0]])
    edge = np.zeros((2, L, L))
    edge[1, 1, 1] = edge[1, 2, 2] = NEG_INF
    path, score = viterbi(state, edge, s)
    assert path.tolist() == [1, 2] and score == 2.0
    # ... and so does the predecessor listed first: [0, 1, 1] and [2, 1, 1] tie
    state = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
    path, score = viterbi(state, np.zeros((3, L, L)), s)
    assert path.tolist() == [0, 1, 1] and score == 3.0


def test_no_allowed_path():
    rng = np.random.default_rng(3)
    state = rng.normal(size=(4, 3))
    edge = rng.normal(size=(4, 3, 3))
    cases = [
        build_structure(np.zeros((3, 3), dtype=bool), np.ones((3, 3, 3), dtype=bool)),
        build_structure(np.ones((3, 3), dtype=bool), np.zeros((3, 3, 3), dtype=bool)),
        build_structure(np.eye(3, dtype=bool), np.ones((3, 3, 3), dtype=bool)),
    ]
    eye_state = state.copy()
    eye_state[2] = [0.0, NEG_INF, NEG_INF]
    eye_state[1] = [NEG_INF, 0.0, 0.0]  # the only allowed labelings stay on one label
    for s, st in zip(cases, (state, state, eye_state)):
        assert viterbi(st, edge, s)[1] == NEG_INF
        check_marginals(forward_backward(st, edge, s), brute_marginals(st, edge, s))
    # one token: every label is allowed, whatever the structure
    s = cases[0]
    path, score = viterbi(state[:1], edge[:1], s)
    assert path.tolist() == [int(state[0].argmax())] and score == state[0].max()
    log_z, node, pair, trip = forward_backward(state[:1], edge[:1], s)
    assert same_score(log_z, logsumexp(state[0]))
    np.testing.assert_allclose(node[0], np.exp(state[0] - log_z), rtol=1e-14)


# ---------------------------------------------------------------------------------------------
# Forward-backward
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_forward_backward_matches_brute_force(seed):
    state, edge, s = random_model(seed)
    want = brute_marginals(state, edge, s)
    check_marginals(forward_backward(state, edge, s, spare_rows=seed % 2), want)
    if state.shape[0] > 1:
        check_marginals(exact_tier(state, edge, s), want)


@pytest.mark.parametrize("seed", SEEDS[:20])
def test_log_space_tier_matches_brute_force(seed):
    state, edge, s = random_model(seed, scale=800.0)
    want = brute_marginals(state, edge, s)
    # |scores| reach ~1e4 here, so exp(score - log Z) carries ~1e4 eps of error on each side
    check_marginals(forward_backward(state, edge, s), want, atol=1e-10)
    if state.shape[0] > 1:
        check_marginals(exact_tier(state, edge, s), want, atol=1e-10)


def test_log_space_tier_is_used_far_beyond_exp_range():
    # only [1, 1, 1] is allowed and its labels score far below the others'
    L = 2
    triples = np.zeros((L, L, L), dtype=bool)
    triples[1, 1, 1] = True
    s = build_structure(np.ones((L, L), dtype=bool), triples, pred_score=np.array([5.0]))
    state = np.array([[0.0, -1600.0]] * 3)
    edge = np.zeros((3, L, L))
    _, accepted = scaled_tier(state, edge, s)
    assert not accepted
    got = forward_backward(state, edge, s)
    check_marginals(got, brute_marginals(state, edge, s))
    assert got[0] == pytest.approx(-4800.0 + 5.0)


def _long_model(rng, T, L, scale, p_pair=0.5, p_triple=0.7):
    allowed = rng.random((L, L)) < p_pair
    np.fill_diagonal(allowed, True)
    triples = rng.random((L, L, L)) < p_triple
    for i in range(L):
        triples[i, i, i] = True  # staying on a label is always allowed: a feasible path
    s = build_structure(allowed, triples, rng=rng)
    s = s._replace(pred_score=rng.normal(size=s.pred_src.shape[0]) * scale)
    state = rng.normal(size=(T, L)) * scale
    edge = rng.normal(size=(T, L, L)) * scale
    return state, edge, s


@pytest.mark.parametrize("scale", [0.1, 1.0, 10.0])
def test_scaled_tier_agrees_with_log_space_on_long_chains(scale):
    # too long to enumerate: the scaled tier is accepted and agrees with the log-space one
    rng = np.random.default_rng(int(scale * 10))
    T, L = 60, 8
    state, edge, s = _long_model(rng, T, L, scale)
    state[rng.random((T, L)) < 0.1] = NEG_INF
    state[:, 0] = 0.0
    assert scaled_tier(state, edge, s)[1]
    got = forward_backward(state, edge, s)
    want = exact_tier(state, edge, s)
    assert same_score(got[0], want[0])
    for x, y in zip(got[1:], want[1:]):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-12)
    _, node, pair, trip = got
    np.testing.assert_allclose(node.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(pair[1:].sum(axis=1), node[1:], rtol=0, atol=1e-12)
    np.testing.assert_allclose(pair[1:].sum(axis=2), node[:-1], rtol=0, atol=1e-12)
    # summed over c, the triples (a, b, c) are the pairs (a, b) at t = 1..T-2
    by_pair = np.zeros((L, L))
    src_a = s.pair_a[s.pred_src]
    src_b = s.pair_b[s.pred_src]
    np.add.at(by_pair, (src_a, src_b), trip)
    np.testing.assert_allclose(by_pair, pair[1:-1].sum(axis=0), rtol=0, atol=1e-10)


# ---------------------------------------------------------------------------------------------
# Everything allowed and no triple scores: the first-order kernels
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_unrestricted_chain_equals_first_order_kernels(seed):
    rng = np.random.default_rng(seed)
    T, L = (30, 9) if seed < 2 else (int(rng.integers(1, 6)), int(rng.integers(1, 5)))
    state = rng.normal(size=(T, L)) * 3
    state[rng.random((T, L)) < 0.1] = NEG_INF
    edge = rng.normal(size=(T, L, L))
    edge[rng.random((T, L, L)) < 0.2] = NEG_INF
    s = build_structure(np.ones((L, L), dtype=bool), np.ones((L, L, L), dtype=bool))

    want = np.empty(T, dtype=np.int32)
    want_score = pair_viterbi_into(state, edge, NO_GOLD, 0.0, want)
    path, score = viterbi(state, edge, s)
    assert same_score(score, want_score)
    if want_score > NEG_INF:  # continuous scores: no ties, the same path
        np.testing.assert_array_equal(path, want)

    node, pair = np.empty((T, L)), np.empty((T, L, L))
    log_z = pair_forward_backward(
        state,
        edge,
        np.ones((T, L), dtype=bool),
        fb_tables(edge[0]),
        pair_fb_buffers(T, L),
        node,
        pair,
    )
    got_z, got_node, got_pair, _ = forward_backward(state, edge, s)
    assert same_score(got_z, log_z)
    np.testing.assert_allclose(got_node, node, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(got_pair, pair, rtol=1e-12, atol=1e-300)


# ---------------------------------------------------------------------------------------------
# Tables and buffers
# ---------------------------------------------------------------------------------------------


def test_tables_and_buffers_have_the_documented_contents():
    rng = np.random.default_rng(0)
    state, edge, s = _long_model(rng, 6, 4, 3.0)
    P, K = s.pair_a.shape[0], s.pred_src.shape[0]
    ek, shift, dst = order2_tables(s.pred_score, s.pred_ptr, P)
    assert ek.shape == (K,) and shift.shape == (P,) and dst.dtype == np.int32
    for q in range(P):
        k = slice(s.pred_ptr[q], s.pred_ptr[q + 1])
        assert (dst[k] == q).all()
        assert shift[q] == s.pred_score[k].max() and ek[k].max() == 1.0
        np.testing.assert_allclose(ek[k], np.exp(s.pred_score[k] - shift[q]), rtol=1e-15)
    shapes = [b.shape for b in order2_buffers(5, 3, P, K)]
    assert shapes == [(5, P)] * 3 + [(5,)] * 3 + [(P,)] * 2 + [(K,)]
