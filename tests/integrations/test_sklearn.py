"""The scikit-learn estimator: the parameter contract (scikit-learn's own checks that apply to
sequence data), GridSearchCV against a hand-rolled loop, cross_val_score, pickling, marginals
and bad input."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score  # noqa: E402
from sklearn.utils import estimator_checks as checks  # noqa: E402

from tagger.errors import TaggerError  # noqa: E402
from tagger.integrations.sklearn import SparseTaggerEstimator  # noqa: E402
from tagger.io import load_corpus  # noqa: E402

from _helpers import ROOT  # noqa: E402


def _xy(name):
    sents = load_corpus(ROOT / "corpora" / name)
    return [list(zip(*s.columns)) for s in sents], [list(s.labels) for s in sents]


X, Y = _xy("sample_chunk.txt")
X_DEV, Y_DEV = _xy("sample_chunk_dev.txt")


@pytest.mark.parametrize(
    "check",
    [
        "check_parameters_default_constructible",
        "check_no_attributes_set_in_init",
        "check_get_params_invariance",
        "check_set_params",
    ],
)
def test_scikit_learn_parameter_checks(check):
    # the learner's parameters are keyword arguments beyond the signature, which
    # check_no_attributes_set_in_init cannot see: it runs on the estimator's own parameters
    learner_params = (
        {} if check == "check_no_attributes_set_in_init" else {"epochs": 3, "radius": 500.0}
    )
    getattr(checks, check)(
        "SparseTaggerEstimator",
        SparseTaggerEstimator(features="chunk", learner="m3n-subgradient", **learner_params),
    )


def test_parameters_are_stored_untouched_and_cloned():
    est = SparseTaggerEstimator(features="chunk", learner="crf-l1", c1=0.5)
    assert est.get_params() == {
        "features": "chunk",
        "learner": "crf-l1",
        "seed": 0,
        "select": True,
        "max_seconds": 0.0,
        "c1": 0.5,
    }
    again = clone(est.set_params(c2=0.1))
    assert again.get_params() == dict(est.get_params(), c2=0.1)


def test_grid_search_equals_a_hand_rolled_loop():
    radii = [100.0, 400.0, 1600.0]
    base = SparseTaggerEstimator(features="chunk", learner="m3n-subgradient", epochs=4)
    search = GridSearchCV(base, {"radius": radii}, cv=3).fit(X, Y)
    means = []
    for r in radii:
        scores = []
        for train, test in KFold(3).split(X):
            est = SparseTaggerEstimator(
                features="chunk", learner="m3n-subgradient", epochs=4, radius=r
            )
            est.fit([X[i] for i in train], [Y[i] for i in train])
            scores.append(est.score([X[i] for i in test], [Y[i] for i in test]))
        means.append(np.mean(scores))
    assert search.best_score_ == pytest.approx(max(means), abs=1e-12)
    assert search.best_params_ == {"radius": radii[int(np.argmax(means))]}
    assert np.allclose(search.cv_results_["mean_test_score"], means)


def test_cross_val_score_and_score_is_chunk_f1():
    scores = cross_val_score(
        SparseTaggerEstimator(features="chunk", select=False, epochs=3), X, Y, cv=2
    )
    assert len(scores) == 2 and all(0.0 < s <= 1.0 for s in scores)
    est = SparseTaggerEstimator(features="chunk", select=False, epochs=3).fit(X, Y)
    assert est.score(X_DEV, Y_DEV) == pytest.approx(
        est.tagger_.evaluate(load_corpus(ROOT / "corpora" / "sample_chunk_dev.txt"))["f1"]
    )
    assert est.classes_ == sorted({lab for y in Y for lab in y})


def test_a_pickled_estimator_predicts_identically():
    est = SparseTaggerEstimator(
        features="chunk", learner="m3n-subgradient", epochs=3, radius=800.0
    ).fit(X, Y)
    again = pickle.loads(pickle.dumps(est))
    assert again.predict(X_DEV) == est.predict(X_DEV)
    assert again.get_params() == est.get_params()


def test_marginals_of_a_crf_and_token_lists_of_strings():
    words = [[w for w, _ in x] for x in X]
    tags = [[p for _, p in x] for x in X]  # POS tagging from the words alone
    est = SparseTaggerEstimator(features="pos", learner="crf-l1", c1=0.5, epochs=20)
    est.fit(words, tags)
    marg = est.predict_marginals(words[:3])
    pred = est.predict(words[:3])
    for m, p in zip(marg, pred):
        assert len(m) == len(p)
        for row in m:
            assert sum(row.values()) == pytest.approx(1.0)
            assert max(row, key=row.get) in est.classes_


@pytest.mark.parametrize(
    "args, fragment",
    [
        ((X[:3], Y[:2]), "3 sentences but y has 2"),
        ((X[:2], [Y[0], Y[1][:-1]]), "sentence 1:"),
        (([[1, 2]], [["A", "B"]]), "sentence 0, token 0: expected a string"),
    ],
)
def test_bad_input_is_a_tagger_error(args, fragment):
    with pytest.raises(TaggerError, match=fragment):
        SparseTaggerEstimator(features="chunk").fit(*args)


WORDS = [[w for w, _ in x] for x in X[:30]]
CHUNKS = Y[:30]


def _quick(**params):
    return SparseTaggerEstimator(features="pos", select=False, epochs=2, **params)


def test_integer_labels_come_back_as_integers():
    """As scikit-learn classifiers do: integer labels in, the same integers out of predict,
    classes_ sorted as numbers, and the same model as with their strings."""
    names = sorted({lab for y in CHUNKS for lab in y})
    ints = [[names.index(lab) for lab in y] for y in CHUNKS]
    est = _quick().fit(WORDS, ints)
    as_text = _quick().fit(WORDS, [[str(i) for i in y] for y in ints])
    assert est.classes_ == list(range(len(names)))
    pred = est.predict(WORDS[:5])
    assert all(type(lab) is int for p in pred for lab in p)
    assert pred == [[int(lab) for lab in p] for p in as_text.predict(WORDS[:5])]
    assert est.score(WORDS, ints) == pytest.approx(
        as_text.score(WORDS, [list(map(str, y)) for y in ints])
    )
    numpy_ints = _quick().fit(WORDS, [np.array(y) for y in ints])
    assert numpy_ints.predict(WORDS[:5]) == pred


ONE = [["The", "cat"]]


@pytest.mark.parametrize(
    "X_, y_, fragment",
    [
        (ONE, [[None, None]], "sentence 0, token 0: the label is None"),
        (ONE, [["B-NP", 1]], "y mixes string labels ('B-NP', sentence 0, token 0) and integer"),
        (ONE, [[1.5, 2.5]], "the label is 1.5; labels must be strings or integers"),
        (ONE, (y for y in [["A", "B"]]), "got generator, which cannot be indexed (pass list(y))"),
        ((x for x in ONE), [["A", "B"]], "got generator, which cannot be indexed (pass list(X))"),
        (["The cat"], [["A", "B"]], "sentence 0 is a string ('The cat'), not a list of tokens"),
        ("The cat", [["A", "B"]], "X is a string"),
        ([[("The", "DT"), "cat"]], [["A", "B"]], "token 1: expected a tuple of 2 strings"),
        ([["The", ("cat", "NN")]], [["A", "B"]], "token 1: expected a string like"),
        ([["The"], [("cat", "NN")]], [["A"], ["B"]], "sentence 1 have 2 column(s)"),
        (ONE, ["AB"], "y[0] is a string"),
    ],
)
def test_bad_X_and_y_are_one_error_of_the_types_scikit_learn_users_catch(X_, y_, fragment):
    from tagger.integrations.sklearn import EstimatorInputError

    with pytest.raises(EstimatorInputError, match=re.escape(fragment)) as caught:
        _quick().fit(X_, y_)
    assert isinstance(caught.value, TaggerError)
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, TypeError)


@pytest.mark.parametrize(
    "param, value, expected",
    [
        ("features", 3, "a feature preset name"),
        ("learner", 2, "a learner name"),
        ("seed", "1", "an integer"),
        ("seed", True, "an integer"),
        ("select", "yes", "True or False"),
        ("max_seconds", -1, "a number of seconds >= 0"),
        ("max_seconds", float("nan"), "a number of seconds >= 0"),
    ],
)
def test_bad_own_parameters_are_named_as_scikit_learn_names_them(param, value, expected):
    from tagger.integrations.sklearn import EstimatorParameterError

    est = _quick().set_params(**{param: value})
    message = f"The '{param}' parameter of SparseTaggerEstimator must be {expected}"
    with pytest.raises(EstimatorParameterError, match=re.escape(message)) as caught:
        est.fit(WORDS, CHUNKS)
    assert isinstance(caught.value, (TaggerError, ValueError, TypeError))
    assert isinstance(caught.value, TypeError)


def test_predict_refuses_a_string_for_a_sentence_and_tokens_the_model_cannot_read():
    from tagger.integrations.sklearn import EstimatorInputError

    words = _quick().fit(WORDS, CHUNKS)
    with pytest.raises(EstimatorInputError, match=re.escape("'hello world'.split()")):
        words.predict(["hello world"])
    with pytest.raises(EstimatorInputError, match=re.escape("pass [X]")):
        words.predict(["hello", "world"])
    with pytest.raises(EstimatorInputError, match="found str 'NN'"):
        words.predict([[("a", "DT"), "NN"]])
    chunker = SparseTaggerEstimator(features="chunk", select=False, epochs=2).fit(X[:30], CHUNKS)
    with pytest.raises(
        EstimatorInputError, match=re.escape("reads 2 columns per token (word, pos)")
    ):
        chunker.predict(WORDS[:2])
    assert len(chunker.predict(X[:2])[1]) == len(X[1])


def test_an_unknown_learner_parameter_is_reported_by_fit():
    with pytest.raises(TaggerError, match="params.colour: expected a parameter of"):
        SparseTaggerEstimator(features="chunk", colour=1).fit(X, Y)


def test_the_readme_example_runs(tmp_path):
    import re
    import shutil
    import subprocess
    import sys

    text = (ROOT / "docs" / "sklearn.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    shutil.copytree(ROOT / "corpora", tmp_path / "corpora")
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("{'radius': ")
