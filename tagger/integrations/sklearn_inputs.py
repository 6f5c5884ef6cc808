"""What :class:`~tagger.integrations.sklearn.SparseTaggerEstimator` accepts, checked before
any work with one message that says where the mistake is and what to pass instead.

``X`` is a list (any sequence) of sentences, each a list of tokens: strings (one input column,
the word) or tuples of strings (several columns, e.g. ``(word, pos)``), the same kind and width
throughout. A bare string is not a sentence: scikit-learn users come from estimators over
documents, and a string would otherwise be tagged character by character. ``y`` is a sequence
of label sequences, one label per token: strings, or integers as scikit-learn classifiers take
them (``predict`` then returns integers); ``None`` is not a label, and strings and integers
are not mixed. Generators are refused rather than consumed: cross-validation indexes ``X`` and
``y`` again and again.

The errors are :class:`~tagger.errors.TaggerError` subclasses and also both ``ValueError`` and
``TypeError``, as scikit-learn's own ``InvalidParameterError`` is, so that code written for
scikit-learn catches them whichever it expects.
"""

from __future__ import annotations

import math
import numbers
import os

import numpy as np

from tagger.errors import ParameterError, TaggerError
from tagger.sentence import Sentence

ESTIMATOR = "SparseTaggerEstimator"
#: how X should look, quoted in the messages about it
X_SHAPE = "a list of sentences, each a list of tokens, such as [['The', 'cat', 'sat']]"


class EstimatorInputError(TaggerError, ValueError, TypeError):
    """``X`` or ``y`` given to the estimator is not what it takes; the message says where."""


class EstimatorParameterError(ParameterError, TypeError):
    """One of the estimator's own parameters has a value it cannot use."""


# ------------------------------------------------------------------ parameters


def check_own_params(features, learner, seed, select, max_seconds) -> None:
    """The estimator's own parameters, in scikit-learn's words; the learner's parameters are
    checked by :func:`tagger.train`, which knows each learner's table."""
    if features is not None and not isinstance(features, (str, os.PathLike)):
        raise _bad(
            "features",
            "a feature preset name ('pos', 'chunk', 'citation') or the path of a feature "
            "file, or None",
            features,
        )
    if learner is not None and not isinstance(learner, str):
        raise _bad("learner", "a learner name (see 'tagger learners') or None", learner)
    if not _is_int(seed):
        raise _bad("seed", "an integer", seed)
    if not isinstance(select, (bool, np.bool_)):
        raise _bad("select", "True or False", select)
    if (
        isinstance(max_seconds, (bool, np.bool_))
        or not isinstance(max_seconds, numbers.Real)
        or not math.isfinite(max_seconds)
        or max_seconds < 0
    ):
        raise _bad("max_seconds", "a number of seconds >= 0 (0: no limit)", max_seconds)


def _bad(name: str, expected: str, found) -> EstimatorParameterError:
    return EstimatorParameterError(
        f"The '{name}' parameter of {ESTIMATOR} must be {expected}. Got {found!r} instead."
    )


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


# ------------------------------------------------------------------ X and y


def listed(obj, name: str, what: str) -> list:
    """``obj`` as a list, if it is a sequence (not a string, not a generator)."""
    if isinstance(obj, (str, bytes)):
        raise EstimatorInputError(
            f"{name} is a string; {name} must be {what}"
            + ("; to tag one sentence, pass [sentence.split()]" if name == "X" else "")
        )
    if not (hasattr(obj, "__len__") and hasattr(obj, "__getitem__")):
        raise EstimatorInputError(
            f"{name} must be {what}; got {type(obj).__name__}, which cannot be indexed "
            f"(pass list({name}))"
        )
    return list(obj)


