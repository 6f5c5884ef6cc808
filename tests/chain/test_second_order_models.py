"""Second-order chains (``order = 2``) against their definition, written out in Python:

    F(x, y; w) = (first-order score with label-pair features, tests/chain/test_pair_models.py)
                 + sum_{t>=2} w_trip[y_{t-2}, y_{t-1}, y_t]

over the labelings whose every (previous label, label) pair was seen in training (the others
are not considered); a triple seen in training has a weight, another allowed triple scores 0.
The likelihood, the smoothed hinge, their gradients and the decoders are compared with
enumeration over every labeling of small random sentences.
"""

from __future__ import annotations

import numpy as np
import pytest

from tagger.chain.kbest import nbest
from tagger.chain.layout import ChainModel
from tagger.features import FeatureSpec, Featurizer
from tagger.learners.solvers.crf_objective import CRFObjective
from tagger.sentence import Sentence

from _brute import check_nbest_batch, labelings, logsumexp

WORDS = ["ab", "bb", "ca", "da", "eb"]
SEEDS = [0, 1, 2, 3, 4, 5]


def _problem(seed: int, pairs: bool, L: int = 3, n: int = 6):
    rng = np.random.default_rng(seed)
    sents = []
    for _ in range(n):
        T = int(rng.integers(1, 6))
        words = [WORDS[i] for i in rng.integers(0, len(WORDS), T)]
        # labels from a sparse random chain, so that some pairs are never seen
        labels = [int(rng.integers(0, L))]
        for _ in range(T - 1):
            labels.append(int((labels[-1] + rng.integers(0, 2)) % L))
        sents.append(Sentence([words], [str(x) for x in labels]))
    fz_spec = {
        "featurizer": {"columns": ["word"], "templates": ["bias", "word[0]"], "order": 2},
    }
    if pairs:
        fz_spec["featurizer"]["pair_templates"] = ["word[0]"]
    spec = FeatureSpec.from_dict(fz_spec)
    fz = Featurizer(spec).fit(sents)
    X = fz.transform(sents)
    y = np.array([int(lab) for s in sents for lab in s.labels], dtype=np.int32)
    pair_attrs = fz.pair_attributes() if pairs else None
    model = ChainModel.from_data(X, y, L, fz.n_attributes, pair_attrs=pair_attrs, order=2)
    w = rng.normal(size=model.n_weights)
    return X, y, model, w


