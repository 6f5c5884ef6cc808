"""PDLP's primal-dual hybrid gradient for the non-negative LP over working sets, the default
method of ``lp-extragradient`` (Applegate et al., *Practical large-scale linear programming
using primal-dual hybrid gradient*, NeurIPS 2021): Ruiz and Pock-Chambolle scaling
(:func:`scalings`, applied as per-coordinate steps so the iterations run on the original LP
and its certificate is unchanged), adaptive steps, a primal weight re-balanced at restarts,
restarts on the KKT error (cuPDLP's criteria) from the current or the averaged iterate. One
product with A and one with A^T per iteration, against extragradient's two of each. A round
is certified as the extragradient's is: feasible primal and dual bounds
(:mod:`tagger.learners.solvers.lp_operators`) within ``gap_tol``."""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from tagger._config import NUMBA_OPTS
from tagger.jit import njit
from tagger.learners.solvers.dual_polish import polish_dual
from tagger.learners.solvers.lp_operators import (
    apply_a,
    apply_at,
    dual_bound,
    lagrangian_value,
    primal_bound,
    stop_reached,
)


@njit(**NUMBA_OPTS)
def _kkt(A, C, w, xi, v, Au, Tw, Txi, lo, hi, dw2, dxi2, dv2):
    """The squared parts of PDLP's KKT error of (w, xi, v) in the scaled space (diagonal
    scalings sqrt(dw2), sqrt(dxi2), sqrt(dv2)), given Au = A (w, xi) and (Tw, Txi) = A^T v:
    (primal residual, dual residual, gap), to be weighted by the primal weight."""
    pres = 0.0
    pobj = w.sum() + C * xi.sum()
    for r in range(Au.shape[0]):
        s = A.rhs[r] - Au[r]
        if s > 0.0:
            pres += s * s / dv2[r]
    dobj = lagrangian_value(A, v, Tw, lo, hi)
    dres = 0.0
    for k in range(w.shape[0]):
        lam = 1.0 - Tw[k]
        if lam < 0.0 and not np.isfinite(hi[k]):
            dres += lam * lam * dw2[k]
    for i in range(xi.shape[0]):
        lam = C - Txi[i]
        if lam < 0.0:
            dres += lam * lam * dxi2[i]
    g = pobj - dobj
    return pres, dres, g * g


@njit(**NUMBA_OPTS)
def _target(stop, gap_tol, best_p):
    """The least dual bound that ends a solve whose best primal objective is ``best_p``: at
    its gap tolerance or by ``stop`` (as
    :func:`~tagger.learners.solvers.lp_operators.stop_reached` decides)."""
    target = min(best_p - gap_tol * max(1.0, abs(best_p)), stop[1])
    made = stop[2] - best_p
    if made >= stop[4] and stop[3] > 0.0:
        target = min(target, stop[2] - made / stop[3])
    return target


