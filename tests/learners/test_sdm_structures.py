"""The Sequential Dual Method (tagger.learners.solvers.sdm_solver) on models beyond the plain
first-order chain: label-pair templates (transitions that vary by position) and second-order
chains (with and without pair templates), against independent references.

The reference writes the joint features f(x, y) out in Python from the model's parameter
index alone (which attribute, label, label pair or triple each weight belongs to), enumerates
every labeling the model allows (at order 2: those whose label pairs were all seen in
training), and solves the primal QP over all of them with HiGHS:

    min_{w, xi}  (1/2)||w||^2 + sum_i C_i xi_i
    s.t.  w . (s * (f(x_i, y_i) - f(x_i, y))) >= Delta(y_i, y) - xi_i,  xi_i >= 0  (all i, y)

Nothing of the solver's kernels (scores, decoding, feature differences) is used for it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tagger.chain.layout import ChainModel
from tagger.features import FeatureSpec, Featurizer
from tagger.learners.solvers.sdm_solver import SDMSolver
from tagger.sentence import Sentence

from _brute import hinge_qp, labelings

highspy = pytest.importorskip("highspy")

WORDS = ["ab", "bb", "ca", "da", "eb"]
KINDS = ["pairs", "order2", "order2+pairs"]
L = 3


def problem(kind: str, seed: int, n: int = 5, max_len: int = 4):
    """(model, X, y) of n random sentences of 1..max_len tokens over 3 labels. At order 2
    the labels follow a sparse chain (each label the one before or the next), so that some
    label pairs are never seen and the model does not allow them."""
    rng = np.random.default_rng(seed)
    sents = []
    for _ in range(n):
        T = int(rng.integers(1, max_len + 1))
        words = [WORDS[i] for i in rng.integers(0, len(WORDS), T)]
        if kind == "pairs":
            labels = rng.integers(0, L, T)
        else:
            labels = np.cumsum(rng.integers(0, 2, T)) + rng.integers(0, L)
        sents.append(Sentence([words], [str(int(x) % L) for x in labels]))
    featurizer: dict = {"columns": ["word"], "templates": ["bias", "word[0]"]}
    if kind.endswith("pairs"):
        featurizer["pair_templates"] = ["word[0]", "bias"]
    if kind.startswith("order2"):
        featurizer["order"] = 2
    fz = Featurizer(FeatureSpec.from_dict({"featurizer": featurizer})).fit(sents)
    X = fz.transform(sents)
    y = np.array([int(lab) for s in sents for lab in s.labels], dtype=np.int32)
    pair_attrs = fz.pair_attributes() if kind.endswith("pairs") else None
    order = 2 if kind.startswith("order2") else 1
    model = ChainModel.from_data(X, y, L, fz.n_attributes, pair_attrs=pair_attrs, order=order)
    assert model.n_pair > 0 or not kind.endswith("pairs")
    return model, X, y


class Reference:
    """f(x, y) of a model written out from its parameter index, and its allowed labelings."""

    def __init__(self, model: ChainModel, X):
        self.X, self.K = X, model.n_weights
        self.state = {}
        for a in range(model.n_attrs):
            for p in range(model.attr_ptr[a], model.attr_ptr[a + 1]):
                self.state[(a, int(model.param_label[p]))] = p
        self.pair = {}
        for a in range(model.n_attrs):
            for p in range(model.pair_ptr[a], model.pair_ptr[a + 1]):
                code = int(model.pair_code[p])
                self.pair[(a, code // L, code % L)] = model.n_state + L * L + 2 * L + p
        self.trans = model.n_state
        self.start, self.end = self.trans + L * L, self.trans + L * L + L
        self.trip, self.allowed = {}, None
        if model.second is not None:
            base = model.n_state + L * L + 2 * L + model.n_pair
            self.trip = {int(c): base + i for i, c in enumerate(model.second.trip_code)}
            self.allowed = {(int(c) // L, int(c) % L) for c in model.second.allowed}

    def allows(self, y) -> bool:
        return self.allowed is None or all(
            (int(a), int(b)) in self.allowed for a, b in zip(y[:-1], y[1:])
        )

    def labelings(self, s: int) -> list[np.ndarray]:
        T = int(self.X.offsets[s + 1] - self.X.offsets[s])
        return [lab for lab in labelings(T, L) if self.allows(lab)]

    def features(self, s: int, y) -> np.ndarray:
        X, f = self.X, np.zeros(self.K)
        a0 = int(X.offsets[s])
        for t in range(len(y)):
            lo, hi = X.indptr[a0 + t], X.indptr[a0 + t + 1]
            for j in range(lo, hi):
                attr, v = int(X.attrs[j]), (float(X.vals[j]) if len(X.vals) else 1.0)
                if (attr, int(y[t])) in self.state:
                    f[self.state[(attr, int(y[t]))]] += v
                if t > 0 and (attr, int(y[t - 1]), int(y[t])) in self.pair:
                    f[self.pair[(attr, int(y[t - 1]), int(y[t]))]] += v
            if t > 0:
                f[self.trans + int(y[t - 1]) * L + int(y[t])] += 1.0
            if t > 1 and (code := (int(y[t - 2]) * L + int(y[t - 1])) * L + int(y[t])) in self.trip:
                f[self.trip[code]] += 1.0
        f[self.start + int(y[0])] += 1.0
        f[self.end + int(y[-1])] += 1.0
        return f

    def gold(self, y, s: int) -> np.ndarray:
        return y[int(self.X.offsets[s]) : int(self.X.offsets[s + 1])]

    def rows(self, y):
        """(i, f(x_i, y_i) - f(x_i, y), Delta(y_i, y)) over every allowed labeling y."""
        out = []
        for i in range(self.X.n_sentences):
            gold = self.gold(y, i)
            fg = self.features(i, gold)
            for lab in self.labelings(i):
                out.append((i, fg - self.features(i, lab), float(np.sum(lab != gold))))
        return out

    def hinges(self, y, w) -> np.ndarray:
        out = []
        for i in range(self.X.n_sentences):
            gold = self.gold(y, i)
            best = max(w @ self.features(i, lab) + np.sum(lab != gold) for lab in self.labelings(i))
            out.append(best - w @ self.features(i, gold))
        return np.array(out)

    def qp(self, y, C, scale=None):
        """Effective weights s * w and the optimum of the primal QP (HiGHS)."""
        return hinge_qp(self.rows(y), self.X.n_sentences, self.K, C, scale)

    def check_duals(self, solver, index=None):
        """u = sum_{i,m} alpha_im (f(x_i, y_i) - f(x_i, y_im)) (in the layout of the full
        model, the solver's weights at ``index``), duals feasible, members allowed."""
        u = np.zeros(self.K)
        for i in range(self.X.n_sentences):
            a, b = int(self.X.offsets[i]), int(self.X.offsets[i + 1])
            n_i = solver.ws_n[i]
            alpha = solver.ws_alpha[i, :n_i]
            assert np.all(alpha > 0) and alpha.sum() <= solver.C[i] * (1 + 1e-12) + 1e-15
            gold = solver.y[a:b]
            for m in range(n_i):
                lab = solver.ws_lab[m, a:b]
                assert self.allows(lab) and solver.ws_loss[i, m] == np.sum(lab != gold)
                u += alpha[m] * (self.features(i, gold) - self.features(i, lab))
        index = np.arange(self.K) if index is None else index
        np.testing.assert_allclose(solver.u, u[index], atol=1e-10)


def close(w, ref):
    np.testing.assert_allclose(w, ref, atol=2e-4 * max(1.0, np.abs(ref).max()))


def monotone(duals) -> bool:
    return all(d2 >= d1 - 1e-12 * abs(d1) for d1, d2 in zip(duals, duals[1:]))


# ------------------------------------------------------------------------------ optimum


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed, C", [(1, 0.1), (2, 1.0), (3, 10.0)])
def test_sequential_visits_reach_the_exact_qp_optimum(kind, seed, C):
    model, X, y = problem(kind, seed)
    ref = Reference(model, X)
    ref_w, ref_obj = ref.qp(y, C)
    solver = SDMSolver(model, X, y, C=C, seed=seed)
    duals = []
    res = solver.solve(epochs=5000, tol=1e-8, callback=lambda e, p, d, g: duals.append(d) and 0)
    assert res.converged and monotone(duals)
    assert res.primal == pytest.approx(ref_obj, rel=1e-6)
    assert res.dual <= ref_obj * (1 + 1e-9) + 1e-12 and res.dual == pytest.approx(ref_obj, rel=1e-6)
    close(solver.weights(), ref_w)
    np.testing.assert_allclose(solver.hinges(), ref.hinges(y, solver.weights()), atol=1e-9)
    ref.check_duals(solver)
    # the pair and triple blocks take part in the optimum
    beyond = solver.weights()[model.pair_offset :]
    assert beyond.size and np.any(beyond != 0)


@pytest.mark.parametrize("kind", KINDS)
def test_hinges_are_the_brute_force_hinges_at_any_weights(kind):
    model, X, y = problem(kind, 4, n=8)
    ref = Reference(model, X)
    solver = SDMSolver(model, X, y, C=1.0)
    rng = np.random.default_rng(0)
    for _ in range(5):
        w = rng.normal(size=model.n_weights)
        got = solver.hinges(w)
        np.testing.assert_allclose(got, ref.hinges(y, w), atol=1e-9)
        assert np.all(got >= 0)


@pytest.mark.parametrize("kind", KINDS)
def test_the_dual_never_decreases_with_short_visits(kind):
    model, X, y = problem(kind, 5, n=8, max_len=4)
    solver = SDMSolver(model, X, y, C=3.0, max_inner=2, seed=0)
    duals, gaps = [], []
    solver.solve(
        epochs=3000, tol=1e-8, callback=lambda e, p, d, g: duals.append(d) or gaps.append(g) and 0
    )
    assert monotone(duals) and duals[-1] > duals[0]
    assert gaps[0] > 1e-2 and gaps[-1] <= 1e-8 and all(g >= -1e-12 for g in gaps)
    _, ref_obj = Reference(model, X).qp(y, 3.0)
    assert duals[-1] == pytest.approx(ref_obj, rel=1e-6)


# ------------------------------------------------------------------------------ warm starts


@pytest.mark.parametrize("blocks", [0, 3])
@pytest.mark.parametrize("kind", KINDS)
def test_warm_starts_scaling_and_restricting_every_block(kind, blocks):
    """New labelings, example weights with a zero, per-weight scales switching off state,
    pair and triple weights, then those weights removed (``restrict``): the duals stay
    consistent, and the solver ends at the optimum of the scaled QP of the new problem."""
    model, X, y = problem(kind, 6, n=7)
    ref = Reference(model, X)
    rng = np.random.default_rng(1)
    solver = SDMSolver(model, X, y, C=1.0, seed=2, blocks=blocks, block_size=2)
    solver.solve(epochs=30, tol=1e-9)
    y2 = y.copy()
    for i in (1, 4):
        a, b = int(X.offsets[i]), int(X.offsets[i + 1])
        others = [lab for lab in ref.labelings(i) if np.any(lab != y[a:b])]
        if others:
            y2[a:b] = others[int(rng.integers(0, len(others)))]
    assert solver.set_labels(y2) >= 1
    ref.check_duals(solver)
    C2 = rng.uniform(0.2, 2.0, X.n_sentences)
    C2[3] = 0.0
    solver.set_example_weights(C2)
    ref.check_duals(solver)
    assert solver.ws_n[3] == 0
    s = rng.uniform(0.5, 1.5, model.n_weights)
    off = {
        "state": (0, model.n_state),
        "pair": (model.pair_offset, model.trip_offset),
        "trip": (model.trip_offset, model.n_weights),
    }
    for lo, hi in off.values():
        if hi > lo:
            s[rng.choice(np.arange(lo, hi), max(1, (hi - lo) // 3), replace=False)] = 0.0
    solver.set_scale(s)
    ref.check_duals(solver)
    keep = {k: s[lo:hi] != 0 for k, (lo, hi) in off.items()}
    index = solver.restrict(keep["state"], keep["pair"], keep["trip"])
    assert solver.model.n_weights == np.count_nonzero(s)
    assert solver.model.n_pair == keep["pair"].sum() and solver.model.n_trip == keep["trip"].sum()
    ref.check_duals(solver, index)
    duals = []
    res = solver.solve(epochs=20000, tol=1e-8, callback=lambda e, p, d, g: duals.append(d) and 0)
    assert res.converged and monotone(duals)
    ref.check_duals(solver, index)
    ref_w, ref_obj = ref.qp(y2, C2, scale=s)
    assert res.primal == pytest.approx(ref_obj, rel=1e-6)
    full = np.zeros(model.n_weights)
    full[index] = solver.weights()
    close(full, ref_w)
    np.testing.assert_allclose(solver.hinges(), ref.hinges(y2, full), atol=1e-9)


@pytest.mark.parametrize("kind", ["order2", "order2+pairs"])
def test_a_second_order_model_refuses_labelings_it_does_not_allow(kind):
    model, X, y = problem(kind, 7, n=6)
    allowed = {(int(c) // L, int(c) % L) for c in model.second.allowed}
    unseen = next((a, b) for a in range(L) for b in range(L) if (a, b) not in allowed)
    i = next(i for i in range(X.n_sentences) if X.offsets[i + 1] - X.offsets[i] >= 2)
    y2 = y.copy()
    y2[X.offsets[i] : X.offsets[i] + 2] = unseen
    with pytest.raises(ValueError, match="label pairs the second-order model allows"):
        SDMSolver(model, X, y2)
    solver = SDMSolver(model, X, y)
    with pytest.raises(ValueError, match="label pairs it does not"):
        solver.set_labels(y2)
    assert np.array_equal(solver.y, y)


# ------------------------------------------------------------------------------ block rounds


@pytest.mark.parametrize("blocks, block_size", [(2, 2), (3, 1)])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed, C", [(8, 1.0), (9, 10.0)])
def test_block_rounds_reach_the_exact_qp_optimum(kind, seed, C, blocks, block_size):
    model, X, y = problem(kind, seed, n=9)
    ref = Reference(model, X)
    ref_w, ref_obj = ref.qp(y, C)
    solver = SDMSolver(model, X, y, C=C, seed=seed, blocks=blocks, block_size=block_size)
    duals = []
    res = solver.solve(epochs=20000, tol=1e-8, callback=lambda e, p, d, g: duals.append(d) and 0)
    assert res.converged and monotone(duals) and solver.stats[3] >= 1
    assert res.primal == pytest.approx(ref_obj, rel=1e-6)
    assert res.dual <= ref_obj * (1 + 1e-9) + 1e-12
    close(solver.weights(), ref_w)
    ref.check_duals(solver)


@pytest.mark.parametrize("kind", KINDS)
def test_block_rounds_do_not_depend_on_how_many_slots_share_the_blocks(kind):
    """1, 2 or 5 slots of work arrays (a thread running several blocks, blocks left without
    a thread) take the same steps, bit for bit, and return their slots clean."""
    from tagger.learners.solvers.sdm_blocks import block_epoch, slot_work

    model, X, y = problem(kind, 10, n=23, max_len=6)
    scale = np.random.default_rng(1).uniform(0.5, 1.5, model.n_weights)
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
                False,
            )
            assert np.array_equal(slots.w, np.broadcast_to(solver.w, slots.w.shape))
            assert not slots.mark.any() and not slots.du.any() and not slots.step.any()
        first = solvers[0]
        for other in solvers[1:]:
            assert np.array_equal(first.stats, other.stats)
            for name in ("u", "w", "ws_n", "ws_alpha", "ws_loss", "ws_lab"):
                assert np.array_equal(getattr(first, name), getattr(other, name)), name
    assert solvers[0].stats[1] > 0
    assert np.any(solvers[0].w[model.pair_offset :] != 0)


THREADS_CHILD = r"""
import hashlib, json, sys
from tagger import jit
from tagger.learners.solvers.sdm_solver import SDMSolver
sys.path[:0] = sys.argv[1:3]
from test_sdm_structures import KINDS, problem

out = {}
for kind in KINDS:
    model, X, y = problem(kind, 11, n=30, max_len=6)
    digests = []
    for threads in (1, 2, 3, "serial twins"):
        if threads == "serial twins":
            jit.set_parallel_min_bytes(jit.PARALLEL_MIN_BYTES)
        else:
            jit.set_parallel_min_bytes(0)
            jit.set_threads(threads)
            assert jit.thread_count() == threads
        solver = SDMSolver(model, X, y, C=2.0, blocks=3, block_size=2, max_inner=3, seed=1)
        res = solver.solve(epochs=6, tol=0.0)
        h = hashlib.sha256(solver.weights().tobytes())
        h.update(solver.ws_alpha.tobytes())
        h.update(repr((res.primal, res.dual)).encode())
        digests.append(h.hexdigest())
    out[kind] = digests
print(json.dumps(out))
"""


def test_block_rounds_give_the_same_bits_with_1_2_and_3_numba_threads():
    """In a child process with room for three numba threads: the parallel kernels at 1, 2
    and 3 threads (as many work slots) and the serial twins give the same weights, duals
    and objectives, bit for bit, for every structure."""
    here = Path(__file__).resolve().parent
    root = here.parents[1]
    env = dict(os.environ, NUMBA_NUM_THREADS="3", PYTHONPATH=str(root))
    done = subprocess.run(
        [sys.executable, "-c", THREADS_CHILD, str(here), str(here.parent)],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    digests = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(digests) == sorted(KINDS)
    for kind, (one, two, three, serial) in digests.items():
        assert one == two == three == serial, kind
    assert len({d[0] for d in digests.values()}) == len(KINDS)


# ------------------------------------------------------------------------------ m3n-em


def l1_optimum(ref: Reference, y, lam: float, C: float) -> float:
    """min (lam/K)||w||_1^2 + C sum_i R_i(w) over every allowed labeling: for a radius t,
    h(t) = min {C sum_i xi_i : ||w||_1 <= t, margin constraints} is an LP (w = p - n), convex
    in t, so the objective (lam/K) t^2 + h(t) is minimised by a bounded scalar search."""
    from scipy.optimize import linprog, minimize_scalar

    n, K = ref.X.n_sentences, ref.K
    rows = ref.rows(y)
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
        return res.fun

    hi = sum(loss for _, _, loss in rows) + 1.0
    best = minimize_scalar(
        lambda t: lam / K * t * t + h(t),
        bounds=(0.0, hi),
        method="bounded",
        options={"xatol": 1e-10},
    )
    return best.fun


@pytest.mark.parametrize("kind", KINDS)
def test_m3n_em_reaches_the_l1_optimum_and_removes_every_kind_of_weight(kind):
    from tagger.learners import LEARNERS
    from tagger.learners.base import TrainingProblem

    model, X, y = problem(kind, 12, n=6)
    ref = Reference(model, X)
    lam, C = 2.0, 1.0
    ref_obj = l1_optimum(ref, y, lam, C)
    # drop = 0: only the weights at exactly 0 leave (beta_k = 0), so the EM iterations are
    # the exact algorithm; a positive threshold may remove a weight on its way through small
    # values, which the L1 optimum needs (the learner's docstring)
    learner = LEARNERS["m3n-em"](
        **{"lambda": lam, "C": C, "epochs": 200, "inner_epochs": 100, "tol": 1e-9, "drop": 0.0}
    )
    w = learner.fit(TrainingProblem(model, X, y))
    K = model.n_weights
    obj = lam / K * np.abs(w).sum() ** 2 + C * ref.hinges(y, w).sum()
    assert obj >= ref_obj * (1 - 1e-6)
    assert obj == pytest.approx(ref_obj, rel=1e-4)
    # the weights left at zero were removed from the last M-steps, pair and triple ones too
    _, (solver, index, _) = learner.state_
    assert set(np.flatnonzero(w)) <= set(index.tolist())
    beyond = solver.model.n_pair + solver.model.n_trip
    assert beyond < model.n_pair + model.n_trip
    assert beyond == np.count_nonzero(index >= model.pair_offset)
