"""One contract over every learner, then what is specific to each.

Every entry of ``tagger.learners.LEARNERS``, through the public ``Tagger``:

1. fits a separable toy chain to zero training error with its default parameters;
2. survives a save/load round trip with identical weights and predictions;
3. rejects bad parameters with a message naming the parameter, the allowed range and the value;
4. gives identical weights for the same seed;
5. reports epoch, objective, non-zero count and (with dev data) a dev score after every epoch.

The toy chain: labels cycle A -> B -> C -> A, each label has its own words, and the word
``amb`` may stand for any label; it can only be labeled through the transitions, since the
features see the current word alone.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tagger.api import Tagger
from tagger.chain.layout import ChainModel
from tagger.errors import ParameterError
from tagger.evaluation.labels import LabelIndex
from tagger.features import FeatureSpec, Featurized, Featurizer
from tagger.inference import viterbi_batch
from tagger.io import read_corpus
from tagger.learners import LEARNERS, get_learner
from tagger.learners.base import Learner, TrainingProblem
from tagger.sentence import Sentence

from _brute import labelings

# learners that need unlabeled data (ssvm-annealing) have their own tests (test_ssvm_annealing.py)
NAMES = sorted(n for n in LEARNERS if not getattr(LEARNERS[n], "needs_unlabeled", False))


def _epochs(name: str, k: int) -> dict:
    """``epochs=k`` for an iterative learner; nothing for a closed-form one (the HMM)."""
    return {} if LEARNERS[name].closed_form else {"epochs": k}


SAMPLES = Path(__file__).resolve().parents[2] / "corpora"

WORDS = {"A": ["a1", "a2", "a3"], "B": ["b1", "b2"], "C": ["c1", "c2", "c3"]}
NEXT = {"A": "B", "B": "C", "C": "A"}
SPEC = FeatureSpec.from_dict(
    {"featurizer": {"name": "toy", "columns": ["word"], "templates": ["word[0]"]}}
)


def toy_chain(n: int, seed: int, p_amb: float = 0.3) -> list[Sentence]:
    """Separable: the first word is never ambiguous, every later label follows the cycle."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        label = str(rng.choice(sorted(WORDS)))
        words, labels = [], []
        for t in range(int(rng.integers(1, 9))):
            words.append("amb" if t > 0 and rng.random() < p_amb else str(rng.choice(WORDS[label])))
            labels.append(label)
            label = NEXT[label]
        out.append(Sentence([words], labels))
    return out


def token_errors(pred, sentences) -> int:
    assert [len(p) for p in pred] == [len(s) for s in sentences]
    return sum(p != g for ps, s in zip(pred, sentences) for p, g in zip(ps, s.labels))


@pytest.fixture(scope="module")
def train() -> list[Sentence]:
    return toy_chain(200, seed=0)


@pytest.fixture(scope="module")
def fitted(train) -> dict[str, Tagger]:
    return {
        name: Tagger(features=SPEC, learner=name, seed=3, select=False).fit(train) for name in NAMES
    }


# ------------------------------------------------------------------------------ 1. separable chain


@pytest.mark.parametrize("name", NAMES)
def test_fits_separable_chain_to_zero_error(name, fitted, train):
    tg = fitted[name]
    assert sum(w == "amb" for s in train for w in s.tokens) > 50  # transitions are needed
    assert token_errors(tg.predict(train), train) == 0
    held_out = toy_chain(50, seed=99)
    assert token_errors(tg.predict(held_out), held_out) == 0
    # the ambiguous word alone follows the learned cycle from a known start
    assert tg.predict([Sentence([["b1", "amb", "amb", "amb", "amb"]])]) == [
        ["B", "C", "A", "B", "C"]
    ]


# ------------------------------------------------------------------------------ 2. save / load


