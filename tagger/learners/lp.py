"""LP-based learners: the cutting-plane L1-M3N and the LP with column generation.

Three learners share one loop (generate violated constraints, re-solve the LP over the working
sets, repeat until no constraint is added) and differ in the LP and its solver:

``m3n-cutting-plane``: Zhu, Xing & Zhang, *Primal Sparse Max-Margin Markov Networks* (KDD
2009), Algorithm 1 (ALGORITHMS.md 1b). With ``w = mu - nu``::

    min_{mu, nu >= 0, xi >= 0}  1.(mu + nu) + C 1.xi
    s.t.  (mu - nu) . Delta f_i(y) >= Delta(y_i, y) - xi_i      for all i, y in S_i

separation by loss-augmented Viterbi, y^ = argmax_y Delta(y_i, y) + F(x_i, y; w).

``lp-extragradient`` and ``lp-simplex``: Wang, Shawe-Taylor & Szedmak, *Large-Margin Structured
Prediction via Linear Programming* (AISTATS 2009; ALGORITHMS.md 2)::

    min_{w >= 0, xi >= 0}  1.w + C 1.xi   s.t.  H w >= 1 - M xi

one row Delta f_i(y^) per generated competitor, margin 1, separation by the best labeling other
than the gold one (Viterbi, or second-best Viterbi when Viterbi returns the gold labeling).
Non-negative weights lose nothing where every attribute has a parameter for every label (adding
a constant to all labels' weights of an attribute changes no argmax); with the default
seen-pairs parameters they are a real restriction, as in the paper's setting.

Whole objectives (what the progress rows report; the LP over all labelings equals them):
cutting plane ``||w||_1 + C sum_i max_y [Delta(y_i,y) - w.Delta f_i(y)]_+`` (the L1-M3N P1),
LP ``||w||_1 + C sum_i [1 - min_{y != y_i} w.Delta f_i(y)]_+``.

Algorithm 1 re-solves the LP after every added constraint; here ``resolve_every`` constraints
are gathered first (default: a whole pass), which changes the path but not the fixed point
(the loop ends only when no sentence has a constraint violated by more than ``epsilon``).

LP solvers:

* HiGHS through ``highspy`` (``m3n-cutting-plane``, ``lp-simplex``): rows and columns are added
  to one live model and the dual simplex restarts from the previous optimal basis (a warm start:
  new rows enter with their slacks basic). Only weights that appear in some row are LP columns:
  any other weight is 0 at the optimum since it has a positive cost.
* The extragradient method (``lp-extragradient``; Korpelevich's method as the paper applies it)
  on the saddle point ``min_{u >= 0} max_{v >= 0} c.u - v.(A u - b)``, ``A = [H M]``::

      u_bar = [u - a (c - A^T v)]_+,      v_bar = [v + a (b - A u)]_+
      u'    = [u - a (c - A^T v_bar)]_+,  v'    = [v + a (b - A u_bar)]_+

  with the step ``a = step_scale / ||A||_2`` (spectral norm by power iteration, recomputed
  after each round of new rows) in one numba loop over CSR products. It is warm-started from the
  previous round (new columns and new duals start at 0). Stopping rule: a certified duality
  gap. Every ``check_every`` iterations the primal point is made feasible (xi from the rows'
  slacks) and the dual point scaled into its feasible region (``H^T v <= 1``, ``M^T v <= C``);
  the two objectives bound the LP optimum from above and below, and the round ends when their
  relative gap is below ``gap_tol`` (a stricter form of the paper's relative-change and
  gap rule, whose gap is measured between infeasible iterates).
"""

from __future__ import annotations

import math

import numba
import numpy as np
import scipy.sparse as sp

from tagger._config import NUMBA_OPTS
from tagger.learners._working_set import LOSS_AUGMENTED, SECOND_BEST, WorkingSets
from tagger.learners.base import Learner, Param, Stopwatch, TrainingProblem


# ------------------------------------------------------------------------------- extragradient


