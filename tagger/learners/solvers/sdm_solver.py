"""L2 structural SVM in the dual: the Sequential Dual Method (SDM) of Balamurugan, Shevade,
Sundararajan & Keerthi (*A Sequential Dual Method for Structural SVMs*, SDM 2011).

Problem (Hamming loss Delta, per-feature scaling ``s``, per-example weights ``C_i``)::

    min_w  (1/2) ||w||^2 + sum_i C_i R_i(w)
    R_i(w) = max_y [Delta(y_i, y) - w . (s * (f(x_i, y_i) - f(x_i, y)))]  >= 0

The model scores with the *effective* weights ``w_eff = s * w`` (``F(x, y) = w_eff . f(x, y)``),
so ``s = 1`` is the ordinary L2 M3N and a feature with ``s_k = 0`` is switched off. The
EM-style L1-M3N (``tagger.learners.m3n_em``) calls this solver with ``s = beta``.

Dual (one variable per example and labeling; the gold labeling carries the slack)::

    max_alpha  sum_{i,y} alpha_iy Delta(y_i, y) - (1/2) ||s * u||^2,
    u = sum_{i,y} alpha_iy (f(x_i, y_i) - f(x_i, y)),   alpha >= 0,  sum_y alpha_iy = C_i

with ``w = s * u`` and ``w_eff = s^2 * u``. Each example keeps a *working set* of competitor
labelings (those with alpha_iy > 0, plus new ones); everything else has alpha = 0. One visit
of example i:

1. loss-augmented Viterbi at the current ``w_eff`` finds ``y^ = argmax_y H_i(y)``,
   ``H_i(y) = Delta(y_i, y) - w_eff . (f(x_i, y_i) - f(x_i, y))`` (the dual gradient);
   it joins the working set if ``H_i(y^)`` exceeds the largest ``H_i`` in the set (and 0).
2. Sequential minimal steps inside the working set (the gold labeling included, H = 0):
   move mass ``delta`` from the member with the smallest H among those with alpha > 0 to the
   one with the largest H, ``delta = min(alpha_down, (H_up - H_down) / ||s * d||^2)``,
   ``d = f(y_down) - f(y_up)``; the exact maximiser of the dual along that direction, so the
   dual never decreases. Stop when ``H_up - H_down <= eps`` or after ``max_inner`` steps.
3. Members whose alpha fell to exactly 0 leave the set (they can come back through step 1).

One *epoch* visits every example once in a random order (seeded). After each epoch the primal
objective is computed exactly (a parallel loss-augmented Viterbi pass), and the solver stops
when the relative duality gap ``(P - D) / P`` falls below ``tol``.

With ``blocks`` = K > 0 an epoch runs in *block-parallel rounds* instead
(:mod:`.sdm_blocks`): K blocks of ``block_size`` examples are visited at once, each against
its own copy of the weights, and joined by an exact line search on the dual, so the dual
still never falls and the same duality gap certifies the same optimum. The blocks come from
the data and the seed only, so the result is the same with any number of threads; K = 0 is
the sequential method above, one example at a time (one thread).

Every structure of model trains the same way: label-pair templates (transitions that vary
by position) and second-order chains (label-pair states; the labelings are those the model
allows, whose label pairs were all seen in training) only change the lattice of step 1's
loss-augmented Viterbi, the scores ``F`` and the feature differences ``d``, which cover the
pair and triple weights (:mod:`tagger.chain.structure`).

Warm starts are the point of keeping the state in an object: the duals stay feasible when

* ``scale`` changes (``u`` does not depend on it; ``w_eff`` is recomputed),
* an example weight ``C_i`` changes (``alpha_i`` is scaled down if it exceeds the new C_i;
  ``C_i = 0`` removes the example's influence entirely),
* an example's gold labeling changes (its duals and working set are reset: its competitors
  were defined against the old labeling),
* state, pair or triple parameters are removed from the problem (``restrict``; ``u`` is
  restricted with them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tagger.chain import (
    ChainModel,
    FeatureBatch,
    Featurized,
    SparseAccumulator,
    chain_structure,
)
from tagger.errors import bad_value
from tagger.jit import thread_count
from tagger.learners.base import Learner, TrainingProblem
from tagger.learners.solvers.sdm_blocks import block_epoch, slot_work
from tagger.learners.solvers.sdm_kernels import (
    CompetitorSets,
    DualState,
    Scratch,
    hinge_losses,
    remove_example,
    sdm_epoch,
)

# --------------------------------------------------------------------------------- solver


@dataclass
class SDMResult:
    """Where a :meth:`SDMSolver.solve` call ended."""

    epochs: int  # passes made by this call
    primal: float  # (1/2)||w||^2 + sum_i C_i R_i(w)
    dual: float  # the dual objective (a lower bound of the primal)
    gap: float  # (primal - dual) / max(primal, tiny)
    converged: bool  # gap <= tol


def restrict_featurized(X: Featurized, keep_attr: np.ndarray) -> Featurized:
    """X with only the attributes where ``keep_attr`` holds, renumbered 0..kept-1."""
    keep_attr = np.asarray(keep_attr, dtype=bool)
    new_id = np.cumsum(keep_attr, dtype=np.int64) - 1
    entry_keep = keep_attr[X.attrs]
    token = np.repeat(np.arange(X.n_tokens, dtype=np.int64), np.diff(X.indptr))
    indptr = np.zeros(X.n_tokens + 1, dtype=np.int64)
    np.cumsum(np.bincount(token[entry_keep], minlength=X.n_tokens), out=indptr[1:])
    attrs = new_id[X.attrs[entry_keep]].astype(np.int32)
    kwargs = {}
    vals = X.vals
    if vals.shape[0] > 0:
        kwargs["values"] = np.ascontiguousarray(vals[entry_keep])
    return Featurized(indptr, attrs, X.offsets, **kwargs)


class SDMSolver:
    """Warm-startable L2 structural SVM solver (Sequential Dual Method); see the module docstring.

    ``SDMSolver(model, X, y, C=1.0, scale=None, max_working_set=32, max_inner=10, seed=0,
    blocks=0, block_size=8)``

    model, X, y
        the parameter layout (:class:`~tagger.chain.layout.ChainModel`), featurized sentences and
        the gold label ids (int32, one per token) playing y_i in the hinge.
    C
        a float (every example) or a float array with one weight C_i >= 0 per sentence.
    scale
        None (all ones) or the float array s (one per weight of ``model``): the solver
        minimises over w with effective weights ``s * w``.
    scratch
        None, or a :class:`~tagger.io.scratch.ScratchSpace` that holds the working sets (their
        labelings take ``max_working_set`` ints per token: memory-mapped with a directory).
    blocks, block_size
        0: the sequential method (one example at a time); K > 0: epochs in block-parallel
        rounds of K blocks of ``block_size`` examples (the module docstring), which use up to
        K threads and give the same weights with any number of them.

    Typical use, including repeated calls with changing weights and imputed labelings (the
    semi-supervised learner)::

        solver = SDMSolver(model, X, y_init, C=C_vec)
        solver.solve(epochs=20, tol=1e-3)            # cold start
        w = solver.weights()                         # effective weights: score with these
        ...
        solver.set_labels(y_new)   # examples whose labels changed lose their duals
        solver.set_example_weights(C_new)            # e.g. raise C_u for unlabeled examples
        solver.solve(epochs=20, tol=1e-3)            # warm start from the kept duals
        w = solver.weights()

    ``solve(..., y=..., C=..., scale=...)`` applies the same changes before optimising. The
    solver keeps its own copy of y; the caller's arrays are never modified.
    """

    def __init__(
        self,
        model: ChainModel,
        X: Featurized,
        y: np.ndarray,
        C=1.0,
        scale: np.ndarray | None = None,
        max_working_set: int = 32,
        max_inner: int = 10,
        seed: int = 0,
        eps: float = 1e-9,
        scratch=None,
        blocks: int = 0,
        block_size: int = 8,
    ):
        if max_working_set < 1:
            raise bad_value(
                "max_working_set", "an integer in [1, inf)", max_working_set, "SDMSolver"
            )
        if blocks < 0:
            raise bad_value("blocks", "an integer in [0, inf)", blocks, "SDMSolver")
        if block_size < 1:
            raise bad_value("block_size", "an integer in [1, inf)", block_size, "SDMSolver")
        self.blocks, self.block_size = int(blocks), int(block_size)
        self._slots = None
        self.model = model
        self.X = X
        self.vals = X.vals
        n, n_tok, n_w = X.n_sentences, X.n_tokens, model.n_weights
        self.y = self._check_labels(y)
        self.C = self._check_weights(C)
        self.s2 = np.ones(n_w) if scale is None else self._check_scale(scale) ** 2
        self.u = np.zeros(n_w)
        self.w = np.zeros(n_w)
        self._refresh_w()
        # the working sets grow with the data: a scratch space (tagger.io.scratch) may map them
        zeros = (
            np.zeros
            if scratch is None
            else (lambda shape, dtype=np.float64: scratch.zeros("working-sets", shape, dtype))
        )
        self.ws_n = np.zeros(n, dtype=np.int32)
        self.ws_alpha = zeros((n, max_working_set))
        self.ws_loss = zeros((n, max_working_set))
        self.ws_lab = zeros((max_working_set, n_tok), dtype=np.int32)
        self.max_inner = int(max_inner)
        self.eps = float(eps)
        self.rng = np.random.default_rng(seed)
        self.epochs_done = 0
        self._scratch()

    # ---- checks
    def _scratch(self):
        m = self.model
        param_attr = np.full(m.n_weights, -1, dtype=np.int64)
        m.state_weights(param_attr)[:] = m.state_param_attr()
        m.pair_weights(param_attr)[:] = m.pair_param_attr()
        self.scratch = Scratch(
            SparseAccumulator.new(m.n_weights),
            param_attr,
            np.full(m.n_attrs, -1, dtype=np.int64),
            chain_structure(m),
        )

    def _check_labels(self, y) -> np.ndarray:
        y = np.asarray(y)
        if y.shape != (self.X.n_tokens,) or y.dtype.kind not in "iu":
            raise bad_value(
                "y",
                f"{self.X.n_tokens} integer label ids (one per token)",
                f"shape {y.shape} dtype {y.dtype}",
                "SDMSolver",
            )
        if y.size and (y.min() < 0 or y.max() >= self.model.n_labels):
            raise bad_value(
                "y",
                f"label ids in [0, {self.model.n_labels})",
                f"ids from {y.min()} to {y.max()}",
                "SDMSolver",
            )
        second = self.model.second
        if second is not None and y.size:
            # a second-order model scores a labeling with an unseen label pair -inf: as gold
            # labeling its hinge would be infinite
            inner = np.ones(y.size, dtype=bool)
            inner[self.X.offsets[:-1][self.X.offsets[:-1] < y.size]] = False
            t = np.flatnonzero(inner)
            codes = y[t - 1].astype(np.int64) * self.model.n_labels + y[t]
            unseen = int(np.count_nonzero(~np.isin(codes, second.allowed)))
            if unseen:
                raise bad_value(
                    "y",
                    "labelings whose label pairs the second-order model allows",
                    f"{unseen} label pairs it does not",
                    "SDMSolver",
                )
        return np.array(y, dtype=np.int32)

    def _check_weights(self, C) -> np.ndarray:
        n = self.X.n_sentences
        C = np.broadcast_to(np.asarray(C, dtype=np.float64), (n,)).copy()
        if not np.all(np.isfinite(C)) or np.any(C < 0):
            raise bad_value("C", "finite example weights C_i >= 0", f"min {C.min()}", "SDMSolver")
        return C

    def _check_scale(self, scale) -> np.ndarray:
        s = np.asarray(scale, dtype=np.float64)
        if s.shape != (self.model.n_weights,) or not np.all(np.isfinite(s)):
            raise bad_value(
                "scale",
                f"{self.model.n_weights} finite floats (one per weight)",
                f"shape {s.shape}",
                "SDMSolver",
            )
        return np.abs(s)

    def kernel_records(self) -> tuple:
        """(layout, batch, dual state, competitor sets): what the SDM kernels take."""
        X = self.X
        return (
            self.model.layout,
            FeatureBatch(X.indptr, X.attrs, self.vals, X.offsets),
            DualState(self.C, self.s2, self.u, self.w),
            CompetitorSets(self.ws_n, self.ws_alpha, self.ws_loss, self.ws_lab),
        )

    # ---- changes between calls (all keep the duals feasible)
    def set_labels(self, y: np.ndarray) -> int:
        """New gold labelings; examples whose labeling changed lose their duals and working
        set (their competitors were defined against the old labeling). Returns how many."""
        y = self._check_labels(y)
        offsets = self.X.offsets
        changed_tok = y != self.y
        if not changed_tok.any():
            return 0
        sent = np.unique(np.searchsorted(offsets, np.flatnonzero(changed_tok), side="right") - 1)
        layout, X, _, ws = self.kernel_records()
        st = self.scratch.structure
        for i in sent:
            remove_example(layout, st, X, int(i), self.y, -1.0, ws, self.u, self.scratch.acc)
            self.ws_n[i] = 0
            self.ws_alpha[i] = 0.0
        self.y = y
        self._refresh_w()
        return len(sent)

    def set_example_weights(self, C) -> None:
        """New weights C_i; an example whose duals exceed its new C_i has them scaled down."""
        C = self._check_weights(C)
        total = self.ws_alpha.sum(axis=1)
        over = np.flatnonzero(total > C)
        layout, X, _, ws = self.kernel_records()
        st, acc = self.scratch.structure, self.scratch.acc
        for i in over:
            factor = C[i] / total[i]
            remove_example(layout, st, X, int(i), self.y, factor - 1.0, ws, self.u, acc)
            self.ws_alpha[i] *= factor
            if factor == 0.0:
                self.ws_n[i] = 0
        self.C = C
        if len(over):
            self._refresh_w()

    def set_scale(self, scale: np.ndarray | None) -> None:
        """New per-weight scaling s (None = ones); the duals stay as they are."""
        self.s2 = np.ones(self.model.n_weights) if scale is None else self._check_scale(scale) ** 2
        self._refresh_w()

    def restrict(self, keep_state: np.ndarray, keep_pair=None, keep_trip=None) -> np.ndarray:
        """Remove the state parameters where ``keep_state`` is false from the problem, and
        the label-pair and triple weights where ``keep_pair`` / ``keep_trip`` are false (None
        keeps them all).

        The model and the featurized data are rebuilt without them (attributes left without
        parameters disappear from X), so later epochs skip them. Transition, start and end
        weights always stay; so do a second-order model's allowed label pairs (a triple
        without its weight scores 0, as a weight held at 0 would), so the working sets'
        labelings stay the model's. Returns the kept weights' indices in the old layout."""
        m = self.model
        marker = np.zeros(m.n_weights)
        m.edge_weights(marker)[:] = 1.0
        for name, keep, block in (
            ("keep_state", keep_state, m.state_weights(marker)),
            ("keep_pair", keep_pair, m.pair_weights(marker)),
            ("keep_trip", keep_trip, m.trip_weights(marker)),
        ):
            keep = np.ones(len(block), dtype=bool) if keep is None else np.asarray(keep, bool)
            if keep.shape != block.shape:
                raise bad_value(
                    name, f"{len(block)} booleans", f"shape {keep.shape}", "SDMSolver.restrict"
                )
            block[:] = keep
        model, _, keep_attr = m.compact(marker)
        index = np.flatnonzero(marker).astype(np.int64)  # compact keeps them in this order
        self.model = model
        self.X = restrict_featurized(self.X, keep_attr)
        self.vals = self.X.vals
        self.u = np.ascontiguousarray(self.u[index])
        self.s2 = np.ascontiguousarray(self.s2[index])
        self._refresh_w()
        self._scratch()
        return index

    def _refresh_w(self) -> None:
        """w = s2 * u. With s = 1, w *is* u (one array): the two would take the same steps,
        and an SDM pass then moves one vector instead of two."""
        if np.all(self.s2 == 1.0):
            self.w = self.u
        else:
            if self.w is self.u or self.w.shape != self.u.shape:
                self.w = np.empty_like(self.u)
            np.multiply(self.s2, self.u, out=self.w)

    # ---- results
    def weights(self) -> np.ndarray:
        """Effective weights ``s * w`` in the current model's layout (a copy): score with these."""
        return self.w.copy()

    def hinges(self, w: np.ndarray | None = None, weighted_only: bool = False) -> np.ndarray:
        """R_i at the effective weights (default: the current ones), one per sentence; with
        ``weighted_only``, 0 for the examples with C_i = 0 (they are not decoded)."""
        layout, X, _, _ = self.kernel_records()
        out = np.empty(self.X.n_sentences)
        skip = self.C <= 0.0 if weighted_only else np.zeros(0, np.bool_)
        st = self.scratch.structure
        hinge_losses(layout, st, X, self.w if w is None else w, self.y, skip, out)
        return out

    def objectives(self) -> tuple[float, float, np.ndarray]:
        """(primal, dual, hinges) at the current duals. Examples with C_i = 0 (unlabeled
        sentences before they get a weight) add nothing to the primal and are not decoded:
        their hinge is reported as 0."""
        reg = 0.5 * float(np.dot(self.s2 * self.u, self.u))
        hinge = self.hinges(weighted_only=True)
        primal = reg + float(self.C @ hinge)
        dual = float(np.sum(self.ws_alpha * self.ws_loss)) - reg
        return primal, dual, hinge

    # ---- optimisation
    def epoch(self) -> None:
        """One SDM pass over the examples in a random order: sequential, or in block-parallel
        rounds with ``blocks`` > 0. ``stats`` counts competitors added, minimal steps, visits
        to full working sets, rounds, and rounds whose line search shortened the step."""
        order = self.rng.permutation(self.X.n_sentences).astype(np.int64)
        self.stats = np.zeros(5, dtype=np.int64)
        layout, X, dual, ws = self.kernel_records()
        if self.blocks > 0:
            block_epoch(
                layout,
                X,
                self.y,
                dual,
                ws,
                order,
                self.blocks,
                self.block_size,
                self.max_inner,
                self.eps,
                self.scratch,
                self._slot_work(),
                self.stats,
                self.w is self.u,
            )
            self.epochs_done += 1
            return
        sdm_epoch(
            layout,
            X,
            self.y,
            dual,
            ws,
            order,
            self.max_inner,
            self.eps,
            self.scratch,
            self.stats,
            True,
            self.w is self.u,
        )
        self.epochs_done += 1

    def _slot_work(self):
        """The threads' work arrays of the block-parallel rounds: one slot per thread (at most
        one per block), kept between epochs while the model and thread count stay."""
        n = max(1, min(self.blocks, thread_count()))
        shape = (n, self.model.n_weights, self.model.n_attrs)
        if self._slots is None or self._slots[0] != shape:
            self._slots = (shape, slot_work(*shape))
        return self._slots[1]

    def solve(
        self,
        epochs: int = 50,
        tol: float = 1e-3,
        *,
        y=None,
        C=None,
        scale=None,
        callback=None,
        check_every: int = 1,
    ) -> SDMResult:
        """Optimise from the current duals (a warm start) for at most ``epochs`` passes.

        ``y`` / ``C`` / ``scale`` given here are applied first (see :meth:`set_labels`,
        :meth:`set_example_weights`, :meth:`set_scale`). Stops when the relative duality gap
        is at most ``tol``. ``callback(epoch, primal, dual, gap)`` is called after every pass
        (its ``True`` return stops the loop early). With ``check_every`` k > 1 the gap (a full
        decoding pass over the weighted examples) is computed only after every k-th pass and
        the last one, and the callback called only then."""
        if check_every < 1:
            raise bad_value("check_every", "an integer in [1, inf)", check_every, "SDMSolver.solve")
        if y is not None:
            self.set_labels(y)
        if C is not None:
            self.set_example_weights(C)
        if scale is not None:
            self.set_scale(scale)
        primal = dual = gap = math.nan
        done = 0
        for e in range(1, epochs + 1):
            self.epoch()
            done = e
            if e % check_every and e < epochs:
                continue
            primal, dual, _ = self.objectives()
            gap = (primal - dual) / max(abs(primal), 1e-12)
            stop = callback(e, primal, dual, gap) if callback is not None else False
            if gap <= tol or stop:
                break
        return SDMResult(done, primal, dual, gap, bool(gap <= tol))


# --------------------------------------------------------------------------------- learner


def warm_state(learner: Learner, problem: TrainingProblem):
    """The state a learner kept from its last fit on this same problem, when it was asked to
    warm-start (``learner.warm_start = True``, set by ``Tagger.path``); else None."""
    state = getattr(learner, "state_", None)
    if getattr(learner, "warm_start", False) and state is not None and state[0] is problem:
        return state[1]
    return None
