"""Numba kernels for the k best labelings of one sentence, with its log partition function:
list Viterbi over a first-order chain (transitions fixed or varying by position) and over the
pair-state lattice of a second-order chain.

List Viterbi (Schwartz & Chow, ICASSP 1990; Nilsson & Goldberger's survey of k-best decoding
gives the same recursion) keeps, for every position t and state s, the k best scores of a
prefix ending in s, each with a back-pointer to (predecessor state, its rank). A prefix's
continuations add the same score to every prefix ending in the same state, so the k best
labelings of the sentence are among the k best prefixes of some state at every position, and
the recursion costs k times Viterbi's. The entries of one list are distinct prefixes (their
back-pointers differ), so the k labelings returned are distinct. Lists are sorted best first;
a tie goes to the candidate met first (lower predecessor state, then lower rank), so the result
is the same on every run.

The log partition function ``log Z = log sum_y exp F(y)`` comes from the forward recursion in
log space (a log-sum-exp per state and position), so the probability of each labeling under a
CRF is ``exp(F(y) - log Z)``.

Scores are as in :mod:`tagger.inference.pair_chain` (first order: ``state`` (T, L) and ``edge``
(T, L, L), ``edge[t, a, b]`` for label a at t - 1 then b at t; an ``edge`` with one row is used
at every position) and :mod:`tagger.inference.second_order` (the pair states and their lists of
allowed predecessors). When fewer than k labelings have a finite score the remaining rows get
score ``-inf`` and label 0.
"""

from __future__ import annotations

import numpy as np

from tagger._config import NUMBA_OPTS
from tagger.jit import njit

_njit = njit(**NUMBA_OPTS)


@_njit
def _insert(vals, src, rank, x, s, r):
    """Put ``x`` (from state ``s``, rank ``r``) into the sorted top list ``vals`` (best first)
    when it beats the last entry; False when it does not (so a caller going down a sorted list
    can stop)."""
    k = vals.shape[0]
    if not x > vals[k - 1]:
        return False
    pos = k - 1
    while pos > 0 and vals[pos - 1] < x:
        vals[pos] = vals[pos - 1]
        src[pos] = src[pos - 1]
        rank[pos] = rank[pos - 1]
        pos -= 1
    vals[pos] = x
    src[pos] = s
    rank[pos] = r
    return True


@_njit
def _logaddexp(a, b):
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + np.log1p(np.exp(b - a))
    return b + np.log1p(np.exp(a - b))


@_njit
def _log_sum(x):
    total = -np.inf
    for v in x:
        total = _logaddexp(total, v)
    return total


@_njit
def _top_of_lists(delta, scores):
    """The k best (state, rank) entries over the lists ``delta`` (S, k) of the last position:
    scores into ``scores``, their states and ranks returned."""
    k = scores.shape[0]
    scores[:] = -np.inf
    src = np.zeros(k, np.int64)
    rank = np.zeros(k, np.int64)
    for s in range(delta.shape[0]):
        for r in range(k):
            if not _insert(scores, src, rank, delta[s, r], s, r):
                break
    return src, rank


@_njit
def kbest_into(state, edge, labels, scores):
    """The k = ``scores.shape[0]`` best labelings of a first-order chain into ``labels``
    (int32 (k, T)) and ``scores`` (best first); returns log Z."""
    T, L = state.shape
    k = scores.shape[0]
    labels[:, :] = 0
    if T == 0:
        scores[:] = -np.inf
        scores[0] = 0.0
        return 0.0
    shared = edge.shape[0] == 1
    delta = np.full((T, L, k), -np.inf)
    back_state = np.zeros((T, L, k), np.int64)
    back_rank = np.zeros((T, L, k), np.int64)
    alpha = np.empty(L)
    nxt = np.empty(L)
    for b in range(L):
        delta[0, b, 0] = state[0, b]
        alpha[b] = state[0, b]
    for t in range(1, T):
        ed = edge[0] if shared else edge[t]
        for b in range(L):
            top = delta[t, b]
            for a in range(L):
                e = ed[a, b]
                if e == -np.inf:
                    continue
                prev = delta[t - 1, a]
                for r in range(k):
                    if prev[r] == -np.inf or not _insert(
                        top, back_state[t, b], back_rank[t, b], prev[r] + e, a, r
                    ):
                        break
            total = -np.inf
            for a in range(L):
                total = _logaddexp(total, alpha[a] + ed[a, b])
            nxt[b] = total + state[t, b]
            for r in range(k):
                if top[r] > -np.inf:
                    top[r] += state[t, b]
        alpha[:] = nxt
    src, rank = _top_of_lists(delta[T - 1], scores)
    for j in range(k):
        if scores[j] == -np.inf:
            continue
        s, r = src[j], rank[j]
        for t in range(T - 1, -1, -1):
            labels[j, t] = s
            if t > 0:
                s, r = back_state[t, s, r], back_rank[t, s, r]
    return _log_sum(alpha)


@_njit
def order2_kbest_into(state, edge, pair_a, pair_b, pred_ptr, pred_src, pred_score, labels, scores):
    """The k = ``scores.shape[0]`` best allowed labelings of a second-order chain (the pair-state
    lattice of :mod:`tagger.inference.second_order`) into ``labels`` (int32 (k, T)) and
    ``scores``; returns log Z over the allowed labelings."""
    T, L = state.shape
    k = scores.shape[0]
    labels[:, :] = 0
    scores[:] = -np.inf
    if T == 0:
        scores[0] = 0.0
        return 0.0
    if T == 1:  # with one token every label is allowed
        src = np.zeros(k, np.int64)
        rank = np.zeros(k, np.int64)
        for b in range(L):
            _insert(scores, src, rank, state[0, b], b, 0)
        for j in range(k):
            labels[j, 0] = src[j]
        return _log_sum(state[0])
    P = pair_a.shape[0]
    if P == 0:
        return -np.inf
    delta = np.full((T, P, k), -np.inf)
    back_state = np.zeros((T, P, k), np.int64)
    back_rank = np.zeros((T, P, k), np.int64)
    alpha = np.empty(P)
    nxt = np.empty(P)
    for q in range(P):
        a = pair_a[q]
        b = pair_b[q]
        delta[1, q, 0] = state[0, a] + edge[1, a, b] + state[1, b]
        alpha[q] = delta[1, q, 0]
    for t in range(2, T):
        for q in range(P):
            top = delta[t, q]
            total = -np.inf
            for kk in range(pred_ptr[q], pred_ptr[q + 1]):
                p = pred_src[kk]
                e = pred_score[kk]
                total = _logaddexp(total, alpha[p] + e)
                prev = delta[t - 1, p]
                for r in range(k):
                    if prev[r] == -np.inf or not _insert(
                        top, back_state[t, q], back_rank[t, q], prev[r] + e, p, r
                    ):
                        break
            c = pair_b[q]
            node = state[t, c] + edge[t, pair_a[q], c]
            nxt[q] = total + node
            for r in range(k):
                if top[r] > -np.inf:
                    top[r] += node
        alpha[:] = nxt
    src, rank = _top_of_lists(delta[T - 1], scores)
    for j in range(k):
        if scores[j] == -np.inf:
            continue
        q, r = src[j], rank[j]
        labels[j, T - 1] = pair_b[q]
        labels[j, T - 2] = pair_a[q]
        for t in range(T - 1, 1, -1):
            q, r = back_state[t, q, r], back_rank[t, q, r]
            labels[j, t - 2] = pair_a[q]
    return _log_sum(alpha)
