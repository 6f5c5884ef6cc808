"""Numba kernels for first-order linear-chain inference with position-dependent transition
scores: Viterbi, loss-augmented Viterbi and forward-backward (log Z, node marginals and
per-position edge marginals). They serve label-pair features, which fire on (previous label,
label, observation) and so give every position its own transition matrix.

One lattice is ``state`` (T, L) float64 and ``edge`` (T, L, L) float64, both C-contiguous:
``edge[t, i, j]`` is the full score of label ``i`` at ``t - 1`` followed by label ``j`` at
``t`` (for t >= 1; ``edge[0]`` is never read). A path ``y`` scores

    F(y) = sum_t state[t, y_t] + sum_{t>=1} edge[t, y_{t-1}, y_t].

``-inf`` marks a forbidden label or transition and is handled as in
:mod:`tagger.inference.max_product` and :mod:`tagger.inference.sum_product`: never NaN, and if
log Z = -inf every marginal is 0. NaN and ``+inf`` are not allowed (not checked here). Labels
are int32, offsets int64; outputs are allocated by the caller.

Forward-backward and its column tables. The scaled recursions of ``sum_product`` cost one exp
per lattice node because the exps of the transitions, et[i, j] = exp(trans[i, j] - cm[j]),
are made once per batch. With a matrix per position that would become one exp per edge
(T L^2), the cost this module exists to avoid. But label-pair features fire on few
(position, label) pairs, so most columns of ``edge[t]`` equal those of a shared base matrix
``trans``. The caller passes the shared tables of ``trans`` (``sum_product.fb_tables``) and
``changed`` (T, L) bool: where ``changed[t, j]`` is False, column j at t uses the shared
column max cm[j] and exps et[:, j]; where it is True, that column's max and exps are
recomputed from ``edge[t]`` (L exps, none when state[t, j] = -inf). The scaled tier's
underflow bound (``sum_product``'s section comment) holds unchanged with the column maxima
taken per position, since every scaled quantity is still at most 1; where it declines, the
log-space tier runs on ``edge`` (O(T L^2) exps, exact for any score range).

A batch runs these one sentence at a time inside a parallel loop
(:mod:`tagger.chain.pairs`), which builds each sentence's ``edge`` from the model's weights.
"""

from __future__ import annotations

import math

import numpy as np

from tagger._config import NUMBA_OPTS
from tagger.inference.max_product import argmax_pred, max_plus
from tagger.jit import njit

_njit = njit(**NUMBA_OPTS)

_TINY = 2.2250738585072014e-308  # smallest normal float64
_FB_TOL = 1e-15  # the accepted relative mass lost to underflow, as in sum_product


# ---------------------------------------------------------------------------------------------
# Viterbi and loss-augmented Viterbi
# ---------------------------------------------------------------------------------------------


@_njit
def _pair_viterbi_core(state, edge, gold, loss_scale, out, delta):
    """Viterbi with per-position transitions, as ``max_product._viterbi_core``: the forward
    pass keeps only the maxima delta[t, j] (``delta`` has at least T rows), the backward pass
    recomputes each back-pointer from the same float operations, so it is exact, and the lowest
    label index wins every tie (at the last position too). With ``gold`` non-empty and a
    non-zero ``loss_scale``, ``loss_scale`` is added to every state score whose label differs
    from gold[t] without touching ``state``; otherwise ``gold`` is not read."""
    augment = gold.shape[0] > 0 and loss_scale != 0.0
    T = state.shape[0]
    L = state.shape[1]
    for t in range(T):
        cur = delta[t]
        if t > 0:
            max_plus(delta[t - 1], edge[t], cur)
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
    arg = np.int64(0)  # not the literal 0: numba would compile argmax_pred for it apart
    for j in range(1, L):
        if last[j] > best:
            best = last[j]
            arg = j
    out[T - 1] = arg
    for t in range(T - 1, 0, -1):
        arg = argmax_pred(delta[t - 1], edge[t], arg)
        out[t - 1] = arg
    return best


