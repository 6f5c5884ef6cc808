"""The sparse supervised step of ssvm-annealing (``inner = "owlqn"``) against independent
solutions of its objective.

On chains short enough to list every labeling, the weighted objective
``a_L sum_L H_i + a_U sum_U H_j + c1 ||w||_1 + c2 ||w||^2`` (H the smoothed hinge at a
temperature tau from 1, the softmax-margin, down to 0.1) is evaluated by enumeration and
minimised by scipy's L-BFGS-B on the split w = u - v, u, v >= 0 (a smooth bound-constrained
problem with the same minimum); the step must reach that minimum with exact zeros, its
certified gap must bound the distance to it at any weights, and with the unlabeled sentences'
weight 2 it must equal ``m3n-owlqn`` trained on those sentences listed twice.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from test_lp import _problem
from test_m3n_owlqn import _by_enumeration

from tagger.features import Featurized
from tagger.learners import LEARNERS, TrainingProblem
from tagger.learners.solvers.sparse_step import SparseStep

N_LABELED = 5


def _sentences(X: Featurized, s0: int, s1: int) -> Featurized:
    """Sentences s0..s1-1 of ``X`` as a batch of their own."""
    a, b = int(X.offsets[s0]), int(X.offsets[s1])
    lo, hi = int(X.indptr[a]), int(X.indptr[b])
    return Featurized(X.indptr[a : b + 1] - lo, X.attrs[lo:hi], X.offsets[s0 : s1 + 1] - a)


def _joined(*parts: Featurized) -> Featurized:
    indptr, attrs, offsets = [np.zeros(1, np.int64)], [], [np.zeros(1, np.int64)]
    for X in parts:
        indptr.append(X.indptr[1:] + indptr[-1][-1])
        attrs.append(X.attrs)
        offsets.append(X.offsets[1:] + offsets[-1][-1])
    return Featurized(
        np.concatenate(indptr), np.concatenate(attrs).astype(np.int32), np.concatenate(offsets)
    )


def _task(seed: int):
    """A random problem cut into labeled and unlabeled sentences (the latter's labels play
    the imputed labelings)."""
    problem = _problem(seed)
    X = problem.X
    XL, U = _sentences(X, 0, N_LABELED), _sentences(X, N_LABELED, X.n_sentences)
    return problem, XL, U


def _objective(problem, XL, U, w, weights, c1, c2, tau=1.0):
    """P(w) and its smooth part's gradient, by enumeration."""
    NL = XL.n_tokens
    total, grad = c1 * np.abs(w).sum() + c2 * w @ w, 2.0 * c2 * w
    for X, y, a in ((XL, problem.y[:NL], weights[0]), (U, problem.y[NL:], weights[1])):
        smooth, g, _, _ = _by_enumeration(TrainingProblem(problem.model, X, y), w, 1.0, tau)
        total += a * smooth
        grad = grad + a * g
    return total, grad


def _reference_minimum(problem, XL, U, weights, c1, c2, tau=1.0) -> tuple[float, np.ndarray]:
    n = problem.model.n_weights

    def f(z):
        u, v = z[:n], z[n:]
        value, g = _objective(problem, XL, U, u - v, weights, 0.0, c2, tau)
        return value + c1 * z.sum(), np.concatenate([g + c1, -g + c1])

    res = minimize(
        f,
        np.zeros(2 * n),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0, None)] * (2 * n),
        options={"maxiter": 20000, "ftol": 1e-15, "gtol": 1e-11},
    )
    w = res.x[:n] - res.x[n:]
    return _objective(problem, XL, U, w, weights, c1, c2, tau)[0], w


def _step(problem, XL, U, weights, c1, c2, tau=1.0) -> SparseStep:
    step = SparseStep(problem.model, XL, U, problem.y, c1=c1, c2=c2, tau=tau)
    step.set_example_weights(
        np.concatenate([np.full(XL.n_sentences, weights[0]), np.full(U.n_sentences, weights[1])])
    )
    return step


