"""Constraint matching for ``ssvm-annealing`` (its step 2a; Balamurugan, Shevade &
Sellamanickam): random label switching over the imputed labelings of the unlabeled sentences,
a switch kept when ``C_u * hinge + penalties`` falls.

The hinge change of a single switch is exact in O(L) from the loss-augmented max-marginals
``M`` of the sentence's lattice (kept current in a :class:`SwitchLattice`); a run move (a whole
run of equal labels taking a neighbouring run's label) is scored from the kept forward rows
before the run and backward rows after it, in O(run length L^2). Penalty changes come from
:mod:`tagger.constraints` (corpus terms through running totals). :func:`no_constraints` gives
the records of an empty rule set (switching then lowers the hinge alone) and
:func:`path_scores` each sentence's score under its labeling.

A model with label-pair templates (:mod:`tagger.chain.pairs`) has transitions that vary by
position: every kernel here takes them as ``edge`` (N, L, L), ``edge[i]`` the transitions into
token i (row i of a sentence's first token unused), beside the (L, L) ``trans``. A plain
chain passes ``edge = None``: numba compiles the kernels apart for a None argument and drops
the branch (:func:`transition`), so the plain chain keeps its own steps, bits and speed. The
max-marginal argument is unchanged by per-position transitions: the Hamming loss still adds
to nodes only, so moving the gold label at t still shifts exactly the paths through (t, old)
and (t, new).

A second-order model passes its pair-state lattice and triple scores as ``o2``
(:mod:`tagger.learners.solvers.switch_order2`, whose kernels the ``*_any`` dispatchers here
call); its forward and backward rows have a column per allowed label pair instead of per
label. ``o2 = None`` compiles the first-order kernels alone, as ``edge = None`` does.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tagger._config import NUMBA_OPTS, NUMBA_PARALLEL_OPTS
from tagger.chain import edge_path_score, labeling_score
from tagger.constraints import Counts, apply_switch, switch_penalty_delta
from tagger.constraints.penalties import (
    CorpusRules,
    InstanceRules,
    PenaltyRules,
    corpus_penalty,
    instance_penalty,
    run_corpus,
    run_phi,
    segments_of,
)
from tagger.jit import njit, prange
from tagger.learners.solvers.switch_order2 import (
    order2_aug_max_marginals,
    order2_extra_score,
    order2_switch_change,
    order2_top_after_run,
)


@njit(**NUMBA_OPTS)
def transition(trans, edge, i, k, lab):
    """The score of label k at token i - 1 followed by ``lab`` at token i: ``trans[k, lab]``
    for a plain chain (``edge`` None), else the position's ``edge[i, k, lab]``."""
    if edge is None:
        return trans[k, lab]
    return edge[i, k, lab]


@njit(**NUMBA_OPTS)
def sequence_score(state, trans, edge, y, a, b):
    """F of the labeling y[a:b] of the sequence whose state scores are rows a..b-1 of
    ``state``, under ``trans`` or the per-position ``edge``."""
    if edge is None:
        return labeling_score(state[a:b], trans, y[a:b])
    return edge_path_score(state[a:b], edge[a:b], y[a:b], 0)


@njit(**NUMBA_OPTS)
def aug_max_marginals(state, trans, edge, y, a, b, M, fwd, bwd):
    """M[t, l] = best loss-augmented score (Hamming to y[a:b]) of a path through (t, l);
    rows a..b-1 of ``state`` are the sequence's state scores, its transitions ``trans`` or
    (not None) ``edge``'s rows. Returns the max (= max_l M[t, l])."""
    L = state.shape[1]
    for lab in range(L):
        fwd[a, lab] = state[a, lab] + (1.0 if lab != y[a] else 0.0)
    for t in range(a + 1, b):
        for lab in range(L):
            best = -np.inf
            for k in range(L):
                v = fwd[t - 1, k] + transition(trans, edge, t, k, lab)
                if v > best:
                    best = v
            fwd[t, lab] = best + state[t, lab] + (1.0 if lab != y[t] else 0.0)
    for lab in range(L):
        bwd[b - 1, lab] = 0.0
    for t in range(b - 2, a - 1, -1):
        for k in range(L):
            best = -np.inf
            for lab in range(L):
                v = (
                    transition(trans, edge, t + 1, k, lab)
                    + state[t + 1, lab]
                    + (1.0 if lab != y[t + 1] else 0.0)
                    + bwd[t + 1, lab]
                )
                if v > best:
                    best = v
            bwd[t, k] = best
    top = -np.inf
    for t in range(a, b):
        for lab in range(L):
            M[t, lab] = fwd[t, lab] + bwd[t, lab]
    for lab in range(L):
        if M[a, lab] > top:
            top = M[a, lab]
    return top


