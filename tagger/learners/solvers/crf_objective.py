"""The CRF negative log-likelihood and its gradient, shared by every CRF learner.

For sentences ``(x_i, y_i)`` and the chain model of :mod:`tagger.chain` (docs/algorithms.md
section 0)::

    L(w)      = sum_i log Z(x_i) - F(x_i, y_i; w)
    dL/dw_k   = sum_i E_{p(y|x_i)}[f_k(x_i, y)] - f_k(x_i, y_i)

Summed over sentences, not averaged: the same scale as CRFsuite, so ``c2 ||w||^2`` and
``c1 ||w||_1`` added by the learners give CRFsuite's objectives at equal c1 / c2.

The state scores come from the model's per-sentence kernel, log Z and the marginals from the
forward-backward kernel, both called sentence by sentence inside one parallel region (a single
pass over the data per evaluation); :func:`tagger.chain.scatter_expectations` scatters
``marginal - gold`` into the gradient, in parallel over chunks of sentences: one gradient
buffer per chunk, summed afterwards in chunk order (:func:`sum_rows_into`). The chunks are cut
by the data alone (:func:`fixed_chunks`), never by the number of threads, and each is summed
by one thread in sentence order, so the objective, its gradient and the weights trained from
them are the same bits whatever the number of threads.
Attribute values (``Featurized.values``, real-valued features) are honoured: an empty array
means every attribute is an indicator with value 1.

With a Hamming ``cost`` and a ``temperature`` tau set, the same pass computes the smoothed
structured hinge of ``m3n-owlqn``: tau log sum_y exp((F(x_i, y) + cost * hamming(y_i, y)) / tau)
- F(x_i, y_i), whose gradient has the same form (expectations under the cost-augmented, scaled
distribution minus the gold features).
"""

from __future__ import annotations

import numpy as np

from tagger._config import NUMBA_OPTS, NUMBA_PARALLEL_OPTS
from tagger.chain import (
    ChainModel,
    FeatureBatch,
    Featurized,
    entry_scores,
    fb_buffers,
    fb_sentence,
    fb_tables,
    scatter_expectations,
    state_grad_from_marginals,
)
from tagger.jit import njit, prange
from tagger.learners.solvers.chain_objectives import (
    nll_grad_order2,
    nll_grad_pairs,
    record_marginals,
    scaled_state_scores,
)


@njit(**NUMBA_PARALLEL_OPTS)
def _nll_grad(
    layout, X, w, trans, gold, chunk_bounds, grad_buf, nll_buf, marg, cost, inv_tau, miss_buf
):
    """nll_buf[c] and grad_buf[c] = the chunk's NLL and gradient (sentences
    chunk_bounds[c]..chunk_bounds[c+1]-1); both overwritten. When ``marg`` has a row per
    token, the node marginals P(y_i = l | x) are also written there.

    ``cost`` and ``inv_tau`` make it the smoothed hinge of :mod:`tagger.learners.m3n_owlqn`: every
    state score of a label other than the gold one gets ``cost`` added, and every score
    (``trans`` arrives scaled already) is multiplied by ``inv_tau``; 0 and 1 give the CRF.
    ``miss_buf[c]`` = the chunk's expected number of wrong labels, sum_i 1 - P(y_i = gold_i)."""
    L = trans.shape[0]
    n_chunks = chunk_bounds.shape[0] - 1
    offsets = X.offsets
    tables = fb_tables(trans)
    for c in prange(n_chunks):
        g = grad_buf[c]
        g[:] = 0.0
        s0 = chunk_bounds[c]
        s1 = chunk_bounds[c + 1]
        buffers, node, state, edge = chunk_buffers(offsets, s0, s1, L)
        nll = 0.0
        miss = 0.0
        for s in range(s0, s1):
            a = offsets[s]
            b = offsets[s + 1]
            T = b - a
            if T == 0:
                continue
            log_z, gold_score = sentence_log_z(
                layout, X, w, a, b, gold, trans, tables, (buffers, state, node, edge), cost, inv_tau
            )
            nll += log_z - gold_score
            miss += record_marginals(node, gold, a, b, marg)
            scatter_expectations(layout, X, a, b, gold, node, edge, 1.0, g)
        nll_buf[c] = nll
        miss_buf[c] = miss


@njit(**NUMBA_OPTS)
def sentence_log_z(layout, X, w, a, b, gold, trans, tables, work, cost, inv_tau):
    """log Z and the gold labeling's score of the sentence of tokens a..b-1 at temperature
    1 / inv_tau, its state scores raised by ``cost`` off the gold labels (``trans`` arrives
    scaled); fills the node and edge marginals of ``work`` = (buffers, state, node, edge)."""
    buffers, state, node, edge = work
    T = b - a
    st = state[:T]
    scaled_state_scores(layout, X, w, a, b, gold, cost, inv_tau, st)
    log_z = fb_sentence(st, trans, tables, buffers, node[:T], edge)
    gold_score = st[0, gold[a]]
    for i in range(a + 1, b):
        gold_score += st[i - a, gold[i]] + trans[gold[i - 1], gold[i]]
    return log_z, gold_score


