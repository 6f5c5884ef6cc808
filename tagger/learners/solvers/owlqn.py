"""Orthant-wise limited-memory quasi-Newton (OWL-QN) for ``min_w f(w) + c1 ||w||_1``.

Andrew & Gao, *Scalable Training of L1-Regularized Log-Linear Models* (ICML 2007). ``f`` is
smooth and convex (here the CRF negative log-likelihood). One iteration:

1. pseudo-gradient ``pg`` of the objective (docs/algorithms.md section 3)::

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

The grafting learners run it on a working set: they give it a compact objective over the
set alone (:class:`~tagger.learners.solvers.crf_objective.WorkingSetObjective`) and
:meth:`OWLQN.relayout` it when the set grows, so that its vector work is O(|S| m) rather than
O(n m); full OWL-QN uses every coordinate. With ``c1 = 0`` it is
plain L-BFGS (no orthant constraints) with the same backtracking line search.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tagger._config import NUMBA_OPTS, NUMBA_PARALLEL_OPTS
from tagger.jit import njit, prange

#: sufficient-decrease constant of the Armijo line search
ARMIJO = 1e-4
#: line search trials before giving up (the step is then too small to matter)
MAX_LINESEARCH = 40
#: adaptive first step: steps accepted at their first trial before it is doubled again
ADAPT_AFTER = 5


def pseudo_gradient(
    w: np.ndarray, g: np.ndarray, c1: float, out: np.ndarray | None = None
) -> np.ndarray:
    """The orthant-wise pseudo-gradient of ``f + c1 ||w||_1`` (Andrew & Gao 2007, eq. 4)."""
    if out is None:
        out = np.empty_like(g)
    _pseudo_gradient_into(w, g, float(c1), out)
    return out


# Vector work in numba rather than numpy: numpy's dot products go through a multi-threaded BLAS
# whose threads fight the parallel CRF kernels for the same cores (measured: 4-30x slower
# two-loop recursions on a loaded 2-core machine), and its element-wise passes run on one core.
# The kernels below run in parallel over blocks of BLOCK coordinates. A sum is taken block by
# block, each block by one thread in index order, and the blocks' sums are added in block
# order: the same bits whatever the number of threads.

#: coordinates per block of the parallel vector kernels
BLOCK = 16384


@njit(**NUMBA_OPTS)
def _in_order(part):
    """The blocks' sums added in block order."""
    total = 0.0
    for k in range(part.shape[0]):
        total += part[k]
    return total


@njit(**NUMBA_PARALLEL_OPTS)
def dot(a, b):
    """sum_i a[i] b[i], summed block by block (see above)."""
    n = a.shape[0]
    n_blocks = (n + BLOCK - 1) // BLOCK
    part = np.empty(n_blocks)
    for k in prange(n_blocks):
        acc = 0.0
        for i in range(k * BLOCK, min(n, (k + 1) * BLOCK)):
            acc += a[i] * b[i]
        part[k] = acc
    return _in_order(part)


@njit(**NUMBA_PARALLEL_OPTS)
def dot_difference(a, b, c):
    """sum_i a[i] (b[i] - c[i]), summed as :func:`dot` sums."""
    n = a.shape[0]
    n_blocks = (n + BLOCK - 1) // BLOCK
    part = np.empty(n_blocks)
    for k in prange(n_blocks):
        acc = 0.0
        for i in range(k * BLOCK, min(n, (k + 1) * BLOCK)):
            acc += a[i] * (b[i] - c[i])
        part[k] = acc
    return _in_order(part)


@njit(**NUMBA_PARALLEL_OPTS)
def l1_norm(a):
    """sum_i |a[i]|, summed as :func:`dot` sums."""
    n = a.shape[0]
    n_blocks = (n + BLOCK - 1) // BLOCK
    part = np.empty(n_blocks)
    for k in prange(n_blocks):
        acc = 0.0
        for i in range(k * BLOCK, min(n, (k + 1) * BLOCK)):
            acc += abs(a[i])
        part[k] = acc
    return _in_order(part)


@njit(**NUMBA_PARALLEL_OPTS)
def _pseudo_gradient_into(w, g, c1, out):
    for i in prange(w.shape[0]):
        gi = g[i]
        if w[i] > 0.0:
            out[i] = gi + c1
        elif w[i] < 0.0:
            out[i] = gi - c1
        elif gi < -c1:
            out[i] = gi + c1
        elif gi > c1:
            out[i] = gi - c1
        else:
            out[i] = 0.0


