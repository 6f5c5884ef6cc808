"""A scikit-learn estimator over token sequences: :class:`SparseTaggerEstimator`.

``X`` is a list of sentences, each a list of tokens: strings (one input column, the word), or
tuples of strings (several columns, e.g. ``(word, pos)`` for the ``chunk`` features). ``y`` is
the list of their label lists. Every setting is a constructor parameter, stored untouched: the
estimator's own (``features``, ``learner``, ``seed``, ``select``, ``max_seconds``) and any
parameter of the learner by its name (``radius=3000``, ``c1=0.1``; ``tagger learners`` lists
them), so ``GridSearchCV(SparseTaggerEstimator(), {"radius": [...]})`` and ``clone`` work.
Validation happens in :meth:`fit`, as scikit-learn asks, and training is :func:`tagger.train`'s,
with its defaults: the feature preset follows the data (``chunk`` for tokens with a POS column,
``pos`` for words alone) and the regularization strength is chosen on a held-out tenth of ``X``
(or on ``X_dev``) unless ``select=False`` or a parameter sets it, as ``tagger train`` does.

``score`` is the chunk F1 (conlleval's) when the labels are BIO chunk labels, else token
accuracy: the same number ``tagger eval`` leads with. Fitted estimators pickle and deep-copy
through the model file's bytes (see ``Tagger.__reduce__``).

scikit-learn's ``check_estimator`` assumes 2-D numeric ``X``; the checks that do not fit on
such data (parameters default-constructible, no attributes set in ``__init__``, ``get_params``
invariance, ``set_params``) are run in ``tests/integrations/test_sklearn.py``, the others do
not apply to sequence data. The learner's parameters are keyword arguments beyond
``__init__``'s signature
(every learner has its own), so ``get_params`` is written here rather than read from the
signature; the check for attributes set in ``__init__`` runs on the estimator's own ones.
"""

from __future__ import annotations

from collections.abc import Sequence

from sklearn.base import BaseEstimator

from tagger.api import Tagger, train
from tagger.errors import TaggerError
from tagger.sentence import Sentence
from tagger.training.config import TrainingConfig

#: the estimator's own parameters (the learner's come on top)
OWN_PARAMS = ("features", "learner", "seed", "select", "max_seconds")


def _sentence(tokens, labels=None) -> Sentence:
    """A sentence from a token list: strings are one column, tuples several."""
    tokens = list(tokens)
    if tokens and isinstance(tokens[0], (tuple, list)):
        columns = [list(col) for col in zip(*tokens)]
        if any(len(t) != len(columns) for t in tokens):
            raise TaggerError("every token of a sentence must have the same number of columns")
    else:
        columns = [list(tokens)]
    for col in columns:
        for tok in col:
            if not isinstance(tok, str):
                raise TaggerError(
                    f"tokens must be strings (or tuples of strings); got "
                    f"{type(tok).__name__} {tok!r}"
                )
    return Sentence(columns, None if labels is None else list(labels))


def _sentences(X, y=None) -> list[Sentence]:
    if isinstance(X, str) or not hasattr(X, "__len__"):
        raise TaggerError("X must be a list of sentences, each a list of tokens")
    if y is None:
        return [_sentence(x) for x in X]
    if len(X) != len(y):
        raise TaggerError(f"X has {len(X)} sentences but y has {len(y)} label sequences")
    out = []
    for i, (x, labels) in enumerate(zip(X, y)):
        if isinstance(labels, str) or len(x) != len(labels):
            raise TaggerError(
                f"sentence {i}: {len(x)} tokens but "
                f"{len(labels) if not isinstance(labels, str) else 1} labels"
            )
        out.append(_sentence(x, labels))
    return out


class SparseTaggerEstimator(BaseEstimator):
    """scikit-learn estimator wrapping :class:`tagger.api.Tagger` (see the module docstring)."""

    def __init__(
        self,
        features: str | None = None,
        learner: str | None = None,
        seed: int = 0,
        select: bool = True,
        max_seconds: float = 0.0,
        **learner_params,
    ):
        self.features = features
        self.learner = learner
        self.seed = seed
        self.select = select
        self.max_seconds = max_seconds
        for key, value in learner_params.items():
            setattr(self, key, value)

    def _learner_params(self) -> dict:
        """The learner's parameters given: every public attribute that is not one of the
        estimator's own nor learned (fitted attributes end in ``_``); checked by fit."""
        return {
            k: v
            for k, v in vars(self).items()
            if k not in OWN_PARAMS and not k.startswith("_") and not k.endswith("_")
        }

    def get_params(self, deep: bool = True) -> dict:
        return {**{k: getattr(self, k) for k in OWN_PARAMS}, **self._learner_params()}

    def set_params(self, **params) -> SparseTaggerEstimator:
        for key, value in params.items():
            setattr(self, key, value)
        return self

    # ------------------------------------------------------------------ fitting
    def fit(
        self, X: Sequence, y: Sequence, X_dev: Sequence | None = None, y_dev: Sequence | None = None
    ) -> SparseTaggerEstimator:
        """Train on token sequences ``X`` with label sequences ``y`` (``X_dev``/``y_dev``: dev
        data for the learners that score it and for the choice of the strength)."""
        dev = None if X_dev is None else _sentences(X_dev, y_dev)
        self.tagger_ = train(
            TrainingConfig(source=type(self).__name__),
            train=_sentences(X, y),
            dev=dev,
            features=self.features,
            learner=self.learner,
            params=self._learner_params(),
            seed=self.seed,
            select=self.select,
            max_seconds=self.max_seconds,
        )
        self.classes_ = list(self.tagger_.labels_.labels)
        return self

    # ------------------------------------------------------------------ using
    def predict(self, X: Sequence) -> list[list[str]]:
        return self._fitted().predict(_sentences(X))

    def predict_marginals(self, X: Sequence) -> list[list[dict[str, float]]]:
        """Per token, the probability of every label (CRF learners only), as sklearn-crfsuite's
        ``predict_marginals`` gives it."""
        tagger = self._fitted()
        names = self.classes_
        return [
            [dict(zip(names, map(float, row))) for row in m]
            for m in tagger.predict_marginals(_sentences(X))
        ]

    def score(self, X: Sequence, y: Sequence) -> float:
        """Chunk F1 (conlleval) for BIO chunk labels, else token accuracy, as a fraction."""
        m = self._fitted().evaluate(_sentences(X, y))
        return float(m["f1"] if m.get("chunk_level") else m["accuracy"])

    def _fitted(self) -> Tagger:
        from sklearn.exceptions import NotFittedError

        if not hasattr(self, "tagger_"):
            raise NotFittedError("this SparseTaggerEstimator is not fitted yet; call fit first")
        return self.tagger_
