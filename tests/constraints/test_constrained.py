"""Constrained decoding against brute-force enumeration of every labeling of tiny chains."""

from __future__ import annotations

import numpy as np
import pytest

from tagger.constraints import ConstraintSet, ViolationState
from tagger.constraints.decoding import constrained_decode, decode_sentence, decoding_plan

from _brute import labelings, path_score, path_scores

LABELS = ["a", "b", "c", "d"]
WORDS = ["pp", "x", ",", "y", "9", "z", "."]

HARD = """
labels = ["a", "b", "c", "d"]
[defaults]
hard = true
[[instance]]
rule = "start"
labels = ["a", "b"]
[[instance]]
rule = "one-segment"
labels = ["a", "c", "d"]
[[instance]]
rule = "tokens"
words = ["pp"]
take = ["c", "d"]
[[instance]]
rule = "tokens"
pattern = '^[0-9]$'
avoid = ["a"]
[[instance]]
rule = "change-on-punctuation"
"""

#: the rules a segment-free Viterbi enforces exactly once they are token masks: the last label,
#: and the marked tokens of a matched sequence
HARD_ENDS = """
labels = ["a", "b", "c", "d"]
[defaults]
hard = true
[[instance]]
rule = "end"
labels = ["b", "c"]
[[instance]]
rule = "tokens"
sequence = ["x", "y|z"]
take = ["d"]
[[instance]]
rule = "tokens"
sequence = ["<digit>", "<punct>"]
mark = [1]
avoid = ["b"]
[[instance]]
rule = "one-segment"
labels = ["d"]
"""

#: rules about whole segments: what they contain and their order, with a one-segment rule and
#: a token rule that interact with them
SEGMENT_RULES = """
labels = ["a", "b", "c", "d"]
[defaults]
hard = true
[[instance]]
rule = "contains"
labels = ["c"]
pattern = '^[0-9]$'
[[instance]]
rule = "contains"
labels = ["a", "b"]
words = ["x", "y", "z"]
[[instance]]
rule = "order"
before = ["a"]
after = ["c", "d"]
[[instance]]
rule = "order"
before = ["b"]
after = ["a"]
[[instance]]
rule = "one-segment"
labels = ["d"]
[[instance]]
rule = "tokens"
words = ["pp"]
take = ["c", "d"]
"""

COUNTS = """
labels = ["a", "b", "c", "d"]
[[instance]]
rule = "one-segment"
labels = "all"
hard = true
[[instance]]
rule = "count"
labels = ["b"]
max = 1
hard = true
"""


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
        feasible = decode_sentence(state, edge, 0, plan.ind, plan.kernel, y)
        ys, ok = _allowed(cc, toks)
        if not ok.any():
            assert not feasible
            continue
        checked += 1
        assert feasible and ViolationState(cc, ti, y).penalty() == 0
        best = float(_edge_scores(state, edge, ys)[ok].max())
        assert float(_edge_scores(state, edge, y[None, :])[0]) == pytest.approx(best, abs=1e-9)
    assert checked > 30
