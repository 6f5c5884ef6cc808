"""CRF objective, OWL-QN, Grafting-Light, greedy Grafting and marginals.

The likelihood and its gradient are checked against brute-force enumeration of every labeling
of tiny chains and against central finite differences; the optimisers against their
optimality conditions (the subgradient of the L1 objective contains 0 at the solution) and
against each other (three L1 learners, one convex objective).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_learners import SPEC, toy_chain

from tagger.api import Tagger
from tagger.chain.layout import ChainModel
from tagger.errors import TaggerError
from tagger.features import FeatureSpec, Featurized
from tagger.learners import LEARNERS, TrainingProblem
from tagger.learners.solvers.crf_objective import CRFObjective
from tagger.learners.solvers.owlqn import OWLQN, pseudo_gradient
from tagger.sentence import Sentence

from _brute import labelings, sentence_features


def random_problem(
    seed: int,
    n_sent: int = 4,
    n_labels: int = 3,
    n_attrs: int = 5,
    max_len: int = 4,
    all_pairs: bool = False,
    real: bool = False,
):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, max_len + 1, size=n_sent)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    N = int(offsets[-1])
    per_tok = rng.integers(0, 4, size=N)
    indptr = np.concatenate([[0], np.cumsum(per_tok)]).astype(np.int64)
    attrs = rng.integers(0, n_attrs, size=int(indptr[-1])).astype(np.int32)
    values = rng.normal(size=len(attrs)) if real else None
    X = Featurized(indptr, attrs, offsets, values)
    y = rng.integers(0, n_labels, size=N).astype(np.int32)
    model = ChainModel.from_data(X, y, n_labels, n_attrs, all_pairs=all_pairs)
    w = rng.normal(scale=1.5, size=model.n_weights)
    return X, y, model, w


def brute_force(X, y, model, w):
    """NLL and gradient by enumerating every labeling of every sentence."""
    nll = 0.0
    grad = np.zeros(model.n_weights)
    for s in range(X.n_sentences):
        a, b = int(X.offsets[s]), int(X.offsets[s + 1])
        _, feats = sentence_features(model, X, s)
        scores = feats @ w
        m = scores.max()
        log_z = m + math.log(np.exp(scores - m).sum())
        probs = np.exp(scores - log_z)
        gold = model.joint_features(X, s, y[a:b])
        nll += log_z - gold @ w
        grad += probs @ feats - gold
    return nll, grad


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("all_pairs, real", [(False, False), (True, False), (False, True)])
def test_objective_matches_brute_force(seed, all_pairs, real):
    X, y, model, w = random_problem(seed, all_pairs=all_pairs, real=real)
    nll, grad = CRFObjective(model, X, y)(w)
    ref_nll, ref_grad = brute_force(X, y, model, w)
    assert nll == pytest.approx(ref_nll, rel=1e-10, abs=1e-10)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("seed", range(4))
def test_gradient_matches_finite_differences(seed):
    X, y, model, w = random_problem(100 + seed, n_sent=7, max_len=9, n_labels=4, real=seed % 2 == 1)
    fun = CRFObjective(model, X, y)
    _, grad = fun(w)
    h = 1e-5
    for k in range(model.n_weights):
        e = np.zeros_like(w)
        e[k] = h
        fd = (fun(w + e)[0] - fun(w - e)[0]) / (2 * h)
        assert grad[k] == pytest.approx(fd, rel=1e-5, abs=1e-6)


def test_objective_is_parallel_safe_and_deterministic():
    # many sentences over several chunks: the same result as sentence-by-sentence sums
    X, y, model, w = random_problem(7, n_sent=300, max_len=12, n_labels=5, n_attrs=30)
    fun = CRFObjective(model, X, y)
    nll, grad = fun(w)
    nll2, grad2 = fun(w)
    assert nll == nll2 and np.array_equal(grad, grad2)
    total, gsum = 0.0, np.zeros_like(grad)
    for s in range(X.n_sentences):
        a, b = X.offsets[s], X.offsets[s + 1]
        sub = Featurized(
            X.indptr[a : b + 1] - X.indptr[a],
            X.attrs[X.indptr[a] : X.indptr[b]],
            np.array([0, b - a], dtype=np.int64),
        )
        f, g = CRFObjective(model, sub, y[a:b])(w)
        total += f
        gsum += g
    assert nll == pytest.approx(total, rel=1e-12)
    np.testing.assert_allclose(grad, gsum, rtol=1e-10, atol=1e-10)


def test_frozen_ends_have_zero_gradient():
    X, y, model, w = random_problem(3)
    L = model.n_labels
    _, g = CRFObjective(model, X, y, fixed=("ends",))(w)
    assert not g[model.n_state + L * L :].any()
    _, g_all = CRFObjective(model, X, y)(w)
    np.testing.assert_array_equal(g[: model.n_state + L * L], g_all[: model.n_state + L * L])


# ------------------------------------------------------------------------------ OWL-QN


def test_pseudo_gradient_cases():
    w = np.array([1.0, -2.0, 0.0, 0.0, 0.0])
    g = np.array([0.5, 0.5, -3.0, 3.0, 0.2])
    np.testing.assert_allclose(pseudo_gradient(w, g, 1.0), [1.5, -0.5, -2.0, 2.0, 0.0])


def _l1_optimality(fun, w, c1):
    """Largest violation of 0 in the subdifferential of f + c1 ||w||_1."""
    _, g = fun(w)
    return float(np.abs(pseudo_gradient(w, g, c1)).max())


@pytest.mark.parametrize("adaptive_step", [False, True])
def test_owlqn_solves_a_lasso_exactly(adaptive_step):
    # a smooth quadratic whose L1 solution is known in closed form (soft thresholding)
    rng = np.random.default_rng(0)
    d = rng.uniform(0.5, 3.0, size=40)
    b = rng.normal(scale=2.0, size=40)
    c1 = 1.0

    def fun(w):
        return 0.5 * float(d @ (w - b) ** 2), d * (w - b)

    opt = OWLQN(fun, np.zeros(40), c1, memory=5, adaptive_step=adaptive_step)
    for _ in range(200):
        if not opt.step():
            break
    expected = np.sign(b) * np.maximum(np.abs(b) - c1 / d, 0.0)
    np.testing.assert_allclose(opt.w, expected, atol=1e-7)
    assert np.array_equal(opt.w == 0, expected == 0)


def _problem(train, spec=SPEC):
    from tagger.evaluation.labels import LabelIndex
    from tagger.features import Featurizer

    fz = Featurizer(spec).fit(train)
    X = fz.transform(train)
    labels = LabelIndex.from_sentences(train)
    y = labels.encode([lab for s in train for lab in s.labels])
    model = ChainModel.from_data(X, y, len(labels), fz.n_attributes, spec.all_pairs)
    return TrainingProblem(model, X, y)


@pytest.fixture(scope="module")
def toy_problem():
    return _problem(toy_chain(120, seed=4, p_amb=0.5))


@pytest.mark.parametrize(
    "name,adaptive,c2",
    [
        ("crf-l1", False, 0.0),
        ("crf-l1", True, 0.0),
        ("crf-grafting", True, 0.0),
        ("crf-grafting", False, 0.0),
        ("crf-grafting-greedy", True, 0.0),
        ("crf-l1", False, 0.2),
        ("crf-grafting", True, 0.2),
        ("crf-grafting-greedy", True, 0.2),
    ],
)
def test_l1_learners_reach_the_same_optimum(name, adaptive, c2, toy_problem):
    """Optimality of L + c1 ||w||_1 + c2 ||w||^2 (pure L1 when c2 = 0, else the elastic net),
    checked on the gradient of the likelihood (itself checked by enumeration above)."""
    c1 = 0.5
    params = {"c1": c1, "c2": c2, "delta": 1e-10, "epochs": 3000, "adaptive_step": adaptive}
    if name != "crf-l1":
        params["select_unit"] = 3
    learner = LEARNERS[name](**params)
    w = learner.fit(toy_problem)
    likelihood = CRFObjective(toy_problem.model, toy_problem.X, toy_problem.y)

    def fun(v):
        f, g = likelihood(v)
        return f + c2 * float(v @ v), g + 2 * c2 * v

    assert _l1_optimality(fun, w, c1) < 1e-3
    F = fun(w)[0] + c1 * np.abs(w).sum()
    ref = LEARNERS["crf-l1"](c1=c1, c2=c2, delta=1e-12, epochs=5000).fit(toy_problem)
    F_ref = fun(ref)[0] + c1 * np.abs(ref).sum()
    assert F == pytest.approx(F_ref, rel=1e-6)
    assert learner.trace_[-1]["nll"] == pytest.approx(likelihood(w)[0], rel=1e-9)
    rows = learner.trace_
    assert rows[-1]["objective"] == pytest.approx(F, rel=1e-12)
    assert all(r["grad_evals"] >= r["epoch"] for r in rows)
    # a full gradient at most once per working-set pass
    assert all(r["full_grads"] <= r["grad_evals"] for r in rows)


def test_grafting_grows_by_select_unit(toy_problem):
    learner = LEARNERS["crf-grafting"](c1=0.5, select_unit=2)
    learner.fit(toy_problem)
    rows = learner.trace_
    L = toy_problem.model.n_labels
    start = L * L + 2 * L
    sizes = [start] + [r["working_set"] for r in rows]
    assert all(0 <= b - a <= 2 for a, b in zip(sizes, sizes[1:]))
    assert any(r["added"] == 2 for r in rows)
    assert rows[-1]["added"] == 0
    # weights outside the working set stayed zero
    assert rows[-1]["nonzero"] <= rows[-1]["working_set"]


def test_l2_learner_reaches_the_optimum(toy_problem):
    c2 = 0.3
    w = LEARNERS["crf-l2"](c2=c2, delta=1e-12, epochs=2000).fit(toy_problem)
    _, g = CRFObjective(toy_problem.model, toy_problem.X, toy_problem.y)(w)
    assert np.abs(g + 2 * c2 * w).max() < 1e-3


def test_smaller_c1_more_nonzeros():
    from pathlib import Path

    from tagger.io import read_corpus

    train = list(read_corpus(Path(__file__).resolve().parents[2] / "corpora" / "sample_chunk.txt"))
    problem = _problem(train, FeatureSpec.load("chunk"))
    nnz = [np.count_nonzero(LEARNERS["crf-l1"](c1=c).fit(problem)) for c in (5.0, 1.0, 0.2)]
    assert nnz[0] < nnz[1] < nnz[2]


# ------------------------------------------------------------------------------ marginals


def test_marginals_are_the_model_probabilities():
    train = toy_chain(60, seed=1)
    tg = Tagger(features=SPEC, learner="crf-l2", params={"c2": 0.5}, select=False).fit(train)
    sents = [Sentence([["a1", "amb", "zzz"]]), Sentence([["c2"]])]
    margs = tg.predict_marginals(sents)
    assert [m.shape for m in margs] == [(3, 3), (1, 3)]
    # brute force: p(y) over all labelings from the model's own scores
    X = tg.featurize(sents)
    for s, m in enumerate(margs):
        a, b = X.offsets[s], X.offsets[s + 1]
        L = len(tg.labels_)
        paths = labelings(b - a, L, np.int32)
        scores = np.array([tg.model_.score(X, s, p, tg.weights_) for p in paths])
        p = np.exp(scores - scores.max())
        p /= p.sum()
        ref = np.zeros((b - a, L))
        for path, pr in zip(paths, p):
            ref[np.arange(b - a), path] += pr
        np.testing.assert_allclose(m, ref, atol=1e-12)


def test_marginals_refused_for_max_margin_models():
    tg = Tagger(features=SPEC, learner="m3n-subgradient", params={"epochs": 2}, select=False).fit(
        toy_chain(30, 0)
    )
    with pytest.raises(TaggerError, match="not probabilities"):
        tg.predict_marginals([Sentence([["a1"]])])


# ------------------------------------------------------------------------------ CLI and presets


def test_cli_tag_marginals(tmp_path):
    from click.testing import CliRunner

    from tagger.cli import cli

    train = tmp_path / "train.txt"
    train.write_text(
        "".join(
            " ".join([w, lab]) + "\n" + ("\n" if i % 4 == 3 else "")
            for i, (w, lab) in enumerate([("a1", "A"), ("b1", "B"), ("c1", "C"), ("a2", "A")] * 20)
        )
    )
    runner = CliRunner()
    for learner, model in (("crf-l2", "crf.tgm"), ("m3n-subgradient", "m3n.tgm")):
        r = runner.invoke(
            cli,
            [
                "train",
                str(train),
                "-o",
                str(tmp_path / model),
                "-q",
                "--features",
                "pos",
                "--learner",
                learner,
                "--set",
                "epochs=3",
            ],
        )
        assert r.exit_code == 0, r.output
    inp = tmp_path / "in.txt"
    inp.write_text("a1\nb1\n\nc1\n")
    r = runner.invoke(cli, ["tag", str(tmp_path / "crf.tgm"), str(inp), "--marginals"])
    assert r.exit_code == 0, r.output
    lines = r.output.split("\n")
    assert lines[2] == "" and len([ln for ln in lines if ln]) == 3
    tg = Tagger.load(tmp_path / "crf.tgm")
    ref = tg.predict_marginals([Sentence([["a1", "b1"]]), Sentence([["c1"]])])
    rows = [ln.split() for ln in lines if ln]
    probs = [[float(f.split(":")[1]) for f in row[2:]] for row in rows]
    assert [[f.split(":")[0] for f in row[2:]] for row in rows] == [tg.labels_.labels] * 3
    np.testing.assert_allclose(probs, np.vstack(ref), atol=1e-6)
    assert [row[1] for row in rows] == [
        lab for p in tg.predict([Sentence([["a1", "b1"]]), Sentence([["c1"]])]) for lab in p
    ]
    r = runner.invoke(cli, ["tag", str(tmp_path / "m3n.tgm"), str(inp), "--marginals"])
    assert r.exit_code == 1
    assert "not probabilities" in r.output and "Traceback" not in r.output


def test_label_table_maps_gold_labels():
    spec = FeatureSpec.load("np-chunk-large")
    assert spec.all_pairs
    s = Sentence([["He", "saw", "it"], ["PRP", "VBD", "PRP"]], ["B-NP", "B-VP", "B-NP"])
    assert spec.relabel([s])[0].labels == ["B-NP", "O", "B-NP"]
    custom = FeatureSpec.from_dict(
        {
            "featurizer": {"columns": ["w"], "templates": ["w[0]"]},
            "labels": {"map": {"X": "Y"}, "keep": ["Y"], "other": "Z"},
        }
    )
    assert [custom.map_label(x) for x in ("X", "Y", "Q")] == ["Y", "Y", "Z"]
    from tagger.errors import FeatureSpecError

    with pytest.raises(FeatureSpecError, match="labels.keep"):
        FeatureSpec.from_dict(
            {"featurizer": {"columns": ["w"], "templates": ["w[0]"]}, "labels": {"keep": "B-NP"}}
        )
    # training and evaluation both see the mapped labels
    train = [Sentence([["the", "dog", "ran"], ["DT", "NN", "VBD"]], ["B-NP", "I-NP", "B-VP"])] * 5
    tg = Tagger(features=spec, learner="crf-l2", params={"epochs": 20}, select=False).fit(train)
    assert sorted(tg.labels_.labels) == ["B-NP", "I-NP", "O"]
    assert tg.evaluate(train)["f1"] == 1.0


# ------------------------------------------------------------------ working-set objective


@pytest.mark.parametrize("real", [False, True])
@pytest.mark.parametrize("ends", [(), ("ends",)])
def test_working_set_objective_equals_the_full_one(real, ends):
    from tagger.learners.solvers.crf_objective import WorkingSetObjective

    X, y, model, w = random_problem(11, n_sent=6, n_attrs=7, all_pairs=True, real=real)
    rng = np.random.default_rng(3)
    active = rng.random(model.n_weights) < 0.4
    w_full = np.where(active, w, 0.0)
    w_full[model.n_state :] = w[model.n_state :]  # the tail is always in S
    full = CRFObjective(model, X, y, fixed=ends)
    if ends:
        L = model.n_labels
        w_full[model.n_state + L * L :] = 0.0
    f_ref, g_ref = full(w_full)
    ws = WorkingSetObjective(model, X, y, fixed=ends)
    index = ws.set_active(active)
    assert np.all(np.diff(index) > 0)
    w_c = w_full[index]
    f, g = ws(w_c)
    # same likelihood, and the working-set gradient is the full one restricted to S
    assert f == pytest.approx(f_ref, rel=1e-12)
    np.testing.assert_allclose(g, g_ref[index], rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(ws.expand(w_c), w_full)
    # the gradient over every weight, scattered from the working-set pass's marginals
    np.testing.assert_allclose(ws.full_gradient(w_c, g), g_ref, rtol=1e-10, atol=1e-12)
    assert (ws.n_evals, ws.n_full) == (1, 1)
    # at another point the full gradient needs (and counts) a new working-set pass
    w2 = w_c * 0.5
    _, g2_ref = full(ws.expand(w2))
    np.testing.assert_allclose(ws.full_gradient(w2, g), g2_ref, rtol=1e-10, atol=1e-12)
    assert (ws.n_evals, ws.n_full) == (2, 2)


def test_owlqn_relayout_keeps_the_iterate_and_memory():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(8, 5))

    def fun(x):
        r = A[:, : len(x)] @ x - 1.0
        return 0.5 * r @ r, A[:, : len(x)].T @ r

    opt = OWLQN(fun, np.zeros(3), 0.1, memory=4)
    for _ in range(3):
        opt.step()
    w, S, Y = opt.w.copy(), opt.S.copy(), opt.Y.copy()
    pos = np.array([0, 2, 4])
    g_new = np.arange(5.0)
    opt.relayout(5, pos, g_new)
    np.testing.assert_array_equal(opt.w[pos], w)
    np.testing.assert_array_equal(opt.w[[1, 3]], 0.0)
    np.testing.assert_array_equal(opt.g[[1, 3]], g_new[[1, 3]])
    np.testing.assert_array_equal(opt.S[:, pos], S)
    np.testing.assert_array_equal(opt.Y[:, [1, 3]], 0.0)
    np.testing.assert_array_equal(opt.Y[:, pos], Y)