@numba.njit(**NUMBA_OPTS)
def _csr_matvec(ptr, idx, val, x, out):
    for r in range(ptr.shape[0] - 1):
        acc = 0.0
        for k in range(ptr[r], ptr[r + 1]):
            acc += val[k] * x[idx[k]]
        out[r] = acc


@numba.njit(**NUMBA_OPTS)
def _apply_a(Hp, Hc, Hv, rsent, w, xi, out):
    """out = H w + M xi (M xi picks the slack of each row's sentence)."""
    _csr_matvec(Hp, Hc, Hv, w, out)
    for r in range(out.shape[0]):
        out[r] += xi[rsent[r]]


@numba.njit(**NUMBA_OPTS)
def _apply_at(Tp, Tc, Tv, rsent, v, out_w, out_xi):
    """(out_w, out_xi) = (H^T v, M^T v)."""
    _csr_matvec(Tp, Tc, Tv, v, out_w)
    out_xi[:] = 0.0
    for r in range(v.shape[0]):
        out_xi[rsent[r]] += v[r]


@numba.njit(**NUMBA_OPTS)
def _spectral_norm(Hp, Hc, Hv, Tp, Tc, Tv, rsent, tw, txi, sv, iters):
    """||S^1/2 [H M] T^1/2||_2 (diagonal scalings sv, (tw, txi)) by power iteration on
    B^T B from a fixed start (deterministic)."""
    K = tw.shape[0]
    N = txi.shape[0]
    R = rsent.shape[0]
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
        _apply_a(Hp, Hc, Hv, rsent, w, xi, Au)
        Au *= np.sqrt(sv)
        norm = math.sqrt((Au * Au).sum())
        Au *= np.sqrt(sv)
        _apply_at(Tp, Tc, Tv, rsent, Au, w, xi)
        w *= np.sqrt(tw)
        xi *= np.sqrt(txi)
    return norm


@numba.njit(**NUMBA_OPTS)
def _primal_bound(Hp, Hc, Hv, rsent, rhs, C, w, xi_tmp, Aw):
    """LP objective at w with the smallest feasible slacks: an upper bound on the optimum."""
    _csr_matvec(Hp, Hc, Hv, w, Aw)
    xi_tmp[:] = 0.0
    for r in range(rsent.shape[0]):
        slack = rhs[r] - Aw[r]
        if slack > xi_tmp[rsent[r]]:
            xi_tmp[rsent[r]] = slack
    return w.sum() + C * xi_tmp.sum()


@numba.njit(**NUMBA_OPTS)
def _dual_bound(Tp, Tc, Tv, rsent, rhs, C, v, Tw, Txi):
    """Dual objective of v scaled into H^T v <= 1, M^T v <= C: a lower bound on the optimum."""
    _apply_at(Tp, Tc, Tv, rsent, v, Tw, Txi)
    scale = 1.0
    for k in range(Tw.shape[0]):
        if Tw[k] > scale:
            scale = Tw[k]
    for i in range(Txi.shape[0]):
        if Txi[i] / C > scale:
            scale = Txi[i] / C
    return (rhs * v).sum() / scale