def real_valued_problem(n: int, seed: int):
    """Each token carries one real-valued attribute whose sign is its label (0 or 1); a
    learner that ignored the values could not tell the labels apart."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 7, size=n)
    n_tok = int(lengths.sum())
    values = rng.uniform(0.5, 2.0, size=n_tok) * rng.choice([-1.0, 1.0], size=n_tok)
    X = Featurized(
        np.arange(n_tok + 1, dtype=np.int64),
        np.zeros(n_tok, dtype=np.int32),
        np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        values,
    )
    y = (values > 0).astype(np.int32)
    return X, y


@pytest.mark.parametrize("name", NAMES)
def test_real_valued_attributes_are_learned(name):
    X, y = real_valued_problem(150, seed=1)
    model = ChainModel.from_data(X, y, n_labels=2, n_attrs=1)
    if name == "hmm":  # a generative model of counts: values have no place in it
        with pytest.raises(ParameterError, match="real-valued"):
            get_learner(name)().fit(TrainingProblem(model, X, y), seed=0)
        return
    w = get_learner(name)().fit(TrainingProblem(model, X, y), seed=0)
    pred, _ = viterbi_batch(model.state_scores(X, w), X.offsets, model.transitions(w))
    assert np.array_equal(pred, y)


@pytest.mark.parametrize("name", NAMES)
def test_save_load_round_trip(name, fitted, train, tmp_path):
    tg = fitted[name]
    path = tmp_path / f"{name}.tgm"
    size = tg.save(path)
    assert size == path.stat().st_size > 0
    back = Tagger.load(path)
    np.testing.assert_array_equal(back.weights_, tg.weights_)
    np.testing.assert_array_equal(back.model_.attr_ptr, tg.model_.attr_ptr)
    np.testing.assert_array_equal(back.model_.param_label, tg.model_.param_label)
    assert back.labels_.labels == tg.labels_.labels
    assert back.learner == name
    sentences = train + toy_chain(30, seed=5) + [Sentence([["zzz", "amb", "c2"]]), Sentence([[]])]
    assert back.predict(sentences) == tg.predict(sentences)
    # saving the loaded model writes the same bytes
    again = tmp_path / "again.tgm"
    back.save(again)
    assert again.read_bytes() == path.read_bytes()


# ------------------------------------------------------------------------------ 3. bad parameters


def _range_text(p) -> str:
    """The allowed range written out from the parameter table row (independent of the class)."""
    if p.choices is not None:
        return "one of " + ", ".join(repr(c) for c in p.choices)
    kind = {float: "a float", int: "an integer", bool: "a boolean", str: "a string"}[p.kind]
    if p.low is None and p.high is None:
        return kind
    lo = "-inf" if p.low is None else f"{p.low:g}"
    hi = "inf" if p.high is None else f"{p.high:g}"
    return f"{kind} in {'(' if p.low_open else '['}{lo}, {hi}{']' if p.high is not None else ')'}"


def _bad_values(p) -> list:
    """Values outside each parameter's allowed range or of the wrong type."""
    if p.choices is not None:
        return ["no-such-choice", 3]
    if p.kind is bool:
        return ["yes", 1]
    bad = ["3"]
    if p.kind is int:
        bad.append(2.5)
    if p.kind is float:
        bad += [float("nan"), float("inf")]
    if p.low is not None:
        bad.append(p.low if p.low_open else p.low - 1)
        bad.append(p.low - 1000)
    if p.high is not None:
        bad.append(p.high + 1)
    return bad


_BAD_CASES = [
    (name, p.name, value)
    for name in NAMES
    for p in LEARNERS[name].params
    for value in _bad_values(p)
]


@pytest.mark.parametrize(
    "name, param, value", _BAD_CASES, ids=[f"{n}-{p}-{v!r}" for n, p, v in _BAD_CASES]
)
def test_bad_parameter_is_rejected_with_its_range(name, param, value, train):
    p = LEARNERS[name].param(param)
    with pytest.raises(ParameterError) as info:
        Tagger(features=SPEC, learner=name, params={param: value}, select=False).fit(train)
    msg = str(info.value)
    assert "\n" not in msg
    assert f"'{param}'" in msg
    assert _range_text(p) in msg
    assert f"Got {value!r}" in msg


