"""The likelihood (and smoothed hinge) pass of :mod:`tagger.learners.solvers.crf_objective`
for models that are not plain first-order chains: label-pair templates (transitions that vary
by position, :mod:`tagger.chain.pairs`) and second-order models (label-pair states,
:mod:`tagger.chain.second_order`). Chunks, buffers and the fixed-order reduction are those of
the plain pass, so results do not change with the thread count.
"""

from __future__ import annotations

import numpy as np

from tagger._config import NUMBA_OPTS, NUMBA_PARALLEL_OPTS
from tagger.chain import (
    edge_path_score,
    fb_tables,
    max_length,
    order2_buffers,
    order2_forward_backward,
    order2_tables,
    pair_fb_buffers,
    pair_forward_backward,
    scatter_expectations,
    scatter_pair_expectations,
    scatter_triple_expectations,
    sentence_edge_scores,
    sentence_state_scores,
    triple_path_score,
)
from tagger.jit import njit, prange


@njit(**NUMBA_OPTS)
def scaled_state_scores(layout, X, w, a, b, gold, cost, inv_tau, st):
    """The state scores of tokens a..b-1 into ``st``, raised by ``cost`` off the gold labels
    and multiplied by ``inv_tau`` (the smoothed hinge's cost-augmented, scaled scores)."""
    sentence_state_scores(layout, X, w, a, b, st)
    if cost != 0.0 or inv_tau != 1.0:
        for i in range(b - a):
            for lab in range(st.shape[1]):
                if lab != gold[a + i]:
                    st[i, lab] += cost
                st[i, lab] *= inv_tau


@njit(**NUMBA_OPTS)
def record_marginals(node, gold, a, b, marg):
    """The sentence's expected number of wrong labels, sum_i 1 - P(y_i = gold_i), with its
    node marginals copied into ``marg`` when it has a row per token."""
    miss = 0.0
    keep = marg.shape[0] > 0
    for i in range(a, b):
        miss += 1.0 - node[i - a, gold[i]]
        if keep:
            for lab in range(node.shape[1]):
                marg[i, lab] = node[i - a, lab]
    return miss


@njit(**NUMBA_OPTS)
def summed_over_positions(pair, T, out):
    """out = sum_{t=1}^{T-1} pair[t]: a sentence's edge marginals summed over positions."""
    L = out.shape[0]
    for i in range(L):
        for j in range(L):
            out[i, j] = 0.0
    for t in range(1, T):
        for i in range(L):
            for j in range(L):
                out[i, j] += pair[t, i, j]


@njit(**NUMBA_PARALLEL_OPTS)
def nll_grad_pairs(
    layout, pl, X, w, trans, gold, chunk_bounds, grad_buf, nll_buf, marg, cost, inv_tau, miss_buf
):
    """The plain pass (``crf_objective._nll_grad``) for a model with label-pair parameters
    (:mod:`tagger.chain.pairs`): each sentence's transitions vary by position (``trans`` plus
    the pair weights firing at each token, scaled by ``inv_tau`` like the rest), so
    forward-backward gives per-position edge marginals, from which the pair block's gradient
    is scattered; their sum over positions gives the transitions' gradient as before."""
    L = trans.shape[0]
    n_chunks = chunk_bounds.shape[0] - 1
    offsets = X.offsets
    tables = fb_tables(trans)
    for c in prange(n_chunks):
        g = grad_buf[c]
        g[:] = 0.0
        s0 = chunk_bounds[c]
        s1 = chunk_bounds[c + 1]
        tmax = max_length(offsets, s0, s1)
        buffers = pair_fb_buffers(tmax, L)
        state = np.empty((tmax, L))
        node = np.empty((tmax, L))
        edge = np.empty((tmax, L, L))
        pair = np.empty((tmax, L, L))
        changed = np.empty((tmax, L), dtype=np.bool_)
        edge_sum = np.empty((L, L))
        nll = 0.0
        miss = 0.0
        for s in range(s0, s1):
            a = offsets[s]
            b = offsets[s + 1]
            T = b - a
            if T == 0:
                continue
            st = state[:T]
            scaled_state_scores(layout, X, w, a, b, gold, cost, inv_tau, st)
            ed = edge[:T]
            sentence_edge_scores(pl, X, w, a, b, trans, inv_tau, ed, changed[:T])
            log_z = pair_forward_backward(st, ed, changed[:T], tables, buffers, node[:T], pair[:T])
            nll += log_z - edge_path_score(st, ed, gold, a)
            miss += record_marginals(node, gold, a, b, marg)
            summed_over_positions(pair, T, edge_sum)
            scatter_expectations(layout, X, a, b, gold, node, edge_sum, 1.0, g)
            scatter_pair_expectations(pl, X, a, b, gold, pair, L, 1.0, g)
        nll_buf[c] = nll
        miss_buf[c] = miss


