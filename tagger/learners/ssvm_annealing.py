"""Semi-supervised structural SVM with domain constraints, by deterministic annealing.

Balamurugan, Shevade & Sellamanickam, *Large Margin Semi-supervised Structured Output
Learning* (docs/algorithms.md section 4). Labeled set L, unlabeled set U, imputed labelings y_j::

    min_{w, {y_j}}  (1/2)||w||^2 + C_l sum_{i in L} R_i(w) + C_u sum_{j in U} R_j(w; y_j)
                    + sum_c rho_c penalty_c({y_j})

R the structured hinge with Hamming loss (y_j playing the gold labeling for j in U); the
penalties are those of :mod:`tagger.constraints` (instance and corpus level, linear or squared,
hard ones with rho = ``hard_weight``).

Algorithm:

1. w <- supervised L2 SSVM on L alone (C_u = 0), by the Sequential Dual Method
   (:class:`~tagger.learners.solvers.sdm_solver.SDMSolver`, one solver object for the whole run;
   with ``inner = "owlqn"`` the sparse step below instead).
2. For C_u on a geometric schedule from ``cu_start * C`` to ``cu_end * C`` (``steps`` values):
   a. *constraint matching*, w fixed: y_j <- the best labeling under the hard instance rules
      (exact, by the expanded-state Viterbi of :mod:`tagger.constraints.decoding`; plain Viterbi
      without constraints; on a Dask cluster with ``scheduler``, see
      :mod:`tagger.learners.solvers.unlabeled_decoding`); then label switching
      (:mod:`tagger.learners.solvers.label_switching`): pick a
      random unlabeled sequence j, position t and new label; keep the switch if
      ``C_u R_j(w; y_j) + penalties`` falls. The hinge change is exact in O(L): the
      max-marginals M[t, l] of the loss-augmented lattice of sequence j (recomputed only after
      an accepted switch) give the new max over y' since moving the gold label at t from o to
      n adds +1 to every path through (t, o) and -1 to those through (t, n). Penalty changes
      come from :func:`tagger.constraints.switch_penalty_delta` (corpus terms through running
      totals). Stops after ``switches`` proposals per unlabeled token, or when a window of one
      proposal per unlabeled token lowered the objective by less than ``switch_tol`` of it.
   b. *supervised step*, labelings fixed: the SDM solver on L and U with example weights C_l
      and C_u, warm-started (sequences whose labeling changed lose their duals; the others
      keep theirs); in block-parallel rounds with ``blocks`` > 0 (the same weights with any
      number of threads, see :mod:`~tagger.learners.solvers.sdm_blocks`). ``inner = "owlqn"``:
      a sparse step instead, see :mod:`~tagger.learners.solvers.annealing_steps`.
   c. a-b repeat ``rounds`` times or until no labeling changes; then C_u rises.
3. Model selection on the dev set: the weights with the best dev score along the schedule
   (the supervised start included) are returned. With ``restarts`` > 1 the whole of 1-2 runs
   that many times with different seeds (SDM visiting order, label switching) and the best
   dev score over all runs wins: the objective is not convex, and with a handful of labeled
   sentences runs from different seeds end several points apart. The paper picked the best
   *test* accuracy along its schedule; test scores, when given, are recorded in the trace for
   reporting only.

Without constraints the same loop is plain self-training under the hinge (the "semi-supervised
without constraints" row of the benchmark).

A model with label-pair templates (:mod:`tagger.chain.pairs`) trains the same way: its
unlabeled sentences decode with their per-position transitions, which label switching then
reads (one (L, L) row per token, kept in ``scratch``), and both supervised solvers take the
pair block. So does a second-order chain (:mod:`tagger.chain.second_order`; with unlabeled
data every label pair and triple is allowed and has a weight): its unlabeled sentences decode
on the pair-state lattice, and label switching scores switches from that lattice's
max-marginals and the triples around the switched token
(:mod:`tagger.learners.solvers.switch_order2`).
"""

from __future__ import annotations

import math
import os
from dataclasses import replace

import numpy as np