@pytest.mark.parametrize(
    "name, params, fragments",
    [
        ("m3n-subgradient", {"radius": -1}, ["'radius'", "M3NSubgradient", "(0, inf)", "Got -1 "]),
        ("m3n-subgradient", {"radius": 0.0}, ["'radius'", "(0, inf)", "Got 0.0 "]),
        ("m3n-subgradient", {"epochs": 0}, ["'epochs'", "integer in [1, inf)", "Got 0 "]),
        ("m3n-subgradient", {"momentum": 1.0}, ["'momentum'", "[0, 0.999]", "Got 1.0 "]),
        (
            "m3n-subgradient",
            {"decay": "fast"},
            ["'decay'", "'sqrt', 'inverse', 'constant'", "Got 'fast' "],
        ),
        (
            "m3n-l2-subgradient",
            {"lambda": 0},
            ["'lambda'", "M3NL2Subgradient", "(0, inf)", "Got 0 "],
        ),
        ("m3n-l2-subgradient", {"epochs": -3}, ["'epochs'", "[1, inf)", "Got -3 "]),
    ],
)
def test_bad_parameter_messages_by_example(name, params, fragments, train):
    with pytest.raises(ParameterError) as info:
        Tagger(features=SPEC, learner=name, params=params, select=False).fit(train)
    for fragment in fragments:
        assert fragment in str(info.value)


@pytest.mark.parametrize("name", NAMES)
def test_unknown_parameter_is_rejected(name, train):
    with pytest.raises(ParameterError) as info:
        Tagger(features=SPEC, learner=name, params={"colour": 1}, select=False).fit(train)
    msg = str(info.value)
    assert "'colour'" in msg
    for p in LEARNERS[name].params:  # lists what is allowed
        assert p.name in msg


@pytest.mark.parametrize("name", NAMES)
def test_parameters_are_checked_before_the_data(name):
    # no sentences at all: the parameter error comes first
    first = LEARNERS[name].params[0]
    bad = {first.name: 0} if first.kind is not bool else {first.name: "maybe"}
    with pytest.raises(ParameterError, match=f"'{first.name}'"):
        Tagger(features=SPEC, learner=name, params=bad, select=False).fit([])


def test_unknown_learner():
    with pytest.raises(ParameterError, match="unknown learner 'nope'.*m3n-subgradient"):
        Tagger(features=SPEC, learner="nope", select=False).fit(toy_chain(3, 0))
    with pytest.raises(ParameterError, match="m3n-l2-subgradient"):
        get_learner("nope")


@pytest.mark.parametrize("name", NAMES)
def test_parameter_table(name):
    cls = LEARNERS[name]
    assert issubclass(cls, Learner) and cls.name == name
    names = [p.name for p in cls.params]
    assert len(names) == len(set(names)) and ("epochs" in names) != cls.closed_form
    defaults = cls().validated()  # the defaults are valid
    assert defaults == {p.name: p.default for p in cls.params}
    for p in cls.params:
        assert p.help
        # --set key=value parses back to the default
        text = str(p.default).lower() if p.kind is bool else str(p.default)
        assert cls.parse_settings([f"{p.name}={text}"]) == {p.name: p.default}
    first = cls.params[0].name
    with pytest.raises(ParameterError, match="key=value"):
        cls.parse_settings([first])
    if cls.params[0].kind is not str:
        with pytest.raises(ParameterError, match=f"'{first}'.*Got 'many'"):
            cls.parse_settings([f"{first}=many"])
    # every learner's docstring states its objective
    assert "Objective" in (cls.__doc__ or "")


