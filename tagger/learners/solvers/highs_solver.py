"""HiGHS for the LPs over working sets (the back end of ``m3n-cutting-plane`` and
``lp-simplex``): rows and columns are added to one live model and the dual simplex restarts
from the previous optimal basis (a warm start: new rows enter with their slacks basic). Only
weights that appear in some row are LP columns: any other weight is 0 at the optimum since it
has a positive cost.

The engine that solves each round's LP (``lp-simplex``'s ``engine``, :data:`ENGINES`):

``simplex``
    HiGHS's dual simplex, warm-started from the last optimal basis (HiGHS option
    ``solver="simplex"``). Exact: a basic optimal solution within HiGHS's feasibility
    tolerances (1e-7).
``auto``
    The interior point method (below) for the first solve, which has no basis to start from,
    and for any LP of more than :data:`AUTO_IPM_ROWS` rows; the warm-started dual simplex for
    the others. Crossover leaves an optimal basis, so the simplex rounds that follow an
    interior point round start from it. The early rounds on a large training set bring
    tens of thousands of rows each, before rows that stopped binding have had time to leave;
    there the simplex from scratch or from a basis that most new rows violate is slow. On
    the first 2,000 CoNLL-2000 POS sentences (hmm preset, C = 100, one thread, a loaded 2-core
    machine) the first four rounds' LPs (41,587 to 105,691 rows) took the simplex 37.3 s, 15.7
    s, 35.7 s and 52.7 s and the interior point method 5.0 s, 8.3 s, 5.7 s and 3.5 s; once
    the LP was down to about 10,000 rows the warm-started simplex was ahead again (127 rounds
    against the interior point method's 95 in the same time, each round cheaper). An
    interior point solve can stall, though (one took 3,970 s where the rounds before it took
    at most 90 s): once there is a basis, one that runs :data:`AUTO_IPM_CAP` times longer
    than the longest before it is stopped and the dual simplex solves that LP from the last
    optimal basis (the progress row then has ``lp_engine=simplex`` and
    ``lp_ipm_stopped_after``).
``ipm``
    HiGHS's interior point method (``solver="ipm"``: IPX in the wheels built without HiPO)
    with crossover (``run_crossover="on"``), so every round ends at an optimal basis, exact as
    the simplex's. IPX cannot start from a basis or a point: every round is solved from scratch.
``pdlp``
    HiGHS's first-order primal-dual hybrid gradient (``solver="pdlp"``, cuPDLP-C), stopped at
    its relative tolerance :data:`PDLP_TOLERANCE`. It starts from scratch every round too
    (HiGHS passes it no starting point; a solution handed to it by ``setSolution`` did not
    shorten its run). Its solution is approximate: such a round's progress row says so in
    ``lp_status`` ("optimal to PDLP's tolerance ... (approximate)", or "Unknown (PDLP)" where
    HiGHS's own KKT check of PDLP's point found relative errors over 100 times its tolerances)
    and reports ``lp_gap`` (HiGHS's relative primal-dual objective error) and
    ``lp_infeasibility`` (the largest violation of a row or bound). The solver is ``loose``
    (as ``lp-extragradient`` at its early tolerance) until the column generation would stop;
    that round and every later one is then solved by the dual simplex (from scratch the first
    time, PDLP leaving no basis), so that the certificate of the final model rests on exact LP
    solutions only.

What they cost on the restricted LPs of GUM UPOS (bench/lp_engines.py: hmm preset, C = 100,
one thread): over whole runs the interior point method's rounds took about as long as the
warm-started simplex's and PDLP's ten to twenty times longer (``lp-simplex``'s docstring). The
same LPs solved from scratch by each engine (the rounds 1 to 80 of the first 1,000 sentences:
22,000 to 61,000 rows) took the interior point method with crossover 1.8 to 3.7 s, the simplex
3.9 to 32 s and PDLP 25 to 164 s. Only the simplex's first round is solved from scratch (17.7
s at 1,000 sentences, 0.54 s at 200, where the interior point method took 2.1 s and 0.19 s):
its later rounds, warm-started, took 0.8 to 3.5 s at 1,000 sentences.

Rows that stopped binding. The working sets only grow, but most of their rows stop binding
once the rounds have moved past them: on 500 GUM UPOS sentences about one row in ten had a
non-zero dual at the end, and a dual simplex iteration costs in proportion to the rows. With
``purge_after`` = k > 0, a row whose slack has been basic with a zero dual after k solves in a
row leaves the LP (its slack basic, so the basis stays valid); it stays in the working sets.
:meth:`HighsSolver.revive` puts such a row back when a later point violates it beyond its
sentence's slack over the rows in the LP (:meth:`HighsSolver.rows_in_lp`), which the column
generation's slacks are then computed from: a sentence whose most violated labeling is a row
that left is thus never taken as satisfied, and the certificates of
:mod:`~tagger.learners.solvers.trust_region` and of the plain loop hold as before (a model
over fewer rows is still below the objective).
"""

