"""Forward-backward on linear chains: log Z, node marginals and summed edge marginals, by the
scaled recursions where their error bound allows and in log space otherwise (the section
comment below gives the bound). Scores and conventions as in :mod:`tagger.inference.max_product`.
"""

from __future__ import annotations

import math

import numpy as np

from tagger._config import NUMBA_OPTS, NUMBA_PARALLEL_OPTS
from tagger.inference.batching import chunking, max_length
from tagger.jit import njit, prange

_njit = njit(**NUMBA_OPTS)
_njit_parallel = njit(**NUMBA_PARALLEL_OPTS)


# ---------------------------------------------------------------------------------------------
# Forward-backward
# ---------------------------------------------------------------------------------------------
#
# Two tiers per sentence.
#
# 1. ``_fb_scaled``: the classic scaled recursions (as in CRFsuite): one exp per lattice node and
#    one log per position, no exp per edge. With cm[j] = max_i trans[i, j],
#    et[i, j] = exp(trans[i, j] - cm[j]) and es[t, j] = exp(state[t, j] + cm[j] - r_t),
#    r_t = max_j (state[t, j] + cm[j]) (at t = 0: r_0 = max_j state[0, j] and
#    es[0, j] = exp(state[0, j] - r_0)):
#
#        u_t[j] = es[t, j] sum_i a_{t-1}[i] et[i, j],   z_t = max_j u_t[j],   a_t = u_t / z_t
#        alpha_t[j] = exp(C_t) a_t[j],  C_t = C_{t-1} + r_t + log z_t,  log Z = C_{T-1} + log sum a
#        v_t[i] = sum_j et[i, j] es[t+1, j] b_{t+1}[j],  zb_t = max_i v_t[i],  b_t = v_t / zb_t
#        P(y_t = j)              = a_t[j] b_t[j] / P_t,        P_t = sum_j a_t[j] b_t[j]
#        P(y_{t-1} = i, y_t = j) = a_{t-1}[i] et[i, j] es[t, j] b_t[j] / (z_t P_t)
#
#    (the last because sum_ij a_{t-1}[i] et[i, j] es[t, j] b_t[j] = sum_j u_t[j] b_t[j] = z_t P_t).
#    Beyond ordinary rounding, the only error is underflow: a product or exp below the smallest
#    normal double (TINY) is lost. Step t of the forward pass loses at most 4 L TINY per entry in
#    units of max a_{t-1} = 1, i.e. path mass of at most 4 L^2 TINY exp(C_t) / z_t in all; each
#    lost prefix continues with at most max_j beta_t[j], while Z = exp(C_t) P_t max_j beta_t[j].
#    So the relative mass lost at forward step t is at most 5 L^2 TINY / (z_t P_t), likewise
#    5 L^2 TINY / (zb_t P_t) at backward step t, and summed over steps this bounds the relative
#    error of Z and (doubled) the absolute error of every marginal, because the computed
#    marginals are exact marginals of the paths that were kept. (P_t computed from the kept
#    paths is at most the true one, so the bound stays conservative.) The result is accepted
#    when that sum is below _FB_TOL; scores of moderate range pass with hundreds of orders of
#    magnitude to spare.
# 2. ``_fb_exact``: plain log-space forward-backward (a max-subtracted log-sum-exp over every
#    edge, O(T L^2) exps), used when tier 1 declines: a zero normaliser (underflow, or no
#    feasible path) or a bound above _FB_TOL. It is exact for any score range.
#
# Both handle -inf: a log-sum-exp over nothing but -inf is -inf; if log Z = -inf (no feasible
# path) every marginal is 0.

_TINY = 2.2250738585072014e-308  # smallest normal float64
_FB_TOL = 1e-15


@_njit
def fb_tables(trans):
    """The tables ``(et, et_t, cm)`` of ``_fb_scaled`` for one transition matrix, made once
    per call of a batch: cm[j] = max_i trans[i, j] (0 for an all -inf column),
    et[i, j] = exp(trans[i, j] - cm[j]) and et_t its transpose (so the backward pass also runs
    over contiguous rows)."""
    L = trans.shape[0]
    et = np.empty((L, L), dtype=np.float64)
    et_t = np.empty((L, L), dtype=np.float64)
    cm = np.empty(L, dtype=np.float64)
    for j in range(L):
        cm[j] = -np.inf
    for i in range(L):
        for j in range(L):
            if trans[i, j] > cm[j]:
                cm[j] = trans[i, j]
    for j in range(L):
        if cm[j] == -np.inf:
            cm[j] = 0.0
    for i in range(L):
        for j in range(L):
            e = math.exp(trans[i, j] - cm[j])
            et[i, j] = e
            et_t[j, i] = e
    return et, et_t, cm