# ------------------------------------------------------------------------------ 4. seeds


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_weights(name, fitted, train):
    again = Tagger(features=SPEC, learner=name, seed=3, select=False).fit(train)
    np.testing.assert_array_equal(again.weights_, fitted[name].weights_)
    np.testing.assert_array_equal(again.model_.attr_ptr, fitted[name].model_.attr_ptr)
    assert [r["objective"] for r in again.trace_] == [r["objective"] for r in fitted[name].trace_]


@pytest.mark.parametrize("name", NAMES)
def test_different_seeds_may_differ(name, fitted, train):
    if not any(p.name == "shuffle" for p in LEARNERS[name].params):
        pytest.skip("the learner has no random order")
    others = [
        Tagger(features=SPEC, learner=name, seed=s, select=False).fit(train).weights_
        for s in (4, 5)
    ]
    ref = fitted[name].weights_
    assert any(w.shape != ref.shape or not np.array_equal(w, ref) for w in others)


@pytest.mark.parametrize("name", NAMES)
def test_seed_must_be_an_integer(name, train):
    from tagger.errors import TaggerError

    with pytest.raises(TaggerError, match="seed: expected an integer"):
        Tagger(features=SPEC, learner=name, seed="1", select=False).fit(train)


# ------------------------------------------------------------------------------ 5. progress


@pytest.mark.parametrize("name", NAMES)
def test_progress_rows(name, train):
    rows = []
    dev = toy_chain(40, seed=11)
    epochs = 4
    tg = Tagger(features=SPEC, learner=name, params=_epochs(name, epochs), seed=1, select=False)
    tg.fit(train, dev=dev, progress=rows.append)
    seen = [r["epoch"] for r in rows]
    # a stopping rule may end training early: convergence, or a stage that scored lower on
    # dev than an earlier one (whose row is then marked selected, on the tagger's trace)
    kept = [r for r in tg.trace_ if r.get("selected")]
    if rows and (rows[-1].get("converged") is True or kept):
        assert seen == list(range(1, len(rows) + 1)) and len(rows) <= epochs
    else:
        assert seen == list(range(1, epochs + 1))
    for r in rows:
        assert r["learner"] == name
        assert isinstance(r["objective"], float) and math.isfinite(r["objective"])
        assert r["objective"] >= 0
        assert isinstance(r["nonzero"], int) and r["nonzero"] > 0
        assert 0.0 <= r["dev_acc"] <= 100.0

    # the rows are kept on the tagger too (where the kept one may be marked later)
    def unmarked(r):
        return {k: v for k, v in r.items() if k != "selected"}

    assert [unmarked(dict(r, learner=name)) for r in tg.trace_] == [unmarked(r) for r in rows]
    # the last row, or the one kept, describes the final weights: its non-zero count and its
    # dev score
    final = kept[-1] if kept else rows[-1]
    assert final["nonzero"] == tg.n_nonzero_ == tg.info_["n_nonzero"]
    assert final["dev_acc"] == round(100 * tg.evaluate(dev)["accuracy"], 2)


@pytest.mark.parametrize("name", NAMES)
def test_progress_reports_chunk_f1_for_bio_labels(name):
    path, dev_path = SAMPLES / "sample_chunk.txt", SAMPLES / "sample_chunk_dev.txt"
    if not path.is_file() or not dev_path.is_file():
        pytest.skip("sample chunk corpora are missing")
    train, dev = list(read_corpus(path)), list(read_corpus(dev_path))
    rows = []
    tg = Tagger(features="chunk", learner=name, params=_epochs(name, 2), seed=0, select=False)
    tg.fit(train, dev=dev, progress=rows.append)
    if LEARNERS[name].closed_form:
        assert len(rows) == 1
    else:  # two epochs, or fewer when a stopping rule ends training
        assert len(rows) == 2 or (len(rows) == 1 and rows[0]["converged"] is True)
    result = tg.evaluate(dev)
    assert rows[-1]["dev_f1"] == round(100 * result["f1"], 2)
    assert rows[-1]["dev_acc"] == round(100 * result["accuracy"], 2)
    no_dev = []
    Tagger(features="chunk", learner=name, params=_epochs(name, 1), select=False).fit(
        train, progress=no_dev.append
    )
    assert not any(k.startswith("dev_") for k in no_dev[0])