from __future__ import annotations

import time

import numpy as np

from tagger.learners.solvers.working_sets import WorkingSets

#: the engines that can solve a round's LP (module docstring)
ENGINES = ("auto", "simplex", "ipm", "pdlp")
#: ``auto``: an LP with more rows than this (or one with no basis to start from) is solved by
#: the interior point method with crossover, a smaller one by the warm-started dual simplex
#: (module docstring: what each cost on CoNLL-2000)
AUTO_IPM_ROWS = 50_000
#: ``auto``: an interior point solve with a basis to fall back to may take this many times the
#: longest one so far (at least AUTO_IPM_FLOOR seconds) before the warm-started dual simplex
#: takes over. On CoNLL-2000 POS at the paper's size the 15 interior point rounds on 35,031
#: to 283,683 rows took 12 to 90 s each (separation included), and then one on 168,111 rows,
#: without the trust region's box, took 3,970 s (71 iterations, no crossover; CHANGELOG.md)
AUTO_IPM_CAP = 4.0
AUTO_IPM_FLOOR = 60.0
#: PDLP's relative optimality tolerance (HiGHS's ``pdlp_optimality_tolerance``, its default):
#: the relative primal and dual residuals and the relative duality gap it stops at
PDLP_TOLERANCE = 1e-7


