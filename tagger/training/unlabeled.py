"""The unlabeled text of semi-supervised training, read once, in batches, and not kept.

Each batch of sentences grows the feature vocabularies (:meth:`Featurizer.grow_views`) and
gives the constraints' token indicators; the batch's view ids and indicators go to a
:class:`~tagger.io.scratch.ScratchSpace` (memory, or memory-mapped files with ``scratch_dir``)
and the sentences are dropped. Once the vocabularies are complete (the attribute set needs
every batch), :meth:`UnlabeledBatches.featurize` turns the stored view ids into the
featurized sentences batch by batch, written to the scratch space as well. The result equals
featurizing the sentences all at once, to the bit (tested).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import numpy as np

from tagger.errors import CorpusFormatError
from tagger.features import FeatureSpec, Featurized, Featurizer
from tagger.io.scratch import ScratchSpace

#: unlabeled sentences read (and reported) per batch
UNLABELED_BATCH = 4096


class UnlabeledBatches:
    """Unlabeled sentences read in batches into ``scratch``: see the module docstring.

    ``compiled``: the constraints compiled for the label set (their token indicators are
    computed from each batch's words), or None. ``check(batch)`` checks a batch's columns;
    ``progress`` is called with ``{"unlabeled_read": n}`` after each batch, ``on_batch(n)``
    with the batch's token count."""

    def __init__(
        self,
        sentences: Iterable,
        spec: FeatureSpec,
        featurizer: Featurizer,
        scratch: ScratchSpace,
        compiled=None,
        check=None,
        progress=None,
        on_batch=None,
    ):
        self.scratch, self.featurizer, self.compiled = scratch, featurizer, compiled
        n_views = len(spec.views)
        views = scratch.appender("view-ids", np.int64, (n_views,))
        lengths = scratch.appender("lengths", np.int64)
        ind = (
            scratch.appender("indicators", np.uint8, (compiled.n_rows,))
            if compiled is not None
            else None
        )
        self.cuts = [0]  # token offset of each batch
        self.sentence_cuts = [0]  # sentence offset of each batch
        it = iter(sentences)
        while True:
            batch = [s for s in itertools.islice(it, UNLABELED_BATCH) if len(s)]
            if not batch:
                break
            if check is not None:
                check(batch)
            ids, offsets = featurizer.grow_views(batch)
            views.append(ids.T)
            lengths.append(np.diff(offsets))
            if ind is not None:
                ind.append(compiled.indicators(batch).ind.T)
            self.cuts.append(self.cuts[-1] + int(offsets[-1]))
            self.sentence_cuts.append(self.sentence_cuts[-1] + len(batch))
            if progress is not None:
                progress({"unlabeled_read": self.sentence_cuts[-1]})
            if on_batch is not None:
                on_batch(int(offsets[-1]))
        if self.sentence_cuts[-1] == 0:
            raise CorpusFormatError("the unlabeled data contains no sentences")
        self.views = views.finish()  # (N, n_views)
        self.offsets = scratch.zeros("unlabeled-offsets", self.sentence_cuts[-1] + 1, np.int64)
        np.cumsum(lengths.finish(), out=self.offsets[1:])
        self._ind = None if ind is None else ind.finish()  # (N, n_rows)

    @property
    def n_tokens(self) -> int:
        return self.cuts[-1]

    def batches(self):
        """Each batch's (view ids (n_views, n) contiguous, offsets)."""
        for k in range(len(self.cuts) - 1):
            a, b = self.cuts[k], self.cuts[k + 1]
            offsets = self.offsets[self.sentence_cuts[k] : self.sentence_cuts[k + 1] + 1] - a
            yield np.ascontiguousarray(self.views[a:b].T), offsets

    def featurize(self) -> Featurized:
        """The featurized sentences (after the fit), batch by batch into the scratch space."""
        indptr = self.scratch.zeros("unlabeled-indptr", self.n_tokens + 1, np.int64)
        attrs = self.scratch.appender("unlabeled-attrs", np.int32)
        done = 0
        for k, (ids, offs) in enumerate(self.batches()):
            part = self.featurizer.transform_views(ids, offs)
            a, b = self.cuts[k], self.cuts[k + 1]
            indptr[a + 1 : b + 1] = part.indptr[1:] + done
            done += int(part.indptr[-1])
            attrs.append(part.attrs)
        self.views = None  # the view ids are spent
        return Featurized(indptr, attrs.finish(), self.offsets)

    def indicators(self):
        """The constraints' token indicators of every sentence (a ``TokenIndicators``)."""
        from tagger.constraints.compiled import TokenIndicators

        n_rows = self.compiled.n_rows
        ind = self.scratch.zeros("indicators", (n_rows, self.n_tokens), np.uint8)
        for k in range(len(self.cuts) - 1):
            a, b = self.cuts[k], self.cuts[k + 1]
            ind[:, a:b] = self._ind[a:b].T
        self._ind = None
        return TokenIndicators(ind, self.offsets)
