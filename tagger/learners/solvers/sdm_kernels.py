"""The numba kernels of the Sequential Dual Method (:mod:`.sdm_solver`): one pass over the
examples (loss-augmented Viterbi, then sequential minimal steps inside each working set), the
structured hinge of every sentence (the primal's loss term), and taking an example's duals
out of ``u``; with the records they take.

Every kernel serves every structure of model (:class:`~tagger.chain.ChainStructure`: a
plain first-order chain, label-pair templates, order 2): the lattice of the loss-augmented
Viterbi, the labelings' scores and the feature differences of the minimal steps come from
:mod:`tagger.chain.structure`. A plain chain's structure is None, for which numba compiles
the kernels apart with only the plain chain's code in them.

The problem, the dual and the steps are described in :mod:`.sdm_solver`, whose
:class:`~tagger.learners.solvers.sdm_solver.SDMSolver` keeps the state these kernels update in
place. They live apart from it so that the solver's Python side (checks, warm starts, the
stopping rule) reads on its own.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tagger._config import NUMBA_OPTS, NUMBA_PARALLEL_OPTS
from tagger.chain import (
    ChainStructure,
    SparseAccumulator,
    add_structure_difference,
    release_param_table,
    sentence_param_table,
    sentence_state_scores,
    sentence_state_scores_table,
    set_table_weight,
    structure_buffers,
    structure_edges,
    structure_entry_scores,
    structure_loss_augmented_into,
    structure_score,
    sync_structure_weight,
    transitions_of,
)
from tagger.jit import njit, prange

# --------------------------------------------------------------------------------- records


class CompetitorSets(NamedTuple):
    """Each example's working set of competing labelings and their duals (M slots each)."""

    size: np.ndarray  # int32[n]: members of example i's set
    alpha: np.ndarray  # float64[n, M]: dual of member m of example i
    loss: np.ndarray  # float64[n, M]: its Hamming loss
    labels: np.ndarray  # int32[M, n_tokens]: member m's labeling, stacked over examples


class DualState(NamedTuple):
    """Example weights and the primal iterate kept in step with the duals."""

    C: np.ndarray  # float64[n]: example weights C_i
    s2: np.ndarray  # float64[n_weights]: squared per-weight scaling
    u: np.ndarray  # float64[n_weights]: sum of the duals' feature differences
    w: np.ndarray  # float64[n_weights]: effective weights s2 * u


class Scratch(NamedTuple):
    """What the SDM kernels read about the model besides its layout, and their work arrays
    (clean between calls)."""

    acc: SparseAccumulator
    param_attr: np.ndarray  # int64[n_weights]: each state and pair parameter's attribute, else -1
    attr_row: np.ndarray  # int64[n_attrs]: -1, or the attribute's row in a parameter table
    structure: ChainStructure | None  # chain_structure(model): None for a plain chain


# --------------------------------------------------------------------------------- kernels


@njit(**NUMBA_OPTS)
def remove_example(layout, st, X, i, gold, coef, ws, u, acc):
    """u += coef * sum_m alpha_im (f(x_i, gold) - f(x_i, y_im)): coef = -1 takes example i's
    contribution out of u (before a reset), coef = c - 1 rescales its duals by c."""
    a = X.offsets[i]
    b = X.offsets[i + 1]
    d, mark, touched = acc
    n = 0
    for m in range(ws.size[i]):
        n = add_structure_difference(
            layout, st, X, a, b, gold, ws.labels[m], coef * ws.alpha[i, m], acc, n
        )
    for j in range(n):
        k = touched[j]
        u[k] += d[k]
        d[k] = 0.0
        mark[k] = False


@njit(**NUMBA_OPTS)
def visit_buffers(X, order, L, M, table, st):
    """Work arrays of :func:`sdm_visit` for the sentences ``order``: state scores and the
    loss-augmented labeling (rows of the longest sentence), the members' H (M + 1), the
    parameter table with its attributes (the largest sentence's entries; empty without
    ``table``), and the structure's (:func:`~tagger.chain.structure_buffers`)."""
    indptr, offsets = X.indptr, X.offsets
    max_len = 0
    max_nnz = 0
    for k in range(order.shape[0]):
        s = order[k]
        max_len = max(max_len, offsets[s + 1] - offsets[s])
        max_nnz = max(max_nnz, indptr[offsets[s + 1]] - indptr[offsets[s]])
    return (
        np.empty((max_len, L)),
        np.empty(max_len, dtype=np.int32),
        np.empty(M + 1),
        np.empty((max_nnz if table else 0, L)),
        np.empty(max_nnz if table else 0, dtype=np.int64),
        structure_buffers(st, max_len, L),
    )


