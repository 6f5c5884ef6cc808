"""The LP over working sets as the first-order methods take it (``lp-extragradient``):
the rows ``A = [H M]`` in CSR, products with A and A^T, the spectral norm of a diagonally
scaled A, and the feasible primal and dual bounds whose relative gap certifies a round
(:mod:`tagger.learners.solvers.extragradient`, :mod:`tagger.learners.solvers.pdhg`)."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from tagger._config import NUMBA_OPTS
from tagger.jit import njit


class LPRows(NamedTuple):
    """The LP's rows ``A = [H M]`` as numba kernels take them: H in CSR and transposed, the
    sentence of each row (M picks that sentence's slack) and the right-hand side."""

    Hp: np.ndarray
    Hc: np.ndarray
    Hv: np.ndarray
    Tp: np.ndarray
    Tc: np.ndarray
    Tv: np.ndarray
    rsent: np.ndarray
    rhs: np.ndarray


#: ``stop`` that never ends a solve early (:func:`stop_reached`)
NEVER = (-math.inf, math.inf, -math.inf, 1.0, math.inf)


@njit(**NUMBA_OPTS)
def stop_reached(stop, best_p, best_d):
    """Whether a first-order solve may end before its gap tolerance, given its best feasible
    primal objective ``best_p`` and dual bound ``best_d``. ``stop`` = (below, above, center,
    share, least): the minimum is known to be below ``below`` (best_p <= below) or above
    ``above`` (best_d >= above), or a point decreases the objective from ``center`` by at
    least ``least`` and by at least ``share`` of the most any point can (center - best_p >=
    share (center - best_d)): a trust-region step needs no more (:data:`NEVER`: none)."""
    if best_p <= stop[0] or best_d >= stop[1]:
        return True
    made = stop[2] - best_p
    return made >= stop[4] and made >= stop[3] * (stop[2] - best_d)


@njit(**NUMBA_OPTS)
def csr_matvec(ptr, idx, val, x, out):
    for r in range(ptr.shape[0] - 1):
        acc = 0.0
        for k in range(ptr[r], ptr[r + 1]):
            acc += val[k] * x[idx[k]]
        out[r] = acc


@njit(**NUMBA_OPTS)
def apply_a(A, w, xi, out):
    """out = H w + M xi (M xi picks the slack of each row's sentence)."""
    csr_matvec(A.Hp, A.Hc, A.Hv, w, out)
    for r in range(out.shape[0]):
        out[r] += xi[A.rsent[r]]


@njit(**NUMBA_OPTS)
def apply_at(A, v, out_w, out_xi):
    """(out_w, out_xi) = (H^T v, M^T v)."""
    csr_matvec(A.Tp, A.Tc, A.Tv, v, out_w)
    out_xi[:] = 0.0
    for r in range(v.shape[0]):
        out_xi[A.rsent[r]] += v[r]


@njit(**NUMBA_OPTS)
def spectral_norm(A, tw, txi, sv, iters):
    """||S^1/2 [H M] T^1/2||_2 (diagonal scalings sv, (tw, txi)) by power iteration on
    B^T B from a fixed start (deterministic)."""
    K = tw.shape[0]
    N = txi.shape[0]
    R = A.rsent.shape[0]
    w = np.ones(K)
    xi = np.ones(N)
    Au = np.empty(R)
    norm = 0.0
    for _ in range(iters):
        s = math.sqrt((w * w).sum() + (xi * xi).sum())
        if s == 0.0:
            return 0.0
        w *= np.sqrt(tw) / s
        xi *= np.sqrt(txi) / s
        apply_a(A, w, xi, Au)
        Au *= np.sqrt(sv)
        norm = math.sqrt((Au * Au).sum())
        Au *= np.sqrt(sv)
        apply_at(A, Au, w, xi)
        w *= np.sqrt(tw)
        xi *= np.sqrt(txi)
    return norm


@njit(**NUMBA_OPTS)
def primal_bound(A, C, w, xi_tmp, Aw):
    """LP objective at w with the smallest feasible slacks: an upper bound on the optimum."""
    csr_matvec(A.Hp, A.Hc, A.Hv, w, Aw)
    xi_tmp[:] = 0.0
    for r in range(A.rsent.shape[0]):
        slack = A.rhs[r] - Aw[r]
        if slack > xi_tmp[A.rsent[r]]:
            xi_tmp[A.rsent[r]] = slack
    return w.sum() + C * xi_tmp.sum()


@njit(**NUMBA_OPTS)
def dual_bound(A, C, v, Tw, Txi, lo, hi):
    """Lagrangian dual value of v (a lower bound on the optimum of the LP with lo <= w <= hi):
    v scaled into M^T v <= C, and into H^T v <= 1 for the weights with no upper bound; each
    bounded weight adds min(lo (1 - H^T v), hi (1 - H^T v))."""
    apply_at(A, v, Tw, Txi)
    scale = 1.0
    for k in range(Tw.shape[0]):
        if Tw[k] > scale and not np.isfinite(hi[k]):
            scale = Tw[k]
    for i in range(Txi.shape[0]):
        if Txi[i] / C > scale:
            scale = Txi[i] / C
    value = (A.rhs * v).sum() / scale
    for k in range(Tw.shape[0]):
        r = 1.0 - Tw[k] / scale
        value += lo[k] * r if r >= 0.0 or not np.isfinite(hi[k]) else hi[k] * r
    return value


@njit(**NUMBA_OPTS)
def lagrangian_value(A, v, Tw, lo, hi):
    """b.v plus each weight's term at its reduced cost 1 - Tw (given Tw = H^T v), the
    directions in which the Lagrangian is unbounded (a weight with no upper bound and a
    negative reduced cost, a slack priced above C) left out: the dual objective of PDLP's
    KKT error, and what a dual point as good as v but feasible would certify (not a bound:
    whether making v feasible could end a solve)."""
    value = 0.0
    for r in range(v.shape[0]):
        value += A.rhs[r] * v[r]
    for k in range(Tw.shape[0]):
        r = 1.0 - Tw[k]
        if r >= 0.0:
            value += lo[k] * r
        elif np.isfinite(hi[k]):
            value += hi[k] * r
    return value