@njit(**NUMBA_PARALLEL_OPTS)
def nll_grad_order2(
    layout,
    pl,
    lat,
    X,
    w,
    trans,
    pred_score,
    gold,
    chunk_bounds,
    grad_buf,
    nll_buf,
    marg,
    cost,
    inv_tau,
    miss_buf,
):
    """:func:`nll_grad_pairs` for a second-order model: forward-backward on the pair-state
    lattice ``lat`` with the per-entry triple scores ``pred_score`` (scaled by ``inv_tau``
    already), which also gives the triple marginals summed over positions, from which the
    triple block's gradient is scattered."""
    L = trans.shape[0]
    P = lat.pair_a.shape[0]
    K = lat.pred_src.shape[0]
    n_chunks = chunk_bounds.shape[0] - 1
    offsets = X.offsets
    tables = order2_tables(pred_score, lat.pred_ptr, P)
    for c in prange(n_chunks):
        g = grad_buf[c]
        g[:] = 0.0
        s0 = chunk_bounds[c]
        s1 = chunk_bounds[c + 1]
        tmax = max_length(offsets, s0, s1)
        buffers = order2_buffers(tmax, L, P, K)
        state = np.empty((tmax, L))
        node = np.empty((tmax, L))
        edge = np.empty((tmax, L, L))
        pair = np.empty((tmax, L, L))
        changed = np.empty((tmax, L), dtype=np.bool_)
        edge_sum = np.empty((L, L))
        trip = np.empty(K)
        if pl.n_pair == 0:  # every position's transitions are trans: filled once
            sentence_edge_scores(pl, X, w, 0, tmax, trans, inv_tau, edge, changed)
        nll = 0.0
        miss = 0.0
        for s in range(s0, s1):
            a = offsets[s]
            b = offsets[s + 1]
            T = b - a
            if T == 0:
                continue
            st = state[:T]
            scaled_state_scores(layout, X, w, a, b, gold, cost, inv_tau, st)
            ed = edge[:T]
            if pl.n_pair > 0:
                sentence_edge_scores(pl, X, w, a, b, trans, inv_tau, ed, changed[:T])
            log_z = order2_forward_backward(
                st,
                ed,
                lat.pair_a,
                lat.pair_b,
                lat.pair_id,
                lat.pred_ptr,
                lat.pred_src,
                pred_score,
                tables,
                buffers,
                node[:T],
                pair[:T],
                trip,
            )
            gold_score = edge_path_score(st, ed, gold, a)
            gold_score += triple_path_score(lat, pred_score, gold, a, b)
            nll += log_z - gold_score
            miss += record_marginals(node, gold, a, b, marg)
            summed_over_positions(pair, T, edge_sum)
            scatter_expectations(layout, X, a, b, gold, node, edge_sum, 1.0, g)
            scatter_pair_expectations(pl, X, a, b, gold, pair, L, 1.0, g)
            scatter_triple_expectations(lat, gold, a, b, trip, 1.0, g)
        nll_buf[c] = nll
        miss_buf[c] = miss
