"""The supervised step of ``ssvm-annealing``: its solver, chosen by the ``inner`` setting, over
the labeled and the unlabeled sentences.

- ``inner = "sdm"``: the L2 structural SVM by the Sequential Dual Method
  (:class:`~tagger.learners.solvers.sdm_solver.SDMSolver`) on the labeled and unlabeled
  sentences joined into one batch, per-sentence weights C (labeled) and C_u (unlabeled)::

      (1/2)||w||^2 + C sum_L R_i(w) + C_u sum_U R_j(w; y_j)

- ``inner = "owlqn"``: the sparse step of :mod:`tagger.learners.solvers.sparse_step`, that
  objective divided by C, its hinges smoothed (the softmax-margin) and an L1 term added::

      sum_L H_i(w) + (C_u / C) sum_U H_j(w; y_j) + c1 ||w||_1 + (1 / (2 C)) ||w||^2

  so C keeps its meaning (the L2 term against the hinges), C_u / C is the schedule's fraction
  and c1 is on the scale of ``m3n-owlqn``'s (the labeled hinges summed with weight 1). It is
  solved in those units times C (weights C and C_u, L1 coefficient c1 C, L2 coefficient 1/2):
  the same minimiser, and the trace's objectives on SDM's scale.

Both solvers live for the whole annealing run and are warm-started step after step: SDM from
its duals (sentences whose labeling changed lose theirs), OWL-QN from the last weights and
L-BFGS pairs.
"""

from __future__ import annotations

import numpy as np

from tagger.chain import ChainModel, Featurized
from tagger.io.scratch import ScratchSpace
from tagger.learners.solvers.sdm_solver import SDMSolver
from tagger.learners.solvers.sparse_step import SparseStep


def joined(X1: Featurized, X2: Featurized, scratch: ScratchSpace) -> Featurized:
    """The labeled and the unlabeled sentences as one batch (in ``scratch``)."""

    def cat(name, a, b, shift=0):
        out = scratch.zeros(name, len(a) + len(b), a.dtype)
        out[: len(a)] = a
        out[len(a) :] = b
        if shift:
            out[len(a) :] += shift
        return out

    indptr = cat("indptr", X1.indptr, X2.indptr[1:], X1.indptr[-1])
    attrs = cat("attrs", X1.attrs, X2.attrs)
    offsets = cat("offsets", X1.offsets, X2.offsets[1:], X1.offsets[-1])
    kwargs = {}
    v1, v2 = X1.vals, X2.vals
    if v1.shape[0] or v2.shape[0]:
        ones1 = v1 if v1.shape[0] else np.ones(len(X1.attrs))
        ones2 = v2 if v2.shape[0] else np.ones(len(X2.attrs))
        kwargs["values"] = np.concatenate([ones1, ones2])
    return Featurized(indptr, attrs, offsets, **kwargs)


def supervised_step(
    model: ChainModel,
    XL: Featurized,
    U: Featurized,
    y: np.ndarray,
    C: np.ndarray,
    settings: dict,
    seed: int,
    scratch: ScratchSpace,
) -> SDMSolver | SparseStep:
    """The solver of the supervised steps (see the module docstring); ``y`` and ``C`` cover
    the labeled sentences, then the unlabeled ones."""
    if settings["inner"] == "owlqn":
        step = SparseStep(
            model,
            XL,
            U,
            y,
            c1=settings["c1"] * settings["C"],
            c2=0.5,
            tau=settings["tau"],
            memory=settings["memory"],
        )
        step.set_example_weights(C)
        return step
    return SDMSolver(
        model,
        joined(XL, U, scratch),
        y,
        C=C,
        max_working_set=settings["max_working_set"],
        max_inner=settings["max_inner"],
        seed=seed,
        scratch=scratch,
        blocks=settings["blocks"],
        block_size=settings["block_size"],
    )


def solve_step(solver: SDMSolver | SparseStep, settings: dict, start: bool = False, C=None):
    """One supervised step: at most ``start_epochs`` (the supervised start) or ``epochs`` SDM
    passes, ``owlqn_epochs`` OWL-QN iterations, stopping at the relative duality gap ``tol``;
    the result has ``primal`` and ``gap``. OWL-QN's iterations are each about one pass over
    the data, and a step needs more of them than SDM passes (the measurements of
    docs/semi-supervised.md)."""
    if isinstance(solver, SparseStep):
        budget = settings["start_epochs" if start else "owlqn_epochs"]
        return solver.solve(budget, settings["tol"], C=C)
    budget = settings["start_epochs" if start else "epochs"]
    return solver.solve(budget, settings["tol"], C=C, check_every=settings["gap_every"])