@njit(**NUMBA_OPTS)
def sdm_epoch(layout, X, gold, dual, ws, order, max_inner, eps, scratch, stats, table, unit):
    """One pass of the Sequential Dual Method over the examples in ``order``.

    ``w`` (= s2 * u) and ``u`` are updated in place; ``unit`` says that they are one array
    (s = 1, :meth:`SDMSolver._refresh_w`), moved once. stats[0] += competitors added,
    stats[1] += minimal steps, stats[2] += examples whose working set was full.

    A visit rescores its sentence after every minimal step; a gather of every attribute's
    weights from the whole weight vector is most of the cost of a pass (cache misses). With
    ``table`` the sentence's weights are copied once per visit into a small dense table kept
    in step with ``w``, and the rescoring reads that (the same scores: ``table=False`` is the
    plain form, kept for the tests). ``param_attr`` is each state and pair parameter's
    attribute (-1 for the other weights), ``attr_row`` scratch of -1 per attribute."""
    bufs = visit_buffers(X, order, layout.n_labels, ws.alpha.shape[1], table, scratch.structure)
    untracked = (np.zeros(0, np.bool_), np.zeros(0, np.int64), np.zeros(0, np.int64))
    for k in range(order.shape[0]):
        sdm_visit(
            layout,
            X,
            gold,
            order[k],
            dual,
            ws,
            max_inner,
            eps,
            scratch,
            bufs,
            stats,
            table,
            unit,
            untracked,
            0,
            True,
        )


@njit(**NUMBA_OPTS)
def sdm_visit(
    layout, X, gold, i, dual, ws, max_inner, eps, scratch, bufs, stats, table, unit, track, n, prune
):
    """One visit of example i (:func:`sdm_epoch`; the steps are in :mod:`.sdm_solver`).

    ``bufs`` are :func:`visit_buffers`. ``track`` = (mark, touched, beta) makes it a visit of
    a block-parallel round (:mod:`.sdm_blocks`): every weight the visit moves is recorded
    after the ``n`` already recorded (the new count is returned), ``u`` is the block's change
    of u and ``w`` the block's view of the weights, in which a weight that ``beta`` blocks
    of the round may move weighs ``beta`` times in the step and moves ``beta`` times as far
    (:func:`overlap`). Empty arrays: a plain sequential visit. With ``prune`` the members left
    at alpha = 0 leave the working set at the end of the visit (the rounds prune after
    joining their blocks)."""
    offsets = X.offsets
    Cw, s2, u, w = dual
    ws_n, ws_alpha, ws_loss, ws_lab = ws
    acc, param_attr, attr_row, st = scratch
    d, mark, touched = acc
    state_buf, ystar_buf, H, ptable, row_attr, sbufs = bufs
    tmark, ttouched, beta = track
    tracked = tmark.shape[0] > 0
    M = ws_alpha.shape[1]
    a = offsets[i]
    b = offsets[i + 1]
    if b <= a or (Cw[i] <= 0.0 and ws_n[i] == 0):
        return n
    trans = transitions_of(layout, w)  # a view: follows the updates of w
    state = state_buf[: b - a]
    ystar = ystar_buf[: b - a]
    n_rows = 0
    if table:
        n_rows = sentence_param_table(layout, X, w, a, b, attr_row, row_attr, ptable)
        sentence_state_scores_table(layout, X, w, a, b, attr_row, ptable, state)
    else:
        sentence_state_scores(layout, X, w, a, b, state)
    structure_edges(st, X, w, a, b, trans, sbufs)
    structure_entry_scores(st, w, sbufs)
    aug = structure_loss_augmented_into(st, state, trans, sbufs, gold, a, 1.0, ystar)
    g = structure_score(st, state, trans, sbufs, gold, a, b)
    h_star = aug - g
    xi = 0.0
    same = False
    for m in range(ws_n[i]):
        hm = ws_loss[i, m] + structure_score(st, state, trans, sbufs, ws_lab[m], a, b) - g
        xi = max(xi, hm)
        if not same:
            same = True
            for t in range(a, b):
                if ws_lab[m, t] != ystar[t - a]:
                    same = False
                    break
    if h_star > xi + eps and not same and Cw[i] > 0.0:
        if ws_n[i] < M:
            m = ws_n[i]
            loss = 0.0
            for t in range(a, b):
                ws_lab[m, t] = ystar[t - a]
                if ystar[t - a] != gold[t]:
                    loss += 1.0
            ws_loss[i, m] = loss
            ws_alpha[i, m] = 0.0
            ws_n[i] += 1
            stats[0] += 1
        else:
            stats[2] += 1
    # sequential minimal steps; index n_i stands for the gold labeling (H = 0, the slack)
    for it in range(max_inner):
        n_i = ws_n[i]
        alpha_gold = Cw[i]
        for m in range(n_i):
            alpha_gold -= ws_alpha[i, m]
            H[m] = ws_loss[i, m] + structure_score(st, state, trans, sbufs, ws_lab[m], a, b) - g
        H[n_i] = 0.0
        up = n_i
        for m in range(n_i):
            if H[m] > H[up]:
                up = m
        down = -1
        if alpha_gold > 1e-12 * Cw[i]:
            down = n_i
        for m in range(n_i):
            if ws_alpha[i, m] > 0.0 and (down < 0 or H[m] < H[down]):
                down = m
        if down < 0 or up == down or H[up] - H[down] <= eps:
            break
        # d = f(y_down) - f(y_up) (the gold labeling's features cancel)
        lab_down = gold if down == n_i else ws_lab[down]
        lab_up = gold if up == n_i else ws_lab[up]
        nt = add_structure_difference(layout, st, X, a, b, lab_down, lab_up, 1.0, acc, 0)
        q = 0.0
        for j in range(nt):
            kk = touched[j]
            if unit:
                q += d[kk] * d[kk]
            elif tracked:  # a block's step: the curvature the joined round can reach
                q += overlap(layout, param_attr, beta, kk) * s2[kk] * d[kk] * d[kk]
            else:
                q += s2[kk] * d[kk] * d[kk]
        cap = alpha_gold if down == n_i else ws_alpha[i, down]
        if q > 0.0:
            delta = min(cap, (H[up] - H[down]) / q)
        else:  # same features (only possible when s2 switches them off): free gain
            delta = cap
        for j in range(nt):
            kk = touched[j]
            if unit:  # s = 1: w and u are one array (SDMSolver._refresh_w)
                w[kk] += delta * d[kk]
            elif tracked:
                u[kk] += delta * d[kk]
                w[kk] += delta * (overlap(layout, param_attr, beta, kk) * s2[kk]) * d[kk]
            else:
                u[kk] += delta * d[kk]
                w[kk] += delta * s2[kk] * d[kk]
            d[kk] = 0.0
            mark[kk] = False
            if tracked and not tmark[kk]:
                tmark[kk] = True
                ttouched[n] = kk
                n += 1
            if table:  # the sentence's own state weights are rows of the table
                set_table_weight(layout, param_attr, attr_row, ptable, w, kk)
            sync_structure_weight(st, w, sbufs, kk)
        if up != n_i:
            ws_alpha[i, up] += delta
        if down != n_i:
            ws_alpha[i, down] = 0.0 if delta >= cap else ws_alpha[i, down] - delta
        stats[1] += 1
        if it + 1 == max_inner:
            break  # the visit's last step: nothing reads the scores after it
        if table:
            sentence_state_scores_table(layout, X, w, a, b, attr_row, ptable, state)
        else:
            sentence_state_scores(layout, X, w, a, b, state)
        structure_edges(st, X, w, a, b, trans, sbufs)
        g = structure_score(st, state, trans, sbufs, gold, a, b)
    if table:
        release_param_table(attr_row, row_attr, n_rows)
    if prune:
        prune_working_set(ws, i, a, b)
    return n


