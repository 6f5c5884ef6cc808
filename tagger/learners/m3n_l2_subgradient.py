"""``m3n-l2-subgradient``: the L2 M3N by stochastic subgradient with Pegasos steps, the
baseline of the L1-M3N (its loop is that of :mod:`tagger.learners.m3n_subgradient`).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from tagger.learners.base import Param
from tagger.learners.m3n_subgradient import M3NSubgradient
from tagger.learners.params import BATCH_GROWTH, BATCH_SIZE, EPOCHS, ETA0, MOMENTUM, SHUFFLE


class L2Shrink:
    def __init__(self, lam: float):
        self.lam = lam
        self.bound = 1.0 / math.sqrt(lam)

    def __call__(self, w, eta):
        w *= max(0.0, 1.0 - eta * self.lam)

    def project(self, w):
        norm = float(np.sqrt(w @ w))
        if norm > self.bound:
            w *= self.bound / norm


class M3NL2Subgradient(M3NSubgradient):
    """L2 M3N by stochastic subgradient with Pegasos steps (the baseline of the L1-M3N).

    Objective: min_w (lambda/2)||w||^2 + (1/N) sum_i R_i(w). Steps eta_t = 1/(lambda (t0 + t)),
    t counting updates, t0 = 1/(lambda eta0) so that the first step is eta0 rather than the
    1/lambda of plain Pegasos (which throws the first iterates far off on large data).
    """

    name = "m3n-l2-subgradient"
    strength = ("lambda", 1)  # the regularization parameter, +1: larger is stronger
    penalty = "l2"
    params = (
        Param("lambda", 1e-4, float, "L2 regularization strength lambda", low=0.0, low_open=True),
        replace(EPOCHS, default=30),  # each online learner sets its own number of passes
        # the first step of a 1/t schedule (eta0 / (1 + t / t0)): half the L1 learner's, which
        # decays as 1/sqrt(t)
        replace(ETA0, default=20.0),
        BATCH_SIZE,
        BATCH_GROWTH,
        MOMENTUM,
        SHUFFLE,
    )

    def _penalty(self, settings, n_weights):
        return L2Shrink(settings["lambda"])

    def _step_rule(self, settings, n_sentences, width):
        lam = settings["lambda"]
        t0 = width / (lam * settings["eta0"])
        updates = [0]

        def step_of(batch: int) -> float:
            step = 1.0 / (lam * (t0 + updates[0]))
            updates[0] += 1
            return step

        return step_of

    def _objective(self, hinge, w, settings):
        return 0.5 * settings["lambda"] * float(w @ w) + hinge
