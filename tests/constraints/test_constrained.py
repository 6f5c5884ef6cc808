"""Constrained decoding against brute-force enumeration of every labeling of tiny chains."""

from __future__ import annotations

import numpy as np
import pytest

from tagger import jit
from tagger.chain.second_order import SecondOrder
from tagger.constraints import ConstraintSet, ViolationState
from tagger.constraints.decoding import constrained_decode, decode_sentence, decoding_plan
from tagger.constraints.expanded_viterbi import no_order2

from _brute import labelings, path_score, path_scores
from _rule_texts import COUNTS, HARD, HARD_ENDS, LABELS, SEGMENT_RULES, WORDS


def _allowed(cc, toks):
    """Every labeling of the tokens (one row each) and whether it meets every rule: all of
    them at once, as one corpus of L^T sequences."""
    ys = labelings(len(toks), len(LABELS), np.int32)
    st = ViolationState(cc, cc.indicators([toks] * len(ys)), ys.ravel())
    return ys, ~np.any((st.phi > cc.hi) | (st.phi < cc.lo), axis=1)


def _brute_best(state, trans, cc, toks):
    ys, ok = _allowed(cc, toks)
    if not ok.any():
        return -np.inf
    return float(path_scores(state, trans, ys)[ok].max())


@pytest.mark.parametrize("text", [HARD, HARD_ENDS, SEGMENT_RULES, COUNTS])
def test_hard_constraints_exact_against_brute_force(text):
    cc = ConstraintSet.from_text(text).compile(LABELS)
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(60):
        T = int(rng.integers(1, 7))
        toks = [WORDS[i] for i in rng.integers(0, len(WORDS), T)]
        state = rng.normal(size=(T, len(LABELS)))
        trans = rng.normal(size=(len(LABELS), len(LABELS)))
        ti = cc.indicators([toks])
        y, feasible = constrained_decode(state, np.array([0, T]), trans, cc, ti)
        best = _brute_best(state, trans, cc, toks)
        if best == -np.inf:
            assert not feasible[0]
            continue
        checked += 1
        assert feasible[0]
        assert ViolationState(cc, ti, y).penalty() == 0
        if text is not COUNTS:  # every rule is enforced by the expanded Viterbi: exact
            assert path_score(state, trans, y) == pytest.approx(best, abs=1e-9)
        else:  # count rules: label switching finds a feasible labeling, at most the best
            assert path_score(state, trans, y) <= best + 1e-9
    assert checked > 30


def test_soft_rules_give_a_local_optimum_of_score_minus_penalty():
    text = HARD.replace("hard = true", "hard = false\nweight = 0.8")
    cc = ConstraintSet.from_text(text).compile(LABELS)
    rng = np.random.default_rng(5)
    for _ in range(30):
        T = int(rng.integers(2, 7))
        toks = [WORDS[i] for i in rng.integers(0, len(WORDS), T)]
        state = rng.normal(size=(T, len(LABELS)))
        trans = rng.normal(size=(len(LABELS), len(LABELS)))
        ti = cc.indicators([toks])
        y, _ = constrained_decode(state, np.array([0, T]), trans, cc, ti)

        def objective(lab, state=state, trans=trans, ti=ti):
            return path_score(state, trans, lab) - ViolationState(cc, ti, lab).penalty()

        here = objective(y)
        for t in range(T):
            for new in range(len(LABELS)):
                z = y.copy()
                z[t] = new
                assert objective(z) <= here + 1e-9
        plain, _ = constrained_decode(
            state,
            np.array([0, T]),
            trans,
            ConstraintSet.from_text(
                HARD.replace("hard = true", "hard = false\nweight = 0.0")
            ).compile(LABELS),
            ti,
        )
        assert here >= objective(plain) - 1e-9


