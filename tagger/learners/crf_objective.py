"""The CRF negative log-likelihood and its gradient, shared by every CRF learner.

For sentences ``(x_i, y_i)`` and the chain model of ``tagger.model`` (ALGORITHMS.md 0)::

    L(w)      = sum_i log Z(x_i) - F(x_i, y_i; w)
    dL/dw_k   = sum_i E_{p(y|x_i)}[f_k(x_i, y)] - f_k(x_i, y_i)

Summed over sentences, not averaged: the same scale as CRFsuite, so ``c2 ||w||^2`` and
``c1 ||w||_1`` added by the learners give CRFsuite's objectives at equal c1 / c2.

The state scores come from the model's per-sentence kernel, log Z and the marginals from the
forward-backward kernel of ``tagger.inference._chain``, both called sentence by sentence inside
one parallel region (a single pass over the data per evaluation); the kernel here only scatters
``marginal - gold`` into the gradient, in parallel over chunks of sentences (one gradient
buffer per chunk, summed afterwards, so the result does not depend on thread timing).
Attribute values (``Featurized.values``, real-valued features) are honoured: an empty array
means every attribute is an indicator with value 1.
"""

from __future__ import annotations

import numba
import numpy as np

from tagger._config import NUMBA_PARALLEL_OPTS
from tagger.features import Featurized
from tagger.inference._chain import _fb_one, _fb_prepare
from tagger.model import ChainModel, _sentence_state_scores


@numba.njit(**NUMBA_PARALLEL_OPTS)
def _nll_grad(indptr, attrs, vals, offsets, attr_ptr, param_label, w, trans, gold,
              n_state, chunk_bounds, grad_buf, nll_buf):
    """nll_buf[c] and grad_buf[c] = the chunk's NLL and gradient (sentences
    chunk_bounds[c]..chunk_bounds[c+1]-1); both overwritten."""
    L = trans.shape[0]
    n_chunks = chunk_bounds.shape[0] - 1
    t_off = n_state
    s_off = n_state + L * L
    e_off = s_off + L
    has_vals = vals.shape[0] > 0
    et = np.empty((L, L), dtype=np.float64)
    et_t = np.empty((L, L), dtype=np.float64)
    cm = np.empty(L, dtype=np.float64)
    _fb_prepare(trans, et, et_t, cm)
    for c in numba.prange(n_chunks):
        g = grad_buf[c]
        g[:] = 0.0
        s0 = chunk_bounds[c]
        s1 = chunk_bounds[c + 1]
        tmax = 1
        for s in range(s0, s1):
            if offsets[s + 1] - offsets[s] > tmax:
                tmax = offsets[s + 1] - offsets[s]
        A = np.empty((tmax, L), dtype=np.float64)
        B = np.empty((tmax, L), dtype=np.float64)
        ES = np.empty((tmax, L), dtype=np.float64)
        node = np.empty((tmax, L), dtype=np.float64)
        state = np.empty((tmax, L), dtype=np.float64)
        edge = np.empty((L, L), dtype=np.float64)
        vec = np.empty((3, tmax), dtype=np.float64)
        wk = np.empty(L, dtype=np.float64)
        nll = 0.0
        for s in range(s0, s1):
            a = offsets[s]
            b = offsets[s + 1]
            T = b - a
            if T == 0:
                continue
            st = state[:T]
            _sentence_state_scores(indptr, attrs, vals, attr_ptr, param_label, w, a, b,
                                   n_state, L, st)
            log_z = _fb_one(st, trans, et, et_t, cm, node[:T], edge, A, B, ES,
                            vec[0], vec[1], vec[2], wk)
            gold_score = st[0, gold[a]]
            for i in range(a + 1, b):
                gold_score += st[i - a, gold[i]] + trans[gold[i - 1], gold[i]]
            nll += log_z - gold_score
            for i in range(a, b):
                nt = node[i - a]
                yi = gold[i]
                for j in range(indptr[i], indptr[i + 1]):
                    v = vals[j] if has_vals else 1.0
                    at = attrs[j]
                    for p in range(attr_ptr[at], attr_ptr[at + 1]):
                        lab = param_label[p]
                        if lab == yi:
                            g[p] += v * (nt[lab] - 1.0)
                        else:
                            g[p] += v * nt[lab]
                if i > a:
                    g[t_off + gold[i - 1] * L + yi] -= 1.0
            for i in range(L):
                for j in range(L):
                    g[t_off + i * L + j] += edge[i, j]
                g[s_off + i] += node[0, i]
                g[e_off + i] += node[T - 1, i]
            g[s_off + gold[a]] -= 1.0
            g[e_off + gold[b - 1]] -= 1.0
        nll_buf[c] = nll


def _balanced_chunks(offsets: np.ndarray, n_chunks: int) -> np.ndarray:
    """Sentence boundaries of ``n_chunks`` chunks holding about equal numbers of tokens."""
    n = len(offsets) - 1
    n_chunks = max(1, min(n_chunks, n))
    targets = offsets[-1] * np.arange(1, n_chunks) / n_chunks
    cuts = np.searchsorted(offsets, targets)
    bounds = np.concatenate([[0], cuts, [n]]).astype(np.int64)
    return np.maximum.accumulate(bounds)


class CRFObjective:
    """``L(w)`` and ``grad L(w)`` over a training set; counts its evaluations.

    ``fixed`` names weight blocks held at zero (their gradient is reported as 0): ``"ends"``
    freezes the start and end weights, which reproduces CRFsuite's model (it has none).
    """

    def __init__(self, model: ChainModel, X: Featurized, y: np.ndarray, fixed: tuple = ()):
        self.model, self.X = model, X
        self.gold = np.ascontiguousarray(y, dtype=np.int32)
        self.vals = np.ascontiguousarray(X.vals, dtype=np.float64)
        self.n_weights = model.n_weights
        chunks = 2 * numba.get_num_threads()
        self.bounds = _balanced_chunks(X.offsets, chunks)
        self.grad_buf = np.empty((len(self.bounds) - 1, self.n_weights))
        self.nll_buf = np.empty(len(self.bounds) - 1)
        self.free = np.ones(self.n_weights, dtype=bool)
        if "ends" in fixed:
            L = model.n_labels
            self.free[model.n_state + L * L:] = False
        self.n_evals = 0

    def __call__(self, w: np.ndarray, grad: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """(L(w), grad L(w)); ``grad`` is filled in place when given."""
        model, X = self.model, self.X
        w = np.ascontiguousarray(w, dtype=np.float64)
        if grad is None:
            grad = np.empty(self.n_weights)
        trans = np.ascontiguousarray(model.transitions(w))
        _nll_grad(X.indptr, X.attrs, self.vals, X.offsets, model.attr_ptr, model.param_label,
                  w, trans, self.gold, model.n_state, self.bounds, self.grad_buf,
                  self.nll_buf)
        np.sum(self.grad_buf, axis=0, out=grad)
        if not self.free.all():
            grad[~self.free] = 0.0
        self.n_evals += 1
        return float(self.nll_buf.sum()), grad