def sentences(X, n_columns: int | None = None, column_names=None) -> list[Sentence]:
    """The sentences of ``X`` (see the module docstring), every token of the same width;
    ``n_columns``: the width the model reads (at least that many columns)."""
    out = []
    width = None
    for i, tokens in enumerate(listed(X, "X", X_SHAPE)):
        s = _sentence(tokens, i)
        if len(s):
            cols = len(s.columns)
            if width is None:
                width, first = cols, i
            elif cols != width:
                raise EstimatorInputError(
                    f"X: the tokens of sentence {i} have {cols} column(s), those of sentence "
                    f"{first} {width}; every token needs the same columns"
                )
        out.append(s)
    if n_columns is not None and width is not None and width < n_columns:
        names = ", ".join(column_names or [])
        raise EstimatorInputError(
            f"X: the model reads {n_columns} columns per token ({names}), the tokens of X "
            f"have {width}; give each token as a tuple ({names})"
        )
    return out


def _sentence(tokens, i: int) -> Sentence:
    if isinstance(tokens, str):
        shown = tokens if len(tokens) <= 40 else tokens[:37] + "..."
        fix = (
            f"split it into tokens first ({shown!r}.split())"
            if len(tokens.split()) > 1
            else "if X is the tokens of one sentence, pass [X]"
        )
        raise EstimatorInputError(
            f"X: sentence {i} is a string ({shown!r}), not a list of tokens; {fix}; X must "
            f"be {X_SHAPE}"
        )
    tokens = listed(tokens, f"sentence {i} of X", "a list of tokens")
    if not tokens:
        return Sentence([[]])
    first = tokens[0]
    if isinstance(first, str):
        for j, tok in enumerate(tokens):
            if not isinstance(tok, str):
                raise _bad_token(i, j, tok, "a string like the sentence's first token")
        return Sentence([list(tokens)])
    if not isinstance(first, (tuple, list)) or not first:
        raise _bad_token(i, 0, first, "a string, or a tuple of strings (word, pos, ...)")
    width = len(first)
    for j, tok in enumerate(tokens):
        if (
            not isinstance(tok, (tuple, list))
            or len(tok) != width
            or not all(isinstance(c, str) for c in tok)
        ):
            raise _bad_token(
                i, j, tok, f"a tuple of {width} strings like the sentence's first token"
            )
    return Sentence([list(col) for col in zip(*tokens)])


def _bad_token(i: int, j: int, tok, expected: str) -> EstimatorInputError:
    return EstimatorInputError(
        f"X: sentence {i}, token {j}: expected {expected}, found {type(tok).__name__} {tok!r}"
    )


def labeled(X, y, n_columns=None, column_names=None) -> tuple[list[Sentence], dict | None]:
    """The sentences of ``X`` with the labels of ``y`` (as strings), and, when the labels
    are integers, the map from their strings back to them (None for string labels)."""
    xs = sentences(X, n_columns, column_names)
    ys = listed(y, "y", "a list of label sequences, one per sentence of X")
    if len(xs) != len(ys):
        raise EstimatorInputError(
            f"X has {len(xs)} sentences but y has {len(ys)} label sequences; give one label "
            f"sequence per sentence"
        )
    kinds: dict[type, tuple] = {}  # str / int -> (label, sentence, token) where first seen
    originals: dict[str, object] = {}
    for i, (s, labels) in enumerate(zip(xs, ys)):
        labels = listed(labels, f"y[{i}]", "a list of labels, one per token")
        if len(labels) != len(s):
            raise EstimatorInputError(
                f"sentence {i}: {len(s)} tokens but {len(labels)} labels; give one label per token"
            )
        texts = []
        for j, label in enumerate(labels):
            if isinstance(label, str):
                kind = str
            elif _is_int(label) or isinstance(label, (bool, np.bool_)):
                kind = int
            else:
                raise EstimatorInputError(
                    f"y: sentence {i}, token {j}: the label is {label!r}; labels must be "
                    f"strings or integers, one for every token"
                )
            kinds.setdefault(kind, (label, i, j))
            text = str(label)
            originals.setdefault(text, label)
            texts.append(text)
        s.labels = texts
    if len(kinds) > 1:
        (a, ai, aj), (b, bi, bj) = kinds[str], kinds[int]
        raise EstimatorInputError(
            f"y mixes string labels ({a!r}, sentence {ai}, token {aj}) and integer labels "
            f"({b!r}, sentence {bi}, token {bj}); use one type"
        )
    return xs, (originals if int in kinds else None)