@njit(**NUMBA_OPTS)
def overlap(layout, param_attr, beta, p):
    """How many blocks of a round may move weight p: ``beta[attr]`` for a state or pair
    weight of that attribute (only a block whose tokens carry it can move it), ``beta[-1]``
    (every block) for the transition, start, end and triple weights."""
    at = param_attr[p]
    if at >= 0:
        return beta[at]
    return beta[beta.shape[0] - 1]


@njit(**NUMBA_OPTS)
def prune_working_set(ws, i, a, b):
    """Members of example i's working set at alpha <= 0 leave it (the last member takes
    their slot)."""
    ws_n, ws_alpha, ws_loss, ws_lab = ws
    m = 0
    while m < ws_n[i]:
        if ws_alpha[i, m] <= 0.0:
            last = ws_n[i] - 1
            if m != last:
                ws_alpha[i, m] = ws_alpha[i, last]
                ws_loss[i, m] = ws_loss[i, last]
                for t in range(a, b):
                    ws_lab[m, t] = ws_lab[last, t]
            ws_alpha[i, last] = 0.0  # slots past ws_n[i] hold nothing
            ws_loss[i, last] = 0.0
            ws_n[i] = last
        else:
            m += 1


@njit(**NUMBA_PARALLEL_OPTS)
def hinge_losses(layout, st, X, w, gold, skip, out):
    """out[i] = R_i(w) (structured hinge with Hamming loss), in parallel over sentences;
    0 where ``skip[i]`` (when ``skip`` is non-empty)."""
    offsets = X.offsets
    L = layout.n_labels
    trans = transitions_of(layout, w)
    for i in prange(offsets.shape[0] - 1):
        a = offsets[i]
        b = offsets[i + 1]
        if b <= a or (skip.shape[0] > 0 and skip[i]):
            out[i] = 0.0
            continue
        state = np.empty((b - a, L))
        pred = np.empty(b - a, dtype=np.int32)
        sentence_state_scores(layout, X, w, a, b, state)
        sbufs = structure_buffers(st, b - a, L)
        structure_edges(st, X, w, a, b, trans, sbufs)
        structure_entry_scores(st, w, sbufs)
        aug = structure_loss_augmented_into(st, state, trans, sbufs, gold, a, 1.0, pred)
        g = structure_score(st, state, trans, sbufs, gold, a, b)
        out[i] = max(aug - g, 0.0)  # >= 0 exactly: the gold labeling is a candidate
