"""Numba kernels for exact inference in a second-order linear chain restricted to allowed label
pairs and triples: Viterbi and forward-backward (log Z, node marginals, per-position pair
marginals and triple marginals summed over positions).

A sentence of T tokens and L labels has ``state`` (T, L) and ``edge`` (T, L, L) float64 scores
as in :mod:`tagger.inference.pair_chain` (``edge[t, a, b]``: label a at t - 1, then b at t;
``edge[0]`` is never read). On top of them the model scores label triples. Only some pairs and
triples are allowed: a labeling y is allowed iff every (y_{t-1}, y_t) is an allowed pair and
every (y_{t-2}, y_{t-1}, y_t) an allowed triple (with one token every label is allowed). It
scores

    F(y) = sum_t state[t, y_t] + sum_{t>=1} edge[t, y_{t-1}, y_t]
           + sum_{t>=2} pred_score[k(y_{t-2}, y_{t-1}, y_t)],

and a labeling that is not allowed is excluded (score -inf). ``-inf`` in ``state`` or ``edge``
marks a forbidden label or transition and is handled as in the first-order modules: never
NaN; with no allowed finite path Viterbi returns -inf (and some path of labels in range) and
log Z = -inf with every marginal 0. ``edge`` entries of pairs that are not allowed are never read.

The pair-state lattice. The states are the allowed pairs q = (a, b), listed by ``pair_a``,
``pair_b`` (int32[P]) and found by ``pair_id`` (int32 (L, L), -1 for a pair not allowed). At
each position t >= 1 the state q = (b, c) stands for (y_{t-1}, y_t) and carries the node score
g_t[q] = state[t, c] + edge[t, b, c] (plus state[0, b] at t = 1). Its allowed predecessors
p = (a, b) at t - 1 are ``pred_src[pred_ptr[q]:pred_ptr[q + 1]]`` (``pred_ptr`` int64[P + 1],
``pred_src`` int32[K], sorted by p within q): entry k is the triple (a, b, c), the lattice's
edge p -> q, scored ``pred_score[k]``. A path through positions 1..T-1 is an allowed labeling,
so Viterbi and forward-backward cost O(T K) instead of the full second-order O(T L^3).

Per-evaluation tables (:func:`order2_tables`). The triple scores do not depend on the position,
so their exps are made once per evaluation of a batch: shift[q] = max of pred_score over q's
list, ek[k] = exp(pred_score[k] - shift[q]), and dst[k] = the state whose list holds k (for the
backward pass's flat loop over the triples). The scaled forward-backward multiplies by ek and
folds shift[q] into the one exp per pair state and position, exp(g_t[q] + shift[q] - r_t).
A token then costs at most P exps and 3 K multiply-adds (forward, backward, triple marginals):
with K ~ 1,000-3,000 triples and P ~ 100-200 states, T K exps per sentence would dominate
training. The section comment below gives the scaled tier's underflow bound and the log-space
tier that takes over where it declines.

Arrays are C-contiguous of the documented dtypes; outputs and work buffers are the caller's.
"""

from __future__ import annotations

import math

import numpy as np

from tagger._config import NUMBA_OPTS
from tagger.inference.second_order_exact import fb_exact, logsumexp_n, write_states, zero_outputs
from tagger.jit import njit

_njit = njit(**NUMBA_OPTS)

_TINY = 2.2250738585072014e-308  # smallest normal float64
_FB_TOL = 1e-15  # the accepted relative mass lost to underflow, as in sum_product


@_njit
def order2_buffers(T, L, P, K):
    """Work buffers ``(A, B, G, zf, zb, pt, v, w, kv)`` for sentences of up to T tokens: three
    (T, P) float64 arrays, three float64[T], two float64[P] and one float64[K]. Only the first T
    rows are used; Viterbi uses A alone. Nothing is sized by ``L`` (the states are pairs)."""
    mats = np.empty((3, T, P), dtype=np.float64)
    vec = np.empty((3, T), dtype=np.float64)
    pvec = np.empty((2, P), dtype=np.float64)
    kv = np.empty(K, dtype=np.float64)
    return mats[0], mats[1], mats[2], vec[0], vec[1], vec[2], pvec[0], pvec[1], kv


