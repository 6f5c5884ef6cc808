"""The parameter layout of a first-order linear chain: the record, the model and its
weight blocks. Only :mod:`tagger.chain` knows it.

Weights live in one float64 vector::

    w = [ state parameters (n_state) | transitions (L*L) | start (L) | end (L) ]

State parameters exist for (attribute, label) pairs: attribute ``a`` owns parameters
``attr_ptr[a]:attr_ptr[a+1]``, each for label ``param_label[p]`` (CSR by attribute), so a
token's state scores are a short gather-add over its attributes. By default only pairs seen in
training get a parameter (as CRFsuite does); ``all_pairs`` gives every attribute every label.

Score of a labeling (docs/algorithms.md section 0)::

    F(x, y; w) = sum_t sum_{a in A(x,t)} v_a w_state[a, y_t] + sum_{t>=1} w_trans[y_{t-1}, y_t]
                 + w_start[y_0] + w_end[y_{T-1}]

Start and end weights are folded into the first and last rows of the state scores, so the
inference kernels only ever see (T, L) state scores and an (L, L) transition matrix
(:mod:`tagger.chain.scores`). The joint features f(x, y) are in :mod:`tagger.chain.joint`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tagger._config import NUMBA_OPTS
from tagger.chain.joint import add_joint_features, param_index
from tagger.chain.scores import batch_state_scores, view_state_scores
from tagger.features import EncodedViews, Featurized
from tagger.jit import njit

# param_index lives in tagger.chain.joint; it stays importable from here (bench/crf.py)
__all__ = [
    "ChainLayout",
    "ChainModel",
    "FeatureBatch",
    "SparseAccumulator",
    "param_index",
    "transitions_of",
]


class ChainLayout(NamedTuple):
    """The weight layout of a :class:`ChainModel` as numba kernels take it
    (:attr:`ChainModel.layout`): the CSR index of state parameters and the offsets of the
    transition, start and end blocks."""

    attr_ptr: np.ndarray  # int64[n_attrs + 1]: attribute a owns attr_ptr[a]:attr_ptr[a+1]
    param_label: np.ndarray  # int32[n_state]: the label of each state parameter
    n_labels: int
    n_state: int  # number of state parameters = offset of the transitions
    start: int  # offset of the start weights
    end: int  # offset of the end weights
    n_weights: int


class FeatureBatch(NamedTuple):
    """A featurized batch as numba kernels take it (:meth:`of` a :class:`Featurized`):
    token i has attributes ``attrs[indptr[i]:indptr[i+1]]`` with values ``vals`` (empty for
    indicators); sentence s spans tokens ``offsets[s]:offsets[s+1]``."""

    indptr: np.ndarray  # int64[N + 1]
    attrs: np.ndarray  # int32[nnz]
    vals: np.ndarray  # float64[nnz] or empty
    offsets: np.ndarray  # int64[n_sentences + 1]

    @classmethod
    def of(cls, X: Featurized) -> FeatureBatch:
        return cls(X.indptr, X.attrs, X.vals, X.offsets)


class SparseAccumulator(NamedTuple):
    """A dense vector over the weights that remembers which coordinates were touched, so that
    reading and clearing a sparse update costs its size, not the model's."""

    values: np.ndarray  # float64[n_weights]
    mark: np.ndarray  # bool[n_weights]: touched since the last clear
    touched: np.ndarray  # int64[n_weights]: the touched coordinates, in order of first touch

    @classmethod
    def new(cls, n_weights: int) -> SparseAccumulator:
        return cls(
            np.zeros(n_weights, dtype=np.float64),
            np.zeros(n_weights, dtype=np.bool_),
            np.empty(n_weights, dtype=np.int64),
        )


@njit(**NUMBA_OPTS)
def transitions_of(layout, w):
    """The (L, L) transition weights of ``w``, a view (writes go to ``w``)."""
    L = layout.n_labels
    return w[layout.n_state : layout.start].reshape((L, L))


