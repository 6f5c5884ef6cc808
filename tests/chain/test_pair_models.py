"""Label-pair templates (``pair_templates``) against their definition, written out in Python
over a dictionary of weights:

    F(x, y; w) = (first-order score: state, transitions, start, end)
                 + sum_{t>=1} sum_{a in A_pair(x,t)} w_pair[a, y_{t-1}, y_t]

The likelihood, the smoothed hinge, their gradients and the decoders are compared with
enumeration over every labeling of small random sentences.
"""

from __future__ import annotations

import numpy as np
import pytest

from tagger import jit
from tagger.chain.kbest import nbest
from tagger.chain.layout import ChainModel
from tagger.errors import FeatureSpecError
from tagger.features import FeatureSpec, Featurized, Featurizer
from tagger.learners.solvers.crf_objective import CRFObjective
from tagger.sentence import Sentence

from _brute import check_nbest_batch, labelings, logsumexp

SPEC = {
    "featurizer": {
        "columns": ["word"],
        "templates": ["bias", "word[0]", "suf[0]"],
        "pair_templates": ["word[0]", "suf[0]|word[-1]"],
    },
    "views": {"suf": {"function": "suffix", "length": 1}},
}
WORDS = ["ab", "bb", "ca", "da", "eb"]
SEEDS = [0, 1, 2, 3]


def _problem(seed: int, L: int = 3, n: int = 4):
    rng = np.random.default_rng(seed)
    sents = []
    for _ in range(n):
        T = int(rng.integers(1, 5))
        words = [WORDS[i] for i in rng.integers(0, len(WORDS), T)]
        labels = [str(x) for x in rng.integers(0, L, T)]
        sents.append(Sentence([words], labels))
    spec = FeatureSpec.from_dict(SPEC)
    fz = Featurizer(spec).fit(sents)
    X = fz.transform(sents)
    y = np.array([int(lab) for s in sents for lab in s.labels], dtype=np.int32)
    model = ChainModel.from_data(X, y, L, fz.n_attributes, pair_attrs=fz.pair_attributes())
    w = rng.normal(size=model.n_weights)
    return fz, X, y, model, w


