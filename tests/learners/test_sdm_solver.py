"""The Sequential Dual Method solver (tagger.learners.solvers.sdm_solver) against independent
references.

The reference for the optimum is the primal QP written out over *every* labeling of tiny
sentences (brute-force enumeration):

    min_{w, xi}  (1/2)||w||^2 + sum_i C_i xi_i
    s.t.  w . (s * (f(x_i, y_i) - f(x_i, y))) >= Delta(y_i, y) - xi_i,  xi_i >= 0  (all i, y)

built from ``ChainModel.joint_features`` only (no code shared with the solver's kernels) and
solved by HiGHS's QP solver.
"""

from __future__ import annotations

import numpy as np
import pytest

from tagger.chain.layout import ChainModel
from tagger.evaluation.labels import LabelIndex
from tagger.features import FeatureSpec, Featurized, Featurizer
from tagger.learners.solvers.sdm_solver import SDMSolver, restrict_featurized
from tagger.sentence import Sentence

from _brute import hinge_qp, labelings

highspy = pytest.importorskip("highspy")


def tiny(seed: int, n: int = 5, max_len: int = 4, labels=("X", "Y", "Z")):
    rng = np.random.default_rng(seed)
    vocab = ["p", "q", "r", "s"]
    sentences = []
    for _ in range(n):
        T = int(rng.integers(1, max_len + 1))
        sentences.append(
            Sentence(
                [[str(rng.choice(vocab)) for _ in range(T)]],
                [str(rng.choice(labels)) for _ in range(T)],
            )
        )
    spec = FeatureSpec.from_dict(
        {"featurizer": {"columns": ["word"], "templates": ["word[0]", "word[-1]", "bias"]}}
    )
    fz = Featurizer(spec).fit(sentences)
    X = fz.transform(sentences)
    index = LabelIndex.from_sentences(sentences)
    y = index.encode([lab for s in sentences for lab in s.labels]).astype(np.int32)
    model = ChainModel.from_data(X, y, len(index), fz.n_attributes)
    return model, X, y


def constraints(model, X, y):
    """Rows (i, Delta f_i(y), Delta(y_i, y)) over every labeling of every sentence."""
    rows = []
    for i in range(X.n_sentences):
        a, b = int(X.offsets[i]), int(X.offsets[i + 1])
        gold = y[a:b]
        fg = model.joint_features(X, i, gold)
        for lab in labelings(b - a, model.n_labels):
            rows.append((i, fg - model.joint_features(X, i, lab), float(np.sum(lab != gold))))
    return rows


def reference(model, X, y, C, scale=None):
    """Effective weights s * w and the optimum of the primal QP over all labelings (HiGHS)."""
    return hinge_qp(constraints(model, X, y), X.n_sentences, model.n_weights, C, scale)


def brute_hinges(model, X, y, w_eff):
    out = []
    for i in range(X.n_sentences):
        a, b = int(X.offsets[i]), int(X.offsets[i + 1])
        gold = y[a:b]
        g = model.score(X, i, gold, w_eff)
        out.append(
            max(
                model.score(X, i, lab, w_eff) + np.sum(lab != gold)
                for lab in labelings(b - a, model.n_labels)
            )
            - g
        )
    return np.array(out)


def check_dual_consistency(solver):
    """u = sum_{i,m} alpha_im (f(x_i, y_i) - f(x_i, y_im)), duals feasible, w = s^2 u."""
    model, X = solver.model, solver.X
    u = np.zeros(model.n_weights)
    for i in range(X.n_sentences):
        a, b = int(X.offsets[i]), int(X.offsets[i + 1])
        n_i = solver.ws_n[i]
        alpha = solver.ws_alpha[i, :n_i]
        assert np.all(alpha > 0) and alpha.sum() <= solver.C[i] * (1 + 1e-12) + 1e-15
        assert np.all(solver.ws_alpha[i, n_i:] == 0)
        for m in range(n_i):
            lab = solver.ws_lab[m, a:b]
            assert solver.ws_loss[i, m] == np.sum(lab != solver.y[a:b])
            u += alpha[m] * (
                model.joint_features(X, i, solver.y[a:b]) - model.joint_features(X, i, lab)
            )
    np.testing.assert_allclose(solver.u, u, atol=1e-10)
    np.testing.assert_allclose(solver.w, solver.s2 * solver.u, atol=1e-12)