@njit(**NUMBA_OPTS)
def chunk_buffers(offsets, s0, s1, L):
    """Forward-backward buffers, node marginals, state scores (each sized to the longest of
    sentences s0..s1-1) and summed edge marginals for one chunk."""
    tmax = 1
    for s in range(s0, s1):
        if offsets[s + 1] - offsets[s] > tmax:
            tmax = offsets[s + 1] - offsets[s]
    return (fb_buffers(tmax, L), np.empty((tmax, L)), np.empty((tmax, L)), np.empty((L, L)))


#: the per-chunk gradient buffers of one objective take at most about this many bytes...
CHUNK_BUFFER_BYTES = 64 * 2**20
#: ...but there are at least MIN_CHUNKS chunks (two threads get two each) and at most
#: MAX_CHUNKS (more would only add to the buffers to clear and sum)
MIN_CHUNKS, MAX_CHUNKS = 4, 64


def fixed_chunks(offsets: np.ndarray, n_weights: int) -> np.ndarray:
    """Sentence boundaries of the chunks a parallel objective is cut into. Their number
    depends on the data alone (the buffers' memory, :data:`CHUNK_BUFFER_BYTES`), never on the
    thread count: a thread sums each chunk in one order and the chunks are added in one order,
    so results do not change with ``--threads``."""
    by_memory = CHUNK_BUFFER_BYTES // (8 * max(int(n_weights), 1))
    return balanced_chunks(offsets, int(min(MAX_CHUNKS, max(MIN_CHUNKS, by_memory))))