@_njit
def fb_buffers(T, L):
    """Work buffers ``(A, B, ES, zf, zb, pt, w)`` for sentences of up to T tokens and L labels:
    three (T, L) float64 arrays, three float64[T] vectors and one float64[L]."""
    vec = np.empty((3, T), dtype=np.float64)
    return (
        np.empty((T, L), dtype=np.float64),
        np.empty((T, L), dtype=np.float64),
        np.empty((T, L), dtype=np.float64),
        vec[0],
        vec[1],
        vec[2],
        np.empty(L, dtype=np.float64),
    )


@_njit
def _zero_marginals(node, edge):
    T, L = node.shape
    for t in range(T):
        for j in range(L):
            node[t, j] = 0.0
    for i in range(L):
        for j in range(L):
            edge[i, j] = 0.0


@_njit
def _fb_scaled(state, tables, buffers, node, edge):
    """Tier 1 (see the section comment). Returns (log Z, accepted).

    When ``accepted`` is False nothing has been written to ``node`` or ``edge`` and the caller
    must use ``_fb_exact``. ``tables`` come from :func:`fb_tables`, ``buffers`` from
    :func:`fb_buffers` (at least T rows).
    """
    et, et_t, cm = tables
    A, B, ES, zf, zb, pt, w = buffers
    T, L = state.shape
    # ---- forward
    r = -np.inf
    st = state[0]
    for j in range(L):
        if st[j] > r:
            r = st[j]
    if r == -np.inf:
        _zero_marginals(node, edge)
        return -np.inf, True
    a = A[0]
    for j in range(L):
        a[j] = math.exp(st[j] - r)
    log_c = r
    zf[0] = 1.0
    for t in range(1, T):
        st = state[t]
        r = -np.inf
        for j in range(L):
            v = st[j] + cm[j]
            if v > r:
                r = v
        if r == -np.inf:
            _zero_marginals(node, edge)
            return -np.inf, True
        es = ES[t]
        for j in range(L):
            es[j] = math.exp(st[j] + cm[j] - r)
        prev = A[t - 1]
        u = A[t]
        for j in range(L):
            u[j] = 0.0
        for i in range(L):
            ai = prev[i]
            if ai == 0.0:
                continue
            row = et[i]
            for j in range(L):
                u[j] += ai * row[j]
        z = 0.0
        for j in range(L):
            u[j] *= es[j]
            if u[j] > z:
                z = u[j]
        if not z > 0.0:
            return 0.0, False  # no feasible path, or underflow: the exact tier decides
        inv = 1.0 / z
        for j in range(L):
            u[j] *= inv
        zf[t] = z
        log_c += r + math.log(z)
    total = 0.0
    a = A[T - 1]
    for j in range(L):
        total += a[j]
    log_z = log_c + math.log(total)
    # ---- backward
    b = B[T - 1]
    for j in range(L):
        b[j] = 1.0
    zb[T - 1] = np.inf  # nothing is computed, so nothing is lost, at the last position
    q = w
    for t in range(T - 2, -1, -1):
        es = ES[t + 1]
        nxt = B[t + 1]
        for j in range(L):
            q[j] = es[j] * nxt[j]
        v = B[t]
        for i in range(L):
            v[i] = 0.0
        for j in range(L):
            qj = q[j]
            if qj == 0.0:
                continue
            row = et_t[j]
            for i in range(L):
                v[i] += qj * row[i]
        z = 0.0
        for i in range(L):
            if v[i] > z:
                z = v[i]
        if not z > 0.0:
            return 0.0, False
        inv = 1.0 / z
        for i in range(L):
            v[i] *= inv
        zb[t] = z
    # ---- bound on the mass lost to underflow, before anything is written
    lost = 0.0
    unit = 5.0 * L * L * _TINY
    for t in range(T):
        a = A[t]
        b = B[t]
        p = 0.0
        for j in range(L):
            p += a[j] * b[j]
        if not p > 0.0:
            return 0.0, False
        pt[t] = p
        lost += unit * ((1.0 / zf[t] + 1.0 / zb[t]) / p)
    if not lost <= _FB_TOL:
        return 0.0, False
    # ---- node marginals
    for t in range(T):
        a = A[t]
        b = B[t]
        nt = node[t]
        inv = 1.0 / pt[t]
        for j in range(L):
            nt[j] = a[j] * b[j] * inv
    # ---- edge marginals, summed over positions
    for i in range(L):
        for j in range(L):
            edge[i, j] = 0.0
    for t in range(1, T):
        es = ES[t]
        b = B[t]
        c = 1.0 / (zf[t] * pt[t])
        for j in range(L):
            w[j] = es[j] * b[j] * c
        prev = A[t - 1]
        for i in range(L):
            ai = prev[i]
            if ai == 0.0:
                continue
            row = et[i]
            erow = edge[i]
            for j in range(L):
                erow[j] += ai * row[j] * w[j]
    return log_z, True


