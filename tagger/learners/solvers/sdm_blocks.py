"""Block-parallel rounds of the dual method of :mod:`.sdm_solver`: the same dual, the same
visits, several sentences' blocks optimised at once, their updates joined by an exact line
search on the dual.

A pass over the examples (their order drawn as for the sequential method; examples that take
no part left out) is cut into *rounds* of ``blocks`` blocks of ``block_size`` consecutive
examples. In a round:

1. every block is optimised on its own, by the sequential visits of
   :func:`~.sdm_kernels.sdm_visit`, against its own view of the weights: the weights at the
   start of the round plus its own steps. A weight that ``beta_j`` blocks of the round may
   move (``beta_j``: the blocks whose tokens carry its attribute, for a state or pair
   weight; every block for the transition, start, end and triple weights) counts ``beta_j``
   times in a step's curvature and moves ``beta_j`` times as far in the block's view. The
   block then maximises a lower bound of the dual's gain that is separable over the blocks,
   since by Cauchy-Schwarz, coordinate by coordinate, ``||s (du_1 + ... + du_K)||^2 <= sum_j
   beta_j s_j^2 sum_k du_kj^2``: the local subproblem of CoCoA+ (Ma et al., *Adding vs.
   Averaging in Distributed Primal-Dual Optimization*, ICML 2015) with its safe sigma' taken
   per coordinate, as the expected separable overapproximation of parallel coordinate
   descent does (Richtarik & Takac, *Parallel coordinate descent methods for big data
   optimization*, Math. Prog. 2016; Takac, Richtarik & Srebro, *Distributed Mini-Batch
   SDCA*, 2015). The blocks share nothing, so they run at once, one per thread;
2. the blocks' changes ``du_k`` of ``u`` (and of their duals) are added in block order,
   ``du = du_1 + ... + du_K``, and the round moves the duals by ``t`` times their change,
   ``t`` the exact maximiser of the dual on the segment, clipped to [0, 1]::

       D(alpha + t dalpha) = D(alpha) + t (dalpha . loss - w . du) - (t^2 / 2) ||s du||^2

   Both ends of the segment are feasible, so every point of it is; by the bound of step 1,
   t = 1 already gains at least the blocks' own gains, and the line search can only add to
   that: the dual never falls;
3. members of the round's working sets left at alpha = 0 leave them.

The damping of step 1 is the price of running blocks at once: on data whose sentences share
many weights (transitions, frequent attributes), a pass gains less than a sequential pass, so
the method pays when the threads outnumber that loss (see docs/learners.md).

Blocks, their order and the summation order come from the data and the seed alone, never
from the number of threads: a thread takes whole blocks, its work arrays are returned clean,
and the sums run in block order, so the weights are the same bits with any thread count. It
reaches the same optimum as the sequential method, certified by the same duality gap.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tagger._config import NUMBA_OPTS, NUMBA_PARALLEL_OPTS
from tagger.chain import SparseAccumulator, structure_sizes
from tagger.jit import njit, prange
from tagger.learners.solvers.sdm_kernels import prune_working_set, sdm_visit, visit_buffers


class SlotWork(NamedTuple):
    """The work arrays of the threads (one row per slot; a slot runs whole blocks one after
    another): each slot's copy of the weights, kept equal to ``w`` between rounds, the
    block's change of ``u``, and what it touched. Clean between blocks."""

    w: np.ndarray  # float64[S, n_weights]: the round's weights plus the block's own steps
    du: np.ndarray  # float64[S, n_weights]: the block's change of u (0 off its entries)
    mark: np.ndarray  # bool[S, n_weights]: entries the block moved
    touched: np.ndarray  # int64[S, n_weights]: those entries, in order of first move
    step: np.ndarray  # float64[S, n_weights]: a minimal step's direction (SparseAccumulator)
    step_mark: np.ndarray  # bool[S, n_weights]
    step_touched: np.ndarray  # int64[S, n_weights]
    attr_row: np.ndarray  # int64[S, n_attrs]: -1 (the parameter table's scratch)


def slot_work(n_slots: int, n_weights: int, n_attrs: int) -> SlotWork:
    return SlotWork(
        np.zeros((n_slots, n_weights)),
        np.zeros((n_slots, n_weights)),
        np.zeros((n_slots, n_weights), dtype=np.bool_),
        np.empty((n_slots, n_weights), dtype=np.int64),
        np.zeros((n_slots, n_weights)),
        np.zeros((n_slots, n_weights), dtype=np.bool_),
        np.empty((n_slots, n_weights), dtype=np.int64),
        np.full((n_slots, n_attrs), -1, dtype=np.int64),
    )


