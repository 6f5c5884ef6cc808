"""Every inference kernel against brute-force enumeration of all L^T paths.

Lattices are small (T <= 5, L <= 4) so that all paths can be listed; scores are random floats
with some entries replaced by -inf (forbidden labels and transitions), including lattices where
every path is forbidden and sentences of one token. The batched kernels are checked against
the single-sentence ones, and the public wrappers' input checks are exercised at the end.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from tagger.inference import (
    forward_backward,
    forward_backward_batch,
    loss_augmented_viterbi,
    loss_augmented_viterbi_batch,
    second_best_viterbi,
    sum_product,
    viterbi,
    viterbi_batch,
)

from _brute import NEG_INF, labelings, marginals, path_score, path_scores

# the first call of each kernel compiles it, so deadlines are off
SETTINGS = settings(deadline=None, max_examples=150)
BATCH_SETTINGS = settings(deadline=None, max_examples=60)


def same_score(a: float, b: float) -> bool:
    """Equal scores, -inf included (float rounding allowed: paths sum in other orders)."""
    if a == NEG_INF or b == NEG_INF:
        return a == b
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


# ---------------------------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------------------------

# how many entries become -inf: none, a few, about half, or all of them
_MASKS = {
    "none": st.just(False),
    "few": st.sampled_from([False, False, False, True]),
    "half": st.booleans(),
    "all": st.just(True),
}


@st.composite
def score_arrays(draw, shape, scale):
    values = draw(
        arrays(
            np.float64,
            shape,
            elements=st.floats(-scale, scale, allow_nan=False, allow_infinity=False),
        )
    )
    mode = draw(st.sampled_from(["none", "none", "few", "few", "half", "all"]))
    mask = draw(arrays(np.bool_, shape, elements=_MASKS[mode]))
    values[mask] = NEG_INF
    return values


@st.composite
def lattices(draw, max_t=5, max_l=4):
    T = draw(st.integers(1, max_t))
    L = draw(st.integers(1, max_l))
    # moderate scores use the scaled forward-backward; scores of +-1000 force its exact tier
    scale = draw(st.sampled_from([1.0, 5.0, 5.0, 1000.0]))
    state = draw(score_arrays((T, L), scale))
    trans = draw(score_arrays((L, L), scale))
    return state, trans


@st.composite
def lattices_with_labels(draw):
    state, trans = draw(lattices())
    T, L = state.shape
    labels = draw(arrays(np.int32, (T,), elements=st.integers(0, L - 1)))
    return state, trans, labels


@st.composite
def batches(draw):
    L = draw(st.integers(1, 4))
    lengths = draw(st.lists(st.integers(0, 5), min_size=0, max_size=8))
    if lengths:
        # always include an empty sentence somewhere
        lengths.insert(draw(st.integers(0, len(lengths))), 0)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    N = int(offsets[-1])
    scale = draw(st.sampled_from([1.0, 5.0, 1000.0]))
    state = draw(score_arrays((N, L), scale))
    trans = draw(score_arrays((L, L), scale))
    gold = draw(arrays(np.int32, (N,), elements=st.integers(0, L - 1)))
    return state, offsets, trans, gold


def assert_valid_path(path, T, L):
    assert path.dtype == np.int32
    assert path.shape == (T,)
    assert ((path >= 0) & (path < L)).all()


# ---------------------------------------------------------------------------------------------
# Viterbi
# ---------------------------------------------------------------------------------------------


@SETTINGS
@given(lattices())
def test_viterbi_matches_brute_force(lattice):
    state, trans = lattice
    T, L = state.shape
    best = path_scores(state, trans, labelings(T, L)).max()
    path, score = viterbi(state, trans)
    assert_valid_path(path, T, L)
    assert same_score(score, best)
    assert same_score(path_score(state, trans, path), score)


def test_viterbi_breaks_ties_towards_the_lowest_label():
    path, score = viterbi(np.zeros((4, 3)), np.zeros((3, 3)))
    assert path.tolist() == [0, 0, 0, 0]
    assert score == 0.0
    # two equally good paths, [1, 2] and [2, 1]: the lowest label wins at the last position,
    # then the lowest predecessor
    state = np.array([[0.0, 1.0, 1.0], [0.0, 1.0, 1.0]])
    trans = np.zeros((3, 3))
    trans[1, 1] = trans[2, 2] = NEG_INF
    path, score = viterbi(state, trans)
    assert path.tolist() == [2, 1]
    assert score == 2.0


def test_viterbi_when_every_path_is_forbidden():
    state = np.zeros((3, 2))
    trans = np.full((2, 2), NEG_INF)
    path, score = viterbi(state, trans)
    assert score == NEG_INF
    assert_valid_path(path, 3, 2)


@SETTINGS
@given(lattices_with_labels(), st.sampled_from([0.0, 0.5, 1.0, 2.5]))
def test_loss_augmented_viterbi_matches_brute_force(lattice, loss_scale):
    state, trans, gold = lattice
    T, L = state.shape
    before = state.copy()
    paths = labelings(T, L)
    augmented = path_scores(state, trans, paths) + loss_scale * (paths != gold).sum(axis=1)
    path, score = loss_augmented_viterbi(state, trans, gold, loss_scale)
    assert_valid_path(path, T, L)
    assert same_score(score, augmented.max())
    achieved = path_score(state, trans, path) + loss_scale * int((path != gold).sum())
    assert same_score(achieved, score)
    np.testing.assert_array_equal(state, before)


def test_loss_augmented_viterbi_with_zero_scale_is_viterbi():
    rng = np.random.default_rng(3)
    state = rng.normal(size=(30, 9))
    trans = rng.normal(size=(9, 9))
    gold = rng.integers(0, 9, size=30)
    path, score = loss_augmented_viterbi(state, trans, gold, 0.0)
    best, best_score = viterbi(state, trans)
    np.testing.assert_array_equal(path, best)
    assert score == best_score


# ---------------------------------------------------------------------------------------------
# Second best
# ---------------------------------------------------------------------------------------------


def _check_second_best(state, trans, exclude):
    T, L = state.shape
    path, score = second_best_viterbi(state, trans, exclude)
    if L == 1:
        assert score == NEG_INF
        assert (path == -1).all()
        return
    paths = labelings(T, L)
    others = (paths != exclude).any(axis=1)
    want = path_scores(state, trans, paths[others]).max()
    assert_valid_path(path, T, L)
    assert (path != exclude).any()
    assert same_score(score, want)
    assert same_score(path_score(state, trans, path), score)


@SETTINGS
@given(lattices_with_labels())
def test_second_best_matches_brute_force_for_any_excluded_path(lattice):
    state, trans, exclude = lattice
    _check_second_best(state, trans, exclude)


@SETTINGS
@given(lattices())
def test_second_best_matches_brute_force_excluding_the_best_path(lattice):
    state, trans = lattice
    best, _ = viterbi(state, trans)
    _check_second_best(state, trans, best)


# ---------------------------------------------------------------------------------------------
# Forward-backward
# ---------------------------------------------------------------------------------------------


@SETTINGS
@given(lattices())
def test_forward_backward_matches_brute_force(lattice):
    state, trans = lattice
    T, L = state.shape
    want_z, want_node, want_edge = marginals(state, trans)
    log_z, node, edge = forward_backward(state, trans)
    assert node.shape == (T, L) and edge.shape == (L, L)
    assert same_score(log_z, want_z)
    assert not np.isnan(node).any() and not np.isnan(edge).any()
    if want_z == NEG_INF:
        assert (node == 0).all() and (edge == 0).all()
        return
    np.testing.assert_allclose(node, want_node, rtol=0, atol=1e-9)
    np.testing.assert_allclose(edge, want_edge, rtol=0, atol=1e-9)
    np.testing.assert_allclose(node.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(edge.sum(), T - 1, rtol=0, atol=1e-9)
    assert (node >= 0).all() and (edge >= 0).all()


def _exact_tier(state, trans):
    T, L = state.shape
    node = np.empty((T, L))
    edge = np.empty((L, L))
    work = (np.empty((T, L)), np.empty((T, L)), np.empty(L))
    log_z = sum_product._fb_exact(state, trans, node, edge, *work)
    return log_z, node, edge


def _scaled_tier_accepts(state, trans):
    T, L = state.shape
    tables = sum_product.fb_tables(trans)
    buffers = sum_product.fb_buffers(T, L)
    _, accepted = sum_product._fb_scaled(state, tables, buffers, np.empty((T, L)), np.empty((L, L)))
    return accepted


@pytest.mark.parametrize("scale", [0.1, 1.0, 10.0, 60.0])
@pytest.mark.parametrize("forbidden", [0.0, 0.4])
def test_scaled_forward_backward_agrees_with_log_space_on_long_chains(scale, forbidden):
    # too long to enumerate: the fast scaled tier must be used and agree with the log-space one
    rng = np.random.default_rng(int(scale * 10) + int(forbidden * 100))
    T, L = 60, 12
    state = rng.normal(size=(T, L)) * scale
    trans = rng.normal(size=(L, L)) * scale
    trans[rng.random((L, L)) < forbidden] = NEG_INF
    np.fill_diagonal(trans, 0.0)  # keep at least one feasible path
    assert _scaled_tier_accepts(state, trans)
    log_z, node, edge = forward_backward(state, trans)
    want_z, want_node, want_edge = _exact_tier(state, trans)
    assert abs(log_z - want_z) <= 1e-12 * max(1.0, abs(want_z))
    # the log-space tier loses about eps * |log alpha| per entry, so compare loosely
    np.testing.assert_allclose(node, want_node, rtol=0, atol=1e-9)
    np.testing.assert_allclose(edge, want_edge, rtol=0, atol=1e-9)


def test_forward_backward_survives_scores_far_beyond_exp_range():
    # only the path [1, 1, 1] is allowed by the transitions, and it scores far below the
    # forbidden alternatives' labels: scaled probabilities would underflow to zero
    state = np.array([[0.0, -2000.0], [0.0, -2000.0], [0.0, -2000.0]])
    trans = np.array([[NEG_INF, NEG_INF], [NEG_INF, 5.0]])
    log_z, node, edge = forward_backward(state, trans)
    assert log_z == pytest.approx(-6000.0 + 10.0)
    np.testing.assert_allclose(node, [[0, 1], [0, 1], [0, 1]])
    np.testing.assert_allclose(edge, [[0, 0], [0, 2]])


def test_forward_backward_with_no_feasible_path():
    state = np.zeros((4, 3))
    trans = np.full((3, 3), NEG_INF)
    log_z, node, edge = forward_backward(state, trans)
    assert log_z == NEG_INF
    assert (node == 0).all() and (edge == 0).all()
    # a single token has no transitions, so it is feasible whatever trans says
    log_z, node, edge = forward_backward([[np.log(0.25), np.log(0.75), NEG_INF]], trans)
    assert log_z == pytest.approx(0.0)
    np.testing.assert_allclose(node, [[0.25, 0.75, 0.0]])
    assert (edge == 0).all()


# ---------------------------------------------------------------------------------------------
# Batches equal one sentence at a time
# ---------------------------------------------------------------------------------------------


def _sentences(offsets):
    return [(int(a), int(b)) for a, b in zip(offsets[:-1], offsets[1:])]


def _check_batches(state, offsets, trans, gold):
    labels, scores = viterbi_batch(state, offsets, trans)
    aug_labels, aug_scores = loss_augmented_viterbi_batch(state, offsets, trans, gold, 1.5)
    log_z, node, edge = forward_backward_batch(state, offsets, trans)
    n = len(offsets) - 1
    L = state.shape[1]
    assert labels.shape == aug_labels.shape == (state.shape[0],)
    assert scores.shape == aug_scores.shape == log_z.shape == (n,)
    assert node.shape == state.shape and edge.shape == (n, L, L)
    for s, (a, b) in enumerate(_sentences(offsets)):
        if a == b:
            assert scores[s] == 0.0 and aug_scores[s] == 0.0 and log_z[s] == 0.0
            assert (edge[s] == 0).all()
            continue
        path, score = viterbi(state[a:b], trans)
        np.testing.assert_array_equal(labels[a:b], path)
        assert scores[s] == score
        path, score = loss_augmented_viterbi(state[a:b], trans, gold[a:b], 1.5)
        np.testing.assert_array_equal(aug_labels[a:b], path)
        assert aug_scores[s] == score
        z, nm, em = forward_backward(state[a:b], trans)
        assert log_z[s] == z
        np.testing.assert_array_equal(node[a:b], nm)
        np.testing.assert_array_equal(edge[s], em)


@BATCH_SETTINGS
@given(batches())
def test_batches_equal_single_sentences(batch):
    _check_batches(*batch)


def test_large_batch_equals_single_sentences():
    # enough sentences for several sentences per parallel chunk
    rng = np.random.default_rng(11)
    L = 7
    lengths = rng.integers(0, 30, size=400)
    lengths[::37] = 0
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    N = int(offsets[-1])
    state = rng.normal(size=(N, L)) * 3
    state[rng.random((N, L)) < 0.1] = NEG_INF
    trans = rng.normal(size=(L, L))
    trans[rng.random((L, L)) < 0.2] = NEG_INF
    gold = rng.integers(0, L, size=N).astype(np.int32)
    _check_batches(state, offsets, trans, gold)


def test_empty_batch():
    labels, scores = viterbi_batch(np.zeros((0, 3)), [0], np.zeros((3, 3)))
    assert labels.shape == (0,) and scores.shape == (0,)
    log_z, node, edge = forward_backward_batch(np.zeros((0, 3)), [0, 0], np.zeros((3, 3)))
    assert log_z.tolist() == [0.0] and node.shape == (0, 3) and (edge == 0).all()


# ---------------------------------------------------------------------------------------------
# Wrapper input checks
# ---------------------------------------------------------------------------------------------


def test_wrappers_convert_dtypes_and_layouts():
    rng = np.random.default_rng(5)
    # multiples of 1/8: exact in float32 too
    state = rng.integers(-800, 800, size=(6, 4)) / 8.0
    trans = rng.integers(-800, 800, size=(4, 4)) / 8.0
    want, want_score = viterbi(state, trans)
    for s, t in [
        (state.astype(np.float32), trans.astype(np.float32)),
        (np.asfortranarray(state), np.asfortranarray(trans)),
        (state.tolist(), trans.tolist()),
    ]:
        got, score = viterbi(s, t)
        np.testing.assert_array_equal(got, want)
        assert score == want_score and isinstance(score, float)
    wide = np.zeros((6, 8))
    wide[:, ::2] = state  # a non-contiguous view
    labels, scores = viterbi_batch(wide[:, ::2], np.array([0, 6], dtype=np.int32), trans)
    np.testing.assert_array_equal(labels, want)
    path, _ = loss_augmented_viterbi(state, trans, [0, 1, 2, 3, 0, 1])
    assert path.dtype == np.int32


@pytest.mark.parametrize(
    "state, trans, match",
    [
        (np.zeros(5), np.zeros((5, 5)), r"2-D array of shape \(T, L\); got .* shape \(5,\)"),
        (np.zeros((0, 3)), np.zeros((3, 3)), r"empty sentence .*T >= 1"),
        (np.zeros((3, 0)), np.zeros((0, 0)), r"at least one label"),
        (np.zeros((3, 4)), np.zeros((3, 3)), r"trans must have shape \(L, L\) = \(4, 4\)"),
        (np.zeros((3, 4)), np.zeros(4), r"trans must be a 2-D array"),
        (np.array([[0.0, np.nan]]), np.zeros((2, 2)), r"state contains NaN at \[0, 1\]"),
        (np.array([[0.0, np.inf]]), np.zeros((2, 2)), r"state contains \+inf at \[0, 1\]"),
        (np.zeros((2, 2)), np.array([[0, 0], [np.nan, 0]]), r"trans contains NaN at \[1, 0\]"),
        (np.zeros((2, 2)), np.array([[np.inf, 0.0], [0.0, 0.0]]), r"trans contains \+inf"),
        ([["a", "b"]], np.zeros((2, 2)), r"state must be a numeric array"),
    ],
)
def test_bad_lattices_are_rejected(state, trans, match):
    for call in (
        lambda: viterbi(state, trans),
        lambda: forward_backward(state, trans),
        lambda: second_best_viterbi(state, trans, np.zeros(len(state), dtype=np.int32)),
    ):
        with pytest.raises(ValueError, match=match):
            call()


def test_minus_inf_is_accepted():
    state = np.array([[0.0, NEG_INF], [NEG_INF, 0.0]])
    path, score = viterbi(state, np.zeros((2, 2)))
    assert path.tolist() == [0, 1] and score == 0.0


@pytest.mark.parametrize(
    "labels, match",
    [
        ([0, 1, 4], r"labels must lie in \[0, 4\) .* found 4 at position 2"),
        ([0, -1, 2], r"found -1 at position 1"),
        ([0, 1], r"shape \(3,\), one label per row"),
        ([0.0, 1.0, 2.0], r"integer labels; got dtype float64"),
    ],
)
def test_bad_labels_are_rejected(labels, match):
    state = np.zeros((3, 4))
    trans = np.zeros((4, 4))
    with pytest.raises(ValueError, match=match):
        loss_augmented_viterbi(state, trans, labels)
    with pytest.raises(ValueError, match=match):
        second_best_viterbi(state, trans, labels)
    with pytest.raises(ValueError, match=match):
        loss_augmented_viterbi_batch(state, [0, 3], trans, labels)


@pytest.mark.parametrize("loss_scale", [np.nan, np.inf, "big"])
def test_bad_loss_scale_is_rejected(loss_scale):
    with pytest.raises(ValueError, match="loss_scale must be a finite number"):
        loss_augmented_viterbi(np.zeros((2, 2)), np.zeros((2, 2)), [0, 1], loss_scale)


@pytest.mark.parametrize(
    "offsets, match",
    [
        ([1, 5], r"offsets\[0\] must be 0; got 1"),
        ([0, 4], r"offsets\[-1\] must equal the number of rows of state \(N = 5\); got 4"),
        ([0, 3, 2, 5], r"non-decreasing; got offsets\[1\] = 3 > offsets\[2\] = 2"),
        ([], r"1-D array of n \+ 1 sentence boundaries"),
        ([[0, 5]], r"1-D array of n \+ 1 sentence boundaries"),
        ([0.0, 5.0], r"integer row indices; got dtype float64"),
    ],
)
def test_bad_offsets_are_rejected(offsets, match):
    state = np.zeros((5, 2))
    trans = np.zeros((2, 2))
    gold = np.zeros(5, dtype=np.int32)
    for call in (
        lambda: viterbi_batch(state, offsets, trans),
        lambda: loss_augmented_viterbi_batch(state, offsets, trans, gold),
        lambda: forward_backward_batch(state, offsets, trans),
    ):
        with pytest.raises(ValueError, match=match):
            call()
