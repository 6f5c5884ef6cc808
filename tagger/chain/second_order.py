"""Second-order chains: each label depends on the two labels before it.

A model of order 2 (``order = 2`` in the feature file) adds to the first-order score
(:mod:`tagger.chain.layout`, with its label-pair features, :mod:`tagger.chain.pairs`) a weight
per label triple::

    F(x, y; w) = (first-order score) + sum_{t>=2} w_trip[y_{t-2}, y_{t-1}, y_t]

Inference runs over label-pair states (:mod:`tagger.inference.second_order`), restricted to
what the training data allows, so that tagging stays fast:

- the **allowed pairs** are the (previous label, label) pairs seen in training; a labeling
  with another pair anywhere is not considered (its score is -inf);
- every triple (a, b, c) whose pairs (a, b) and (b, c) are allowed is allowed; those seen in
  training have a weight (``trip_code``, sorted codes (a L + b) L + c), the others score 0.
  L1 decides which triple weights stay non-zero; a zero one is dropped from the model file.

The triple weights sit after the pair block in ``w``: ``[state | transitions | start | end |
pair | triple]``. :class:`SecondOrder` holds the structure and builds the pair-state lattice
the kernels take (:class:`Lattice`): pair states, their predecessors (one entry per allowed
triple) and, per entry, the index of its triple weight or -1.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: the most allowed triples (lattice entries) a second-order model may have: each costs a
#: step per token in every decode, and its scores and marginals a float each per sentence
MAX_ENTRIES = 2_000_000


class Lattice(NamedTuple):
    """The pair-state lattice of a second-order model, as the kernels take it."""

    pair_a: np.ndarray  # int32[P]: y_{t-1} of each pair state
    pair_b: np.ndarray  # int32[P]: y_t of each pair state
    pair_id: np.ndarray  # int32[L, L]: the state of (a, b), -1 when not allowed
    pred_ptr: np.ndarray  # int64[P + 1]: the predecessors of state q are entries ptr[q]:ptr[q+1]
    pred_src: np.ndarray  # int32[K]: each entry's predecessor state (a, b) of q = (b, c)
    pred_trip: np.ndarray  # int64[K]: each entry's triple weight (index in the block), or -1
    trip_offset: int  # where the triple block starts in w


class SecondOrder:
    """The second-order part of a model over ``n_labels`` labels: its allowed pairs (sorted
    codes a L + b) and the triples that carry a weight (sorted codes (a L + b) L + c)."""

    def __init__(self, n_labels: int, allowed: np.ndarray, trip_code: np.ndarray):
        self.n_labels = int(n_labels)
        self.allowed = np.ascontiguousarray(allowed, dtype=np.int64)
        self.trip_code = np.ascontiguousarray(trip_code, dtype=np.int64)
        self._lattice: dict[int, Lattice] = {}

    @classmethod
    def from_labels(cls, y: np.ndarray, offsets: np.ndarray, n_labels: int) -> SecondOrder:
        """The pairs and triples seen in the labeled sentences (labels ``y`` by token)."""
        L = n_labels
        y = np.asarray(y, dtype=np.int64)
        n = len(y)
        starts = np.zeros(n, dtype=bool)
        starts[offsets[:-1][offsets[:-1] < n]] = True
        second = np.flatnonzero(~starts[1:]) + 1 if n > 1 else np.empty(0, np.int64)
        allowed = np.unique(y[second - 1] * L + y[second])
        third = second[second >= 2]
        third = third[~starts[third - 1]]
        trips = np.unique((y[third - 2] * L + y[third - 1]) * L + y[third])
        return cls(L, allowed, trips)

    @classmethod
    def every(cls, n_labels: int) -> SecondOrder:
        """Every label pair allowed and every triple with a weight: the structure of a model
        trained with unlabeled data, whose imputed labelings may put any labels side by side
        (as ``all_label_pairs`` gives label-pair templates a weight for every pair)."""
        L = int(n_labels)
        return cls(L, np.arange(L * L, dtype=np.int64), np.arange(L**3, dtype=np.int64))

    @property
    def n_trip(self) -> int:
        return len(self.trip_code)

    @property
    def n_entries(self) -> int:
        """Number of allowed triples: for each label b, (pairs ending in b) x (pairs from b)."""
        L = self.n_labels
        ending = np.bincount(self.allowed % L, minlength=L)
        starting = np.bincount(self.allowed // L, minlength=L)
        return int(ending @ starting)

    def check_size(self) -> None:
        """``ValueError`` when the lattice would exceed :data:`MAX_ENTRIES`."""
        if self.n_entries > MAX_ENTRIES:
            raise ValueError(
                f"a second-order chain over these {self.n_labels} labels allows "
                f"{self.n_entries:,} label triples ({len(self.allowed):,} label pairs seen), "
                f"more than the {MAX_ENTRIES:,} its decoder holds; use order = 1 (label-pair "
                f"templates add pair features to it) or fewer labels"
            )

    def lattice(self, trip_offset: int) -> Lattice:
        """The pair-state lattice (built once per offset)."""
        if trip_offset not in self._lattice:
            self._lattice[trip_offset] = self._build(trip_offset)
        return self._lattice[trip_offset]

    def _build(self, trip_offset: int) -> Lattice:
        L = self.n_labels
        pair_a = (self.allowed // L).astype(np.int32)
        pair_b = (self.allowed % L).astype(np.int32)
        pair_id = np.full((L, L), -1, dtype=np.int32)
        pair_id[pair_a, pair_b] = np.arange(len(self.allowed), dtype=np.int32)
        # the predecessors of q = (b, c): every allowed (a, b), in state order
        ending_in = [np.flatnonzero(pair_b == b).astype(np.int32) for b in range(L)]
        srcs = [ending_in[b] for b in pair_a]  # q's first label is b
        counts = np.array([len(s) for s in srcs], dtype=np.int64)
        pred_ptr = np.zeros(len(self.allowed) + 1, dtype=np.int64)
        np.cumsum(counts, out=pred_ptr[1:])
        pred_src = np.concatenate(srcs).astype(np.int32) if srcs else np.empty(0, np.int32)
        q_of = np.repeat(np.arange(len(self.allowed)), counts)
        codes = (pair_a[pred_src].astype(np.int64) * L + pair_a[q_of]) * L + pair_b[q_of]
        pred_trip = self.trip_index(codes)
        return Lattice(pair_a, pair_b, pair_id, pred_ptr, pred_src, pred_trip, trip_offset)

    def trip_index(self, codes: np.ndarray) -> np.ndarray:
        """The index of each triple code's weight, -1 for a triple without one."""
        codes = np.asarray(codes, dtype=np.int64)
        if not self.n_trip:
            return np.full(codes.shape, -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.trip_code, codes), self.n_trip - 1)
        return np.where(self.trip_code[at] == codes, at, -1)

    def allows(self, y: np.ndarray) -> bool:
        """Whether every consecutive pair of the labeling ``y`` is allowed."""
        L = self.n_labels
        y = np.asarray(y, dtype=np.int64)
        if len(y) < 2:
            return True
        codes = y[:-1] * L + y[1:]
        at = np.minimum(np.searchsorted(self.allowed, codes), len(self.allowed) - 1)
        return bool(len(self.allowed)) and bool(np.all(self.allowed[at] == codes))

    def kept(self, keep: np.ndarray) -> SecondOrder:
        """The same allowed pairs with only the triple weights marked in ``keep``."""
        return SecondOrder(self.n_labels, self.allowed, self.trip_code[keep])

    def carry(
        self, w_trip: np.ndarray, other: SecondOrder, label_map: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(indices in ``other``'s triple block, weights) of the non-zero triple weights
        ``w_trip`` relabelled by ``label_map`` (-1: ``other`` lacks the label)."""
        L, Lo = self.n_labels, other.n_labels
        p = np.flatnonzero(w_trip)
        code = self.trip_code[p]
        a, b, c = (label_map[code // (L * L)], label_map[(code // L) % L], label_map[code % L])
        ok = (a >= 0) & (b >= 0) & (c >= 0)
        idx = other.trip_index((a[ok] * Lo + b[ok]) * Lo + c[ok])
        hit = idx >= 0
        return idx[hit], w_trip[p[ok][hit]]

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"model.allowed_pairs": self.allowed, "model.trip_code": self.trip_code}

    @classmethod
    def from_arrays(cls, n_labels: int, arrays: dict[str, np.ndarray]) -> SecondOrder:
        """The structure saved by :meth:`to_arrays`, checked (the kernels index through it
        without bounds checks). Raises ``ValueError`` naming what is inconsistent."""
        L = n_labels
        allowed, trips = arrays["model.allowed_pairs"], arrays["model.trip_code"]
        for name, arr, top in (("allowed_pairs", allowed, L * L), ("trip_code", trips, L**3)):
            if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
                raise ValueError(
                    f"model.{name} must be a 1-D integer array, not {arr.dtype} of shape "
                    f"{arr.shape}"
                )
            if arr.size and (arr.min() < 0 or arr.max() >= top or np.any(np.diff(arr) <= 0)):
                raise ValueError(f"model.{name} must rise strictly within 0..{top - 1}")
        model = cls(L, allowed, trips)
        if trips.size and not all(
            model.allows(np.array([t // (L * L), (t // L) % L, t % L])) for t in trips
        ):
            raise ValueError("model.trip_code holds a triple whose label pairs are not allowed")
        return model


def checked_csr(arrays: dict, ptr_name: str, code_name: str, n_codes: int, like) -> tuple:
    """``model.<ptr_name>`` and ``model.<code_name>`` of a model file, checked as a CSR by
    attribute (one entry per attribute and one more, ``like``'s size when given, rising from 0
    to the number of codes) whose codes lie in 0..n_codes-1; ``ValueError`` otherwise. The
    kernels index weights through them without bounds checks."""
    ptr, code = arrays[f"model.{ptr_name}"], arrays[f"model.{code_name}"]
    for name, arr in ((ptr_name, ptr), (code_name, code)):
        if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(
                f"model.{name} must be a 1-D integer array, not {arr.dtype} of shape {arr.shape}"
            )
    if (
        ptr.size == 0
        or (like is not None and ptr.size != like.size)
        or ptr[0] != 0
        or ptr[-1] != code.size
        or np.any(np.diff(ptr) < 0)
    ):
        raise ValueError(
            f"model.{ptr_name} must have one entry per attribute and one more, rising from 0 "
            f"to {code.size} (the size of model.{code_name}) without decreasing"
        )
    if code.size and (code.min() < 0 or code.max() >= n_codes):
        raise ValueError(f"model.{code_name} holds a value outside 0..{n_codes - 1}")
    return ptr, code
