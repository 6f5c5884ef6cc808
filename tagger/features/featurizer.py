"""Sentences to integer attributes: the :class:`Featurizer` fitted on training data, and the
batch types it produces (:class:`Featurized`, CSR attribute lists; :class:`EncodedViews`,
per-view ids for fused scoring).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from tagger.errors import FeatureSpecError
from tagger.features.hash_table import (
    compact_slots,
    instantiate_attributes,
    table_for,
    template_keys,
)
from tagger.features.spec import N_SPECIAL, UNKNOWN, FeatureSpec
from tagger.features.word_clusters import WordClusters

# --------------------------------------------------------------------------------------
# featurized data


#: new strings remembered per column while tagging before the cache is trimmed back
TYPE_CACHE_LIMIT = 1_000_000

_NO_VALUES = np.empty(0, dtype=np.float64)
_NO_VALUES.setflags(write=False)


@dataclass
class Featurized:
    """Attributes of a batch of sentences in CSR form.

    Token ``i`` (over all sentences, stacked) has attributes ``attrs[indptr[i]:indptr[i+1]]``
    with values ``values[indptr[i]:indptr[i+1]]``. Templates produce indicators, for which
    ``values`` is None (every value 1); real-valued inputs (the synthetic benchmark data) set it.
    Sentence ``s`` spans tokens ``offsets[s]:offsets[s+1]``.

    Kernels take :attr:`vals`: the values, or an empty array meaning "all ones", and read a
    value as ``vals[j] if vals.shape[0] > 0 else 1.0``.
    """

    indptr: np.ndarray  # int64[N+1]
    attrs: np.ndarray  # int32[nnz]
    offsets: np.ndarray  # int64[n+1]
    values: np.ndarray | None = None  # float64[nnz] or None (indicators)

    @property
    def vals(self) -> np.ndarray:
        """The values as a float64 array for kernels; empty for indicator features."""
        if self.values is None:
            return _NO_VALUES
        return self.values

    @property
    def n_tokens(self) -> int:
        return int(self.offsets[-1])

    @property
    def n_sentences(self) -> int:
        return len(self.offsets) - 1

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def sentences(self, start: int, stop: int) -> Featurized:
        """Sentences start..stop-1 on their own (copies)."""
        t0, t1 = int(self.offsets[start]), int(self.offsets[stop])
        j0, j1 = int(self.indptr[t0]), int(self.indptr[t1])
        values = None if self.values is None else self.values[j0:j1].copy()
        return Featurized(
            self.indptr[t0 : t1 + 1] - j0,
            self.attrs[j0:j1].copy(),
            self.offsets[start : stop + 1] - t0,
            values,
        )


@dataclass
class EncodedViews:
    """Sentences as view ids, with the template layout and the attribute hash table."""

    view_ids: np.ndarray  # (n_views, N) int64
    offsets: np.ndarray  # int64[n+1]
    t_ptr: np.ndarray
    t_view: np.ndarray
    t_off: np.ndarray
    t_mult: np.ndarray
    table_keys: np.ndarray
    table_vals: np.ndarray

    @property
    def n_tokens(self) -> int:
        return int(self.offsets[-1])

    @property
    def n_sentences(self) -> int:
        return len(self.offsets) - 1


# --------------------------------------------------------------------------------------
# the featurizer


class Featurizer:
    """Turns sentences into integer attribute ids according to a :class:`FeatureSpec`."""

    def __init__(self, spec: FeatureSpec):
        self.spec = spec
        # learned state
        self.vocabs_: list[dict[str, int]] | None = None  # per view: value -> id (>= 3)
        self.attr_keys_: np.ndarray | None = None  # int64[n_attrs], sorted
        self.t_mult_: np.ndarray | None = None
        self._table: tuple[np.ndarray, np.ndarray] | None = None
        self._type_cache: list[_TypeCache | None] = []

    # ---- template layout
    def _template_arrays(self):
        t_ptr = [0]
        t_view, t_off = [], []
        for comps in self.spec.templates:
            for v, o in comps:
                t_view.append(v)
                t_off.append(o)
            t_ptr.append(len(t_view))
        return (
            np.asarray(t_ptr, np.int64),
            np.asarray(t_view, np.int64),
            np.asarray(t_off, np.int64),
        )

    def _compute_multipliers(self) -> np.ndarray:
        """Mixed-radix multipliers so that every template instance has an exact int64 key."""
        n_tmpl = len(self.spec.templates)
        mults = []
        for k, comps in enumerate(self.spec.templates):
            m = n_tmpl
            for v, _ in comps:
                mults.append(m)
                m *= len(self.vocabs_[v]) + N_SPECIAL
            if m >= 2**62:
                raise FeatureSpecError(
                    f"template {self.spec.template_names[k]!r} conjoins views whose vocabularies "
                    f"are too large for exact 64-bit attribute keys ({m:.3g} combinations); "
                    f"use fewer components or coarser views (lowercase, shape, prefixes)"
                )
        return np.asarray(mults, np.int64)

    # ---- view ids with a per-column type cache
    def _views_by_column(self) -> list[list[int]]:
        by_col: list[list[int]] = [[] for _ in self.spec.columns]
        for vi, view in enumerate(self.spec.views):
            by_col[view.column].append(vi)
        return by_col

    def _view_ids(self, sentences: Sequence, offsets: np.ndarray, grow: bool) -> np.ndarray:
        """(n_views, N) int64 matrix of view ids. With ``grow`` the vocabularies take new values."""
        n_views = len(self.spec.views)
        n_tok = int(offsets[-1])
        out = np.empty((n_views, n_tok), dtype=np.int64)
        n_cols = self.spec.n_columns
        for c, cache in enumerate(self._type_cache):
            if cache is None:
                continue
            if not grow and len(cache) > self._base_types[c] + TYPE_CACHE_LIMIT:
                cache.trim(self._base_types[c])
            cache.grow = grow
            try:
                # one C-level dict lookup per token; token functions run only for new strings
                tids = np.fromiter(
                    map(cache.__getitem__, chain.from_iterable([s.columns[c] for s in sentences])),
                    dtype=np.int64,
                    count=n_tok,
                )
            except IndexError:
                raise FeatureSpecError(
                    f"the feature specification reads {n_cols} input column(s) "
                    f"({', '.join(self.spec.columns)}) but a sentence has only "
                    f"{min(len(s.columns) for s in sentences)}"
                ) from None
            except ValueError:
                raise FeatureSpecError("a sentence has columns of different lengths") from None
            table = cache.table()
            for slot, vi in enumerate(cache.views):
                np.take(table[slot], tids, out=out[vi])
        return out

    def _reset_type_cache(self):
        by_col = self._views_by_column()
        self._base_types = [0] * len(by_col)
        self._type_cache = [
            _TypeCache(
                [self.spec.views[vi] for vi in views], [self.vocabs_[vi] for vi in views], views
            )
            if views
            else None
            for views in by_col
        ]

    # ---- fitting
    def fit(self, sentences: Sequence) -> Featurizer:
        """Build view vocabularies and the attribute set from training sentences."""
        self.begin_fit()
        return self.end_fit([self.grow_views(sentences)])

    # A fit in parts, for text read once in batches and not kept: begin_fit(), then
    # grow_views(batch) for every batch in order (the vocabularies grow; keep what it returns,
    # in memory or on disk), then end_fit(all of those). The attribute set and every id are
    # those of fit() over the batches joined.
    def begin_fit(self) -> None:
        """Start a fit in parts: empty vocabularies."""
        self.vocabs_ = [dict() for _ in self.spec.views]
        self._reset_type_cache()

    def grow_views(self, sentences: Sequence) -> tuple[np.ndarray, np.ndarray]:
        """(view ids, offsets) of a batch of a fit in parts, the vocabularies grown by it."""
        offsets = _offsets(sentences)
        return self._view_ids(sentences, offsets, grow=True), offsets

    def end_fit(self, parts) -> Featurizer:
        """The attribute set of a fit in parts from every batch's (view ids, offsets)."""
        self.t_mult_ = self._compute_multipliers()
        t_ptr, t_view, t_off = self._template_arrays()
        found, weight = [], []
        for view_ids, offsets in parts:
            keys = np.empty((offsets[-1], len(self.spec.templates)), dtype=np.int64)
            template_keys(view_ids, offsets, t_ptr, t_view, t_off, self.t_mult_, keys)
            flat = keys.ravel()
            uniq, counts = np.unique(flat[flat >= 0], return_counts=True)
            found.append(uniq)
            weight.append(counts)
        uniq, inverse = np.unique(np.concatenate(found), return_inverse=True)
        counts = np.bincount(inverse, weights=np.concatenate(weight), minlength=len(uniq))
        if self.spec.min_count > 1:
            uniq = uniq[counts >= self.spec.min_count]
        self.attr_keys_ = uniq
        self._table = table_for(uniq)
        # the tag-time cache starts from the training types (their view ids are final) and
        # never forgets them
        self._base_types = [0 if c is None else len(c) for c in self._type_cache]
        return self

    @property
    def n_attributes(self) -> int:
        return 0 if self.attr_keys_ is None else len(self.attr_keys_)

    def pair_attributes(self) -> np.ndarray:
        """bool[n_attributes]: which attributes come from label-pair templates
        (``pair_templates``; an attribute's key is its template index modulo the number of
        templates)."""
        if self.attr_keys_ is None:
            raise RuntimeError("Featurizer.pair_attributes called before fit")
        return (self.attr_keys_ % len(self.spec.templates)) >= self.spec.pair_from

    def encode(self, sentences: Sequence) -> EncodedViews:
        """View ids of the sentences plus everything a kernel needs to find their attributes
        without materialising them (for scoring fused with attribute lookup)."""
        if self.attr_keys_ is None:
            raise RuntimeError("Featurizer.encode called before fit")
        offsets = _offsets(sentences)
        view_ids = self._view_ids(sentences, offsets, grow=False)
        t_ptr, t_view, t_off = self._template_arrays()
        tk, tv = self._table
        return EncodedViews(view_ids, offsets, t_ptr, t_view, t_off, self.t_mult_, tk, tv)

    def transform(self, sentences: Sequence) -> Featurized:
        if self.attr_keys_ is None:
            raise RuntimeError("Featurizer.transform called before fit")
        offsets = _offsets(sentences)
        return self.transform_views(self._view_ids(sentences, offsets, grow=False), offsets)

    def transform_views(self, view_ids: np.ndarray, offsets: np.ndarray) -> Featurized:
        """:meth:`transform` of sentences whose view ids are known (:meth:`grow_views`)."""
        t_ptr, t_view, t_off = self._template_arrays()
        n_tok = int(offsets[-1])
        slots = np.empty((n_tok, len(self.spec.templates)), dtype=np.int32)
        tk, tv = self._table
        instantiate_attributes(view_ids, offsets, t_ptr, t_view, t_off, self.t_mult_, tk, tv, slots)
        indptr = np.empty(n_tok + 1, dtype=np.int64)
        attrs = np.empty(slots.size, dtype=np.int32)
        nnz = compact_slots(slots, indptr, attrs)
        return Featurized(indptr, attrs[:nnz].copy(), offsets)

    def prune(self, keep: np.ndarray) -> np.ndarray:
        """Keep only the attributes where ``keep`` is true; returns old id -> new id (-1 gone)."""
        keep = np.asarray(keep, dtype=bool)
        new_id = np.full(len(keep), -1, dtype=np.int32)
        new_id[keep] = np.arange(int(keep.sum()), dtype=np.int32)
        self.attr_keys_ = self.attr_keys_[keep]
        self._table = table_for(self.attr_keys_)
        return new_id

    # ---- naming (inspection, python-crfsuite input)
    def attribute_name(self, attr_id: int) -> str:
        key = int(self.attr_keys_[attr_id])
        n_tmpl = len(self.spec.templates)
        k = key % n_tmpl
        rest = key // n_tmpl
        comps = self.spec.templates[k]
        if not comps:
            return "bias"
        inv = self._inverse_vocabs()
        values = []
        for v, _ in comps:
            radix = len(self.vocabs_[v]) + N_SPECIAL
            values.append(inv[v][rest % radix])
            rest //= radix
        return f"{self.spec.template_names[k]}={'|'.join(values)}"

    def _inverse_vocabs(self) -> list[list[str]]:
        if getattr(self, "_inv", None) is None:
            inv = []
            for vocab in self.vocabs_:
                names = ["__UNK__", "__BOS__", "__EOS__"] + [""] * len(vocab)
                for val, i in vocab.items():
                    names[i] = val
                inv.append(names)
            self._inv = inv
        return self._inv

    def string_attributes(self, sentence) -> list[list[str]]:
        """The same attributes as strings, token by token (slow; for python-crfsuite and tests).

        Unlike :meth:`transform` this does not need a fitted featurizer and keeps attributes
        that were never seen in training: exactly what a string-based tagger would receive.
        """
        n = len(sentence)
        per_view = []
        for view in self.spec.views:
            col = sentence.columns[view.column]
            per_view.append([view.fn(tok) for tok in col])
        out = []
        for i in range(n):
            feats = []
            for name, comps in zip(self.spec.template_names, self.spec.templates):
                if not comps:
                    feats.append("bias")
                    continue
                vals = []
                for v, o in comps:
                    p = i + o
                    vals.append("__BOS__" if p < 0 else "__EOS__" if p >= n else per_view[v][p])
                feats.append(f"{name}={'|'.join(vals)}")
            out.append(feats)
        return out

    # ---- persistence (arrays + JSON-able meta; no pickle)
    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        from tagger.model.files import pack_strings

        arrays: dict[str, np.ndarray] = {"feat.attr_keys": self.attr_keys_}
        sizes = []
        for vi, vocab in enumerate(self.vocabs_):
            values = sorted(vocab, key=vocab.__getitem__)
            data, offs = pack_strings(values)
            arrays[f"feat.vocab{vi}.data"] = data
            arrays[f"feat.vocab{vi}.offsets"] = offs
            sizes.append(len(values))
        meta = {"spec": self.spec.source, "name": self.spec.name, "vocab_sizes": sizes}
        names = sorted(self.spec.cluster_tables)
        for k, name in enumerate(names):  # the word clusters go in the file: tagging reads no other
            table = self.spec.cluster_tables[name]
            for part in ("words", "bits"):
                data, offs = pack_strings(list(getattr(table, part)))
                arrays[f"feat.clusters{k}.{part}.data"] = data
                arrays[f"feat.clusters{k}.{part}.offsets"] = offs
        if names:
            meta["clusters"] = names
        return meta, arrays

    @classmethod
    def from_arrays(cls, meta: dict, arrays: dict[str, np.ndarray]) -> Featurizer:
        from tagger.model.files import unpack_strings

        def strings(key: str) -> tuple[str, ...]:
            """The strings packed in the arrays ``KEY.data`` and ``KEY.offsets``."""
            for part in ("data", "offsets"):
                if f"{key}.{part}" not in arrays:
                    raise ValueError(f"the file has no array {key}.{part}")
            return tuple(unpack_strings(arrays[f"{key}.data"], arrays[f"{key}.offsets"]))

        tables = {}
        names = meta.get("clusters", [])
        if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
            raise ValueError("features.clusters must be a list of file names")
        for k, name in enumerate(names):
            words, bits = strings(f"feat.clusters{k}.words"), strings(f"feat.clusters{k}.bits")
            if len(words) != len(bits):
                raise ValueError(f"feat.clusters{k} has {len(words)} words but {len(bits)} paths")
            tables[name] = WordClusters(words, bits, name)
        spec = FeatureSpec.from_dict(
            meta["spec"], name=meta.get("name", "custom"), clusters=tables, read_cluster_files=False
        )
        self = cls(spec)
        self.vocabs_ = [
            {v: i + N_SPECIAL for i, v in enumerate(strings(f"feat.vocab{vi}"))}
            for vi in range(len(spec.views))
        ]
        if [len(v) for v in self.vocabs_] != list(meta["vocab_sizes"]):
            raise ValueError("vocabulary sizes do not match the header")
        keys = arrays["feat.attr_keys"]
        if keys.ndim != 1 or not np.issubdtype(keys.dtype, np.integer):
            raise ValueError(
                f"feat.attr_keys must be a 1-D integer array, not {keys.dtype} of "
                f"shape {keys.shape}"
            )
        # the hash table takes -1 for an empty slot and gives each key one id
        if keys.size and (keys[0] < 0 or np.any(np.diff(keys) <= 0)):
            raise ValueError("feat.attr_keys must be non-negative and strictly increasing")
        self.attr_keys_ = np.ascontiguousarray(keys, dtype=np.int64)
        self.t_mult_ = self._compute_multipliers()
        self._table = table_for(self.attr_keys_)
        self._reset_type_cache()
        return self


