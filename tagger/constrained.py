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
  labels the best path splits, until it splits none (the optimum of a relaxation that meets
  every rule is the optimum), so most sentences need a lattice of L or 2L states.

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

import numba
import numpy as np

from tagger._config import NUMBA_OPTS, NUMBA_PARALLEL_OPTS
from tagger.constraints import CHANGES, SEGMENTS, UNARY, CompiledConstraints, TokenIndicators
from tagger.constraints.penalties import (InstanceRules, instance_penalty, segments_of,
                                          sequence_phi, switch_phi)

#: one-segment labels carried in the expanded state; 13 citation fields need 13
MAX_SEGMENT_BITS = 14


class HardRules(NamedTuple):
    """The hard rules the expanded-state Viterbi enforces exactly: token rules (their label
    masks and indicator rows), the bit of each label in the segment-count state, and the
    indicator row of the no-change rule (-1 when there is none)."""

    unary_mask: np.ndarray  # bool[n_unary, L]
    unary_row: np.ndarray   # int32[n_unary]
    n_unary: int
    bit: np.ndarray         # int64[L]: -1, or the label's bit in the expanded state
    stay_row: int


@numba.njit(**NUMBA_OPTS)
def _expanded_viterbi(state, trans, bit, change_cost, out):
    """Best path of the (T, L) lattice in which a label with ``bit[l] >= 0`` may form only one
    segment and a label change at t costs ``change_cost[t]`` (``inf``: y_t = y_{t-1} is forced).
    Returns the score (-inf: no feasible path)."""
    T, L = state.shape
    K = 0
    for l in range(L):
        if bit[l] >= 0:
            K += 1
    M = 1 << K
    S = L * M
    NEG = -np.inf
    cur = np.full(S, NEG)
    nxt = np.empty(S)
    back = np.empty((T, S), np.int32)
    for l in range(L):
        cur[l * M] = state[0, l]
    for t in range(1, T):
        nxt[:] = NEG
        for s in range(S):
            v = cur[s]
            if v == NEG:
                continue
            l = s // M
            m = s % M
            # stay in label l
            cand = v + trans[l, l] + state[t, l]
            j = l * M + m
            if cand > nxt[j]:
                nxt[j] = cand
                back[t, j] = s
            cost = change_cost[t]
            if cost == np.inf:
                continue
            m2 = m
            if bit[l] >= 0:
                m2 = m | (1 << bit[l])
            for l2 in range(L):
                if l2 == l:
                    continue
                if bit[l2] >= 0 and (m2 >> bit[l2]) & 1:
                    continue
                cand = v + trans[l, l2] + state[t, l2] - cost
                j = l2 * M + m2
                if cand > nxt[j]:
                    nxt[j] = cand
                    back[t, j] = s
        cur, nxt = nxt, cur
    best = NEG
    bs = -1
    for s in range(S):
        if cur[s] > best:
            best = cur[s]
            bs = s
    if bs < 0:
        return NEG
    for t in range(T - 1, -1, -1):
        out[t] = bs // M
        if t > 0:
            bs = back[t, bs]
    return best


@numba.njit(**NUMBA_OPTS)
def _lazy_expanded_viterbi(state, trans, bit, change_cost, out):
    """:func:`_expanded_viterbi` with one-segment bits added only for labels that the current
    best path splits. The relaxed problem's best path is an upper bound; once it splits no
    one-segment label it meets every rule and is the exact optimum (a cutting-plane argument),
    and the lattice stays small: L * 2^(labels that ever needed a bit), usually 0-3 bits."""
    L = state.shape[1]
    active = np.full(L, -1, np.int64)
    n_active = 0
    segs = np.zeros(L, np.int64)
    while True:
        score = _expanded_viterbi(state, trans, active, change_cost, out)
        if score == -np.inf:
            return score
        for l in range(L):
            segs[l] = 0
        for t in range(out.shape[0]):
            if t == 0 or out[t] != out[t - 1]:
                segs[out[t]] += 1
        added = False
        for l in range(L):
            if bit[l] >= 0 and active[l] < 0 and segs[l] > 1:
                active[l] = n_active
                n_active += 1
                added = True
        if not added:
            return score


