"""The expanded-state Viterbi of constrained decoding (:mod:`tagger.constraints.decoding`):
exact best paths under the hard rules a first-order chain can carry with a few bits of state
(one-segment labels, ``contains`` and ``order`` rules), the bits added lazily, only for the
rules the best path breaks.

Transitions come as ``edge`` (T, L, L), ``edge[t, a, b]`` the score of label a at t - 1 then b
at t, as in :mod:`tagger.inference.pair_chain`: the transitions of a model with label-pair
templates vary by position. An ``edge`` with one row holds the one transition matrix of a plain
first-order model, used at every position (:func:`edge_at`).

A second-order model (:mod:`tagger.chain.second_order`) is decoded on its pair-state lattice
instead (:func:`order2_expanded_viterbi`): the states are (allowed label pair, rule bits), the
bits advance on the pair's two labels exactly as on a first-order chain's transition, and each
step from pair (a, b) to (b, c) adds the triple's score. Its lattice comes as the *order-2
tuple* ``(True, pair_a, pair_b, pair_id, pred_ptr, pred_src, pred_score)`` (the arrays of
:class:`tagger.chain.second_order.Lattice`, ``pred_score`` the triple score of each entry);
a first-order chain passes :func:`no_order2`'s.
"""

from __future__ import annotations

import numpy as np

from tagger._config import NUMBA_OPTS
from tagger.constraints.penalties import contains_phi, order_phi
from tagger.jit import njit

#: one-segment labels carried in the expanded state; 13 citation fields need 13
MAX_SEGMENT_BITS = 14
#: bits the lazily expanded lattice may carry at once, all rules together: L * 2^bits states
#: per token and a back-pointer table of T * L * 2^bits int32 (14 bits, 11 labels, 115 tokens:
#: 83 MB), the most one-segment rules alone could ask for
MAX_STATE_BITS = MAX_SEGMENT_BITS


@njit(**NUMBA_OPTS)
def edge_at(edge, t):
    """The (L, L) transition scores into position ``t``: ``edge[t]``, or the one matrix of a
    one-row ``edge``."""
    return edge[0] if edge.shape[0] == 1 else edge[t]


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
def _carried_bits(bit, seg):
    """How many state bits the lattice carries: one per label with ``bit[l] >= 0`` and one per
    ``contains`` / ``order`` rule of ``seg`` that has its bit."""
    K = 0
    for q in bit:
        if q >= 0:
            K += 1
    for q in seg[2]:
        if q >= 0:
            K += 1
    for q in seg[5]:
        if q >= 0:
            K += 1
    return K


@njit(**NUMBA_OPTS)
def expanded_viterbi(state, edge, bit, change_cost, ind, a, seg, out):
    """Best path of the (T, L) lattice (tokens a.. of ``ind``) in which a label with
    ``bit[l] >= 0`` may form only one segment, the rules of ``seg`` with a bit are met, and a
    label change at t costs ``change_cost[t]`` (``inf``: y_t = y_{t-1} is forced), transitions
    scored by ``edge`` (:func:`edge_at`). Returns the score (-inf: no feasible path)."""
    T, L = state.shape
    M = 1 << _carried_bits(bit, seg)
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
        ed = edge_at(edge, t)
        for s in range(S):
            v = cur[s]
            if v == NEG:
                continue
            lab = s // M
            m = s % M
            # stay in label l
            m2 = _advance(m, lab, lab, False, a + t, bit, ind, seg)
            if m2 >= 0:
                cand = v + ed[lab, lab] + state[t, lab]
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
                cand = v + ed[lab, l2] + state[t, l2] - cost
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
def lazy_expanded_viterbi(state, edge, o2, bit, change_cost, ind, a, rules, out):
    """:func:`expanded_viterbi` (:func:`order2_expanded_viterbi` when ``o2`` is a second-order
    lattice, the module docstring's order-2 tuple) with one-segment bits added only for labels
    that the current best path splits, and a bit for a ``contains`` / ``order`` rule of
    ``rules`` (a :class:`SegmentRules`) only once the best path breaks it. The relaxed
    problem's best path is an upper bound; once it breaks no rule it is the exact optimum (a
    cutting-plane argument), and the lattice stays small: L * 2^(rules that ever needed a bit),
    usually 0-3 bits. Returns the score and whether the path meets every rule (False when the
    lattice would need more than ``MAX_STATE_BITS`` bits: label switching takes over)."""
    L = state.shape[1]
    active = np.full(L, -1, np.int64)
    cont_mask, cont_row, ord_before, ord_after = rules
    cbit = np.full(cont_mask.shape[0], -1, np.int64)
    obit = np.full(ord_before.shape[0], -1, np.int64)
    seg = (cont_mask, cont_row, cbit, ord_before, ord_after, obit)
    n_active = 0
    while True:
        if o2[0]:
            score = order2_expanded_viterbi(state, edge, o2, active, change_cost, ind, a, seg, out)
        else:
            score = expanded_viterbi(state, edge, active, change_cost, ind, a, seg, out)
        if score == -np.inf:
            return score, True
        grown = _grow_bits(out, ind, a, bit, active, seg, n_active)
        if grown == n_active:
            return score, True
        if grown < 0:
            return score, False
        n_active = grown


