"""The position-dependent chain kernels (tagger.inference.pair_chain) against brute-force
enumeration of all L^T paths.

Lattices are small (T <= 5, L <= 4) and drawn from fixed seeds: a shared matrix ``trans`` and
per-position matrices ``edge[t]`` that differ from it in some columns, with some entries of
state, trans and edge at -inf (including lattices where every path is forbidden). Forward-
backward runs with ``changed`` all True and with it marking exactly the differing columns.
With ``edge[t] == trans`` everywhere the kernels must agree with max_product and sum_product.
"""

from __future__ import annotations

import numpy as np
import pytest

from tagger.inference import pair_chain
from tagger.inference.max_product import loss_augmented_viterbi_into, viterbi_into
from tagger.inference.pair_chain import (
    pair_fb_buffers,
    pair_forward_backward,
    pair_viterbi_into,
)
from tagger.inference.sum_product import fb_tables, forward_backward_into

from _brute import NEG_INF, labelings, logsumexp

SEEDS = list(range(40))
NO_GOLD = np.empty(0, dtype=np.int32)


# ---------------------------------------------------------------------------------------------
# Lattices and the brute-force reference
# ---------------------------------------------------------------------------------------------


def _with_forbidden(rng, x, p):
    x = x.copy()
    x[rng.random(x.shape) < p] = NEG_INF
    return x


def random_lattice(seed, scale=None, max_t=5, max_l=4):
    """(state, trans, edge) from ``seed``: edge[t] is trans with some columns redrawn (a few of
    them entirely -inf), and some entries of all three at -inf."""
    rng = np.random.default_rng(seed)
    T = int(rng.integers(1, max_t + 1))
    L = int(rng.integers(1, max_l + 1))
    if scale is None:
        scale = float(rng.choice([1.0, 5.0, 5.0, 50.0]))
    p = float(rng.choice([0.0, 0.0, 0.15, 0.4]))
    state = _with_forbidden(rng, rng.normal(size=(T, L)) * scale, p)
    trans = _with_forbidden(rng, rng.normal(size=(L, L)) * scale, p)
    edge = np.repeat(trans[None], T, axis=0)
    for t in range(T):
        for j in range(L):
            draw = rng.random()
            if draw < 0.4:
                edge[t, :, j] = _with_forbidden(rng, rng.normal(size=L) * scale, p)
            elif draw < 0.45:
                edge[t, :, j] = NEG_INF
            elif draw < 0.55:
                edge[t, int(rng.integers(L)), j] += rng.normal() * scale
    return state, trans, np.ascontiguousarray(edge)


def exact_changed(edge, trans):
    """changed[t, j]: column j of edge[t] differs from that of trans (edge[0] is ignored)."""
    changed = (edge != trans[None]).any(axis=1)
    changed[0] = False
    return changed


def path_scores(state, edge, paths):
    """F(y) of each row of ``paths``."""
    T = state.shape[0]
    scores = state[np.arange(T), paths].sum(axis=1)
    for t in range(1, T):
        scores = scores + edge[t, paths[:, t - 1], paths[:, t]]
    return scores


def brute_marginals(state, edge):
    """(log Z, node marginals, per-position edge marginals) by enumeration."""
    T, L = state.shape
    paths = labelings(T, L)
    scores = path_scores(state, edge, paths)
    log_z = logsumexp(scores)
    node = np.zeros((T, L))
    pair = np.zeros((T, L, L))
    if log_z == NEG_INF:
        return log_z, node, pair
    p = np.exp(scores - log_z)
    for t in range(T):
        np.add.at(node[t], paths[:, t], p)
    for t in range(1, T):
        np.add.at(pair[t], (paths[:, t - 1], paths[:, t]), p)
    return log_z, node, pair


def same_score(a, b, rel=1e-9):
    if a == NEG_INF or b == NEG_INF:
        return a == b
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def viterbi(state, edge, gold=NO_GOLD, loss_scale=0.0):
    out = np.full(state.shape[0], -7, dtype=np.int32)
    score = pair_viterbi_into(state, edge, gold, loss_scale, out)
    L = state.shape[1]
    assert ((out >= 0) & (out < L)).all()
    return out, score


def forward_backward(state, edge, trans, changed, spare_rows=0):
    """pair_forward_backward with buffers larger than the sentence and outputs full of NaN,
    as a caller's reused arrays may be."""
    T, L = state.shape
    buffers = pair_fb_buffers(T + spare_rows, L)
    for buf in buffers:
        buf[:] = np.nan
    node = np.full((T, L), np.nan)
    pair = np.full((T, L, L), np.nan)
    log_z = pair_forward_backward(
        state, edge, np.ascontiguousarray(changed), fb_tables(trans), buffers, node, pair
    )
    assert not np.isnan(node).any() and not np.isnan(pair).any()
    return log_z, node, pair


def scaled_tier_accepts(state, edge, trans, changed):
    T, L = state.shape
    _, accepted = pair_chain._pair_fb_scaled(
        state,
        edge,
        changed,
        fb_tables(trans),
        pair_fb_buffers(T, L),
        np.empty((T, L)),
        np.empty((T, L, L)),
    )
    return accepted


