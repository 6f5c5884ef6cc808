"""A smoothed form of the large-margin LP's whole objective, minimized to warm-start the LP
learners (``lp-simplex``, ``lp-extragradient``) before column generation.

The LP of Wang, Shawe-Taylor & Szedmak (AISTATS 2009) over all labelings is

    P(w) = 1.w + C sum_i [1 - (F(x_i, y_i) - max_{y != y_i} F(x_i, y))]_+ ,   w >= 0.

Column generation started from w = 0 meets a lattice where every labeling ties, so each round's
rows are arbitrary labelings and its LP solutions jump between far-apart vertices (measured in
docs/lp_paper.md). Started near the optimum instead, the separation returns the competitors
that bind there. To get near it cheaply, both maxima are smoothed at a temperature tau:

    max_{y != y_i} F(y)   ->  M_i = tau log sum_{y != y_i} exp(F(y) / tau)
    [z]_+                 ->  tau log(1 + exp(z / tau))

    P_tau(w) = 1.w + C sum_i tau log(1 + exp((1 + M_i - F(x_i, y_i)) / tau)),

a smooth convex function with P_tau >= P and P_tau - P <= C sum_i tau (log 2 + T_i log L).
With p_i = P_tau(y_i | x_i), the gold labeling's probability in the chain distribution at
temperature tau, and q_i = 1 - p_i, the sum over y != y_i is Z_i q_i, so

    term_i = tau [log(p_i + q_i e^{1/tau}) - log p_i]
    d term_i / dw = k_i (E_{p}[f] - f(x_i, y_i)),   k_i = 1 / (q_i + p_i e^{-1/tau}),

forms that stay finite when p_i rounds to 1 (the sentence is far beyond the margin). The
expectations come from the CRF's forward-backward kernel at temperature tau. Minimized under
w >= 0 by L-BFGS-B, with tau lowered step by step, each stage warm-started from the last.
"""

from __future__ import annotations

import math

import numpy as np

from tagger._config import NUMBA_PARALLEL_OPTS
from tagger.chain import ChainModel, FeatureBatch, fb_tables, scatter_expectations
from tagger.jit import njit, prange
from tagger.learners.solvers.crf_objective import (
    chunk_buffers,
    fixed_chunks,
    sentence_log_z,
    sum_rows_into,
)


@njit(**NUMBA_PARALLEL_OPTS)
def _smoothed_hinge_grad(layout, X, w, trans, gold, chunk_bounds, inv_tau, grad_buf, value_buf):
    """Per chunk of sentences: the sum of the smoothed terms (in units of tau) into
    ``value_buf[c]`` and their gradient into ``grad_buf[c]``. ``trans`` arrives scaled by
    1/tau."""
    L = trans.shape[0]
    n_chunks = chunk_bounds.shape[0] - 1
    offsets = X.offsets
    tables = fb_tables(trans)
    e_inv = math.exp(inv_tau)
    e_neg = math.exp(-inv_tau)
    for c in prange(n_chunks):
        g = grad_buf[c]
        g[:] = 0.0
        s0 = chunk_bounds[c]
        s1 = chunk_bounds[c + 1]
        buffers, node, state, edge = chunk_buffers(offsets, s0, s1, L)
        value = 0.0
        for s in range(s0, s1):
            a = offsets[s]
            b = offsets[s + 1]
            T = b - a
            if T == 0:
                continue
            log_z, gold_score = sentence_log_z(
                layout, X, w, a, b, gold, trans, tables, (buffers, state, node, edge), 0.0, inv_tau
            )
            log_p = min(gold_score - log_z, 0.0)
            p = math.exp(log_p)
            q = -math.expm1(log_p)
            value += math.log(p + q * e_inv) - log_p
            scatter_expectations(layout, X, a, b, gold, node, edge, 1.0 / (q + p * e_neg), g)
        value_buf[c] = value


class SmoothedLPObjective:
    """``P_tau(w)`` and its gradient over a training set (module docstring); ``temperature``
    is tau."""

    def __init__(self, model: ChainModel, X, y: np.ndarray, C: float):
        self.model, self.X, self.C = model, X, C
        self.gold = np.ascontiguousarray(y, dtype=np.int32)
        self.batch = FeatureBatch(
            X.indptr, X.attrs, np.ascontiguousarray(X.vals, np.float64), X.offsets
        )
        self.bounds = fixed_chunks(X.offsets, model.n_weights)
        n_chunks = len(self.bounds) - 1
        self.grad_buf = np.empty((n_chunks, model.n_weights))
        self.value_buf = np.empty(n_chunks)
        self.temperature = 1.0
        self.n_evals = 0

    def __call__(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        tau = self.temperature
        w = np.ascontiguousarray(w, dtype=np.float64)
        trans = np.ascontiguousarray(self.model.transitions(w)) * (1.0 / tau)
        _smoothed_hinge_grad(
            self.model.layout,
            self.batch,
            w,
            trans,
            self.gold,
            self.bounds,
            1.0 / tau,
            self.grad_buf,
            self.value_buf,
        )
        self.n_evals += 1
        grad = np.empty(self.model.n_weights)
        sum_rows_into(self.grad_buf, grad)
        grad *= self.C
        grad += 1.0
        return float(w.sum() + self.C * tau * self.value_buf.sum()), grad
