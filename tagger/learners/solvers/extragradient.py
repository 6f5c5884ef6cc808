"""First-order methods for the non-negative LP over working sets (the ``lp-extragradient``
back end): numba iterations over the CSR rows of ``A = [H M]``, certified by a duality gap.

Two methods (the learner's ``method``): PDLP's primal-dual hybrid gradient
(:mod:`tagger.learners.solvers.pdhg`), the default, one product with A and one with A^T per
iteration; and :func:`extragradient` here, the paper's method, two of each. On the first LP
of 200 CoNLL-2000 POS sentences (4,266 rows) PDHG reached a 1e-5 relative gap in 13,800
iterations where extragradient was at 2.4e-5 after its 20,000. Both are certified the same
way (below).

Korpelevich's method as Wang, Shawe-Taylor & Szedmak apply it, on the saddle point
``min_{u >= 0} max_{v >= 0} c.u - v.(A u - b)``::

    u_bar = [u - a (c - A^T v)]_+,      v_bar = [v + a (b - A u)]_+
    u'    = [u - a (c - A^T v_bar)]_+,  v'    = [v + a (b - A u_bar)]_+

with the step ``a = step_scale / ||A||_2`` (spectral norm by power iteration, recomputed after
each round of new rows), warm-started from the previous round (new columns and new duals
start at 0). Every ``check_every`` iterations the primal point is made feasible (xi from the
rows' slacks) and the dual point scaled into its feasible region (``H^T v <= 1``,
``M^T v <= C``); the two objectives bound the LP optimum from above and below, and a round
ends when their relative gap is below ``gap_tol``.

Rows that stopped binding leave the LP as in :mod:`~tagger.learners.solvers.highs_solver`
(``purge_after`` solves in a row with a zero dual and a positive slack; back when violated),
so that an iteration's products run over the rows that still bind.
"""

from __future__ import annotations

import math
import time

import numpy as np
import scipy.sparse as sp

from tagger._config import NUMBA_OPTS
from tagger.jit import njit
from tagger.learners.solvers.lp_operators import (
    NEVER,
    LPRows,
    apply_a,
    apply_at,
    dual_bound,
    primal_bound,
    spectral_norm,
    stop_reached,
)
from tagger.learners.solvers.pdhg import pdhg, scalings
from tagger.learners.solvers.working_sets import WorkingSets

#: the rounds that decide convergence stop at a relative gap of at most this share of the
#: learner's ``optimality_gap`` (ExtragradientSolver.tight_tol)
TIGHT_SHARE = 0.1