@_njit
def pair_viterbi_into(state, edge, gold, loss_scale, out):
    """Best path of one lattice into ``out`` (int32[T]); returns its score.

    ``gold`` empty (int32[0]): plain Viterbi, max_y F(y). ``gold`` int32[T]: loss-augmented,
    max_y F(y) + loss_scale * Hamming(gold, y), and the returned score includes the loss term
    (a ``loss_scale`` of 0.0 is plain Viterbi). Ties go to the lowest label index: at the last
    position, then for each predecessor. If every path scores ``-inf`` the result is ``-inf``
    and ``out`` still holds a valid path (labels in range).
    """
    T, L = state.shape
    delta = np.empty((T, L), dtype=np.float64)
    return _pair_viterbi_core(state, edge, gold, loss_scale, out, delta)


@_njit
def pair_fb_buffers(T, L):
    """Work buffers ``(A, B, ES, zf, zb, pt, w, cmt)`` of :func:`pair_forward_backward` for
    sentences of up to T tokens: three (T, L) float64 arrays, three float64[T] vectors and two
    float64[L] vectors. Only the first T rows of a sentence of T tokens are used."""
    mats = np.empty((3, T, L), dtype=np.float64)
    vec = np.empty((3, T), dtype=np.float64)
    lvec = np.empty((2, L), dtype=np.float64)
    return mats[0], mats[1], mats[2], vec[0], vec[1], vec[2], lvec[0], lvec[1]


@_njit
def _zero_marginals(node, pair):
    node[:, :] = 0.0
    pair[:, :, :] = 0.0