@numba.njit(**NUMBA_OPTS)
def _extragradient(Hp, Hc, Hv, Tp, Tc, Tv, rsent, rhs, C, w, xi, v, aw, axi, av, max_iter,
                   check_every, gap_tol, restart):
    """Extragradient iterations on (w, xi, v) with per-coordinate steps (aw, axi, av).

    Every ``check_every`` iterations the current point and the average of the predictor points
    since the last restart are bounded (feasible primal and dual objectives); the best primal
    w and dual v met so far certify the gap. With ``restart``, the iteration restarts from the
    better of the two points whenever its gap has fallen to a fifth of the gap at the last
    restart (the adaptive restarts of PDLP; they make primal-dual methods converge linearly
    on LPs). On return (w, v) hold the best points; returns (iterations, primal, dual).
    """
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
    best_p = _primal_bound(Hp, Hc, Hv, rsent, rhs, C, w, xi_tmp, Aw)
    best_d = _dual_bound(Tp, Tc, Tv, rsent, rhs, C, v, Tw, Txi)
    gap_restart = best_p - best_d
    it = 0
    while it < max_iter:
        if (best_p - best_d) <= gap_tol * max(1.0, abs(best_p)):
            break
        for _ in range(check_every):
            # predictor at (w, xi, v)
            _apply_at(Tp, Tc, Tv, rsent, v, Tw, Txi)
            for k in range(K):
                wb[k] = max(0.0, w[k] - aw[k] * (1.0 - Tw[k]))
            for i in range(N):
                xib[i] = max(0.0, xi[i] - axi[i] * (C - Txi[i]))
            _apply_a(Hp, Hc, Hv, rsent, w, xi, Aw)
            for r in range(R):
                vb[r] = max(0.0, v[r] + av[r] * (rhs[r] - Aw[r]))
            # corrector with the gradients at the predicted point
            _apply_at(Tp, Tc, Tv, rsent, vb, Tw, Txi)
            for k in range(K):
                w[k] = max(0.0, w[k] - aw[k] * (1.0 - Tw[k]))
            for i in range(N):
                xi[i] = max(0.0, xi[i] - axi[i] * (C - Txi[i]))
            _apply_a(Hp, Hc, Hv, rsent, wb, xib, Aw)
            for r in range(R):
                v[r] = max(0.0, v[r] + av[r] * (rhs[r] - Aw[r]))
            sw += wb
            sxi += xib
            sv += vb
            n_avg += 1
            it += 1
        pc = _primal_bound(Hp, Hc, Hv, rsent, rhs, C, w, xi_tmp, Aw)
        dc = _dual_bound(Tp, Tc, Tv, rsent, rhs, C, v, Tw, Txi)
        pa = _primal_bound(Hp, Hc, Hv, rsent, rhs, C, sw / n_avg, xi_tmp, Aw)
        da = _dual_bound(Tp, Tc, Tv, rsent, rhs, C, sv / n_avg, Tw, Txi)
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
                sw[:] = 0.0
                sxi[:] = 0.0
                sv[:] = 0.0
                n_avg = 0
    w[:] = best_w
    v[:] = best_v
    return it, best_p, best_d


# ------------------------------------------------------------------------------- LP back ends


class _ExtragradientLP:
    """The non-negative LP over the working sets, solved by extragradient (warm-started)."""

    def __init__(self, ws: WorkingSets, C: float, settings: dict):
        self.ws, self.C, self.settings = ws, C, settings
        self.w = np.zeros(0)
        self.xi = np.zeros(ws.problem.X.n_sentences)
        self.v = np.zeros(0)
        self.last = {}

    def warm_start(self, w_full: np.ndarray) -> None:
        self._w0 = np.maximum(w_full, 0.0)

    def solve(self) -> tuple[np.ndarray, float]:
        ws, st = self.ws, self.settings
        K, R = ws.n_cols, ws.n_rows
        w = np.zeros(K)
        w[:len(self.w)] = self.w
        if len(self.w) == 0 and getattr(self, "_w0", None) is not None:
            w[:] = self._w0[ws.coords]
        v = np.zeros(R)
        v[:len(self.v)] = self.v
        H = sp.csr_matrix((ws.val, ws.col, ws.ptr), shape=(R, K))
        T = H.T.tocsr()
        Hp, Hc, Hv = H.indptr.astype(np.int64), H.indices.astype(np.int64), H.data
        Tp, Tc, Tv = T.indptr.astype(np.int64), T.indices.astype(np.int64), T.data
        rsent = ws.sentence
        rhs = np.ones(R)
        N = len(self.xi)
        if st["precondition"]:
            # Pock & Chambolle's diagonal steps: 1 / column sums and 1 / row sums of |A|
            absH = np.abs(Hv)
            tw = 1.0 / np.maximum(np.bincount(H.indices, weights=absH, minlength=K), 1e-12)
            txi = 1.0 / np.maximum(np.bincount(rsent, minlength=N).astype(float), 1.0)
            sv = 1.0 / (np.bincount(np.repeat(np.arange(R), np.diff(Hp)), weights=absH,
                                    minlength=R) + 1.0)
        else:
            tw, txi, sv = np.ones(K), np.ones(N), np.ones(R)
        norm = _spectral_norm(Hp, Hc, Hv, Tp, Tc, Tv, rsent, tw, txi, sv, 60)
        # power iteration approaches the norm from below: a 2 % margin keeps a * ||B|| < 1
        a = st["step_scale"] / (1.02 * norm)
        its, primal, dual = _extragradient(Hp, Hc, Hv, Tp, Tc, Tv, rsent, rhs, self.C, w,
                                           self.xi, v, a * tw, a * txi, a * sv, st["max_iter"],
                                           st["check_every"], st["gap_tol"], st["restart"])
        self.w, self.v = w, v
        self.last = {"lp_iterations": int(its), "lp_gap": float((primal - dual) / max(1.0, abs(primal)))}
        full = np.zeros(ws.n_weights)
        full[ws.coords] = w
        return full, float(primal)