@_njit
def order2_tables(pred_score, pred_ptr, P):
    """``(ek, shift, dst)`` for :func:`order2_forward_backward`, made once per evaluation:
    shift[q] = max_k pred_score[k] over q's predecessor list (0 for an empty list or one of
    -inf only), ek[k] = exp(pred_score[k] - shift[q]) in [0, 1] and dst[k] = q, the state whose
    list holds triple k (float64[K], float64[P], int32[K])."""
    K = pred_score.shape[0]
    ek = np.empty(K, dtype=np.float64)
    shift = np.empty(P, dtype=np.float64)
    dst = np.empty(K, dtype=np.int32)
    for q in range(P):
        k0 = pred_ptr[q]
        k1 = pred_ptr[q + 1]
        m = -np.inf
        for k in range(k0, k1):
            dst[k] = q
            if pred_score[k] > m:
                m = pred_score[k]
        if m == -np.inf:
            m = 0.0
        shift[q] = m
        for k in range(k0, k1):
            ek[k] = math.exp(pred_score[k] - m)
    return ek, shift, dst


# ---------------------------------------------------------------------------------------------
# Viterbi
# ---------------------------------------------------------------------------------------------


@_njit
def order2_viterbi_into(
    state, edge, pair_a, pair_b, pair_id, pred_ptr, pred_src, pred_score, buffers, out
):
    """Best allowed labeling into ``out`` (int32[T]); returns its score F (-inf if none).

    delta[t, q] is the best score of an allowed prefix whose last two labels are the pair q
    (row A of ``buffers``). The forward pass keeps only these maxima; the backward pass
    recomputes each back-pointer from the same float operations, so it is exact. Ties go to the
    lowest pair-state id at the last position, then to the predecessor listed first (the lowest
    state id); with one token, to the lowest label. With no allowed finite labeling the score
    is -inf and ``out`` holds labels in range. ``pair_id`` is not read (the signature matches
    :func:`order2_forward_backward`).
    """
    T, L = state.shape
    if T == 0:
        return 0.0
    if T == 1:
        best = state[0, 0]
        arg = 0
        for j in range(1, L):
            if state[0, j] > best:
                best = state[0, j]
                arg = j
        out[0] = arg
        return best
    P = pair_a.shape[0]
    if P == 0:
        for t in range(T):
            out[t] = 0
        return -np.inf
    delta = buffers[0]
    d = delta[1]
    for q in range(P):
        a = pair_a[q]
        b = pair_b[q]
        d[q] = state[0, a] + edge[1, a, b] + state[1, b]
    for t in range(2, T):
        prev = delta[t - 1]
        cur = delta[t]
        st = state[t]
        ed = edge[t]
        for q in range(P):
            best = -np.inf  # an empty list leaves the state unreachable
            for k in range(pred_ptr[q], pred_ptr[q + 1]):
                x = prev[pred_src[k]] + pred_score[k]
                if x > best:
                    best = x
            c = pair_b[q]
            cur[q] = best + (st[c] + ed[pair_a[q], c])
    last = delta[T - 1]
    best = last[0]
    q = 0
    for j in range(1, P):
        if last[j] > best:
            best = last[j]
            q = j
    out[T - 1] = pair_b[q]
    out[T - 2] = pair_a[q]
    for t in range(T - 1, 1, -1):
        k0 = pred_ptr[q]
        k1 = pred_ptr[q + 1]
        if k0 == k1:
            # only when the score is -inf: the rest of the path is any labels in range
            for s in range(t - 1):
                out[s] = 0
            break
        prev = delta[t - 1]
        p = pred_src[k0]
        top = prev[p] + pred_score[k0]
        for k in range(k0 + 1, k1):
            x = prev[pred_src[k]] + pred_score[k]
            if x > top:
                top = x
                p = pred_src[k]
        out[t - 2] = pair_a[p]
        q = p
    return best