class HighsSolver:
    """The LP over the working sets in one live HiGHS model (rows and columns added in place).

    ``signed``: weights are ``mu - nu`` (two columns per weight, the L1-M3N's LP); otherwise one
    non-negative column per weight. Columns 0..N-1 are the slacks xi (cost C).
    """

    def __init__(
        self,
        ws: WorkingSets,
        C: float,
        signed: bool,
        time_limit: float,
        engine: str = "simplex",
        purge_after: int = 0,
    ):
        import highspy

        if engine not in ENGINES:
            raise ValueError(f"unknown LP engine {engine!r}; the engines are {', '.join(ENGINES)}")
        self.ws, self.C, self.signed = ws, C, signed
        self.h = _quiet_highs(highspy)
        self.h.setOptionValue("output_flag", False)
        self.h.setOptionValue("random_seed", 0)
        # one thread, and so the same path on every machine; HiGHS keeps one scheduler per
        # process, sized by the first solve, so a model solved earlier in the process with
        # more threads (by the user, or by a library) would make this one fail to start
        highspy.Highs.resetGlobalScheduler(True)
        self.h.setOptionValue("threads", 1)
        #: seconds one solve may take (0: no limit), and the time (``time.perf_counter``) by
        #: which every solve must end, the learner's ``max_seconds`` (None: none); HiGHS's own
        #: ``time_limit`` counts the run time of all the model's solves together, so each solve
        #: is given that total plus what it may take (:meth:`_limit_time`)
        self.time_limit = float(time_limit)
        self.deadline: float | None = None
        #: a lower bound on the minimum of the LP without the box from the last solve: its
        #: value where it ended optimal (with the box unbound, trust_region.lower_bound), none
        #: where a limit stopped it
        self.lower_bound = -np.inf
        self.engine = engine
        self._use("ipm" if engine == "auto" else engine)
        self._solved = False  # auto: whether a basis exists to warm-start the simplex from
        # PDLP's rounds are approximate: only steering until the loop would stop (docstring)
        self.loose = engine == "pdlp"
        self._exact = engine != "pdlp"
        self.inf = highspy.kHighsInf
        self.optimal = highspy.HighsModelStatus.kOptimal
        self.time_up = highspy.HighsModelStatus.kTimeLimit
        #: the longest interior point solve of ``auto`` that ended optimal (:meth:`_ipm_cap`)
        self.ipm_seconds = 0.0
        self.basic = int(highspy.HighsBasisStatus.kBasic)
        self.purge_after = int(purge_after)
        #: the working-set row of each LP row, in the LP's order; solves since each LP row's
        #: slack was last non-basic or its dual non-zero; which working-set rows are in the LP
        self.lp_rows = np.empty(0, dtype=np.int64)
        self.idle = np.empty(0, dtype=np.int64)
        self.live = np.zeros(0, dtype=bool)
        N = ws.problem.X.n_sentences
        self.N = N
        self._add_cols(N, C)
        self.cols = 0
        self.rows = 0
        self.last = {}

    def _use(self, engine: str) -> None:
        h = self.h
        h.setOptionValue("solver", engine)
        if engine == "ipm":
            h.setOptionValue("run_crossover", "on")
        elif engine == "pdlp":
            h.setOptionValue("pdlp_optimality_tolerance", PDLP_TOLERANCE)

    def _add_cols(self, n: int, cost: float) -> None:
        if n:
            self.h.addCols(
                n,
                np.full(n, cost),
                np.zeros(n),
                np.full(n, self.inf),
                0,
                np.zeros(n, dtype=np.int32),
                np.empty(0, dtype=np.int32),
                np.empty(0),
            )

    def warm_start(self, w_full: np.ndarray) -> None:
        pass  # the simplex warm-starts from its own basis

    def set_C(self, C: float) -> None:
        """A new cost of the slack columns (the next point of a path over C); the rows and the
        last basis stay, so the simplex starts from the previous point's optimal basis (still
        primal feasible: only the costs changed)."""
        self.C = C
        idx = np.arange(self.N, dtype=np.int32)
        self.h.changeColsCost(self.N, idx, np.full(self.N, float(C)))
        self.loose = self.engine == "pdlp"

    def set_box(self, lower: np.ndarray, upper: np.ndarray) -> None:
        """Bounds on the weight columns (one per ``ws.coords`` entry, non-negative LP only):
        a trust region for the next solve. New columns added later start unbounded above."""
        self._sync()
        k = len(lower)
        idx = np.arange(self.N, self.N + k, dtype=np.int32)
        upper = np.where(np.isfinite(upper), upper, self.inf)
        self.h.changeColsBounds(
            k, idx, np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
        )

    def _sync(self) -> None:
        ws = self.ws
        per = 2 if self.signed else 1
        if ws.n_cols > self.cols:
            self._add_cols(per * (ws.n_cols - self.cols), 1.0)
            self.cols = ws.n_cols
        if ws.n_rows > self.rows:
            self.live = np.concatenate([self.live, np.zeros(ws.n_rows - self.rows, dtype=bool)])
            self._add_rows(np.arange(self.rows, ws.n_rows, dtype=np.int64))
            self.rows = ws.n_rows

    def _add_rows(self, ids: np.ndarray) -> None:
        """Working-set rows ``ids`` into the LP, after its rows."""
        ws = self.ws
        if len(ids):
            entries, counts = ws.entries(ids)
            col, val = ws.col[entries], ws.val[entries]
            sent = ws.sentence[ids]
            n = len(sent)
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
            row_starts = np.zeros(n, dtype=np.int32)
            row_starts[1:] = np.cumsum(counts2 + 1)[:-1]
            self.h.addRows(
                n,
                self._rhs(ids),
                np.full(n, self.inf),
                len(cols),
                row_starts,
                cols[order].astype(np.int32),
                vals[order],
            )
            self.lp_rows = np.concatenate([self.lp_rows, ids])
            self.idle = np.concatenate([self.idle, np.zeros(n, dtype=np.int64)])
            self.live[ids] = True

    def _rhs(self, ids: np.ndarray) -> np.ndarray:
        return self.ws.loss[ids].copy() if self.signed else np.ones(len(ids))

    def rows_in_lp(self) -> np.ndarray:
        """Per working-set row, whether it is in the LP (rows not yet sent will be)."""
        mask = np.ones(self.ws.n_rows, dtype=bool)
        mask[: len(self.live)] = self.live
        return mask

    def revive(self, w: np.ndarray, xi: np.ndarray, eps: float) -> int:
        """Put back into the LP the rows that left it (``purge_after``) and that ``w``
        violates by more than ``eps`` beyond their sentence's slack ``xi`` over the rows in
        the LP. Returns how many came back."""
        self._sync()
        out = np.flatnonzero(~self.live)
        if not len(out):
            return 0
        back = self.ws.violated_beyond(out, w, self._rhs(out), xi, eps)
        self._add_rows(back)
        return len(back)

    def _purge(self) -> None:
        """Rows whose slack was basic with a zero dual after ``purge_after`` solves in a row
        leave the LP (module docstring)."""
        h = self.h
        basic = np.array([int(x) for x in h.getBasis().row_status]) == self.basic
        idle_now = basic & (np.abs(np.asarray(h.getSolution().row_dual)) <= 1e-12)
        self.idle = np.where(idle_now, self.idle + 1, 0)
        drop = np.flatnonzero(self.idle >= self.purge_after)
        if len(drop):
            h.deleteRows(len(drop), drop.astype(np.int32))
            self.live[self.lp_rows[drop]] = False
            self.lp_rows = np.delete(self.lp_rows, drop)
            self.idle = np.delete(self.idle, drop)

    def solve(
        self,
        stop: tuple[float, float] | None = None,
        decrease: tuple[float, float, float] | None = None,
    ) -> tuple[np.ndarray, float]:
        """The LP over the working sets inside the box, solved to the engine's optimality
        (``stop`` and ``decrease``, which let a first-order solver end early, change nothing
        here)."""
        self._sync()
        h = self.h
        approximate = self.engine == "pdlp" and self.loose
        method = self.engine
        if self.engine == "auto":
            method = "ipm" if not self._solved or len(self.lp_rows) > AUTO_IPM_ROWS else "simplex"
            self._use(method)
        if self.engine == "pdlp" and not approximate and not self._exact:
            self._use("simplex")  # the exact rounds that end a PDLP run
            self._exact = True
        fallback = None
        if method == "ipm" and self.engine == "auto" and self._solved:
            # a basis to fall back to: the last optimal one, with the rows added since basic
            fallback = h.getBasis()
        started = time.perf_counter()
        self._limit_time(self._ipm_cap() if fallback is not None else None)
        h.run()
        status = h.getModelStatus()
        took = time.perf_counter() - started
        if method == "ipm" and status == self.optimal:
            self.ipm_seconds = max(self.ipm_seconds, took)
        elif fallback is not None and status == self.time_up and not self._past_deadline():
            # the interior point method stalled (module docstring): the dual simplex from the
            # last optimal basis solves this LP instead
            h.setBasis(fallback)
            method = "simplex"
            self._use(method)
            self._limit_time()
            h.run()
            status = h.getModelStatus()
        info = h.getInfo()
        if approximate:
            # HiGHS calls PDLP's stop at its tolerance optimal: it is not an exact optimum
            reached = (
                f"optimal to PDLP's tolerance {PDLP_TOLERANCE:g} (approximate)"
                if status == self.optimal
                else f"{h.modelStatusToString(status)} (PDLP)"
            )
            self.last = {
                "lp_iterations": int(info.pdlp_iteration_count),
                "lp_status": reached,
                "lp_gap": float(info.primal_dual_objective_error),
                "lp_infeasibility": float(info.max_primal_infeasibility),
            }
        elif method == "ipm":
            self.last = {
                "lp_iterations": int(info.ipm_iteration_count),
                "lp_crossover_iterations": int(info.crossover_iteration_count),
            }
        else:
            self.last = {"lp_iterations": int(info.simplex_iteration_count)}
        if self.engine == "auto":
            self.last["lp_engine"] = method
            if method == "simplex" and fallback is not None:
                self.last["lp_ipm_stopped_after"] = round(took, 2)
            self._solved = self._solved or status == self.optimal
        if status != self.optimal and not approximate:
            self.last["lp_status"] = h.modelStatusToString(status)
            # stopped by a limit: the point is no minimizer and its value no bound
            self.last["lp_stopped"] = True
        # every LP column is non-negative: a degenerate basic column may come back a rounding
        # error below 0 (seen after a simplex solve from scratch), which the weights must not
        x = np.maximum(np.asarray(h.getSolution().col_value), 0.0)
        ws = self.ws
        full = np.zeros(ws.n_weights)
        if self.signed:
            body = x[self.N : self.N + 2 * ws.n_cols]
            full[ws.coords] = body[0::2] - body[1::2]
        else:
            full[ws.coords] = x[self.N : self.N + ws.n_cols]
        value = float(info.objective_function_value)
        self.lower_bound = value if status == self.optimal else -np.inf
        if self.purge_after > 0 and status == self.optimal and not approximate:
            self._purge()  # after reading the solution, which changing the LP clears
        self.last["lp_rows"] = len(self.lp_rows)  # the rows the LP keeps for the next round
        return full, value

    def _ipm_cap(self) -> float:
        """Seconds an interior point solve of ``auto`` may take before the simplex takes over
        from the last basis: :data:`AUTO_IPM_CAP` times the longest one that ended optimal,
        at least :data:`AUTO_IPM_FLOOR`."""
        return max(AUTO_IPM_FLOOR, AUTO_IPM_CAP * self.ipm_seconds)

    def _past_deadline(self) -> bool:
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def _limit_time(self, cap: float | None = None) -> None:
        """HiGHS's ``time_limit`` for the next solve: the model's run time so far plus the
        least of ``cap``, ``time_limit`` and the time left before ``deadline`` (none: a solve
        that starts after the deadline stops at once, with a zero point, and the learner after
        its round)."""
        limits = [] if cap is None else [cap]
        if self.time_limit > 0:
            limits.append(self.time_limit)
        if self.deadline is not None:
            limits.append(max(self.deadline - time.perf_counter(), 0.0))
        total = self.h.getRunTime() + min(limits) if limits else self.inf
        self.h.setOptionValue("time_limit", float(total))


def _quiet_highs(highspy):
    """A new ``highspy.Highs``: its constructor writes a banner to the process's standard
    output before any option can turn logging off, which would land in the middle of
    ``tagger train -q`` and of a tagged output; file descriptor 1 points at /dev/null while
    it runs."""
    import os
    import sys

    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no standard output to protect
        return highspy.Highs()
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            return highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