# ------------------------------------------------------------------------- both subgradient M3Ns


@pytest.mark.parametrize("name", ["m3n-subgradient", "m3n-l2-subgradient"])
def test_full_batch_rows_measure_the_hinge_and_the_final_weights(name, train):
    # a batch of at least N sentences is the full batch
    tg = Tagger(
        features=SPEC, learner=name, params={"epochs": 5, "batch_size": 10**6}, seed=0, select=False
    )
    tg.fit(train)
    rows = tg.trace_
    assert [r["batch"] for r in rows] == [len(train)] * 5
    # a full batch is decoded at the weights before the epoch's update: at w = 0 the
    # loss-augmented labeling gets every token wrong, so R_i(0) = T_i
    assert rows[0]["hinge"] == pytest.approx(np.mean([len(s) for s in train]), rel=1e-12)
    assert all(r["hinge"] >= 0 for r in rows)
    w = tg.weights_
    last = rows[-1]
    assert last["nonzero"] == np.count_nonzero(w)
    if name == "m3n-subgradient":
        assert last["objective"] == last["hinge"]
        assert last["l1"] == pytest.approx(np.abs(w).sum(), rel=1e-12)
    else:
        lam = tg.info_["params"]["lambda"]
        assert last["objective"] - last["hinge"] == pytest.approx(0.5 * lam * (w @ w), rel=1e-9)


# ------------------------------------------------------------------------------ m3n-subgradient


@pytest.fixture(scope="module")
def chunk_sample() -> list[Sentence]:
    path = SAMPLES / "sample_chunk.txt"
    if not path.is_file():
        pytest.skip(f"sample corpus {path} is missing")
    return list(read_corpus(path))


def test_smaller_radius_fewer_nonzero_weights_inside_the_ball(chunk_sample):
    nonzero = []
    for radius in (0.5, 5.0, 50.0, 3000.0):
        tg = Tagger(
            features="chunk",
            learner="m3n-subgradient",
            params={"radius": radius, "epochs": 6},
            seed=0,
            select=False,
        ).fit(chunk_sample)
        l1 = float(np.abs(tg.weights_).sum())
        assert l1 <= radius + 1e-9
        if radius <= 5.0:
            # the ball binds: plain steps would leave it, so the projection lands on its surface
            assert l1 == pytest.approx(radius, rel=1e-9)
        nonzero.append(tg.n_nonzero_)
    assert nonzero == sorted(nonzero) and len(set(nonzero)) == len(nonzero), nonzero


def _chunk_problem(sentences):
    featurizer = Featurizer(FeatureSpec.load("chunk"))
    featurizer.fit(sentences)
    X = featurizer.transform(sentences)
    labels = LabelIndex.from_sentences(sentences)
    y = labels.encode([lab for s in sentences for lab in s.labels])
    return TrainingProblem(ChainModel.from_data(X, y, len(labels), featurizer.n_attributes), X, y)


def test_max_nonzero_without_refit_is_the_top_k_truncation(chunk_sample):
    problem = _chunk_problem(chunk_sample)
    n_state = problem.model.n_state
    base = {"radius": 50.0, "epochs": 4}
    full = get_learner("m3n-subgradient")(**base).fit(problem, seed=5)
    k = np.count_nonzero(full[:n_state]) // 3
    cut = get_learner("m3n-subgradient")(**base, max_nonzero=k, refit_epochs=0).fit(problem, seed=5)
    expected = full.copy()
    order = np.argsort(-np.abs(full[:n_state]), kind="stable")
    expected[order[k:]] = 0.0
    np.testing.assert_array_equal(cut, expected)


