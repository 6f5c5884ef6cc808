"""Label-pair features: attributes of ``pair_templates`` whose weights fire on the pair
(previous label, label) at a token, as Wapiti's bigram templates and CRF++'s ``B`` templates
do, instead of on the label alone.

A model with them keeps a first-order chain, but its transition scores vary by position::

    F(x, y; w) = (the first-order score of :mod:`tagger.chain.layout`)
                 + sum_{t>=1} sum_{a in A_pair(x,t)} v_a w_pair[a, y_{t-1}, y_t]

Pair parameters exist only for (attribute, previous label, label) triples seen in training
(CRFsuite's rule for state features), in a CSR by attribute like the state parameters:
attribute ``a`` owns ``pair_ptr[a]:pair_ptr[a+1]``, parameter ``p`` is for the label pair
``pair_code[p] = prev * L + label`` and sits at ``w[offset + p]``, after the end weights. A
pair attribute has no state parameters, and fires at no sentence's first token (there is no
previous label).

The kernels here build a sentence's (T, L, L) position-dependent transitions, ``edge[t] =
trans + the pair weights firing at token t``, noting which columns moved (so forward-backward
recomputes exps only there, :mod:`tagger.inference.pair_chain`), scatter the gradient of the
pair block from per-position edge marginals, and add the pair block's part of the sparse
difference f(x, y+) - f(x, y-) of two labelings (a dual solver's step). L1 decides which
pairs keep a weight: a pair weight at zero costs nothing at tagging time (it is dropped from
the model file).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tagger._config import NUMBA_OPTS, NUMBA_PARALLEL_OPTS
from tagger.chain.joint import accumulate
from tagger.chain.scores import sentence_state_scores
from tagger.inference.pair_chain import pair_fb_buffers, pair_forward_backward, pair_viterbi_into
from tagger.inference.sum_product import fb_tables
from tagger.jit import njit, prange


class PairLayout(NamedTuple):
    """The label-pair parameters as numba kernels take them (``ChainModel.pair_layout``)."""

    pair_ptr: np.ndarray  # int64[n_attrs + 1]: attribute a owns pair_ptr[a]:pair_ptr[a+1]
    pair_code: np.ndarray  # int32[n_pair]: prev * L + label of each pair parameter
    offset: int  # where the pair block starts in w
    n_pair: int


@njit(**NUMBA_OPTS)
def sentence_edge_scores(pl, X, w, a, b, trans, scale, edge, changed):
    """edge[t] = trans + scale * (the pair weights firing at token a + t) for t = 1..T-1, and
    changed[t, j] = whether column j of edge[t] got one (``trans`` arrives scaled already)."""
    L = trans.shape[0]
    indptr, attrs, vals = X.indptr, X.attrs, X.vals
    valued = vals.shape[0] > 0
    pair_ptr, pair_code, off = pl.pair_ptr, pl.pair_code, pl.offset
    for t in range(1, b - a):
        et = edge[t]
        for i in range(L):
            for j in range(L):
                et[i, j] = trans[i, j]
        for j in range(L):
            changed[t, j] = False
        tok = a + t
        for k in range(indptr[tok], indptr[tok + 1]):
            at = attrs[k]
            v = scale * vals[k] if valued else scale
            for p in range(pair_ptr[at], pair_ptr[at + 1]):
                wp = w[off + p]
                if wp != 0.0:
                    code = pair_code[p]
                    lab = code % L
                    et[code // L, lab] += v * wp
                    changed[t, lab] = True


@njit(**NUMBA_OPTS)
def sentence_scores(layout, pl, X, w, a, b, trans):
    """New (T, L) state scores and (T, L, L) position-dependent transitions of the sentence of
    tokens a..b-1: what decoding it takes."""
    T = b - a
    L = trans.shape[0]
    state = np.empty((T, L))
    edge = np.empty((T, L, L))
    sentence_state_scores(layout, X, w, a, b, state)
    sentence_edge_scores(pl, X, w, a, b, trans, 1.0, edge, np.empty((T, L), dtype=np.bool_))
    return state, edge


@njit(**NUMBA_OPTS)
def edge_path_score(state, edge, y, a):
    """F of the labeling y[a:a+T] (indexed by token) from state scores and edges."""
    T = state.shape[0]
    s = 0.0
    if T > 0:
        s = state[0, y[a]]
    for t in range(1, T):
        s += state[t, y[a + t]] + edge[t, y[a + t - 1], y[a + t]]
    return s


@njit(**NUMBA_OPTS)
def scatter_pair_expectations(pl, X, a, b, gold, pair, L, k, g):
    """g[pair block] += k (E[f_pair] - f_pair(gold)) for the sentence of tokens a..b-1, from
    its per-position edge marginals ``pair`` (pair[t, i, j] = P(y_{t-1} = i, y_t = j))."""
    indptr, attrs, vals = X.indptr, X.attrs, X.vals
    valued = vals.shape[0] > 0
    pair_ptr, pair_code, off = pl.pair_ptr, pl.pair_code, pl.offset
    for tok in range(a + 1, b):
        t = tok - a
        gold_code = gold[tok - 1] * L + gold[tok]
        pt = pair[t]
        for j in range(indptr[tok], indptr[tok + 1]):
            at = attrs[j]
            v = k * vals[j] if valued else k
            for p in range(pair_ptr[at], pair_ptr[at + 1]):
                code = pair_code[p]
                e = pt[code // L, code % L]
                if code == gold_code:
                    e -= 1.0
                g[off + p] += v * e


@njit(**NUMBA_OPTS)
def add_pair_features(pl, X, a, b, y, L, scale, out):
    """out[pair block] += scale * f_pair(x, y) for the sentence on tokens a..b-1."""
    indptr, attrs, vals = X.indptr, X.attrs, X.vals
    valued = vals.shape[0] > 0
    for tok in range(a + 1, b):
        code = y[tok - 1] * L + y[tok]
        for j in range(indptr[tok], indptr[tok + 1]):
            at = attrs[j]
            for p in range(pl.pair_ptr[at], pl.pair_ptr[at + 1]):
                if pl.pair_code[p] == code:
                    out[pl.offset + p] += scale * vals[j] if valued else scale


@njit(**NUMBA_OPTS)
def add_pair_difference(pl, X, a, b, plus, minus, L, coef, acc, n):
    """acc[pair block] += coef * (f_pair(x, plus) - f_pair(x, minus)) on tokens a..b-1, the
    pair block's part of :func:`tagger.chain.joint.add_difference` (same arguments; ``n``
    coordinates touched on entry, the new count returned). Only the tokens whose label pair
    differs are read: elsewhere the two labelings' pair features cancel."""
    if pl.n_pair == 0:
        return n
    indptr, attrs, vals = X.indptr, X.attrs, X.vals
    valued = vals.shape[0] > 0
    pair_ptr, pair_code, off = pl.pair_ptr, pl.pair_code, pl.offset
    for tok in range(a + 1, b):
        code_plus = plus[tok - 1] * L + plus[tok]
        code_minus = minus[tok - 1] * L + minus[tok]
        if code_plus == code_minus:
            continue
        for j in range(indptr[tok], indptr[tok + 1]):
            at = attrs[j]
            v = coef * vals[j] if valued else coef
            for p in range(pair_ptr[at], pair_ptr[at + 1]):
                code = pair_code[p]
                if code == code_plus:
                    n = accumulate(acc, off + p, v, n)
                elif code == code_minus:
                    n = accumulate(acc, off + p, -v, n)
    return n