# ------------------------------------------------------------------------------ optimum


@pytest.mark.parametrize("seed, C", [(1, 0.1), (2, 1.0), (3, 10.0)])
def test_matches_brute_force_qp(seed, C):
    model, X, y = tiny(seed)
    ref_w, ref_obj = reference(model, X, y, C)
    solver = SDMSolver(model, X, y, C=C, seed=seed)
    res = solver.solve(epochs=5000, tol=1e-8)
    assert res.converged
    assert res.primal == pytest.approx(ref_obj, rel=1e-6)
    assert res.dual <= ref_obj * (1 + 1e-9) + 1e-12 and res.dual == pytest.approx(ref_obj, rel=1e-6)
    np.testing.assert_allclose(solver.weights(), ref_w, atol=2e-4 * max(1.0, np.abs(ref_w).max()))
    # the reported primal uses exact hinges: compare with enumeration
    np.testing.assert_allclose(
        solver.hinges(), brute_hinges(model, X, y, solver.weights()), atol=1e-9
    )
    check_dual_consistency(solver)


def test_dual_never_decreases_and_gap_closes():
    model, X, y = tiny(4, n=8, max_len=5)
    solver = SDMSolver(model, X, y, C=3.0, max_inner=2, seed=0)
    duals, gaps = [], []
    solver.solve(
        epochs=5000,
        tol=1e-8,
        callback=lambda e, p, d, g: duals.append(d) or gaps.append(g) and False,
    )
    assert all(d2 >= d1 - 1e-12 * abs(d1) for d1, d2 in zip(duals, duals[1:]))
    assert duals[-1] > duals[0]
    assert gaps[0] > 1e-2 and gaps[-1] <= 1e-8
    # weak duality held all along
    assert all(g >= -1e-12 for g in gaps)


# ------------------------------------------------------------------------------ scaling, weights


def test_per_feature_scaling_matches_the_scaled_reference():
    model, X, y = tiny(5)
    rng = np.random.default_rng(0)
    s = rng.uniform(0.2, 2.0, model.n_weights)
    s[rng.choice(model.n_state, 3, replace=False)] = 0.0  # switched-off features
    ref_w, ref_obj = reference(model, X, y, 2.0, scale=s)
    solver = SDMSolver(model, X, y, C=2.0, scale=s)
    res = solver.solve(epochs=5000, tol=1e-8)
    assert res.primal == pytest.approx(ref_obj, rel=1e-6)
    w = solver.weights()
    assert np.all(w[s == 0] == 0)
    np.testing.assert_allclose(w, ref_w, atol=2e-4 * max(1.0, np.abs(ref_w).max()))


def test_scaling_equals_rescaled_features():
    # a constant scale c turns the problem in w_eff = c w into
    # min (1/(2c^2))||w_eff||^2 + C sum R_i(w_eff), the unscaled problem with C -> c^2 C
    model, X, y = tiny(6)
    c = 1.7
    a = SDMSolver(model, X, y, C=0.5, scale=np.full(model.n_weights, c))
    a.solve(epochs=5000, tol=1e-9)
    b = SDMSolver(model, X, y, C=0.5 * c * c)
    b.solve(epochs=5000, tol=1e-9)
    np.testing.assert_allclose(a.weights(), b.weights(), atol=1e-5)


def _subset(X: Featurized, y, keep):
    """The sentences ``keep`` of X (same attribute ids)."""
    idx_tok, indptr, attrs, offsets = [], [0], [], [0]
    for i in keep:
        a, b = int(X.offsets[i]), int(X.offsets[i + 1])
        for t in range(a, b):
            attrs.extend(X.attrs[X.indptr[t] : X.indptr[t + 1]].tolist())
            indptr.append(len(attrs))
            idx_tok.append(t)
        offsets.append(offsets[-1] + b - a)
    return (
        Featurized(
            np.array(indptr, np.int64), np.array(attrs, np.int32), np.array(offsets, np.int64)
        ),
        y[idx_tok],
    )


