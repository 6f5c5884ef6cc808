"""Decoding under constraints: exact Viterbi over an expanded state space, then label switching.

Hard instance constraints that a first-order chain can carry with a little extra state are
enforced *exactly*:

- start rules, word-list / pattern rules and token-property rules (``start``, ``tokens``,
  ``only-inside``) forbid labels at given tokens: -inf state scores;
- ``change-on-punctuation`` forbids label changes at given boundaries: y_t = y_{t-1} there;
- ``one-segment`` (a label forms at most one contiguous segment) needs memory: the lattice
  state becomes (label, set of one-segment labels already left behind), a bit mask of K bits.
  Entering a label whose bit is set is forbidden; leaving a one-segment label sets its bit. The
  Viterbi recursion runs over L * 2^K states (K <= ``MAX_SEGMENT_BITS``), which is exact: every
  labeling corresponds to exactly one path through the expanded lattice, and the ones that
  break a rule have no path. Bits are added lazily: first without any, then only for the
  labels the best path splits (and for the contains / order rules it breaks), until it breaks
  none (the optimum of a relaxation that meets every rule is the optimum), so most sentences
  need a lattice of L or 2L states;
- ``contains`` (every segment of some labels holds a flagged token) and ``order`` (no segment
  of the ``before`` labels after a token of an ``after`` label) add one bit each to that
  state, lazily as well: "the current segment has met a flagged token" (required when the
  segment is left or the sequence ends), "an ``after`` label was seen" (a ``before`` label is
  then forbidden). Past ``MAX_STATE_BITS`` carried bits, label switching takes over.

A sequence for which no labeling meets every hard rule (a year inside a proceedings title
where years must be DATE and DATE must be one segment) is decoded by the same exact Viterbi with
each broken token or change rule costing ``hard_weight`` instead of being forbidden: the best
labeling among those breaking the fewest, not the unconstrained one.

Everything else (hard ``count`` rules, hard one-segment rules beyond ``MAX_SEGMENT_BITS``
labels, and -- when asked -- the soft rules with their penalties) is handled by label switching
from the exact solution: greedy single-label changes that raise F(x, y) - penalties, until none
does (the hill climbing of Balamurugan et al., run deterministically at tag time). Corpus-level
rules do not apply to single sequences and are ignored here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tagger._config import NUMBA_OPTS, NUMBA_PARALLEL_OPTS
from tagger.constraints import (
    CHANGES,
    CONTAINS,
    ORDER,
    SEGMENTS,
    UNARY,
    CompiledConstraints,
    TokenIndicators,
)
from tagger.constraints.penalties import (
    InstanceRules,
    contains_phi,
    instance_penalty,
    order_phi,
    segments_of,
    sequence_phi,
    switch_phi,
)
from tagger.jit import njit, prange

#: one-segment labels carried in the expanded state; 13 citation fields need 13
MAX_SEGMENT_BITS = 14
#: bits the lazily expanded lattice may carry at once, all rules together: L * 2^bits states
#: per token and a back-pointer table of T * L * 2^bits int32 (14 bits, 11 labels, 115 tokens:
#: 83 MB), the most one-segment rules alone could ask for
MAX_STATE_BITS = MAX_SEGMENT_BITS


class SegmentRules(NamedTuple):
    """The hard ``contains`` and ``order`` rules the expanded Viterbi carries a state bit for
    once a best path breaks them."""

    cont_mask: np.ndarray  # bool[n_contains, L]
    cont_row: np.ndarray  # int32[n_contains]
    ord_before: np.ndarray  # bool[n_order, L]
    ord_after: np.ndarray  # bool[n_order, L]


class HardRules(NamedTuple):
    """The hard rules the expanded-state Viterbi enforces exactly: token rules (their label
    masks and indicator rows), the bit of each label in the segment-count state, the indicator
    row of the no-change rule (-1 when there is none), and the segment rules that need a bit
    of their own (``contains``: labels and indicator row; ``order``: before and after labels)."""

    unary_mask: np.ndarray  # bool[n_unary, L]
    unary_row: np.ndarray  # int32[n_unary]
    n_unary: int
    bit: np.ndarray  # int64[L]: -1, or the label's bit in the expanded state
    stay_row: int
    segment: SegmentRules


@njit(**NUMBA_OPTS)
def _advance(m, lab, l2, first, t, bit, ind, seg):
    """The state bits after label ``l2`` at token ``t`` (a column of ``ind``) when the previous
    token had label ``l`` and bits ``m``; -1 when a carried rule forbids the step (``seg``: the
    segment rules and their bits, -1 for a rule not carried).

    A one-segment label's bit is set once its segment is left; a ``contains`` rule's bit says
    that the current segment (of one of its labels) has met a flagged token, and must be set
    when the segment is left; an ``order`` rule's bit says that an ``after`` label was seen."""
    cont_mask, cont_row, cbit, ord_before, ord_after, obit = seg
    m2 = m
    change = first or l2 != lab
    if not first and l2 != lab:
        if bit[lab] >= 0:
            m2 |= 1 << bit[lab]
        if bit[l2] >= 0 and (m2 >> bit[l2]) & 1:
            return -1
    for c in range(cbit.shape[0]):
        q = cbit[c]
        if q < 0:
            continue
        if not first and l2 != lab and cont_mask[c, lab] and not (m >> q) & 1:
            return -1
        if cont_mask[c, l2]:
            if change:
                m2 &= ~(1 << q)
            if ind[cont_row[c], t]:
                m2 |= 1 << q
        else:
            m2 &= ~(1 << q)
    for c in range(obit.shape[0]):
        q = obit[c]
        if q < 0:
            continue
        if ord_before[c, l2] and (m2 >> q) & 1:
            return -1
        if ord_after[c, l2]:
            m2 |= 1 << q
    return m2