@njit(**NUMBA_PARALLEL_OPTS)
def _axpy(a, x, y):
    """y += a x."""
    for i in prange(y.shape[0]):
        y[i] += a * x[i]


@njit(**NUMBA_PARALLEL_OPTS)
def _scale(a, y):
    """y *= a."""
    for i in prange(y.shape[0]):
        y[i] *= a


@njit(**NUMBA_PARALLEL_OPTS)
def _orthant_direction(d, pg, w, xi):
    """Zero the components of ``d`` whose sign disagrees with ``-pg``; ``xi`` = the orthant
    of the step: sgn(w), or sgn(-pg) where w = 0."""
    for i in prange(d.shape[0]):
        if d[i] * pg[i] >= 0.0:
            d[i] = 0.0
        if w[i] > 0.0:
            xi[i] = 1.0
        elif w[i] < 0.0:
            xi[i] = -1.0
        elif pg[i] < 0.0:
            xi[i] = 1.0
        elif pg[i] > 0.0:
            xi[i] = -1.0
        else:
            xi[i] = 0.0


@njit(**NUMBA_PARALLEL_OPTS)
def _trial_point(w, d, alpha, xi, project, out):
    """out = w + alpha d, with every coordinate that leaves the orthant ``xi`` set to 0 when
    ``project``."""
    for i in prange(w.shape[0]):
        v = w[i] + alpha * d[i]
        if project and v * xi[i] <= 0.0:
            v = 0.0
        out[i] = v


@njit(**NUMBA_PARALLEL_OPTS)
def _difference_into(a, b, out):
    """out = a - b."""
    for i in prange(a.shape[0]):
        out[i] = a[i] - b[i]


@njit(**NUMBA_OPTS)
def _two_loop(S, Y, rho, order, q, alphas):
    """q <- H q in place: L-BFGS two-loop recursion (Nocedal & Wright, Algorithm 7.4) over the
    pairs S[k], Y[k] for k in ``order`` (oldest first)."""
    m = order.shape[0]
    for j in range(m - 1, -1, -1):
        k = order[j]
        a = rho[k] * dot(S[k], q)
        alphas[j] = a
        _axpy(-a, Y[k], q)
    if m > 0:
        k = order[m - 1]
        _scale(dot(S[k], Y[k]) / dot(Y[k], Y[k]), q)
    for j in range(m):
        k = order[j]
        b = rho[k] * dot(Y[k], q)
        _axpy(alphas[j] - b, S[k], q)