def test_refit_stays_on_the_kept_weights_inside_the_ball(chunk_sample):
    problem = _chunk_problem(chunk_sample)
    n_state = problem.model.n_state
    base = {"radius": 50.0, "epochs": 4}
    full = get_learner("m3n-subgradient")(**base).fit(problem, seed=5)
    k = np.count_nonzero(full[:n_state]) // 3
    learner = get_learner("m3n-subgradient")(**base, max_nonzero=k, refit_epochs=3)
    w = learner.fit(problem, seed=5)
    strongest = set(np.argsort(-np.abs(full[:n_state]), kind="stable")[:k].tolist())
    assert set(np.flatnonzero(w[:n_state]).tolist()) <= strongest
    assert float(np.abs(w).sum()) <= 50.0 + 1e-9
    assert [r["epoch"] for r in learner.trace_] == list(range(1, 8))
    assert not np.array_equal(w[n_state:], full[n_state:])  # the refit moved the weights


@pytest.mark.parametrize(
    "params",
    [
        {"average_from": 2},
        {"momentum": 0.0, "batch_size": 0},
        {"momentum": 0.5, "batch_size": 1, "decay": "inverse"},
        {"decay": "constant", "shuffle": False, "batch_growth": 2.0},
    ],
)
def test_l1_ball_holds_for_every_variant(params, chunk_sample):
    radius = 3.0
    tg = Tagger(
        features="chunk",
        learner="m3n-subgradient",
        params={"radius": radius, "epochs": 3, **params},
        seed=2,
        select=False,
    ).fit(chunk_sample)
    assert float(np.abs(tg.weights_).sum()) <= radius + 1e-9
    for row in tg.trace_:
        assert row["l1"] <= radius + 1e-9
        assert row["nonzero"] >= 0 and row["below_1e-4"] <= row["nonzero"]


def test_sparser_than_the_l2_variant(chunk_sample):
    l1 = Tagger(
        features="chunk",
        learner="m3n-subgradient",
        params={"radius": 20.0, "epochs": 5},
        seed=0,
        select=False,
    ).fit(chunk_sample)
    l2 = Tagger(
        features="chunk", learner="m3n-l2-subgradient", params={"epochs": 5}, seed=0, select=False
    ).fit(chunk_sample)
    assert l1.info_["n_params"] == l2.info_["n_params"]
    assert l1.n_nonzero_ < l2.n_nonzero_


# ------------------------------------------------------------------------------ m3n-l2-subgradient


@pytest.mark.parametrize("lam", [1e-4, 1e-2, 1.0, 25.0])
def test_l2_variant_stays_in_its_ball(lam, chunk_sample):
    tg = Tagger(
        features="chunk",
        learner="m3n-l2-subgradient",
        params={"lambda": lam, "epochs": 3},
        seed=0,
        select=False,
    ).fit(chunk_sample)
    norm = float(np.linalg.norm(tg.weights_))
    assert norm <= 1.0 / math.sqrt(lam) * (1 + 1e-12)
    if lam >= 1.0:
        assert norm > 0.5 / math.sqrt(lam)  # a strong penalty still leaves a real model
    for row in tg.trace_:
        # the reported objective is the regularized one: lambda/2 ||w||^2 + mean hinge
        assert row["objective"] >= row["hinge"] >= 0


# ------------------------------------------------------------------------------ reference updates
#
# The two subgradient learners against a plain re-implementation of the updates their
# docstrings state, with loss-augmented decoding by enumerating every labeling. A random
# starting point (w0) keeps the argmaxes free of ties.


