"""Label switching on second-order chains: the kernels of
:mod:`tagger.learners.solvers.label_switching` where the model scores label triples.

A second-order model scores a labeling (:mod:`tagger.chain.second_order`)::

    F(y) = sum_t state[t, y_t] + sum_{t>=1} e_t(y_{t-1}, y_t)
           + sum_{t>=2} trip(y_{t-2}, y_{t-1}, y_t)

``e_t`` the transitions (``trans``, or the per-position ``edge`` of a model with label-pair
templates), and a labeling with a pair or triple the model does not allow is excluded. The
kernels take the model's pair-state lattice and one evaluation's triple scores as one flat
tuple ``o2 = (pair_a, pair_b, pair_id, pred_ptr, pred_src, pred_score)`` (flat, so that the
parallel loop of :func:`~tagger.learners.solvers.label_switching.all_max_marginals` can take
it); a plain or pair-template chain passes ``None`` and keeps its first-order kernels.

What switching needs carries over from the first order unchanged in form:

- the loss-augmented max-marginals M[t, l] (Hamming loss to the imputed labeling y) come from
  Viterbi-style forward and backward rows over pair states (``fwd`` / ``bwd`` with a column
  per allowed pair, rows a + 1 .. b - 1 of a sequence; row a is not used), M[t, l] the best
  fwd + bwd over the pairs ending in l at t (starting with l at the first token);
- the loss adds to nodes only, so moving the label at t from o to n shifts exactly the paths
  through (t, o) (+1) and (t, n) (-1): the new best loss-augmented score is
  max_l (M[t, l] + [l = o] - [l = n]), exact in O(L);
- a switch changes F by its state and transition terms and by the (at most three) triples
  that hold position t (:func:`order2_switch_change`), -inf when it makes a pair or triple
  the model does not allow, which label switching then refuses;
- a run move rescored from the kept rows: forward rows before the run depend on y before it,
  backward rows from the run's last position on y after it (:func:`order2_top_after_run`).

The imputed labelings switching starts from are allowed (they come from decoding on the same
lattice); every kernel here assumes so.
"""

from __future__ import annotations

import numpy as np

from tagger._config import NUMBA_OPTS
from tagger.chain import triple_entry
from tagger.jit import njit


@njit(**NUMBA_OPTS)
def _edge(trans, edge, i, k, lab):
    """The transition score of label k at token i - 1 then ``lab`` at i (``edge`` None: the
    chain's one matrix)."""
    if edge is None:
        return trans[k, lab]
    return edge[i, k, lab]


@njit(**NUMBA_OPTS)
def _node(state, y, t, lab):
    """Loss-augmented state score: state[t, lab] plus 1 off the imputed label y[t]."""
    return state[t, lab] + (1.0 if lab != y[t] else 0.0)


@njit(**NUMBA_OPTS)
def _triple(o2, y0, y1, y2):
    """The score of the triple (y0, y1, y2); -inf when the model does not allow it."""
    k = triple_entry(o2[2], o2[3], o2[4], y0, y1, y2)
    if k < 0:
        return -np.inf
    return o2[5][k]


@njit(**NUMBA_OPTS)
def _terms(o2, y, p0, p1, t0, t1):
    """The order-2 terms of y over a window: -inf unless every pair (y[j - 1], y[j]) with
    p0 <= j < p1 is allowed, else the sum of the triples ending at t0 <= j < t1 (-inf for
    one not allowed)."""
    pair_id = o2[2]
    for j in range(p0, p1):
        if pair_id[y[j - 1], y[j]] < 0:
            return -np.inf
    s = 0.0
    for j in range(t0, t1):
        v = _triple(o2, y[j - 2], y[j - 1], y[j])
        if v == -np.inf:
            return -np.inf
        s += v
    return s


@njit(**NUMBA_OPTS)
def order2_extra_score(o2, y, a, b):
    """The triple part of F for y[a:b]; -inf when a pair or a triple is not allowed."""
    return _terms(o2, y, a + 1, b, a + 2, b)


@njit(**NUMBA_OPTS)
def _terms_at(o2, y, a, b, i):
    """The order-2 terms that hold position i of the sequence a..b-1: its pairs with both
    neighbours, and the triples ending at i, i + 1 and i + 2."""
    return _terms(o2, y, max(i, a + 1), min(i + 2, b), max(i, a + 2), min(i + 3, b))


