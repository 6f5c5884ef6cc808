"""Numba kernels over compiled constraints: the counts phi of each sequence, the corpus ratios'
parts, the penalties of their excess, and the change of all of them when one label switches.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tagger._config import NUMBA_OPTS, NUMBA_PARALLEL_OPTS
from tagger.constraints.rules import (
    CHANGES,
    CONTAINS,
    COUNT_TOKENS,
    FRACTION_LABEL,
    ORDER,
    SEGMENTS,
    UNARY,
)
from tagger.jit import njit, prange


class InstanceRules(NamedTuple):
    """The instance rules as the kernels read them, one entry per rule: its kind, label mask,
    second label mask (an order rule's ``after`` labels), token-indicator row, bounds on the
    count phi, penalty weight and shape."""

    kind: np.ndarray  # int32[C]
    mask: np.ndarray  # bool[C, L]
    other: np.ndarray  # bool[C, L]
    row: np.ndarray  # int32[C]
    lo: np.ndarray  # float64[C]
    hi: np.ndarray  # float64[C]
    rho: np.ndarray  # float64[C]
    squared: np.ndarray  # bool[C]


class CorpusRules(NamedTuple):
    """The corpus rules as the kernels read them: kind, label mask, indicator row, target
    ratio, tolerance, penalty weight and shape."""

    kind: np.ndarray
    mask: np.ndarray
    row: np.ndarray
    target: np.ndarray
    tol: np.ndarray
    rho: np.ndarray
    squared: np.ndarray


class PenaltyRules(NamedTuple):
    """Everything the switching kernels read about the rules and the corpus they count on:
    the token indicators (rows of flags), the sequences' offsets and both kinds of rules."""

    ind: np.ndarray  # uint8[n_indicators, N]
    offsets: np.ndarray  # int64[n_sequences + 1]
    instance: InstanceRules
    corpus: CorpusRules


# ---------------------------------------------------------------------------------------------
# numba kernels: counts


@njit(**NUMBA_OPTS)
def contains_phi(y, flags, labels):
    """Segments of ``labels`` (a label mask) in the labeling ``y`` without a flagged token
    (``flags``, aligned with ``y``): a ``contains`` rule's count."""
    v = 0.0
    hit = False
    T = y.shape[0]
    for t in range(T):
        if t > 0 and y[t] != y[t - 1]:
            if labels[y[t - 1]] and not hit:
                v += 1.0
            hit = False
        if flags[t]:
            hit = True
    if T > 0 and labels[y[T - 1]] and not hit:
        v += 1.0
    return v


@njit(**NUMBA_OPTS)
def order_phi(y, before, after):
    """Segments of the ``before`` labels that start after a token of an ``after`` label: an
    ``order`` rule's count."""
    v = 0.0
    seen_after = False
    for t in range(y.shape[0]):
        if (t == 0 or y[t] != y[t - 1]) and before[y[t]] and seen_after:
            v += 1.0
        if after[y[t]]:
            seen_after = True
    return v


@njit(**NUMBA_OPTS)
def segment_phi(y, ind, a, b, c, kind, mask, other, row):
    """phi of rule c, a ``contains`` or ``order`` rule, on tokens a..b-1."""
    if kind[c] == CONTAINS:
        return contains_phi(y[a:b], ind[row[c], a:b], mask[c])
    return order_phi(y[a:b], mask[c], other[c])


@njit(**NUMBA_OPTS)
def sequence_phi(y, ind, a, b, kind, mask, other, row, out):
    """phi_c of the sequence on tokens a..b-1 (labels y[a:b]) for every instance constraint."""
    C = kind.shape[0]
    L = mask.shape[1]
    segs = np.zeros(L, np.int64)
    for t in range(a, b):
        if t == a or y[t] != y[t - 1]:
            segs[y[t]] += 1
    for c in range(C):
        k = kind[c]
        v = 0.0
        if k == UNARY:
            r = row[c]
            for t in range(a, b):
                if ind[r, t] and mask[c, y[t]]:
                    v += 1.0
        elif k == SEGMENTS:
            for lab in range(L):
                if mask[c, lab] and segs[lab] > 1:
                    v += segs[lab] - 1
        elif k == CHANGES:
            r = row[c]
            for t in range(a + 1, b):
                if y[t] != y[t - 1] and ind[r, t]:
                    v += 1.0
        elif k == COUNT_TOKENS:
            for t in range(a, b):
                if mask[c, y[t]]:
                    v += 1.0
        elif k == CONTAINS or k == ORDER:
            v = segment_phi(y, ind, a, b, c, kind, mask, other, row)
        else:  # COUNT_SEGMENTS
            for lab in range(L):
                if mask[c, lab]:
                    v += segs[lab]
        out[c] = v


@njit(**NUMBA_PARALLEL_OPTS)
def all_phi(y, ind, offsets, kind, mask, other, row, out):
    for s in prange(offsets.shape[0] - 1):
        sequence_phi(y, ind, offsets[s], offsets[s + 1], kind, mask, other, row, out[s])


@njit(**NUMBA_OPTS)
def sequence_corpus(y, ind, a, b, ckind, cmask, crow, num, den):
    """num[k], den[k]: one sequence's share of every corpus constraint's totals."""
    for k in range(ckind.shape[0]):
        n = 0.0
        d = 0.0
        if ckind[k] == FRACTION_LABEL:
            for t in range(a, b):
                if cmask[k, y[t]]:
                    n += 1.0
            d = b - a
        else:
            r = crow[k]
            for t in range(a + 1, b):
                if y[t] != y[t - 1]:
                    d += 1.0
                    if ind[r, t]:
                        n += 1.0
        num[k] = n
        den[k] = d


@njit(**NUMBA_OPTS)
def corpus_parts(y, ind, offsets, ckind, cmask, crow, num, den):
    """num[k], den[k]: the corpus totals of every corpus constraint's ratio."""
    for k in range(ckind.shape[0]):
        num[k] = 0.0
        den[k] = 0.0
    for s in range(offsets.shape[0] - 1):
        a, b = offsets[s], offsets[s + 1]
        for k in range(ckind.shape[0]):
            if ckind[k] == FRACTION_LABEL:
                for t in range(a, b):
                    if cmask[k, y[t]]:
                        num[k] += 1.0
                den[k] += b - a
            else:
                r = crow[k]
                for t in range(a + 1, b):
                    if y[t] != y[t - 1]:
                        den[k] += 1.0
                        if ind[r, t]:
                            num[k] += 1.0


@njit(**NUMBA_OPTS)
def _excess(phi, lo, hi):
    d = 0.0
    if phi > hi:
        d += phi - hi
    if phi < lo:
        d += lo - phi
    return d


@njit(**NUMBA_OPTS)
def _shaped(d, squared):
    return d * d if squared else d


@njit(**NUMBA_OPTS)
def instance_penalty(phi, lo, hi, rho, squared):
    p = 0.0
    for c in range(phi.shape[0]):
        p += rho[c] * _shaped(_excess(phi[c], lo[c], hi[c]), squared[c])
    return p


@njit(**NUMBA_OPTS)
def corpus_penalty(num, den, target, tol, crho, csquared, n_seq):
    p = 0.0
    for k in range(num.shape[0]):
        r = num[k] / den[k] if den[k] > 0 else target[k]
        d = abs(r - target[k]) - tol[k]
        if d > 0:
            p += crho[k] * n_seq * _shaped(d, csquared[k])
    return p


# ---------------------------------------------------------------------------------------------
# numba kernels: the change of everything when y[t] switches to a new label


@njit(**NUMBA_OPTS)
def switch_phi(y, ind, a, b, t, new, kind, mask, other, row, segs, phi, out):
    """New phi of the sequence a..b-1 if y[t] became ``new`` (``segs``: its segments per label,
    ``phi``: its current phi). O(C) plus O(1) per constraint, O(b - a) for a ``contains`` or
    ``order`` rule (counted again with y[t] switched for the moment)."""
    run_phi(y, ind, a, b, t, t + 1, new, kind, mask, other, row, segs, phi, out)


@njit(**NUMBA_OPTS)
def run_phi(y, ind, a, b, t0, t1, new, kind, mask, other, row, segs, phi, out):
    """New phi of the sequence a..b-1 if the tokens t0..t1-1, all of one label, took label
    ``new`` (``segs``: its segments per label, ``phi``: its current phi): the counts change
    only inside the run and at its two ends. O(C (t1 - t0)), O(b - a) for a ``contains`` or
    ``order`` rule (counted again with the run switched for the moment). Every count is a
    whole number, so the result equals :func:`sequence_phi` of the new labeling exactly."""
    old = y[t0]
    # segment-start changes at t0 and t1: (label, +-1) for up to three entries
    dl = np.empty(4, np.int64)
    dv = np.empty(4, np.int64)
    n = 0
    s_old = t0 == a or y[t0 - 1] != old
    s_new = t0 == a or y[t0 - 1] != new
    if s_old:
        dl[n] = old
        dv[n] = -1
        n += 1
    if s_new:
        dl[n] = new
        dv[n] = 1
        n += 1
    if t1 < b:
        nx = y[t1]
        before = nx != old
        after = nx != new
        if before != after:
            dl[n] = nx
            dv[n] = 1 if after else -1
            n += 1
    for c in range(kind.shape[0]):
        k = kind[c]
        v = phi[c]
        if k == UNARY:
            r = row[c]
            flagged = 0
            for t in range(t0, t1):
                if ind[r, t]:
                    flagged += 1
            if flagged:
                v += flagged * ((1.0 if mask[c, new] else 0.0) - (1.0 if mask[c, old] else 0.0))
        elif k == SEGMENTS:
            # labels touched: apply all deltas to the touched labels' excess
            for i in range(n):
                lab = dl[i]
                if not mask[c, lab]:
                    continue
                # was this label already handled by an earlier entry?
                seen = False
                for j in range(i):
                    if dl[j] == lab:
                        seen = True
                if seen:
                    continue
                tot = 0
                for j in range(n):
                    if dl[j] == lab:
                        tot += dv[j]
                before_e = segs[lab] - 1 if segs[lab] > 1 else 0
                after_s = segs[lab] + tot
                after_e = after_s - 1 if after_s > 1 else 0
                v += after_e - before_e
        elif k == CHANGES:
            r = row[c]
            if t0 > a and ind[r, t0]:
                v += (1.0 if y[t0 - 1] != new else 0.0) - (1.0 if y[t0 - 1] != old else 0.0)
            if t1 < b and ind[r, t1]:
                v += (1.0 if y[t1] != new else 0.0) - (1.0 if y[t1] != old else 0.0)
        elif k == COUNT_TOKENS:
            v += (t1 - t0) * ((1.0 if mask[c, new] else 0.0) - (1.0 if mask[c, old] else 0.0))
        elif k == CONTAINS or k == ORDER:
            if mask[c, old] or mask[c, new] or other[c, old] or other[c, new]:
                for t in range(t0, t1):
                    y[t] = new
                v = segment_phi(y, ind, a, b, c, kind, mask, other, row)
                for t in range(t0, t1):
                    y[t] = old
        else:
            for i in range(n):
                if mask[c, dl[i]]:
                    v += dv[i]
        out[c] = v


@njit(**NUMBA_OPTS)
def switch_corpus(y, ind, a, b, t, new, ckind, cmask, crow, dnum, dden):
    """Change of every corpus total if y[t] became ``new``."""
    run_corpus(y, ind, a, b, t, t + 1, new, ckind, cmask, crow, dnum, dden)


@njit(**NUMBA_OPTS)
def run_corpus(y, ind, a, b, t0, t1, new, ckind, cmask, crow, dnum, dden):
    """Change of every corpus total if the tokens t0..t1-1, all of one label, took label
    ``new`` (label changes move only at the run's two ends)."""
    old = y[t0]
    for k in range(ckind.shape[0]):
        dn = 0.0
        dd = 0.0
        if ckind[k] == FRACTION_LABEL:
            dn = (t1 - t0) * ((1.0 if cmask[k, new] else 0.0) - (1.0 if cmask[k, old] else 0.0))
        else:
            r = crow[k]
            if t0 > a:
                ch_o = 1.0 if y[t0 - 1] != old else 0.0
                ch_n = 1.0 if y[t0 - 1] != new else 0.0
                dd += ch_n - ch_o
                if ind[r, t0]:
                    dn += ch_n - ch_o
            if t1 < b:
                ch_o = 1.0 if y[t1] != old else 0.0
                ch_n = 1.0 if y[t1] != new else 0.0
                dd += ch_n - ch_o
                if ind[r, t1]:
                    dn += ch_n - ch_o
        dnum[k] = dn
        dden[k] = dd


@njit(**NUMBA_OPTS)
def segments_of(y, a, b, segs):
    for lab in range(segs.shape[0]):
        segs[lab] = 0
    for t in range(a, b):
        if t == a or y[t] != y[t - 1]:
            segs[y[t]] += 1


@njit(**NUMBA_PARALLEL_OPTS)
def all_segments(y, offsets, segs):
    for s in prange(offsets.shape[0] - 1):
        segments_of(y, offsets[s], offsets[s + 1], segs[s])
