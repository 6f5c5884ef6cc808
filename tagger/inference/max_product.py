"""Numba kernels for first-order linear-chain inference: Viterbi, loss-augmented Viterbi and
the second-best path (forward-backward is in :mod:`tagger.inference.sum_product`).

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

import numpy as np

from tagger._config import NUMBA_OPTS, NUMBA_PARALLEL_OPTS
from tagger.inference.batching import chunking, max_length
from tagger.jit import njit, prange

_njit = njit(**NUMBA_OPTS)
_njit_parallel = njit(**NUMBA_PARALLEL_OPTS)


# ---------------------------------------------------------------------------------------------
# Shared pieces
# ---------------------------------------------------------------------------------------------


@_njit
def max_plus(prev, mat, cur):
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
def argmax_pred(prev, trans, j):
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


# ---------------------------------------------------------------------------------------------
# Viterbi and loss-augmented Viterbi
# ---------------------------------------------------------------------------------------------


@_njit
def _viterbi_core(state, trans, gold, loss_scale, out, delta):
    """Viterbi on one lattice; ``delta`` is a float64 work array with at least T rows.

    delta[t, j] is the best score of a prefix ending in label j at position t. The forward pass
    keeps only these maxima (no back-pointer bookkeeping in the O(L^2) loop); the backward pass
    recomputes each back-pointer, argmax_i delta[t-1, i] + trans[i, y_t], from the same float
    operations, so it is exact, with the lowest label index winning ties (likewise at the last
    position). A non-zero ``loss_scale`` is added to every state score whose label differs from
    ``gold[t]`` (Hamming-loss-augmented decoding) without touching ``state``; with 0.0 the
    decoding is plain and ``gold`` is not read. Returns the best (augmented) score and writes
    the path into ``out``.

    The switch is a runtime value rather than a constant flag: numba compiles a callee once
    per literal argument (``True`` and ``False`` would be two compilations of this kernel and
    of the batch kernel above it, about a second on a first run).
    """
    augment = loss_scale != 0.0
    T = state.shape[0]
    L = state.shape[1]
    for t in range(T):
        cur = delta[t]
        if t > 0:
            max_plus(delta[t - 1], trans, cur)
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
        arg = argmax_pred(delta[t - 1], trans, arg)
        out[t - 1] = arg
    return best


@_njit
def labeling_score(state, trans, y):
    """Score of the labeling ``y`` (int[T], aligned with the lattice's rows) on one lattice:
    its state scores plus its transitions."""
    v = state[0, y[0]]
    for t in range(1, y.shape[0]):
        v += state[t, y[t]] + trans[y[t - 1], y[t]]
    return v


@_njit
def viterbi_into(state, trans, out):
    """Best path of one lattice into ``out`` (int32[T]); returns its score.

    Ties go to the lowest label index. If every path scores ``-inf`` the result is ``-inf``
    and ``out`` still holds a valid path (labels in range).
    """
    T, L = state.shape
    delta = np.empty((T, L), dtype=np.float64)
    dummy = np.zeros(1, dtype=np.int32)
    return _viterbi_core(state, trans, dummy, 0.0, out, delta)


@_njit
def loss_augmented_viterbi_into(state, trans, gold, loss_scale, out):
    """argmax_y F(y) + loss_scale * Hamming(gold, y) into ``out``; returns that augmented value.

    ``state`` is not modified: the loss is added on the fly while scanning each position.
    """
    T, L = state.shape
    delta = np.empty((T, L), dtype=np.float64)
    return _viterbi_core(state, trans, gold, loss_scale, out, delta)


@_njit_parallel
def _viterbi_batch_impl(state, offsets, trans, gold, loss_scale, out, scores):
    """Viterbi over stacked sentences, loss-augmented by a non-zero ``loss_scale`` (``gold``
    then has a label per row; see :func:`_viterbi_core`)."""
    n = offsets.shape[0] - 1
    L = state.shape[1]
    per, n_chunks = chunking(n)
    augment = loss_scale != 0.0
    for c in prange(n_chunks):
        s0 = c * per
        s1 = min(n, s0 + per)
        delta = np.empty((max_length(offsets, s0, s1), L), dtype=np.float64)
        for s in range(s0, s1):
            a = offsets[s]
            b = offsets[s + 1]
            if b <= a:
                scores[s] = 0.0
                continue
            g = gold[a:b] if augment else gold[0:1]
            scores[s] = _viterbi_core(state[a:b], trans, g, loss_scale, out[a:b], delta)


@_njit
def viterbi_batch_into(state, offsets, trans, out, scores):
    """Viterbi over stacked sentences, in parallel over sentences.

    ``state`` (N, L); sentence ``s`` is rows ``offsets[s]:offsets[s+1]``. Labels go into
    ``out`` int32[N], best scores into ``scores`` float64[n]; empty sentences score 0.
    """
    dummy = np.zeros(1, dtype=np.int32)
    _viterbi_batch_impl(state, offsets, trans, dummy, 0.0, out, scores)


@_njit
def loss_augmented_viterbi_batch_into(state, offsets, trans, gold, loss_scale, out, scores):
    """Loss-augmented Viterbi over stacked sentences (``gold`` int32[N]), in parallel.

    Same layout as ``viterbi_batch_into``; ``scores[s]`` is the augmented value
    max_y F(y) + loss_scale * Hamming(gold_s, y).
    """
    _viterbi_batch_impl(state, offsets, trans, gold, loss_scale, out, scores)


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
        max_plus(alpha[t - 1], trans, cur)
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
        max_plus(g, trans_t, beta[t])
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
        lab = argmax_pred(alpha[t - 1], trans, lab)
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
