"""Inference on first-order linear chains: the layer between the model and the learners.

A sentence of T tokens over L labels is a lattice given by two arrays:

* ``state`` (T, L) float64, the score of label ``l`` at token ``t``;
* ``trans`` (L, L) float64, ``trans[i, j]`` the score of label ``i`` followed by label ``j``.

A path ``y`` scores ``F(y) = sum_t state[t, y_t] + sum_{t>=1} trans[y_{t-1}, y_t]``. A score of
``-inf`` forbids a label or a transition (constraints compile to such masks); NaN and ``+inf``
are rejected. This layer never sees features, weights or files: the model turns a sentence into
the two arrays, and the learners and the tagger call the functions below.

Each public function checks its inputs once (shapes, dtypes, NaN / +inf, label ranges, sentence
boundaries), converts them to C-contiguous float64 / int32 / int64 arrays and calls one numba
kernel of :mod:`tagger.inference.max_product` or :mod:`tagger.inference.sum_product`. Inner
loops that have already validated their arrays (a learner calling Viterbi once per sentence and
epoch on arrays the model built) may call the kernels ``viterbi_into``,
``loss_augmented_viterbi_into``, ... directly with arrays of exactly those dtypes and skip the
checks.

Batched functions take the rows of many sentences stacked in one (N, L) array; sentence ``s``
occupies rows ``offsets[s]:offsets[s + 1]`` (``offsets`` int64 of length n + 1, starting at 0
and ending at N). They release the GIL and run in parallel over sentences.

Functions
---------
viterbi                       best path and its score
viterbi_batch                 best paths of many sentences
loss_augmented_viterbi        argmax_y F(y) + loss_scale * Hamming(gold, y)
loss_augmented_viterbi_batch  the same over many sentences
second_best_viterbi           best path different from a given one
forward_backward              log partition function, node and edge marginals (CRF)
forward_backward_batch        the same over many sentences
"""

from __future__ import annotations

import math

import numpy as np

from tagger.inference.max_product import (
    loss_augmented_viterbi_batch_into,
    loss_augmented_viterbi_into,
    second_best_viterbi_into,
    viterbi_batch_into,
    viterbi_into,
)
from tagger.inference.sum_product import forward_backward_batch_into, forward_backward_into

__all__ = [
    "forward_backward",
    "forward_backward_batch",
    "loss_augmented_viterbi",
    "loss_augmented_viterbi_batch",
    "second_best_viterbi",
    "viterbi",
    "viterbi_batch",
]


# ---------------------------------------------------------------------------------------------
# Validation helpers
# ---------------------------------------------------------------------------------------------


def _as_float_matrix(x, name: str, what: str) -> np.ndarray:
    """``x`` as a C-contiguous 2-D float64 array without NaN or +inf."""
    try:
        a = np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array of shape {what}; {exc}") from None
    if a.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array of shape {what}; got an array with shape {a.shape}."
        )
    if a.size and not (a < np.inf).all():  # one pass: NaN and +inf both fail ``< inf``
        bad = np.argwhere(~(a < np.inf))[0]
        value = a[tuple(bad)]
        kind = "NaN" if np.isnan(value) else "+inf"
        where = ", ".join(str(int(k)) for k in bad)
        raise ValueError(
            f"{name} contains {kind} at [{where}]; scores must be finite or -inf "
            "(-inf forbids a label or transition)."
        )
    return a


def _check_state(state, *, batch: bool) -> np.ndarray:
    shape = "(N, L), the stacked sentences" if batch else "(T, L)"
    s = _as_float_matrix(state, "state", shape)
    if s.shape[1] < 1:
        raise ValueError(f"state needs at least one label column (L >= 1); got shape {s.shape}.")
    if not batch and s.shape[0] < 1:
        raise ValueError(
            f"state has no rows: an empty sentence cannot be decoded (T >= 1 required); "
            f"got shape {s.shape}."
        )
    return s


def _check_trans(trans, n_labels: int) -> np.ndarray:
    t = _as_float_matrix(trans, "trans", f"(L, L) = ({n_labels}, {n_labels})")
    if t.shape != (n_labels, n_labels):
        raise ValueError(
            f"trans must have shape (L, L) = ({n_labels}, {n_labels}) to match the {n_labels} "
            f"label columns of state; got shape {t.shape}."
        )
    return t