def test_infeasible_sequences_get_the_fewest_broken_rules_not_plain_viterbi():
    # when no labeling meets every hard rule, the decoder returns the best labeling among those
    # breaking the fewest token / change rules (one-segment rules kept): brute force agrees
    from tagger.constraints import SEGMENTS

    cc = ConstraintSet.from_text(HARD).compile(LABELS)
    seg = np.array([cc.kind[c] == SEGMENTS for c in range(cc.n_instance)])
    W = 1e3
    rng = np.random.default_rng(11)
    checked = 0
    for _ in range(400):
        T = int(rng.integers(2, 7))
        toks = [WORDS[i] for i in rng.integers(0, len(WORDS), T)]
        if _brute_best(np.zeros((T, len(LABELS))), np.zeros((4, 4)), cc, toks) > -np.inf:
            continue
        state = rng.normal(size=(T, len(LABELS)))
        trans = rng.normal(size=(len(LABELS), len(LABELS)))
        ti = cc.indicators([toks])
        y, feasible = constrained_decode(state, np.array([0, T]), trans, cc, ti, hard_weight=W)
        assert not feasible[0]
        ys = labelings(T, len(LABELS), np.int32)
        st = ViolationState(cc, cc.indicators([toks] * len(ys)), ys.ravel())
        d = np.maximum(st.phi - cc.hi, 0) + np.maximum(cc.lo - st.phi, 0)
        scores = path_scores(state, trans, ys) - W * d[:, ~seg].sum(axis=1)
        scores[d[:, seg].sum(axis=1) > 0] = -np.inf
        mine = ViolationState(cc, ti, y)
        dm = np.maximum(mine.phi - cc.hi, 0) + np.maximum(cc.lo - mine.phi, 0)
        assert dm[0, seg].sum() == 0
        assert path_score(state, trans, y) - W * dm[0, ~seg].sum() == pytest.approx(
            scores.max(), abs=1e-6
        )
        checked += 1
    assert checked >= 10


def _edge_scores(state, edge, ys):
    T = state.shape[0]
    scores = state[np.arange(T), ys].sum(axis=1)
    for t in range(1, T):
        scores = scores + edge[t][ys[:, t - 1], ys[:, t]]
    return scores


@pytest.mark.parametrize("text", [HARD, HARD_ENDS, SEGMENT_RULES])
def test_position_dependent_transitions_exact_against_brute_force(text):
    """decode_sentence with transitions that vary by position (a model with label-pair
    templates): the best labeling that meets every hard rule, as enumeration finds it."""
    cc = ConstraintSet.from_text(text).compile(LABELS)
    rng = np.random.default_rng(11)
    checked = 0
    for _ in range(60):
        T = int(rng.integers(1, 7))
        toks = [WORDS[i] for i in rng.integers(0, len(WORDS), T)]
        state = rng.normal(size=(T, len(LABELS)))
        edge = rng.normal(size=(T, len(LABELS), len(LABELS)))
        ti = cc.indicators([toks])
        plan = decoding_plan(cc, ti, T)
        y = np.full(T, -1, np.int32)
        feasible = decode_sentence(state, edge, no_order2(len(LABELS)), 0, plan.ind, plan.kernel, y)
        ys, ok = _allowed(cc, toks)
        if not ok.any():
            assert not feasible
            continue
        checked += 1
        assert feasible and ViolationState(cc, ti, y).penalty() == 0
        best = float(_edge_scores(state, edge, ys)[ok].max())
        assert float(_edge_scores(state, edge, y[None, :])[0]) == pytest.approx(best, abs=1e-9)
    assert checked > 30