class _HighsLP:
    """The LP over the working sets in one live HiGHS model (rows and columns added in place).

    ``signed``: weights are ``mu - nu`` (two columns per weight, the L1-M3N's LP); otherwise one
    non-negative column per weight. Columns 0..N-1 are the slacks xi (cost C).
    """

    def __init__(self, ws: WorkingSets, C: float, signed: bool, time_limit: float):
        import highspy

        self.ws, self.C, self.signed = ws, C, signed
        self.h = highspy.Highs()
        self.h.setOptionValue("output_flag", False)
        self.h.setOptionValue("random_seed", 0)
        self.h.setOptionValue("threads", 1)
        if time_limit > 0:
            self.h.setOptionValue("time_limit", float(time_limit))
        self.inf = highspy.kHighsInf
        self.optimal = highspy.HighsModelStatus.kOptimal
        N = ws.problem.X.n_sentences
        self.N = N
        self._add_cols(N, C)
        self.cols = 0
        self.rows = 0
        self.last = {}

    def _add_cols(self, n: int, cost: float) -> None:
        if n:
            self.h.addCols(n, np.full(n, cost), np.zeros(n), np.full(n, self.inf), 0,
                           np.zeros(n, dtype=np.int32), np.empty(0, dtype=np.int32),
                           np.empty(0))

    def warm_start(self, w_full: np.ndarray) -> None:
        pass  # the simplex warm-starts from its own basis

    def _sync(self) -> None:
        ws = self.ws
        per = 2 if self.signed else 1
        if ws.n_cols > self.cols:
            self._add_cols(per * (ws.n_cols - self.cols), 1.0)
            self.cols = ws.n_cols
        if ws.n_rows > self.rows:
            ptr, col, val = ws.rows_since(self.rows)
            sent = ws.sentence[self.rows:]
            n = len(sent)
            counts = np.diff(ptr)
            if self.signed:
                # each entry twice: +d on mu (column N + 2c), -d on nu (column N + 2c + 1)
                cols = np.stack([self.N + 2 * col, self.N + 2 * col + 1], axis=1).ravel()
                vals = np.stack([val, -val], axis=1).ravel()
                counts2 = 2 * counts
            else:
                cols, vals, counts2 = self.N + col, val, counts
            # plus the row's slack xi_i (column i), appended to each row
            row_of = np.repeat(np.arange(n), counts2)
            cols = np.concatenate([cols, sent])
            vals = np.concatenate([vals, np.ones(n)])
            row_of = np.concatenate([row_of, np.arange(n)])
            order = np.argsort(row_of, kind="stable")
            starts = np.zeros(n, dtype=np.int32)
            starts[1:] = np.cumsum(counts2 + 1)[:-1]
            lower = self._rhs(self.rows)
            self.h.addRows(n, lower, np.full(n, self.inf), len(cols), starts,
                           cols[order].astype(np.int32), vals[order])
            self.rows = ws.n_rows

    def _rhs(self, first: int) -> np.ndarray:
        return self.ws.loss[first:].copy() if self.signed else np.ones(self.ws.n_rows - first)

    def solve(self) -> tuple[np.ndarray, float]:
        self._sync()
        h = self.h
        h.run()
        status = h.getModelStatus()
        info = h.getInfo()
        self.last = {"lp_iterations": int(info.simplex_iteration_count)}
        if status != self.optimal:
            self.last["lp_status"] = h.modelStatusToString(status)
        x = np.asarray(h.getSolution().col_value)
        ws = self.ws
        full = np.zeros(ws.n_weights)
        if self.signed:
            body = x[self.N:self.N + 2 * ws.n_cols]
            full[ws.coords] = body[0::2] - body[1::2]
        else:
            full[ws.coords] = x[self.N:self.N + ws.n_cols]
        return full, float(info.objective_function_value)