class _TypeCache(dict):
    """Distinct strings of one input column -> type id, with the view ids of every type.

    A missing string is registered on first lookup (``__missing__``): the column's token
    functions run once per distinct string. View values never seen in training map to
    UNKNOWN unless the cache is growing the vocabularies (while fitting).
    """

    def __init__(self, views: list, vocabs: list[dict[str, int]], view_index: list[int]):
        super().__init__()
        self.fns = [v.fn for v in views]
        self.vocabs = vocabs
        self.views = view_index
        self.grow = False
        self._cols: list[list[int]] = [[] for _ in views]
        self._arrays: list[np.ndarray] | None = None

    def __missing__(self, token: str) -> int:
        tid = len(self)
        self[token] = tid
        for fn, vocab, col in zip(self.fns, self.vocabs, self._cols):
            val = fn(token)
            vid = vocab.get(val)
            if vid is None:
                if self.grow:
                    vid = len(vocab) + N_SPECIAL
                    vocab[val] = vid
                else:
                    vid = UNKNOWN
            col.append(vid)
        self._arrays = None
        return tid

    def trim(self, keep: int) -> None:
        """Forget every type registered after the first ``keep`` (bounds memory when tagging
        an endless stream of new strings)."""
        kept = list(itertools.islice(self.items(), keep))
        self.clear()
        self.update(kept)
        for col in self._cols:
            del col[keep:]
        self._arrays = None

    def table(self) -> list[np.ndarray]:
        if self._arrays is None:
            self._arrays = [np.asarray(col, dtype=np.int64) for col in self._cols]
        return self._arrays


def _offsets(sentences: Sequence) -> np.ndarray:
    lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
    offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets
