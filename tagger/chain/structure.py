"""One sentence's scores, loss-augmented decoding and feature differences under whatever
structure a model has: a plain first-order chain (:mod:`.layout`), label-pair templates
(transitions that vary by position, :mod:`.pairs`) or a second-order chain (label-pair
states, :mod:`.second_order`, with or without pair templates).

Solvers that visit one sentence at a time and rescore it after every step (the dual method
of ``tagger.learners.solvers.sdm_solver``) take the model's :func:`chain_structure` and call
these kernels. A plain chain's structure is ``None``: numba compiles a kernel apart for a
``None`` argument and drops the branches it cannot take (``if st is None``), so the plain
chain runs its own (T, L) kernels with nothing added (the same steps, the same bits and the
same speed as a solver written for it alone), and only models beyond it compile the rest.
Those branch on the structure's kind at run time.

A sentence of T tokens is scored by its (T, L) state scores (:mod:`.scores`) and, beyond the
plain chain, by its (T, L, L) transitions ``edge`` (``edge[t]``: the transition weights plus
the pair weights firing at token t) and, at order 2, the lattice's per-entry triple scores
``pred_score`` (:func:`~.triples.entry_scores`). The transitions follow the weights by
rescoring (:func:`structure_edges`); ``pred_score`` follows one moved weight at a time
(:func:`sync_structure_weight`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tagger._config import NUMBA_OPTS
from tagger.chain.joint import add_difference
from tagger.chain.pairs import (
    PairLayout,
    add_pair_difference,
    edge_path_score,
    sentence_edge_scores,
)
from tagger.chain.second_order import Lattice
from tagger.chain.triples import (
    add_triple_difference,
    entry_scores_into,
    order2_loss_augmented_into,
    triple_path_score,
)
from tagger.inference.max_product import labeling_score, loss_augmented_viterbi_into
from tagger.inference.pair_chain import pair_viterbi_into
from tagger.inference.second_order import order2_buffers
from tagger.jit import njit

#: the kinds of :class:`ChainStructure`
PAIRS, ORDER2 = 1, 2


class ChainStructure(NamedTuple):
    """What a model has beyond the plain first-order chain, as the kernels here take it: the
    fields of its :class:`~.pairs.PairLayout` and :class:`~.second_order.Lattice` side by
    side (numba's parallel loops take a record of arrays and numbers, not a record of
    records), which :func:`pairs_of` and :func:`lattice_of` put back together."""

    kind: int  # PAIRS (label-pair templates, order 1) or ORDER2
    pair_ptr: np.ndarray  # PairLayout's fields (maybe no pair parameters at ORDER2)
    pair_code: np.ndarray
    pair_offset: int
    n_pair: int
    pair_a: np.ndarray  # Lattice's fields (an empty lattice for PAIRS)
    pair_b: np.ndarray
    pair_id: np.ndarray
    pred_ptr: np.ndarray
    pred_src: np.ndarray
    pred_trip: np.ndarray
    trip_offset: int
    trip_entry: np.ndarray  # int64[n_trip]: the lattice entry of each triple weight


def chain_structure(model) -> ChainStructure | None:
    """The :class:`ChainStructure` of a :class:`~tagger.chain.layout.ChainModel`; None for a
    plain first-order chain (no pair templates, order 1)."""
    if model.plain:
        return None
    L = model.n_labels
    if model.second is None:
        lattice = Lattice(
            np.empty(0, np.int32),
            np.empty(0, np.int32),
            np.full((L, L), -1, np.int32),
            np.zeros(1, np.int64),
            np.empty(0, np.int32),
            np.empty(0, np.int64),
            model.n_weights,  # no weight lies past it: nothing is a triple weight
        )
        return ChainStructure(PAIRS, *model.pair_layout, *lattice, np.empty(0, np.int64))
    lattice = model.lattice
    trip_entry = np.full(model.n_trip, -1, dtype=np.int64)
    has = lattice.pred_trip >= 0
    trip_entry[lattice.pred_trip[has]] = np.flatnonzero(has)
    if np.any(trip_entry < 0):  # kept in step through it without bounds checks
        raise ValueError("a triple weight of the model has no entry in its lattice")
    return ChainStructure(ORDER2, *model.pair_layout, *lattice, trip_entry)


@njit(**NUMBA_OPTS)
def pairs_of(st):
    """The structure's :class:`~.pairs.PairLayout`."""
    return PairLayout(st.pair_ptr, st.pair_code, st.pair_offset, st.n_pair)


