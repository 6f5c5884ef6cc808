"""The log-space tier of second-order forward-backward (:mod:`tagger.inference.second_order`),
exact for any score range, and the pieces both tiers share: writing pair-state marginals out
as node and pair marginals, and clearing the outputs.
"""

from __future__ import annotations

import math

import numpy as np

from tagger._config import NUMBA_OPTS
from tagger.jit import njit

_njit = njit(**NUMBA_OPTS)


@_njit
def zero_outputs(node, pair, trip):
    node[:, :] = 0.0
    pair[:, :, :] = 0.0
    trip[:] = 0.0


@_njit
def logsumexp_n(x, n):
    """log sum_{i<n} exp x[i], max-subtracted; -inf when every entry is -inf (or n = 0)."""
    m = -np.inf
    for i in range(n):
        if x[i] > m:
            m = x[i]
    if m == -np.inf:
        return -np.inf
    acc = 0.0
    for i in range(n):
        acc += math.exp(x[i] - m)
    return m + math.log(acc)


@_njit
def write_states(t, mu, pair_a, pair_b, pair_id, node, pair):
    """Pair-state marginals mu (float64[P]) at position t into pair[t] (0 where the pair is not
    allowed), added into node[t] by the second label (and node[0] by the first at t = 1)."""
    L = pair_id.shape[0]
    out = pair[t]
    for a in range(L):
        for b in range(L):
            q = pair_id[a, b]
            out[a, b] = mu[q] if q >= 0 else 0.0
    nt = node[t]
    for q in range(pair_a.shape[0]):
        nt[pair_b[q]] += mu[q]
    if t == 1:
        n0 = node[0]
        for q in range(pair_a.shape[0]):
            n0[pair_a[q]] += mu[q]


@_njit
def fb_exact(state, edge, lattice, pred_score, buffers, node, pair, trip):
    """Tier 2 for T >= 2: log-space forward-backward on the pair-state lattice, exact for any
    score range. Returns log Z. la[t, q]: log-sum-exp over allowed prefixes ending in q at t
    (scores included); lb[t, q]: over the suffixes after it; G[t, q] = g_t[q] + lb[t, q]."""
    pair_a, pair_b, pair_id, pred_ptr, pred_src = lattice
    la, lb, G, _, _, _, mx, acc, kv = buffers
    T = state.shape[0]
    P = pair_a.shape[0]
    for q in range(P):
        a = pair_a[q]
        b = pair_b[q]
        la[1, q] = state[0, a] + edge[1, a, b] + state[1, b]
    for t in range(2, T):
        prev = la[t - 1]
        cur = la[t]
        st = state[t]
        ed = edge[t]
        for q in range(P):
            c = pair_b[q]
            g = st[c] + ed[pair_a[q], c]
            k0 = pred_ptr[q]
            k1 = pred_ptr[q + 1]
            m = -np.inf
            if g > -np.inf:
                for k in range(k0, k1):
                    x = prev[pred_src[k]] + pred_score[k]
                    if x > m:
                        m = x
            if m == -np.inf:
                cur[q] = -np.inf
                continue
            s = 0.0
            for k in range(k0, k1):
                s += math.exp(prev[pred_src[k]] + pred_score[k] - m)
            cur[q] = g + m + math.log(s)
    log_z = logsumexp_n(la[T - 1], P)
    if log_z == -np.inf:
        zero_outputs(node, pair, trip)
        return log_z
    for q in range(P):
        lb[T - 1, q] = 0.0
    for t in range(T - 1, 1, -1):
        st = state[t]
        ed = edge[t]
        nxt = lb[t]
        g = G[t]
        for q in range(P):
            c = pair_b[q]
            g[q] = st[c] + ed[pair_a[q], c] + nxt[q]
            mx[q] = -np.inf
            acc[q] = 0.0
        # two passes over the triples (max, then sum), keeping their values in kv
        for q in range(P):
            gq = g[q]
            if gq == -np.inf:
                continue
            for k in range(pred_ptr[q], pred_ptr[q + 1]):
                x = pred_score[k] + gq
                kv[k] = x
                p = pred_src[k]
                if x > mx[p]:
                    mx[p] = x
        for q in range(P):
            if g[q] == -np.inf:
                continue
            for k in range(pred_ptr[q], pred_ptr[q + 1]):
                p = pred_src[k]
                if kv[k] > -np.inf:
                    acc[p] += math.exp(kv[k] - mx[p])
        out = lb[t - 1]
        for p in range(P):
            out[p] = -np.inf if mx[p] == -np.inf else mx[p] + math.log(acc[p])
    node[:, :] = 0.0
    pair[0, :, :] = 0.0
    for t in range(1, T):
        for q in range(P):
            mx[q] = math.exp(la[t, q] + lb[t, q] - log_z)
        write_states(t, mx, pair_a, pair_b, pair_id, node, pair)
    trip[:] = 0.0
    for t in range(2, T):
        prev = la[t - 1]
        g = G[t]
        for q in range(P):
            gq = g[q] - log_z
            if gq == -np.inf:
                continue  # every term would be exp(-inf): skip the exps
            for k in range(pred_ptr[q], pred_ptr[q + 1]):
                trip[k] += math.exp(prev[pred_src[k]] + pred_score[k] + gq)
    return log_z