@njit(**NUMBA_OPTS)
def _aug_top_after_run(state, trans, edge, y, a, b, r0, r1, fwd, bwd, scratch):
    """What :func:`aug_max_marginals` would return for the sequence a..b-1 once y[r0:r1]
    changed (up to rounding: the same maximum, summed in another order), from the lattices
    kept for y before the change: the forward rows before r0 depend only on y[:r0] and the
    backward rows from r1 - 1 on only on y[r1:], so only the run's own rows are computed (into
    ``scratch``), O((r1 - r0) L^2)."""
    L = state.shape[1]
    for t in range(r0, r1):
        for lab in range(L):
            if t == a:
                best = 0.0
            else:
                best = -np.inf
                for k in range(L):
                    prev = fwd[t - 1, k] if t == r0 else scratch[t - 1 - r0, k]
                    v = prev + transition(trans, edge, t, k, lab)
                    if v > best:
                        best = v
            scratch[t - r0, lab] = best + state[t, lab] + (1.0 if lab != y[t] else 0.0)
    top = -np.inf
    for lab in range(L):
        v = scratch[r1 - 1 - r0, lab] + bwd[r1 - 1, lab]
        if v > top:
            top = v
    return top


@njit(**NUMBA_OPTS)
def score_any(state, trans, edge, o2, y, a, b):
    """:func:`sequence_score`, plus the triples of a second-order model (``o2`` not None)."""
    if o2 is None:
        return sequence_score(state, trans, edge, y, a, b)
    return sequence_score(state, trans, edge, y, a, b) + order2_extra_score(o2, y, a, b)


@njit(**NUMBA_OPTS)
def max_marginals_any(state, trans, edge, o2, y, a, b, M, fwd, bwd):
    """:func:`aug_max_marginals`, or its pair-state form for a second-order model."""
    if o2 is None:
        return aug_max_marginals(state, trans, edge, y, a, b, M, fwd, bwd)
    return order2_aug_max_marginals(state, trans, edge, o2, y, a, b, M, fwd, bwd)


@njit(**NUMBA_OPTS)
def top_after_run_any(state, trans, edge, o2, y, a, b, r0, r1, fwd, bwd, scratch):
    """:func:`_aug_top_after_run`, or its pair-state form for a second-order model."""
    if o2 is None:
        return _aug_top_after_run(state, trans, edge, y, a, b, r0, r1, fwd, bwd, scratch)
    return order2_top_after_run(state, trans, edge, o2, y, a, b, r0, r1, fwd, bwd, scratch)


@njit(**NUMBA_OPTS)
def triples_change_any(o2, y, a, b, i, new):
    """The change of the triple terms when y[i] becomes ``new`` (0 for a first-order model;
    -inf when the switch leaves the pairs and triples a second-order model allows)."""
    if o2 is None:
        return 0.0
    return order2_switch_change(o2, y, a, b, i, new)


@njit(**NUMBA_PARALLEL_OPTS)
def all_max_marginals(state, trans, edge, y, offsets, M, fwd, bwd, top, o2):
    """Every sequence's loss-augmented max-marginals and best score (``top``); ``o2`` the
    flat lattice tuple of a second-order model (:mod:`.switch_order2`; ``fwd`` and ``bwd``
    then have a column per allowed pair), None for a first-order one."""
    for s in prange(offsets.shape[0] - 1):
        a, b = offsets[s], offsets[s + 1]
        if b > a:
            top[s] = max_marginals_any(state, trans, edge, o2, y, a, b, M, fwd, bwd)