@njit(**NUMBA_OPTS)
def pdhg(A, C, point, box, scale, state, max_iter, check_every, gap_tol, restart, stop, polish):
    """PDLP's primal-dual hybrid gradient (Applegate et al., NeurIPS 2021) on ``point`` =
    (w, xi, v), in place, over the LP rows ``A`` (a :class:`LPRows`), in the metric of the
    diagonal scalings ``scale`` = (dw2, dxi2, dv2) (squares of Ruiz and Pock-Chambolle
    scalings: the iteration is PDHG on the rescaled LP, run in the original variables)::

        u' = proj(u - (eta / omega) D_u^2 (c - A^T v))
        v' = [v + eta omega D_v^2 (b - A (2u' - u))]_+

    ``state`` = (eta, omega, k): the step, the primal weight and the count of step trials
    (carried between solves). The step is PDLP's adaptive one: a trial is kept when eta is
    at most ||dz||^2_omega / (2 |dv . A du|), and the next trial step is
    min((1 - (k+1)^-0.3) that bound, (1 + (k+1)^-0.6) eta). Every ``check_every`` kept
    iterations the current point and the step-weighted average since the last restart are
    bounded (feasible primal and dual objectives, as :func:`extragradient`); the best primal w
    and dual v met so far certify the gap. With ``restart``, the iteration restarts from the
    candidate (current or average, the smaller KKT error) when its KKT error has fallen to
    0.2 of that at the last restart, or to 0.8 and stopped decreasing, or after 0.36 of all
    iterations so far (cuPDLP's criteria); the primal weight is then re-balanced from how far
    the primal and dual points moved. On return (w, v) hold the best points; returns
    (iterations, primal, dual, eta, omega, k), the iterations those of the polishes too.

    ``polish`` > 0: at a check where the dual bound would end the solve if the better
    candidate's dual point were feasible (its Lagrangian value ignoring its violations,
    :func:`~tagger.learners.solvers.lp_operators.lagrangian_value`) but the bound of that point as
    scaled does not, at most ``polish`` iterations of
    :func:`~tagger.learners.solvers.dual_polish.polish_dual` make it feasible; the next polish
    waits for twice the iterations this one took.

    ``stop`` = (below, above, center, share, least) ends the solve early, at a check, as
    :func:`~tagger.learners.solvers.lp_operators.stop_reached` says: once the best primal
    objective is at most ``below`` or the best dual bound at least ``above`` (a caller that
    only asks on which side of a value the LP's minimum lies, the trust region's open check,
    has its answer then), or once the best primal point decreases the objective from
    ``center`` by ``least`` and by ``share`` of the most the dual bound allows (a trust-region
    step, which needs a sufficient decrease, not the minimizer).
    """
    w, xi, v = point
    lo, hi = box
    dw2, dxi2, dv2 = scale
    eta, omega, k = state
    rhs = A.rhs
    K = w.shape[0]
    N = xi.shape[0]
    R = v.shape[0]
    Au = np.empty(R)
    Aun = np.empty(R)
    Tw = np.empty(K)
    Txi = np.empty(N)
    wn = np.empty(K)
    xin = np.empty(N)
    vn = np.empty(R)
    xi_tmp = np.empty(N)
    tmpR = np.empty(R)
    tmpK = np.empty(K)
    tmpN = np.empty(N)
    sw = np.zeros(K)
    sxi = np.zeros(N)
    sv = np.zeros(R)
    s_eta = 0.0
    best_w = w.copy()
    best_v = v.copy()
    best_p = primal_bound(A, C, w, xi_tmp, tmpR)
    best_d = dual_bound(A, C, v, tmpK, tmpN, lo, hi)
    apply_a(A, w, xi, Au)
    apply_at(A, v, Tw, Txi)
    p2, d2, g2 = _kkt(A, C, w, xi, v, Au, Tw, Txi, lo, hi, dw2, dxi2, dv2)
    kkt_last = math.sqrt(omega * omega * p2 + d2 / (omega * omega) + g2)
    kkt_prev = np.inf
    rw = w.copy()
    rxi = xi.copy()
    rv = v.copy()
    it = 0
    it_restart = 0
    spent = 0  # iterations of the polishes
    next_polish = 0
    polished = np.empty(R)
    while it + spent < max_iter:
        if (best_p - best_d) <= gap_tol * max(1.0, abs(best_p)):
            break
        if stop_reached(stop, best_p, best_d):
            break
        done = 0
        while done < check_every:
            tau = eta / omega
            sig = eta * omega
            for j in range(K):
                wn[j] = min(hi[j], max(lo[j], w[j] - tau * dw2[j] * (1.0 - Tw[j])))
            for i in range(N):
                xin[i] = max(0.0, xi[i] - tau * dxi2[i] * (C - Txi[i]))
            apply_a(A, wn, xin, Aun)
            dx = 0.0
            for j in range(K):
                d = wn[j] - w[j]
                dx += d * d / dw2[j]
            for i in range(N):
                d = xin[i] - xi[i]
                dx += d * d / dxi2[i]
            dy = 0.0
            inter = 0.0
            for r in range(R):
                vn[r] = max(0.0, v[r] + sig * dv2[r] * (rhs[r] - 2.0 * Aun[r] + Au[r]))
                d = vn[r] - v[r]
                dy += d * d / dv2[r]
                inter += d * (Aun[r] - Au[r])
            k += 1
            bound = (omega * dx + dy / omega) / (2.0 * abs(inter)) if inter != 0.0 else np.inf
            nxt = min((1.0 - (k + 1.0) ** -0.3) * bound, (1.0 + (k + 1.0) ** -0.6) * eta)
            if eta <= bound:
                w[:] = wn
                xi[:] = xin
                v[:] = vn
                Au[:] = Aun
                apply_at(A, v, Tw, Txi)
                sw += eta * w
                sxi += eta * xi
                sv += eta * v
                s_eta += eta
                done += 1
                it += 1
            eta = nxt
        pc = primal_bound(A, C, w, xi_tmp, tmpR)
        dc = dual_bound(A, C, v, tmpK, tmpN, lo, hi)
        aw = sw / s_eta
        axi = sxi / s_eta
        av = sv / s_eta
        pa = primal_bound(A, C, aw, xi_tmp, tmpR)
        da = dual_bound(A, C, av, tmpK, tmpN, lo, hi)
        if pc < best_p:
            best_p = pc
            best_w[:] = w
        if pa < best_p:
            best_p = pa
            best_w[:] = aw
        if dc > best_d:
            best_d = dc
            best_v[:] = v
        if da > best_d:
            best_d = da
            best_v[:] = av
        if polish > 0 and it >= next_polish:
            target = _target(stop, gap_tol, best_p)
            # Tw is H^T v of the iterate, and tmpK H^T av from the bound of av just above
            rc = lagrangian_value(A, v, Tw, lo, hi)
            ra = lagrangian_value(A, av, tmpK, lo, hi)
            if best_d < target <= max(rc, ra):
                budget = min(polish, max_iter - it - spent)
                start = v if rc >= ra else av
                bound, its = polish_dual(
                    A, C, start, box, scale, budget, check_every, target, polished
                )
                spent += its
                next_polish = it + 2 * max(its, check_every)
                if bound > best_d:
                    best_d = bound
                    best_v[:] = polished
        if restart:
            w2 = omega * omega
            p2, d2, g2 = _kkt(A, C, w, xi, v, Au, Tw, Txi, lo, hi, dw2, dxi2, dv2)
            kc = math.sqrt(w2 * p2 + d2 / w2 + g2)
            apply_a(A, aw, axi, tmpR)
            apply_at(A, av, tmpK, tmpN)
            p2, d2, g2 = _kkt(A, C, aw, axi, av, tmpR, tmpK, tmpN, lo, hi, dw2, dxi2, dv2)
            ka = math.sqrt(w2 * p2 + d2 / w2 + g2)
            to_avg = ka < kc
            kcand = min(ka, kc)
            if (
                kcand <= 0.2 * kkt_last
                or (kcand <= 0.8 * kkt_last and kcand > kkt_prev)
                or it - it_restart >= 0.36 * it
            ):
                if to_avg:
                    w[:] = aw
                    xi[:] = axi
                    v[:] = av
                    Au[:] = tmpR
                    Tw[:] = tmpK
                    Txi[:] = tmpN
                mx = 0.0
                for j in range(K):
                    mx += (w[j] - rw[j]) ** 2 / dw2[j]
                for i in range(N):
                    mx += (xi[i] - rxi[i]) ** 2 / dxi2[i]
                my = 0.0
                for r in range(R):
                    my += (v[r] - rv[r]) ** 2 / dv2[r]
                mx = math.sqrt(mx)
                my = math.sqrt(my)
                if mx > 1e-10 and my > 1e-10:
                    omega = math.exp(0.5 * math.log(my / mx) + 0.5 * math.log(omega))
                w2 = omega * omega
                p2, d2, g2 = _kkt(A, C, w, xi, v, Au, Tw, Txi, lo, hi, dw2, dxi2, dv2)
                kkt_last = math.sqrt(w2 * p2 + d2 / w2 + g2)
                kkt_prev = np.inf
                rw[:] = w
                rxi[:] = xi
                rv[:] = v
                sw[:] = 0.0
                sxi[:] = 0.0
                sv[:] = 0.0
                s_eta = 0.0
                it_restart = it
            else:
                kkt_prev = kcand
    w[:] = best_w
    v[:] = best_v
    return it + spent, best_p, best_d, eta, omega, k