# ---------------------------------------------------------------------------------------------
# Forward-backward
# ---------------------------------------------------------------------------------------------
#
# Two tiers per sentence, as in sum_product (whose section comment this follows).
#
# 1. ``_fb_scaled``: scaled recursions over the pair states at positions t = 1..T-1. At t = 1,
#    a_1[q] = exp(x_1[q] - r_1) with x_1[q] = state[0, a] + g_1[q] and r_1 = max_q x_1[q] (so
#    z_1 = 1). For t >= 2, with s_t[q] = sum_{k in q's list} a_{t-1}[pred_src[k]] ek[k]:
#
#        u_t[q] = s_t[q] es_t[q],  es_t[q] = exp(g_t[q] + shift[q] - r_t),  z_t = max_q u_t[q],
#        a_t = u_t / z_t,  C_t = C_{t-1} + r_t + log z_t,  log Z = C_{T-1} + log sum_q a_{T-1}[q]
#        v_{t-1}[p] = sum_{k: pred_src[k] = p} ek[k] es_t[q_k] b_t[q_k],  b_{t-1} = v / zb_{t-1}
#        P(q at t) = a_t[q] b_t[q] / P_t,  P_t = sum_q a_t[q] b_t[q]
#        P(triple k at t) = a_{t-1}[pred_src[k]] ek[k] es_t[q_k] b_t[q_k] / (z_t P_t)
#
#    (the last since the sum over k of the numerator is sum_q u_t[q] b_t[q] = z_t P_t). A state
#    with an empty list is entered from nowhere at t >= 2: it gets es = 0 without an exp and
#    does not set r_t. Every other state gets its es, even one whose forward mass is 0: the
#    backward pass must see every suffix, since the bound weighs lost prefixes by the computed
#    suffix masses. Node marginals are sums of the pair-state ones (over a at position t, over b
#    for position 0); the triple marginals are summed over t by the backward pass (b_t and P_t
#    are final there), with ek factored out of the sum.
#
#    Bound. Count everything below TINY (the smallest normal double) as lost. At forward step
#    t >= 2 a term a ek loses at most 2 TINY (ek's exp, then the product; a <= 1), so s_t[q]
#    at most 2 n_q TINY (n_q = the length of q's list, s_t[q] <= n_q); es and the product with
#    it lose n_q TINY + TINY more: at most 4 n_q TINY per state, 4 K TINY in all, in units of
#    exp(C_{t-1} + r_t) = exp(C_t) / z_t. Rescaling loses at most TINY per state in units of
#    exp(C_t): P TINY. Each lost prefix continues with at most max_q beta_t[q], while
#    Z = exp(C_t) P_t max_q beta_t[q]; so the relative mass lost at step t is at most
#    (4 K / z_t + P) TINY / P_t. At t = 1 it is at most P TINY / P_1 (one exp per state,
#    z_1 = 1). Backward step t - 1 likewise loses at most 4 TINY per term (es, the product with
#    b, ek, the product with it) and P TINY in rescaling: (4 K / zb_{t-1} + P) TINY / P_{t-1}.
#    With M = K + P, the sum over t of M TINY (5 / z_t + 5 / zb_t + 2) / P_t (zb_{T-1} = inf:
#    nothing is computed there) bounds the relative error of Z and, doubled, the absolute error
#    of every marginal, the computed ones being exact marginals of the kept paths; 5 and 2
#    rather than 4 and 1 leave room for rounding. The result is accepted when the sum is below
#    _FB_TOL, which scores of moderate range pass with hundreds of orders of magnitude to spare.
#    A zero normaliser (underflow, or no mass left) also declines; a position where no state
#    that can be entered has a finite score ends at once with log Z = -inf.
# 2. ``fb_exact``: log-space recursions on the same lattice (K exps per position in each
#    direction and for the triple marginals), exact for any score range.
#
# With T = 1 both are the same softmax over state[0] (``_one_token``).


@_njit
def _one_token(state, node, pair, trip):
    """T <= 1: log Z and node marginals of independent labels; no pairs, no triples."""
    trip[:] = 0.0
    if state.shape[0] == 0:
        return 0.0  # one empty labeling
    pair[:, :, :] = 0.0
    st = state[0]
    log_z = logsumexp_n(st, st.shape[0])
    for j in range(st.shape[0]):
        node[0, j] = 0.0 if log_z == -np.inf else math.exp(st[j] - log_z)
    return log_z