def _reference_score(model: ChainModel, X, s: int, y, w) -> float:
    """F of labeling y, -inf when one of its pairs was never seen in training."""
    L, n = model.n_labels, model.n_state
    seen_pairs = set(model.second.allowed.tolist())
    if any(int(a) * L + int(b) not in seen_pairs for a, b in zip(y[:-1], y[1:])):
        return -np.inf
    state = {}
    for a in range(model.n_attrs):
        for p in range(model.attr_ptr[a], model.attr_ptr[a + 1]):
            state[(a, int(model.param_label[p]))] = w[p]
    pair = {}
    for a in range(model.n_attrs):
        for p in range(model.pair_ptr[a], model.pair_ptr[a + 1]):
            code = int(model.pair_code[p])
            pair[(a, code // L, code % L)] = w[model.pair_offset + p]
    trip = {int(c): w[model.trip_offset + i] for i, c in enumerate(model.second.trip_code)}
    trans = w[n : n + L * L].reshape(L, L)
    start = w[n + L * L : n + L * L + L]
    end = w[n + L * L + L : n + L * L + 2 * L]
    a0, b0 = int(X.offsets[s]), int(X.offsets[s + 1])
    total = start[y[0]] + end[y[-1]]
    for t in range(b0 - a0):
        for attr in X.attrs[X.indptr[a0 + t] : X.indptr[a0 + t + 1]]:
            total += state.get((int(attr), int(y[t])), 0.0)
            if t > 0:
                total += pair.get((int(attr), int(y[t - 1]), int(y[t])), 0.0)
        if t > 0:
            total += trans[y[t - 1], y[t]]
        if t > 1:
            total += trip.get((int(y[t - 2]) * L + int(y[t - 1])) * L + int(y[t]), 0.0)
    return float(total)


def _allowed_paths(model, T):
    paths = labelings(T, model.n_labels, np.int32)
    keep = [model.second.allows(p) for p in paths]
    return paths[np.array(keep, dtype=bool)]


def test_the_pairs_and_triples_are_those_seen():
    X, y, model, _ = _problem(0, pairs=False)
    L = model.n_labels
    pairs, trips = set(), set()
    for s in range(X.n_sentences):
        a, b = int(X.offsets[s]), int(X.offsets[s + 1])
        for i in range(a + 1, b):
            pairs.add(int(y[i - 1]) * L + int(y[i]))
            if i >= a + 2:
                trips.add((int(y[i - 2]) * L + int(y[i - 1])) * L + int(y[i]))
    assert set(model.second.allowed.tolist()) == pairs
    assert set(model.second.trip_code.tolist()) == trips
    assert model.order == 2 and model.n_weights == model.trip_offset + len(trips)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("pairs", [False, True])
def test_joint_features_give_the_reference_score(seed, pairs):
    X, _, model, w = _problem(seed, pairs)
    for s in range(X.n_sentences):
        T = int(X.offsets[s + 1] - X.offsets[s])
        for path in _allowed_paths(model, T):
            assert model.score(X, s, path, w) == pytest.approx(
                _reference_score(model, X, s, path, w), abs=1e-12
            )


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("pairs", [False, True])
@pytest.mark.parametrize("cost, tau", [(0.0, 1.0), (1.0, 0.5)])
def test_objective_and_gradient_match_enumeration(seed, pairs, cost, tau):
    X, y, model, w = _problem(seed, pairs)
    fun = CRFObjective(model, X, y)
    fun.cost, fun.temperature = cost, tau
    value, grad = fun(w)
    want_value, want_grad = 0.0, np.zeros(model.n_weights)
    for s in range(X.n_sentences):
        a, b = int(X.offsets[s]), int(X.offsets[s + 1])
        gold = y[a:b]
        paths = _allowed_paths(model, b - a)
        feats = np.array([model.joint_features(X, s, p) for p in paths])
        scores = (feats @ w + cost * (paths != gold).sum(axis=1)) / tau
        log_z = logsumexp(scores)
        p = np.exp(scores - log_z)
        f_gold = model.joint_features(X, s, gold)
        want_value += tau * log_z - f_gold @ w
        want_grad += p @ feats - f_gold
    assert value == pytest.approx(want_value, rel=1e-10, abs=1e-10)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("seed", SEEDS)
def test_decoding_and_marginals_match_enumeration(seed):
    X, y, model, w = _problem(seed, pairs=True)
    ids, best, _ = model.decode(X, w)
    _, aug_best, gold_scores = model.decode(X, w, y, 1.5)
    node = model.marginals(X, w)
    for s in range(X.n_sentences):
        a, b = int(X.offsets[s]), int(X.offsets[s + 1])
        paths = _allowed_paths(model, b - a)
        scores = np.array([_reference_score(model, X, s, p, w) for p in paths])
        assert best[s] == pytest.approx(scores.max(), abs=1e-10)
        assert _reference_score(model, X, s, ids[a:b], w) == pytest.approx(scores.max(), abs=1e-10)
        aug = scores + 1.5 * (paths != y[a:b]).sum(axis=1)
        assert aug_best[s] == pytest.approx(aug.max(), abs=1e-10)
        assert gold_scores[s] == pytest.approx(_reference_score(model, X, s, y[a:b], w), abs=1e-10)
        p = np.exp(scores - logsumexp(scores))
        want = np.zeros((b - a, model.n_labels))
        for t in range(b - a):
            np.add.at(want[t], paths[:, t], p)
        np.testing.assert_allclose(node[a:b], want, atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_compact_and_arrays_keep_every_score(seed):
    X, y, model, w = _problem(seed, pairs=False)
    w = w * (np.random.default_rng(seed).random(len(w)) < 0.5)
    small, w_small, keep_attr = model.compact(w)
    assert small.n_trip == int(np.count_nonzero(model.trip_weights(w)))
    again = ChainModel.from_arrays(model.n_labels, small.to_arrays())
    assert again.order == 2 and again.n_weights == len(w_small)
    np.testing.assert_array_equal(again.second.allowed, model.second.allowed)
    L = model.n_labels
    for s in range(X.n_sentences):
        a, b = int(X.offsets[s]), int(X.offsets[s + 1])
        for path in _allowed_paths(model, b - a)[:20]:
            ys = np.asarray(path, dtype=np.int64)
            trip_part = sum(
                w[model.trip_offset + i]
                for i in model.second.trip_index((ys[:-2] * L + ys[1:-1]) * L + ys[2:])
                if i >= 0
            )
            got = sum(
                w_small[again.trip_offset + i]
                for i in again.second.trip_index((ys[:-2] * L + ys[1:-1]) * L + ys[2:])
                if i >= 0
            )
            assert got == pytest.approx(trip_part, abs=1e-12)


def test_a_bad_triple_table_is_refused():
    X, y, model, w = _problem(1, pairs=False)
    arrays = model.to_arrays()
    arrays["model.trip_code"] = arrays["model.trip_code"][::-1].copy()
    with pytest.raises(ValueError, match="trip_code must rise"):
        ChainModel.from_arrays(model.n_labels, arrays)
    arrays = model.to_arrays()
    del arrays["model.trip_code"]
    with pytest.raises(ValueError, match="come together"):
        ChainModel.from_arrays(model.n_labels, arrays)


def test_a_lattice_too_large_is_refused_before_training(monkeypatch):
    from tagger.api import Tagger
    from tagger.chain import second_order
    from tagger.errors import FeatureSpecError

    monkeypatch.setattr(second_order, "MAX_ENTRIES", 1)
    sents = [Sentence([["a", "b", "c", "d"]], ["0", "1", "0", "1"])] * 3
    spec = {"featurizer": {"columns": ["word"], "templates": ["word[0]"], "order": 2}}
    tagger = Tagger(features=FeatureSpec.from_dict(spec), select=False)
    with pytest.raises(FeatureSpecError, match=r"allows 2 label triples \(2 label pairs seen\)"):
        tagger.fit(sents)
    assert tagger.model_ is None


@pytest.mark.parametrize("where", ["setting", "config"])
def test_the_order_setting_overrides_the_feature_file(where, tmp_path):
    from tagger.api import train

    sents = [Sentence([["a", "b", "c", "d"]], ["0", "1", "0", "1"])] * 3
    spec = FeatureSpec.from_dict({"featurizer": {"columns": ["word"], "templates": ["word[0]"]}})
    if where == "setting":
        tagger = train(train=sents, features=spec, order=2, select=False)
    else:
        path = tmp_path / "t.toml"
        path.write_text("[model]\norder = 2\nselect = false\n")
        tagger = train(path, train=sents, features=spec)
    assert tagger.model_.order == 2 and tagger.featurizer_.spec.order == 2
    assert train(train=sents, features=spec, select=False).model_.order == 1


@pytest.mark.parametrize("pairs", [False, True])
def test_the_hinge_certificate_holds_for_second_order_models(pairs):
    """Weak duality, P(w) >= D, at the end of every stage of m3n-owlqn on an order-2 model
    (with and without label-pair templates): the hinge from loss-augmented decoding over the
    pair-state lattice and the bound from the smoothed model's expectations agree."""
    from tagger.api import Tagger

    rng = np.random.default_rng(5)
    sents = []
    for _ in range(40):
        T = int(rng.integers(2, 8))
        words = [WORDS[i] for i in rng.integers(0, len(WORDS), T)]
        labels = [str(int(i) % 3) for i in np.cumsum(rng.integers(0, 2, T))]
        sents.append(Sentence([words], labels))
    featurizer = {"columns": ["word"], "templates": ["bias", "word[0]", "word[-1]"], "order": 2}
    if pairs:
        featurizer["pair_templates"] = ["word[0]"]
    params = {"c1": 0.1, "stages": 4, "gap": 0.0, "epochs": 200, "select": "last"}
    tagger = Tagger(
        features=FeatureSpec.from_dict({"featurizer": featurizer}),
        learner="m3n-owlqn",
        params=params,
        select=False,
    ).fit(sents)
    certified = [row for row in tagger.trace_ if "primal" in row]
    assert len(certified) >= 2
    for row in certified:
        assert row["primal"] >= row["dual"] - 1e-9 * abs(row["primal"])
    assert certified[-1]["rel_gap"] < certified[0]["rel_gap"]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("pairs", [False, True])
def test_the_k_best_labelings_are_the_enumeration(seed, pairs):
    """tagger.chain.kbest.nbest of a second-order model: the best allowed labelings (a pair
    never seen in training excludes a labeling) against every labeling's reference score."""
    X, y, model, w = _problem(seed, pairs)
    found = nbest(model, X, w, 6)
    check_nbest_batch(
        X, model.n_labels, 6, found, lambda s, path: _reference_score(model, X, s, path, w)
    )