# ---------------------------------------------------------------------------------------------
# Viterbi
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_pair_viterbi_matches_brute_force(seed):
    state, _, edge = random_lattice(seed)
    T, L = state.shape
    best = path_scores(state, edge, labelings(T, L)).max()
    path, score = viterbi(state, edge)
    assert same_score(score, best), (score, best)
    assert same_score(path_scores(state, edge, path[None].astype(np.int64))[0], score)


@pytest.mark.parametrize("loss_scale", [0.0, 0.5, 2.5])
@pytest.mark.parametrize("seed", SEEDS[:20])
def test_loss_augmented_pair_viterbi_matches_brute_force(seed, loss_scale):
    state, _, edge = random_lattice(seed)
    T, L = state.shape
    gold = np.random.default_rng(seed + 1000).integers(0, L, T).astype(np.int32)
    before = state.copy()
    paths = labelings(T, L)
    augmented = path_scores(state, edge, paths) + loss_scale * (paths != gold).sum(axis=1)
    path, score = viterbi(state, edge, gold, loss_scale)
    assert same_score(score, augmented.max())
    achieved = path_scores(state, edge, path[None].astype(np.int64))[0]
    assert same_score(achieved + loss_scale * int((path != gold).sum()), score)
    np.testing.assert_array_equal(state, before)


def test_pair_viterbi_breaks_ties_towards_the_lowest_label():
    path, score = viterbi(np.zeros((4, 3)), np.zeros((4, 3, 3)))
    assert path.tolist() == [0, 0, 0, 0] and score == 0.0
    # [1, 2] and [2, 1] tie: the lowest label wins at the last position, then the lowest
    # predecessor
    state = np.array([[0.0, 1.0, 1.0], [0.0, 1.0, 1.0]])
    edge = np.zeros((2, 3, 3))
    edge[1, 1, 1] = edge[1, 2, 2] = NEG_INF
    path, score = viterbi(state, edge)
    assert path.tolist() == [2, 1] and score == 2.0


def test_pair_viterbi_when_every_path_is_forbidden():
    edge = np.zeros((3, 2, 2))
    edge[2] = NEG_INF
    path, score = viterbi(np.zeros((3, 2)), edge)
    assert score == NEG_INF


# ---------------------------------------------------------------------------------------------
# Forward-backward
# ---------------------------------------------------------------------------------------------


def _check_marginals(got, want):
    log_z, node, pair = got
    want_z, want_node, want_pair = want
    assert same_score(log_z, want_z), (log_z, want_z)
    if want_z == NEG_INF:
        assert (node == 0).all() and (pair == 0).all()
        return
    np.testing.assert_allclose(node, want_node, rtol=0, atol=1e-9)
    np.testing.assert_allclose(pair, want_pair, rtol=0, atol=1e-9)
    assert (pair[0] == 0).all() and (node >= 0).all() and (pair >= 0).all()
    # the log-space tier loses about eps * |log alpha| per entry: loose, like the comparisons
    np.testing.assert_allclose(node.sum(axis=1), 1.0, rtol=0, atol=1e-9)
    # pair[t] sums to node[t] over the previous label and to node[t-1] over the next one
    np.testing.assert_allclose(pair[1:].sum(axis=1), node[1:], rtol=0, atol=1e-9)
    np.testing.assert_allclose(pair[1:].sum(axis=2), node[:-1], rtol=0, atol=1e-9)


def _agree(a, b, rel=1e-12):
    assert same_score(a[0], b[0], rel)
    for x, y in zip(a[1:], b[1:]):
        np.testing.assert_allclose(x, y, rtol=rel, atol=1e-300)


@pytest.mark.parametrize("seed", SEEDS)
def test_pair_forward_backward_matches_brute_force(seed):
    state, trans, edge = random_lattice(seed)
    T, L = state.shape
    want = brute_marginals(state, edge)
    every = forward_backward(state, edge, trans, np.ones((T, L), dtype=bool), spare_rows=2)
    exact = forward_backward(state, edge, trans, exact_changed(edge, trans))
    _check_marginals(every, want)
    _check_marginals(exact, want)
    _agree(every, exact)


def test_pair_forward_backward_with_no_feasible_path():
    rng = np.random.default_rng(7)
    state = rng.normal(size=(4, 3))
    trans = rng.normal(size=(3, 3))
    edge = np.repeat(trans[None], 4, axis=0)
    edge[2] = NEG_INF  # nothing gets from position 1 to position 2
    for changed in (np.ones((4, 3), dtype=bool), exact_changed(edge, trans)):
        log_z, node, pair = forward_backward(state, edge, trans, changed)
        assert log_z == NEG_INF and (node == 0).all() and (pair == 0).all()
    state[1] = NEG_INF  # a token with no label: the forward pass stops there
    shared = np.ascontiguousarray(trans[None].repeat(4, 0))
    log_z, node, pair = forward_backward(state, shared, trans, np.zeros((4, 3), dtype=bool))
    assert log_z == NEG_INF and (node == 0).all() and (pair == 0).all()
    # one token has no transitions: feasible whatever edge says
    log_z, node, pair = forward_backward(
        np.array([[np.log(0.25), np.log(0.75), NEG_INF]]),
        edge[:1],
        trans,
        np.ones((1, 3), dtype=bool),
    )
    assert log_z == pytest.approx(0.0)
    np.testing.assert_allclose(node, [[0.25, 0.75, 0.0]])
    assert (pair == 0).all()


