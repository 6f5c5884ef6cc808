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

from tagger._config import CONSTRAINED_WORK_PER_BYTE, NUMBA_OPTS, NUMBA_PARALLEL_OPTS
from tagger.constraints import (
    CHANGES,
    CONTAINS,
    ORDER,
    SEGMENTS,
    UNARY,
    CompiledConstraints,
    TokenIndicators,
)
from tagger.constraints.expanded_viterbi import (
    MAX_SEGMENT_BITS,
    edge_at,
    lazy_expanded_viterbi,
    no_order2,
    order2_local,
)
from tagger.constraints.penalties import (
    InstanceRules,
    instance_penalty,
    segments_of,
    sequence_phi,
    switch_phi,
)
from tagger.jit import njit, prange


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
def hill_climb(state, edge, o2, y, a, b, ind, rules, max_passes):
    """Greedy label switching on one sequence: maximize F(y) - penalty(y) (``rules``: the
    :class:`~tagger.constraints.penalties.InstanceRules` with the weights in use; ``edge``:
    the transitions, :func:`~tagger.constraints.expanded_viterbi.edge_at`; ``o2``: a
    second-order chain's lattice, whose triples F also counts, or ``no_order2``'s)."""
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
            # a second-order chain's triples at t as labeled now (-inf: a pair or triple
            # there is not allowed, which any allowed switch mends)
            here = order2_local(o2, y, a, b, t, old) if o2[0] else 0.0
            for new in range(L):
                if new == old:
                    continue
                dF = state[t - a, new] - state[t - a, old]
                if t > a:
                    e = edge_at(edge, t - a)
                    dF += e[y[t - 1], new] - e[y[t - 1], old]
                if t + 1 < b:
                    e = edge_at(edge, t + 1 - a)
                    dF += e[new, y[t + 1]] - e[old, y[t + 1]]
                if o2[0] and dF > -np.inf:
                    there = order2_local(o2, y, a, b, t, new)
                    if there == -np.inf:
                        continue
                    dF = dF + (there - here) if here > -np.inf else np.inf
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


@njit(**NUMBA_OPTS)
def no_segment_rules(L):
    """No contains / order rules: what the expanded Viterbi falls back to when the ones given
    cannot be met together with the one-segment rules (label switching then handles them)."""
    return (
        np.zeros((0, L), np.bool_),
        np.zeros(0, np.int32),
        np.zeros((0, L), np.bool_),
        np.zeros((0, L), np.bool_),
    )


@njit(**NUMBA_OPTS)
def decode_sentence(state, edge, o2, a, ind, plan, out):
    """The tokens a..a+T-1 (columns of ``ind``) with state scores ``state`` (T, L) and
    transitions ``edge`` (:func:`~tagger.constraints.expanded_viterbi.edge_at`), on a
    second-order chain's lattice ``o2`` (or ``no_order2``'s: see
    :mod:`~tagger.constraints.expanded_viterbi`), decoded under
    the hard rules the expanded Viterbi enforces, then improved by label switching when the
    plan's ``climb`` says so (``plan``: :class:`DecodingPlan`'s kernel part); labels into
    ``out[a:a+T]`` (``out`` and ``ind`` index the tokens of the whole batch). Returns whether a
    labeling meeting every hard rule the Viterbi enforces exists."""
    hard, rules, climb, max_passes, hard_weight = plan
    hard_unary_mask, unary_row, n_hard_unary, bit, stay_row, segment = hard
    T = state.shape[0]
    b = a + T
    st = state.copy()
    # hard token rules: forbidden labels at flagged tokens
    _penalise_token_rules(st, a, b, ind, hard_unary_mask, unary_row, n_hard_unary, np.inf)
    cost = np.zeros(T)
    if stay_row >= 0:
        for t in range(a + 1, b):
            if ind[stay_row, t]:
                cost[t - a] = np.inf
    y = out[a:b]
    score, complete = lazy_expanded_viterbi(st, edge, o2, bit, cost, ind, a, segment, y)
    feasible = score > -np.inf
    if not feasible:
        # no labeling meets every hard rule: the best labeling with the fewest broken token
        # and change rules (each costs hard_weight, still exact, segment rules kept)
        st = state.copy()
        _penalise_token_rules(st, a, b, ind, hard_unary_mask, unary_row, n_hard_unary, hard_weight)
        for t in range(T):
            if cost[t] == np.inf:
                cost[t] = hard_weight
        score, complete = lazy_expanded_viterbi(st, edge, o2, bit, cost, ind, a, segment, y)
        if score == -np.inf:
            none = no_segment_rules(state.shape[1])
            lazy_expanded_viterbi(st, edge, o2, bit, cost, ind, a, none, y)
            complete = False
        st = state
    if climb or not complete:
        hill_climb(st, edge, o2, out, a, b, ind, rules, max_passes)
    return feasible