class OWLQN:
    """State of an OWL-QN run: iterate, smooth objective and gradient, L-BFGS memory.

    ``fun(w) -> (f(w), grad f(w))``. Call :meth:`step` once per iteration.
    """

    def __init__(
        self,
        fun: Callable[[np.ndarray], tuple[float, np.ndarray]],
        w0: np.ndarray,
        c1: float,
        memory: int = 10,
        adaptive_step: bool = False,
    ):
        self.fun = fun
        self.c1 = float(c1)
        self.w = np.array(w0, dtype=np.float64, copy=True)
        self.f, g = fun(self.w)
        self.g = np.array(g, copy=True)
        n = self.w.shape[0]
        self.m = int(memory)
        self.S = np.zeros((self.m, n))
        self.Y = np.zeros((self.m, n))
        self.rho = np.zeros(self.m)
        self.order: list[int] = []  # slots in use, oldest first
        self.n_steps = 0
        self.last_step_size = 0.0
        # first trial step of the line search: 1, or with ``adaptive_step`` the last accepted
        # step, doubled back towards 1 after ADAPT_AFTER steps accepted at their first trial
        self.adaptive_step = adaptive_step
        self.first_step = 1.0
        self._streak = 0

    @property
    def objective(self) -> float:
        """``f(w) + c1 ||w||_1`` at the current iterate."""
        return self.f + self.c1 * l1_norm(self.w)

    def pseudo_gradient(self) -> np.ndarray:
        return pseudo_gradient(self.w, self.g, self.c1)

    def _two_loop(self, q: np.ndarray) -> np.ndarray:
        """H q for the L-BFGS inverse Hessian approximation."""
        q = q.copy()
        _two_loop(
            self.S,
            self.Y,
            self.rho,
            np.asarray(self.order, dtype=np.int64),
            q,
            np.empty(max(len(self.order), 1)),
        )
        return q

    def _remember(self, s: np.ndarray, y: np.ndarray) -> None:
        """Keep the pair (s, y) (arrays of their own: they are stored, not copied)."""
        sy = dot(s, y)
        if not sy > 1e-12 * max(dot(y, y), 1e-300):
            return  # curvature condition fails: keep the old pairs
        if len(self.order) < self.m:
            k = len(self.order)
        else:
            k = self.order.pop(0)
        self.S[k] = s
        self.Y[k] = y
        self.rho[k] = 1.0 / sy
        self.order.append(k)

    def memory(self) -> tuple:
        """The L-BFGS pairs, to start another run on the same smooth function from them
        (:meth:`load_memory`)."""
        return self.S, self.Y, self.rho, list(self.order)

    def load_memory(self, memory: tuple, l2_change: float = 0.0) -> None:
        """Start from the pairs of a run on the same smooth part (a regularization path: only
        the L1 coefficient, or the L2 one, changed), so that the first steps are quasi-Newton
        steps rather than a cautious gradient step. ``l2_change`` = the new minus the old
        coefficient of an L2 term ``c2 ||w||^2`` inside ``fun``: each gradient difference
        then gains ``2 * l2_change * s`` exactly, and pairs whose curvature turns
        non-positive are dropped."""
        S, Y, rho, order = memory
        if S.shape != self.S.shape:
            return
        kept = []
        for k in order:
            y = Y[k] + (2.0 * l2_change) * S[k] if l2_change else Y[k]
            sy = dot(S[k], y)
            if sy > 1e-12 * max(dot(y, y), 1e-300):
                self.S[len(kept)] = S[k]
                self.Y[len(kept)] = y
                self.rho[len(kept)] = 1.0 / sy
                kept.append(len(kept))
        self.order = kept

    def relayout(self, n: int, pos: np.ndarray, g_new: np.ndarray) -> None:
        """Grow the coordinates to ``n``: old coordinate j moves to ``pos[j]``; the new ones
        start at 0 with gradient ``g_new`` (indexed by the new layout). The stored pairs get 0
        there: those coordinates did not move and their gradient changes were not seen, which
        is the L-BFGS memory of the subspace the pairs were taken in (a working set that
        grows)."""

        def spread(old, fill=0.0):
            new = np.full(old.shape[:-1] + (n,), fill)
            new[..., pos] = old
            return new

        self.w = spread(self.w)
        g = np.array(g_new, dtype=np.float64, copy=True)
        g[pos] = self.g
        self.g = g
        self.S = spread(self.S)
        self.Y = spread(self.Y)

    def step(self) -> bool:
        """One orthant-wise quasi-Newton iteration. Returns False when no descent is possible
        (the iterate is optimal, or the line search found no decrease)."""
        pg = self.pseudo_gradient()
        if not pg.any():
            return False
        d = self._two_loop(pg)
        _scale(-1.0, d)
        l1 = self.c1 > 0.0  # c1 = 0: plain L-BFGS, no orthant constraints
        xi = np.empty(0)
        if l1:
            # keep the direction in -pg's orthant; xi: the orthant the step stays in
            xi = np.empty_like(d)
            _orthant_direction(d, pg, self.w, xi)
        if not d.any() or dot(d, pg) >= 0.0:
            return False
        F0 = self.objective
        if self.order:
            alpha = self.first_step if self.adaptive_step else 1.0
        else:
            alpha = 1.0 / max(float(np.sqrt(dot(d, d))), 1e-300)
        first = alpha
        for _ in range(MAX_LINESEARCH):
            wn = np.empty_like(self.w)
            # coordinates crossing zero stop at zero
            _trial_point(self.w, d, alpha, xi if l1 else d, l1, wn)
            fn, gn = self.fun(wn)
            Fn = fn + self.c1 * l1_norm(wn) if l1 else fn
            if Fn <= F0 + ARMIJO * dot_difference(pg, wn, self.w):
                break
            alpha *= 0.5
        else:
            return False
        s_new, y_new = np.empty_like(wn), np.empty_like(wn)
        _difference_into(wn, self.w, s_new)
        _difference_into(gn, self.g, y_new)
        self._remember(s_new, y_new)
        self.w, self.f, self.g = wn, fn, np.array(gn, copy=True)
        self.n_steps += 1
        self.last_step_size = alpha
        if self.adaptive_step and self.order:
            if alpha < first:
                self.first_step, self._streak = alpha, 0
            else:
                self._streak += 1
                if self._streak >= ADAPT_AFTER and self.first_step < 1.0:
                    self.first_step, self._streak = min(1.0, 2.0 * self.first_step), 0
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