def scalings(H: sp.csr_matrix, rsent: np.ndarray, N: int, ruiz: int):
    """Diagonal scalings of A = [H M] as PDLP preconditions: ``ruiz`` rounds of Ruiz
    equilibration (rows and columns divided by the square root of their largest entry), then
    Pock and Chambolle's (alpha = 1: by the square root of their sum of absolute values, so
    that the scaled matrix has norm at most 1). Returns the squares (dw2, dxi2, dv2) of the
    column scalings of w and xi and of the row scaling."""
    R, K = H.shape
    # copies: scipy may sum duplicates or sort indices in place, and the kernels hold H's arrays
    absH = sp.csr_matrix((np.abs(H.data), H.indices.copy(), H.indptr.copy()), shape=H.shape)
    Mw = sp.csr_matrix((np.ones(R), rsent, np.arange(R + 1)), shape=(R, N))
    B = sp.hstack([absH, Mw]).tocsr()
    dr = np.ones(R)
    dc = np.ones(K + N)
    for _ in range(ruiz):
        S = sp.diags(dr) @ B @ sp.diags(dc)
        rmax = S.max(axis=1).toarray().ravel()
        cmax = S.max(axis=0).toarray().ravel()
        dr /= np.sqrt(np.where(rmax > 0, rmax, 1.0))
        dc /= np.sqrt(np.where(cmax > 0, cmax, 1.0))
    S = (sp.diags(dr) @ B @ sp.diags(dc)).tocsr()
    rsum = np.asarray(S.sum(axis=1)).ravel()
    csum = np.asarray(S.sum(axis=0)).ravel()
    dr /= np.sqrt(np.where(rsum > 0, rsum, 1.0))
    dc /= np.sqrt(np.where(csum > 0, csum, 1.0))
    return dc[:K] ** 2, dc[K:] ** 2, dr**2
