"""The sparse supervised step of ``ssvm-annealing`` (``inner = "owlqn"``): a weighted L1 /
elastic-net max-margin objective over the labeled sentences and the unlabeled ones with their
imputed labelings, solved by OWL-QN with exact zeros.

Objective, for a labeled set L with weight a_L, an unlabeled set U with imputed labelings y_j
and weight a_U::

    P(w) = a_L sum_{i in L} H_i(w) + a_U sum_{j in U} H_j(w; y_j) + c1 ||w||_1 + c2 ||w||^2
    H_i(w) = tau log sum_y exp((F(x_i, y; w) + cost * hamming(y_i, y)) / tau) - F(x_i, y_i; w)

H_i the structured hinge smoothed at temperature tau (the softmax-margin at tau = 1; the
first stage of ``m3n-owlqn``, :mod:`tagger.learners.m3n_owlqn`), computed by the CRF
objective's forward-backward pass (:class:`~tagger.learners.solvers.crf_objective.CRFObjective`
with a Hamming cost and a temperature), one objective per set so that each set keeps its own
weight. OWL-QN (Andrew & Gao, ICML 2007; :mod:`tagger.learners.solvers.owlqn`) minimises it.

Certificate. With c2 > 0 the step stops once the Fenchel-Young gap of P's own (smoothed)
objective is at most ``tol`` of P: for g the gradient of the weighted smoothed hinges at w and
r(w) = c1 ||w||_1 + c2 ||w||^2, weak duality gives ``P(w) - min P <= r(w) + r*(-g) + w . g``
with ``r*(v) = sum_k max(0, |v_k| - c1)^2 / (4 c2)``, the conjugate of r (the dual point is
the smoothed model's own distributions at w, whose entropy terms cancel between P and D). The
gap is 0 exactly at the optimum, so a small one certifies the step's weights. With c2 = 0 no
finite certificate of this form exists and the step stops on ``epochs`` or when OWL-QN finds
no descent.

Warm start. The object lives for the whole annealing run: each step starts from the weights
of the step before and from its L-BFGS pairs. The pairs are curvature of a nearby function
(a few labelings changed, a_U rose by the schedule's ratio); every kept pair has positive
curvature, so the quasi-Newton directions stay descent directions and the optimum reached is
the one of the current objective, whatever the pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tagger.chain import ChainModel, Featurized
from tagger.learners.solvers.crf_base import with_l2
from tagger.learners.solvers.crf_objective import CRFObjective
from tagger.learners.solvers.owlqn import OWLQN, dot, l1_norm


@dataclass
class StepResult:
    """Where a :meth:`SparseStep.solve` call ended."""

    epochs: int  # OWL-QN iterations made by this call
    primal: float  # P(w), the smoothed objective above
    dual: float  # P(w) minus the certified gap (-inf without one: c2 = 0)
    gap: float  # (P - D) / max(P, tiny)
    converged: bool  # gap <= tol


class SparseStep:
    """The weighted L1 / elastic-net smoothed-hinge objective over labeled sentences ``XL``
    (labels: the first ``XL.n_tokens`` of ``y``) and unlabeled ones ``U`` (imputed labels: the
    rest of ``y``), minimised by warm-started OWL-QN; see the module docstring."""

    def __init__(
        self,
        model: ChainModel,
        XL: Featurized,
        U: Featurized,
        y: np.ndarray,
        c1: float,
        c2: float,
        tau: float = 1.0,
        cost: float = 1.0,
        memory: int = 6,
    ):
        y = np.ascontiguousarray(y, dtype=np.int32)
        self.nL, self.NL = XL.n_sentences, XL.n_tokens
        self.parts = (CRFObjective(model, XL, y[: self.NL]), CRFObjective(model, U, y[self.NL :]))
        for part in self.parts:
            part.cost, part.temperature = cost, tau
        self.c1, self.c2, self.memory = float(c1), float(c2), int(memory)
        self.weights_of_parts = (1.0, 0.0)
        self.w = np.zeros(model.n_weights)
        self._pairs: tuple | None = None
        self._offsets = np.asarray(U.offsets)

    def hinges(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        """The weighted smoothed hinges a_L sum_L H_i + a_U sum_U H_j at ``w`` and their
        gradient (a part of weight 0 is not evaluated)."""
        total, grad = 0.0, None
        for part, a in zip(self.parts, self.weights_of_parts):
            if a == 0.0:
                continue
            f, g = part(w)
            if a != 1.0:
                g *= a
            total += a * f
            grad = g if grad is None else np.add(grad, g, out=grad)
        return total, (np.zeros_like(w) if grad is None else grad)

    def set_labels(self, y: np.ndarray) -> int:
        """New imputed labelings (the labeled part of ``y`` must not change). Returns how many
        unlabeled sentences' labelings changed."""
        yU = np.asarray(y[self.NL :], dtype=np.int32)
        gold = self.parts[1].gold
        changed = np.flatnonzero(yU != gold)
        gold[:] = yU
        return len(np.unique(np.searchsorted(self._offsets, changed, side="right") - 1))

    def set_example_weights(self, C: np.ndarray) -> None:
        """Sentence weights, one per labeled then unlabeled sentence: each part takes one
        weight (its first sentence's) and must be uniform."""
        C = np.asarray(C, dtype=np.float64)
        aL = float(C[0]) if self.nL else 0.0
        aU = float(C[self.nL]) if len(C) > self.nL else 0.0
        if not (np.all(C[: self.nL] == aL) and np.all(C[self.nL :] == aU)):
            raise ValueError("the sparse step weighs all labeled and all unlabeled sentences alike")
        self.weights_of_parts = (aL, aU)

    def weights(self) -> np.ndarray:
        return self.w.copy()

    def certificate(self, w: np.ndarray, g: np.ndarray) -> float:
        """The Fenchel-Young gap r(w) + r*(-g) + w . g (``g`` the gradient of the weighted
        hinges at w): an upper bound on P(w) - min P; inf when c2 = 0."""
        if self.c2 <= 0.0:
            return np.inf
        excess = np.maximum(np.abs(g) - self.c1, 0.0)
        return max(
            0.0,
            self.c1 * l1_norm(w)
            + self.c2 * dot(w, w)
            + dot(excess, excess) / (4.0 * self.c2)
            + dot(w, g),
        )

    def solve(self, epochs: int, tol: float, C: np.ndarray | None = None) -> StepResult:
        """At most ``epochs`` OWL-QN iterations from the current weights, stopping once the
        certified relative gap is at most ``tol`` (or OWL-QN finds no descent)."""
        if C is not None:
            self.set_example_weights(C)
        opt = OWLQN(with_l2(self.hinges, self.c2), self.w, self.c1, self.memory)
        if self._pairs is not None:
            opt.load_memory(self._pairs)
        done, gap = 0, self._gap(opt)
        while gap > tol and done < epochs:
            moved = opt.step()
            done += 1
            gap = self._gap(opt)
            if not moved:
                break
        self.w = opt.w
        self._pairs = opt.memory()
        primal = float(opt.objective)
        absolute = gap * max(abs(primal), 1e-300)
        return StepResult(done, primal, primal - absolute, gap, bool(gap <= tol))

    def _gap(self, opt: OWLQN) -> float:
        """The relative certified gap at OWL-QN's iterate (its smooth gradient holds the L2
        term's 2 c2 w, taken off here)."""
        g = opt.g - (2.0 * self.c2) * opt.w
        return self.certificate(opt.w, g) / max(abs(float(opt.objective)), 1e-300)