def test_zero_weight_example_has_no_influence():
    model, X, y = tiny(7, n=6)
    C = np.array([1.0, 0.0, 2.0, 1.0, 0.0, 0.5])
    full = SDMSolver(model, X, y, C=C)
    full.solve(epochs=5000, tol=1e-9)
    keep = np.flatnonzero(C > 0)
    Xs, ys = _subset(X, y, keep)
    part = SDMSolver(model, Xs, ys, C=C[keep])
    part.solve(epochs=5000, tol=1e-9)
    np.testing.assert_allclose(full.weights(), part.weights(), atol=1e-6)
    assert full.ws_n[C == 0].sum() == 0
    ref_w, _ = reference(model, X, y, C)
    np.testing.assert_allclose(full.weights(), ref_w, atol=2e-4 * max(1.0, np.abs(ref_w).max()))
    # the primal leaves the weightless examples out (they are not decoded for it) but the
    # hinges of every example are still there on request
    primal, _, hinge = full.objectives()
    all_hinges = full.hinges()
    w = full.weights()
    assert primal == pytest.approx(0.5 * w @ w + C @ all_hinges, rel=1e-12)
    np.testing.assert_array_equal(hinge[C > 0], all_hinges[C > 0])
    assert np.all(hinge[C == 0] == 0) and np.any(all_hinges[C == 0] > 0)


# ------------------------------------------------------------------------------ warm starts


def test_warm_start_after_labeling_and_weight_changes():
    model, X, y = tiny(8, n=7)
    rng = np.random.default_rng(1)
    solver = SDMSolver(model, X, y, C=1.0, seed=0)
    solver.solve(epochs=200, tol=1e-9)
    # impute new labelings for two sentences (labels the model has parameters for) and change
    # the weights: the duals of changed sentences are reset, the others kept
    y2 = y.copy()
    for i in (1, 4):
        a, b = int(X.offsets[i]), int(X.offsets[i + 1])
        y2[a:b] = rng.integers(0, model.n_labels, b - a)
    C2 = rng.uniform(0.0, 2.0, X.n_sentences)
    C2[3] = 0.0
    kept_before = solver.ws_n.copy()
    n_changed = solver.set_labels(y2)
    changed = [
        i
        for i in range(X.n_sentences)
        if not np.array_equal(
            y[X.offsets[i] : X.offsets[i + 1]], y2[X.offsets[i] : X.offsets[i + 1]]
        )
    ]
    assert n_changed == len(changed)
    assert all(solver.ws_n[i] == 0 for i in changed)
    assert all(solver.ws_n[i] == kept_before[i] for i in range(X.n_sentences) if i not in changed)
    check_dual_consistency(solver)
    solver.set_example_weights(C2)
    check_dual_consistency(solver)
    assert solver.ws_n[3] == 0
    duals = []
    res = solver.solve(epochs=500, tol=1e-9, callback=lambda e, p, d, g: duals.append(d) and False)
    assert all(d2 >= d1 - 1e-12 * abs(d1) for d1, d2 in zip(duals, duals[1:]))
    ref_w, ref_obj = reference(model, X, y2, C2)
    assert res.primal == pytest.approx(ref_obj, rel=1e-6)
    np.testing.assert_allclose(solver.weights(), ref_w, atol=2e-4 * max(1.0, np.abs(ref_w).max()))
    # the caller's arrays are untouched
    assert not np.array_equal(y, y2)