class SwitchLattice(NamedTuple):
    """The unlabeled sequences' (N, L) state scores and transitions (``edge``: the (N, L, L)
    per-position transitions of a model with label-pair templates, None for a plain chain,
    which reads ``trans``), and the loss-augmented
    max-marginals ``M`` that label switching keeps current, with the forward and backward
    lattices they come from (``fwd`` / ``bwd``, as :func:`all_max_marginals` fills them: a
    run move reads the rows it does not change) and each sequence's best
    loss-augmented score ``top``; ``o2``: a second-order model's flat lattice tuple
    (:mod:`.switch_order2`; the forward and backward rows then have a column per allowed
    label pair), None otherwise."""

    state: np.ndarray
    trans: np.ndarray
    edge: np.ndarray | None
    M: np.ndarray
    fwd: np.ndarray
    bwd: np.ndarray
    top: np.ndarray
    o2: tuple | None = None


class SwitchPlan(NamedTuple):
    """How long label switching runs: proposals at most, the proposals over which progress is
    measured, the relative gain below which it stops, its random seed, and whether run moves
    (a whole run of equal labels at once) are proposed."""

    budget: int
    window: int
    tol: float
    seed: int
    block: bool


@njit(**NUMBA_OPTS)
def label_switching(lattice, y, offsets, seq_of, cu, rules, counts, objective0, plan, stats):
    """Constraint matching by random label switching (the module docstring; step 2a of
    :mod:`tagger.learners.ssvm_annealing`).

    ``lattice`` (a :class:`SwitchLattice`) holds the scores and max-marginals of the
    sequences ``offsets`` cuts ``y`` into, ``rules`` and ``counts`` the constraints' records
    (:meth:`ViolationState.records`), ``plan`` (a :class:`SwitchPlan`) how long to run.
    ``objective0`` is C_u * sum_j R_j + penalties at the start; stats[0] accepted switches,
    stats[1] proposals made, stats[2] the objective's decrease."""
    state, trans, edge, M, fwd, bwd, top, o2 = lattice
    budget, window, tol, seed, block = plan
    ind, c_offsets = rules.ind, rules.offsets
    kind, mask, other, row, lo, hi, rho, squared = rules.instance
    ckind, cmask, crow, target, tol_c, crho, csquared = rules.corpus
    phi, segs, num, den = counts
    np.random.seed(seed)
    N = y.shape[0]
    L = state.shape[1]
    C = kind.shape[0]
    phi_new = np.zeros(C)
    K = ckind.shape[0]
    dnum = np.zeros(K)
    dden = np.zeros(K)
    proposal = (phi_new, dnum, dden)
    cn1, cd1 = np.zeros(K), np.zeros(K)
    longest = 0
    for q in range(offsets.shape[0] - 1):
        longest = max(longest, offsets[q + 1] - offsets[q])
    B2 = np.empty((longest, fwd.shape[1]))  # a run's rows: a column per label (pair at order 2)
    objective = objective0
    window_gain = 0.0
    accepted = 0
    made = 0
    has_pen = C > 0 or ckind.shape[0] > 0
    for it in range(budget):
        i = np.random.randint(N)
        s = seq_of[i]
        a, b = offsets[s], offsets[s + 1]
        old = y[i]
        if block and np.random.random() < 0.5:
            # a run move: the whole run of equal labels around i takes a neighbour run's label
            r0 = i
            while r0 > a and y[r0 - 1] == old:
                r0 -= 1
            r1 = i + 1
            while r1 < b and y[r1] == old:
                r1 += 1
            if r0 == a and r1 == b:
                continue
            if r0 == a:
                new = y[r1]
            elif r1 == b:
                new = y[r0 - 1]
            else:
                new = y[r0 - 1] if np.random.random() < 0.5 else y[r1]
            made += 1
            # the counts change inside the run and at its ends (O(C (r1 - r0))), and the hinge
            # is scored from the kept rows around the run; the kept lattices are redone only
            # if the move is taken
            F0 = score_any(state, trans, edge, o2, y, a, b)
            if has_pen:
                run_phi(y, ind, a, b, r0, r1, new, kind, mask, other, row, segs[s], phi[s], phi_new)
                run_corpus(y, ind, a, b, r0, r1, new, ckind, cmask, crow, cn1, cd1)
            for k in range(r0, r1):
                y[k] = new
            delta = cu * (
                (
                    top_after_run_any(state, trans, edge, o2, y, a, b, r0, r1, fwd, bwd, B2)
                    - score_any(state, trans, edge, o2, y, a, b)
                )
                - (top[s] - F0)
            )
            if has_pen:
                delta += instance_penalty(phi_new, lo, hi, rho, squared) - instance_penalty(
                    phi[s], lo, hi, rho, squared
                )
                if ckind.shape[0] > 0:
                    n_seq = c_offsets.shape[0] - 1
                    for k in range(ckind.shape[0]):
                        dnum[k] = num[k] + cn1[k]
                        dden[k] = den[k] + cd1[k]
                    delta += corpus_penalty(
                        dnum, dden, target, tol_c, crho, csquared, n_seq
                    ) - corpus_penalty(num, den, target, tol_c, crho, csquared, n_seq)
            if delta < -1e-12:
                top[s] = max_marginals_any(state, trans, edge, o2, y, a, b, M, fwd, bwd)
                if has_pen:
                    phi[s, :] = phi_new
                    segments_of(y, a, b, segs[s])
                    for k in range(ckind.shape[0]):
                        num[k] = dnum[k]
                        den[k] = dden[k]
                objective += delta
                window_gain -= delta
                accepted += 1
            else:
                for k in range(r0, r1):
                    y[k] = old
            if (it + 1) % window == 0:
                if window_gain <= tol * abs(objective):
                    break
                window_gain = 0.0
            continue
        new = np.random.randint(L - 1)
        if new >= old:
            new += 1
        made += 1
        # hinge change: R = maxaug - F(y)
        dF = state[i, new] - state[i, old]
        if i > a:
            dF += transition(trans, edge, i, y[i - 1], new) - transition(
                trans, edge, i, y[i - 1], old
            )
        if i + 1 < b:
            dF += transition(trans, edge, i + 1, new, y[i + 1]) - transition(
                trans, edge, i + 1, old, y[i + 1]
            )
        # a second-order model's triples; -inf (refused below) for a pair or triple it does
        # not allow
        dF += triples_change_any(o2, y, a, b, i, new)
        new_top = -np.inf
        for lab in range(L):
            v = M[i, lab]
            if lab == old:
                v += 1.0
            elif lab == new:
                v -= 1.0
            if v > new_top:
                new_top = v
        d_hinge = (new_top - top[s]) - dF
        delta = cu * d_hinge
        if has_pen:
            delta += switch_penalty_delta(y, s, i, new, rules, counts, proposal)
        if delta < -1e-12:
            if has_pen:
                apply_switch(y, s, i, new, c_offsets, counts, proposal)
            else:
                y[i] = new
            top[s] = max_marginals_any(state, trans, edge, o2, y, a, b, M, fwd, bwd)
            objective += delta
            window_gain -= delta
            accepted += 1
        if (it + 1) % window == 0:
            if window_gain <= tol * abs(objective):
                break
            window_gain = 0.0
    stats[0] = accepted
    stats[1] = made
    stats[2] = objective0 - objective


