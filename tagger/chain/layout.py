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
from tagger.chain.pairs import (
    PairLayout,
    add_pair_features,
    carry_pair_weights,
    pair_decode_batch,
    pair_marginals_batch,
)
from tagger.chain.scores import batch_state_scores, view_state_scores
from tagger.chain.second_order import Lattice, SecondOrder, checked_csr
from tagger.chain.triples import entry_scores, order2_decode_batch, order2_marginals_batch
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
    """Parameter index of a linear-chain model over a fixed attribute set and label set, with
    label-pair parameters (:mod:`tagger.chain.pairs`) when its features have pair templates."""

    def __init__(
        self,
        n_labels: int,
        attr_ptr: np.ndarray,
        param_label: np.ndarray,
        pair_ptr: np.ndarray | None = None,
        pair_code: np.ndarray | None = None,
        second: SecondOrder | None = None,
    ):
        self.n_labels = int(n_labels)
        self.attr_ptr = np.ascontiguousarray(attr_ptr, dtype=np.int64)
        self.param_label = np.ascontiguousarray(param_label, dtype=np.int32)
        if pair_ptr is None:
            pair_ptr = np.zeros(len(self.attr_ptr), dtype=np.int64)
            pair_code = np.empty(0, dtype=np.int32)
        self.pair_ptr = np.ascontiguousarray(pair_ptr, dtype=np.int64)
        self.pair_code = np.ascontiguousarray(pair_code, dtype=np.int32)
        #: the allowed pairs and triple weights of a second-order model; None for order 1
        self.second = second

    # ---- construction
    @classmethod
    def from_data(
        cls,
        X: Featurized,
        y: np.ndarray,
        n_labels: int,
        n_attrs: int,
        all_pairs: bool = False,
        pair_attrs: np.ndarray | None = None,
        order: int = 1,
        all_label_pairs: bool = False,
    ) -> ChainModel:
        """Parameters for the (attribute, label) pairs seen in ``X`` with gold labels ``y``;
        the attributes marked in ``pair_attrs`` (bool[n_attrs], label-pair templates) get
        parameters for the (attribute, previous label, label) triples seen instead, or with
        ``all_label_pairs`` one for every label pair. With ``order`` 2, the label pairs and
        triples seen (:mod:`tagger.chain.second_order`), or with ``all_label_pairs`` every
        pair and triple."""
        second = None
        if order == 2:
            second = (
                SecondOrder.every(n_labels)
                if all_label_pairs
                else SecondOrder.from_labels(y, X.offsets, n_labels)
            )
        L = n_labels
        y = np.asarray(y, dtype=np.int64)
        counts = np.diff(X.indptr)
        token = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
        attrs = X.attrs.astype(np.int64)
        is_pair = (
            np.zeros(len(attrs), dtype=bool)
            if pair_attrs is None
            else np.asarray(pair_attrs, dtype=bool)[attrs]
        )
        if all_pairs:
            per_attr = np.full(n_attrs, L, dtype=np.int64)
            if pair_attrs is not None:
                per_attr[np.asarray(pair_attrs, dtype=bool)] = 0
            attr_ptr = np.zeros(n_attrs + 1, dtype=np.int64)
            np.cumsum(per_attr, out=attr_ptr[1:])
            param_label = np.tile(np.arange(L, dtype=np.int32), int((per_attr > 0).sum()))
        else:
            keys = np.unique(attrs[~is_pair] * L + y[token[~is_pair]])
            param_label = (keys % L).astype(np.int32)
            attr_ptr = np.zeros(n_attrs + 1, dtype=np.int64)
            np.cumsum(np.bincount(keys // L, minlength=n_attrs), out=attr_ptr[1:])
        if all_label_pairs and pair_attrs is not None:
            per_pair = np.where(np.asarray(pair_attrs, dtype=bool), L * L, 0).astype(np.int64)
            pair_ptr = np.zeros(n_attrs + 1, dtype=np.int64)
            np.cumsum(per_pair, out=pair_ptr[1:])
            pair_code = np.tile(np.arange(L * L, dtype=np.int32), int((per_pair > 0).sum()))
            return cls(L, attr_ptr, param_label, pair_ptr, pair_code, second)
        if not is_pair.any():
            return cls(L, attr_ptr, param_label, second=second)
        # a pair attribute fires from a sentence's second token on
        first = np.zeros(len(counts), dtype=bool)
        first[X.offsets[:-1][X.offsets[:-1] < len(counts)]] = True
        use = is_pair & ~first[token]
        tok = token[use]
        codes = np.unique(attrs[use] * (L * L) + y[tok - 1] * L + y[tok])
        pair_code = (codes % (L * L)).astype(np.int32)
        pair_ptr = np.zeros(n_attrs + 1, dtype=np.int64)
        np.cumsum(np.bincount(codes // (L * L), minlength=n_attrs), out=pair_ptr[1:])
        return cls(L, attr_ptr, param_label, pair_ptr, pair_code, second)

    # ---- layout
    @property
    def n_attrs(self) -> int:
        return len(self.attr_ptr) - 1

    @property
    def n_state(self) -> int:
        return len(self.param_label)

    @property
    def n_pair(self) -> int:
        """Number of label-pair parameters (0 without pair templates)."""
        return len(self.pair_code)

    @property
    def pair_offset(self) -> int:
        """Where the pair block starts in ``w``: after the end weights."""
        L = self.n_labels
        return self.n_state + L * L + 2 * L

    @property
    def order(self) -> int:
        """1 for a first-order chain, 2 when labels depend on the two previous ones."""
        return 1 if self.second is None else 2

    @property
    def n_trip(self) -> int:
        """Number of label-triple weights (0 for order 1)."""
        return 0 if self.second is None else self.second.n_trip

    @property
    def trip_offset(self) -> int:
        """Where the triple block starts in ``w``: after the pair block."""
        return self.pair_offset + self.n_pair

    @property
    def n_weights(self) -> int:
        return self.trip_offset + self.n_trip

    @property
    def lattice(self) -> Lattice:
        """The pair-state lattice of a second-order model (:mod:`tagger.chain.second_order`)."""
        if self.second is None:
            raise ValueError("a first-order model has no pair-state lattice")
        return self.second.lattice(self.trip_offset)

    def trip_weights(self, w: np.ndarray) -> np.ndarray:
        """The label-triple weights of ``w`` (a view; empty for order 1)."""
        return w[self.trip_offset : self.n_weights]

    @property
    def pair_layout(self) -> PairLayout:
        """The pair parameters as the kernels of :mod:`tagger.chain.pairs` take them."""
        return PairLayout(self.pair_ptr, self.pair_code, self.pair_offset, self.n_pair)

    def pair_weights(self, w: np.ndarray) -> np.ndarray:
        """The label-pair parameters of ``w`` (a view; empty without pair templates)."""
        return w[self.pair_offset : self.trip_offset]

    @property
    def layout(self) -> ChainLayout:
        """The layout record the numba kernels of this module take."""
        L = self.n_labels
        start = self.n_state + L * L
        return ChainLayout(
            self.attr_ptr, self.param_label, L, self.n_state, start, start + L, self.n_weights
        )

    @property
    def n_edge(self) -> int:
        """Transition, start and end weights: every model has all of them."""
        return self.pair_offset - self.n_state

    def state_weights(self, w: np.ndarray) -> np.ndarray:
        """The state parameters of ``w`` (or of any array laid out like it; a view)."""
        return w[: self.n_state]

    def edge_weights(self, w: np.ndarray) -> np.ndarray:
        """The transition, start and end weights of ``w`` (a view), in that order."""
        return w[self.n_state : self.pair_offset]

    def boundary_weights(self, w: np.ndarray) -> np.ndarray:
        """The start and end weights of ``w`` (a view)."""
        return w[self.n_state + self.n_labels * self.n_labels : self.pair_offset]

    def edge_indices(self) -> np.ndarray:
        """Indices of the transition, start and end weights."""
        return np.arange(self.n_state, self.pair_offset, dtype=np.int64)

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
        sub = ChainModel(
            self.n_labels,
            attr_ptr,
            self.param_label[keep],
            self.pair_ptr,
            self.pair_code,
            self.second,
        )
        pair = np.arange(self.pair_offset, self.n_weights, dtype=np.int64)  # pairs, triples
        return sub, np.concatenate([np.asarray(keep, dtype=np.int64), self.edge_indices(), pair])

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
        if self.n_pair and other.n_pair:
            idx, values = carry_pair_weights(
                (self.pair_ptr, self.pair_code, self.pair_weights(w), self.n_labels),
                (other.pair_ptr, other.pair_code, other.n_labels),
                np.asarray(attr_map, dtype=np.int64),
                label_map,
            )
            other.pair_weights(out)[idx] = values
        if self.second is not None and other.second is not None:
            idx, values = self.second.carry(self.trip_weights(w), other.second, label_map)
            other.trip_weights(out)[idx] = values
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

    def pair_param_attr(self) -> np.ndarray:
        """Attribute id of every pair parameter."""
        return np.repeat(np.arange(self.n_attrs, dtype=np.int64), np.diff(self.pair_ptr))

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
        batch = FeatureBatch.of(X)
        add_joint_features(self.layout, batch, a, b, full, float(scale), out)
        if self.n_pair:
            add_pair_features(self.pair_layout, batch, a, b, full, self.n_labels, float(scale), out)
        if self.second is not None and b - a > 2:
            L = self.n_labels
            ys = np.asarray(y, dtype=np.int64)
            idx = self.second.trip_index((ys[:-2] * L + ys[1:-1]) * L + ys[2:])
            np.add.at(out, self.trip_offset + idx[idx >= 0], float(scale))
        return out

    @property
    def plain(self) -> bool:
        """A first-order chain with one transition matrix for every position: the kernels of
        :mod:`tagger.inference` take its state scores and transitions. Other models (label-
        pair templates, order 2) decode through :meth:`decode` and :meth:`marginals`."""
        return self.n_pair == 0 and self.second is None

    def decode(
        self, X: Featurized, w: np.ndarray, gold: np.ndarray | None = None, cost: float = 0.0
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(labels int32[N], best scores per sentence, gold scores per sentence or None) of a
        featurized batch, loss-augmented by ``cost`` Hamming cost when ``gold`` is given: what
        tagging, dev scoring and the hinge of ``m3n-owlqn`` run for a model that is not
        :attr:`plain` (its transitions vary by position, or its states are label pairs)."""
        trans = np.ascontiguousarray(self.transitions(w))
        n = X.n_sentences
        out = np.empty(X.n_tokens, dtype=np.int32)
        scores, gold_scores = np.empty(n), np.empty(n)
        g = np.empty(0, np.int32) if gold is None else np.ascontiguousarray(gold, dtype=np.int32)
        w = np.ascontiguousarray(w, dtype=np.float64)
        batch = FeatureBatch.of(X)
        if self.second is None:
            args = (self.layout, self.pair_layout, batch, w, trans, g, float(cost))
            pair_decode_batch(*args, out, scores, gold_scores)
        else:
            lat = self.lattice
            entries = entry_scores(lat, w)
            args2 = (self.layout, self.pair_layout, lat, batch, w, trans, entries, g, float(cost))
            order2_decode_batch(*args2, out, scores, gold_scores)
        return out, scores, (None if gold is None else gold_scores)

    def marginals(self, X: Featurized, w: np.ndarray) -> np.ndarray:
        """(N, L) node marginals of a featurized batch under a model that is not
        :attr:`plain`."""
        node = np.zeros((X.n_tokens, self.n_labels))
        w = np.ascontiguousarray(w, dtype=np.float64)
        trans = np.ascontiguousarray(self.transitions(w))
        batch = FeatureBatch.of(X)
        if self.second is None:
            pair_marginals_batch(self.layout, self.pair_layout, batch, w, trans, node)
        else:
            lat = self.lattice
            args = (self.layout, self.pair_layout, lat, batch, w, trans, entry_scores(lat, w))
            order2_marginals_batch(*args, node)
        return node

    def score(self, X: Featurized, sentence: int, y: np.ndarray, w: np.ndarray) -> float:
        """F(x_s, y; w)."""
        return float(self.joint_features(X, sentence, y) @ w)

    # ---- sparsity
    def compact(self, w: np.ndarray) -> tuple[ChainModel, np.ndarray, np.ndarray]:
        """Drop zero state and pair parameters and attributes left without parameters.

        Returns the new model, its weights, and the boolean mask of attributes kept (to prune
        the featurizer with). Transition, start and end weights are kept as they are.
        """
        n_state = self.n_state
        keep_param = w[:n_state] != 0.0
        pattr = self.state_param_attr()
        per_attr = np.bincount(pattr[keep_param], minlength=self.n_attrs)
        pair_w = self.pair_weights(w)
        keep_pair = pair_w != 0.0
        per_attr_pair = np.bincount(self.pair_param_attr()[keep_pair], minlength=self.n_attrs)
        keep_attr = (per_attr + per_attr_pair) > 0
        attr_ptr = np.zeros(int(keep_attr.sum()) + 1, dtype=np.int64)
        np.cumsum(per_attr[keep_attr], out=attr_ptr[1:])
        pair_ptr = np.zeros(int(keep_attr.sum()) + 1, dtype=np.int64)
        np.cumsum(per_attr_pair[keep_attr], out=pair_ptr[1:])
        trip_w = self.trip_weights(w)
        keep_trip = trip_w != 0.0
        model = ChainModel(
            self.n_labels,
            attr_ptr,
            self.param_label[keep_param],
            pair_ptr,
            self.pair_code[keep_pair],
            None if self.second is None else self.second.kept(keep_trip),
        )
        new_w = np.concatenate(
            [
                w[:n_state][keep_param],
                w[n_state : self.pair_offset],
                pair_w[keep_pair],
                trip_w[keep_trip],
            ]
        )
        return model, new_w, keep_attr

    def to_arrays(self) -> dict[str, np.ndarray]:
        arrays = {"model.attr_ptr": self.attr_ptr, "model.param_label": self.param_label}
        if self.n_pair:  # a model without pair templates is written as before
            arrays["model.pair_ptr"] = self.pair_ptr
            arrays["model.pair_code"] = self.pair_code
        if self.second is not None:
            arrays.update(self.second.to_arrays())
        return arrays

    @classmethod
    def from_arrays(cls, n_labels: int, arrays: dict[str, np.ndarray]) -> ChainModel:
        """The layout saved by :meth:`to_arrays`, checked: the kernels index weights and
        labels through it without bounds checks, so a hand-edited file must not reach them.
        Raises ``ValueError`` naming what is inconsistent."""
        if n_labels < 1:
            raise ValueError("the model has no labels")
        attr_ptr, param_label = checked_csr(arrays, "attr_ptr", "param_label", n_labels, None)
        for first, then in (("pair_ptr", "pair_code"), ("allowed_pairs", "trip_code")):
            if (f"model.{first}" in arrays) != (f"model.{then}" in arrays):
                raise ValueError(f"model.{first} and model.{then} come together")
        second = None
        if "model.allowed_pairs" in arrays:
            second = SecondOrder.from_arrays(n_labels, arrays)
        if "model.pair_ptr" not in arrays:
            return cls(n_labels, attr_ptr, param_label, second=second)
        pair_ptr, pair_code = checked_csr(arrays, "pair_ptr", "pair_code", n_labels**2, attr_ptr)
        return cls(n_labels, attr_ptr, param_label, pair_ptr, pair_code, second)
