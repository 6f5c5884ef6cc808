"""Euclidean projection onto the L1 ball (Duchi, Shalev-Shwartz, Singer & Chandra, ICML 2008).

    Proj(v) = argmin_w ||w - v||_2  s.t.  ||w||_1 <= z
            = sign(v) * max(|v| - theta, 0),  theta >= 0 the unique root of
              sum_i max(|v_i| - theta, 0) = z  (theta = 0 when ||v||_1 <= z already)

theta is found with the expected-linear-time pivot algorithm of the paper's Figure 1, run on
the non-zero entries only: after each projection the vector is sparse, so a projection costs a
scan of the vector plus work proportional to its support.
"""

from __future__ import annotations

import numpy as np

from tagger._config import NUMBA_OPTS
from tagger.errors import bad_value
from tagger.jit import njit


@njit(**NUMBA_OPTS)
def _l1_threshold(u, n, z):
    """theta for the first n entries of u (absolute values > 0, sum > z); u is reordered."""
    s = 0.0
    rho = 0
    lo = 0
    hi = n  # the candidate set is u[lo:hi]
    state = np.uint64(0x2545F4914F6CDD1D)
    while hi > lo:
        # xorshift pivot choice: deterministic, and linear time in expectation
        state ^= state << np.uint64(13)
        state ^= state >> np.uint64(7)
        state ^= state << np.uint64(17)
        k = lo + np.int64(state % np.uint64(hi - lo))
        pivot = u[k]
        # partition u[lo:hi] into >= pivot (front) and < pivot (back)
        i = lo
        ds = 0.0
        for j in range(lo, hi):
            if u[j] >= pivot:
                tmp = u[i]
                u[i] = u[j]
                u[j] = tmp
                ds += u[i]
                i += 1
        drho = i - lo
        if (s + ds) - (rho + drho) * pivot < z:
            s += ds
            rho += drho
            lo = i
        else:
            # the root lies above the pivot: keep the >= part without one copy of the pivot
            for j in range(lo, i):
                if u[j] == pivot:
                    u[j] = u[i - 1]
                    u[i - 1] = pivot
                    break
            hi = i - 1
    return (s - z) / rho


@njit(**NUMBA_OPTS)
def project_l1_ball_into(w, z, buf):
    """Project w in place onto {||w||_1 <= z}; buf is scratch of w's size. Returns theta."""
    n = 0
    total = 0.0
    for i in range(w.shape[0]):
        a = abs(w[i])
        if a > 0.0:
            buf[n] = a
            n += 1
            total += a
    if total <= z:
        return 0.0
    theta = _l1_threshold(buf, n, z)
    for i in range(w.shape[0]):
        a = w[i]
        if a > theta:
            w[i] = a - theta
        elif a < -theta:
            w[i] = a + theta
        else:
            w[i] = 0.0
    return theta


def project_l1_ball(v: np.ndarray, radius: float) -> np.ndarray:
    """Return the projection of ``v`` onto the L1 ball of the given radius (a new array)."""
    if not radius > 0:
        raise bad_value("radius", "a float in (0, inf)", radius, "project_l1_ball")
    w = np.array(v, dtype=np.float64, copy=True).ravel()
    if not np.all(np.isfinite(w)):
        raise bad_value(
            "v", "a vector of finite floats", "NaN or infinite entries", "project_l1_ball"
        )
    project_l1_ball_into(w, float(radius), np.empty_like(w))
    return w.reshape(np.shape(v))