@_njit
def _fb_scaled(
    state, edge, pair_a, pair_b, pair_id, pred_ptr, pred_src, tables, buffers, node, pair, trip
):
    """Tier 1 for T >= 2 (see the section comment). Returns (log Z, accepted); when not
    accepted nothing has been written to ``node``, ``pair`` or ``trip``."""
    ek, shift, dst = tables
    A, B, ES, zf, zb, pt, v, _, kv = buffers
    T = state.shape[0]
    P = pair_a.shape[0]
    K = pred_src.shape[0]
    # ---- forward; t = 1 (ES[1] only holds the exponents there: no pass reads es at t = 1)
    x1 = ES[1]
    r = -np.inf
    for q in range(P):
        a = pair_a[q]
        b = pair_b[q]
        x = state[0, a] + edge[1, a, b] + state[1, b]
        x1[q] = x
        if x > r:
            r = x
    if r == -np.inf:
        zero_outputs(node, pair, trip)  # no allowed pair has a finite score: exact
        return -np.inf, True
    u = A[1]
    for q in range(P):
        u[q] = math.exp(x1[q] - r)
    zf[1] = 1.0
    log_c = r
    for t in range(2, T):
        prev = A[t - 1]
        u = A[t]
        for q in range(P):
            s = 0.0
            for k in range(pred_ptr[q], pred_ptr[q + 1]):
                s += prev[pred_src[k]] * ek[k]
            u[q] = s
        st = state[t]
        ed = edge[t]
        es = ES[t]
        r = -np.inf
        for q in range(P):
            if pred_ptr[q] < pred_ptr[q + 1]:
                c = pair_b[q]
                x = st[c] + ed[pair_a[q], c] + shift[q]
                es[q] = x
                if x > r:
                    r = x
            else:
                es[q] = -np.inf
        if r == -np.inf:
            zero_outputs(node, pair, trip)  # no state that can be entered has a finite score
            return -np.inf, True
        z = 0.0
        for q in range(P):
            e = 0.0 if es[q] == -np.inf else math.exp(es[q] - r)
            es[q] = e
            u[q] *= e
            if u[q] > z:
                z = u[q]
        # no mass left (infeasible, or lost to underflow), or a normaliser that fails the bound
        # anyway and whose inverse could overflow: the exact tier decides
        if not z >= _TINY:
            return 0.0, False
        inv = 1.0 / z
        for q in range(P):
            u[q] *= inv
        zf[t] = z
        log_c += r + math.log(z)
    total = 0.0
    a = A[T - 1]
    for q in range(P):
        total += a[q]
    log_z = log_c + math.log(total)
    # ---- backward: scatter each state's suffix mass onto its predecessors. The same pass sums
    # the triple marginals at t (into kv, ek factored out of the sum over t): they need b_t and
    # P_t, both final at this step, and share its loads
    b = B[T - 1]
    for q in range(P):
        b[q] = 1.0
    zb[T - 1] = np.inf  # nothing is computed, so nothing is lost, at the last position
    for k in range(K):
        kv[k] = 0.0
    for t in range(T - 1, 0, -1):
        a = A[t]
        nxt = B[t]
        p = 0.0
        for q in range(P):
            p += a[q] * nxt[q]
        if not p > 0.0:
            return 0.0, False
        pt[t] = p
        if t == 1:
            break
        zp = zf[t] * p
        # the bound below fails anyway (this term alone exceeds 5 M), and 1 / zp could overflow
        if not zp >= _TINY:
            return 0.0, False
        c = 1.0 / zp
        es = ES[t]
        prev = A[t - 1]
        cur = B[t - 1]
        for q in range(P):
            cur[q] = 0.0
        for q in range(P):
            v[q] = es[q] * nxt[q]
        # one flat pass over the triples: no short loop per state to mispredict
        for k in range(K):
            i = pred_src[k]
            wq = v[dst[k]]
            cur[i] += ek[k] * wq
            kv[k] += prev[i] * (wq * c)
        z = 0.0
        for q in range(P):
            if cur[q] > z:
                z = cur[q]
        if not z >= _TINY:
            return 0.0, False
        inv = 1.0 / z
        for q in range(P):
            cur[q] *= inv
        zb[t - 1] = z
    # ---- bound on the mass lost to underflow, before anything is written
    lost = 0.0
    unit = (K + P) * _TINY
    for t in range(1, T):
        lost += unit * ((5.0 / zf[t] + 5.0 / zb[t] + 2.0) / pt[t])
    if not lost <= _FB_TOL:
        return 0.0, False
    for k in range(K):
        trip[k] = kv[k] * ek[k]
    # ---- pair-state, pair and node marginals
    node[:, :] = 0.0
    pair[0, :, :] = 0.0
    for t in range(1, T):
        a = A[t]
        b = B[t]
        inv = 1.0 / pt[t]
        for q in range(P):
            v[q] = a[q] * b[q] * inv
        write_states(t, v, pair_a, pair_b, pair_id, node, pair)
    return log_z, True


@_njit
def order2_forward_backward(
    state,
    edge,
    pair_a,
    pair_b,
    pair_id,
    pred_ptr,
    pred_src,
    pred_score,
    tables,
    buffers,
    node,
    pair,
    trip,
):
    """Log Z over the allowed labelings; marginals into ``node``, ``pair`` and ``trip``, all
    overwritten.

    node[t, l] = P(y_t = l) (T, L); pair[t, a, b] = P(y_{t-1} = a, y_t = b) for t >= 1 and
    pair[0] = 0 (T, L, L); trip[k] = sum_{t>=2} P(triple k at t - 2, t - 1, t) (float64[K]).
    If no allowed labeling has a finite score, log Z = -inf and every marginal is 0; with
    T = 0, log Z = 0. ``tables`` from :func:`order2_tables` of ``pred_score``, ``buffers`` from
    :func:`order2_buffers` (at least T rows). Scaled recursions where their underflow bound
    accepts them, else log space.
    """
    if state.shape[0] <= 1:
        return _one_token(state, node, pair, trip)
    log_z, ok = _fb_scaled(
        state, edge, pair_a, pair_b, pair_id, pred_ptr, pred_src, tables, buffers, node, pair, trip
    )
    if ok:
        return log_z
    lattice = (pair_a, pair_b, pair_id, pred_ptr, pred_src)
    return fb_exact(state, edge, lattice, pred_score, buffers, node, pair, trip)