def _tiny_problem(seed: int):
    from tagger.chain.layout import ChainModel
    from tagger.evaluation.labels import LabelIndex
    from tagger.features import Featurizer
    from tagger.learners.base import TrainingProblem

    rng = np.random.default_rng(seed)
    vocab = ["p", "q", "r", "s"]
    sentences = []
    for _ in range(5):
        T = int(rng.integers(1, 5))
        sentences.append(
            Sentence(
                [[str(rng.choice(vocab)) for _ in range(T)]],
                [str(rng.choice(["X", "Y", "Z"])) for _ in range(T)],
            )
        )
    spec = FeatureSpec.from_dict(
        {"featurizer": {"columns": ["word"], "templates": ["word[0]", "word[-1]", "bias"]}}
    )
    fz = Featurizer(spec).fit(sentences)
    X = fz.transform(sentences)
    index = LabelIndex.from_sentences(sentences)
    y = index.encode([lab for s in sentences for lab in s.labels])
    model = ChainModel.from_data(X, y, len(index), fz.n_attributes)
    return TrainingProblem(model, X, y), rng.standard_normal(model.n_weights)


def _brute_force_subgradient(problem, w, sentences):
    """(mean of f(x, y*) - f(x, y_gold), mean hinge) over the given sentences, y* by enumeration."""
    model, X, y = problem.model, problem.X, problem.y
    g = np.zeros(model.n_weights)
    hinge = []
    for s in sentences:
        a, b = int(X.offsets[s]), int(X.offsets[s + 1])
        gold = y[a:b]
        best, best_y = -np.inf, None
        for lab in labelings(b - a, model.n_labels):
            v = model.score(X, s, lab, w) + np.sum(lab != gold)
            assert v != best  # no ties
            if v > best:
                best, best_y = v, lab
        hinge.append(best - model.score(X, s, gold, w))
        g += model.joint_features(X, s, best_y) - model.joint_features(X, s, gold)
    return g / len(sentences), float(np.mean(hinge))


def _project_l1_sorted(v, z):
    """Duchi et al.'s sort-based form: theta from the largest rho with
    u_rho > (sum_{<=rho} u - z) / rho."""
    u = np.sort(np.abs(v))[::-1]
    if u.sum() <= z:
        return v.copy()
    css = np.cumsum(u)
    j = np.arange(1, len(u) + 1)
    rho = j[u - (css - z) / j > 0][-1]
    theta = (css[rho - 1] - z) / rho
    return np.sign(v) * np.maximum(np.abs(v) - theta, 0.0)


def _width(problem):
    """Mean number of active attributes per token, plus one: the learners divide eta0 by it."""
    X = problem.X
    return 1.0 + sum(int(X.indptr[i + 1] - X.indptr[i]) for i in range(X.n_tokens)) / X.n_tokens