@njit(**NUMBA_OPTS)
def block_epoch(
    layout,
    X,
    gold,
    dual,
    ws,
    order,
    blocks,
    block_size,
    max_inner,
    eps,
    scratch,
    slots,
    stats,
    unit,
):
    """One pass over the examples of ``order`` in block-parallel rounds (the module
    docstring). Examples that take no part (empty, or C_i = 0 with no duals) are left out
    before the rounds are cut. stats as for :func:`~.sdm_kernels.sdm_epoch`, plus stats[3]
    += rounds and stats[4] += rounds whose step ``t`` was below 1."""
    offsets = X.offsets
    Cw = dual.C
    ws_n = ws.size
    M = ws.alpha.shape[1]
    active = np.empty(order.shape[0], dtype=np.int64)
    n_act = 0
    for k in range(order.shape[0]):
        i = order[k]
        if offsets[i + 1] > offsets[i] and (Cw[i] > 0.0 or ws_n[i] > 0):
            active[n_act] = i
            n_act += 1
    active = active[:n_act]
    per_round = blocks * block_size
    alpha_old = np.empty((min(per_round, n_act), M))
    for j in range(slots.w.shape[0]):
        slots.w[j, :] = dual.w
    n_attrs = scratch.attr_row.shape[0]
    beta = np.zeros(n_attrs + 1, dtype=np.int64)  # the last entry: the edge weights
    stamp = np.full(n_attrs, -1, dtype=np.int64)
    for r0 in range(0, n_act, per_round):
        r1 = min(n_act, r0 + per_round)
        n_blocks = (r1 - r0 + block_size - 1) // block_size
        block_overlap(X, active, r0, r1, block_size, beta, stamp)
        for j in range(r0, r1):
            alpha_old[j - r0, :] = ws.alpha[active[j], :]
        starts = _block_capacity(
            layout, scratch.structure, X, active, r0, r1, block_size, dual.u.shape[0]
        )
        out_idx = np.empty(starts[n_blocks], dtype=np.int64)
        out_val = np.empty(starts[n_blocks])
        out_n = np.zeros(n_blocks, dtype=np.int64)
        block_stats = np.zeros((n_blocks, 3), dtype=np.int64)
        run_blocks(
            layout,
            X,
            gold,
            dual,
            ws,
            active,
            r0,
            r1,
            block_size,
            max_inner,
            eps,
            scratch.param_attr,
            scratch.structure,
            beta,
            slots,
            starts,
            out_idx,
            out_val,
            out_n,
            block_stats,
        )
        for k in range(n_blocks):
            for c in range(3):
                stats[c] += block_stats[k, c]
        t = join_blocks(
            offsets,
            dual,
            ws,
            active,
            r0,
            r1,
            alpha_old,
            starts,
            (out_idx, out_val, out_n),
            scratch.acc,
            slots,
            unit,
        )
        stats[3] += 1
        if t < 1.0:
            stats[4] += 1
        block_overlap(X, active, r0, r1, block_size, beta, stamp)  # back to zeros


@njit(**NUMBA_OPTS)
def block_overlap(X, active, r0, r1, block_size, beta, stamp):
    """beta[attr] += the number of the round's blocks whose tokens carry the attribute (at
    most the blocks that can move its weights); beta[-1] += the number of blocks (every
    block can move the edge weights). Called again after the round with ``beta`` negated
    in effect: the stamps alternate so that the second call takes the counts back."""
    n_blocks = (r1 - r0 + block_size - 1) // block_size
    back = beta[beta.shape[0] - 1] > 0
    sign = -1 if back else 1
    indptr, offsets, attrs = X.indptr, X.offsets, X.attrs
    for k in range(n_blocks):
        tag = 2 * (r0 + k) + (1 if back else 0)
        for j in range(r0 + k * block_size, min(r1, r0 + (k + 1) * block_size)):
            i = active[j]
            for e in range(indptr[offsets[i]], indptr[offsets[i + 1]]):
                at = attrs[e]
                if stamp[at] != tag:
                    stamp[at] = tag
                    beta[at] += sign
    beta[beta.shape[0] - 1] += sign * n_blocks


@njit(**NUMBA_OPTS)
def _block_capacity(layout, st, X, active, r0, r1, block_size, n_weights):
    """Where each block's record of moved entries starts in the round's buffers: a block moves
    at most one state weight per (entry of its tokens, label), one pair weight per (entry,
    label pair) when the model has pair templates, and every transition, start, end and
    triple weight."""
    n_blocks = (r1 - r0 + block_size - 1) // block_size
    L = layout.n_labels
    n_pair, n_trip = structure_sizes(st)
    per_entry = L + (L * L if n_pair > 0 else 0)
    n_shared = L * L + 2 * L + n_trip
    starts = np.zeros(n_blocks + 1, dtype=np.int64)
    for k in range(n_blocks):
        nnz = 0
        for j in range(r0 + k * block_size, min(r1, r0 + (k + 1) * block_size)):
            i = active[j]
            nnz += X.indptr[X.offsets[i + 1]] - X.indptr[X.offsets[i]]
        starts[k + 1] = starts[k] + min(n_weights, nnz * per_entry + n_shared)
    return starts


