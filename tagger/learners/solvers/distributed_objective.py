"""The objective of ``m3n-owlqn``, ``crf-l1`` and ``crf-l2`` computed on the workers of a Dask
cluster, to the bit the objective computed here.

:class:`tagger.learners.solvers.crf_objective.CRFObjective` cuts the training sentences into
chunks fixed by the data (never by the number of threads), computes each chunk's value and
gradient from its own sentences, and adds the chunks' gradients in chunk order. The same cut
serves a cluster: :class:`ClusterData` sends runs of whole chunks (``partitions`` of them, by
default two per worker) to the workers once, with the model's layout; each evaluation then
sends only the weights, each worker computes its chunks' rows with the same kernels
(:func:`chunk_pass`) and returns each row's non-zeros, and the driver adds the rows in chunk
order. Adding a row's zeros would change no bit, so the gradient, the value and the weights
trained from them are those of one machine, whatever the number of workers or partitions
(tested against the objective and the trained weights here).

What stays in the driver: the optimizer's vector work (OWL-QN's two-loop recursion over the
weights), the featurization, dev scoring and the certificate's loss-augmented Viterbi pass of
``m3n-owlqn``'s polish, each one pass or less per path point against the dozens of evaluations
the workers take.
"""

from __future__ import annotations

import logging
import weakref

import numpy as np

from tagger.chain import ChainModel, FeatureBatch, Featurized
from tagger.learners.solvers.crf_objective import chunk_pass, fixed_chunks, free_mask
from tagger.learners.solvers.dask_client import connect, worker_count

log = logging.getLogger(__name__)


def part_rows(model: ChainModel, part, w: np.ndarray, cost: float, tau: float):
    """On a worker: the chunk rows of one part, ``part`` = (its sentences, their gold labels,
    its chunk bounds from 0), at the weights ``w``: ``([(indices, values) of each chunk's
    gradient non-zeros], values, expected misses)``."""
    X, gold, bounds = part
    n_chunks = len(bounds) - 1
    bufs = (np.empty((n_chunks, model.n_weights)), np.empty(n_chunks), np.empty(n_chunks))
    batch = FeatureBatch(X.indptr, X.attrs, np.ascontiguousarray(X.vals, np.float64), X.offsets)
    no_marginals = np.empty((0, model.n_labels))
    chunk_pass(model, batch, gold, bounds, bufs, no_marginals, w, cost, tau)
    rows = []
    for row in bufs[0]:
        nz = np.flatnonzero(row)
        rows.append((nz, row[nz]))
    return rows, bufs[1], bufs[2]


class ClusterData:
    """The training sentences of one problem on the workers of the scheduler at ``scheduler``:
    the objective's chunks (:func:`fixed_chunks`) in ``partitions`` runs of whole chunks (0:
    two per worker, at most one per chunk), sent once and kept there until :meth:`close`."""

    def __init__(self, client, model: ChainModel, X: Featurized, y: np.ndarray, partitions: int):
        self.client = client
        self.model = model
        self.gold = np.ascontiguousarray(y, dtype=np.int32)
        self.bounds = fixed_chunks(X.offsets, model.n_weights)
        n_chunks = len(self.bounds) - 1
        if partitions <= 0:
            partitions = 2 * worker_count(client)
        n_parts = max(1, min(partitions, n_chunks))
        #: the first chunk of each part, and the end
        self.cuts = np.linspace(0, n_chunks, n_parts + 1).round().astype(np.int64)
        parts = []
        for c0, c1 in zip(self.cuts[:-1], self.cuts[1:]):
            s0, s1 = int(self.bounds[c0]), int(self.bounds[c1])
            t0, t1 = int(X.offsets[s0]), int(X.offsets[s1])
            parts.append(
                (X.sentences(s0, s1), self.gold[t0:t1].copy(), self.bounds[c0 : c1 + 1] - s0)
            )
        self.parts = client.scatter(parts)
        self.remote_model = client.scatter(model, broadcast=True)
        log.info(
            "training on the %d workers of %s: %d chunks of sentences in %d parts",
            worker_count(client),
            client.scheduler.address,
            n_chunks,
            n_parts,
        )

    def rows(self, w: np.ndarray, cost: float, tau: float) -> list:
        """Every part's :func:`part_rows` at the weights ``w``, in part order."""
        wf = self.client.scatter(w, broadcast=True, hash=False)
        futures = [
            self.client.submit(part_rows, self.remote_model, p, wf, cost, tau, pure=False)
            for p in self.parts
        ]
        return self.client.gather(futures)

    def close(self) -> None:
        self.client.cancel([*self.parts, self.remote_model])


class DaskObjective:
    """:class:`~tagger.learners.solvers.crf_objective.CRFObjective`'s ``L(w)`` and gradient
    (and its ``cost`` and ``temperature`` for the smoothed hinge) with the chunks computed on a
    cluster (``data``: :class:`ClusterData`); the same bits. Node marginals are not kept."""

    def __init__(self, data: ClusterData, fixed: tuple = ()):
        self.data = data
        self.model = data.model
        self.n_weights = data.model.n_weights
        self.free = free_mask(data.model, fixed)
        self.n_evals = 0
        self.cost, self.temperature = 0.0, 1.0
        self.expected_misses = 0.0
        n_chunks = len(data.bounds) - 1
        self.nll_buf, self.miss_buf = np.empty(n_chunks), np.empty(n_chunks)

    def __call__(self, w: np.ndarray, grad: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """(L(w), grad L(w)); ``grad`` is filled in place when given."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        if grad is None:
            grad = np.empty(self.n_weights)
        tau = self.temperature
        results = self.data.rows(w, self.cost, tau)
        # CRFObjective adds the chunk rows in chunk order (sum_rows_into); adding a row's
        # non-zeros in the same order gives the same sums (x + 0.0 is x)
        grad[:] = 0.0
        cuts = self.data.cuts
        for k, (rows, nll, miss) in enumerate(results):
            for idx, vals in rows:
                grad[idx] += vals
            self.nll_buf[cuts[k] : cuts[k + 1]] = nll
            self.miss_buf[cuts[k] : cuts[k + 1]] = miss
        if not self.free.all():
            grad[~self.free] = 0.0
        self.n_evals += 1
        self.expected_misses = float(self.miss_buf.sum())
        return tau * float(self.nll_buf.sum()), grad


class Cluster:
    """A learner's connection to the scheduler at ``scheduler`` and the training sentences it
    sent there: sent once per problem (a regularization path's points share them; a held-out
    path's problem and the final training's each send theirs), closed by :meth:`close` (or
    when the learner is collected)."""

    def __init__(self, scheduler: str):
        self.scheduler = scheduler
        self.client = connect(scheduler)
        self._data: tuple | None = None
        self._finalizer = weakref.finalize(self, self.client.close)

    def objective(self, problem, fixed: tuple, partitions: int) -> DaskObjective:
        """A fresh objective over ``problem``'s sentences (their chunks sent at the first call
        for this problem)."""
        if self._data is None or self._data[0] is not problem:
            if self._data is not None:
                self._data[1].close()
            data = ClusterData(self.client, problem.model, problem.X, problem.y, partitions)
            self._data = (problem, data)
        return DaskObjective(self._data[1], fixed)

    def close(self) -> None:
        self._data = None
        self._finalizer()
