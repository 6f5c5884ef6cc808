"""Taggers and feature specifications survive pickle and deepcopy (joblib, multiprocessing,
Dask and Ray carry them that way): the copy predicts exactly what the original predicts."""

from __future__ import annotations

import copy
import pickle
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

from tagger.api import Tagger
from tagger.features import FeatureSpec, Featurizer
from tagger.io import load_corpus

from _helpers import SAMPLE, SAMPLE_DEV


@pytest.fixture(scope="module")
def fitted():
    return Tagger(features="chunk", params={"epochs": 3}, seed=2, select=False).fit(
        load_corpus(SAMPLE)
    )


@pytest.mark.parametrize("preset", ["chunk", "pos", "citation"])
def test_a_feature_spec_pickles_to_the_same_features(preset):
    spec = FeatureSpec.load(preset)
    again = pickle.loads(pickle.dumps(spec))
    assert again.name == spec.name and again.template_names == spec.template_names
    sents = load_corpus(SAMPLE)
    if preset != "chunk":
        for s in sents:
            del s.columns[1:]
    a, b = Featurizer(spec), Featurizer(again)
    a.fit(sents)
    b.fit(sents)
    xa, xb = a.transform(sents), b.transform(sents)
    assert np.array_equal(xa.attrs, xb.attrs) and np.array_equal(xa.indptr, xb.indptr)


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_a_fitted_tagger_copies_and_predicts_the_same(fitted, how):
    again = pickle.loads(pickle.dumps(fitted)) if how == "pickle" else copy.deepcopy(fitted)
    dev = load_corpus(SAMPLE_DEV)
    assert again.predict(dev) == fitted.predict(dev)
    assert np.array_equal(again.weights_, fitted.weights_)
    assert (again.learner, again.params, again.seed) == (fitted.learner, fitted.params, 2)


def test_an_unfitted_tagger_keeps_its_parameters():
    spec = FeatureSpec.load("pos")
    t = Tagger(
        features=spec, learner="crf-l1", params={"c1": 0.5}, seed=3, select=True, max_seconds=9.0
    )
    again = pickle.loads(pickle.dumps(t))
    assert (again.learner, again.params, again.seed, again.select, again.max_seconds) == (
        "crf-l1",
        {"c1": 0.5},
        3,
        True,
        9.0,
    )
    assert again.features.template_names == spec.template_names and again.model_ is None


def _predict_in_worker(args):
    tagger, sentences = args
    return tagger.predict(sentences)


def test_a_tagger_goes_to_another_process(fitted):
    dev = load_corpus(SAMPLE_DEV)
    with ProcessPoolExecutor(max_workers=1) as pool:
        assert pool.submit(_predict_in_worker, (fitted, dev)).result() == fitted.predict(dev)
