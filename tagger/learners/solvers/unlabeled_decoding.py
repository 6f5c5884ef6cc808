"""The decoding of ``ssvm-annealing``'s unlabeled sentences, in this process or on a Dask
cluster.

Each constraint-matching round starts from the best labeling of every unlabeled sentence at
the current weights: their state scores, then Viterbi under the hard rules the expanded-state
lattice carries (:func:`tagger.constraints.decoding.constrained_decode`; plain Viterbi without
constraints). Sentence by sentence this is independent and deterministic, so it can be cut
into partitions of whole sentences and run where the sentences are:

- :class:`LocalDecoding` decodes them here (the kernels use every core numba sees);
- :class:`DaskDecoding` sends each partition's features and token indicators to a Dask
  cluster once (``scheduler``: its address), the model's layout and compiled rules once per
  worker, and each round only the weights; the workers return the partitions' state scores
  and labels, which are put back in order. The result is the one of :class:`LocalDecoding`,
  to the bit (tested).

The label switching that follows (its corpus-level rules count over every sentence at once)
and the supervised SDM step stay in the driver.
"""

from __future__ import annotations

import numpy as np

from tagger.chain import (
    Featurized,
    constrained_decode,
    constrained_decode_pairs,
    viterbi_batch_into,
)
from tagger.learners.solvers.dask_client import connect, worker_count


def decode(
    model, U: Featurized, w: np.ndarray, constraints, state: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(state scores, labels) of the sentences of ``U`` at the weights ``w``; under the hard
    rules of ``constraints`` (compiled rules and ``U``'s token indicators) when given. The
    state scores are written into ``state`` when given."""
    state = model.state_scores(U, w, out=state)
    if not model.plain:  # label-pair templates: transitions that vary by position
        if constraints is not None:
            compiled, indicators = constraints
            y = constrained_decode_pairs(model, U, w, compiled, indicators, soft=False)[0]
        else:
            y = model.decode(U, w)[0]
        return state, y
    trans = np.ascontiguousarray(model.transitions(w))
    if constraints is not None:
        compiled, indicators = constraints
        y = constrained_decode(state, U.offsets, trans, compiled, indicators, soft=False)[0]
    else:
        y = np.empty(U.n_tokens, np.int32)
        viterbi_batch_into(state, U.offsets, trans, y, np.empty(U.n_sentences))
    return state, y


class LocalDecoding:
    """The unlabeled sentences decoded in this process."""

    def __init__(self, model, U: Featurized, constraints=None, scratch=None):
        self.model, self.U = model, U
        self.constraints = (
            None if constraints is None else (constraints.compiled, constraints.indicators)
        )
        # one (N, L) buffer for every round's state scores, mapped with a scratch directory
        self.state = (
            None if scratch is None else scratch.zeros("state-scores", (U.n_tokens, model.n_labels))
        )

    def __call__(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return decode(self.model, self.U, w, self.constraints, self.state)

    def close(self) -> None:
        pass


def _decode_part(model, part, w, compiled):
    U, indicators = part
    return decode(model, U, w, None if compiled is None else (compiled, indicators))


class DaskDecoding:
    """The unlabeled sentences decoded on the workers of the Dask scheduler at ``scheduler``,
    cut into ``partitions`` parts of whole sentences (0: two per worker)."""

    def __init__(self, model, U: Featurized, constraints, scheduler: str, partitions: int = 0):
        self.client = connect(scheduler)
        n = U.n_sentences
        if partitions <= 0:
            partitions = 2 * worker_count(self.client)
        cuts = np.linspace(0, n, min(partitions, max(n, 1)) + 1).round().astype(int)
        parts = []
        for s0, s1 in zip(cuts[:-1], cuts[1:]):
            if s1 > s0:
                ind = None if constraints is None else constraints.indicators.sentences(s0, s1)
                parts.append((U.sentences(s0, s1), ind))
        self.parts = self.client.scatter(parts)
        self.model = self.client.scatter(model, broadcast=True)
        self.compiled = (
            None
            if constraints is None
            else self.client.scatter(constraints.compiled, broadcast=True)
        )

    def __call__(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        wf = self.client.scatter(w, broadcast=True, hash=False)
        futures = [
            self.client.submit(_decode_part, self.model, part, wf, self.compiled, pure=False)
            for part in self.parts
        ]
        results = self.client.gather(futures)
        return (
            np.concatenate([r[0] for r in results]),
            np.concatenate([r[1] for r in results]).astype(np.int32, copy=False),
        )

    def close(self) -> None:
        self.client.close()


def unlabeled_decoding(
    model, U: Featurized, constraints, scheduler: str = "", partitions: int = 0, scratch=None
):
    """:class:`DaskDecoding` when a scheduler address is given, else :class:`LocalDecoding`
    (its state scores in ``scratch`` when given)."""
    if scheduler:
        return DaskDecoding(model, U, constraints, scheduler, partitions)
    return LocalDecoding(model, U, constraints, scratch)