def test_warm_start_changes_scale_and_restricts_parameters():
    model, X, y = tiny(9, n=6)
    solver = SDMSolver(model, X, y, C=1.0)
    solver.solve(epochs=100, tol=1e-9)
    rng = np.random.default_rng(2)
    s = rng.uniform(0.5, 1.5, model.n_weights)
    drop = np.zeros(model.n_state, bool)
    drop[rng.choice(model.n_state, model.n_state // 3, replace=False)] = True
    s[: model.n_state][drop] = 0.0
    solver.set_scale(s)
    check_dual_consistency(solver)
    index = solver.restrict(~drop)
    assert solver.model.n_state == model.n_state - drop.sum()
    assert solver.X.attrs.max() < solver.model.n_attrs
    res = solver.solve(epochs=5000, tol=1e-8)
    check_dual_consistency(solver)
    ref_w, ref_obj = reference(model, X, y, 1.0, scale=s)
    assert res.primal == pytest.approx(ref_obj, rel=1e-6)
    full = np.zeros(model.n_weights)
    full[index] = solver.weights()
    np.testing.assert_allclose(full, ref_w, atol=2e-4 * max(1.0, np.abs(ref_w).max()))


def test_restrict_featurized_keeps_the_other_attributes():
    model, X, y = tiny(10)
    keep = np.ones(model.n_attrs, bool)
    keep[::2] = False
    Xr = restrict_featurized(X, keep)
    new_id = np.cumsum(keep) - 1
    for t in range(X.n_tokens):
        old = X.attrs[X.indptr[t] : X.indptr[t + 1]]
        assert Xr.attrs[Xr.indptr[t] : Xr.indptr[t + 1]].tolist() == new_id[old[keep[old]]].tolist()
    assert np.array_equal(Xr.offsets, X.offsets)


def test_bad_inputs():
    model, X, y = tiny(11)
    with pytest.raises(ValueError, match="C_i"):
        SDMSolver(model, X, y, C=-1.0)
    with pytest.raises(ValueError, match="integer label ids"):
        SDMSolver(model, X, y[:-1])
    with pytest.raises(ValueError, match="scale"):
        SDMSolver(model, X, y, scale=np.ones(3))


def test_dual_never_decreases_on_the_sample_chunk_corpus():
    from pathlib import Path

    from tagger.api import Tagger
    from tagger.io import read_corpus

    path = Path(__file__).resolve().parents[2] / "corpora" / "sample_chunk.txt"
    if not path.is_file():
        pytest.skip("sample chunk corpus missing")
    tg = Tagger(
        features="chunk",
        learner="m3n-l2",
        params={"C": 1.0, "epochs": 25, "tol": 0.0},
        select=False,
    ).fit(read_corpus(path))
    duals = [r["dual"] for r in tg.trace_]
    primals = [r["objective"] for r in tg.trace_]
    assert len(duals) == 25
    assert all(d2 >= d1 for d1, d2 in zip(duals, duals[1:]))
    assert all(p >= d for p, d in zip(primals, duals))
    assert tg.trace_[-1]["gap"] < 0.5 * tg.trace_[0]["gap"]


# ------------------------------------------------------------------------------ m3n-em


def l1_reference(model, X, y, lam, C):
    """Optimum of (lam/K)||w||_1^2 + C sum_i R_i(w) over all labelings.

    For a radius t, h(t) = min {C sum_i xi_i : ||w||_1 <= t, margin constraints} is an LP
    (w = p - n, p, n >= 0), solved by HiGHS; h is convex in t, so the objective
    (lam/K) t^2 + h(t) is minimised over t by a bounded scalar search."""
    from scipy.optimize import linprog, minimize_scalar

    n, K = X.n_sentences, model.n_weights
    rows = constraints(model, X, y)
    # A_ub z <= b_ub with z = (p, n, xi): -(p - n).df - xi_i <= -loss ; 1'p + 1'n <= t
    A = np.array(
        [np.concatenate([-df, df, -np.eye(n)[i]]) for i, df, _ in rows]
        + [np.concatenate([np.ones(2 * K), np.zeros(n)])]
    )
    b = np.array([-loss for _, _, loss in rows] + [0.0])
    cost = np.concatenate([np.zeros(2 * K), np.full(n, C)])

    def h(t):
        b[-1] = t
        res = linprog(cost, A_ub=A, b_ub=b, bounds=(0, None), method="highs")
        assert res.status == 0
        return res.fun, res.x[:K] - res.x[K : 2 * K]

    hi = sum(loss for _, _, loss in rows) + 1.0
    best = minimize_scalar(
        lambda t: lam / K * t * t + h(t)[0],
        bounds=(0.0, hi),
        method="bounded",
        options={"xatol": 1e-10},
    )
    return h(best.x)[1], best.fun


@pytest.mark.parametrize("seed, lam", [(12, 2.0), pytest.param(13, 20.0, marks=pytest.mark.slow)])
def test_em_learner_reaches_the_l1_optimum(seed, lam):
    from tagger.learners import LEARNERS
    from tagger.learners.base import TrainingProblem

    model, X, y = tiny(seed, n=6)
    C = 1.0
    ref_w, ref_obj = l1_reference(model, X, y, lam, C)
    learner = LEARNERS["m3n-em"](
        **{"lambda": lam, "C": C, "epochs": 40, "inner_epochs": 100, "tol": 1e-9}
    )
    w = learner.fit(TrainingProblem(model, X, y))
    K = model.n_weights
    obj = lam / K * np.abs(w).sum() ** 2 + C * brute_hinges(model, X, y, w).sum()
    assert obj >= ref_obj * (1 - 1e-6)
    assert obj == pytest.approx(ref_obj, rel=1e-3)
    # primal sparse: exact zeros, and the parameters left were removed from the last M-steps
    assert np.count_nonzero(w) < K
    assert learner.trace_[-1]["active"] < K
    assert learner.trace_[-1]["nonzero"] == np.count_nonzero(w)


def test_em_beta_step_is_the_closed_form():
    from tagger.learners import LEARNERS
    from tagger.learners.base import TrainingProblem

    model, X, y = tiny(14, n=6)
    lam, C = 3.0, 1.0
    # one EM iteration = one L2 M-step with C / (2 lambda) at beta = 1
    learner = LEARNERS["m3n-em"](
        **{"lambda": lam, "C": C, "epochs": 1, "inner_epochs": 500, "tol": 1e-10, "drop": 0.0}
    )
    w1 = learner.fit(TrainingProblem(model, X, y))
    direct = SDMSolver(model, X, y, C=C / (2 * lam))
    direct.solve(epochs=500, tol=1e-10)
    np.testing.assert_allclose(w1, direct.weights(), atol=1e-6)
    ref_w, _ = reference(model, X, y, C / (2 * lam))
    np.testing.assert_allclose(w1, ref_w, atol=1e-4)
    # the next M-step scales feature k by beta_k = sqrt(K |w_k| / ||w||_1)
    K = model.n_weights
    beta = np.sqrt(K * np.abs(w1) / np.abs(w1).sum())
    two = LEARNERS["m3n-em"](
        **{"lambda": lam, "C": C, "epochs": 2, "inner_epochs": 500, "tol": 1e-10, "drop": 0.0}
    )
    w2 = two.fit(TrainingProblem(model, X, y))
    ref2, _ = reference(model, X, y, C / (2 * lam), scale=beta)
    np.testing.assert_allclose(w2, ref2, atol=2e-4 * max(1.0, np.abs(ref2).max()))


def test_checking_the_gap_less_often_changes_nothing_but_the_checks():
    model, X, y = tiny(5, n=6)
    C = np.full(6, 0.7)
    every, sparse = SDMSolver(model, X, y, C=C, seed=3), SDMSolver(model, X, y, C=C, seed=3)
    seen = []
    r1 = every.solve(epochs=12, tol=0.0)
    r2 = sparse.solve(epochs=12, tol=0.0, check_every=5, callback=lambda e, p, d, g: seen.append(e))
    assert seen == [5, 10, 12]
    np.testing.assert_array_equal(every.weights(), sparse.weights())
    assert (r1.epochs, r1.primal, r1.dual) == (r2.epochs, r2.primal, r2.dual)
    with pytest.raises(ValueError):
        sparse.solve(epochs=1, check_every=0)


@pytest.mark.parametrize("valued, all_pairs", [(False, True), (True, False)])
def test_table_rescoring_takes_the_same_steps_as_the_plain_gather(valued, all_pairs):
    """A pass that rescores each sentence from its cached weight table (the default) against
    the plain pass that gathers from the whole weight vector: the same steps, bit for bit,
    over several passes with full working sets, real-valued or indicator features, every or
    only the seen (attribute, label) pairs."""
    from tagger.learners.solvers.sdm_kernels import sdm_epoch

    rng = np.random.default_rng(7)
    n, L, n_attrs = 40, 5, 60
    lengths = rng.integers(1, 12, n)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    per_tok = rng.integers(1, 8, offsets[-1])
    indptr = np.concatenate([[0], np.cumsum(per_tok)]).astype(np.int64)
    # repeated attributes within a sentence (a bias, frequent words) are the case to get right
    attrs = rng.integers(0, n_attrs, indptr[-1]).astype(np.int32)
    attrs[indptr[:-1]] = 0
    values = rng.normal(size=indptr[-1]) if valued else None
    X = Featurized(indptr, attrs, offsets, values=values)
    y = rng.integers(0, L, offsets[-1]).astype(np.int32)
    model = ChainModel.from_data(X, y, L, n_attrs, all_pairs=all_pairs)
    C = rng.uniform(0.2, 2.0, n)
    solvers = [
        SDMSolver(model, X, y, C=C, max_working_set=4, max_inner=3, seed=1) for _ in range(2)
    ]
    for epoch in range(6):
        order = np.random.default_rng(epoch).permutation(n).astype(np.int64)
        for s, table in zip(solvers, (True, False)):
            s.stats = np.zeros(3, dtype=np.int64)
            layout, batch, dual, ws = s.kernel_records()
            sdm_epoch(
                layout,
                batch,
                s.y,
                dual,
                ws,
                order,
                s.max_inner,
                s.eps,
                s.scratch,
                s.stats,
                table,
                s.w is s.u,
            )
        a, b = solvers
        assert np.array_equal(a.stats, b.stats)
        for name in ("u", "w", "ws_n", "ws_alpha", "ws_loss", "ws_lab"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
        assert np.all(a.scratch.attr_row == -1)  # the scratch is left clean for the next pass
    assert solvers[0].stats[1] > 0 and solvers[0].ws_n.max() == 4  # steps taken, sets full


# ------------------------------------------------------------------------------ block-parallel


BLOCKINGS = [(2, 2), (3, 1), (2, 8)]  # (blocks, block_size): several rounds, one round


@pytest.mark.parametrize("blocks, block_size", BLOCKINGS)
@pytest.mark.parametrize("seed, C", [(1, 0.1), (2, 1.0), (3, 10.0)])
def test_block_rounds_reach_the_sequential_optimum(seed, C, blocks, block_size):
    """The block-parallel rounds and the sequential method, each to a relative duality gap of
    1e-8, land on the optimum of the brute-force QP; the dual never falls on the way."""
    model, X, y = tiny(seed, n=9)
    ref_w, ref_obj = reference(model, X, y, C)
    sequential = SDMSolver(model, X, y, C=C, seed=seed)
    blocked = SDMSolver(model, X, y, C=C, seed=seed, blocks=blocks, block_size=block_size)
    duals = []
    r0 = sequential.solve(epochs=20000, tol=1e-8)
    r1 = blocked.solve(
        epochs=20000, tol=1e-8, callback=lambda e, p, d, g: duals.append(d) and False
    )
    assert r0.converged and r1.converged
    for res in (r0, r1):
        assert res.primal == pytest.approx(ref_obj, rel=1e-6)
        assert res.dual <= ref_obj * (1 + 1e-9) + 1e-12
    assert r1.primal == pytest.approx(r0.primal, rel=1e-7)
    assert all(d2 >= d1 - 1e-12 * abs(d1) for d1, d2 in zip(duals, duals[1:]))
    tol = 2e-4 * max(1.0, np.abs(ref_w).max())
    np.testing.assert_allclose(blocked.weights(), ref_w, atol=tol)
    np.testing.assert_allclose(blocked.weights(), sequential.weights(), atol=tol)
    check_dual_consistency(blocked)
    assert blocked.stats[3] >= 1  # rounds were run


def test_block_rounds_with_scaling_weights_and_restricted_parameters():
    """What m3n-em and ssvm-annealing ask of the solver (per-feature scales, example weights
    with zeros, new labelings, removed parameters) in block-parallel rounds."""
    model, X, y = tiny(9, n=8)
    rng = np.random.default_rng(3)
    C = rng.uniform(0.2, 2.0, X.n_sentences)
    C[2] = 0.0
    solver = SDMSolver(model, X, y, C=C, blocks=3, block_size=2, seed=4)
    solver.solve(epochs=50, tol=1e-9)
    s = rng.uniform(0.5, 1.5, model.n_weights)
    drop = np.zeros(model.n_state, bool)
    drop[rng.choice(model.n_state, model.n_state // 3, replace=False)] = True
    s[: model.n_state][drop] = 0.0
    y2 = y.copy()
    a, b = int(X.offsets[5]), int(X.offsets[6])
    y2[a:b] = (y2[a:b] + 1) % model.n_labels
    solver.set_labels(y2)
    solver.set_scale(s)
    index = solver.restrict(~drop)
    res = solver.solve(epochs=20000, tol=1e-8)
    assert res.converged
    check_dual_consistency(solver)
    assert solver.ws_n[2] == 0
    ref_w, ref_obj = reference(model, X, y2, C, scale=s)
    assert res.primal == pytest.approx(ref_obj, rel=1e-6)
    full = np.zeros(model.n_weights)
    full[index] = solver.weights()
    np.testing.assert_allclose(full, ref_w, atol=2e-4 * max(1.0, np.abs(ref_w).max()))


@pytest.mark.parametrize("unit", [True, False])
def test_block_rounds_do_not_depend_on_how_many_threads_share_the_blocks(unit):
    """One thread per slot of work arrays: 1, 2 or 5 slots (a thread running several blocks,
    blocks left without a thread) take the same steps, bit for bit."""
    from tagger.learners.solvers.sdm_blocks import block_epoch, slot_work

    model, X, y = tiny(15, n=23, max_len=6)
    scale = None if unit else np.random.default_rng(1).uniform(0.5, 1.5, model.n_weights)
    solvers = [
        SDMSolver(model, X, y, C=1.5, scale=scale, blocks=3, block_size=2, max_inner=3)
        for _ in range(3)
    ]
    for epoch in range(8):
        order = np.random.default_rng(epoch).permutation(X.n_sentences).astype(np.int64)
        for solver, n_slots in zip(solvers, (1, 2, 5)):
            solver.stats = np.zeros(5, dtype=np.int64)
            layout, batch, dual, ws = solver.kernel_records()
            slots = slot_work(n_slots, model.n_weights, model.n_attrs)
            block_epoch(
                layout,
                batch,
                solver.y,
                dual,
                ws,
                order,
                solver.blocks,
                solver.block_size,
                solver.max_inner,
                solver.eps,
                solver.scratch,
                slots,
                solver.stats,
                solver.w is solver.u,
            )
            # the slots come back clean: copies of w, nothing marked
            assert np.array_equal(slots.w, np.broadcast_to(solver.w, slots.w.shape))
            assert not slots.mark.any() and not slots.du.any() and not slots.step.any()
            assert np.all(slots.attr_row == -1)
        first = solvers[0]
        for other in solvers[1:]:
            assert np.array_equal(first.stats, other.stats)
            for name in ("u", "w", "ws_n", "ws_alpha", "ws_loss", "ws_lab"):
                assert np.array_equal(getattr(first, name), getattr(other, name)), name
    assert solvers[0].stats[1] > 0


def test_block_settings_are_checked():
    model, X, y = tiny(11)
    with pytest.raises(ValueError, match="blocks"):
        SDMSolver(model, X, y, blocks=-1)
    with pytest.raises(ValueError, match="block_size"):
        SDMSolver(model, X, y, blocks=2, block_size=0)