class ChainModel:
    """Parameter index of a linear-chain model over a fixed attribute set and label set."""

    def __init__(self, n_labels: int, attr_ptr: np.ndarray, param_label: np.ndarray):
        self.n_labels = int(n_labels)
        self.attr_ptr = np.ascontiguousarray(attr_ptr, dtype=np.int64)
        self.param_label = np.ascontiguousarray(param_label, dtype=np.int32)

    # ---- construction
    @classmethod
    def from_data(
        cls, X: Featurized, y: np.ndarray, n_labels: int, n_attrs: int, all_pairs: bool = False
    ) -> ChainModel:
        """Parameters for the (attribute, label) pairs seen in ``X`` with gold labels ``y``."""
        if all_pairs:
            attr_ptr = np.arange(n_attrs + 1, dtype=np.int64) * n_labels
            param_label = np.tile(np.arange(n_labels, dtype=np.int32), n_attrs)
            return cls(n_labels, attr_ptr, param_label)
        counts = np.diff(X.indptr)
        token_label = np.repeat(np.asarray(y, dtype=np.int64), counts)
        pairs = np.unique(X.attrs.astype(np.int64) * n_labels + token_label)
        pair_attr = pairs // n_labels
        param_label = (pairs % n_labels).astype(np.int32)
        attr_ptr = np.zeros(n_attrs + 1, dtype=np.int64)
        np.cumsum(np.bincount(pair_attr, minlength=n_attrs), out=attr_ptr[1:])
        return cls(n_labels, attr_ptr, param_label)

    # ---- layout
    @property
    def n_attrs(self) -> int:
        return len(self.attr_ptr) - 1

    @property
    def n_state(self) -> int:
        return len(self.param_label)

    @property
    def n_weights(self) -> int:
        L = self.n_labels
        return self.n_state + L * L + 2 * L

    @property
    def layout(self) -> ChainLayout:
        """The layout record the numba kernels of this module take."""
        L = self.n_labels
        start = self.n_state + L * L
        return ChainLayout(
            self.attr_ptr, self.param_label, L, self.n_state, start, start + L, start + 2 * L
        )

    @property
    def n_edge(self) -> int:
        """Transition, start and end weights: every model has all of them."""
        return self.n_weights - self.n_state

    def state_weights(self, w: np.ndarray) -> np.ndarray:
        """The state parameters of ``w`` (or of any array laid out like it; a view)."""
        return w[: self.n_state]

    def edge_weights(self, w: np.ndarray) -> np.ndarray:
        """The transition, start and end weights of ``w`` (a view), in that order."""
        return w[self.n_state :]

    def boundary_weights(self, w: np.ndarray) -> np.ndarray:
        """The start and end weights of ``w`` (a view)."""
        return w[self.n_state + self.n_labels * self.n_labels :]

    def edge_indices(self) -> np.ndarray:
        """Indices of the transition, start and end weights."""
        return np.arange(self.n_state, self.n_weights, dtype=np.int64)

    def restrict(
        self, keep: np.ndarray, param_attr: np.ndarray | None = None
    ) -> tuple[ChainModel, np.ndarray]:
        """The model with only the state parameters ``keep`` (increasing indices) and every
        transition, start and end weight, and the index in this model's layout of each of
        its weights. ``param_attr`` (:meth:`state_param_attr`) may be given when it is kept."""
        if param_attr is None:
            param_attr = self.state_param_attr()
        attr_ptr = np.zeros(self.n_attrs + 1, dtype=np.int64)
        np.cumsum(np.bincount(param_attr[keep], minlength=self.n_attrs), out=attr_ptr[1:])
        sub = ChainModel(self.n_labels, attr_ptr, self.param_label[keep])
        return sub, np.concatenate([np.asarray(keep, dtype=np.int64), self.edge_indices()])

    def transitions(self, w: np.ndarray) -> np.ndarray:
        """The (L, L) transition weights of ``w`` (a view), from label to label."""
        L = self.n_labels
        return w[self.n_state : self.n_state + L * L].reshape(L, L)

    def start_end(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The start and the end weights of ``w`` (two views)."""
        L = self.n_labels
        o = self.n_state + L * L
        return w[o : o + L], w[o + L : o + 2 * L]

    def start_weights(self, w: np.ndarray) -> np.ndarray:
        """The start weights of ``w`` (a view)."""
        return self.start_end(w)[0]

    def end_weights(self, w: np.ndarray) -> np.ndarray:
        """The end weights of ``w`` (a view)."""
        return self.start_end(w)[1]

    def carry_weights(
        self, w: np.ndarray, other: ChainModel, attr_map: np.ndarray, label_map: np.ndarray
    ) -> np.ndarray:
        """``w`` (laid out for this model) laid out for ``other``, whose attribute ``attr_map[a]``
        and label ``label_map[l]`` are this model's ``a`` and ``l`` (-1: it has none): each
        weight lands on the parameter of the same attribute and label(s), and the parameters
        ``other`` has beyond these start at 0. For warm-starting a model of other data."""
        out = np.zeros(other.n_weights)
        Lo = other.n_labels
        label_map = np.asarray(label_map, dtype=np.int64)
        p = np.flatnonzero(self.state_weights(w))
        attr = np.asarray(attr_map, dtype=np.int64)[self.state_param_attr()[p]]
        lab = label_map[self.param_label[p]]
        ok = (attr >= 0) & (lab >= 0)
        want = attr[ok] * Lo + lab[ok]
        have = other.state_param_attr() * Lo + other.param_label
        order = np.argsort(have, kind="stable")
        at = np.minimum(np.searchsorted(have[order], want), max(len(have) - 1, 0))
        hit = np.zeros(len(want), dtype=bool)
        if len(have):
            hit = have[order][at] == want
        out[order[at[hit]]] = w[p[ok][hit]]
        # transitions, start and end by label
        rows = np.flatnonzero(label_map >= 0)
        dst = label_map[rows]
        other.transitions(out)[np.ix_(dst, dst)] = self.transitions(w)[np.ix_(rows, rows)]
        for mine, theirs in zip(self.start_end(w), other.start_end(out)):
            theirs[dst] = mine[rows]
        return out

    def state_param_attr(self) -> np.ndarray:
        """Attribute id of every state parameter."""
        return np.repeat(np.arange(self.n_attrs, dtype=np.int64), np.diff(self.attr_ptr))

    def state_param_label(self) -> np.ndarray:
        """Label id of every state parameter (read-only: the layout's own array)."""
        labels = self.param_label.view()
        labels.flags.writeable = False
        return labels

    # ---- scores
    def state_scores(
        self, X: Featurized, w: np.ndarray, out: np.ndarray | None = None
    ) -> np.ndarray:
        """(N, L) state scores, start/end weights folded into each sentence's ends."""
        if out is None:
            out = np.empty((X.n_tokens, self.n_labels), dtype=np.float64)
        batch_state_scores(self.layout, FeatureBatch.of(X), w, out)
        return out

    def state_scores_from_views(self, E: EncodedViews, w: np.ndarray) -> np.ndarray:
        """Same as :meth:`state_scores` on ``Featurizer.encode`` output (no attribute lists)."""
        out = np.empty((E.n_tokens, self.n_labels), dtype=np.float64)
        view_state_scores(
            E.view_ids,
            E.offsets,
            E.t_ptr,
            E.t_view,
            E.t_off,
            E.t_mult,
            E.table_keys,
            E.table_vals,
            self.layout,
            w,
            out,
        )
        return out

    def joint_features(
        self,
        X: Featurized,
        sentence: int,
        y: np.ndarray,
        scale: float = 1.0,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Dense f(x_s, y) (``y`` holds the sentence's labels), optionally accumulated into out."""
        if out is None:
            out = np.zeros(self.n_weights, dtype=np.float64)
        a, b = int(X.offsets[sentence]), int(X.offsets[sentence + 1])
        full = np.zeros(X.n_tokens, dtype=np.int32)
        full[a:b] = y
        add_joint_features(self.layout, FeatureBatch.of(X), a, b, full, float(scale), out)
        return out

    def score(self, X: Featurized, sentence: int, y: np.ndarray, w: np.ndarray) -> float:
        """F(x_s, y; w)."""
        return float(self.joint_features(X, sentence, y) @ w)

    # ---- sparsity
    def compact(self, w: np.ndarray) -> tuple[ChainModel, np.ndarray, np.ndarray]:
        """Drop zero state parameters and attributes left without parameters.

        Returns the new model, its weights, and the boolean mask of attributes kept (to prune
        the featurizer with). Transition, start and end weights are kept as they are.
        """
        n_state = self.n_state
        keep_param = w[:n_state] != 0.0
        pattr = self.state_param_attr()
        per_attr = np.bincount(pattr[keep_param], minlength=self.n_attrs)
        keep_attr = per_attr > 0
        attr_ptr = np.zeros(int(keep_attr.sum()) + 1, dtype=np.int64)
        np.cumsum(per_attr[keep_attr], out=attr_ptr[1:])
        model = ChainModel(self.n_labels, attr_ptr, self.param_label[keep_param])
        new_w = np.concatenate([w[:n_state][keep_param], w[n_state:]])
        return model, new_w, keep_attr

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"model.attr_ptr": self.attr_ptr, "model.param_label": self.param_label}

    @classmethod
    def from_arrays(cls, n_labels: int, arrays: dict[str, np.ndarray]) -> ChainModel:
        """The layout saved by :meth:`to_arrays`, checked: the kernels index weights and
        labels through it without bounds checks, so a hand-edited file must not reach them.
        Raises ``ValueError`` naming what is inconsistent."""
        attr_ptr, param_label = arrays["model.attr_ptr"], arrays["model.param_label"]
        for name, arr in (("attr_ptr", attr_ptr), ("param_label", param_label)):
            if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
                raise ValueError(
                    f"model.{name} must be a 1-D integer array, not {arr.dtype} "
                    f"of shape {arr.shape}"
                )
        if n_labels < 1:
            raise ValueError("the model has no labels")
        if (
            attr_ptr.size == 0
            or attr_ptr[0] != 0
            or attr_ptr[-1] != param_label.size
            or np.any(np.diff(attr_ptr) < 0)
        ):
            raise ValueError(
                f"model.attr_ptr must rise from 0 to {param_label.size} (the "
                f"number of state parameters) without decreasing"
            )
        if param_label.size and (param_label.min() < 0 or param_label.max() >= n_labels):
            raise ValueError(f"model.param_label holds a label index outside 0..{n_labels - 1}")
        return cls(n_labels, attr_ptr, param_label)
