"""Orthant-wise limited-memory quasi-Newton (OWL-QN) for ``min_w f(w) + c1 ||w||_1``.

Andrew & Gao, *Scalable Training of L1-Regularized Log-Linear Models* (ICML 2007). ``f`` is
smooth and convex (here the CRF negative log-likelihood). One iteration:

1. pseudo-gradient ``pg`` of the objective (ALGORITHMS.md 3)::

       pg_k = g_k + c1 sgn(w_k)   if w_k != 0
              g_k + c1            if w_k == 0 and g_k < -c1
              g_k - c1            if w_k == 0 and g_k >  c1
              0                   otherwise

2. direction ``d = -H pg`` by the L-BFGS two-loop recursion over the last ``memory`` pairs
   (s, y) of steps and *smooth* gradient differences; components whose sign disagrees with
   ``-pg`` are zeroed (the direction stays in the orthant ``pg`` points into);
3. orthant ``xi_k = sgn(w_k)``, or ``sgn(-pg_k)`` where ``w_k = 0``; backtracking line
   search on ``w(a) = P(w + a d)``, P zeroing every coordinate that leaves its orthant, with
   the Armijo condition ``F(w(a)) <= F(w) + gamma pg . (w(a) - w)``.

The optimiser can be restricted to a working set (a boolean mask over the coordinates): the
pseudo-gradient and the direction are zero outside it and the stored gradient differences are
restricted to it, so it runs L-BFGS on the subspace. Grafting-Light takes one such step per
iteration and then grows the set; full OWL-QN uses every coordinate. ``f`` is always
evaluated with its full gradient (the growth step needs it).
"""

from __future__ import annotations

from collections import deque
from typing import Callable

import numpy as np

#: sufficient-decrease constant of the Armijo line search
ARMIJO = 1e-4
#: line search trials before giving up (the step is then too small to matter)
MAX_LINESEARCH = 40


def pseudo_gradient(w: np.ndarray, g: np.ndarray, c1: float, out: np.ndarray | None = None
                    ) -> np.ndarray:
    """The orthant-wise pseudo-gradient of ``f + c1 ||w||_1`` (Andrew & Gao 2007, eq. 4)."""
    if out is None:
        out = np.empty_like(g)
    np.copyto(out, g)
    pos = w > 0
    neg = w < 0
    zero = ~(pos | neg)
    out[pos] += c1
    out[neg] -= c1
    gz = g[zero]
    out[zero] = np.where(gz < -c1, gz + c1, np.where(gz > c1, gz - c1, 0.0))
    return out


class OWLQN:
    """State of an OWL-QN run: iterate, smooth objective and gradient, L-BFGS memory.

    ``fun(w) -> (f(w), grad f(w))``. Call :meth:`step` once per iteration.
    """

    def __init__(self, fun: Callable[[np.ndarray], tuple[float, np.ndarray]], w0: np.ndarray,
                 c1: float, memory: int = 10):
        self.fun = fun
        self.c1 = float(c1)
        self.w = np.array(w0, dtype=np.float64, copy=True)
        self.f, g = fun(self.w)
        self.g = np.array(g, copy=True)
        self.memory: deque = deque(maxlen=memory)
        self.n_steps = 0
        self.last_step_size = 0.0

    @property
    def objective(self) -> float:
        """``f(w) + c1 ||w||_1`` at the current iterate."""
        return self.f + self.c1 * float(np.abs(self.w).sum())

    def pseudo_gradient(self, active: np.ndarray | None = None) -> np.ndarray:
        pg = pseudo_gradient(self.w, self.g, self.c1)
        if active is not None:
            pg[~active] = 0.0
        return pg

    def _two_loop(self, q: np.ndarray) -> np.ndarray:
        """H q for the L-BFGS inverse Hessian approximation (Nocedal & Wright, Alg. 7.4)."""
        q = q.copy()
        alphas = []
        for s, y, rho in reversed(self.memory):
            a = rho * float(s @ q)
            alphas.append(a)
            q -= a * y
        if self.memory:
            s, y, _ = self.memory[-1]
            q *= float(s @ y) / float(y @ y)
        for (s, y, rho), a in zip(self.memory, reversed(alphas)):
            b = rho * float(y @ q)
            q += (a - b) * s
        return q

    def step(self, active: np.ndarray | None = None) -> bool:
        """One orthant-wise quasi-Newton iteration on the ``active`` coordinates (all when
        None). Returns False when no descent is possible there (the iterate is optimal on
        the working set, or the line search found no decrease)."""
        pg = self.pseudo_gradient(active)
        if not pg.any():
            return False
        d = -self._two_loop(pg)
        if active is not None:
            d[~active] = 0.0
        d[d * pg >= 0.0] = 0.0          # keep the direction in -pg's orthant
        if not d.any():
            return False
        xi = np.sign(self.w)
        zero = xi == 0
        xi[zero] = np.sign(-pg[zero])
        F0 = self.objective
        alpha = 1.0 if self.memory else 1.0 / max(float(np.sqrt(d @ d)), 1e-300)
        for _ in range(MAX_LINESEARCH):
            wn = self.w + alpha * d
            wn[wn * xi <= 0.0] = 0.0    # coordinates crossing zero stop at zero
            fn, gn = self.fun(wn)
            Fn = fn + self.c1 * float(np.abs(wn).sum())
            if Fn <= F0 + ARMIJO * float(pg @ (wn - self.w)):
                break
            alpha *= 0.5
        else:
            return False
        s = wn - self.w
        y = gn - self.g
        if active is not None:
            y[~active] = 0.0
        sy = float(s @ y)
        if sy > 1e-12 * max(float(y @ y), 1e-300):
            self.memory.append((s, y, 1.0 / sy))
        self.w, self.f, self.g = wn, fn, np.array(gn, copy=True)
        self.n_steps += 1
        self.last_step_size = alpha
        return True


class Convergence:
    """CRFsuite's stopping rule: the objective's relative decrease over the last ``period``
    iterations is below ``delta``."""

    def __init__(self, delta: float, period: int):
        self.delta, self.period = delta, period
        self.history: list[float] = []

    def update(self, value: float) -> bool:
        self.history.append(value)
        if len(self.history) <= self.period:
            return False
        old = self.history[-1 - self.period]
        return (old - value) / max(abs(value), 1e-300) < self.delta