@numba.njit(**NUMBA_OPTS)
def _hill_climb(state, trans, y, a, b, ind, rules, max_passes):
    """Greedy label switching on one sequence: maximize F(y) - penalty(y) (``rules``: the
    :class:`~tagger.constraints.penalties.InstanceRules` with the weights in use)."""
    kind, mask, row, lo, hi, rho, squared = rules
    L = state.shape[1]
    C = kind.shape[0]
    phi = np.zeros(C)
    phi_new = np.zeros(C)
    segs = np.zeros(L, np.int64)
    sequence_phi(y, ind, a, b, kind, mask, row, phi)
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
                switch_phi(y, ind, a, b, t, new, kind, mask, row, segs, phi, phi_new)
                d = -dF + instance_penalty(phi_new, lo, hi, rho, squared) - pen
                if d < best_d:
                    best_d = d
                    best_l = new
            if best_l >= 0:
                new = best_l
                switch_phi(y, ind, a, b, t, new, kind, mask, row, segs, phi, phi_new)
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


@numba.njit(**NUMBA_OPTS)
def _penalise_token_rules(st, a, b, ind, hard_unary_mask, unary_row, n_hard_unary, penalty):
    """Take ``penalty`` off the scores ``st`` (tokens a..b) of every label a hard token rule
    forbids at a token it flags: ``inf`` forbids outright, a finite weight counts a break."""
    L = st.shape[1]
    for c in range(n_hard_unary):
        r = unary_row[c]
        for t in range(a, b):
            if ind[r, t]:
                for l in range(L):
                    if hard_unary_mask[c, l]:
                        st[t - a, l] -= penalty


@numba.njit(**NUMBA_PARALLEL_OPTS)
def _decode_batch(state, offsets, trans, ind, hard, rules, climb, max_passes, hard_weight, out,
                  feasible):
    """Every sentence decoded under the hard rules the expanded Viterbi enforces (``hard``, a
    :class:`HardRules`), then improved by label switching on ``rules`` when ``climb``."""
    hard_unary_mask, unary_row, n_hard_unary, bit, stay_row = hard
    n = offsets.shape[0] - 1
    for s in numba.prange(n):
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
        score = _lazy_expanded_viterbi(st, trans, bit, cost, y)
        feasible[s] = score > -np.inf
        if not feasible[s]:
            # no labeling meets every hard rule: the best labeling with the fewest broken token
            # and change rules (each costs hard_weight, still exact, one-segment rules kept)
            st = state[a:b].copy()
            _penalise_token_rules(st, a, b, ind, hard_unary_mask, unary_row, n_hard_unary,
                                  hard_weight)
            for t in range(b - a):
                if cost[t] == np.inf:
                    cost[t] = hard_weight
            _lazy_expanded_viterbi(st, trans, bit, cost, y)
            st = state[a:b].copy()
        if climb:
            _hill_climb(st, trans, out, a, b, ind, rules, max_passes)


def constrained_decode(state: np.ndarray, offsets: np.ndarray, trans: np.ndarray,
                       cc: CompiledConstraints, ti: TokenIndicators, *, soft: bool = True,
                       hard_weight: float = 1e6, soft_scale: float = 1.0,
                       max_passes: int = 20) -> tuple[np.ndarray, np.ndarray]:
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
    # the switching objective: hard rules not enforced by the Viterbi, and the soft ones
    exact = np.zeros(cc.n_instance, np.bool_)
    for c in range(cc.n_instance):
        if cc.hard[c] and (cc.kind[c] in (UNARY, CHANGES) or
                           (cc.kind[c] == SEGMENTS and exact_segments)):
            exact[c] = True
    rho = np.where(cc.hard, hard_weight, cc.weight * soft_scale if soft else 0.0)
    rho = np.where(exact, hard_weight, rho)  # still counted: keeps switches from breaking them
    climb = bool(np.any(rho[~exact] > 0)) if cc.n_instance else False
    hum = np.ascontiguousarray(cc.mask[hard_unary]) if hard_unary else np.zeros((0, L), np.bool_)
    urow = np.ascontiguousarray(cc.row[hard_unary], dtype=np.int32)
    out = np.zeros(int(offsets[-1]), np.int32)
    feasible = np.ones(len(offsets) - 1, np.bool_)
    ind = ti.ind if ti.ind.shape[0] else np.zeros((1, int(offsets[-1])), np.uint8)
    hard = HardRules(hum, urow, len(hard_unary), bit, stay_row)
    rules = InstanceRules(cc.kind, cc.mask, cc.row, cc.lo, cc.hi, rho, cc.squared)
    _decode_batch(state, offsets, trans, ind, hard, rules, climb, max_passes, float(hard_weight),
                  out, feasible)
    return out, feasible