@njit(**NUMBA_OPTS)
def _may_end(m, lab, seg):
    """May the sequence end in label ``l`` with bits ``m`` (every carried ``contains`` rule's
    last segment met its flagged token)?"""
    cont_mask, cont_row, cbit, ord_before, ord_after, obit = seg
    for c in range(cbit.shape[0]):
        q = cbit[c]
        if q >= 0 and cont_mask[c, lab] and not (m >> q) & 1:
            return False
    return True


@njit(**NUMBA_OPTS)
def _expanded_viterbi(state, trans, bit, change_cost, ind, a, seg, out):
    """Best path of the (T, L) lattice (tokens a.. of ``ind``) in which a label with
    ``bit[l] >= 0`` may form only one segment, the rules of ``seg`` with a bit are met, and a
    label change at t costs ``change_cost[t]`` (``inf``: y_t = y_{t-1} is forced). Returns the
    score (-inf: no feasible path)."""
    T, L = state.shape
    K = 0
    for lab in range(L):
        if bit[lab] >= 0:
            K += 1
    for q in seg[2]:
        if q >= 0:
            K += 1
    for q in seg[5]:
        if q >= 0:
            K += 1
    M = 1 << K
    S = L * M
    NEG = -np.inf
    cur = np.full(S, NEG)
    nxt = np.empty(S)
    back = np.empty((T, S), np.int32)
    for lab in range(L):
        m0 = _advance(0, lab, lab, True, a, bit, ind, seg)
        if m0 >= 0:
            cur[lab * M + m0] = state[0, lab]
    for t in range(1, T):
        nxt[:] = NEG
        cost = change_cost[t]
        for s in range(S):
            v = cur[s]
            if v == NEG:
                continue
            lab = s // M
            m = s % M
            # stay in label l
            m2 = _advance(m, lab, lab, False, a + t, bit, ind, seg)
            if m2 >= 0:
                cand = v + trans[lab, lab] + state[t, lab]
                j = lab * M + m2
                if cand > nxt[j]:
                    nxt[j] = cand
                    back[t, j] = s
            if cost == np.inf:
                continue
            for l2 in range(L):
                if l2 == lab:
                    continue
                m2 = _advance(m, lab, l2, False, a + t, bit, ind, seg)
                if m2 < 0:
                    continue
                cand = v + trans[lab, l2] + state[t, l2] - cost
                j = l2 * M + m2
                if cand > nxt[j]:
                    nxt[j] = cand
                    back[t, j] = s
        cur, nxt = nxt, cur
    best = NEG
    bs = -1
    for s in range(S):
        if cur[s] > best and _may_end(s % M, s // M, seg):
            best = cur[s]
            bs = s
    if bs < 0:
        return NEG
    for t in range(T - 1, -1, -1):
        out[t] = bs // M
        if t > 0:
            bs = back[t, bs]
    return best


@njit(**NUMBA_OPTS)
def _lazy_expanded_viterbi(state, trans, bit, change_cost, ind, a, rules, out):
    """:func:`_expanded_viterbi` with one-segment bits added only for labels that the current
    best path splits, and a bit for a ``contains`` / ``order`` rule of ``rules`` (a
    :class:`SegmentRules`) only once the best path breaks it. The relaxed
    problem's best path is an upper bound; once it breaks no rule it is the exact optimum (a
    cutting-plane argument), and the lattice stays small: L * 2^(rules that ever needed a bit),
    usually 0-3 bits. Returns the score and whether the path meets every rule (False when the
    lattice would need more than ``MAX_STATE_BITS`` bits: label switching takes over)."""
    L = state.shape[1]
    T = out.shape[0]
    active = np.full(L, -1, np.int64)
    cont_mask, cont_row, ord_before, ord_after = rules
    cbit = np.full(cont_mask.shape[0], -1, np.int64)
    obit = np.full(ord_before.shape[0], -1, np.int64)
    seg = (cont_mask, cont_row, cbit, ord_before, ord_after, obit)
    n_active = 0
    segs = np.zeros(L, np.int64)
    while True:
        score = _expanded_viterbi(state, trans, active, change_cost, ind, a, seg, out)
        if score == -np.inf:
            return score, True
        for lab in range(L):
            segs[lab] = 0
        for t in range(T):
            if t == 0 or out[t] != out[t - 1]:
                segs[out[t]] += 1
        wanted = 0
        for lab in range(L):
            if bit[lab] >= 0 and active[lab] < 0 and segs[lab] > 1:
                wanted += 1
        broken_c = np.zeros(cbit.shape[0], np.bool_)
        broken_o = np.zeros(obit.shape[0], np.bool_)
        for c in range(cbit.shape[0]):
            if cbit[c] < 0 and contains_phi(out, ind[cont_row[c], a : a + T], cont_mask[c]) > 0:
                broken_c[c] = True
                wanted += 1
        for c in range(obit.shape[0]):
            if obit[c] < 0 and order_phi(out, ord_before[c], ord_after[c]) > 0:
                broken_o[c] = True
                wanted += 1
        if wanted == 0:
            return score, True
        if n_active + wanted > MAX_STATE_BITS:
            return score, False
        for lab in range(L):
            if bit[lab] >= 0 and active[lab] < 0 and segs[lab] > 1:
                active[lab] = n_active
                n_active += 1
        for c in range(cbit.shape[0]):
            if broken_c[c]:
                cbit[c] = n_active
                n_active += 1
        for c in range(obit.shape[0]):
            if broken_o[c]:
                obit[c] = n_active
                n_active += 1


@njit(**NUMBA_OPTS)
def _hill_climb(state, trans, y, a, b, ind, rules, max_passes):
    """Greedy label switching on one sequence: maximize F(y) - penalty(y) (``rules``: the
    :class:`~tagger.constraints.penalties.InstanceRules` with the weights in use)."""
    kind, mask, other, row, lo, hi, rho, squared = rules
    L = state.shape[1]
    C = kind.shape[0]
    phi = np.zeros(C)
    phi_new = np.zeros(C)
    segs = np.zeros(L, np.int64)
    sequence_phi(y, ind, a, b, kind, mask, other, row, phi)
    segments_of(y, a, b, segs)
    pen = instance_penalty(phi, lo, hi, rho, squared)
    for _ in range(max_passes):
        improved = False
        for t in range(a, b):
            old = y[t]
            best_d = -1e-9
            best_l = -1
            for new in range(L):
                if new == old:
                    continue
                dF = state[t - a, new] - state[t - a, old]
                if t > a:
                    dF += trans[y[t - 1], new] - trans[y[t - 1], old]
                if t + 1 < b:
                    dF += trans[new, y[t + 1]] - trans[old, y[t + 1]]
                if dF == -np.inf:
                    continue
                switch_phi(y, ind, a, b, t, new, kind, mask, other, row, segs, phi, phi_new)
                d = -dF + instance_penalty(phi_new, lo, hi, rho, squared) - pen
                if d < best_d:
                    best_d = d
                    best_l = new
            if best_l >= 0:
                new = best_l
                switch_phi(y, ind, a, b, t, new, kind, mask, other, row, segs, phi, phi_new)
                if t == a or y[t - 1] != old:
                    segs[old] -= 1
                if t == a or y[t - 1] != new:
                    segs[new] += 1
                if t + 1 < b:
                    if y[t + 1] != old:
                        segs[y[t + 1]] -= 1
                    if y[t + 1] != new:
                        segs[y[t + 1]] += 1
                y[t] = new
                phi[:] = phi_new
                pen = instance_penalty(phi, lo, hi, rho, squared)
                improved = True
        if not improved:
            break


@njit(**NUMBA_OPTS)
def _penalise_token_rules(st, a, b, ind, hard_unary_mask, unary_row, n_hard_unary, penalty):
    """Take ``penalty`` off the scores ``st`` (tokens a..b) of every label a hard token rule
    forbids at a token it flags: ``inf`` forbids outright, a finite weight counts a break."""
    L = st.shape[1]
    for c in range(n_hard_unary):
        r = unary_row[c]
        for t in range(a, b):
            if ind[r, t]:
                for lab in range(L):
                    if hard_unary_mask[c, lab]:
                        st[t - a, lab] -= penalty


@njit(**NUMBA_PARALLEL_OPTS)
def _decode_batch(
    state, offsets, trans, ind, hard, rules, climb, max_passes, hard_weight, out, feasible
):
    """Every sentence decoded under the hard rules the expanded Viterbi enforces (``hard``, a
    :class:`HardRules`), then improved by label switching on ``rules`` when ``climb``."""
    hard_unary_mask, unary_row, n_hard_unary, bit, stay_row, segment = hard
    cm, cr, ob, oa = segment
    carried = (cm, cr, ob, oa)
    L = state.shape[1]
    # without them: contains / order rules that no labeling meets together with the
    # one-segment rules are left to label switching
    none = (
        np.zeros((0, L), np.bool_),
        np.zeros(0, np.int32),
        np.zeros((0, L), np.bool_),
        np.zeros((0, L), np.bool_),
    )
    n = offsets.shape[0] - 1
    for s in prange(n):
        a, b = offsets[s], offsets[s + 1]
        if b == a:
            continue
        st = state[a:b].copy()
        # hard token rules: forbidden labels at flagged tokens
        _penalise_token_rules(st, a, b, ind, hard_unary_mask, unary_row, n_hard_unary, np.inf)
        cost = np.zeros(b - a)
        if stay_row >= 0:
            for t in range(a + 1, b):
                if ind[stay_row, t]:
                    cost[t - a] = np.inf
        y = out[a:b]
        score, complete = _lazy_expanded_viterbi(st, trans, bit, cost, ind, a, carried, y)
        feasible[s] = score > -np.inf
        if not feasible[s]:
            # no labeling meets every hard rule: the best labeling with the fewest broken token
            # and change rules (each costs hard_weight, still exact, segment rules kept)
            st = state[a:b].copy()
            _penalise_token_rules(
                st, a, b, ind, hard_unary_mask, unary_row, n_hard_unary, hard_weight
            )
            for t in range(b - a):
                if cost[t] == np.inf:
                    cost[t] = hard_weight
            score, complete = _lazy_expanded_viterbi(st, trans, bit, cost, ind, a, carried, y)
            if score == -np.inf:
                _lazy_expanded_viterbi(st, trans, bit, cost, ind, a, none, y)
                complete = False
            st = state[a:b].copy()
        if climb or not complete:
            _hill_climb(st, trans, out, a, b, ind, rules, max_passes)


def _rows(a: np.ndarray, rules: list[int], L: int | None) -> np.ndarray:
    """The rows of a per-rule array (labels masks: (n, L) bool; indicator rows: int32) of the
    given rules, contiguous as the kernels take them."""
    if L is not None:
        return np.ascontiguousarray(a[rules]) if rules else np.zeros((0, L), np.bool_)
    return np.ascontiguousarray(a[rules], dtype=np.int32)


def constrained_decode(
    state: np.ndarray,
    offsets: np.ndarray,
    trans: np.ndarray,
    cc: CompiledConstraints,
    ti: TokenIndicators,
    *,
    soft: bool = True,
    hard_weight: float = 1e6,
    soft_scale: float = 1.0,
    max_passes: int = 20,
) -> tuple[np.ndarray, np.ndarray]:
    """Label ids (stacked) of the sentences whose (N, L) state scores are given.

    Hard rules handled by the expanded Viterbi are exact; the rest by label switching with
    penalty ``hard_weight`` per violation; with ``soft`` the soft rules join the switching
    objective with their weights times ``soft_scale``. Returns the labels and, per sentence,
    whether a labeling meeting every hard rule the Viterbi enforces exists.
    """
    state = np.ascontiguousarray(state, dtype=np.float64)
    trans = np.ascontiguousarray(trans, dtype=np.float64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    L = cc.n_labels
    hard_unary = [c for c in range(cc.n_instance) if cc.hard[c] and cc.kind[c] == UNARY]
    seg_labels = np.zeros(L, np.bool_)
    for c in range(cc.n_instance):
        if cc.hard[c] and cc.kind[c] == SEGMENTS:
            seg_labels |= cc.mask[c]
    n_bits = int(seg_labels.sum())
    exact_segments = n_bits <= MAX_SEGMENT_BITS
    bit = np.full(L, -1, np.int64)
    if exact_segments:
        bit[seg_labels] = np.arange(n_bits)
    stay_row = -1
    for c in range(cc.n_instance):
        if cc.hard[c] and cc.kind[c] == CHANGES:
            stay_row = int(cc.row[c])
    contains = [c for c in range(cc.n_instance) if cc.hard[c] and cc.kind[c] == CONTAINS]
    order = [c for c in range(cc.n_instance) if cc.hard[c] and cc.kind[c] == ORDER]
    segment = SegmentRules(
        _rows(cc.mask, contains, L),
        _rows(cc.row, contains, None),
        _rows(cc.mask, order, L),
        _rows(cc.other, order, L),
    )
    # the switching objective: hard rules not enforced by the Viterbi, and the soft ones
    exact = np.zeros(cc.n_instance, np.bool_)
    for c in range(cc.n_instance):
        if cc.hard[c] and (
            cc.kind[c] in (UNARY, CHANGES, CONTAINS, ORDER)
            or (cc.kind[c] == SEGMENTS and exact_segments)
        ):
            exact[c] = True
    rho = np.where(cc.hard, hard_weight, cc.weight * soft_scale if soft else 0.0)
    rho = np.where(exact, hard_weight, rho)  # still counted: keeps switches from breaking them
    climb = bool(np.any(rho[~exact] > 0)) if cc.n_instance else False
    hum, urow = _rows(cc.mask, hard_unary, L), _rows(cc.row, hard_unary, None)
    out = np.zeros(int(offsets[-1]), np.int32)
    feasible = np.ones(len(offsets) - 1, np.bool_)
    ind = ti.ind if ti.ind.shape[0] else np.zeros((1, int(offsets[-1])), np.uint8)
    hard = HardRules(hum, urow, len(hard_unary), bit, stay_row, segment)
    rules = InstanceRules(cc.kind, cc.mask, cc.other, cc.row, cc.lo, cc.hi, rho, cc.squared)
    _decode_batch(
        state,
        offsets,
        trans,
        ind,
        hard,
        rules,
        climb,
        max_passes,
        float(hard_weight),
        out,
        feasible,
    )
    return out, feasible