@_njit
def _pair_fb_scaled(state, edge, changed, tables, buffers, node, pair):
    """The scaled tier, ``sum_product._fb_scaled`` with per-position column tables. Returns
    (log Z, accepted); when not accepted, ``node`` is untouched and ``pair`` holds scratch.

    The exps of a changed column j at t, exp(edge[t, i, j] - cmt[j]) over i, are computed
    once and kept, contiguous, in row j of ``pair[t - 1]`` (pair[0] is all zero in the end,
    so the T - 1 positions with transitions fit); the forward pass, the backward pass and the
    edge marginals all read them there, the last going from t = T - 1 down, so that writing
    pair[t] only overwrites exps already used. Unchanged columns read the shared ``et`` (rows)
    and ``et_t`` (its transpose, for the backward pass); their rows of pair[t - 1] are never
    read.
    """
    et, et_t, cm = tables
    A, B, ES, zf, zb, pt, w, cmt = buffers
    T, L = state.shape
    # ---- forward
    r = -np.inf
    st = state[0]
    for j in range(L):
        if st[j] > r:
            r = st[j]
    if r == -np.inf:
        _zero_marginals(node, pair)
        return -np.inf, True
    a = A[0]
    for j in range(L):
        a[j] = math.exp(st[j] - r)
    log_c = r
    zf[0] = 1.0
    for t in range(1, T):
        st = state[t]
        ch = changed[t]
        ed = edge[t]
        tab = pair[t - 1]
        for j in range(L):
            if not ch[j]:
                cmt[j] = cm[j]
            elif st[j] == -np.inf:
                # the column carries no mass (es = 0): zeros, no exps
                cmt[j] = 0.0
                tj = tab[j]
                for i in range(L):
                    tj[i] = 0.0
            else:
                m = -np.inf
                for i in range(L):
                    if ed[i, j] > m:
                        m = ed[i, j]
                if m == -np.inf:
                    m = 0.0  # as fb_tables: an all -inf column has exps 0
                cmt[j] = m
                tj = tab[j]
                for i in range(L):
                    tj[i] = math.exp(ed[i, j] - m)
        r = -np.inf
        for j in range(L):
            v = st[j] + cmt[j]
            if v > r:
                r = v
        if r == -np.inf:
            _zero_marginals(node, pair)
            return -np.inf, True
        es = ES[t]
        for j in range(L):
            es[j] = math.exp(st[j] + cmt[j] - r)
        prev = A[t - 1]
        u = A[t]
        for j in range(L):
            u[j] = 0.0
        # every column from the shared rows (vectorised), then the changed ones redone from
        # their own exps, summed in the same order over i
        for i in range(L):
            ai = prev[i]
            if ai == 0.0:
                continue
            row = et[i]
            for j in range(L):
                u[j] += ai * row[j]
        for j in range(L):
            if ch[j]:
                tj = tab[j]
                s = 0.0
                for i in range(L):
                    s += prev[i] * tj[i]
                u[j] = s
        z = 0.0
        for j in range(L):
            u[j] *= es[j]
            if u[j] > z:
                z = u[j]
        # no feasible path, or underflow: the exact tier decides. A subnormal z fails the
        # bound below anyway (its term alone exceeds 5 L), and 1 / z could overflow
        if not z >= _TINY:
            return 0.0, False
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
        ch = changed[t + 1]
        tab = pair[t]
        for j in range(L):
            q[j] = es[j] * nxt[j]
        v = B[t]
        for i in range(L):
            v[i] = 0.0
        for j in range(L):
            qj = q[j]
            if qj == 0.0:
                continue
            row = tab[j] if ch[j] else et_t[j]
            for i in range(L):
                v[i] += qj * row[i]
        z = 0.0
        for i in range(L):
            if v[i] > z:
                z = v[i]
        if not z >= _TINY:
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
    # ---- edge marginals per position, from the last one down (see the docstring)
    for t in range(T - 1, 0, -1):
        es = ES[t]
        b = B[t]
        c = 1.0 / (zf[t] * pt[t])
        for j in range(L):
            w[j] = es[j] * b[j] * c
        prev = A[t - 1]
        out = pair[t]
        # every column from the shared rows (vectorised), then the changed ones again
        for i in range(L):
            ai = prev[i]
            row = out[i]
            erow = et[i]
            for j in range(L):
                row[j] = ai * erow[j] * w[j]
        ch = changed[t]
        tab = pair[t - 1]
        for j in range(L):
            if ch[j]:
                tj = tab[j]
                wj = w[j]
                for i in range(L):
                    out[i, j] = prev[i] * tj[i] * wj
    pair[0, :, :] = 0.0
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
def _pair_fb_exact(state, edge, node, pair, la, lb, tmp):
    """The log-space tier, ``sum_product._fb_exact`` on ``edge[t]``: exact for any score range.
    Returns log Z. la[t, j]: log-sum-exp over prefixes ending in (t, j), state included;
    lb[t, j]: over suffixes after (t, j). la, lb: at least T rows of L; tmp float64[L]."""
    T, L = state.shape
    for j in range(L):
        la[0, j] = state[0, j]
    for t in range(1, T):
        for j in range(L):
            for i in range(L):
                tmp[i] = la[t - 1, i] + edge[t, i, j]
            la[t, j] = state[t, j] + _logsumexp(tmp)
    log_z = _logsumexp(la[T - 1])
    if log_z == -np.inf:
        _zero_marginals(node, pair)
        return log_z
    for j in range(L):
        lb[T - 1, j] = 0.0
    for t in range(T - 2, -1, -1):
        for i in range(L):
            for j in range(L):
                tmp[j] = edge[t + 1, i, j] + state[t + 1, j] + lb[t + 1, j]
            lb[t, i] = _logsumexp(tmp)
    for t in range(T):
        for j in range(L):
            node[t, j] = math.exp(la[t, j] + lb[t, j] - log_z)
    pair[0, :, :] = 0.0
    for t in range(1, T):
        for j in range(L):
            g = state[t, j] + lb[t, j] - log_z
            for i in range(L):
                # a -inf g would make every sum -inf anyway; skip its exps
                pair[t, i, j] = 0.0 if g == -np.inf else math.exp(la[t - 1, i] + edge[t, i, j] + g)
    return log_z


@_njit
def pair_forward_backward(state, edge, changed, tables, buffers, node, pair):
    """Log Z of one lattice; node marginals into ``node`` (T, L) and per-position edge
    marginals into ``pair`` (T, L, L), both overwritten.

    node[t, l] = P(y_t = l); pair[t, i, j] = P(y_{t-1} = i, y_t = j) for t >= 1 and
    pair[0] = 0. If no path is feasible (log Z = -inf) every marginal is 0. ``tables`` is
    ``sum_product.fb_tables(trans)`` of the shared matrix ``trans``; ``changed`` (T, L) bool is
    False only where column j of ``edge[t]`` equals column j of ``trans`` exactly (True is
    always correct, only slower); ``buffers`` from :func:`pair_fb_buffers` (at least T rows).
    Scaled recursions where their underflow bound accepts them, else log space.
    """
    log_z, ok = _pair_fb_scaled(state, edge, changed, tables, buffers, node, pair)
    if ok:
        return log_z
    A, B, _, _, _, _, w, _ = buffers
    return _pair_fb_exact(state, edge, node, pair, A, B, w)