@pytest.mark.parametrize(
    "seed, c1, tau", [(0, 0.3, 1.0), (1, 1.0, 1.0), (0, 1.0, 0.25), (1, 0.3, 0.1)]
)
def test_reaches_the_minimum_of_its_weighted_objective_with_exact_zeros(seed, c1, tau):
    problem, XL, U = _task(seed)
    weights, c2 = (1.0, 2.5), 0.1
    optimum, _ = _reference_minimum(problem, XL, U, weights, c1, c2, tau)
    step = _step(problem, XL, U, weights, c1, c2, tau)
    res = step.solve(5000, 1e-9)
    w = step.weights()
    value, grad = _objective(problem, XL, U, w, weights, c1, c2, tau)
    assert res.converged and res.gap <= 1e-9
    assert res.primal == pytest.approx(value, rel=1e-10)
    assert value == pytest.approx(optimum, rel=1e-7)
    zeros = w == 0.0
    assert zeros.any()  # exact zeros, not small values
    # a weight stays at zero only where the smooth part's slope is inside [-c1, c1]
    assert np.all(np.abs(grad[zeros]) <= c1 + 1e-6)


def test_its_certified_gap_bounds_the_distance_to_the_minimum_anywhere():
    problem, XL, U = _task(2)
    weights, c1, c2 = (1.0, 0.7), 0.5, 0.3
    optimum, _ = _reference_minimum(problem, XL, U, weights, c1, c2)
    step = _step(problem, XL, U, weights, c1, c2)
    rng = np.random.default_rng(0)
    for scale in (0.0, 0.1, 1.0, 3.0):
        w = rng.normal(scale=scale, size=problem.model.n_weights)
        value, grad = _objective(problem, XL, U, w, weights, c1, c2)
        gap = step.certificate(w, grad - 2.0 * c2 * w)
        assert value - optimum <= gap + 1e-9


def test_equals_m3n_owlqn_on_the_unlabeled_sentences_listed_twice():
    problem, XL, U = _task(3)
    c1, c2, tau = 0.4, 0.05, 0.5
    step = _step(problem, XL, U, (1.0, 2.0), c1, c2, tau)
    step.solve(5000, 1e-10)
    NL = XL.n_tokens
    twice = TrainingProblem(
        problem.model,
        _joined(XL, U, U),
        np.concatenate([problem.y, problem.y[NL:]]).astype(np.int32),
    )
    learner = LEARNERS["m3n-owlqn"](
        c1=c1, c2=c2, stages=1, tau=tau, gap=0.0, epochs=5000, delta=1e-13, period=20
    )
    w_ref = learner.fit(twice)
    np.testing.assert_allclose(step.weights(), w_ref, atol=1e-4)


def test_new_labelings_count_changed_sentences_and_the_warm_start_reaches_the_new_minimum():
    problem, XL, U = _task(4)
    weights, c1, c2 = (1.0, 1.5), 0.3, 0.1
    step = _step(problem, XL, U, weights, c1, c2)
    step.solve(5000, 1e-9)
    NL = XL.n_tokens
    y = problem.y.copy()
    # new labels on the first token of two unlabeled sentences
    first = U.offsets[[1, 4]] + NL
    y[first] = (y[first] + 1) % problem.model.n_labels
    assert step.set_labels(y) == 2
    assert step.set_labels(y) == 0
    res = step.solve(5000, 1e-9)
    relabeled = TrainingProblem(problem.model, problem.X, y)
    optimum, _ = _reference_minimum(relabeled, XL, U, weights, c1, c2)
    value, _ = _objective(relabeled, XL, U, step.weights(), weights, c1, c2)
    assert res.converged
    assert value == pytest.approx(optimum, rel=1e-7)


def test_a_part_weighted_unevenly_is_refused():
    problem, XL, U = _task(0)
    step = SparseStep(problem.model, XL, U, problem.y, c1=1.0, c2=0.1)
    C = np.ones(XL.n_sentences + U.n_sentences)
    C[-1] = 2.0
    with pytest.raises(ValueError, match="alike"):
        step.set_example_weights(C)