from tagger.chain import FeatureBatch, Featurized, entry_scores, pair_edges_batch
from tagger.constraints import ViolationState
from tagger.errors import ParameterError, bad_value
from tagger.io.scratch import ScratchSpace
from tagger.learners.base import Learner, Param, Stopwatch, TrainingProblem
from tagger.learners.params import (
    HINGE_C,
    MAX_INNER,
    MAX_WORKING_SET,
    MEMORY,
    PARTITIONS,
    SCHEDULER,
    SDM_BLOCK_SIZE,
    SDM_BLOCKS,
    SDM_TOL,
    SELECT,
)
from tagger.learners.solvers.annealing_memory import warn_if_short_of_memory
from tagger.learners.solvers.annealing_steps import solve_step, supervised_step
from tagger.learners.solvers.dask_client import check_scheduler_setting
from tagger.learners.solvers.label_switching import (
    SwitchLattice,
    SwitchPlan,
    all_max_marginals,
    label_switching,
    no_constraints,
    path_scores,
)
from tagger.learners.solvers.unlabeled_decoding import unlabeled_decoding


class SSVMAnnealing(Learner):
    """Semi-supervised L2 structural SVM with domain constraints by deterministic annealing
    (Balamurugan, Shevade & Sellamanickam; docs/algorithms.md section 4).

    Objective: (1/2)||w||^2 + C sum_L R_i(w) + C_u sum_U R_j(w; y_j) + sum_c rho_c pen_c(y_U),
    minimised alternately over the imputed labelings y_U (label switching) and w (SDM), C_u
    raised on a schedule; the model with the best dev score is kept. With ``inner = "owlqn"``
    the w-step is sparse: sum_L H_i + (C_u/C) sum_U H_j + c1 ||w||_1 + ||w||^2 / (2C), H the
    softmax-margin (smoothed hinge), by OWL-QN (Andrew & Gao 2007; Zhu, Xing & Zhang 2009's
    L1-M3N in penalized form). Needs
    ``TrainingProblem.unlabeled``; ``TrainingProblem.constraints`` is optional. See the module
    docstring.
    """

    name = "ssvm-annealing"
    needs_unlabeled = True
    # label-pair templates: switching reads per-position transitions; order 2: it scores the
    # triples too (tagger.learners.solvers.switch_order2)
    label_pairs = True
    progress_counter = ("step", "steps")  # one row per annealing step and round
    params = (
        HINGE_C,  # C_l, the labeled sentences' weight; C_u is a fraction of it
        Param(
            "cu_start",
            0.01,
            float,
            "first C_u of the schedule, as a fraction of C",
            low=0.0,
            low_open=True,
        ),
        Param(
            "cu_end",
            1.0,
            float,
            "last C_u of the schedule, as a fraction of C",
            low=0.0,
            low_open=True,
        ),
        Param("steps", 6, int, "C_u values on the geometric schedule (annealing steps)", low=1),
        Param("rounds", 2, int, "constraint matching + supervised step rounds per C_u", low=1),
        Param(
            "switches",
            5.0,
            float,
            "label-switch proposals per unlabeled token and round (the switch budget)",
            low=0.0,
        ),
        Param(
            "run_moves",
            True,
            bool,
            "half of the proposals move a whole run of equal "
            "labels to a neighbouring run's label (single switches cannot merge two "
            "segments of one field without passing through worse labelings)",
        ),
        Param(
            "switch_tol",
            1e-4,
            float,
            "stop switching when one proposal per unlabeled token "
            "lowered the objective by less than this fraction of it",
            low=0.0,
        ),
        Param(
            "penalty_scale", 1.0, float, "multiply every soft constraint weight by this", low=0.0
        ),
        Param(
            "hard_weight",
            100.0,
            float,
            "penalty weight rho of hard constraints",
            low=0.0,
            low_open=True,
        ),
        Param(
            "inner",
            "sdm",
            str,
            "supervised steps' solver: 'sdm' (L2 SSVM, Sequential Dual Method) or 'owlqn' "
            "(L1 / elastic-net smoothed hinge by OWL-QN: sparse weights; see c1)",
            choices=("sdm", "owlqn"),
        ),
        # c1, tau: the best mean dev accuracy over citations, recipes and chunking (see
        # docs/semi-supervised.md; chunking's 23 labels lose most to warm tau: tau log L)
        Param(
            "c1",
            0.1,
            float,
            "with inner = owlqn: L1 coefficient c1 ||w||_1 against the labeled hinges summed "
            "(m3n-owlqn's scale); the step's L2 term is ||w||^2 / (2 C), the unlabeled "
            "hinges weigh C_u / C",
            low=0.0,
        ),
        Param(
            "tau",
            0.05,
            float,
            "with inner = owlqn: temperature of the smoothed hinge (1: the softmax-margin)",
            low=0.0,
            low_open=True,
        ),
        Param("epochs", 15, int, "SDM passes per supervised step (at most; warm-started)", low=1),
        Param("owlqn_epochs", 50, int, "OWL-QN iterations per step (inner = owlqn)", low=1),
        Param("start_epochs", 50, int, "SDM passes / OWL-QN iterations of the start", low=1),
        # the supervised steps rerun SDM at every C_u, warm-started: shorter visits, a looser
        # gap and more competitors per sentence than m3n-l2 (the citation study's settings)
        replace(MAX_INNER, default=3),
        replace(
            SDM_TOL,
            default=1e-2,
            help="stop a supervised step when its relative duality gap (P - D) / P is at most "
            "this (inner = owlqn: the certified gap of its smoothed objective)",
        ),
        Param(
            "gap_every",
            5,
            int,
            "SDM passes between two duality-gap checks (each check "
            "decodes every weighted sentence once more)",
            low=1,
        ),
        replace(MAX_WORKING_SET, default=64),
        MEMORY,
        SDM_BLOCKS,
        SDM_BLOCK_SIZE,
        Param(
            "restarts",
            1,
            int,
            "independent annealing runs (different seeds for the "
            "SDM visiting order and the label switching); the weights with the best dev "
            "score over all of them are kept",
            low=1,
        ),
        SELECT,
        replace(
            SCHEDULER,
            help="address of a Dask scheduler (tcp://host:8786): each round decodes the "
            "unlabeled sentences on its workers, the same labels as here (empty: in this "
            "process)",
        ),
        replace(
            PARTITIONS,
            help="with a scheduler, parts of whole unlabeled sentences decoded as separate "
            "tasks (0: two per worker)",
        ),
        Param(
            "scratch_dir",
            "",
            str,
            "a directory on a disk with room: the unlabeled "
            "sentences' features, working sets and lattices are memory-mapped files there "
            "(removed at the end), for unlabeled text that does not fit in memory (empty: "
            "in memory)",
        ),
    )

    def validated(self) -> dict:
        settings = super().validated()
        check_scheduler_setting(settings, type(self).__name__)
        where = settings["scratch_dir"]
        if where and not os.path.isdir(where):  # before any data is read
            raise bad_value(
                "scratch_dir",
                "an existing directory on a disk with room (it "
                "holds memory-mapped arrays while training)",
                where,
                type(self).__name__,
            )
        return settings

    def _fit(self, problem: TrainingProblem, settings: dict, seed: int, w0) -> np.ndarray:
        U = getattr(problem, "unlabeled", None)
        if U is None or U.n_sentences == 0:
            raise ParameterError(
                "ssvm-annealing learns from unlabeled sentences: give some "
                "(--unlabeled FILE, or Tagger.fit(..., unlabeled=...))"
            )
        if settings["restarts"] > 1 and (problem.dev_score is None or settings["select"] == "last"):
            raise ParameterError(
                "restarts > 1 chooses among the runs by their dev score: "
                "give a dev set (--dev FILE) and keep select = dev"
            )
        # the objective is not convex: independent runs end in different local minima, and
        # the dev score (never the training objective, which every run lowers) picks among them
        L = problem.model.n_labels
        best = {"score": -math.inf, "w": None, "imputed": np.zeros(L, np.int64)}
        clock = Stopwatch()
        scratch = getattr(problem, "scratch", None) or ScratchSpace()
        if not scratch.on_disk:
            warn_if_short_of_memory(U, problem.model, settings["max_working_set"])
        decoding = unlabeled_decoding(
            problem.model,
            U,
            getattr(problem, "constraints", None),
            settings["scheduler"],
            settings["partitions"],
            scratch,
        )
        try:
            for r in range(settings["restarts"]):
                run_seed = (
                    seed
                    if r == 0
                    else int(np.random.SeedSequence([seed, r]).generate_state(1)[0] % (2**31 - 1))
                )
                self._anneal(
                    problem,
                    U,
                    settings,
                    run_seed,
                    best,
                    clock,
                    r if settings["restarts"] > 1 else None,
                    decoding,
                    scratch,
                )
        finally:
            decoding.close()
        # where each label was learned from: tokens of the labeled sentences, and tokens of the
        # unlabeled ones the kept model was trained on with that imputed label
        self.evidence_ = {
            "labeled": np.bincount(np.asarray(problem.y), minlength=L).tolist(),
            "imputed": best["imputed"].tolist(),
        }
        return best["w"]

    def _anneal(
        self,
        problem: TrainingProblem,
        U: Featurized,
        settings: dict,
        seed: int,
        best: dict,
        clock: Stopwatch,
        restart: int | None,
        decoding,
        scratch: ScratchSpace,
    ) -> None:
        """One annealing run from the supervised start; ``best`` keeps the weights with the
        best dev score over every run so far."""
        model, XL = problem.model, problem.X
        L = model.n_labels
        nL, nU = XL.n_sentences, U.n_sentences
        y = np.concatenate([np.asarray(problem.y, np.int32), np.zeros(U.n_tokens, np.int32)])
        Cl = settings["C"]
        Cvec = np.concatenate([np.full(nL, Cl), np.zeros(nU)])
        solver = supervised_step(model, XL, U, y, Cvec, settings, seed, scratch)
        cons = getattr(problem, "constraints", None)
        rng = np.random.default_rng(seed)
        uo = U.offsets
        seq_of = np.repeat(np.arange(nU, dtype=np.int64), np.diff(uo))
        NU = U.n_tokens
        # second order: the switching lattices' rows have a column per allowed label pair
        lat = None if model.second is None else model.lattice
        width = L if lat is None else len(lat.pair_a)
        M = scratch.zeros("max-marginals", (NU, L))
        fwd = scratch.zeros("forward", (NU, width))
        bwd = scratch.zeros("backward", (NU, width))
        top = np.zeros(nU)
        yU = np.zeros(NU, np.int32)
        # label-pair templates: every unlabeled token's transitions, rescored each round
        edge = None if not model.n_pair else scratch.zeros("transitions", (NU, L, L))
        UB = None if not model.n_pair else FeatureBatch.of(U)

        def evaluate(row: dict, w: np.ndarray) -> None:
            if restart is not None:
                row = {"restart": restart, **row}
            if problem.dev_score is not None:
                row.update(problem.dev_score(w))
            report = getattr(problem, "report_score", None)
            if report is not None:
                row.update(
                    {
                        ("test_" + k[4:] if k.startswith("dev_") else "test_" + k): v
                        for k, v in report(w).items()
                    }
                )
            score = _selection_score(row)
            if settings["select"] == "last" or score > best["score"]:
                best["score"], best["w"] = score, w.copy()
                # the supervised start (step 0) was trained on no imputed label
                best["imputed"] = (
                    np.bincount(yU, minlength=L)
                    if row.get("step", 0) > 0
                    else np.zeros(L, np.int64)
                )
                row["selected"] = True
            row["time"] = round(clock(), 2)
            self.report(problem, row)

        res = solve_step(solver, settings, start=True)
        w = solver.weights()
        evaluate(
            {
                "step": 0,
                "C_u": 0.0,
                "objective": res.primal,
                "gap": res.gap,
                "nonzero": int(np.count_nonzero(w)),
            },
            w,
        )
        steps = settings["steps"]
        lo, hi = settings["cu_start"] * Cl, settings["cu_end"] * Cl
        schedule = [lo] if steps == 1 else list(np.geomspace(lo, hi, steps))
        for step, cu in enumerate(schedule, 1):
            for rnd in range(1, settings["rounds"] + 1):
                t_match = clock()
                w = solver.weights()
                # start from the best labeling meeting every hard rule the expanded-state
                # Viterbi enforces (exact); the switching below weighs in everything else
                state, yU[:] = decoding(w)
                trans = np.ascontiguousarray(model.transitions(w))
                if edge is not None:
                    pair_edges_batch(model.pair_layout, UB, w, trans, edge)
                o2 = None
                if lat is not None:
                    o2 = (lat.pair_a, lat.pair_b, lat.pair_id, lat.pred_ptr, lat.pred_src)
                    o2 = (*o2, entry_scores(lat, w))
                n_viterbi_violations = 0.0
                stats = np.zeros(3)
                all_max_marginals(state, trans, edge, yU, uo, M, fwd, bwd, top, o2)
                F = path_scores(state, trans, yU, uo, edge, o2)
                hinge = float(np.maximum(top - F, 0.0).sum())
                if cons is not None:
                    vs = ViolationState(
                        cons.compiled,
                        cons.indicators,
                        yU,
                        hard_weight=settings["hard_weight"],
                        scale=settings["penalty_scale"],
                    )
                    # hard weights must not be scaled by penalty_scale
                    vs.rho = np.where(cons.compiled.hard, settings["hard_weight"], vs.rho)
                    vs.crho = np.where(cons.compiled.chard, settings["hard_weight"], vs.crho)
                    pen0 = vs.penalty()
                    n_viterbi_violations = float(_violations(vs))
                    rules, counts = vs.records()
                else:
                    pen0 = 0.0
                    rules, counts = no_constraints(NU, uo, L)
                plan = SwitchPlan(
                    int(settings["switches"] * NU),
                    max(NU, 1),
                    settings["switch_tol"],
                    int(rng.integers(2**31 - 1)),
                    settings["run_moves"],
                )
                label_switching(
                    SwitchLattice(state, trans, edge, M, fwd, bwd, top, o2),
                    yU,
                    uo,
                    seq_of,
                    cu,
                    rules,
                    counts,
                    cu * hinge + pen0,
                    plan,
                    stats,
                )
                pen1 = vs.penalty() if cons is not None else 0.0
                y_new = y.copy()
                y_new[XL.n_tokens :] = yU
                Cvec[nL:] = cu
                changed = solver.set_labels(y_new)
                y = y_new
                t_solve = clock()
                res = solve_step(solver, settings, C=Cvec)
                t_solve = clock() - t_solve
                t_match = clock() - t_match - t_solve
                w = solver.weights()
                row = {
                    "step": step,
                    "round": rnd,
                    "C_u": float(cu),
                    "objective": res.primal,
                    "gap": res.gap,
                    "switches": int(stats[0]),
                    "proposals": int(stats[1]),
                    "penalty_viterbi": pen0,
                    "penalty": pen1,
                    "violations_viterbi": n_viterbi_violations,
                    "violations": float(_violations(vs)) if cons is not None else 0.0,
                    "changed": int(changed),
                    "nonzero": int(np.count_nonzero(w)),
                    "match_time": round(t_match, 2),
                    "solve_time": round(t_solve, 2),
                }
                evaluate(row, w)
                if changed == 0 and rnd > 1:
                    break
        if best["w"] is None:  # no dev set and select = "dev": the last weights
            best["w"] = solver.weights()
            best["imputed"] = np.bincount(yU, minlength=L)


def _selection_score(row: dict) -> float:
    for key in ("dev_f1", "dev_acc"):
        if key in row:
            return float(row[key])
    return -math.inf


def _violations(vs: ViolationState) -> float:
    cc = vs.cc
    d = np.maximum(vs.phi - cc.hi, 0) + np.maximum(cc.lo - vs.phi, 0)
    return float(d.sum())