def _random_order2(rng, L):
    """A second-order lattice over L labels with a random half of the label pairs allowed (every
    label keeps a pair out of it, so long labelings exist), the order-2 tuple the decoder takes,
    and the dense (L, L, L) triple scores it encodes (0 for a triple without a weight)."""
    codes = np.flatnonzero(rng.random(L * L) < 0.5)
    codes = np.union1d(codes, np.arange(L) * L + rng.integers(0, L, L))
    so = SecondOrder(L, codes, np.zeros(0, np.int64))
    lat = so.lattice(0)
    tri = np.zeros((L, L, L))
    weighted = rng.random((L, L, L)) < 0.7
    tri[weighted] = rng.normal(size=int(weighted.sum()))
    pred_score = np.empty(len(lat.pred_src))
    for q in range(len(lat.pair_a)):
        for k in range(lat.pred_ptr[q], lat.pred_ptr[q + 1]):
            pred_score[k] = tri[lat.pair_a[lat.pred_src[k]], lat.pair_a[q], lat.pair_b[q]]
    o2 = (True, lat.pair_a, lat.pair_b, lat.pair_id, lat.pred_ptr, lat.pred_src, pred_score)
    allowed = np.zeros((L, L), bool)
    allowed[codes // L, codes % L] = True
    return o2, allowed, tri


def _order2_scores(state, edge, allowed, tri, ys):
    """F of each labeling (row of ys) of a second-order chain, -inf for one with a pair that is
    not allowed: by the definition, from the dense arrays."""
    scores = _edge_scores(state, edge, ys)
    T = ys.shape[1]
    for t in range(1, T):
        scores[~allowed[ys[:, t - 1], ys[:, t]]] = -np.inf
    for t in range(2, T):
        scores = scores + tri[ys[:, t - 2], ys[:, t - 1], ys[:, t]]
    return scores


def _order2_decoded(rng, cc, shortest: int):
    """A random sentence of ``shortest``..6 words with random state and transition scores on
    a random second-order lattice (:func:`_random_order2`), decoded under ``cc``: (words,
    state, edge, allowed pairs, dense triple scores, indicators, labels, feasible)."""
    L = len(LABELS)
    T = int(rng.integers(shortest, 7))
    toks = [WORDS[i] for i in rng.integers(0, len(WORDS), T)]
    state = rng.normal(size=(T, L))
    edge = rng.normal(size=(T, L, L))
    o2, allowed, tri = _random_order2(rng, L)
    ti = cc.indicators([toks])
    plan = decoding_plan(cc, ti, T)
    y = np.full(T, -1, np.int32)
    feasible = decode_sentence(state, edge, o2, 0, plan.ind, plan.kernel, y)
    return toks, state, edge, allowed, tri, ti, y, feasible


@pytest.mark.parametrize("text", [HARD, HARD_ENDS, SEGMENT_RULES])
def test_second_order_chains_exact_against_brute_force(text):
    """decode_sentence on a second-order chain's pair-state lattice: the best allowed labeling
    (every label pair allowed) that meets every hard rule, with its triples scored, as
    enumeration finds it; -inf and infeasible when no allowed labeling meets the rules."""
    cc = ConstraintSet.from_text(text).compile(LABELS)
    rng = np.random.default_rng(17)
    checked = 0
    for _ in range(80):
        toks, state, edge, allowed, tri, ti, y, feasible = _order2_decoded(rng, cc, 1)
        ys, ok = _allowed(cc, toks)
        scores = _order2_scores(state, edge, allowed, tri, ys)
        ok &= scores > -np.inf
        if not ok.any():
            assert not feasible
            continue
        checked += 1
        assert feasible and ViolationState(cc, ti, y).penalty() == 0
        mine = float(_order2_scores(state, edge, allowed, tri, y[None, :])[0])
        assert mine == pytest.approx(float(scores[ok].max()), abs=1e-9)
    assert checked > 25  # of 80 (40-78 over 300 seeds of the draws)


def test_second_order_soft_rules_give_a_local_optimum_of_score_minus_penalty():
    """With soft rules, label switching on a second-order chain ends where no single label
    change (to another allowed labeling) raises F - penalty, triples counted."""
    text = HARD.replace("hard = true", "hard = false\nweight = 0.8")
    cc = ConstraintSet.from_text(text).compile(LABELS)
    L = len(LABELS)
    rng = np.random.default_rng(23)
    for _ in range(40):
        toks, state, edge, allowed, tri, ti, y, _ = _order2_decoded(rng, cc, 2)
        T = len(toks)

        def objective(lab, state=state, edge=edge, allowed=allowed, tri=tri, ti=ti):
            f = float(_order2_scores(state, edge, allowed, tri, lab[None, :])[0])
            return f - ViolationState(cc, ti, lab).penalty()

        here = objective(y)
        assert here > -np.inf
        for t in range(T):
            for new in range(L):
                z = y.copy()
                z[t] = new
                assert objective(z) <= here + 1e-9


@pytest.mark.parametrize("text", [HARD, SEGMENT_RULES])
def test_the_parallel_kernel_decodes_a_batch_as_the_serial_twin_does(text):
    """A batch decoded by the serial twin and by the parallel kernel (which runs from
    PARALLEL_MIN_BYTES of arrays, on large corpora): the same labels and feasibility. The
    parallel loop once failed to compile, on the plan's nested records."""
    cc = ConstraintSet.from_text(text).compile(LABELS)
    rng = np.random.default_rng(31)
    toks = [
        [WORDS[i] for i in rng.integers(0, len(WORDS), int(n))] for n in rng.integers(1, 9, 200)
    ]
    offsets = np.concatenate([[0], np.cumsum([len(t) for t in toks])]).astype(np.int64)
    state = rng.normal(size=(int(offsets[-1]), len(LABELS)))
    trans = rng.normal(size=(len(LABELS), len(LABELS)))
    ti = cc.indicators(toks)
    before = jit.parallel_min_bytes()
    try:
        jit.set_parallel_min_bytes(jit.PARALLEL_MIN_BYTES)
        serial = constrained_decode(state, offsets, trans, cc, ti)
        jit.set_parallel_min_bytes(0)
        parallel = constrained_decode(state, offsets, trans, cc, ti)
    finally:
        jit.set_parallel_min_bytes(before)
    assert serial[0].tobytes() == parallel[0].tobytes()
    assert serial[1].tobytes() == parallel[1].tobytes()
