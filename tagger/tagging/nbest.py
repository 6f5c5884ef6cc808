"""The n best labelings of each sentence (``tagger tag --nbest N``, :func:`predict_nbest`),
with the score each gets from the model and, for a CRF model, its probability
``exp(F(y) - log Z)``: as CRF++'s and Wapiti's ``-n`` give them.

The labelings come from list Viterbi (:mod:`tagger.chain.kbest`) on every kind of chain model
(first order, label-pair templates, second order), best first and distinct. A sentence with
fewer than N labelings (one token and fewer than N labels, or a second-order model whose
allowed label pairs leave fewer) gets as many as it has.

Output: in the input's format, each sentence N times, each copy after a comment line
``# nbest RANK/N score SCORE [probability P]``; as JSON lines, one object per sentence with its
columns and ``nbest``: a list of ``{"predicted": [...], "score": ..., "probability": ...}``
(``probability`` null for a max-margin model, whose scores are not log-probabilities).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from tagger.chain.kbest import nbest
from tagger.errors import TaggerError
from tagger.io import write_corpus
from tagger.io.jsonl import column_names
from tagger.sentence import Sentence

#: the most labelings asked of one sentence (a list Viterbi costs N times Viterbi)
MAX_NBEST = 1000


class Labeling(NamedTuple):
    """One of a sentence's n best labelings."""

    labels: list[str]
    score: float  # F(x, y; w)
    probability: float | None  # exp(F - log Z) under a CRF model, else None


def check_nbest(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= MAX_NBEST:
        raise TaggerError(f"nbest must be an integer from 1 to {MAX_NBEST}; got {n!r}")
    return int(n)


def predict_nbest(tagger, sentences: Sequence[Sentence], n: int) -> list[list[Labeling]]:
    """The ``n`` best labelings of each sentence under ``tagger``'s model (a fitted
    :class:`~tagger.api.Tagger`), best first; an empty sentence has one, empty."""
    n = check_nbest(n)
    _, names, model, w = tagger.fitted()
    sentences = list(sentences)
    nonempty = [s for s in sentences if len(s)]
    probabilistic = tagger.probabilistic_
    empty = Labeling([], 0.0, 1.0 if probabilistic else None)
    out: list[list[Labeling]] = [[empty] for _ in sentences]
    if not nonempty:
        return out
    X = tagger.featurize(nonempty)
    ids, scores, log_z = nbest(model, X, w, n)
    flat = np.array(names.labels, dtype=object)
    rows = iter(range(len(nonempty)))
    for i, s in enumerate(sentences):
        if not len(s):
            continue
        r = next(rows)
        a, b = int(X.offsets[r]), int(X.offsets[r + 1])
        found = []
        for j in range(n):
            score = float(scores[r, j])
            if score == -math.inf and found:
                break  # fewer labelings than asked for
            p = math.exp(score - float(log_z[r])) if probabilistic and score > -math.inf else None
            found.append(Labeling(flat[ids[a:b, j]].tolist(), score, p))
        out[i] = found
    return out


def write_nbest(out, sentences: Sequence[Sentence], found, write: dict, sep: str) -> None:
    """Each sentence's labelings ``found`` (:func:`predict_nbest`) in ``write["format"]``
    (``jsonl``: one object per sentence; else each labeling as a copy of the sentence after
    a comment line)."""
    if write["format"] == "jsonl":
        for s, labelings in zip(sentences, found):
            keys = column_names(write["names"] or s.meta.get("fields"), len(s.columns))
            record = dict(zip(keys, s.columns))
            record["nbest"] = [
                {"predicted": x.labels, "score": round(x.score, 6), "probability": _prob(x)}
                for x in labelings
            ]
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
        return
    for s, labelings in zip(sentences, found):
        for rank, x in enumerate(labelings, 1):
            line = f"# nbest {rank}/{len(labelings)} score {x.score:.6f}"
            if x.probability is not None:
                line += f" probability {x.probability:.6f}"
            out.write(line + "\n")
            write_corpus(out, [s], [x.labels], sep=sep, **write)


def _prob(x: Labeling) -> float | None:
    return None if x.probability is None else round(x.probability, 6)
