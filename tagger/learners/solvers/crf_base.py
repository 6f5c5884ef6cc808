"""What the CRF learners share: their base class (the likelihood objective of
:mod:`tagger.learners.solvers.crf_objective`, progress rows, probabilistic scores) and the
quasi-Newton settings of ``crf-l2`` and ``crf-l1``, and the L2 term that ``crf-l2`` and the
elastic nets of the L1 learners add to the likelihood.

Both sum the likelihood over sentences (no 1/N), exactly CRFsuite's scaling, so equal c1/c2
give equal objectives. Both stop as CRFsuite does: when the objective decreased by less than a
relative ``delta`` over the last ``period`` iterations, or after ``epochs`` iterations. One
progress row per iteration: objective, likelihood term, non-zeros, gradient evaluations.
"""

from __future__ import annotations

import numpy as np

from tagger.learners.base import Learner, TrainingProblem
from tagger.learners.params import DELTA, MEMORY, PERIOD, QN_EPOCHS, START_END
from tagger.learners.solvers.crf_objective import CRFObjective
from tagger.learners.solvers.dask_client import check_scheduler_setting
from tagger.learners.solvers.owlqn import dot

#: the settings of the quasi-Newton loop (after the learner's own regularization settings)
QUASI_NEWTON = (QN_EPOCHS, MEMORY, DELTA, PERIOD, START_END)


def with_l2(fun, c2: float):
    """``fun`` (w -> (L(w), grad L(w))) plus c2 ||w||^2: the smooth part of an elastic net,
    as CRFsuite adds it before OWL-QN. ``fun`` itself when c2 = 0."""
    if c2 == 0.0:
        return fun

    def value_grad(w):
        f, g = fun(w)
        g += 2.0 * c2 * w  # g is the objective's own fresh array
        return f + c2 * dot(w, w), g

    return value_grad


class CRFLearner(Learner):
    """What the CRF learners share: the objective, progress rows, the model is probabilistic."""

    #: the model's scores define p(y | x): marginals are probabilities
    probabilistic = True

    def validated(self) -> dict:
        settings = super().validated()
        check_scheduler_setting(settings, type(self).__name__)
        return settings

    def _objective_fn(self, problem: TrainingProblem, settings: dict):
        """The objective over ``problem``'s sentences: here, or with a ``scheduler`` on the
        workers of a Dask cluster (the same bits,
        :mod:`~tagger.learners.solvers.distributed_objective`; the sentences are sent once per
        problem, and :meth:`release` lets them go)."""
        fixed = () if settings.get("start_end", True) else ("ends",)
        scheduler = settings.get("scheduler")
        if not scheduler:
            return CRFObjective(problem.model, problem.X, problem.y, fixed=fixed)
        from tagger.learners.solvers.distributed_objective import Cluster

        cluster = getattr(self, "_cluster", None)
        if cluster is None or cluster.scheduler != scheduler:
            self.release()
            cluster = self._cluster = Cluster(scheduler)
        return cluster.objective(problem, fixed, settings["partitions"])

    def release(self) -> None:
        """Close the connection to a cluster and let the sentences sent there go."""
        cluster = getattr(self, "_cluster", None)
        if cluster is not None:
            self._cluster = None
            cluster.close()

    def _row(self, problem, iteration, objective, nll, w, evals, clock, **extra) -> None:
        row = {
            "epoch": iteration,
            "objective": float(objective),
            "nll": float(nll),
            "nonzero": int(np.count_nonzero(w)),
            "grad_evals": int(evals),
        }
        # every evaluation of crf-l1 / crf-l2 is a gradient over all weights
        row.setdefault("full_grads", int(evals))
        row.update(extra)
        if problem.dev_score is not None:
            row.update(problem.dev_score(w))
        row["time"] = round(clock(), 2)
        self.report(problem, row)