def no_constraints(N: int, offsets: np.ndarray, L: int) -> tuple[PenaltyRules, Counts]:
    """Records of an empty constraint set: label switching then lowers the hinge alone."""
    z, zi, zl = np.zeros(0), np.zeros(0, np.int32), np.zeros((0, L), np.bool_)
    zb = np.zeros(0, np.bool_)
    n = len(offsets) - 1
    return (
        PenaltyRules(
            np.zeros((1, N), np.uint8),
            offsets,
            InstanceRules(zi, zl, zl, zi, z, z, z, zb),
            CorpusRules(zi, zl, zi, z, z, z, zb),
        ),
        Counts(np.zeros((n, 0)), np.zeros((n, L), np.int64), np.zeros(0), np.zeros(0)),
    )


@njit(**NUMBA_OPTS)
def _path_scores_kernel(state, trans, edge, o2, y, offsets, out):
    for s in range(offsets.shape[0] - 1):
        a, b = offsets[s], offsets[s + 1]
        if b <= a:
            out[s] = 0.0
            continue
        out[s] = score_any(state, trans, edge, o2, y, a, b)


def path_scores(state, trans, y, offsets, edge=None, o2=None) -> np.ndarray:
    """Each sequence's score under its labeling ``y`` (per-position transitions ``edge``
    when not None; a second-order model's triples with its lattice tuple ``o2``)."""
    out = np.zeros(len(offsets) - 1)
    _path_scores_kernel(state, trans, edge, o2, y, offsets, out)
    return out
