"""The KDD'09 synthetic data generator: shapes, correlation, seeds, and the labels' source."""

from __future__ import annotations

import numpy as np
import pytest

from tagger.training.synthetic import generate, generate_sets, kfold_parts, true_error

from _brute import labelings, path_scores


@pytest.fixture(scope="module")
def data():
    return generate(n_sequences=1000, seed=7)


def test_shapes_and_layout(data):
    n, T, d, L = 1000, 8, 100, 2
    X = data.X
    assert X.n_sentences == n and X.n_tokens == n * T
    assert np.array_equal(X.lengths(), np.full(n, T))
    assert len(X.attrs) == n * T * d and len(X.values) == n * T * d
    assert data.y.shape == (n * T,) and data.y.dtype == np.int32
    assert set(np.unique(data.y)) == {0, 1}
    m = data.model
    assert m.n_labels == L and m.n_attrs == d
    assert m.n_state == 2 * d  # the 200 state feature functions
    assert m.n_weights == 2 * d + L * L + 2 * L  # + 4 transitions, + start/end
    assert data.relevant.sum() == 30 and data.relevant_params.sum() == 60
    assert (data.true_weights[: m.n_state][~data.relevant_params] == 0).all()
    assert (data.true_weights[: m.n_state][data.relevant_params] > 0).all()
    assert np.count_nonzero(m.transitions(data.true_weights)) == 4
    assert (np.bincount(data.groups[data.relevant]) == 3).all()
    # token i's values are the raw inputs of that token, feature j at attribute j
    tok = 8 * 123 + 5
    a, b = X.indptr[tok], X.indptr[tok + 1]
    assert np.array_equal(X.attrs[a:b], np.arange(d))
    assert np.array_equal(X.values[a:b], data.inputs[123, 5])


def test_other_sizes():
    small = generate(n_sequences=20, length=5, n_features=2000, n_relevant=12, group_size=4, seed=1)
    assert small.X.n_tokens == 100 and small.model.n_state == 4000
    assert small.relevant.sum() == 12 and small.groups.max() == 2
    with pytest.raises(ValueError, match="multiple of group_size"):
        generate(n_relevant=10, group_size=3)


def test_model_scores_the_real_values(data):
    # the chain model over the Featurized values scores tokens as x . W does
    d, L = 100, 2
    W = data.true_weights[: data.model.n_state].reshape(d, L)
    expected = (data.inputs[:50] @ W).reshape(-1, L)
    X, _ = data.subset(np.arange(50))
    got = data.model.state_scores(X, data.true_weights)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_groups_are_correlated_and_irrelevant_features_are_not(data):
    flat = data.inputs.reshape(-1, 100)
    c = np.corrcoef(flat.T)
    same = data.groups[:, None] == data.groups[None, :]
    same &= data.relevant[:, None] & data.relevant[None, :]
    np.fill_diagonal(same, False)
    # var(z) = 1, var(noise) = 0.05^2: the correlation within a group is 1 / (1 + 0.0025)
    assert np.allclose(c[same], 1 / 1.0025, atol=2e-3)
    other = ~same
    np.fill_diagonal(other, False)
    # 8000 tokens: independent features correlate at most a few times 1/sqrt(8000) ~ 0.011
    assert np.abs(c[other]).max() < 0.06
    assert np.allclose(flat.std(axis=0), 1.0, atol=0.05)


def test_same_seed_same_data_other_seed_other_data():
    a, b, c = (
        generate(n_sequences=50, seed=3),
        generate(n_sequences=50, seed=3),
        generate(n_sequences=50, seed=4),
    )
    assert np.array_equal(a.inputs, b.inputs) and np.array_equal(a.y, b.y)
    assert np.array_equal(a.true_weights, b.true_weights)
    assert not np.array_equal(a.inputs, c.inputs)
    sets = generate_sets(3, seed=0, n_sequences=30)
    again = generate_sets(3, seed=0, n_sequences=30)
    assert all(
        np.array_equal(s.y, t.y) and np.array_equal(s.inputs, t.inputs) for s, t in zip(sets, again)
    )
    # each set has its own generating CRF
    assert not np.array_equal(sets[0].true_weights, sets[1].true_weights)


def test_labels_depend_on_the_relevant_features_only(data):
    flat = data.inputs.reshape(-1, 100)
    y = data.y.astype(float)
    corr = np.array([np.corrcoef(flat[:, j], y)[0, 1] for j in range(100)])
    W = data.true_weights[:200].reshape(100, 2)
    margin = flat @ (W[:, 1] - W[:, 0])
    # the generating CRF's state margin predicts the labels
    assert np.corrcoef(margin, y)[0, 1] > 0.3
    # irrelevant features: no more correlation than chance (sd 1/sqrt(8000) ~ 0.011)
    assert np.abs(corr[~data.relevant]).max() < 0.05
    # the relevant feature with the largest label weight gap is visibly correlated
    j = int(np.argmax(np.abs(W[:30, 1] - W[:30, 0])))
    assert abs(corr[j]) > 0.1
    # the generating CRF's Viterbi labels beat chance but are not the samples
    err = true_error(data)
    assert 0.05 < err < 0.45


def _exact_marginals(state, trans):
    """(p(y_t = 1 | x) for each t, p(y_0 = y_1 | x)) by enumerating every labeling of a short
    binary chain."""
    T = state.shape[0]
    paths = labelings(T, 2)
    scores = path_scores(state, trans, paths)
    prob = np.exp(scores - scores.max())
    prob /= prob.sum()
    return prob @ paths, prob @ (paths[:, 0] == paths[:, 1])


def test_gibbs_samples_follow_the_crf():
    # short chains: the exact marginals come from brute-force enumeration; the sampled labels
    # must match them in aggregate (sum of y - p over 4000 positions is about N(0, sum p(1-p)))
    data = generate(
        n_sequences=1000,
        length=4,
        n_features=6,
        n_relevant=6,
        group_size=3,
        weight_range=(-1.0, 1.0),
        gibbs_sweeps=30,
        seed=11,
    )
    W = data.true_weights[:12].reshape(6, 2)
    trans = data.model.transitions(data.true_weights)
    exact = [_exact_marginals(x @ W, trans) for x in data.inputs]
    p = np.array([m for m, _ in exact])  # (n, T)
    y = data.y.reshape(1000, 4)
    z = (y - p).sum(axis=0) / np.sqrt((p * (1 - p)).sum(axis=0))
    assert np.abs(z).max() < 4.5
    # pairwise too: the transitions are sampled, not only the states
    q = np.array([e for _, e in exact])
    same = (y[:, 0] == y[:, 1]).astype(float)
    assert abs((same - q).sum()) / np.sqrt((q * (1 - q)).sum()) < 4.5


def test_kfold_parts():
    parts = kfold_parts(1000, 7, seed=0)
    assert len(parts) == 7
    assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(1000))
    assert {len(p) for p in parts} <= {142, 143}
    with pytest.raises(ValueError):
        kfold_parts(10, 1)
