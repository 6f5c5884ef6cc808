"""The chain model's parameter layout, scores and joint features, against the definition.

The reference score is docs/algorithms.md section 0 written out in Python over a dictionary of
weights keyed by (attribute, label):

    F(x, y; w) = sum_t sum_{a in A(x,t)} w_state[a, y_t] + sum_{t>=1} w_trans[y_{t-1}, y_t]
                 + w_start[y_0] + w_end[y_{T-1}]
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tagger.chain.layout import ChainModel
from tagger.evaluation.labels import LabelIndex
from tagger.features import FeatureSpec, Featurized, Featurizer
from tagger.io import read_corpus
from tagger.sentence import Sentence

from _brute import labelings

SAMPLES = Path(__file__).resolve().parents[2] / "corpora"

_SPEC = FeatureSpec.from_dict(
    {
        "featurizer": {
            "columns": ["word"],
            "templates": ["bias", "word[0]", "word[-1]", "suf[0]", "word[-1]|word[0]"],
        },
        "views": {"suf": {"function": "suffix", "length": 1}},
    }
)


def _weight_table(model: ChainModel, w: np.ndarray) -> dict[tuple[int, int], float]:
    """(attribute, label) -> state weight, read off the CSR layout."""
    table = {}
    for a in range(model.n_attrs):
        for p in range(model.attr_ptr[a], model.attr_ptr[a + 1]):
            key = (a, int(model.param_label[p]))
            assert key not in table, "an (attribute, label) pair has two parameters"
            table[key] = float(w[p])
    return table


def _reference_score(model: ChainModel, X, s: int, y, w: np.ndarray) -> float:
    L, n = model.n_labels, model.n_state
    table = _weight_table(model, w)
    trans = w[n : n + L * L].reshape(L, L)
    start, end = w[n + L * L : n + L * L + L], w[n + L * L + L :]
    a, b = int(X.offsets[s]), int(X.offsets[s + 1])
    total = 0.0
    for t in range(b - a):
        for attr in X.attrs[X.indptr[a + t] : X.indptr[a + t + 1]]:
            total += table.get((int(attr), int(y[t])), 0.0)
        if t > 0:
            total += trans[y[t - 1], y[t]]
    if b > a:
        total += start[y[0]] + end[y[b - a - 1]]
    return total


def _featurized(sentences, labels):
    fz = Featurizer(_SPEC).fit(sentences)
    X = fz.transform(sentences)
    index = LabelIndex.from_sentences(labels)
    y = index.encode([lab for seq in labels for lab in seq])
    return fz, X, index, y


_words = st.sampled_from(["a", "b", "ab", "ba", "c", "cab"])
_corpus = st.lists(
    st.lists(st.tuples(_words, st.sampled_from("XYZ")), min_size=1, max_size=5),
    min_size=1,
    max_size=6,
)


# ------------------------------------------------------------------------------ scores


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(corpus=_corpus, all_pairs=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_state_scores_and_joint_features_give_the_definition(corpus, all_pairs, seed):
    sentences = [Sentence([[w for w, _ in s]], [lab for _, lab in s]) for s in corpus]
    fz, X, index, y = _featurized(sentences, [s.labels for s in sentences])
    L = len(index)
    model = ChainModel.from_data(X, y, L, fz.n_attributes, all_pairs=all_pairs)
    assert model.n_weights == model.n_state + L * L + 2 * L
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(model.n_weights)
    S = model.state_scores(X, w)
    assert S.shape == (X.n_tokens, L)
    trans = model.transitions(w)
    np.testing.assert_array_equal(trans, w[model.n_state : model.n_state + L * L].reshape(L, L))
    for s in range(X.n_sentences):
        a, b = int(X.offsets[s]), int(X.offsets[s + 1])
        for _ in range(4):
            lab = rng.integers(0, L, size=b - a)
            ref = _reference_score(model, X, s, lab, w)
            via_lattice = S[a + np.arange(b - a), lab].sum() + trans[lab[:-1], lab[1:]].sum()
            f = model.joint_features(X, s, lab)
            assert f.shape == (model.n_weights,)
            assert via_lattice == pytest.approx(ref, abs=1e-9)
            assert f @ w == pytest.approx(ref, abs=1e-9)
            assert model.score(X, s, lab, w) == pytest.approx(ref, abs=1e-9)
        # the gold labeling too, and accumulation with a scale
        gold = y[a:b]
        out = np.zeros(model.n_weights)
        model.joint_features(X, s, gold, scale=2.0, out=out)
        model.joint_features(X, s, gold, scale=-0.5, out=out)
        assert out @ w == pytest.approx(1.5 * _reference_score(model, X, s, gold, w), abs=1e-9)


def test_joint_features_count_the_parts():
    sentences = [Sentence([["a", "b", "a"]], ["X", "Y", "X"])]
    fz, X, index, y = _featurized(sentences, [s.labels for s in sentences])
    model = ChainModel.from_data(X, y, len(index), fz.n_attributes)
    f = model.joint_features(X, 0, y)
    L, n = 2, model.n_state
    # 5 templates fire at every token (at t=0 word[-1] and the conjunction take the BOS
    # value), all seen with the gold label: 3 tokens x 5 = 15 state features
    assert f[:n].sum() == 15
    assert np.all(f[:n] >= 0)
    trans = f[n : n + L * L].reshape(L, L)
    np.testing.assert_array_equal(trans, [[0, 1], [1, 0]])  # X->Y, Y->X
    np.testing.assert_array_equal(f[n + L * L : n + L * L + L], [1, 0])  # starts with X
    np.testing.assert_array_equal(f[n + L * L + L :], [1, 0])  # ends with X


def test_start_and_end_fold_into_a_one_token_sentence():
    sentences = [Sentence([["a"]], ["X"]), Sentence([["b", "a"]], ["Y", "X"])]
    fz, X, index, y = _featurized(sentences, [s.labels for s in sentences])
    model = ChainModel.from_data(X, y, 2, fz.n_attributes)
    w = np.zeros(model.n_weights)
    start, end = model.start_end(w)
    start[:] = [1.0, 10.0]
    end[:] = [100.0, 1000.0]
    S = model.state_scores(X, w)
    np.testing.assert_array_equal(S[0], [101.0, 1010.0])  # both ends on the same token
    np.testing.assert_array_equal(S[1], [1.0, 10.0])
    np.testing.assert_array_equal(S[2], [100.0, 1000.0])
    assert model.score(X, 0, np.array([1]), w) == 1010.0


# ------------------------------------------------------------------------------ from_data


def _chunk_sample():
    path = SAMPLES / "sample_chunk.txt"
    if not path.is_file():
        pytest.skip(f"sample corpus {path} is missing")
    return list(read_corpus(path))


def test_from_data_creates_exactly_the_seen_pairs():
    sentences = _chunk_sample()
    fz = Featurizer(FeatureSpec.load("chunk")).fit(sentences)
    X = fz.transform(sentences)
    index = LabelIndex.from_sentences(sentences)
    y = index.encode([lab for s in sentences for lab in s.labels])
    model = ChainModel.from_data(X, y, len(index), fz.n_attributes)
    # independently: (attribute string, gold label) over every training token
    seen = {
        (f, lab)
        for s in sentences
        for feats, lab in zip(fz.string_attributes(s), s.labels)
        for f in feats
    }
    pattr = model.state_param_attr()
    made = [
        (fz.attribute_name(int(pattr[p])), index.labels[model.param_label[p]])
        for p in range(model.n_state)
    ]
    assert len(made) == len(set(made))
    assert set(made) == seen
    assert model.n_attrs == fz.n_attributes
    assert model.attr_ptr[0] == 0 and model.attr_ptr[-1] == model.n_state
    assert np.all(np.diff(model.attr_ptr) >= 1)  # every attribute was seen with some label
    for a in range(model.n_attrs):  # labels sorted within an attribute
        labs = model.param_label[model.attr_ptr[a] : model.attr_ptr[a + 1]]
        assert np.all(np.diff(labs) > 0)


def test_from_data_all_pairs():
    sentences = _chunk_sample()[:10]
    fz = Featurizer(FeatureSpec.load("chunk")).fit(sentences)
    X = fz.transform(sentences)
    index = LabelIndex.from_sentences(sentences)
    L = len(index)
    y = index.encode([lab for s in sentences for lab in s.labels])
    model = ChainModel.from_data(X, y, L, fz.n_attributes, all_pairs=True)
    assert model.n_state == fz.n_attributes * L
    pattr = model.state_param_attr()
    pairs = set(zip(pattr.tolist(), model.param_label.tolist()))
    assert pairs == set(itertools.product(range(fz.n_attributes), range(L)))


# ------------------------------------------------------------------------------ compact


@settings(deadline=None, max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(corpus=_corpus, seed=st.integers(0, 2**32 - 1), density=st.floats(0.0, 1.0))
def test_compact_keeps_every_score_and_drops_only_zero_state_weights(corpus, seed, density):
    sentences = [Sentence([[w for w, _ in s]], [lab for _, lab in s]) for s in corpus]
    fz, X, index, y = _featurized(sentences, [s.labels for s in sentences])
    L = len(index)
    model = ChainModel.from_data(X, y, L, fz.n_attributes)
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(model.n_weights)
    w[: model.n_state][rng.random(model.n_state) >= density] = 0.0
    old_names = [fz.attribute_name(i) for i in range(fz.n_attributes)]
    old_pattr = model.state_param_attr()
    nonzero_pairs = {
        (old_names[old_pattr[p]], int(model.param_label[p]), float(w[p]))
        for p in np.flatnonzero(w[: model.n_state])
    }

    new_model, new_w, keep_attr = model.compact(w)
    assert new_model.n_state == np.count_nonzero(w[: model.n_state])
    assert np.all(new_w[: new_model.n_state] != 0)
    np.testing.assert_array_equal(new_w[new_model.n_state :], w[model.n_state :])
    assert keep_attr.shape == (fz.n_attributes,)
    fz.prune(keep_attr)
    assert new_model.n_attrs == fz.n_attributes == int(keep_attr.sum())
    new_pattr = new_model.state_param_attr()
    kept = {
        (fz.attribute_name(int(new_pattr[p])), int(new_model.param_label[p]), float(new_w[p]))
        for p in range(new_model.n_state)
    }
    assert kept == nonzero_pairs

    X_new = fz.transform(sentences)
    for s in range(X.n_sentences):
        T = int(X.offsets[s + 1] - X.offsets[s])
        for lab in labelings(T, L):
            assert new_model.score(X_new, s, lab, new_w) == pytest.approx(
                model.score(X, s, lab, w), abs=1e-9
            )


@settings(deadline=None, max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(corpus=_corpus, seed=st.integers(0, 2**32 - 1), density=st.floats(0.0, 1.0))
def test_restrict_scores_as_the_full_model_with_dropped_weights_at_zero(corpus, seed, density):
    sentences = [Sentence([[w for w, _ in s]], [lab for _, lab in s]) for s in corpus]
    fz, X, index, y = _featurized(sentences, [s.labels for s in sentences])
    L = len(index)
    model = ChainModel.from_data(X, y, L, fz.n_attributes)
    rng = np.random.default_rng(seed)
    keep = np.flatnonzero(rng.random(model.n_state) < density)
    sub, where = model.restrict(keep)
    assert sub.n_weights == len(where) == len(keep) + model.n_edge
    w_sub = rng.standard_normal(sub.n_weights)
    w = np.zeros(model.n_weights)
    w[where] = w_sub
    for s in range(X.n_sentences):
        T = int(X.offsets[s + 1] - X.offsets[s])
        for lab in labelings(T, L):
            assert sub.score(X, s, lab, w_sub) == pytest.approx(model.score(X, s, lab, w), abs=1e-9)


def test_compact_of_all_zero_state_weights():
    sentences = [Sentence([["a", "b"]], ["X", "Y"])]
    fz, X, index, y = _featurized(sentences, [s.labels for s in sentences])
    model = ChainModel.from_data(X, y, 2, fz.n_attributes)
    w = np.zeros(model.n_weights)
    w[model.n_state :] = np.arange(1.0, 9.0)
    new_model, new_w, keep_attr = model.compact(w)
    assert new_model.n_state == 0 and new_model.n_attrs == 0 and not keep_attr.any()
    np.testing.assert_array_equal(new_w, np.arange(1.0, 9.0))
    fz.prune(keep_attr)
    X_new = fz.transform(sentences)
    assert X_new.attrs.size == 0
    assert new_model.score(X_new, 0, np.array([0, 1]), new_w) == model.score(
        X, 0, np.array([0, 1]), w
    )


def test_array_round_trip():
    sentences = [Sentence([["a", "b", "ab"]], ["X", "Y", "Z"])]
    fz, X, index, y = _featurized(sentences, [s.labels for s in sentences])
    model = ChainModel.from_data(X, y, 3, fz.n_attributes)
    again = ChainModel.from_arrays(3, model.to_arrays())
    np.testing.assert_array_equal(again.attr_ptr, model.attr_ptr)
    np.testing.assert_array_equal(again.param_label, model.param_label)
    assert again.n_weights == model.n_weights


def test_state_scores_from_views_equal_state_scores_from_attributes():
    """The fused tagging path (lookup + gather-add in one kernel) gives the same scores as
    materialised attributes followed by the CSR gather-add, unseen words included."""
    samples = Path(__file__).resolve().parents[2] / "corpora"
    train = list(read_corpus(samples / "sample_chunk.txt"))
    held = list(read_corpus(samples / "sample_chunk_dev.txt"))
    fz = Featurizer(FeatureSpec.load("chunk")).fit(train)
    X = fz.transform(train)
    labels = sorted({lab for s in train for lab in s.labels})
    y = np.array([labels.index(lab) for s in train for lab in s.labels], dtype=np.int32)
    model = ChainModel.from_data(X, y, len(labels), fz.n_attributes)
    w = np.random.default_rng(3).normal(size=model.n_weights)
    for sents in (train, held):
        expected = model.state_scores(fz.transform(sents), w)
        fused = model.state_scores_from_views(fz.encode(sents), w)
        np.testing.assert_allclose(fused, expected, rtol=0, atol=1e-12)


@settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n_labels=st.integers(1, 4), all_pairs=st.booleans())
def test_real_valued_attributes_scale_their_weights(seed, n_labels, all_pairs):
    """With values, F(x, y; w) = sum_t sum_a v_a w[a, y_t] + transitions: checked against a
    dense (token x attribute) value matrix times a dense (attribute x label) weight matrix."""
    rng = np.random.default_rng(seed)
    n_attrs = 5
    lengths = rng.integers(1, 5, size=3)
    n_tok = int(lengths.sum())
    dense_x = rng.normal(size=(n_tok, n_attrs)) * (rng.random((n_tok, n_attrs)) < 0.6)
    indptr = np.zeros(n_tok + 1, dtype=np.int64)
    attrs, values = [], []
    for i in range(n_tok):
        nz = np.flatnonzero(dense_x[i])
        attrs.extend(nz)
        values.extend(dense_x[i, nz])
        indptr[i + 1] = len(attrs)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    X = Featurized(
        indptr, np.asarray(attrs, dtype=np.int32), offsets, np.asarray(values, dtype=np.float64)
    )
    y = rng.integers(0, n_labels, size=n_tok).astype(np.int32)
    model = ChainModel.from_data(X, y, n_labels, n_attrs, all_pairs=all_pairs)
    w = rng.normal(size=model.n_weights)
    W = np.zeros((n_attrs, n_labels))
    for (a, lab), v in _weight_table(model, w).items():
        W[a, lab] = v
    L, n = n_labels, model.n_state
    trans = w[n : n + L * L].reshape(L, L)
    start, end = w[n + L * L : n + L * L + L], w[n + L * L + L :]
    state = model.state_scores(X, w)
    for s in range(len(lengths)):
        a, b = offsets[s], offsets[s + 1]
        expected = dense_x[a:b] @ W
        expected[0] += start
        expected[-1] += end
        np.testing.assert_allclose(state[a:b], expected, atol=1e-12)
        labels = rng.integers(0, n_labels, size=b - a)
        ref = sum(expected[t, labels[t]] for t in range(b - a))
        ref += sum(trans[labels[t - 1], labels[t]] for t in range(1, b - a))
        assert model.score(X, s, labels, w) == pytest.approx(ref, abs=1e-10)


def test_carry_weights_puts_each_weight_on_the_same_attribute_and_labels():
    from tagger.evaluation.labels import LabelIndex
    from tagger.features import FeatureSpec, Featurizer
    from tagger.features.translate import attribute_map
    from tagger.io import load_corpus

    from _helpers import SAMPLE

    sentences = load_corpus(SAMPLE, format="conll")
    spec = FeatureSpec.load("chunk")

    def model_of(part):
        feat = Featurizer(spec).fit(part)
        labels = LabelIndex(sorted({lab for s in part for lab in s.labels}))
        X = feat.transform(part)
        y = labels.encode([lab for s in part for lab in s.labels])
        return feat, labels, ChainModel.from_data(X, y, len(labels), feat.n_attributes)

    (f1, l1, m1), (f2, l2, m2) = model_of(sentences[: len(sentences) // 2]), model_of(sentences)
    seed = 11
    print("seed", seed)
    w = np.random.default_rng(seed).normal(size=m1.n_weights)
    w[::3] = 0.0
    attr_map = attribute_map(f1, f2, np.arange(f1.n_attributes))
    index = {name: i for i, name in enumerate(l2.labels)}
    label_map = np.array([index.get(n, -1) for n in l1.labels])
    out = m1.carry_weights(w, m2, attr_map, label_map)
    # brute force: every parameter by (attribute name, label name)
    src = {
        (f1.attribute_name(a), l1.labels[lab]): w[p]
        for p, (a, lab) in enumerate(zip(m1.state_param_attr(), m1.param_label))
    }
    for p, (a, lab) in enumerate(zip(m2.state_param_attr(), m2.param_label)):
        assert out[p] == src.get((f2.attribute_name(a), l2.labels[lab]), 0.0)
    for i, a in enumerate(l1.labels):
        for j, b in enumerate(l1.labels):
            assert m2.transitions(out)[index[a], index[b]] == m1.transitions(w)[i, j]
        assert m2.start_weights(out)[index[a]] == m1.start_weights(w)[i]
        assert m2.end_weights(out)[index[a]] == m1.end_weights(w)[i]
