"""One decoded batch (:class:`Predictions`): what :meth:`tagger.api.Tagger.predict_batch`, the
package's one decode path, returns, and the label sequences and marginals read from it; and the
kernel calls that decode a batch's scores (:func:`decode`).

The labels are kept as ids stacked over the batch's tokens, with each sentence's offsets into
them, so that a batch of thousands of sentences is a few arrays rather than a list per
sentence until someone asks for the lists.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tagger.errors import TaggerError
from tagger.evaluation.labels import LabelIndex
from tagger.inference import forward_backward_batch
from tagger.inference.max_product import viterbi_batch_into


class Predictions(NamedTuple):
    """One decoded batch (:meth:`Tagger.predict_batch`): label ids stacked over the batch's
    tokens, each sentence's offsets into them, and the (tokens, labels) node marginals when
    they were asked for."""

    ids: np.ndarray  # int32[n_tokens]
    offsets: np.ndarray  # int64[n_sentences + 1]
    marginals: np.ndarray | None  # float64[n_tokens, n_labels] or None

    def labels(self, index: LabelIndex) -> list[list[str]]:
        """The predicted label sequences, one per sentence."""
        flat = np.array(index.labels, dtype=object)[self.ids].tolist()
        offs = self.offsets.tolist()
        return [flat[a:b] for a, b in zip(offs[:-1], offs[1:])]

    def marginal_list(self) -> list[np.ndarray]:
        """The node marginals as one (T, L) array per sentence."""
        if self.marginals is None:
            raise TaggerError("these predictions were decoded without marginals")
        offs = self.offsets.tolist()
        marginals = self.marginals
        return [marginals[a:b] for a, b in zip(offs[:-1], offs[1:])]


def decode(
    state: np.ndarray,
    offsets: np.ndarray,
    transitions: np.ndarray,
    compiled=None,
    sentences=(),
    marginals: bool = False,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Label ids of a batch of non-empty sentences, stacked, from their (tokens, labels)
    ``state`` scores (sentence boundaries at ``offsets``) and the ``transitions``: one Viterbi
    kernel call, or with ``compiled`` constraints the constrained decoder of
    :mod:`tagger.constraints.decoding` (their indicators read from the ``sentences``). With
    ``marginals``, also the node marginals from forward-backward over the same scores."""
    if compiled is None:
        ids = np.empty(int(offsets[-1]), dtype=np.int32)
        viterbi_batch_into(state, offsets, transitions, ids, np.empty(len(offsets) - 1))
    else:
        # imported here: tagging without constraints never loads their decoder
        from tagger.constraints.decoding import constrained_decode

        ids, _ = constrained_decode(
            state, offsets, transitions, compiled, compiled.indicators(sentences)
        )
    node = forward_backward_batch(state, offsets, transitions)[1] if marginals else None
    return ids, node
