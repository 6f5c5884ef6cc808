"""Numba kernels for first-order linear-chain inference.

Every kernel works on one lattice (or a stack of lattices): ``state`` (T, L) float64 state
scores and ``trans`` (L, L) float64 transition scores, ``trans[i, j]`` being the score of label
``i`` followed by label ``j``. A path ``y`` scores

    F(y) = sum_t state[t, y_t] + sum_{t>=1} trans[y_{t-1}, y_t].

``-inf`` marks a forbidden label or transition and is handled exactly: a max or a log-sum-exp
over nothing but ``-inf`` is ``-inf``, never NaN. NaN and ``+inf`` are not allowed; the public
wrappers in ``tagger.inference`` reject them, the kernels do not check.

The kernels take C-contiguous arrays of the documented dtypes (float64 scores, int32 labels,
int64 offsets) and write into output arrays that the caller allocates. They import nothing of
the package except ``tagger._config``.

Batched kernels stack the rows of many sentences in one (N, L) array; sentence ``s`` occupies
rows ``offsets[s]:offsets[s + 1]``. They run in parallel (``prange``) over chunks of sentences;
each chunk allocates its work buffers once, sized for its longest sentence.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from tagger._config import NUMBA_OPTS, NUMBA_PARALLEL_OPTS


_njit = numba.njit(**NUMBA_OPTS)
_njit_parallel = numba.njit(**NUMBA_PARALLEL_OPTS)


# Sentences per parallel chunk: at most this many, and about this many chunks in all.
_CHUNK_MAX = 64
_CHUNKS = 64


# ---------------------------------------------------------------------------------------------
# Shared pieces
# ---------------------------------------------------------------------------------------------


@_njit
def _max_plus(prev, mat, cur):
    """cur[j] = max_i prev[i] + mat[i, j] (max-plus vector-matrix product).

    The inner loop runs over a contiguous row of ``mat`` with a compare-and-select, which LLVM
    vectorises. The order of the max does not matter (a max of floats is exact), so ties are
    resolved later, by whoever needs an argmax.
    """
    L = cur.shape[0]
    p0 = prev[0]
    row = mat[0]
    for j in range(L):
        cur[j] = p0 + row[j]
    for i in range(1, L):
        pi = prev[i]
        row = mat[i]
        for j in range(L):
            v = pi + row[j]
            c = cur[j]
            cur[j] = v if v > c else c


@_njit
def _argmax_pred(prev, trans, j):
    """argmax_i prev[i] + trans[i, j], lowest i on ties (0 when everything is -inf)."""
    L = prev.shape[0]
    best = prev[0] + trans[0, j]
    arg = 0
    for i in range(1, L):
        v = prev[i] + trans[i, j]
        if v > best:
            best = v
            arg = i
    return arg


@_njit
def _chunking(n):
    """(sentences per chunk, number of chunks) for ``n`` sentences."""
    per = (n + _CHUNKS - 1) // _CHUNKS
    if per > _CHUNK_MAX:
        per = _CHUNK_MAX
    if per < 1:
        per = 1
    return per, (n + per - 1) // per


@_njit
def _max_length(offsets, s0, s1):
    """Length of the longest sentence among s0..s1-1, at least 1."""
    m = 1
    for s in range(s0, s1):
        d = offsets[s + 1] - offsets[s]
        if d > m:
            m = d
    return m


# ---------------------------------------------------------------------------------------------
# Viterbi and loss-augmented Viterbi
# ---------------------------------------------------------------------------------------------


@_njit
def _viterbi_core(state, trans, gold, loss_scale, augment, out, delta):
    """Viterbi on one lattice; ``delta`` is a float64 work array with at least T rows.

    delta[t, j] is the best score of a prefix ending in label j at position t. The forward pass
    keeps only these maxima (no back-pointer bookkeeping in the O(L^2) loop); the backward pass
    recomputes each back-pointer, argmax_i delta[t-1, i] + trans[i, y_t], from the same float
    operations, so it is exact, with the lowest label index winning ties (likewise at the last
    position). When ``augment`` is true, ``loss_scale`` is added to every state score whose label
    differs from ``gold[t]`` (Hamming-loss-augmented decoding) without touching ``state``.
    Returns the best (augmented) score and writes the path into ``out``.
    """
    T = state.shape[0]
    L = state.shape[1]
    for t in range(T):
        cur = delta[t]
        if t > 0:
            _max_plus(delta[t - 1], trans, cur)
        else:
            for j in range(L):
                cur[j] = 0.0
        st = state[t]
        if augment:
            g = gold[t]
            for j in range(L):
                if j != g:
                    cur[j] += st[j] + loss_scale
                else:
                    cur[j] += st[j]
        else:
            for j in range(L):
                cur[j] += st[j]
    last = delta[T - 1]
    best = last[0]
    arg = 0
    for j in range(1, L):
        if last[j] > best:
            best = last[j]
            arg = j
    out[T - 1] = arg
    for t in range(T - 1, 0, -1):
        arg = _argmax_pred(delta[t - 1], trans, arg)
        out[t - 1] = arg
    return best


@_njit
def viterbi_into(state, trans, out):
    """Best path of one lattice into ``out`` (int32[T]); returns its score.

    Ties go to the lowest label index. If every path scores ``-inf`` the result is ``-inf``
    and ``out`` still holds a valid path (labels in range).
    """
    T, L = state.shape
    delta = np.empty((T, L), dtype=np.float64)
    dummy = np.zeros(1, dtype=np.int32)
    return _viterbi_core(state, trans, dummy, 0.0, False, out, delta)


@_njit
def loss_augmented_viterbi_into(state, trans, gold, loss_scale, out):
    """argmax_y F(y) + loss_scale * Hamming(gold, y) into ``out``; returns that augmented value.

    ``state`` is not modified: the loss is added on the fly while scanning each position.
    """
    T, L = state.shape
    delta = np.empty((T, L), dtype=np.float64)
    return _viterbi_core(state, trans, gold, loss_scale, True, out, delta)


@_njit_parallel
def _viterbi_batch_impl(state, offsets, trans, gold, loss_scale, augment, out, scores):
    n = offsets.shape[0] - 1
    L = state.shape[1]
    per, n_chunks = _chunking(n)
    for c in prange(n_chunks):
        s0 = c * per
        s1 = min(n, s0 + per)
        delta = np.empty((_max_length(offsets, s0, s1), L), dtype=np.float64)
        for s in range(s0, s1):
            a = offsets[s]
            b = offsets[s + 1]
            if b <= a:
                scores[s] = 0.0
                continue
            if augment:
                g = gold[a:b]
            else:
                g = gold[0:1]
            scores[s] = _viterbi_core(state[a:b], trans, g, loss_scale, augment, out[a:b], delta)


@_njit
def viterbi_batch_into(state, offsets, trans, out, scores):
    """Viterbi over stacked sentences, in parallel over sentences.

    ``state`` (N, L); sentence ``s`` is rows ``offsets[s]:offsets[s+1]``. Labels go into
    ``out`` int32[N], best scores into ``scores`` float64[n]; empty sentences score 0.
    """
    dummy = np.zeros(1, dtype=np.int32)
    _viterbi_batch_impl(state, offsets, trans, dummy, 0.0, False, out, scores)


@_njit
def loss_augmented_viterbi_batch_into(state, offsets, trans, gold, loss_scale, out, scores):
    """Loss-augmented Viterbi over stacked sentences (``gold`` int32[N]), in parallel.

    Same layout as ``viterbi_batch_into``; ``scores[s]`` is the augmented value
    max_y F(y) + loss_scale * Hamming(gold_s, y).
    """
    _viterbi_batch_impl(state, offsets, trans, gold, loss_scale, True, out, scores)


# ---------------------------------------------------------------------------------------------
# Second-best path
# ---------------------------------------------------------------------------------------------


@_njit
def second_best_viterbi_into(state, trans, exclude, out):
    """Best path that differs from ``exclude`` in at least one position; returns its score.

    Every such path passes through some node (t, l) with l != exclude[t], and every path
    through such a node differs from ``exclude``. With alpha[t, l] the best prefix score ending
    in (t, l) (state[t, l] included) and beta[t, l] the best suffix score after (t, l)
    (state[t, l] excluded), the best path through (t, l) scores alpha[t, l] + beta[t, l]. This
    is the alpha + beta - state of the usual statement, arranged so that a forbidden node never
    computes ``-inf - (-inf)``. The best eligible node wins (ties: lowest t, then lowest l) and
    the path is rebuilt from back-pointers (prefix) and forward-pointers (suffix), both
    recomputed on the way with the lowest label winning ties. O(T L^2).

    With L = 1 no other path exists: returns ``-inf`` and fills ``out`` with -1. If every
    other path is ``-inf``, returns ``-inf`` with a valid path that differs from ``exclude``.
    """
    T, L = state.shape
    if L < 2:
        for t in range(T):
            out[t] = -1
        return -np.inf
    alpha = np.empty((T, L), dtype=np.float64)
    beta = np.empty((T, L), dtype=np.float64)
    trans_t = np.empty((L, L), dtype=np.float64)
    g = np.empty(L, dtype=np.float64)
    for i in range(L):
        for j in range(L):
            trans_t[j, i] = trans[i, j]
    for j in range(L):
        alpha[0, j] = state[0, j]
    for t in range(1, T):
        cur = alpha[t]
        _max_plus(alpha[t - 1], trans, cur)
        st = state[t]
        for j in range(L):
            cur[j] += st[j]
    for j in range(L):
        beta[T - 1, j] = 0.0
    for t in range(T - 2, -1, -1):
        nxt = beta[t + 1]
        st = state[t + 1]
        for j in range(L):
            g[j] = st[j] + nxt[j]
        # beta[t, i] = max_j trans[i, j] + g[j] = max_j g[j] + trans_t[j, i]
        _max_plus(g, trans_t, beta[t])
    # best node off the excluded path; start from the first eligible node so that a valid,
    # different path comes out even when everything is -inf
    bt = 0
    bl = 1 if exclude[0] == 0 else 0
    bs = alpha[0, bl] + beta[0, bl]
    for t in range(T):
        e = exclude[t]
        at = alpha[t]
        btt = beta[t]
        for j in range(L):
            if j != e:
                v = at[j] + btt[j]
                if v > bs:
                    bs = v
                    bt = t
                    bl = j
    out[bt] = bl
    lab = bl
    for t in range(bt, 0, -1):
        lab = _argmax_pred(alpha[t - 1], trans, lab)
        out[t - 1] = lab
    lab = bl
    for t in range(bt, T - 1):
        nxt = beta[t + 1]
        st = state[t + 1]
        row = trans[lab]
        # same operands and association as in the beta pass, so the argmax is exact
        best = (st[0] + nxt[0]) + row[0]
        arg = 0
        for j in range(1, L):
            v = (st[j] + nxt[j]) + row[j]
            if v > best:
                best = v
                arg = j
        lab = arg
        out[t + 1] = lab
    return bs


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
def fb_prepare(trans, et, et_t, cm):
    """Per-call tables for ``_fb_scaled``.

    cm[j] = max_i trans[i, j] (0 for an all -inf column), et[i, j] = exp(trans[i, j] - cm[j])
    and et_t its transpose (so the backward pass also runs over contiguous rows).
    """
    L = trans.shape[0]
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
def _fb_scaled(state, et, et_t, cm, node, edge, A, B, ES, zf, zb, pt, w):
    """Tier 1 (see the section comment). Returns (log Z, accepted).

    When ``accepted`` is False nothing has been written to ``node`` or ``edge`` and the caller
    must use ``_fb_exact``. Buffers: A, B, ES float64 with at least T rows of L; zf, zb, pt
    float64[>= T]; w float64[L].
    """
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
def fb_sentence(state, trans, et, et_t, cm, node, edge, A, B, ES, zf, zb, pt, w):
    log_z, ok = _fb_scaled(state, et, et_t, cm, node, edge, A, B, ES, zf, zb, pt, w)
    if ok:
        return log_z
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
    et = np.empty((L, L), dtype=np.float64)
    et_t = np.empty((L, L), dtype=np.float64)
    cm = np.empty(L, dtype=np.float64)
    fb_prepare(trans, et, et_t, cm)
    A = np.empty((T, L), dtype=np.float64)
    B = np.empty((T, L), dtype=np.float64)
    ES = np.empty((T, L), dtype=np.float64)
    vec = np.empty((3, T), dtype=np.float64)
    w = np.empty(L, dtype=np.float64)
    return fb_sentence(
        state, trans, et, et_t, cm, node_marg, edge_marg, A, B, ES, vec[0], vec[1], vec[2], w
    )


@_njit_parallel
def forward_backward_batch_into(state, offsets, trans, node_marg, edge_marg, log_z):
    """Forward-backward over stacked sentences, in parallel over sentences.

    ``node_marg`` (N, L); ``edge_marg`` (n, L, L), one summed matrix per sentence (the caller
    sums them, so parallel writes never collide); ``log_z`` float64[n]. An empty sentence has
    log Z = 0 (one empty path) and zero edge marginals.
    """
    n = offsets.shape[0] - 1
    L = state.shape[1]
    et = np.empty((L, L), dtype=np.float64)
    et_t = np.empty((L, L), dtype=np.float64)
    cm = np.empty(L, dtype=np.float64)
    fb_prepare(trans, et, et_t, cm)
    per, n_chunks = _chunking(n)
    for c in prange(n_chunks):
        s0 = c * per
        s1 = min(n, s0 + per)
        tmax = _max_length(offsets, s0, s1)
        A = np.empty((tmax, L), dtype=np.float64)
        B = np.empty((tmax, L), dtype=np.float64)
        ES = np.empty((tmax, L), dtype=np.float64)
        vec = np.empty((3, tmax), dtype=np.float64)
        w = np.empty(L, dtype=np.float64)
        for k in range(s0, s1):
            a = offsets[k]
            b = offsets[k + 1]
            if b <= a:
                log_z[k] = 0.0
                for i in range(L):
                    for j in range(L):
                        edge_marg[k, i, j] = 0.0
                continue
            log_z[k] = fb_sentence(
                state[a:b], trans, et, et_t, cm, node_marg[a:b], edge_marg[k],
                A, B, ES, vec[0], vec[1], vec[2], w,
            )