@njit(**NUMBA_OPTS)
def lattice_of(st):
    """The structure's :class:`~.second_order.Lattice`."""
    return Lattice(
        st.pair_a, st.pair_b, st.pair_id, st.pred_ptr, st.pred_src, st.pred_trip, st.trip_offset
    )


@njit(**NUMBA_OPTS)
def structure_sizes(st):
    """(pair weights, triple weights) of the structure: (0, 0) for the plain chain."""
    if st is None:
        return 0, 0
    return st.n_pair, st.trip_entry.shape[0]


@njit(**NUMBA_OPTS)
def structure_buffers(st, T, L):
    """Work arrays for sentences of up to T tokens: ``(edge (T, L, L), changed (T, L),
    aug (T, L), order-2 Viterbi buffers, pred_score (K))``, empty where the structure has no
    use for them (all of them for the plain chain, the last three below order 2). Empty
    arrays rather than None, so that every specialization returns one type."""
    rows, deep, P, K = 0, 0, 0, 0
    if st is not None:
        rows = T
        deep = T if st.kind == ORDER2 else 0
        P = st.pair_a.shape[0]
        K = st.pred_src.shape[0]
    return (
        np.empty((rows, L, L)),
        np.empty((rows, L), dtype=np.bool_),
        np.empty((deep, L)),
        order2_buffers(deep, L, P, K),
        np.empty(K),
    )


@njit(**NUMBA_OPTS)
def structure_edges(st, X, w, a, b, trans, bufs):
    """The sentence's transitions into ``bufs``' edge (beyond the plain chain, which reads
    ``trans`` itself); ``trans`` is the transition block of ``w``."""
    if st is None:
        return
    edge, changed, _, _, _ = bufs
    sentence_edge_scores(pairs_of(st), X, w, a, b, trans, 1.0, edge, changed)


@njit(**NUMBA_OPTS)
def structure_entry_scores(st, w, bufs):
    """At order 2, the lattice's triple scores of ``w`` into ``bufs``' pred_score."""
    if st is None:
        return
    if st.kind == ORDER2:
        entry_scores_into(lattice_of(st), w, bufs[4])


@njit(**NUMBA_OPTS)
def sync_structure_weight(st, w, bufs, p):
    """After ``w[p]`` moved: at order 2, the lattice entry of a triple weight follows it (the
    transitions follow by :func:`structure_edges`, the state scores by their own kernels)."""
    if st is None:
        return
    if st.kind == ORDER2:
        t = p - st.trip_offset
        if t >= 0:
            bufs[4][st.trip_entry[t]] = w[p]


@njit(**NUMBA_OPTS)
def structure_score(st, state, trans, bufs, y, a, b):
    """F of the labeling y[a:b] (indexed by token) of the sentence whose (b - a, L) state
    scores are ``state``, its transitions ``trans`` or ``bufs``' edge, its triple scores
    ``bufs``' pred_score; -inf for a labeling that a second-order model does not allow."""
    if st is None:
        return labeling_score(state, trans, y[a:b])
    s = edge_path_score(state, bufs[0], y, a)
    if st.kind == ORDER2:
        s += triple_path_score(lattice_of(st), bufs[4], y, a, b)
    return s


@njit(**NUMBA_OPTS)
def structure_loss_augmented_into(st, state, trans, bufs, gold, a, loss_scale, out):
    """The best labeling of F + loss_scale * Hamming(gold[a:a+T], .) over the model's
    labelings into ``out`` (int32[T]), and its score, the loss term included (scores as for
    :func:`structure_score`)."""
    T = state.shape[0]
    if st is None:
        return loss_augmented_viterbi_into(state, trans, gold[a : a + T], loss_scale, out)
    edge, _, aug, o2, pred_score = bufs
    if st.kind == PAIRS:
        return pair_viterbi_into(state, edge, gold[a : a + T], loss_scale, out)
    return order2_loss_augmented_into(
        lattice_of(st), state, edge, pred_score, gold, a, loss_scale, aug, o2, out
    )


@njit(**NUMBA_OPTS)
def add_structure_difference(layout, st, X, a, b, plus, minus, coef, acc, n):
    """acc += coef * (f(x, plus) - f(x, minus)) on tokens a..b-1 over every block of the
    weights (:func:`~tagger.chain.joint.add_difference`, then the pair and triple blocks);
    ``n`` coordinates touched on entry, the new count returned."""
    n = add_difference(layout, X, a, b, plus, minus, coef, acc, n)
    if st is None:
        return n
    n = add_pair_difference(pairs_of(st), X, a, b, plus, minus, layout.n_labels, coef, acc, n)
    if st.kind == ORDER2:
        n = add_triple_difference(lattice_of(st), a, b, plus, minus, coef, acc, n)
    return n