def _batch(n, batch):
    """batch_size 0 means ceil(N / 256) sentences; anything above N is the full batch."""
    return min(n, batch if batch else -(-n // 256))


def _reference_l1(problem, w0, radius, epochs, batch, eta0, momentum, average_from):
    n = problem.X.n_sentences
    eta0 = eta0 / _width(problem)
    w = _project_l1_sorted(w0, radius)
    velocity = np.zeros_like(w)
    seen, hinges, total, count = 0, [], np.zeros_like(w), 0
    for epoch in range(1, epochs + 1):
        B = _batch(n, batch)
        pass_hinge = []
        for lo in range(0, n, B):
            members = list(range(lo, min(lo + B, n)))
            g, h = _brute_force_subgradient(problem, w, members)
            pass_hinge += [h] * len(members)
            eta = eta0 / np.sqrt(1.0 + seen / n)  # t = epochs done, fractional
            seen += len(members)
            if momentum > 0:
                velocity = momentum * velocity + (1 - momentum) * g
                w = w - eta * velocity
            else:
                w = w - eta * g
            w = _project_l1_sorted(w, radius)
            if average_from and epoch >= average_from:
                total, count = total + w, count + 1
        hinges.append(float(np.mean(pass_hinge)))
    return (total / count if count else w), hinges


def _reference_l2(problem, w0, lam, epochs, batch, eta0, momentum=0.0):
    n = problem.X.n_sentences
    t0 = _width(problem) / (lam * eta0)
    bound = 1 / np.sqrt(lam)
    w = w0 * min(1.0, bound / np.linalg.norm(w0))
    updates, hinges = 0, []
    velocity = np.zeros_like(w)
    for _ in range(epochs):
        B = _batch(n, batch)
        pass_hinge = []
        for lo in range(0, n, B):
            members = list(range(lo, min(lo + B, n)))
            g, h = _brute_force_subgradient(problem, w, members)
            pass_hinge += [h] * len(members)
            # Pegasos step 1/(lambda t) shifted to 1/(lambda (t0 + t)), t = updates done, so
            # that the first step is eta0 / width
            eta = 1.0 / (lam * (t0 + updates))
            updates += 1
            w = (1 - eta * lam) * w
            if momentum > 0:
                velocity = momentum * velocity + (1 - momentum) * g
                w = w - eta * velocity
            else:
                w = w - eta * g
            w = w * min(1.0, bound / np.linalg.norm(w))
        hinges.append(float(np.mean(pass_hinge)))
    return w, hinges


@pytest.mark.parametrize(
    "params",
    [
        {"batch_size": 10**6, "momentum": 0.0},
        {"batch_size": 0, "momentum": 0.0},
        {"batch_size": 2, "momentum": 0.0, "radius": 4.0},
        {"batch_size": 1, "momentum": 0.9},
        {"batch_size": 0, "momentum": 0.5, "average_from": 2, "radius": 25.0},
    ],
)
def test_l1_learner_follows_its_update(params):
    problem, w0 = _tiny_problem(seed=1)
    settings = {
        "radius": 10.0,
        "epochs": 4,
        "eta0": 0.7,
        "shuffle": False,
        "batch_growth": 1.0,
        "decay": "sqrt",
        "average_from": 0,
        **params,
    }
    learner = LEARNERS["m3n-subgradient"](**settings)
    w = learner.fit(problem, seed=0, w0=w0)
    ref, hinges = _reference_l1(
        problem,
        w0,
        settings["radius"],
        settings["epochs"],
        settings["batch_size"],
        settings["eta0"],
        settings["momentum"],
        settings["average_from"],
    )
    np.testing.assert_allclose(w, ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose([r["hinge"] for r in learner.trace_], hinges, rtol=1e-9, atol=1e-12)
    assert np.abs(w).sum() <= settings["radius"] + 1e-9


@pytest.mark.parametrize(
    "params",
    [
        {"batch_size": 10**6, "lambda": 0.05, "eta0": 0.3},
        {"batch_size": 0, "lambda": 0.05, "eta0": 0.3},
        {"batch_size": 1, "lambda": 0.05, "eta0": 0.3, "momentum": 0.8},
        {"batch_size": 2, "lambda": 0.5, "eta0": 1.0},
    ],
)
def test_l2_learner_follows_its_update(params):
    problem, w0 = _tiny_problem(seed=2)
    settings = {"epochs": 4, "shuffle": False, "batch_growth": 1.0, "momentum": 0.0, **params}
    learner = LEARNERS["m3n-l2-subgradient"](**settings)
    w = learner.fit(problem, seed=0, w0=w0)
    ref, hinges = _reference_l2(
        problem,
        w0,
        settings["lambda"],
        settings["epochs"],
        settings["batch_size"],
        settings["eta0"],
        settings["momentum"],
    )
    np.testing.assert_allclose(w, ref, rtol=1e-9, atol=1e-12)
    rows = learner.trace_
    np.testing.assert_allclose([r["hinge"] for r in rows], hinges, rtol=1e-9, atol=1e-12)
    assert rows[-1]["objective"] == pytest.approx(
        0.5 * settings["lambda"] * (ref @ ref) + hinges[-1]
    )