@_njit
def _logsumexp(x):
    """log sum_i exp x[i], max-subtracted; -inf when every entry is -inf."""
    m = -np.inf
    for i in range(x.shape[0]):
        if x[i] > m:
            m = x[i]
    if m == -np.inf:
        return -np.inf
    acc = 0.0
    for i in range(x.shape[0]):
        acc += math.exp(x[i] - m)
    return m + math.log(acc)


@_njit
def _fb_exact(state, trans, node, edge, la, lb, tmp):
    """Tier 2: log-space forward-backward, exact for any score range. Returns log Z.

    la[t, j] = log-sum-exp over prefixes ending in (t, j) (state included);
    lb[t, j] = log-sum-exp over suffixes after (t, j) (state[t, j] excluded).
    Buffers: la, lb float64 with at least T rows of L; tmp float64[L].
    """
    T, L = state.shape
    for j in range(L):
        la[0, j] = state[0, j]
    for t in range(1, T):
        for j in range(L):
            for i in range(L):
                tmp[i] = la[t - 1, i] + trans[i, j]
            la[t, j] = state[t, j] + _logsumexp(tmp)
    log_z = _logsumexp(la[T - 1])
    if log_z == -np.inf:
        _zero_marginals(node, edge)
        return log_z
    for j in range(L):
        lb[T - 1, j] = 0.0
    for t in range(T - 2, -1, -1):
        for i in range(L):
            for j in range(L):
                tmp[j] = trans[i, j] + state[t + 1, j] + lb[t + 1, j]
            lb[t, i] = _logsumexp(tmp)
    for t in range(T):
        for j in range(L):
            node[t, j] = math.exp(la[t, j] + lb[t, j] - log_z)
    for i in range(L):
        for j in range(L):
            edge[i, j] = 0.0
    for t in range(1, T):
        for j in range(L):
            g = state[t, j] + lb[t, j] - log_z
            if g == -np.inf:
                continue
            for i in range(L):
                edge[i, j] += math.exp(la[t - 1, i] + trans[i, j] + g)
    return log_z


@_njit
def fb_sentence(state, trans, tables, buffers, node, edge):
    """Log Z of one lattice, its node marginals into ``node`` and summed edge marginals into
    ``edge``: the scaled tier where it is accepted, else the log-space one. ``tables`` from
    :func:`fb_tables` of ``trans``, ``buffers`` from :func:`fb_buffers`."""
    log_z, ok = _fb_scaled(state, tables, buffers, node, edge)
    if ok:
        return log_z
    A, B, _, _, _, _, w = buffers
    return _fb_exact(state, trans, node, edge, A, B, w)


@_njit
def forward_backward_into(state, trans, node_marg, edge_marg):
    """Log Z of one lattice; node marginals into ``node_marg`` (T, L) and edge marginals summed
    over positions into ``edge_marg`` (L, L), both overwritten.

    log Z = log sum_y exp F(y); node_marg[t, l] = P(y_t = l);
    edge_marg[i, j] = sum_{t>=1} P(y_{t-1} = i, y_t = j). If no path is feasible
    (log Z = -inf), all marginals are 0.
    """
    T, L = state.shape
    return fb_sentence(state, trans, fb_tables(trans), fb_buffers(T, L), node_marg, edge_marg)


@_njit_parallel
def forward_backward_batch_into(state, offsets, trans, node_marg, edge_marg, log_z):
    """Forward-backward over stacked sentences, in parallel over sentences.

    ``node_marg`` (N, L); ``edge_marg`` (n, L, L), one summed matrix per sentence (the caller
    sums them, so parallel writes never collide); ``log_z`` float64[n]. An empty sentence has
    log Z = 0 (one empty path) and zero edge marginals.
    """
    n = offsets.shape[0] - 1
    L = state.shape[1]
    tables = fb_tables(trans)
    per, n_chunks = chunking(n)
    for c in prange(n_chunks):
        s0 = c * per
        s1 = min(n, s0 + per)
        buffers = fb_buffers(max_length(offsets, s0, s1), L)
        for k in range(s0, s1):
            a = offsets[k]
            b = offsets[k + 1]
            if b <= a:
                log_z[k] = 0.0
                for i in range(L):
                    for j in range(L):
                        edge_marg[k, i, j] = 0.0
                continue
            log_z[k] = fb_sentence(state[a:b], trans, tables, buffers, node_marg[a:b], edge_marg[k])
