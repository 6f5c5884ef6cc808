"""The LP learners against the full LPs over every labeling, solved independently.

On chains short enough to enumerate every labeling, the LP over *all* constraints is written
out from ``ChainModel.joint_features`` (not from the learners' row kernels) and solved by
``scipy.optimize.linprog``; the learners' column generation must reach its optimum, and the
whole objective they report must equal a brute-force evaluation at their weights.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scipy.optimize import linprog

from tagger import Tagger
from tagger.chain.layout import ChainModel
from tagger.features import Featurized
from tagger.io import read_corpus
from tagger.learners import LEARNERS, TrainingProblem
from tagger.training.synthetic import generate

from _brute import labelings
from _helpers import SAMPLE, SAMPLE_DEV

L = 3


def _problem(seed: int, n: int = 12, n_attrs: int = 6) -> TrainingProblem:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 5, size=n)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    N = int(offsets[-1])
    per = rng.integers(1, 4, size=N)
    indptr = np.concatenate([[0], np.cumsum(per)]).astype(np.int64)
    attrs = np.concatenate([np.sort(rng.choice(n_attrs, k, replace=False)) for k in per])
    # labels follow the first attribute mostly, so the data are learnable but not separable
    first = attrs[indptr[:-1]]
    y = np.where(rng.random(N) < 0.8, first % L, rng.integers(0, L, N)).astype(np.int32)
    X = Featurized(indptr, attrs.astype(np.int32), offsets)
    model = ChainModel.from_data(X, y, L, n_attrs)
    return TrainingProblem(model, X, y)


def _full_rows(problem, margin_rows: bool):
    """Rows (sentence, Delta f, rhs) over every labeling: loss-scaled for the L1-M3N
    (gold included, harmless: its row reads 0 >= 0 - xi), margin 1 for the LP (gold excluded)."""
    m, X = problem.model, problem.X
    rows = []
    for s in range(X.n_sentences):
        a, b = X.offsets[s], X.offsets[s + 1]
        gold = problem.y[a:b]
        fg = m.joint_features(X, s, gold)
        for y in labelings(b - a, L, np.int32):
            loss = float(np.sum(y != gold))
            if margin_rows and loss == 0:
                continue
            rows.append((s, fg - m.joint_features(X, s, y), 1.0 if margin_rows else loss))
    return rows


def _objective(problem, w, C, margin_rows: bool) -> float:
    """The whole objective at w by enumeration."""
    total = np.abs(w).sum()
    per = {}
    for s, d, rhs in _full_rows(problem, margin_rows):
        per[s] = max(per.get(s, 0.0), rhs - d @ w)
    return total + C * sum(per.values())


def _full_lp(problem, C, signed: bool) -> float:
    rows = _full_rows(problem, margin_rows=not signed)
    K, n = problem.model.n_weights, problem.X.n_sentences
    D = np.array([d for _, d, _ in rows])
    M = np.zeros((len(rows), n))
    M[np.arange(len(rows)), [s for s, _, _ in rows]] = 1.0
    rhs = np.array([r for _, _, r in rows])
    if signed:  # w = mu - nu
        A = np.hstack([D, -D, M])
        c = np.concatenate([np.ones(2 * K), np.full(n, C)])
    else:
        A = np.hstack([D, M])
        c = np.concatenate([np.ones(K), np.full(n, C)])
    res = linprog(c, A_ub=-A, b_ub=-rhs, bounds=(0, None), method="highs")
    assert res.status == 0
    return float(res.fun)


CASES = [
    ("m3n-cutting-plane", True, {"epsilon": 1e-9}),
    ("lp-simplex", False, {"epsilon": 1e-9, "optimality_gap": 0.0}),
    ("lp-extragradient", False, {"epsilon": 1e-9, "optimality_gap": 0.0, "gap_tol": 1e-9}),
    # single-token rows as well: a different path to the same optimum
    ("m3n-cutting-plane", True, {"epsilon": 1e-9, "local_rows": True}),
    ("lp-simplex", False, {"epsilon": 1e-9, "optimality_gap": 0.0, "local_rows": True}),
]


@pytest.mark.parametrize(
    "name, signed, params",
    CASES,
    ids=[c[0] + ("-local" if c[2].get("local_rows") else "") for c in CASES],
)
@pytest.mark.parametrize("C", [0.1, 1.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_column_generation_reaches_the_full_lp(name, signed, params, C, seed):
    problem = _problem(seed)
    learner = LEARNERS[name](C=C, **params)
    w = learner.fit(problem)
    optimum = _full_lp(problem, C, signed)
    last = learner.trace_[-1]
    assert last["converged"] is True
    # the reported objective is the whole objective at the returned weights ...
    assert last["objective"] == pytest.approx(
        _objective(problem, w, C, not signed), rel=1e-9, abs=1e-9
    )
    # ... and that is the optimum of the LP over every labeling
    assert last["objective"] == pytest.approx(optimum, rel=1e-6, abs=1e-7)
    if not signed:
        assert (w >= 0).all()
    assert last["nonzero"] == np.count_nonzero(w)


@pytest.mark.parametrize("name, signed", [("m3n-cutting-plane", True), ("lp-simplex", False)])
def test_highs_learners_after_another_multithreaded_highs_solve(name, signed):
    # HiGHS sizes one scheduler per process at its first solve; a model solved earlier with
    # the default threads must not keep the learners' single-threaded solves from running
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.addVar(0.0, 1.0)
    h.changeColCost(0, 1.0)
    h.run()
    problem = _problem(0)
    exact = {} if signed else {"optimality_gap": 0.0}  # the LP learners stop at a gap by default
    learner = LEARNERS[name](C=1.0, epsilon=1e-9, **exact)
    w = learner.fit(problem)
    assert learner.trace_[-1]["converged"] is True
    assert "lp_status" not in learner.trace_[-1]
    assert learner.trace_[-1]["objective"] == pytest.approx(
        _full_lp(problem, 1.0, signed), rel=1e-6, abs=1e-7
    )
    assert learner.trace_[-1]["nonzero"] == np.count_nonzero(w)


def test_paper_algorithm_1_resolving_after_every_constraint():
    problem = _problem(3)
    a = LEARNERS["m3n-cutting-plane"](C=0.5, epsilon=1e-9, resolve_every=1)
    b = LEARNERS["m3n-cutting-plane"](C=0.5, epsilon=1e-9)
    a.fit(problem)
    b.fit(problem)
    ref = _full_lp(problem, 0.5, True)
    assert a.trace_[-1]["objective"] == pytest.approx(ref, rel=1e-6)
    assert b.trace_[-1]["objective"] == pytest.approx(ref, rel=1e-6)


def test_extragradient_stopping_rule_bounds_the_gap():
    problem = _problem(4)
    loose = LEARNERS["lp-extragradient"](C=1.0, epsilon=1e-9, optimality_gap=0.0, gap_tol=1e-2)
    loose.fit(problem)
    ref = _full_lp(problem, 1.0, False)
    for row in loose.trace_:
        assert 0 <= row["lp_gap"] <= 1e-2
    # a loose gap still gives an objective within the certified tolerance of the optimum
    assert ref <= loose.trace_[-1]["objective"] <= ref * (1 + 2e-2) + 1e-9


@pytest.mark.parametrize("method", ["extragradient", "pdhg"])
def test_plain_first_order_method_without_restarts_or_scaling(method):
    problem = _problem(5, n=6)
    learner = LEARNERS["lp-extragradient"](
        C=1.0,
        epsilon=1e-9,
        optimality_gap=0.0,
        gap_tol=1e-7,
        restart=False,
        precondition=False,
        method=method,
    )
    learner.fit(problem)
    assert learner.trace_[-1]["objective"] == pytest.approx(_full_lp(problem, 1.0, False), rel=1e-5)


@pytest.mark.parametrize("C", [0.1, 1.0])
def test_paper_extragradient_reaches_the_full_lp(C):
    problem = _problem(0)
    learner = LEARNERS["lp-extragradient"](
        C=C, epsilon=1e-9, optimality_gap=0.0, gap_tol=1e-9, method="extragradient"
    )
    learner.fit(problem)
    assert learner.trace_[-1]["converged"] is True
    assert learner.trace_[-1]["objective"] == pytest.approx(_full_lp(problem, C, False), rel=1e-6)


# ------------------------------------------------------------------------- synthetic, real values


@pytest.fixture(scope="module")
def synthetic_problem():
    # strong generating weights: with the default ones nearly every sequence holds a token the
    # best model gets wrong, so the margin-1 LP's optimum is w = 0 for any moderate C
    data = generate(n_sequences=20, n_features=30, n_relevant=12, weight_range=(0.0, 5.0), seed=2)
    return TrainingProblem(data.model, data.X, data.y)


def test_lp_learners_agree_with_highs_on_synthetic_data(synthetic_problem):
    """The extragradient column generation reaches HiGHS's objective within 1e-4 relative
    (both asked for a certified gap below that: the default, 1e-3, certifies only 1e-3)."""
    simplex = LEARNERS["lp-simplex"](C=20.0, epsilon=1e-7, optimality_gap=1e-5)
    extra = LEARNERS["lp-extragradient"](C=20.0, epsilon=1e-7, gap_tol=1e-6, optimality_gap=1e-5)
    w_s = simplex.fit(synthetic_problem)
    w_e = extra.fit(synthetic_problem)
    a, b = simplex.trace_[-1]["objective"], extra.trace_[-1]["objective"]
    assert simplex.trace_[-1]["converged"] and extra.trace_[-1]["converged"]
    assert a < 20.0 * synthetic_problem.n_sentences / 2  # far from the trivial w = 0
    assert abs(a - b) <= 1e-4 * abs(a)
    assert np.count_nonzero(w_s) > 0 and np.count_nonzero(w_e) > 0


def test_cutting_plane_is_sparse_on_synthetic_data(synthetic_problem):
    data = generate(n_sequences=60, seed=5)
    problem = TrainingProblem(data.model, data.X, data.y)
    learner = LEARNERS["m3n-cutting-plane"](C=0.02)
    w = learner.fit(problem)
    assert learner.trace_[-1]["converged"]
    state = w[: data.model.n_state]
    # L1: far fewer non-zero state weights than the 200 available, chosen mostly among the 60
    # relevant ones: the rate of kept relevant weights is several times that of irrelevant ones
    assert 0 < np.count_nonzero(state) < 100
    rate_rel = np.count_nonzero(state[data.relevant_params]) / 60
    rate_irr = np.count_nonzero(state[~data.relevant_params]) / 140
    assert rate_rel > 3 * rate_irr


# ------------------------------------------------------------ smoothed start and trust region


def _smoothed_by_enumeration(problem, w, C, tau):
    """P_tau(w) written out over every labeling: tau log sum_{y != y_i} exp(F(y) / tau) as
    the smoothed max, tau log(1 + exp(z / tau)) as the smoothed hinge."""
    m, X = problem.model, problem.X
    total = w.sum()
    for s in range(X.n_sentences):
        a, b = X.offsets[s], X.offsets[s + 1]
        gold = problem.y[a:b]
        others = [m.score(X, s, y, w) for y in labelings(b - a, L, np.int32) if np.any(y != gold)]
        if not others:
            continue
        scores = np.array(others) / tau
        top = scores.max()
        smooth_max = tau * (top + np.log(np.exp(scores - top).sum()))
        z = (1.0 + smooth_max - m.score(X, s, gold, w)) / tau
        total += C * tau * np.logaddexp(0.0, z)
    return total


@pytest.mark.parametrize("tau", [1.0, 0.3, 0.05])
def test_smoothed_objective_and_gradient_against_enumeration(tau):
    from tagger.learners.solvers.lp_smoothing import SmoothedLPObjective

    problem = _problem(6)
    rng = np.random.default_rng(0)
    C = 2.0
    objective = SmoothedLPObjective(problem.model, problem.X, problem.y, C)
    objective.temperature = tau
    for scale in (0.3, 3.0):  # near the margin, and far beyond it for most sentences
        w = scale * rng.random(problem.model.n_weights)
        value, grad = objective(w)
        # q = 1 - p(gold) comes from log Z: at tau = 0.05 its rounding shows at 1e-9
        assert value == pytest.approx(_smoothed_by_enumeration(problem, w, C, tau), rel=1e-8)
        for k in rng.choice(len(w), 8, replace=False):
            h = 1e-6
            e = np.zeros_like(w)
            e[k] = h
            numeric = (
                _smoothed_by_enumeration(problem, w + e, C, tau)
                - _smoothed_by_enumeration(problem, w - e, C, tau)
            ) / (2 * h)
            assert grad[k] == pytest.approx(numeric, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("name", ["lp-simplex", "lp-extragradient"])
@pytest.mark.parametrize(
    "start_settings", [{"smoothing": 0}, {"smoothing": 50}, {"trust_region": 0.05}]
)
def test_trust_region_reaches_the_full_lp_and_centers_only_descend(name, start_settings):
    problem = _problem(7, n=14)
    extra = {"gap_tol": 1e-9} if name == "lp-extragradient" else {}
    learner = LEARNERS[name](C=1.0, epsilon=1e-9, optimality_gap=0.0, **start_settings, **extra)
    w = learner.fit(problem)
    rows = learner.trace_
    assert rows[-1]["converged"] is True
    assert rows[-1]["objective"] == pytest.approx(_full_lp(problem, 1.0, False), rel=1e-6)
    assert rows[-1]["objective"] == pytest.approx(_objective(problem, w, 1.0, True), rel=1e-9)
    # one row per LP, the first also describing the start
    assert [r["epoch"] for r in rows] == list(range(1, len(rows) + 1))
    objectives = [rows[0]["start_objective"]] + [r["objective"] for r in rows]
    assert all(b <= a + 1e-12 for a, b in zip(objectives, objectives[1:]))
    assert (
        rows[0]["start_evaluations"] > 0
        if start_settings.get("smoothing") != 0
        else rows[0]["start_evaluations"] == 0
    )
    assert {r["step"] for r in rows} <= {"serious", "null", "tighten", "optimal"}


@pytest.mark.parametrize("seed", [7, 8, 9, 10])
@pytest.mark.parametrize("plain", [False, True])
@pytest.mark.parametrize("name", ["lp-simplex", "lp-extragradient"])
def test_rows_that_leave_the_lp_come_back_and_the_full_lp_is_still_reached(seed, plain, name):
    """With ``purge_after=1`` every row that does not bind (zero dual) after a solve leaves
    the LP at once; the rows come back when violated, and both loops (the trust region and
    the paper's plain one) still certify the optimum of the LP over every labeling. Rows did
    leave HiGHS's LP: some round's LP held fewer rows than the working sets (a first-order
    method's duals on these small LPs are all positive: no row leaves its LP)."""
    print(f"seed={seed}")
    problem = _problem(seed, n=14)
    loop = {"trust_region": 0.0, "local_rows": False} if plain else {}
    extra = {"gap_tol": 1e-9} if name == "lp-extragradient" else {}
    learner = LEARNERS[name](
        C=1.0, epsilon=1e-9, optimality_gap=0.0, purge_after=1, **loop, **extra
    )
    w = learner.fit(problem)
    last = learner.trace_[-1]
    assert last["converged"] is True
    assert last["objective"] == pytest.approx(_full_lp(problem, 1.0, False), rel=1e-6)
    assert last["objective"] == pytest.approx(_objective(problem, w, 1.0, True), rel=1e-9)
    if name == "lp-simplex":
        assert any(r["lp_rows"] < r["rows"] for r in learner.trace_)


def test_a_row_that_left_the_lp_comes_back_when_violated():
    """HighsSolver.revive puts back exactly the rows out of the LP that a point violates
    beyond its sentence's slack, and rows_in_lp says which are in."""
    from tagger.learners.solvers.highs_solver import HighsSolver
    from tagger.learners.solvers.working_sets import SECOND_BEST, WorkingSets

    problem = _problem(3)
    ws = WorkingSets(problem)
    solver = HighsSolver(ws, 1.0, signed=False, time_limit=0.0, purge_after=1)
    w0 = np.zeros(problem.model.n_weights)
    ws.separate(w0, SECOND_BEST)
    ws.add(np.arange(problem.X.n_sentences))
    w, _ = solver.solve()
    out = ~solver.rows_in_lp()
    assert out.any()  # the optimum leaves some rows slack with a zero dual
    xi = np.zeros(problem.X.n_sentences)
    # at w = 0 every margin row (rhs 1) is violated by 1 beyond a zero slack: all come back
    assert solver.revive(w0, xi, 1e-9) == out.sum()
    assert solver.rows_in_lp().all()
    assert solver.revive(w0, xi, 1e-9) == 0


def test_plain_column_generation_of_the_paper_still_reaches_the_full_lp():
    problem = _problem(8)
    learner = LEARNERS["lp-simplex"](
        C=1.0, epsilon=1e-9, optimality_gap=0.0, trust_region=0.0, local_rows=False
    )
    learner.fit(problem)
    assert learner.trace_[-1]["converged"] is True
    assert "step" not in learner.trace_[-1]
    assert learner.trace_[-1]["objective"] == pytest.approx(_full_lp(problem, 1.0, False), rel=1e-6)


def test_lp_simplex_writes_nothing_to_standard_output():
    """HiGHS prints a banner from its constructor, before logging can be turned off; it must
    not reach `tagger train -q` (or a tagged stream on stdout). The process's own output
    after the solver was made still arrives."""
    import subprocess
    import sys

    code = (
        "import highspy\n"
        "from tagger.learners.solvers.highs_solver import _quiet_highs\n"
        "h = _quiet_highs(highspy)\n"
        "print('after', type(h).__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out == "after Highs\n"


@pytest.mark.parametrize(
    "name, signed, params",
    [
        ("lp-simplex", False, {"epsilon": 1e-9, "optimality_gap": 0.0}),
        ("lp-simplex", False, {"epsilon": 1e-9, "optimality_gap": 0.0, "trust_region": 0.0}),
        ("lp-extragradient", False, {"epsilon": 1e-9, "optimality_gap": 0.0, "gap_tol": 1e-9}),
        ("m3n-cutting-plane", True, {"epsilon": 1e-9}),
    ],
)
def test_a_path_over_C_carries_its_rows_and_reaches_each_full_lp(name, signed, params):
    """On a regularization path (warm_start) each point starts from the rows the points before
    generated, its LP given the new C: every point still converges to the full LP's optimum at
    its own C, and the points after the first start with rows."""
    problem = _problem(3, n=14)
    learner = LEARNERS[name](**params)
    learner.warm_start = True
    w = None
    for k, C in enumerate([4.0, 1.0, 0.25]):
        learner.settings["C"] = C
        w = learner.fit(problem, w0=w)
        last = learner.trace_[-1]
        assert last["converged"] is True
        assert last["objective"] == pytest.approx(_full_lp(problem, C, signed), rel=1e-6, abs=1e-7)
        assert last["objective"] == pytest.approx(
            _objective(problem, w, C, not signed), rel=1e-9, abs=1e-9
        )
        if "carried_rows" in learner.trace_[0]:  # the trust-region loop reports it
            assert (learner.trace_[0]["carried_rows"] > 0) == (k > 0)
    learner.release()
    assert getattr(learner, "_lp_carried", None) is None


@pytest.mark.parametrize("name", ["lp-simplex", "lp-extragradient"])
@pytest.mark.parametrize("seed", [2, 3])  # problems whose optimum is not w = 0
def test_a_box_too_small_to_decrease_in_does_not_certify_its_center(name, seed):
    """A tiny trust region lets the model decrease by less than rounding around any center, the
    optimum or not (null steps shrink it that far): the certificate is then checked on the
    model without the box, and training still ends at the full LP's optimum."""
    problem = _problem(seed, n=14)
    assert _full_lp(problem, 1.0, False) < 13.9  # w = 0 scores 14 (14 sentences, C = 1)
    extra = {"gap_tol": 1e-9} if name == "lp-extragradient" else {}
    learner = LEARNERS[name](
        C=1.0, epsilon=1e-9, optimality_gap=0.0, smoothing=0, trust_region=1e-12, **extra
    )
    learner.fit(problem)
    assert learner.trace_[-1]["converged"] is True
    assert learner.trace_[-1]["objective"] == pytest.approx(_full_lp(problem, 1.0, False), rel=1e-6)


@pytest.mark.parametrize("name", ["lp-simplex", "lp-extragradient"])
@pytest.mark.parametrize("plain", [False, True], ids=["trust-region", "plain"])
@pytest.mark.parametrize("gap", [0.02, 0.2])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_optimality_gap_stops_within_the_gap_of_the_full_lp(name, plain, gap, seed):
    """optimality_gap: training may stop before the exact certificate, once a lower bound on
    the optimum (the LP over the working sets without the box) is within the gap of the
    objective. The reported gap must bound the distance to the full LP's optimum."""
    problem = _problem(seed, n=14)
    loop = {"trust_region": 0.0, "local_rows": False} if plain else {}
    extra = {"gap_tol": 1e-9} if name == "lp-extragradient" else {}
    learner = LEARNERS[name](C=1.0, epsilon=1e-9, optimality_gap=gap, **loop, **extra)
    learner.fit(problem)
    last = learner.trace_[-1]
    optimum = _full_lp(problem, 1.0, False)
    assert last["converged"] is True
    assert last["gap"] <= gap
    # the bound it stopped on is below the optimum, and the objective above it
    assert last["objective"] * (1.0 - last["gap"]) <= optimum + 1e-7
    assert last["objective"] >= optimum - 1e-7
    if name == "lp-extragradient":  # rounds stop at a tenth of the gap at the loosest,
        # unless a stop ended them (a sufficient decrease in the box, the open check's side)
        assert all(
            r["lp_gap"] <= max(gap / 10, 1e-3) for r in learner.trace_ if not r.get("lp_stopped")
        )


def test_a_loose_optimality_gap_stops_before_the_optimum():
    # from w = 0 the plain loop has an LP within 20 % of its objective rounds before the end
    problem = _problem(1, n=14)
    learner = LEARNERS["lp-simplex"](
        C=1.0, epsilon=1e-9, optimality_gap=0.2, trust_region=0.0, local_rows=False
    )
    learner.fit(problem)
    exact = LEARNERS["lp-simplex"](
        C=1.0, epsilon=1e-9, optimality_gap=0.0, trust_region=0.0, local_rows=False
    )
    exact.fit(problem)
    assert learner.trace_[-1]["objective"] > _full_lp(problem, 1.0, False) * (1 + 1e-3)
    assert len(learner.trace_) < len(exact.trace_)
    assert exact.trace_[-1]["gap"] <= 1e-9 or exact.trace_[-1]["violated"] == 0


def test_at_its_default_c_the_lp_keeps_weights_on_a_small_training_set():
    # C weighs a sum of hinges: on the 74 sentences of the shipped chunk sample, C = 1 (the
    # former default) zeroes every weight and tags worse than the most frequent label; the
    # paper's C = 100 must give a model with weights that does better than that label
    train, dev = list(read_corpus(SAMPLE)), list(read_corpus(SAMPLE_DEV))
    counts = Counter(label for s in train for label in s.labels)
    majority = counts.most_common(1)[0][0]
    n_dev = sum(len(s) for s in dev)
    majority_accuracy = sum(label == majority for s in dev for label in s.labels) / n_dev
    tagger = Tagger(learner="lp-simplex", select=False).fit(train)
    assert tagger.n_nonzero_ > 0
    assert tagger.evaluate(dev)["accuracy"] > majority_accuracy + 0.3