@pytest.mark.parametrize("seed", SEEDS[:20])
def test_log_space_tier_matches_brute_force(seed):
    state, trans, edge = random_lattice(seed, scale=800.0)
    T, L = state.shape
    want = brute_marginals(state, edge)
    for changed in (np.ones((T, L), dtype=bool), exact_changed(edge, trans)):
        _check_marginals(forward_backward(state, edge, trans, changed), want)


def test_log_space_tier_is_used_far_beyond_exp_range():
    # only [1, 1, 1] is allowed, and it scores far below the forbidden alternatives' labels
    state = np.array([[0.0, -800.0], [0.0, -800.0], [0.0, -800.0]]) * 2
    trans = np.zeros((2, 2))
    edge = np.repeat(trans[None], 3, axis=0)
    edge[1:] = [[NEG_INF, NEG_INF], [NEG_INF, 5.0]]
    changed = np.ones((3, 2), dtype=bool)
    assert not scaled_tier_accepts(state, edge, trans, changed)
    got = forward_backward(state, edge, trans, changed)
    _check_marginals(got, brute_marginals(state, edge))
    assert got[0] == pytest.approx(-4800.0 + 10.0)


@pytest.mark.parametrize("scale", [0.1, 1.0, 10.0])
def test_scaled_tier_agrees_with_log_space_on_long_chains(scale):
    # too long to enumerate: the scaled tier is accepted and agrees with the log-space one
    rng = np.random.default_rng(int(scale * 10))
    T, L = 60, 12
    state = rng.normal(size=(T, L)) * scale
    trans = rng.normal(size=(L, L)) * scale
    trans[rng.random((L, L)) < 0.3] = NEG_INF
    np.fill_diagonal(trans, 0.0)  # keep at least one feasible path
    edge = np.repeat(trans[None], T, axis=0)
    changed = rng.random((T, L)) < 0.3  # some columns marked but equal: still correct
    cols = np.argwhere(rng.random((T, L)) < 0.2)
    for t, j in cols:
        edge[t, :, j] += rng.normal(size=L) * scale
        changed[t, j] = True
    assert scaled_tier_accepts(state, edge, trans, changed)
    got = forward_backward(state, edge, trans, changed)
    node, pair = np.empty((T, L)), np.empty((T, L, L))
    want_z = pair_chain._pair_fb_exact(
        state, edge, node, pair, np.empty((T, L)), np.empty((T, L)), np.empty(L)
    )
    assert abs(got[0] - want_z) <= 1e-12 * max(1.0, abs(want_z))
    np.testing.assert_allclose(got[1], node, rtol=0, atol=1e-9)
    np.testing.assert_allclose(got[2], pair, rtol=0, atol=1e-9)


# ---------------------------------------------------------------------------------------------
# A shared matrix everywhere: the first-order kernels
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shared_transitions_equal_first_order_kernels(seed):
    rng = np.random.default_rng(seed)
    T, L = 30, 9
    state = rng.normal(size=(T, L)) * 3
    state[rng.random((T, L)) < 0.1] = NEG_INF
    trans = rng.normal(size=(L, L))
    trans[rng.random((L, L)) < 0.2] = NEG_INF
    edge = np.ascontiguousarray(np.repeat(trans[None], T, axis=0))
    gold = rng.integers(0, L, T).astype(np.int32)

    want = np.empty(T, dtype=np.int32)
    want_score = viterbi_into(state, trans, want)
    path, score = viterbi(state, edge)
    np.testing.assert_array_equal(path, want)
    assert score == want_score
    want_score = loss_augmented_viterbi_into(state, trans, gold, 1.5, want)
    path, score = viterbi(state, edge, gold, 1.5)
    np.testing.assert_array_equal(path, want)
    assert score == want_score

    node, summed = np.empty((T, L)), np.empty((L, L))
    log_z = forward_backward_into(state, trans, node, summed)
    for changed in (np.zeros((T, L), dtype=bool), np.ones((T, L), dtype=bool)):
        got_z, got_node, pair = forward_backward(state, edge, trans, changed)
        assert same_score(got_z, log_z, 1e-13)
        np.testing.assert_allclose(got_node, node, rtol=1e-13, atol=1e-300)
        np.testing.assert_allclose(pair.sum(axis=0), summed, rtol=1e-12, atol=1e-300)


def test_pair_fb_buffers_have_the_documented_shapes():
    shapes = [b.shape for b in pair_fb_buffers(5, 3)]
    assert shapes == [(5, 3)] * 3 + [(5,)] * 3 + [(3,)] * 2