def _check_labels(labels, name: str, length: int, n_labels: int) -> np.ndarray:
    """``labels`` as C-contiguous int32 of shape (length,), every value in [0, n_labels)."""
    a = np.asarray(labels)
    if a.dtype.kind not in "iu":
        raise ValueError(f"{name} must be an array of integer labels; got dtype {a.dtype}.")
    if a.shape != (length,):
        raise ValueError(
            f"{name} must have shape ({length},), one label per row of state; got shape {a.shape}."
        )
    if length:
        lo = int(a.min())
        hi = int(a.max())
        if lo < 0 or hi >= n_labels:
            pos = int(np.argmax((a < 0) | (a >= n_labels)))
            raise ValueError(
                f"{name} labels must lie in [0, {n_labels}) for L = {n_labels}; "
                f"found {int(a[pos])} at position {pos}."
            )
    return np.ascontiguousarray(a, dtype=np.int32)


def _check_offsets(offsets, n_rows: int) -> np.ndarray:
    """Sentence boundaries as C-contiguous int64: starts at 0, non-decreasing, ends at N."""
    a = np.asarray(offsets)
    if a.ndim != 1 or a.shape[0] < 1:
        raise ValueError(
            "offsets must be a 1-D array of n + 1 sentence boundaries (at least [0]); "
            f"got shape {a.shape}."
        )
    if a.dtype.kind not in "iu":
        raise ValueError(f"offsets must be an array of integer row indices; got dtype {a.dtype}.")
    a = np.ascontiguousarray(a, dtype=np.int64)
    if a[0] != 0:
        raise ValueError(f"offsets[0] must be 0; got {int(a[0])}.")
    if a[-1] != n_rows:
        raise ValueError(
            f"offsets[-1] must equal the number of rows of state (N = {n_rows}); got {int(a[-1])}."
        )
    step = np.diff(a)
    if (step < 0).any():
        k = int(np.argmax(step < 0))
        raise ValueError(
            f"offsets must be non-decreasing; got offsets[{k}] = {int(a[k])} > "
            f"offsets[{k + 1}] = {int(a[k + 1])}."
        )
    return a


def _check_loss_scale(loss_scale) -> float:
    try:
        value = float(loss_scale)
    except (TypeError, ValueError):
        raise ValueError(f"loss_scale must be a finite number; got {loss_scale!r}.") from None
    if not math.isfinite(value):
        raise ValueError(f"loss_scale must be a finite number; got {value}.")
    return value


# ---------------------------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------------------------


def viterbi(state, trans) -> tuple[np.ndarray, float]:
    """Best path ``argmax_y F(y)`` of one sentence.

    Parameters
    ----------
    state : array (T, L), T >= 1
    trans : array (L, L)

    Returns
    -------
    path : int32 array (T,)
        Ties go to the lowest label index. When every path is ``-inf`` the score is ``-inf``
        and ``path`` is still a valid labelling.
    score : float
        ``F(path)``.
    """
    s = _check_state(state, batch=False)
    t = _check_trans(trans, s.shape[1])
    out = np.empty(s.shape[0], dtype=np.int32)
    score = viterbi_into(s, t, out)
    return out, float(score)


def viterbi_batch(state, offsets, trans) -> tuple[np.ndarray, np.ndarray]:
    """Best paths of stacked sentences, in parallel.

    Parameters
    ----------
    state : array (N, L), the rows of every sentence stacked
    offsets : integer array (n + 1,), sentence ``s`` is rows ``offsets[s]:offsets[s+1]``;
        empty sentences are allowed
    trans : array (L, L)

    Returns
    -------
    labels : int32 array (N,)
    scores : float64 array (n,), each sentence's best score (0 for an empty sentence)
    """
    s = _check_state(state, batch=True)
    o = _check_offsets(offsets, s.shape[0])
    t = _check_trans(trans, s.shape[1])
    out = np.empty(s.shape[0], dtype=np.int32)
    scores = np.empty(o.shape[0] - 1, dtype=np.float64)
    viterbi_batch_into(s, o, t, out, scores)
    return out, scores