# ------------------------------------------------------------------------------- the learners


class _WorkingSetLearner(Learner):
    """Shared loop: separate at w, add violated constraints, re-solve, until nothing is added."""

    mode = SECOND_BEST
    signed = False

    def _solver(self, ws: WorkingSets, settings: dict):
        raise NotImplementedError

    def _violations(self, value: np.ndarray) -> np.ndarray:
        """Per sentence: right-hand side minus w . Delta f at the oracle's labeling."""
        return value if self.mode == LOSS_AUGMENTED else 1.0 - value

    def _fit(self, problem: TrainingProblem, settings: dict, seed: int, w0) -> np.ndarray:
        model = problem.model
        C, eps = settings["C"], settings["epsilon"]
        ws = WorkingSets(problem)
        solver = self._solver(ws, settings)
        w = np.zeros(model.n_weights) if w0 is None else np.array(w0, dtype=np.float64)
        if not self.signed:
            w = np.maximum(w, 0.0)
        solver.warm_start(w)
        clock = Stopwatch()
        n = problem.X.n_sentences
        nonempty = np.diff(problem.X.offsets) > 0
        viol = self._violations(ws.separate(w, self.mode).copy())
        xi = np.zeros(n)
        lp_obj = 0.0
        resolve_every = settings.get("resolve_every", 0) or n
        for epoch in range(1, settings["epochs"] + 1):
            # Algorithm 1's test: add y^ when H_i(y^) > xi_i + epsilon, xi_i the slack of S_i
            cand = np.flatnonzero(nonempty & (viol > xi + eps))
            added = 0
            for lo in range(0, len(cand), resolve_every):
                r, _ = ws.add(cand[lo:lo + resolve_every])
                added += r
                if r:
                    w, lp_obj = solver.solve()
            if epoch > 1 and added == 0:
                break
            xi = self._slacks(ws, w)
            viol = self._violations(ws.separate(w, self.mode).copy())
            hinge = np.maximum(viol, 0.0)
            hinge[~nonempty] = 0.0
            row = {"epoch": epoch, "objective": float(np.abs(w).sum() + C * hinge.sum()),
                   "lp_objective": lp_obj, "added": int(added), "rows": ws.n_rows,
                   "columns": ws.n_cols, "violated": int(np.count_nonzero(nonempty & (viol > xi + eps))),
                   "nonzero": int(np.count_nonzero(w))}
            row.update(solver.last)
            row["converged"] = row["violated"] == 0
            if problem.dev_score is not None:
                row.update(problem.dev_score(w))
            row["time"] = round(clock(), 2)
            self._report(problem, row)
            if row["converged"]:
                break
        return w

    def _slacks(self, ws: WorkingSets, w: np.ndarray) -> np.ndarray:
        """xi_i = max(0, max_{y in S_i} rhs - w . Delta f_i(y)), from the stored rows."""
        n = ws.problem.X.n_sentences
        xi = np.zeros(n)
        if ws.n_rows:
            prod = ws.val * w[ws.coord]
            row_id = np.repeat(np.arange(ws.n_rows), np.diff(ws.ptr))
            dot = np.bincount(row_id, weights=prod, minlength=ws.n_rows)
            rhs = ws.loss if self.mode == LOSS_AUGMENTED else np.ones(ws.n_rows)
            np.maximum.at(xi, ws.sentence, rhs - dot)
        return xi