@njit(**NUMBA_PARALLEL_OPTS)
def pair_decode_batch(layout, pl, X, w, trans, gold, loss_scale, out, scores, gold_scores):
    """Viterbi over every sentence of the batch with its position-dependent transitions (loss-
    augmented by ``loss_scale`` Hamming cost when ``gold`` has a row per token): labels into
    ``out``, best scores into ``scores`` and, when ``gold`` is given, the gold labeling's
    score into ``gold_scores``. In parallel over sentences; each sentence's result depends
    on its own data only."""
    trans.shape[0]
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
        if has_gold:
            gold_scores[s] = edge_path_score(state, edge, gold, a)
            scores[s] = pair_viterbi_into(state, edge, gold[a:b], loss_scale, out[a:b])
        else:
            scores[s] = pair_viterbi_into(state, edge, gold, loss_scale, out[a:b])


@njit(**NUMBA_PARALLEL_OPTS)
def pair_edges_batch(pl, X, w, trans, edge):
    """Every sentence's position-dependent transitions into ``edge`` (N, L, L), one row per
    token (:func:`sentence_edge_scores`; a sentence's first row, which no transition enters,
    is left as it is): what a solver that rescores single labels in place keeps (the label
    switching of ``ssvm-annealing``). In parallel over sentences."""
    L = trans.shape[0]
    offsets = X.offsets
    for s in prange(offsets.shape[0] - 1):
        a = offsets[s]
        b = offsets[s + 1]
        if b - a > 1:
            changed = np.empty((b - a, L), dtype=np.bool_)
            sentence_edge_scores(pl, X, w, a, b, trans, 1.0, edge[a:b], changed)


