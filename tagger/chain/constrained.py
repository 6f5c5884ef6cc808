"""Constrained decoding of models that are not plain first-order chains: each sentence's state
scores and position-dependent transitions (:func:`tagger.chain.pairs.sentence_scores`) go
through the same expanded-state Viterbi and label switching as a plain first-order model's
(:func:`tagger.constraints.decoding.decode_sentence`), in parallel over sentences. A
second-order model's pair-state lattice and triple scores go with them: the expanded states
are then (label pair, rule bits).
"""

from __future__ import annotations

import numpy as np

from tagger._config import CONSTRAINED_WORK_PER_BYTE, NUMBA_PARALLEL_OPTS
from tagger.chain.layout import ChainModel, FeatureBatch
from tagger.chain.pairs import sentence_scores
from tagger.chain.triples import entry_scores
from tagger.constraints.decoding import decode_sentence, decoding_plan, flat_plan, plan_of
from tagger.constraints.expanded_viterbi import no_order2
from tagger.features import Featurized
from tagger.jit import njit, prange


@njit(**NUMBA_PARALLEL_OPTS, work_per_byte=CONSTRAINED_WORK_PER_BYTE)
def _pair_constrained_batch(layout, pl, X, w, trans, o2, ind, plan, out, feasible):
    offsets = X.offsets
    flat = flat_plan(plan)  # (a parallel loop takes no record of records)
    for s in prange(offsets.shape[0] - 1):
        a = offsets[s]
        b = offsets[s + 1]
        if b > a:
            state, edge = sentence_scores(layout, pl, X, w, a, b, trans)
            feasible[s] = decode_sentence(state, edge, o2, a, ind, plan_of(flat), out)


def constrained_decode_pairs(
    model: ChainModel, X: Featurized, w: np.ndarray, cc, ti, **options
) -> tuple[np.ndarray, np.ndarray]:
    """Label ids (stacked) of the featurized sentences ``X`` under the compiled constraints
    ``cc`` and their token indicators ``ti``, for a ``model`` with label-pair templates or
    of order 2; and per sentence whether a labeling meeting every hard rule the
    expanded Viterbi enforces exists (``options``:
    :func:`~tagger.constraints.decoding.decoding_plan`'s)."""
    plan = decoding_plan(cc, ti, X.n_tokens, **options)
    w = np.ascontiguousarray(w, dtype=np.float64)
    trans = np.ascontiguousarray(model.transitions(w))
    if model.second is None:
        o2 = no_order2(model.n_labels)
    else:
        lat = model.lattice
        o2 = (True, lat.pair_a, lat.pair_b, lat.pair_id, lat.pred_ptr, lat.pred_src)
        o2 += (entry_scores(lat, w),)
    out = np.zeros(X.n_tokens, np.int32)
    feasible = np.ones(X.n_sentences, np.bool_)
    args = (model.layout, model.pair_layout, FeatureBatch.of(X), w, trans)
    _pair_constrained_batch(*args, o2, plan.ind, plan.kernel, out, feasible)
    return out, feasible
