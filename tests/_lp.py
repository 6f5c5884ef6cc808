"""Random LPs of the working sets' form for the first-order LP tests:
min 1.w + C 1.xi s.t. H w + M xi >= 1, lo <= w <= hi, xi >= 0 (M: each row's sentence), with
HiGHS's (scipy's linprog) optimum and duals as the independent answer."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from tagger.learners.solvers.lp_operators import LPRows


def lp_rows(H: np.ndarray, rsent: np.ndarray) -> LPRows:
    """The kernels' view of the rows H w + M xi >= 1."""
    Hs = sp.csr_matrix(H)
    T = Hs.T.tocsr()
    return LPRows(
        Hs.indptr.astype(np.int64),
        Hs.indices.astype(np.int64),
        Hs.data,
        T.indptr.astype(np.int64),
        T.indices.astype(np.int64),
        T.data,
        rsent.astype(np.int64),
        np.ones(H.shape[0]),
    )


def highs_optimum(H: np.ndarray, rsent: np.ndarray, N: int, C: float, lo, hi):
    """linprog's result for the LP (its ``fun`` and ``ineqlin.marginals``)."""
    R, K = H.shape
    M = np.zeros((R, N))
    M[np.arange(R), rsent] = 1.0
    res = linprog(
        np.concatenate([np.ones(K), np.full(N, C)]),
        A_ub=-np.hstack([H, M]),
        b_ub=-np.ones(R),
        bounds=[(lo[k], None if np.isinf(hi[k]) else hi[k]) for k in range(K)] + [(0, None)] * N,
        method="highs",
    )
    assert res.status == 0
    return res