_COMMON = (
    Param("C", 1.0, float, "weight C of the summed slacks (hinge losses) against ||w||_1",
          low=0.0, low_open=True),
    Param("epochs", 50, int, "at most this many rounds of separation over all sentences "
          "(training stops earlier when no constraint is violated)", low=1),
    Param("epsilon", 1e-4, float, "precision: a labeling joins its working set when its "
          "constraint is violated by more than this beyond the current slack", low=0.0),
)
_TIME = Param("time_limit", 0.0, float, "seconds each HiGHS solve may take (0 = no limit); "
              "a solve stopped by it reports lp_status", low=0.0)


class CuttingPlaneM3N(_WorkingSetLearner):
    """L1-M3N by the cutting-plane method with an LP (Zhu, Xing & Zhang, KDD 2009, Algorithm 1).

    Objective: min_w ||w||_1 + C sum_i max_y [Delta(y_i, y) + F(x_i, y; w) - F(x_i, y_i; w)]
    (P1), as the LP over working sets of loss-augmented Viterbi labelings, re-solved by HiGHS
    dual simplex with rows added in place (warm start). See the module docstring.
    """

    name = "m3n-cutting-plane"
    mode = LOSS_AUGMENTED
    signed = True
    params = _COMMON + (
        Param("resolve_every", 0, int, "re-solve the LP after this many added constraints "
              "(1 = the paper's Algorithm 1; 0 = once per pass over the sentences)", low=0),
        _TIME,
    )

    def _solver(self, ws, settings):
        return _HighsLP(ws, settings["C"], signed=True, time_limit=settings["time_limit"])


class SimplexLP(_WorkingSetLearner):
    """Large-margin LP with column generation, solved by HiGHS simplex (Wang, Shawe-Taylor &
    Szedmak, AISTATS 2009).

    Objective: min_{w >= 0} ||w||_1 + C sum_i [1 - min_{y != y_i} (F(x_i, y_i; w) - F(x_i, y; w))]_+
    as the LP min 1.w + C 1.xi s.t. H w >= 1 - M xi over generated rows (second-best Viterbi
    separation), re-solved by dual simplex warm-started from the last basis.
    """

    name = "lp-simplex"
    params = _COMMON + (_TIME,)

    def _solver(self, ws, settings):
        return _HighsLP(ws, settings["C"], signed=False, time_limit=settings["time_limit"])


class ExtragradientLP(_WorkingSetLearner):
    """Large-margin LP with column generation, solved by the extragradient method (Wang,
    Shawe-Taylor & Szedmak, AISTATS 2009).

    Objective: min_{w >= 0} ||w||_1 + C sum_i [1 - min_{y != y_i} (F(x_i, y_i; w) - F(x_i, y; w))]_+
    as the LP min 1.w + C 1.xi s.t. H w >= 1 - M xi over generated rows; each round's LP is
    solved by extragradient steps on its saddle point, warm-started, until the certified
    duality gap is below ``gap_tol`` (module docstring).
    """

    name = "lp-extragradient"
    params = _COMMON + (
        Param("gap_tol", 1e-6, float, "relative duality gap (feasible primal and dual bounds) "
              "at which an LP round stops", low=0.0, low_open=True),
        Param("max_iter", 200000, int, "at most this many extragradient iterations per round",
              low=1),
        Param("check_every", 50, int, "iterations between duality-gap checks", low=1),
        Param("precondition", True, bool, "diagonal step sizes from the row and column sums "
              "of |[H M]| (Pock & Chambolle); off = one scalar step as in the paper"),
        Param("restart", True, bool, "restart from the averaged iterate when its duality gap "
              "has shrunk five-fold (adaptive restarts); off = plain extragradient"),
        Param("step_scale", 0.9, float, "step a = step_scale / ||[H M]||_2 (must stay below 1)",
              low=0.0, high=0.999, low_open=True),
    )

    def _solver(self, ws, settings):
        return _ExtragradientLP(ws, settings["C"], settings)