@njit(**NUMBA_OPTS)
def flat_plan(plan):
    """The kernel part of a :class:`DecodingPlan` as one flat tuple of arrays and numbers, for
    a parallel loop: numba's parallel loops take a record of arrays and numbers but fail to
    compile with a record of records (the plan holds :class:`HardRules`, which holds
    :class:`SegmentRules`). :func:`plan_of` puts it back together inside the loop."""
    hard, rules, climb, max_passes, hard_weight = plan
    hum, urow, n_unary, bit, stay_row, segment = hard
    cont_mask, cont_row, ord_before, ord_after = segment
    kind, mask, other, row, lo, hi, rho, squared = rules
    return (
        hum, urow, n_unary, bit, stay_row, cont_mask, cont_row, ord_before, ord_after,
        kind, mask, other, row, lo, hi, rho, squared, climb, max_passes, hard_weight,
    )  # fmt: skip


@njit(**NUMBA_OPTS)
def plan_of(flat):
    """The plan :func:`flat_plan` flattened, as :func:`decode_sentence` takes it."""
    (
        hum, urow, n_unary, bit, stay_row, cont_mask, cont_row, ord_before, ord_after,
        kind, mask, other, row, lo, hi, rho, squared, climb, max_passes, hard_weight,
    ) = flat  # fmt: skip
    hard = (hum, urow, n_unary, bit, stay_row, (cont_mask, cont_row, ord_before, ord_after))
    rules = (kind, mask, other, row, lo, hi, rho, squared)
    return hard, rules, climb, max_passes, hard_weight


@njit(**NUMBA_PARALLEL_OPTS, work_per_byte=CONSTRAINED_WORK_PER_BYTE)
def _decode_batch(state, offsets, trans, ind, plan, out, feasible):
    """Every sentence of a plain first-order model (one transition matrix ``trans``) decoded by
    :func:`decode_sentence`, in parallel."""
    edge = trans.reshape((1, trans.shape[0], trans.shape[1]))
    o2 = no_order2(trans.shape[0])
    flat = flat_plan(plan)
    for s in prange(offsets.shape[0] - 1):
        a, b = offsets[s], offsets[s + 1]
        if b > a:
            feasible[s] = decode_sentence(state[a:b], edge, o2, a, ind, plan_of(flat), out)


def _rows(a: np.ndarray, rules: list[int], L: int | None) -> np.ndarray:
    """The rows of a per-rule array (labels masks: (n, L) bool; indicator rows: int32) of the
    given rules, contiguous as the kernels take them."""
    if L is not None:
        return np.ascontiguousarray(a[rules]) if rules else np.zeros((0, L), np.bool_)
    return np.ascontiguousarray(a[rules], dtype=np.int32)


class DecodingPlan(NamedTuple):
    """What constrained decoding needs of compiled constraints and their token indicators:
    ``ind`` (the indicator rows, one column per token) and ``kernel`` = (hard rules, switching
    rules, climb, max passes, hard weight), as :func:`decode_sentence` takes it."""

    ind: np.ndarray
    kernel: tuple


def decoding_plan(
    cc: CompiledConstraints,
    ti: TokenIndicators,
    n_tokens: int,
    *,
    soft: bool = True,
    hard_weight: float = 1e6,
    soft_scale: float = 1.0,
    max_passes: int = 20,
) -> DecodingPlan:
    """The rules of ``cc`` sorted into those the expanded Viterbi enforces exactly and those
    label switching handles (with penalty ``hard_weight`` per violation; with ``soft`` the soft
    rules join the switching objective with their weights times ``soft_scale``)."""
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
    ind = ti.ind if ti.ind.shape[0] else np.zeros((1, n_tokens), np.uint8)
    hard = HardRules(hum, urow, len(hard_unary), bit, stay_row, segment)
    rules = InstanceRules(cc.kind, cc.mask, cc.other, cc.row, cc.lo, cc.hi, rho, cc.squared)
    return DecodingPlan(ind, (hard, rules, climb, int(max_passes), float(hard_weight)))


def constrained_decode(
    state: np.ndarray,
    offsets: np.ndarray,
    trans: np.ndarray,
    cc: CompiledConstraints,
    ti: TokenIndicators,
    **options,
) -> tuple[np.ndarray, np.ndarray]:
    """Label ids (stacked) of the sentences whose (N, L) state scores are given, under a plain
    first-order model's transitions ``trans``.

    Hard rules handled by the expanded Viterbi are exact; the rest by label switching
    (``options``: those of :func:`decoding_plan`). Returns the labels and, per sentence,
    whether a labeling meeting every hard rule the Viterbi enforces exists.
    """
    state = np.ascontiguousarray(state, dtype=np.float64)
    trans = np.ascontiguousarray(trans, dtype=np.float64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    plan = decoding_plan(cc, ti, int(offsets[-1]), **options)
    out = np.zeros(int(offsets[-1]), np.int32)
    feasible = np.ones(len(offsets) - 1, np.bool_)
    _decode_batch(state, offsets, trans, plan.ind, plan.kernel, out, feasible)
    return out, feasible
