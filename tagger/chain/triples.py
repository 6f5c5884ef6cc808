"""The kernels of second-order models (:mod:`tagger.chain.second_order`): the gold labeling's
triple score, the triple block's gradient from summed triple marginals, the triple block's
part of the difference of two labelings' features, (loss-augmented) decoding of a sentence
and batch decoding and marginals over the pair-state lattice
(:mod:`tagger.inference.second_order`).

``pred_score`` is the lattice's per-entry triple score for one evaluation (the triple weight
of each allowed triple, 0 for one without a weight): :func:`entry_scores`.
"""

from __future__ import annotations

import numpy as np

from tagger._config import NUMBA_OPTS, NUMBA_PARALLEL_OPTS
from tagger.chain.joint import accumulate
from tagger.chain.pairs import edge_path_score, sentence_scores
from tagger.constraints.expanded_viterbi import triple_entry
from tagger.inference.second_order import (
    order2_buffers,
    order2_forward_backward,
    order2_tables,
    order2_viterbi_into,
)
from tagger.jit import njit, prange


def entry_scores(lattice, w: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """float64[K]: ``scale`` times the triple weight of each lattice entry (0 without one)."""
    trip = lattice.pred_trip
    out = np.zeros(len(trip))
    has = trip >= 0
    out[has] = scale * w[lattice.trip_offset + trip[has]]
    return out


@njit(**NUMBA_OPTS)
def entry_scores_into(lat, w, out):
    """:func:`entry_scores` (``scale`` 1) inside a kernel, into ``out`` (float64[K])."""
    off = lat.trip_offset
    for k in range(out.shape[0]):
        t = lat.pred_trip[k]
        out[k] = w[off + t] if t >= 0 else 0.0


@njit(**NUMBA_OPTS)
def entry_of(lat, y0, y1, y2):
    """The lattice entry of the triple (y0, y1, y2), or -1 when it is not allowed."""
    return triple_entry(lat.pair_id, lat.pred_ptr, lat.pred_src, y0, y1, y2)


@njit(**NUMBA_OPTS)
def triple_path_score(lat, pred_score, y, a, b):
    """The triple part of F for the labeling y[a:b] (-inf when it is not allowed)."""
    s = 0.0
    for i in range(a + 1, b):
        if lat.pair_id[y[i - 1], y[i]] < 0:
            return -np.inf
    for i in range(a + 2, b):
        k = entry_of(lat, y[i - 2], y[i - 1], y[i])
        if k < 0:
            return -np.inf
        s += pred_score[k]
    return s


@njit(**NUMBA_OPTS)
def scatter_triple_expectations(lat, gold, a, b, trip_marg, k, g):
    """g[triple block] += k (E[f_trip] - f_trip(gold)) for the sentence of tokens a..b-1, from
    its triple marginals summed over positions (one per lattice entry)."""
    off = lat.trip_offset
    for e in range(trip_marg.shape[0]):
        t = lat.pred_trip[e]
        if t >= 0:
            g[off + t] += k * trip_marg[e]
    for i in range(a + 2, b):
        e = entry_of(lat, gold[i - 2], gold[i - 1], gold[i])
        if e >= 0 and lat.pred_trip[e] >= 0:
            g[off + lat.pred_trip[e]] -= k


@njit(**NUMBA_OPTS)
def add_triple_difference(lat, a, b, plus, minus, coef, acc, n):
    """acc[triple block] += coef * (f_trip(plus) - f_trip(minus)) on tokens a..b-1, the triple
    block's part of :func:`tagger.chain.joint.add_difference` (``n`` coordinates touched on
    entry, the new count returned). Both labelings must be allowed; a triple without a weight
    adds nothing."""
    off = lat.trip_offset
    for i in range(a + 2, b):
        if plus[i - 2] == minus[i - 2] and plus[i - 1] == minus[i - 1] and plus[i] == minus[i]:
            continue
        k = entry_of(lat, plus[i - 2], plus[i - 1], plus[i])
        if k >= 0 and lat.pred_trip[k] >= 0:
            n = accumulate(acc, off + lat.pred_trip[k], coef, n)
        k = entry_of(lat, minus[i - 2], minus[i - 1], minus[i])
        if k >= 0 and lat.pred_trip[k] >= 0:
            n = accumulate(acc, off + lat.pred_trip[k], -coef, n)
    return n


@njit(**NUMBA_OPTS)
def lattice_viterbi_into(lat, state, edge, pred_score, buffers, out):
    """:func:`~tagger.inference.second_order.order2_viterbi_into` on the lattice ``lat``: the
    best allowed labeling of one sentence into ``out``, and its score."""
    return order2_viterbi_into(
        state,
        edge,
        lat.pair_a,
        lat.pair_b,
        lat.pair_id,
        lat.pred_ptr,
        lat.pred_src,
        pred_score,
        buffers,
        out,
    )


@njit(**NUMBA_OPTS)
def order2_loss_augmented_into(
    lat, state, edge, pred_score, gold, a, loss_scale, aug, buffers, out
):
    """Viterbi on the pair-state lattice of one sentence under its state scores raised by
    ``loss_scale`` off the gold labels ``gold[a:a+T]``, written to ``aug`` (T rows; it may be
    ``state`` itself): the best allowed labeling of F + loss_scale * Hamming into ``out``,
    and its score, the loss term included. ``buffers`` from
    :func:`~tagger.inference.second_order.order2_buffers`."""
    T, L = state.shape
    for i in range(T):
        for lab in range(L):
            x = state[i, lab]
            if lab != gold[a + i]:
                x += loss_scale
            aug[i, lab] = x
    return lattice_viterbi_into(lat, aug[:T], edge, pred_score, buffers, out)


@njit(**NUMBA_PARALLEL_OPTS)
def order2_decode_batch(
    layout, pl, lat, X, w, trans, pred_score, gold, loss_scale, out, scores, gold_scores
):
    """Viterbi over every sentence of the batch on the pair-state lattice (loss-augmented by
    ``loss_scale`` Hamming cost when ``gold`` has a row per token): labels into ``out``, best
    scores into ``scores`` and, with ``gold``, the gold labeling's score into ``gold_scores``.
    In parallel over sentences; each sentence's result depends on its own data only."""
    L = trans.shape[0]
    P = lat.pair_a.shape[0]
    K = lat.pred_src.shape[0]
    offsets = X.offsets
    has_gold = gold.shape[0] > 0
    for s in prange(offsets.shape[0] - 1):
        a = offsets[s]
        b = offsets[s + 1]
        T = b - a
        if T == 0:
            scores[s] = 0.0
            if has_gold:
                gold_scores[s] = 0.0
            continue
        state, edge = sentence_scores(layout, pl, X, w, a, b, trans)
        buffers = order2_buffers(T, L, P, K)
        if has_gold:
            gold_scores[s] = edge_path_score(state, edge, gold, a) + triple_path_score(
                lat, pred_score, gold, a, b
            )
            scores[s] = order2_loss_augmented_into(
                lat, state, edge, pred_score, gold, a, loss_scale, state, buffers, out[a:b]
            )
            continue
        scores[s] = lattice_viterbi_into(lat, state, edge, pred_score, buffers, out[a:b])


@njit(**NUMBA_PARALLEL_OPTS)
def order2_marginals_batch(layout, pl, lat, X, w, trans, pred_score, node_out):
    """Node marginals of every sentence of the batch on the pair-state lattice."""
    L = trans.shape[0]
    P = lat.pair_a.shape[0]
    K = lat.pred_src.shape[0]
    offsets = X.offsets
    tables = order2_tables(pred_score, lat.pred_ptr, P)
    for s in prange(offsets.shape[0] - 1):
        a = offsets[s]
        b = offsets[s + 1]
        T = b - a
        if T == 0:
            continue
        state, edge = sentence_scores(layout, pl, X, w, a, b, trans)
        order2_forward_backward(
            state,
            edge,
            lat.pair_a,
            lat.pair_b,
            lat.pair_id,
            lat.pred_ptr,
            lat.pred_src,
            pred_score,
            tables,
            order2_buffers(T, L, P, K),
            node_out[a:b],
            np.empty((T, L, L)),
            np.empty(K),
        )