def loss_augmented_viterbi(state, trans, gold, loss_scale=1.0) -> tuple[np.ndarray, float]:
    """``argmax_y F(y) + loss_scale * Hamming(gold, y)`` for one sentence.

    This is the most violated constraint of the structured hinge loss (with ``loss_scale``
    scaling the Hamming loss). ``state`` is not modified.

    Returns
    -------
    path : int32 array (T,)
    augmented_score : float
        ``F(path) + loss_scale * Hamming(gold, path)``.
    """
    s = _check_state(state, batch=False)
    t = _check_trans(trans, s.shape[1])
    g = _check_labels(gold, "gold", s.shape[0], s.shape[1])
    scale = _check_loss_scale(loss_scale)
    out = np.empty(s.shape[0], dtype=np.int32)
    score = loss_augmented_viterbi_into(s, t, g, scale, out)
    return out, float(score)


def loss_augmented_viterbi_batch(
    state, offsets, trans, gold, loss_scale=1.0
) -> tuple[np.ndarray, np.ndarray]:
    """Loss-augmented Viterbi over stacked sentences, in parallel.

    ``gold`` holds the N gold labels in the same row layout as ``state``. Returns the labels
    (int32, N) and each sentence's augmented score (float64, n; 0 for an empty sentence).
    """
    s = _check_state(state, batch=True)
    o = _check_offsets(offsets, s.shape[0])
    t = _check_trans(trans, s.shape[1])
    g = _check_labels(gold, "gold", s.shape[0], s.shape[1])
    scale = _check_loss_scale(loss_scale)
    out = np.empty(s.shape[0], dtype=np.int32)
    scores = np.empty(o.shape[0] - 1, dtype=np.float64)
    loss_augmented_viterbi_batch_into(s, o, t, g, scale, out, scores)
    return out, scores


def second_best_viterbi(state, trans, exclude) -> tuple[np.ndarray, float]:
    """Best path that differs from ``exclude`` in at least one position.

    Used by column generation when the best path is the gold one. O(T L^2).

    Returns
    -------
    path : int32 array (T,)
        Differs from ``exclude``. With a single label no other path exists: the score is
        ``-inf`` and ``path`` is filled with -1.
    score : float
        ``F(path)``; ``-inf`` when every other path is forbidden.
    """
    s = _check_state(state, batch=False)
    t = _check_trans(trans, s.shape[1])
    e = _check_labels(exclude, "exclude", s.shape[0], s.shape[1])
    out = np.empty(s.shape[0], dtype=np.int32)
    score = second_best_viterbi_into(s, t, e, out)
    return out, float(score)


def forward_backward(state, trans) -> tuple[float, np.ndarray, np.ndarray]:
    """Log partition function and marginals of the CRF ``p(y) = exp F(y) / Z``.

    Returns
    -------
    log_z : float
        ``log sum_y exp F(y)``; ``-inf`` when no path is feasible.
    node_marginals : float64 array (T, L)
        ``P(y_t = l)``; every row sums to 1 (all zeros when log Z = -inf).
    edge_marginals : float64 array (L, L)
        ``sum_{t>=1} P(y_{t-1} = i, y_t = j)``, summed over positions.
    """
    s = _check_state(state, batch=False)
    t = _check_trans(trans, s.shape[1])
    T, L = s.shape
    node = np.empty((T, L), dtype=np.float64)
    edge = np.empty((L, L), dtype=np.float64)
    log_z = forward_backward_into(s, t, node, edge)
    return float(log_z), node, edge


def forward_backward_batch(state, offsets, trans) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Forward-backward over stacked sentences, in parallel.

    Returns
    -------
    log_z : float64 array (n,), 0 for an empty sentence
    node_marginals : float64 array (N, L)
    edge_marginals : float64 array (n, L, L), one matrix per sentence, each summed over that
        sentence's positions (sum over axis 0 for the corpus total)
    """
    s = _check_state(state, batch=True)
    o = _check_offsets(offsets, s.shape[0])
    t = _check_trans(trans, s.shape[1])
    n = o.shape[0] - 1
    L = s.shape[1]
    node = np.empty(s.shape, dtype=np.float64)
    edge = np.empty((n, L, L), dtype=np.float64)
    log_z = np.empty(n, dtype=np.float64)
    forward_backward_batch_into(s, o, t, node, edge, log_z)
    return log_z, node, edge
