"""``from tagger.sklearn import SparseTaggerEstimator``: the scikit-learn estimator, which lives
in :mod:`tagger.integrations.sklearn`."""

from tagger.integrations.sklearn import SparseTaggerEstimator

__all__ = ["SparseTaggerEstimator"]
