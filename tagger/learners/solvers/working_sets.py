"""Working sets of competitor labelings for the LP-based learners (cutting plane, column
generation).

Both LP learners keep, per training sentence i, a set S_i of labelings y and one LP row per
labeling, over the joint-feature difference

    Delta f_i(y) = f(x_i, y_i) - f(x_i, y)          (a sparse vector over the model's weights)

This module holds what they share: the separation oracles (a parallel pass of loss-augmented
or second-best Viterbi over all sentences), the sparse difference rows, the map from weight
coordinates to LP columns (a weight that appears in no row is 0 at the optimum, since every
weight has a positive cost, so only coordinates met in some row become LP columns), and the
de-duplication of labelings.
"""

from __future__ import annotations

import numpy as np

from tagger._config import NUMBA_OPTS, NUMBA_PARALLEL_OPTS
from tagger.chain import (
    FeatureBatch,
    SparseAccumulator,
    add_difference,
    labeling_score,
    loss_augmented_viterbi_into,
    second_best_viterbi_into,
    viterbi_into,
)
from tagger.jit import njit, prange

#: separation modes
LOSS_AUGMENTED = 0  # argmax_y Delta(y_i, y) + F(x_i, y); value H_i = that max - F(x_i, y_i)
SECOND_BEST = 1  # argmax_{y != y_i} F(x_i, y);        value = F(x_i, y_i) - that max


@njit(**NUMBA_PARALLEL_OPTS)
def _separate(state, offsets, trans, gold, mode, pred, value):
    """One oracle call per sentence, in parallel; ``pred`` gets the labelings (stacked)."""
    n = offsets.shape[0] - 1
    for s in prange(n):
        a = offsets[s]
        b = offsets[s + 1]
        if b == a:
            value[s] = 0.0
            continue
        st = state[a:b]
        g = labeling_score(st, trans, gold[a:b])
        if mode == LOSS_AUGMENTED:
            aug = loss_augmented_viterbi_into(st, trans, gold[a:b], 1.0, pred[a:b])
            value[s] = aug - g
        else:
            best = viterbi_into(st, trans, pred[a:b])
            if np.all(pred[a:b] == gold[a:b]):
                best = second_best_viterbi_into(st, trans, gold[a:b], pred[a:b])
            value[s] = g - best


@njit(**NUMBA_PARALLEL_OPTS)
def _local_competitors(state, offsets, trans, gold, best_label, margin):
    """For every token i: the best other label of that token with the rest of the sentence
    kept gold (``best_label[i]``) and the margin of the gold labeling over that labeling
    (``margin[i]``, +inf for a one-label model)."""
    n = offsets.shape[0] - 1
    L = trans.shape[0]
    for s in prange(n):
        a = offsets[s]
        b = offsets[s + 1]
        for i in range(a, b):
            t = i - a
            g = gold[i]
            best = -np.inf
            arg = -1
            for lab in range(L):
                if lab == g:
                    continue
                v = state[t, lab]
                if i > a:
                    v += trans[gold[i - 1], lab]
                if i + 1 < b:
                    v += trans[lab, gold[i + 1]]
                if v > best:
                    best = v
                    arg = lab
            base = state[t, g]
            if i > a:
                base += trans[gold[i - 1], g]
            if i + 1 < b:
                base += trans[g, gold[i + 1]]
            best_label[i] = arg
            margin[i] = base - best if arg >= 0 else np.inf


@njit(**NUMBA_OPTS)
def _difference_rows(layout, X, gold, pred, sents, change, rows, loss, acc):
    """Rows f(x_s, gold) - f(x_s, pred) for s in ``sents`` (CSR into row_ptr/idx/val) and
    their Hamming losses. Positions where the labelings agree cancel and are skipped.
    ``change`` (token, label) pairs, one per row, alter ``pred`` for that row alone (token -1:
    none). ``rows`` is the CSR triple (row_ptr, idx, val) to fill; returns its number of
    entries."""
    row_ptr, idx, val = rows
    change_token, change_label = change
    offsets = X.offsets
    dense, mark, touched = acc
    nz = 0
    row_ptr[0] = 0
    for r in range(sents.shape[0]):
        s = sents[r]
        a = offsets[s]
        b = offsets[s + 1]
        t = change_token[r]
        kept = 0
        if t >= 0:
            kept = pred[t]
            pred[t] = change_label[r]
        hamming = 0
        for i in range(a, b):
            if pred[i] != gold[i]:
                hamming += 1
        m = add_difference(layout, X, a, b, gold, pred, 1.0, acc, 0)
        for k in range(m):
            c = touched[k]
            if dense[c] != 0.0:
                idx[nz] = c
                val[nz] = dense[c]
                nz += 1
            dense[c] = 0.0
            mark[c] = False
        row_ptr[r + 1] = nz
        loss[r] = hamming
        if t >= 0:
            pred[t] = kept
    return nz