@njit(**NUMBA_OPTS)
def extragradient(A, C, point, box, steps, omega, max_iter, check_every, gap_tol, restart, stop):
    """Extragradient iterations on ``point`` = (w, xi, v), in place, with per-coordinate steps
    ``steps`` = (aw, axi, av) over the LP rows ``A`` (a :class:`LPRows`).

    Every ``check_every`` iterations the current point and the average of the predictor points
    since the last restart are bounded (feasible primal and dual objectives); the best primal
    w and dual v met so far certify the gap. With ``restart``, the iteration restarts from the
    better of the two points whenever its gap has fallen to a fifth of the gap at the last
    restart (the adaptive restarts of PDLP; they make primal-dual methods converge linearly
    on LPs). The primal steps are divided and the dual steps multiplied by the primal weight
    ``omega`` (their product, hence stability, unchanged), re-balanced at each restart from how
    far the primal and dual points moved, as PDLP does. On return (w, v) hold the best points;
    returns (iterations, primal, dual, omega). ``box`` = (lo, hi) bounds each weight (a trust
    region; lo = 0, hi = inf is the plain non-negative LP). ``stop`` = (below, above, center,
    share, least) ends it early as :func:`~tagger.learners.solvers.pdhg.pdhg`'s does.
    """
    w, xi, v = point
    lo, hi = box
    aw0, axi0, av0 = steps
    rhs = A.rhs
    K = w.shape[0]
    N = xi.shape[0]
    R = v.shape[0]
    Aw = np.empty(R)
    Tw = np.empty(K)
    Txi = np.empty(N)
    wb = np.empty(K)
    xib = np.empty(N)
    vb = np.empty(R)
    xi_tmp = np.empty(N)
    sw = np.zeros(K)
    sxi = np.zeros(N)
    sv = np.zeros(R)
    n_avg = 0
    best_w = w.copy()
    best_v = v.copy()
    best_p = primal_bound(A, C, w, xi_tmp, Aw)
    best_d = dual_bound(A, C, v, Tw, Txi, lo, hi)
    gap_restart = best_p - best_d
    aw = aw0 / omega
    axi = axi0 / omega
    av = av0 * omega
    rw = w.copy()
    rxi = xi.copy()
    rv = v.copy()
    it = 0
    while it < max_iter:
        if (best_p - best_d) <= gap_tol * max(1.0, abs(best_p)):
            break
        if stop_reached(stop, best_p, best_d):
            break
        for _ in range(check_every):
            # predictor at (w, xi, v)
            apply_at(A, v, Tw, Txi)
            for k in range(K):
                wb[k] = min(hi[k], max(lo[k], w[k] - aw[k] * (1.0 - Tw[k])))
            for i in range(N):
                xib[i] = max(0.0, xi[i] - axi[i] * (C - Txi[i]))
            apply_a(A, w, xi, Aw)
            for r in range(R):
                vb[r] = max(0.0, v[r] + av[r] * (rhs[r] - Aw[r]))
            # corrector with the gradients at the predicted point
            apply_at(A, vb, Tw, Txi)
            for k in range(K):
                w[k] = min(hi[k], max(lo[k], w[k] - aw[k] * (1.0 - Tw[k])))
            for i in range(N):
                xi[i] = max(0.0, xi[i] - axi[i] * (C - Txi[i]))
            apply_a(A, wb, xib, Aw)
            for r in range(R):
                v[r] = max(0.0, v[r] + av[r] * (rhs[r] - Aw[r]))
            sw += wb
            sxi += xib
            sv += vb
            n_avg += 1
            it += 1
        pc = primal_bound(A, C, w, xi_tmp, Aw)
        dc = dual_bound(A, C, v, Tw, Txi, lo, hi)
        pa = primal_bound(A, C, sw / n_avg, xi_tmp, Aw)
        da = dual_bound(A, C, sv / n_avg, Tw, Txi, lo, hi)
        if pc < best_p:
            best_p = pc
            best_w[:] = w
        if pa < best_p:
            best_p = pa
            best_w[:] = sw / n_avg
        if dc > best_d:
            best_d = dc
            best_v[:] = v
        if da > best_d:
            best_d = da
            best_v[:] = sv / n_avg
        if restart:
            gc = pc - dc
            ga = pa - da
            if min(gc, ga) <= 0.2 * gap_restart:
                if ga < gc:
                    w[:] = sw / n_avg
                    xi[:] = sxi / n_avg
                    v[:] = sv / n_avg
                gap_restart = min(gc, ga)
                dx = math.sqrt(((w - rw) ** 2).sum() + ((xi - rxi) ** 2).sum())
                dy = math.sqrt(((v - rv) ** 2).sum())
                if dx > 1e-10 and dy > 1e-10:
                    omega = math.exp(0.5 * math.log(dy / dx) + 0.5 * math.log(omega))
                    aw = aw0 / omega
                    axi = axi0 / omega
                    av = av0 * omega
                rw[:] = w
                rxi[:] = xi
                rv[:] = v
                sw[:] = 0.0
                sxi[:] = 0.0
                sv[:] = 0.0
                n_avg = 0
    w[:] = best_w
    v[:] = best_v
    return it, best_p, best_d, omega