def _reference_score(model: ChainModel, X, s: int, y, w) -> float:
    L, n = model.n_labels, model.n_state
    state = {}
    for a in range(model.n_attrs):
        for p in range(model.attr_ptr[a], model.attr_ptr[a + 1]):
            state[(a, int(model.param_label[p]))] = w[p]
    pair = {}
    for a in range(model.n_attrs):
        for p in range(model.pair_ptr[a], model.pair_ptr[a + 1]):
            code = int(model.pair_code[p])
            pair[(a, code // L, code % L)] = w[model.pair_offset + p]
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
    return float(total)


def test_spec_reads_pair_templates_apart():
    spec = FeatureSpec.from_dict(SPEC)
    assert spec.has_pairs and spec.pair_from == 3
    assert spec.template_names[3:] == ["word[0]@pair", "suf[0]|word[-1]@pair"]
    assert not FeatureSpec.from_dict(
        {"featurizer": {"columns": ["w"], "templates": ["w[0]"]}}
    ).has_pairs


@pytest.mark.parametrize(
    "value, message",
    [
        ("word[0]", "featurizer.pair_templates must be a list"),
        (["word[9999]"], "featurizer.pair_templates[0]"),
        (["word[0]", "word[0]"], "duplicate template 'word[0]@pair'"),
    ],
)
def test_bad_pair_templates_are_named(value, message):
    data = {"featurizer": {"columns": ["word"], "templates": ["word[0]"], "pair_templates": value}}
    with pytest.raises(FeatureSpecError, match=message.replace("[", r"\[").replace("]", r"\]")):
        FeatureSpec.from_dict(data)


@pytest.mark.parametrize("seed", SEEDS)
def test_pair_parameters_are_the_triples_seen_after_the_first_token(seed):
    fz, X, y, model, _ = _problem(seed)
    L = model.n_labels
    is_pair = fz.pair_attributes()
    seen = set()
    for s in range(X.n_sentences):
        a, b = int(X.offsets[s]), int(X.offsets[s + 1])
        for i in range(a + 1, b):
            for attr in X.attrs[X.indptr[i] : X.indptr[i + 1]]:
                if is_pair[attr]:
                    seen.add((int(attr), int(y[i - 1]) * L + int(y[i])))
    have = {
        (a, int(model.pair_code[p]))
        for a in range(model.n_attrs)
        for p in range(model.pair_ptr[a], model.pair_ptr[a + 1])
    }
    assert have == seen
    # a pair attribute has no state parameters
    assert np.all(np.diff(model.attr_ptr)[is_pair] == 0)
    assert model.n_weights == model.n_state + L * L + 2 * L + len(seen)


@pytest.mark.parametrize("seed", SEEDS)
def test_joint_features_give_the_reference_score(seed):
    _, X, _, model, w = _problem(seed)
    for s in range(X.n_sentences):
        T = int(X.offsets[s + 1] - X.offsets[s])
        for path in labelings(T, model.n_labels, np.int32):
            assert model.score(X, s, path, w) == pytest.approx(
                _reference_score(model, X, s, path, w), abs=1e-12
            )


def _enumerated(model, X, y, w, cost=0.0, tau=1.0):
    """(objective, gradient) of tau log sum_y exp((F + cost * hamming) / tau) - F(gold) summed
    over sentences, by enumeration."""
    value, grad = 0.0, np.zeros(model.n_weights)
    for s in range(X.n_sentences):
        a, b = int(X.offsets[s]), int(X.offsets[s + 1])
        gold = y[a:b]
        paths = labelings(b - a, model.n_labels, np.int32)
        feats = np.array([model.joint_features(X, s, p) for p in paths])
        scores = (feats @ w + cost * (paths != gold).sum(axis=1)) / tau
        log_z = logsumexp(scores)
        p = np.exp(scores - log_z)
        f_gold = model.joint_features(X, s, gold)
        value += tau * log_z - f_gold @ w
        grad += p @ feats - f_gold
    return value, grad


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("cost, tau", [(0.0, 1.0), (1.0, 0.5)])
def test_objective_and_gradient_match_enumeration(seed, cost, tau):
    _, X, y, model, w = _problem(seed)
    fun = CRFObjective(model, X, y)
    fun.cost, fun.temperature = cost, tau
    value, grad = fun(w)
    want_value, want_grad = _enumerated(model, X, y, w, cost, tau)
    assert value == pytest.approx(want_value, rel=1e-10, abs=1e-10)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("seed", SEEDS)
def test_decoding_and_marginals_match_enumeration(seed):
    _, X, y, model, w = _problem(seed)
    ids, best, _ = model.decode(X, w)
    aug_ids, aug_best, gold_scores = model.decode(X, w, y, 1.5)
    node = model.marginals(X, w)
    for s in range(X.n_sentences):
        a, b = int(X.offsets[s]), int(X.offsets[s + 1])
        paths = labelings(b - a, model.n_labels, np.int32)
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
def test_compact_keeps_every_score_and_arrays_round_trip(seed):
    fz, X, y, model, w = _problem(seed)
    w = w * (np.random.default_rng(seed).random(len(w)) < 0.5)  # zeros to drop
    small, w_small, keep_attr = model.compact(w)
    assert small.n_pair == int(np.count_nonzero(model.pair_weights(w)))
    assert np.count_nonzero(w_small) == np.count_nonzero(w)
    again = ChainModel.from_arrays(model.n_labels, small.to_arrays())
    assert again.n_weights == small.n_weights == len(w_small)
    # the compacted model over the attributes kept scores every labeling alike
    old_to_new = np.cumsum(keep_attr) - 1
    attrs, indptr = [], [0]
    for i in range(X.n_tokens):
        row = X.attrs[X.indptr[i] : X.indptr[i + 1]]
        attrs += [int(old_to_new[a]) for a in row if keep_attr[a]]
        indptr.append(len(attrs))
    Xs = Featurized(np.array(indptr, np.int64), np.array(attrs, np.int32), X.offsets)
    for s in range(X.n_sentences):
        T = int(X.offsets[s + 1] - X.offsets[s])
        for path in labelings(T, model.n_labels, np.int32):
            assert again.score(Xs, s, path, w_small) == pytest.approx(
                model.score(X, s, path, w), abs=1e-12
            )


def test_a_model_without_pairs_writes_no_pair_arrays():
    spec = FeatureSpec.from_dict({"featurizer": {"columns": ["word"], "templates": ["word[0]"]}})
    sents = [Sentence([["a", "b"]], ["0", "1"])]
    fz = Featurizer(spec).fit(sents)
    X = fz.transform(sents)
    model = ChainModel.from_data(X, np.array([0, 1], np.int32), 2, fz.n_attributes)
    assert set(model.to_arrays()) == {"model.attr_ptr", "model.param_label"}
    assert model.n_pair == 0 and model.n_weights == model.n_state + 4 + 4


@pytest.fixture
def parallel_min_bytes():
    before = jit.parallel_min_bytes()
    yield
    jit.set_parallel_min_bytes(before)


def test_batches_decode_alike_in_parallel_and_serially(parallel_min_bytes):
    _, X, y, model, w = _problem(7, L=4, n=300)
    jit.set_parallel_min_bytes(jit.PARALLEL_MIN_BYTES)
    serial = model.decode(X, w, y, 1.0), model.marginals(X, w)
    jit.set_parallel_min_bytes(0)  # the parallel kernels themselves
    parallel = model.decode(X, w, y, 1.0), model.marginals(X, w)
    for a, b in zip(serial[0], parallel[0]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(serial[1], parallel[1])


@pytest.mark.parametrize("seed", SEEDS)
def test_carrying_weights_keeps_the_pair_weights(seed):
    _, X, y, model, w = _problem(seed)
    same = model.carry_weights(
        w, model, np.arange(model.n_attrs), np.arange(model.n_labels, dtype=np.int64)
    )
    np.testing.assert_array_equal(same, w)
    # labels swapped: the pair weight of (a, prev, lab) lands on (a, swap[prev], swap[lab])
    swap = np.arange(model.n_labels, dtype=np.int64)[::-1].copy()
    y2 = swap[y].astype(np.int32)
    other = ChainModel.from_data(
        X, y2, model.n_labels, model.n_attrs, pair_attrs=_problem(seed)[0].pair_attributes()
    )
    moved = model.carry_weights(w, other, np.arange(model.n_attrs), swap)
    L = model.n_labels
    for s in range(X.n_sentences):
        T = int(X.offsets[s + 1] - X.offsets[s])
        for path in labelings(T, L, np.int32):
            assert other.score(X, s, swap[path].astype(np.int32), moved) == pytest.approx(
                model.score(X, s, path, w), abs=1e-12
            )


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("pairs", [True, False])
def test_the_k_best_labelings_are_the_enumeration(seed, pairs):
    """tagger.chain.kbest.nbest of a label-pair model (transitions by position) and of the
    same data's plain first-order model, against every labeling's reference score."""
    fz, X, y, model, w = _problem(seed)
    if not pairs:
        model = ChainModel.from_data(X, y, model.n_labels, fz.n_attributes)
        w = np.random.default_rng(seed).normal(size=model.n_weights)
    assert model.plain is not pairs
    found = nbest(model, X, w, 5)
    check_nbest_batch(
        X, model.n_labels, 5, found, lambda s, path: _reference_score(model, X, s, path, w)
    )