@njit(**NUMBA_OPTS)
def order2_switch_change(o2, y, a, b, i, new):
    """The change of the triple part of F when y[i] becomes ``new`` (y itself is left as it
    was); -inf when the switch makes a pair or triple the model does not allow."""
    old = y[i]
    before = _terms_at(o2, y, a, b, i)
    y[i] = new
    after = _terms_at(o2, y, a, b, i)
    y[i] = old
    if after == -np.inf:
        return -np.inf
    return after - before


@njit(**NUMBA_OPTS)
def order2_aug_max_marginals(state, trans, edge, o2, y, a, b, M, fwd, bwd):
    """M[t, l] (rows a..b-1) = best loss-augmented score (Hamming to y[a:b]) of an allowed
    labeling with l at t; ``fwd`` / ``bwd`` get the pair-state rows (module docstring).
    Returns the best loss-augmented score, max_l M[a, l]."""
    pair_a, pair_b, pred_ptr, pred_src, pred_score = o2[0], o2[1], o2[3], o2[4], o2[5]
    L = state.shape[1]
    P = pair_a.shape[0]
    for t in range(a, b):
        for lab in range(L):
            M[t, lab] = -np.inf
    if b - a == 1:
        top = -np.inf
        for lab in range(L):
            M[a, lab] = _node(state, y, a, lab)
            if M[a, lab] > top:
                top = M[a, lab]
        return top
    for q in range(P):
        p, c = pair_a[q], pair_b[q]
        fwd[a + 1, q] = (
            _node(state, y, a, p) + _edge(trans, edge, a + 1, p, c) + _node(state, y, a + 1, c)
        )
    for t in range(a + 2, b):
        for q in range(P):
            best = -np.inf
            for k in range(pred_ptr[q], pred_ptr[q + 1]):
                v = fwd[t - 1, pred_src[k]] + pred_score[k]
                if v > best:
                    best = v
            c = pair_b[q]
            fwd[t, q] = best + _node(state, y, t, c) + _edge(trans, edge, t, pair_a[q], c)
    for q in range(P):
        bwd[b - 1, q] = 0.0
    for t in range(b - 1, a + 1, -1):
        for p in range(P):
            bwd[t - 1, p] = -np.inf
        for q in range(P):
            c = pair_b[q]
            g = _node(state, y, t, c) + _edge(trans, edge, t, pair_a[q], c) + bwd[t, q]
            for k in range(pred_ptr[q], pred_ptr[q + 1]):
                v = pred_score[k] + g
                p = pred_src[k]
                if v > bwd[t - 1, p]:
                    bwd[t - 1, p] = v
    top = -np.inf
    for t in range(a + 1, b):
        for q in range(P):
            v = fwd[t, q] + bwd[t, q]
            if v > M[t, pair_b[q]]:
                M[t, pair_b[q]] = v
            if t == a + 1:
                if v > M[a, pair_a[q]]:
                    M[a, pair_a[q]] = v
                if v > top:
                    top = v
    return top


@njit(**NUMBA_OPTS)
def order2_top_after_run(state, trans, edge, o2, y, a, b, r0, r1, fwd, bwd, scratch):
    """What :func:`order2_aug_max_marginals` would return for the sequence a..b-1 once
    y[r0:r1] changed, from the rows kept for y before the change: only the pair rows from
    max(r0, a + 1) to max(r1 - 1, a + 1) are recomputed (into ``scratch``, a row per position
    and a column per pair), O((r1 - r0 + 1) K)."""
    pair_a, pair_b, pred_ptr, pred_src, pred_score = o2[0], o2[1], o2[3], o2[4], o2[5]
    L = state.shape[1]
    P = pair_a.shape[0]
    if b - a == 1:
        top = -np.inf
        for lab in range(L):
            top = max(top, _node(state, y, a, lab))
        return top
    start = max(r0, a + 1)
    last = max(r1 - 1, a + 1)
    for t in range(start, last + 1):
        row = t - start
        for q in range(P):
            p, c = pair_a[q], pair_b[q]
            if t == a + 1:
                v = _node(state, y, a, p) + _edge(trans, edge, a + 1, p, c)
            else:
                v = -np.inf
                for k in range(pred_ptr[q], pred_ptr[q + 1]):
                    src = pred_src[k]
                    x = (fwd[t - 1, src] if t == start else scratch[row - 1, src]) + pred_score[k]
                    if x > v:
                        v = x
                v += _edge(trans, edge, t, p, c)
            scratch[row, q] = v + _node(state, y, t, c)
    top = -np.inf
    for q in range(P):
        v = scratch[last - start, q] + bwd[last, q]
        if v > top:
            top = v
    return top
