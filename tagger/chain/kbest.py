"""The k best labelings of every sentence of a batch, with each sentence's log Z, for every
kind of chain model: first order (one transition matrix), label-pair templates (transitions
that vary by position) and second order (the pair-state lattice). In parallel over sentences;
each sentence's result depends on its own data only. The kernels are those of
:mod:`tagger.inference.kbest`.

Outputs: ``labels`` (N tokens, k) int32, column j the j-th best labeling; ``scores`` and
``log_z`` per sentence ((n, k) and (n,)). A sentence with fewer than k labelings gets ``-inf``
scores (and label 0) in the rows past them.
"""

from __future__ import annotations

import numpy as np

from tagger._config import NUMBA_PARALLEL_OPTS
from tagger.chain.layout import FeatureBatch
from tagger.chain.pairs import sentence_scores
from tagger.chain.triples import entry_scores
from tagger.inference.kbest import kbest_into, order2_kbest_into
from tagger.jit import njit, prange


@njit(**NUMBA_PARALLEL_OPTS)
def plain_kbest_batch(state, offsets, trans, labels, scores, log_z):
    """First-order chains: ``state`` (N, L) with the start and end weights folded in, and one
    transition matrix ``trans``."""
    k = scores.shape[1]
    shared = trans.reshape((1, trans.shape[0], trans.shape[1]))
    for s in prange(offsets.shape[0] - 1):
        a = offsets[s]
        b = offsets[s + 1]
        rows = np.empty((k, b - a), np.int32)
        log_z[s] = kbest_into(state[a:b], shared, rows, scores[s])
        labels[a:b] = rows.T


@njit(**NUMBA_PARALLEL_OPTS)
def pair_kbest_batch(layout, pl, X, w, trans, labels, scores, log_z):
    """Chains with label-pair templates: each sentence's transitions by position."""
    k = scores.shape[1]
    offsets = X.offsets
    for s in prange(offsets.shape[0] - 1):
        a = offsets[s]
        b = offsets[s + 1]
        state, edge = sentence_scores(layout, pl, X, w, a, b, trans)
        rows = np.empty((k, b - a), np.int32)
        log_z[s] = kbest_into(state, edge, rows, scores[s])
        labels[a:b] = rows.T


@njit(**NUMBA_PARALLEL_OPTS)
def order2_kbest_batch(layout, pl, lat, X, w, trans, pred_score, labels, scores, log_z):
    """Second-order chains over the pair-state lattice ``lat`` (``pred_score``: the triple
    score of each lattice entry, :func:`tagger.chain.triples.entry_scores`)."""
    k = scores.shape[1]
    offsets = X.offsets
    for s in prange(offsets.shape[0] - 1):
        a = offsets[s]
        b = offsets[s + 1]
        state, edge = sentence_scores(layout, pl, X, w, a, b, trans)
        rows = np.empty((k, b - a), np.int32)
        log_z[s] = order2_kbest_into(
            state,
            edge,
            lat.pair_a,
            lat.pair_b,
            lat.pred_ptr,
            lat.pred_src,
            pred_score,
            rows,
            scores[s],
        )
        labels[a:b] = rows.T


def nbest(model, X, w: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(labels (N, k), scores (n, k), log Z (n,)) of the featurized batch ``X`` under the
    chain model ``model`` (:class:`~tagger.chain.layout.ChainModel`) at the weights ``w``."""
    n = X.n_sentences
    labels = np.zeros((X.n_tokens, k), dtype=np.int32)
    scores = np.empty((n, k))
    log_z = np.empty(n)
    w = np.ascontiguousarray(w, dtype=np.float64)
    trans = np.ascontiguousarray(model.transitions(w))
    offsets = np.ascontiguousarray(X.offsets, dtype=np.int64)
    if model.plain:
        plain_kbest_batch(model.state_scores(X, w), offsets, trans, labels, scores, log_z)
    elif model.second is None:
        batch = FeatureBatch.of(X)
        pair_kbest_batch(model.layout, model.pair_layout, batch, w, trans, labels, scores, log_z)
    else:
        lat = model.lattice
        args = (model.layout, model.pair_layout, lat, FeatureBatch.of(X), w, trans)
        order2_kbest_batch(*args, entry_scores(lat, w), labels, scores, log_z)
    return labels, scores, log_z