@njit(**NUMBA_PARALLEL_OPTS)
def run_blocks(
    layout,
    X,
    gold,
    dual,
    ws,
    active,
    r0,
    r1,
    block_size,
    max_inner,
    eps,
    param_attr,
    st,
    beta,
    slots,
    starts,
    out_idx,
    out_val,
    out_n,
    stats,
):
    """Step 1 of a round: block k (examples active[r0 + k * block_size ...]) optimised against
    a slot's copy of the weights; its moved entries and their change of u are written at
    ``starts[k]`` of ``out_idx`` / ``out_val`` (``out_n[k]`` of them), and the slot's arrays
    are returned clean (its weights equal to ``w`` again)."""
    n_slots = slots.w.shape[0]
    n_blocks = starts.shape[0] - 1
    L = layout.n_labels
    M = ws.alpha.shape[1]
    for j in prange(n_slots):
        w_local = slots.w[j]
        du = slots.du[j]
        mark = slots.mark[j]
        touched = slots.touched[j]
        acc = SparseAccumulator(slots.step[j], slots.step_mark[j], slots.step_touched[j])
        scratch = (acc, param_attr, slots.attr_row[j], st)
        local = (dual.C, dual.s2, du, w_local)
        for k in range(j, n_blocks, n_slots):
            lo = r0 + k * block_size
            hi = min(r1, lo + block_size)
            bufs = visit_buffers(X, active[lo:hi], L, M, True, st)
            n = 0
            for q in range(lo, hi):
                n = sdm_visit(
                    layout,
                    X,
                    gold,
                    active[q],
                    local,
                    ws,
                    max_inner,
                    eps,
                    scratch,
                    bufs,
                    stats[k],
                    True,
                    False,
                    (mark, touched, beta),
                    n,
                    False,
                )
            base = starts[k]
            for q in range(n):
                kk = touched[q]
                out_idx[base + q] = kk
                out_val[base + q] = du[kk]
                du[kk] = 0.0
                mark[kk] = False
                w_local[kk] = dual.w[kk]
            out_n[k] = n


@njit(**NUMBA_OPTS)
def join_blocks(offsets, dual, ws, active, r0, r1, alpha_old, starts, out, acc, slots, unit):
    """Steps 2 and 3 of a round: add the blocks' changes in block order, take the exact step
    ``t`` on the dual along them, update u, w (one array with ``unit``), the slots' copies and
    the duals, prune. ``out`` = (out_idx, out_val, out_n) of :func:`run_blocks`. Returns t."""
    out_idx, out_val, out_n = out
    Cw, s2, u, w = dual
    ws_n, ws_alpha, ws_loss, ws_lab = ws
    D, mark, touched = acc
    n = 0
    for k in range(out_n.shape[0]):
        for q in range(starts[k], starts[k] + out_n[k]):
            kk = out_idx[q]
            if not mark[kk]:
                mark[kk] = True
                touched[n] = kk
                n += 1
            D[kk] += out_val[q]
    # slope at t = 0 and curvature of the dual along the joined change
    slope = 0.0
    for j in range(r0, r1):
        i = active[j]
        for m in range(ws_n[i]):
            slope += (ws_alpha[i, m] - alpha_old[j - r0, m]) * ws_loss[i, m]
    curve = 0.0
    for q in range(n):
        kk = touched[q]
        slope -= w[kk] * D[kk]
        curve += s2[kk] * D[kk] * D[kk]
    if curve > 0.0:
        t = min(1.0, max(0.0, slope / curve))
    else:  # no curvature (the moved features are switched off by s): a free gain
        t = 1.0 if slope >= 0.0 else 0.0
    for q in range(n):
        kk = touched[q]
        u[kk] += t * D[kk]
        if not unit:
            w[kk] = s2[kk] * u[kk]
        D[kk] = 0.0
        mark[kk] = False
        for j in range(slots.w.shape[0]):
            slots.w[j, kk] = w[kk]
    for j in range(r0, r1):
        i = active[j]
        if t < 1.0:
            for m in range(ws_n[i]):
                ws_alpha[i, m] = alpha_old[j - r0, m] + t * (ws_alpha[i, m] - alpha_old[j - r0, m])
        prune_working_set(ws, i, offsets[i], offsets[i + 1])
    return t