@njit(**NUMBA_OPTS)
def _grow_bits(out, ind, a, bit, active, seg, n_active):
    """One round of :func:`lazy_expanded_viterbi`'s expansion: given the best path ``out`` (tokens
    a.. of ``ind``) under the ``n_active`` bits carried so far, give a bit to each label with
    ``bit[l] >= 0`` that the path splits (``active``) and to each ``contains`` / ``order``
    rule of ``seg`` that it breaks (its ``cbit`` / ``obit`` entries). Returns the number of
    bits carried now: ``n_active`` when the path breaks no rule (it is the exact optimum), -1
    (nothing changed) when more than ``MAX_STATE_BITS`` would be needed."""
    cont_mask, cont_row, cbit, ord_before, ord_after, obit = seg
    L = bit.shape[0]
    T = out.shape[0]
    segs = np.zeros(L, np.int64)
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
        return n_active
    if n_active + wanted > MAX_STATE_BITS:
        return -1
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
    return n_active


# ------------------------------------------------------------------------- second order


@njit(**NUMBA_OPTS)
def no_order2(L):
    """The order-2 tuple (module docstring) of a first-order chain over ``L`` labels."""
    return (
        False,
        np.zeros(0, np.int32),
        np.zeros(0, np.int32),
        np.full((L, L), -1, np.int32),
        np.zeros(1, np.int64),
        np.zeros(0, np.int32),
        np.zeros(0, np.float64),
    )


@njit(**NUMBA_OPTS)
def triple_entry(pair_id, pred_ptr, pred_src, y0, y1, y2):
    """The lattice entry of the triple (y0, y1, y2), or -1 when it is not allowed."""
    q = pair_id[y1, y2]
    p = pair_id[y0, y1]
    if q < 0 or p < 0:
        return -1
    for k in range(pred_ptr[q], pred_ptr[q + 1]):
        if pred_src[k] == p:
            return k
    return -1


@njit(**NUMBA_OPTS)
def order2_expanded_viterbi(state, edge, o2, bit, change_cost, ind, a, seg, out):
    """:func:`expanded_viterbi` on the pair-state lattice of a second-order chain (``o2``, the
    module docstring's order-2 tuple): the best allowed labeling (every pair and triple
    allowed) under the same rules, scored F(y) = sum state + sum edge + sum of the triples'
    ``pred_score``. A state is (pair q = (b, c), bits m), ``P * 2^bits`` of them per token,
    and the step from (a, b) to (b, c) advances the bits as a first-order step from b to c
    does. Returns the score (-inf: no feasible path)."""
    pair_a, pair_b, pred_ptr, pred_src, pred_score = o2[1], o2[2], o2[4], o2[5], o2[6]
    T, L = state.shape
    NEG = -np.inf
    if T == 1:  # one token: every label is allowed
        best = NEG
        for lab in range(L):
            m0 = _advance(0, lab, lab, True, a, bit, ind, seg)
            if m0 >= 0 and state[0, lab] > best and _may_end(m0, lab, seg):
                best = state[0, lab]
                out[0] = lab
        return best
    M = 1 << _carried_bits(bit, seg)
    P = pair_a.shape[0]
    S = P * M
    cur = np.full(S, NEG)
    nxt = np.empty(S)
    back = np.empty((T, S), np.int32)
    ed = edge_at(edge, 1)
    for q in range(P):
        x = pair_a[q]
        y = pair_b[q]
        if x != y and change_cost[1] == np.inf:
            continue
        m = _advance(0, x, x, True, a, bit, ind, seg)
        if m >= 0:
            m = _advance(m, x, y, False, a + 1, bit, ind, seg)
        if m < 0:
            continue
        v = state[0, x] + ed[x, y] + state[1, y]
        cur[q * M + m] = v - change_cost[1] if x != y else v
    for t in range(2, T):
        nxt[:] = NEG
        cost = change_cost[t]
        ed = edge_at(edge, t)
        for q in range(P):
            b = pair_a[q]
            c = pair_b[q]
            if b != c and cost == np.inf:
                continue
            node = ed[b, c] + state[t, c]
            if b != c:
                node -= cost
            for k in range(pred_ptr[q], pred_ptr[q + 1]):
                base = pred_src[k] * M
                for m in range(M):
                    v = cur[base + m]
                    if v == NEG:
                        continue
                    m2 = _advance(m, b, c, False, a + t, bit, ind, seg)
                    if m2 < 0:
                        continue
                    cand = v + pred_score[k] + node
                    j = q * M + m2
                    if cand > nxt[j]:
                        nxt[j] = cand
                        back[t, j] = base + m
        cur, nxt = nxt, cur
    best = NEG
    bs = -1
    for s in range(S):
        if cur[s] > best and _may_end(s % M, pair_b[s // M], seg):
            best = cur[s]
            bs = s
    if bs < 0:
        return NEG
    for t in range(T - 1, 0, -1):
        q = bs // M
        out[t] = pair_b[q]
        if t == 1:
            out[0] = pair_a[q]
        else:
            bs = back[t, bs]
    return best


@njit(**NUMBA_OPTS)
def order2_local(o2, y, a, b, t, lab):
    """The pair-allowance and triple part of F that involves token t of the labeling y[a:b],
    with label ``lab`` at t: the sum of the triples' scores (-inf when a pair or triple there
    is not allowed). Label switching compares it before and after a switch at t."""
    pair_id, pred_ptr, pred_src, pred_score = o2[3], o2[4], o2[5], o2[6]
    if t > a and pair_id[y[t - 1], lab] < 0:
        return -np.inf
    if t + 1 < b and pair_id[lab, y[t + 1]] < 0:
        return -np.inf
    s = 0.0
    for u in range(max(a, t - 2), min(t, b - 3) + 1):  # the triples (u, u+1, u+2) holding t
        y0 = lab if u == t else y[u]
        y1 = lab if u + 1 == t else y[u + 1]
        y2 = lab if u + 2 == t else y[u + 2]
        k = triple_entry(pair_id, pred_ptr, pred_src, y0, y1, y2)
        if k < 0:
            return -np.inf
        s += pred_score[k]
    return s
