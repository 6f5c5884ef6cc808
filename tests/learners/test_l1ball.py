"""Euclidean projection onto the L1 ball (Duchi et al. 2008), against references written here.

``project_l1_ball`` finds the soft threshold theta with a randomised pivot search. The tests
compare it with theta found by bisection on the definition
``sum_i max(|v_i| - theta, 0) = z``, and check the projection's optimality certificate
directly: ``w`` is the projection of ``v`` onto the convex set B iff
``(v - w) . (u - w) <= 0`` for every ``u`` in B, and for the L1 ball it is enough to check the
2n vertices ``u = +-z e_i``, i.e. ``z * ||v - w||_inf <= (v - w) . w``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from tagger.learners.solvers.l1_ball import project_l1_ball, project_l1_ball_into

# ------------------------------------------------------------------------------ references


def _theta_bisection(v: np.ndarray, z: float) -> float:
    """The soft threshold by bisection: the root of sum(max(|v| - theta, 0)) = z (0 if inside)."""
    a = np.abs(v)
    if a.sum() <= z:
        return 0.0
    lo, hi = 0.0, float(a.max())  # excess(lo) > z >= excess(hi) = 0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.maximum(a - mid, 0.0).sum() > z:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


def _reference_projection(v: np.ndarray, z: float) -> np.ndarray:
    theta = _theta_bisection(v, z)
    return np.sign(v) * np.maximum(np.abs(v) - theta, 0.0)


def _scale(v: np.ndarray, z: float) -> float:
    return max(1.0, float(np.abs(v).sum()), z)


def _check_projection(v: np.ndarray, z: float, w: np.ndarray) -> None:
    tol = 1e-9 * _scale(v, z)
    inside = np.abs(v).sum() <= z
    # feasibility and, outside the ball, the norm is exactly the radius
    assert np.abs(w).sum() <= z + tol
    if inside:
        np.testing.assert_array_equal(w, v)
    else:
        assert np.abs(w).sum() == pytest.approx(z, rel=1e-9, abs=1e-12 * _scale(v, z))
    # signs kept, magnitudes shrink, zeros stay zero
    assert np.all(w * v >= 0)
    assert np.all(np.abs(w) <= np.abs(v) + tol)
    assert np.all(w[v == 0] == 0)
    # optimality certificate over the ball's vertices
    r = v - w
    # (for theta > 0 both sides equal theta * z: r_i = theta * sign(w_i) wherever w_i != 0)
    # (w carries absolute rounding errors of order eps * max|v|, hence the tolerance)
    assert z * np.abs(r).max(initial=0.0) <= r @ w + 1e-12 * np.abs(v).max() * (z + np.abs(v).sum())
    # the same as the bisection reference
    np.testing.assert_allclose(w, _reference_projection(v, z), rtol=1e-7, atol=tol)


# ------------------------------------------------------------------------------ strategies

_values = st.one_of(
    st.floats(-100, 100, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, 0.0, 1.0, -1.0, 2.5, -2.5, 1e-6]),  # zeros and ties
)
_vectors = st.lists(_values, min_size=1, max_size=60).map(lambda xs: np.array(xs, dtype=np.float64))
_radii = st.one_of(st.floats(1e-9, 500.0), st.sampled_from([1e-12, 1e-6, 0.5, 1.0, 3.0]))


@settings(deadline=None, max_examples=300)
@given(v=_vectors, z=_radii)
def test_matches_bisection_reference_and_is_optimal(v, z):
    w = project_l1_ball(v, z)
    assert w.shape == v.shape and w.dtype == np.float64
    _check_projection(v, z, w)


@settings(deadline=None, max_examples=100)
@given(v=_vectors, frac=st.floats(0.01, 0.99))
@example(v=np.array([5e-324]), frac=0.5)
def test_radius_inside_the_norm_always_lands_on_the_sphere(v, frac):
    z = frac * float(np.abs(v).sum())
    assume(z > 0.0)  # a zero vector, or a norm of a few denormals that frac rounds to 0
    w = project_l1_ball(v, z)
    _check_projection(v, z, w)
    assert np.abs(w).sum() == pytest.approx(z, rel=1e-9)


@settings(deadline=None, max_examples=100)
@given(v=_vectors, z=_radii)
def test_in_place_kernel_returns_the_threshold(v, z):
    w = v.copy()
    theta = project_l1_ball_into(w, z, np.empty_like(w))
    ref = _theta_bisection(v, z)
    assert theta >= 0.0
    assert theta == pytest.approx(ref, rel=1e-7, abs=1e-9 * _scale(v, z))
    _check_projection(v, z, w)


# ------------------------------------------------------------------------------ examples


def test_hand_worked_example():
    # |v| = (3, 1, 2), z = 3: theta = 1 gives (2, 0, 1), whose L1 norm is 3
    w = project_l1_ball(np.array([3.0, -1.0, -2.0]), 3.0)
    np.testing.assert_allclose(w, [2.0, 0.0, -1.0])


def test_all_ties():
    # every |v_i| = 1, n = 8, z = 2: theta = 1 - 2/8 and every coordinate keeps 0.25
    v = np.array([1.0, -1.0] * 4)
    w = project_l1_ball(v, 2.0)
    np.testing.assert_allclose(w, 0.25 * v)


def test_vector_inside_the_ball_is_unchanged():
    v = np.array([0.5, -0.25, 0.0, 0.125])
    np.testing.assert_array_equal(project_l1_ball(v, 1.0), v)
    np.testing.assert_array_equal(project_l1_ball(v, 0.875), v)  # exactly on the sphere


def test_zero_vector_and_tiny_radius():
    np.testing.assert_array_equal(project_l1_ball(np.zeros(5), 1e-12), np.zeros(5))
    v = np.array([5.0, -5.0, 1.0])
    w = project_l1_ball(v, 1e-12)
    assert np.abs(w).sum() == pytest.approx(1e-12, rel=1e-6)
    assert w[2] == 0.0 and w[0] > 0 > w[1]


def test_large_sparse_vector():
    rng = np.random.default_rng(3)
    v = np.zeros(200_000)
    idx = rng.choice(v.size, 5_000, replace=False)
    v[idx] = rng.standard_normal(idx.size) * 3
    z = 0.1 * np.abs(v).sum()
    w = project_l1_ball(v, z)
    _check_projection(v, z, w)
    assert 0 < np.count_nonzero(w) < idx.size


def test_shape_is_kept_and_input_untouched():
    v = np.arange(-6.0, 6.0).reshape(3, 4)
    before = v.copy()
    w = project_l1_ball(v, 4.0)
    assert w.shape == (3, 4)
    np.testing.assert_array_equal(v, before)
    _check_projection(v.ravel(), 4.0, w.ravel())


@pytest.mark.parametrize("radius", [0.0, -1.0, float("nan")])
def test_rejects_non_positive_radius(radius):
    with pytest.raises(ValueError, match="radius"):
        project_l1_ball(np.ones(3), radius)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_rejects_non_finite_entries(bad):
    with pytest.raises(ValueError, match="NaN or infinite"):
        project_l1_ball(np.array([1.0, bad]), 1.0)