class ExtragradientSolver:
    """The non-negative LP over the working sets, solved by extragradient (warm-started)."""

    def __init__(self, ws: WorkingSets, C: float, settings: dict):
        self.ws, self.C, self.settings = ws, C, settings
        self.w = np.zeros(0)
        self.xi = np.zeros(ws.problem.X.n_sentences)
        self.v = np.zeros(0)
        self.last = {}
        # rounds far from the end only steer the next separation: solve them loosely
        self.loose = settings["early_gap_tol"] > self.tight_tol()
        #: the dual bound of the last solve on its LP without the box (a lower bound on the
        #: minimum of the model over the working sets)
        self.lower_bound = -np.inf
        self.omega = None
        self.eta = None
        self.trials = 0
        self.box = None
        self.purge_after = int(settings.get("purge_after", 0))
        #: per working-set row: in the LP, and solves since its dual was last non-zero or its
        #: slack zero (rows that left keep their dual at 0)
        self.live = np.zeros(0, dtype=bool)
        self.idle = np.zeros(0, dtype=np.int64)
        #: the time (``time.perf_counter``) by which every solve must end, the learner's
        #: ``max_seconds`` (None: none), and the seconds per iteration and unit of work (an
        #: entry of A, a row or a column) of the last solve, which turn the time left into a
        #: cap on the iterations (:meth:`_cap`)
        self.deadline: float | None = None
        self.rate: float | None = None

    def _cap(self, work: int) -> int:
        """The iterations the next solve may run: ``max_iter``, or fewer where the rate of
        the last solve says they would not end before ``deadline`` (at least one gap check:
        a round that starts at the deadline ends at its first). The iterations run in numba,
        which reads no clock; an iteration's cost is in proportion to ``work``, the LP's
        entries, rows and columns (every iteration also sweeps each row and column; counted
        by entries alone, an iteration costs more per entry the more rows have left the LP,
        and the cap after a purge let a round run past the deadline)."""
        st = self.settings
        cap = st["max_iter"]
        if self.deadline is not None and self.rate is not None:
            left = self.deadline - time.perf_counter()
            cap = min(cap, max(st["check_every"], int(left / (self.rate * max(work, 1)))))
        return cap

    def _grow(self) -> None:
        """New working-set rows enter the LP."""
        new = self.ws.n_rows - len(self.live)
        if new > 0:
            self.live = np.concatenate([self.live, np.ones(new, dtype=bool)])
            self.idle = np.concatenate([self.idle, np.zeros(new, dtype=np.int64)])

    def rows_in_lp(self) -> np.ndarray:
        """Per working-set row, whether it is in the LP."""
        self._grow()
        return self.live.copy()

    def revive(self, w: np.ndarray, xi: np.ndarray, eps: float) -> int:
        """Rows that left the LP and that ``w`` violates by more than ``eps`` beyond their
        sentence's slack ``xi`` come back. Returns how many."""
        self._grow()
        out = np.flatnonzero(~self.live)
        if not len(out):
            return 0
        back = self.ws.violated_beyond(out, w, np.ones(len(out)), xi, eps)
        self.live[back] = True
        self.idle[back] = 0
        return len(back)

    def set_box(self, lower: np.ndarray, upper: np.ndarray) -> None:
        """Bounds on the weight columns (one per ``ws.coords`` entry) for the next solve: a
        trust region. Columns added later get [0, inf)."""
        self.box = (np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64))

    def set_C(self, C: float) -> None:
        """A new weight of the slacks (the next point of a path over C); the rows, the
        iterates and the dual stay as the warm start of the next solve."""
        self.C = C
        self.omega = None
        self.eta = None
        self.loose = self.settings["early_gap_tol"] > self.tight_tol()

    def tight_tol(self) -> float:
        """The relative gap of the rounds that decide convergence: ``gap_tol``, or a tenth of
        the learner's ``optimality_gap`` where that is looser: a round solved beyond it cannot
        change whether the center is within that gap of the optimum (CHANGELOG.md has what it
        changed in time: on 1,000 GUM sentences, nothing)."""
        st = self.settings
        return max(st["gap_tol"], TIGHT_SHARE * st.get("optimality_gap", 0.0))

    def _solve_pdhg(self, A, H, w, v, box, tol, stop, max_iter):
        st = self.settings
        K, R, N = len(w), len(v), len(self.xi)
        if st["precondition"]:
            scale = scalings(H, A.rsent, N, st["ruiz"])
        else:
            scale = np.ones(K), np.ones(N), np.ones(R)
        if self.omega is None:
            # PDLP's first primal weight: ||c|| / ||b|| of the scaled LP
            c2 = (scale[0]).sum() + self.C**2 * scale[1].sum()
            self.omega = math.sqrt(c2 / max(scale[2].sum(), 1e-300)) if st["restart"] else 1.0
        if self.eta is None:
            norm = spectral_norm(A, scale[0], scale[1], scale[2], 60)
            self.eta = st["step_scale"] / (1.02 * norm)
        its, primal, dual, self.eta, self.omega, self.trials = pdhg(
            A,
            self.C,
            (w, self.xi, v),
            box,
            scale,
            (self.eta, self.omega, self.trials),
            max_iter,
            st["check_every"],
            tol,
            st["restart"],
            stop,
            st.get("polish_iter", 0),
        )
        return its, primal, dual

    def _solve_extragradient(self, A, H, w, v, box, tol, stop, max_iter):
        st = self.settings
        K, R, N = len(w), len(v), len(self.xi)
        if st["precondition"]:
            # Pock & Chambolle's diagonal steps: 1 / column sums and 1 / row sums of |A|
            absH = np.abs(A.Hv)
            tw = 1.0 / np.maximum(np.bincount(H.indices, weights=absH, minlength=K), 1e-12)
            txi = 1.0 / np.maximum(np.bincount(A.rsent, minlength=N).astype(float), 1.0)
            sv = 1.0 / (
                np.bincount(np.repeat(np.arange(R), np.diff(A.Hp)), weights=absH, minlength=R) + 1.0
            )
        else:
            tw, txi, sv = np.ones(K), np.ones(N), np.ones(R)
        norm = spectral_norm(A, tw, txi, sv, 60)
        # power iteration approaches the norm from below: a 2 % margin keeps a * ||B|| < 1
        a = st["step_scale"] / (1.02 * norm)
        if self.omega is None:
            # PDLP's first primal weight: ||c|| / ||b||
            self.omega = math.sqrt(K + self.C**2 * N) / math.sqrt(R) if st["restart"] else 1.0
        its, primal, dual, self.omega = extragradient(
            A,
            self.C,
            (w, self.xi, v),
            box,
            (a * tw, a * txi, a * sv),
            self.omega,
            max_iter,
            st["check_every"],
            tol,
            st["restart"],
            stop,
        )
        return its, primal, dual

    def _purge(self, rows: np.ndarray, rsent: np.ndarray, Hw: np.ndarray, v: np.ndarray) -> None:
        """Rows of the LP (``rows``, of sentences ``rsent``; ``Hw`` their products with the
        weights) whose dual has been 0 with a positive slack after ``purge_after`` solves in a
        row leave it. The slacks are those of the feasible point the gap check makes (each
        sentence's xi the largest of its rows' 1 - H w), not the iterate's."""
        xi = np.zeros(len(self.xi))
        np.maximum.at(xi, rsent, 1.0 - Hw)
        idle_now = (v == 0.0) & (Hw - 1.0 + xi[rsent] > 1e-9)
        self.idle[rows] = np.where(idle_now, self.idle[rows] + 1, 0)
        drop = rows[self.idle[rows] >= self.purge_after]
        self.live[drop] = False
        self.v[drop] = 0.0

    def warm_start(self, w_full: np.ndarray) -> None:
        self._w0 = np.maximum(w_full, 0.0)

    def solve(
        self,
        stop: tuple[float, float] | None = None,
        decrease: tuple[float, float, float] | None = None,
    ) -> tuple[np.ndarray, float]:
        """The LP over the working sets inside the box: (weights, the LP objective at them,
        made feasible). ``stop`` = (below, above): end as soon as a feasible point's objective
        is at most ``below`` or the dual bound at least ``above``; ``decrease`` = (center,
        share, least): end as soon as a feasible point's objective is below ``center`` by at
        least ``least`` and by ``share`` of the most the dual bound allows; both before the
        round's gap tolerance (:func:`~tagger.learners.solvers.lp_operators.stop_reached`)."""
        ws, st = self.ws, self.settings
        ends = list(NEVER)
        if stop is not None:
            ends[0], ends[1] = float(stop[0]), float(stop[1])
        if decrease is not None:
            ends[2], ends[3], ends[4] = (float(x) for x in decrease)
        stop_at = (ends[0], ends[1], ends[2], ends[3], ends[4])
        self._grow()
        rows = np.flatnonzero(self.live)
        K, R = ws.n_cols, len(rows)
        w = np.zeros(K)
        w[: len(self.w)] = self.w
        if len(self.w) == 0 and getattr(self, "_w0", None) is not None:
            w[:] = self._w0[ws.coords]
        v_all = np.zeros(ws.n_rows)
        v_all[: len(self.v)] = self.v
        v = v_all[rows]
        entries, counts = ws.entries(rows)
        ptr = np.concatenate([[0], np.cumsum(counts)])
        H = sp.csr_matrix((ws.val[entries], ws.col[entries], ptr), shape=(R, K))
        T = H.T.tocsr()
        Hp, Hc, Hv = H.indptr.astype(np.int64), H.indices.astype(np.int64), H.data
        Tp, Tc, Tv = T.indptr.astype(np.int64), T.indices.astype(np.int64), T.data
        rsent = ws.sentence[rows]
        A = LPRows(Hp, Hc, Hv, Tp, Tc, Tv, rsent, np.ones(R))
        lo, hi = np.zeros(K), np.full(K, np.inf)
        if self.box is not None:
            k = len(self.box[0])
            lo[:k], hi[:k] = self.box
        np.clip(w, lo, hi, out=w)
        tight = self.tight_tol()
        tol = max(tight, st["early_gap_tol"]) if self.loose else tight
        work = len(Hv) + 2 * R + K + len(self.xi)
        cap = self._cap(work)
        started = time.perf_counter()
        if st.get("method", "extragradient") == "pdhg":
            its, primal, dual = self._solve_pdhg(A, H, w, v, (lo, hi), tol, stop_at, cap)
        else:
            its, primal, dual = self._solve_extragradient(A, H, w, v, (lo, hi), tol, stop_at, cap)
        if its > 0:
            self.rate = (time.perf_counter() - started) / (its * max(work, 1))
        v_all[rows] = v
        self.w, self.v = w, v_all
        gap = (primal - dual) / max(1.0, abs(primal))
        # the dual bound of the same v on the LP without the box: a lower bound on the model's
        # minimum whatever the box (that of the boxed LP is not one where the box binds at its
        # exact optimum, which a stop at a relative gap cannot rule out)
        self.lower_bound = float(
            dual_bound(
                A, self.C, v, np.empty(K), np.empty(len(self.xi)), np.zeros(K), np.full(K, np.inf)
            )
        )
        self.last = {"lp_iterations": int(its), "lp_gap": float(gap)}
        if gap > tol and (
            stop_reached(stop_at, primal, dual) or (cap < st["max_iter"] and its >= cap)
        ):
            # ended by ``stop`` or ``decrease``, or by the deadline, before the tolerance: w is
            # not the LP's minimizer (its dual bound is still a bound)
            self.last["lp_stopped"] = True
        if self.purge_after > 0:
            self._purge(rows, rsent, H @ w, v)
        self.last["lp_rows"] = int(self.live.sum())
        full = np.zeros(ws.n_weights)
        full[ws.coords] = w
        return full, float(primal)