class WorkingSets:
    """Rows of the LP over the working sets, with weight coordinates mapped to LP columns.

    ``sentence[r]``, ``loss[r]`` (Hamming loss of the row's labeling) and the row's sparse
    difference vector (``ptr``/``coord``/``val`` in weight coordinates; ``col`` the same entries
    as LP column numbers) describe row r. ``coords`` lists the weight coordinate of each column.
    """

    def __init__(self, problem):
        self.problem = problem
        model, X = problem.model, problem.X
        self.n_weights = model.n_weights
        self.vals = np.ascontiguousarray(X.vals, dtype=np.float64)
        self.gold = np.ascontiguousarray(problem.y, dtype=np.int32)
        self.seen: list[set[bytes]] = [set() for _ in range(X.n_sentences)]
        self.col_of = np.full(self.n_weights, -1, dtype=np.int64)
        self.coords = np.empty(0, dtype=np.int64)
        self.sentence = np.empty(0, dtype=np.int64)
        self.loss = np.empty(0, dtype=np.float64)
        self.ptr = np.zeros(1, dtype=np.int64)
        self.coord = np.empty(0, dtype=np.int64)
        self.col = np.empty(0, dtype=np.int64)
        self.val = np.empty(0, dtype=np.float64)
        self._acc = SparseAccumulator.new(self.n_weights)
        self.pred = np.empty(X.n_tokens, dtype=np.int32)
        self._gold_copy = self.gold.copy()
        self.value = np.empty(X.n_sentences)
        # upper bound on a row's entries: two per active attribute and four per position
        per_token = 2 * np.diff(X.indptr) + 4
        csum = np.concatenate([[0], np.cumsum(per_token)])
        self._row_bound = csum[X.offsets[1:]] - csum[X.offsets[:-1]] + 4

    @property
    def n_rows(self) -> int:
        return len(self.sentence)

    @property
    def n_cols(self) -> int:
        return len(self.coords)

    def separate(self, w: np.ndarray, mode: int) -> np.ndarray:
        """Run the oracle at ``w``; fills ``self.pred`` and returns the per-sentence values."""
        model, X = self.problem.model, self.problem.X
        state = model.state_scores(X, w)
        trans = np.ascontiguousarray(model.transitions(w))
        _separate(state, X.offsets, trans, self.gold, mode, self.pred, self.value)
        return self.value

    def local_violations(
        self, w: np.ndarray, threshold: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Tokens whose single-label change (the best other label of the token, the rest of
        the sentence gold) is a labeling with margin below ``threshold`` of its sentence (its
        row is violated), and that label: (token indices, labels)."""
        model, X = self.problem.model, self.problem.X
        state = model.state_scores(X, w)
        trans = np.ascontiguousarray(model.transitions(w))
        label = np.empty(X.n_tokens, dtype=np.int32)
        margin = np.empty(X.n_tokens)
        _local_competitors(state, X.offsets, trans, self.gold, label, margin)
        sent_of = np.repeat(np.arange(X.n_sentences), np.diff(X.offsets))
        hit = np.flatnonzero(margin < threshold[sent_of])
        return hit, label[hit]

    def add_local(self, tokens: np.ndarray, labels: np.ndarray) -> tuple[int, int]:
        """Add the rows of the gold labelings with one token changed (``tokens[k]`` takes
        ``labels[k]``), skipping labelings already in their sets. Returns (rows, columns)
        added."""
        sents = np.searchsorted(self.problem.X.offsets, tokens, side="right") - 1
        # a copy of the gold labeling that the row builder alters one token at a time
        return self._add(sents, self._gold_copy, tokens, labels)

    def add(self, sents: np.ndarray) -> tuple[int, int]:
        """Add the rows of ``self.pred`` for the given sentences (skipping labelings already in
        their sets). Returns (rows added, columns added)."""
        none = np.full(len(sents), -1, dtype=np.int64)
        return self._add(np.asarray(sents, dtype=np.int64), self.pred, none, none.astype(np.int32))

    def _add(self, sents, pred, tokens, labels) -> tuple[int, int]:
        """Rows of ``pred`` (with ``tokens[k]`` relabeled ``labels[k]`` for row k alone,
        token -1: none) for the sentences ``sents``; labelings already in a set are skipped."""
        X = self.problem.X
        fresh = []
        for k, s in enumerate(sents):
            a, b = X.offsets[s], X.offsets[s + 1]
            y = pred[a:b]
            if tokens[k] >= 0:
                y = y.copy()
                y[tokens[k] - a] = labels[k]
            key = y.tobytes()
            if key not in self.seen[s]:
                self.seen[s].add(key)
                fresh.append(k)
        if not fresh:
            return 0, 0
        fresh = np.asarray(fresh, dtype=np.int64)
        tokens = np.ascontiguousarray(tokens[fresh], dtype=np.int64)
        labels = np.ascontiguousarray(labels[fresh], dtype=np.int32)
        sents = np.ascontiguousarray(sents[fresh], dtype=np.int64)
        cap = int(self._row_bound[sents].sum())
        row_ptr = np.empty(len(sents) + 1, dtype=np.int64)
        idx = np.empty(cap, dtype=np.int64)
        val = np.empty(cap, dtype=np.float64)
        loss = np.empty(len(sents), dtype=np.float64)
        model = self.problem.model
        batch = FeatureBatch(X.indptr, X.attrs, self.vals, X.offsets)
        nz = _difference_rows(
            model.layout,
            batch,
            self.gold,
            pred,
            sents,
            (tokens, labels),
            (row_ptr, idx, val),
            loss,
            self._acc,
        )
        idx, val = idx[:nz], val[:nz]
        new = np.unique(idx[self.col_of[idx] < 0])
        self.col_of[new] = np.arange(self.n_cols, self.n_cols + len(new))
        self.coords = np.concatenate([self.coords, new])
        self.ptr = np.concatenate([self.ptr, self.ptr[-1] + row_ptr[1:]])
        self.coord = np.concatenate([self.coord, idx])
        self.col = np.concatenate([self.col, self.col_of[idx]])
        self.val = np.concatenate([self.val, val])
        self.sentence = np.concatenate([self.sentence, sents])
        self.loss = np.concatenate([self.loss, loss])
        return len(sents), len(new)

    def add_columns(self, coords: np.ndarray) -> int:
        """Make the weight coordinates ``coords`` LP columns even where no row holds them yet
        (a trust region around a start point must bound every weight the start sets).
        Returns the number of columns added."""
        coords = np.asarray(coords, dtype=np.int64)
        new = np.unique(coords[self.col_of[coords] < 0])
        self.col_of[new] = np.arange(self.n_cols, self.n_cols + len(new))
        self.coords = np.concatenate([self.coords, new])
        return len(new)

    def entries(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The entries of rows ``ids`` (indices into ``coord``, ``col`` and ``val``), row
        after row, and each row's count."""
        starts, ends = self.ptr[ids], self.ptr[ids + 1]
        counts = ends - starts
        return np.repeat(ends - np.cumsum(counts), counts) + np.arange(counts.sum()), counts

    def violated_beyond(
        self, ids: np.ndarray, w: np.ndarray, rhs: np.ndarray, xi: np.ndarray, eps: float
    ) -> np.ndarray:
        """The rows among ``ids`` (right-hand sides ``rhs``) that ``w`` violates by more than
        ``eps`` beyond their sentence's slack in ``xi``."""
        entries, counts = self.entries(ids)
        dot = np.bincount(
            np.repeat(np.arange(len(ids)), counts),
            weights=self.val[entries] * w[self.coord[entries]],
            minlength=len(ids),
        )
        return ids[rhs - dot > xi[self.sentence[ids]] + eps]

    def nbytes(self) -> int:
        return sum(
            a.nbytes for a in (self.coord, self.col, self.val, self.ptr, self.sentence, self.loss)
        )
