"""A scikit-learn estimator over token sequences: :class:`SparseTaggerEstimator`.

``X`` is a list of sentences, each a list of tokens: strings (one input column, the word), or
tuples of strings (several columns, e.g. ``(word, pos)`` for the ``chunk`` features). ``y`` is
the list of their label lists: strings, or integers, which ``predict`` returns as integers.
Anything else (a bare string as a sentence, ``None`` labels, a generator) is refused with an
:class:`EstimatorInputError`, a :class:`~tagger.errors.TaggerError` that is also a
``ValueError`` and a ``TypeError`` (see :mod:`tagger.integrations.sklearn_inputs`).

Every setting is a constructor parameter, stored untouched: the estimator's own
(``features``, ``learner``, ``seed``, ``select``, ``max_seconds``) and any parameter of the
learner by its name (``radius=3000``, ``c1=0.1``; ``tagger learners`` lists them), so
``GridSearchCV(SparseTaggerEstimator(), {"radius": [...]})`` and ``clone`` work. Validation
happens in :meth:`fit`, as scikit-learn asks (a value of the estimator's own parameters that
it cannot use is an :class:`EstimatorParameterError`, worded as scikit-learn words its own),
and training is :func:`tagger.train`'s, with its defaults: the feature preset follows the data
(``chunk`` for tokens with a POS column, ``pos`` for words alone) and the regularization
strength is chosen on a held-out tenth of ``X`` (or on ``X_dev``) unless ``select=False`` or a
parameter sets it, as ``tagger train`` does.

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
from tagger.integrations.sklearn_inputs import (
    EstimatorInputError,
    EstimatorParameterError,
    check_own_params,
    labeled,
    sentences,
)
from tagger.training.config import TrainingConfig

__all__ = ["EstimatorInputError", "EstimatorParameterError", "SparseTaggerEstimator"]

#: the estimator's own parameters (the learner's come on top)
OWN_PARAMS = ("features", "learner", "seed", "select", "max_seconds")


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
        data for the learners that score it and for the choice of the strength). Labels are
        strings or integers; ``predict`` returns them as they were given."""
        check_own_params(self.features, self.learner, self.seed, self.select, self.max_seconds)
        train_sentences, ints = labeled(X, y)
        dev = None
        if (X_dev is None) != (y_dev is None):
            raise EstimatorInputError("give X_dev and y_dev together, or neither")
        if X_dev is not None:
            dev, dev_ints = labeled(X_dev, y_dev)
            if (ints is None) != (dev_ints is None):
                raise EstimatorInputError(
                    "y and y_dev hold labels of different types (strings and integers); "
                    "use one type"
                )
        features = self.features
        self.tagger_ = train(
            TrainingConfig(source=type(self).__name__),
            train=train_sentences,
            dev=dev,
            features=None if features is None else str(features),
            learner=self.learner,
            params=self._learner_params(),
            seed=self.seed,
            select=self.select,
            max_seconds=self.max_seconds,
        )
        names = list(self.tagger_.labels_.labels)
        # integer labels as given, in their own order (the model keeps them as strings)
        self.classes_ = names if ints is None else sorted(ints[n] for n in names)
        return self

    # ------------------------------------------------------------------ using
    def predict(self, X: Sequence) -> list[list]:
        """The labels of every token of ``X``, of the type ``y`` had in :meth:`fit`."""
        tagger = self._fitted()
        original = self._originals()
        return [[original[lab] for lab in labs] for labs in tagger.predict(self._inputs(X))]

    def predict_marginals(self, X: Sequence) -> list[list[dict[str, float]]]:
        """Per token, the probability of every label (CRF learners only), as sklearn-crfsuite's
        ``predict_marginals`` gives it."""
        tagger = self._fitted()
        original = self._originals()
        names = [original[n] for n in tagger.labels_.labels]
        return [
            [dict(zip(names, map(float, row))) for row in m]
            for m in tagger.predict_marginals(self._inputs(X))
        ]

    def score(self, X: Sequence, y: Sequence) -> float:
        """Chunk F1 (conlleval) for BIO chunk labels, else token accuracy, as a fraction."""
        tagger = self._fitted()
        spec = tagger.featurizer_.spec
        gold, _ = labeled(X, y, spec.n_columns, spec.columns[: spec.n_columns])
        m = tagger.evaluate(gold)
        return float(m["f1"] if m.get("chunk_level") else m["accuracy"])

    def _fitted(self) -> Tagger:
        from sklearn.exceptions import NotFittedError

        if not hasattr(self, "tagger_"):
            raise NotFittedError("this SparseTaggerEstimator is not fitted yet; call fit first")
        return self.tagger_

    def _inputs(self, X):
        spec = self.tagger_.featurizer_.spec
        return sentences(X, spec.n_columns, spec.columns[: spec.n_columns])

    def _originals(self) -> dict:
        """Each label as the model writes it (a string) -> as ``y`` gave it."""
        return {str(c): c for c in self.classes_}