@njit(**NUMBA_PARALLEL_OPTS)
def pair_marginals_batch(layout, pl, X, w, trans, node_out):
    """Node marginals of every sentence of the batch under its position-dependent
    transitions, into ``node_out`` (one row per token)."""
    L = trans.shape[0]
    offsets = X.offsets
    tables = fb_tables(trans)
    for s in prange(offsets.shape[0] - 1):
        a = offsets[s]
        b = offsets[s + 1]
        T = b - a
        if T == 0:
            continue
        state = np.empty((T, L))
        edge = np.empty((T, L, L))
        changed = np.empty((T, L), dtype=np.bool_)
        pair = np.empty((T, L, L))
        sentence_state_scores(layout, X, w, a, b, state)
        sentence_edge_scores(pl, X, w, a, b, trans, 1.0, edge, changed)
        pair_forward_backward(
            state, edge, changed, tables, pair_fb_buffers(T, L), node_out[a:b], pair
        )


def carry_pair_weights(src, dst, attr_map: np.ndarray, label_map: np.ndarray):
    """(indices in the destination's pair block, weights): each non-zero pair weight of the
    source ``(pair_ptr, pair_code, pair weights, L)`` moved onto the destination's ``(pair_ptr,
    pair_code, L)`` parameter of attribute ``attr_map[a]`` and label pair ``label_map`` of its
    pair, where the destination has one (``-1`` in a map: it has none)."""
    ptr, code, weights, L = src
    dst_ptr, dst_code, Lo = dst
    p = np.flatnonzero(weights)
    attr = attr_map[np.repeat(np.arange(len(ptr) - 1, dtype=np.int64), np.diff(ptr))[p]]
    pairs = code[p].astype(np.int64)
    prev, lab = label_map[pairs // L], label_map[pairs % L]
    ok = (attr >= 0) & (prev >= 0) & (lab >= 0)
    want = (attr[ok] * Lo + prev[ok]) * Lo + lab[ok]
    dst_attr = np.repeat(np.arange(len(dst_ptr) - 1, dtype=np.int64), np.diff(dst_ptr))
    have = dst_attr * (Lo * Lo) + dst_code
    order = np.argsort(have, kind="stable")
    at = np.minimum(np.searchsorted(have[order], want), max(len(have) - 1, 0))
    hit = have[order][at] == want if len(have) else np.zeros(len(want), dtype=bool)
    return order[at[hit]], weights[p[ok][hit]]