@njit(**NUMBA_PARALLEL_OPTS)
def sum_rows_into(buf, out):
    """out[j] = buf[0, j] + buf[1, j] + ... in row order, in parallel over blocks of columns
    (each column summed by one thread, in the same order whatever the thread count)."""
    n_rows, n = buf.shape
    block = 4096
    for k in prange((n + block - 1) // block):
        lo = k * block
        hi = min(n, lo + block)
        for j in range(lo, hi):
            out[j] = buf[0, j] if n_rows else 0.0
        for r in range(1, n_rows):
            row = buf[r]
            for j in range(lo, hi):
                out[j] += row[j]


def balanced_chunks(offsets: np.ndarray, n_chunks: int) -> np.ndarray:
    """Sentence boundaries of ``n_chunks`` chunks holding about equal numbers of tokens."""
    n = len(offsets) - 1
    n_chunks = max(1, min(n_chunks, n))
    targets = offsets[-1] * np.arange(1, n_chunks) / n_chunks
    cuts = np.searchsorted(offsets, targets)
    bounds = np.concatenate([[0], cuts, [n]]).astype(np.int64)
    return np.maximum.accumulate(bounds)


def chunk_pass(model, batch, gold, bounds, bufs, marginals, w, cost: float, tau: float) -> None:
    """One pass of the objective over the chunks of sentences cut at ``bounds``: chunk c's
    negative log-likelihood (the smoothed hinge with ``cost`` > 0, at temperature ``tau``),
    gradient and expected misses into row c of ``bufs`` = (grad_buf, nll_buf, miss_buf), each
    chunk computed from its own sentences alone (so a slice of the data cut at chunk bounds
    gives the same rows, :mod:`tagger.learners.solvers.distributed_objective`)."""
    grad_buf, nll_buf, miss_buf = bufs
    trans = np.ascontiguousarray(model.transitions(w))
    if tau != 1.0:
        trans = trans * (1.0 / tau)
    common = (gold, bounds, grad_buf, nll_buf, marginals)
    if model.second is not None:
        lat = model.lattice
        entries = entry_scores(lat, w, 1.0 / tau)
        args = (model.layout, model.pair_layout, lat, batch, w, trans, entries, *common)
        nll_grad_order2(*args, cost, 1.0 / tau, miss_buf)
    elif model.n_pair:
        args = (model.layout, model.pair_layout, batch, w, trans, *common)
        nll_grad_pairs(*args, cost, 1.0 / tau, miss_buf)
    else:
        _nll_grad(model.layout, batch, w, trans, *common, cost, 1.0 / tau, miss_buf)


def free_mask(model: ChainModel, fixed: tuple) -> np.ndarray:
    """The weights that learn: all but the blocks named in ``fixed`` (``"ends"``: the start
    and end weights)."""
    free = np.ones(model.n_weights, dtype=bool)
    if "ends" in fixed:
        model.boundary_weights(free)[:] = False
    return free


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
        self.bounds = fixed_chunks(X.offsets, self.n_weights)
        self.grad_buf = np.empty((len(self.bounds) - 1, self.n_weights))
        self.nll_buf = np.empty(len(self.bounds) - 1)
        self.free = free_mask(model, fixed)
        self.n_evals = 0
        #: node marginals of the last evaluation, one row per token, when given a (N, L)
        #: array (see :class:`WorkingSetObjective`); an empty array keeps none
        self.marginals = np.empty((0, model.n_labels))
        #: the Hamming cost and temperature of the smoothed hinge (m3n-owlqn); 0 and 1
        #: are the likelihood
        self.cost, self.temperature = 0.0, 1.0
        self.miss_buf = np.empty(len(self.bounds) - 1)
        #: sum over tokens of 1 - P(y_i = gold_i) at the last evaluation
        self.expected_misses = 0.0

    def __call__(self, w: np.ndarray, grad: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """(L(w), grad L(w)); ``grad`` is filled in place when given."""
        model, X = self.model, self.X
        w = np.ascontiguousarray(w, dtype=np.float64)
        if grad is None:
            grad = np.empty(self.n_weights)
        tau = self.temperature
        batch = FeatureBatch(X.indptr, X.attrs, self.vals, X.offsets)
        bufs = (self.grad_buf, self.nll_buf, self.miss_buf)
        chunk_pass(model, batch, self.gold, self.bounds, bufs, self.marginals, w, self.cost, tau)
        sum_rows_into(self.grad_buf, grad)
        if not self.free.all():
            grad[~self.free] = 0.0
        self.n_evals += 1
        self.expected_misses = float(self.miss_buf.sum())
        return tau * float(self.nll_buf.sum()), grad


class WorkingSetObjective:
    """``L`` and its gradient over a working set S of the weights of ``model``, the others held
    at zero: what Grafting-Light and greedy Grafting optimise.

    The state weights of S form a sub-model (a filtered copy of the attribute -> weight CSR,
    rebuilt when S grows) whose layout is the model's: ``[S's state weights in the model's
    order | transitions | start | end]``. Calling the objective on such a compact vector scores
    tokens from S's weights only, runs forward-backward, and returns ``L`` and its gradient
    over S: a *working-set pass*, whose vector work is O(|S|) instead of O(n). The node
    marginals of that pass are kept, so :meth:`full_gradient` gives ``dL/dw`` for every weight
    (the growth step needs it) by one scatter over the data without a second inference: a
    *full-gradient pass*. ``n_evals`` counts working-set passes and ``n_full`` full-gradient
    passes.
    """

    def __init__(self, model: ChainModel, X: Featurized, y: np.ndarray, fixed: tuple = ()):
        self.model, self.X, self.fixed = model, X, fixed
        self.gold = np.ascontiguousarray(y, dtype=np.int32)
        L = model.n_labels
        self.free = free_mask(model, fixed)
        # the token CSR transposed, once: the tokens that carry each attribute
        N = int(X.offsets[-1])
        tok = np.repeat(np.arange(N, dtype=np.int64), np.diff(X.indptr))
        order = np.argsort(X.attrs, kind="stable")
        self.t_tok = np.ascontiguousarray(tok[order])
        vals = np.asarray(X.vals, dtype=np.float64)
        self.t_val = np.ascontiguousarray(vals[order]) if len(vals) else np.empty(0)
        self.t_ptr = np.zeros(model.n_attrs + 1, dtype=np.int64)
        np.cumsum(np.bincount(X.attrs, minlength=model.n_attrs), out=self.t_ptr[1:])
        self.attr_of_param = model.state_param_attr()
        self.marginals = np.empty((N, L))
        self.n_evals = 0
        self.n_full = 0
        self._last_w: np.ndarray | None = None
        self.sub: CRFObjective | None = None
        self.index = np.empty(0, dtype=np.int64)

    def set_active(self, active: np.ndarray) -> np.ndarray:
        """Make S the state weights marked in ``active`` (plus every transition, start and end
        weight); returns the model index of each compact coordinate (increasing)."""
        model = self.model
        sel = np.flatnonzero(model.state_weights(active))
        sub, self.index = model.restrict(sel, self.attr_of_param)
        self.sub = CRFObjective(sub, self.X, self.gold, fixed=self.fixed)
        self.sub.marginals = self.marginals
        self._last_w = None
        return self.index

    @property
    def n_weights(self) -> int:
        return len(self.index)

    def __call__(self, w: np.ndarray, grad: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """(L, grad L restricted to S) at the compact vector ``w``: a working-set pass."""
        f, g = self.sub(w, grad)
        self.n_evals += 1
        self._last_w = np.array(w, copy=True)
        return f, g

    def expand(self, w: np.ndarray) -> np.ndarray:
        """The model's weight vector for the compact vector ``w`` (zero outside S)."""
        full = np.zeros(self.model.n_weights)
        full[self.index] = w
        return full

    def full_gradient(self, w: np.ndarray, g: np.ndarray) -> np.ndarray:
        """``dL/dw`` over every weight of the model at the compact point ``w`` whose working-set
        gradient is ``g``, from the marginals of the working-set pass at ``w`` (one more pass
        only when the last one was elsewhere)."""
        if self._last_w is None or not np.array_equal(self._last_w, w):
            _, g = self(w)
        model = self.model
        full = np.empty(model.n_weights)
        state_grad_from_marginals(
            model.layout, self.t_ptr, self.t_tok, self.t_val, self.marginals, self.gold, full
        )
        model.edge_weights(full)[:] = g[len(self.index) - model.n_edge :]
        self.n_full += 1
        return full
