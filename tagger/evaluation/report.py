"""What :meth:`tagger.api.Tagger.evaluate` reports on gold and predicted label sequences, and
the checks of the gold labels against the model's that come before any prediction.

The model's labels, not the gold data's, decide between chunk and token scoring, so that one
stray gold label cannot switch the figures; gold labels the model never saw are listed and
always counted as errors. The checks run before decoding so that a wrong model, format or
label column is reported at once rather than after tagging the whole corpus.
"""

from __future__ import annotations

from collections.abc import Sequence

from tagger.errors import UnknownLabelError
from tagger.evaluation.labels import is_bio
from tagger.evaluation.metrics import by_vocabulary, evaluate, word_set


def check_some_known(gold: Sequence[Sequence[str]], labels: Sequence[str]) -> None:
    """Raise :class:`UnknownLabelError` when none of the ``gold`` labels is one of the model's
    ``labels``: the data are not what the model was trained on."""
    gold_labels = {lab for labs in gold for lab in labs}
    known = set(labels)
    if not gold_labels & known:
        raise UnknownLabelError(
            f"none of the evaluation data's labels ({', '.join(sorted(gold_labels)[:8])}"
            f"{', ...' if len(gold_labels) > 8 else ''}) is a label of this model "
            f"({', '.join(labels[:8])}{', ...' if len(known) > 8 else ''}); "
            f"is it the right model, format and label column?"
        )


def check_all_known(gold: Sequence[str], labels: Sequence[str]) -> None:
    """Raise :class:`UnknownLabelError` naming the ``gold`` labels that are not among the
    model's ``labels``: the constraint report counts labels by their ids, which they lack."""
    known = set(labels)
    unknown = sorted({lab for lab in gold if lab not in known})
    if unknown:
        raise UnknownLabelError(
            f"gold labels {', '.join(unknown)} are not labels of the "
            f"model; the constraint report cannot count them"
        )


def evaluation_report(
    gold: Sequence[Sequence[str]],
    pred: Sequence[Sequence[str]],
    labels: Sequence[str],
    tokens: Sequence[Sequence[str]],
    vocabulary=None,
) -> dict:
    """Token accuracy and conlleval chunk P/R/F1 of ``pred`` against ``gold`` (chunks when the
    model's ``labels`` are BIO), the gold labels the model lacks (``unknown_labels``) and, with
    ``vocabulary``, the accuracy on the ``tokens`` in it and on the others
    (``by_vocabulary``)."""
    result = evaluate(gold, pred, chunk_level=is_bio(labels))
    known = set(labels)
    result["unknown_labels"] = sorted({lab for labs in gold for lab in labs} - known)
    if vocabulary is not None:
        result["by_vocabulary"] = by_vocabulary(tokens, gold, pred, word_set(vocabulary))
    return result
