"""Feature templates -> integer attributes.

A feature specification (TOML) names the input columns, derives *views* of them with token
functions (lowercase, shape, prefixes, suffixes, character tests, user regexes) and lists
*templates*: conjunctions of views at relative offsets, as expressive as CRF++/Wapiti
patterns::

    [featurizer]
    columns = ["word", "pos"]
    templates = ["word[0]", "word[-1]|word[0]", "pos[-2]|pos[-1]|pos[0]", "suf3[0]", "bias"]
    min_count = 1          # attributes seen fewer times in training are dropped
    all_pairs = false      # parameters for every (attribute, label) pair, not only seen ones

    [views.suf3]
    column = "word"
    function = "suffix"
    length = 3

Nothing here builds attribute strings. Every view value gets an integer id from a per-view
vocabulary (0 = unknown, 1 = before the sentence, 2 = after it); a template instance becomes
one exact 64-bit key (mixed-radix over the view ids, template index in the lowest digit), and
a numba open-addressing hash table maps keys to attribute ids. Token functions run once per
distinct string (a per-column type cache), never once per token.
"""

from __future__ import annotations

import re
import sys
import itertools
from itertools import chain
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numba
import numpy as np

from tagger._config import NUMBA_OPTS, NUMBA_PARALLEL_OPTS
from tagger.errors import FeatureSpecError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

UNKNOWN, BEFORE, AFTER = 0, 1, 2
#: new strings remembered per column while tagging before the cache is trimmed back
TYPE_CACHE_LIMIT = 1_000_000
N_SPECIAL = 3
PRESETS = ("chunk", "pos", "citation", "np-chunk-large")
TEMPLATE_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\[\s*([+-]?\d+)\s*\]\s*$")

# --------------------------------------------------------------------------------------
# token functions


def _shape(s: str) -> str:
    out = []
    for ch in s:
        if ch.isupper():
            out.append("X")
        elif ch.islower():
            out.append("x")
        elif ch.isdigit():
            out.append("d")
        else:
            out.append(ch)
    return "".join(out)


def _short_shape(s: str) -> str:
    out = []
    for ch in _shape(s):
        if not out or out[-1] != ch:
            out.append(ch)
    return "".join(out)


def _is_punct(s: str) -> bool:
    return bool(s) and not any(ch.isalnum() for ch in s)


def _flag(fn: Callable[[str], bool]) -> Callable[[str], str]:
    return lambda s: "1" if fn(s) else "0"


# name -> (factory taking the view's options, allowed option names)
def _make_function(name: str, opts: dict, where: str) -> Callable[[str], str]:
    def need_length() -> int:
        n = opts.get("length")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise FeatureSpecError(f"{where}.length must be a positive integer for function "
                                   f"'{name}'; got {n!r}")
        return n

    if name == "identity":
        return lambda s: s
    if name == "lower":
        return str.lower
    if name == "shape":
        return _shape
    if name == "short_shape":
        return _short_shape
    if name == "prefix":
        n = need_length()
        return lambda s: s[:n]
    if name == "suffix":
        n = need_length()
        return lambda s: s[-n:]
    if name == "length":
        cap = opts.get("max", 10)
        return lambda s: str(min(len(s), cap))
    if name == "is_digit":
        return _flag(str.isdigit)
    if name == "has_digit":
        return _flag(lambda s: any(c.isdigit() for c in s))
    if name == "is_punct":
        return _flag(_is_punct)
    if name == "is_upper":
        return _flag(lambda s: s.isupper())
    if name == "is_title":
        return _flag(lambda s: s.istitle())
    if name == "has_upper":
        return _flag(lambda s: any(c.isupper() for c in s))
    if name == "has_hyphen":
        return _flag(lambda s: "-" in s)
    if name == "is_alpha":
        return _flag(str.isalpha)
    if name == "regex":
        pattern = opts.get("pattern")
        if not isinstance(pattern, str):
            raise FeatureSpecError(f"{where}.pattern must be a string for function 'regex'")
        try:
            rx = re.compile(pattern, re.IGNORECASE if opts.get("ignore_case") else 0)
        except re.error as exc:
            raise FeatureSpecError(f"{where}.pattern is not a valid regular expression "
                                   f"({exc}): {pattern!r}") from None
        return _flag(lambda s: rx.search(s) is not None)
    raise FeatureSpecError(f"{where}.function: unknown token function {name!r}; known: "
                           f"{', '.join(TOKEN_FUNCTIONS)}")


TOKEN_FUNCTIONS = ("identity", "lower", "shape", "short_shape", "prefix", "suffix", "length",
                   "is_digit", "has_digit", "is_punct", "is_upper", "is_title", "has_upper",
                   "has_hyphen", "is_alpha", "regex")


# --------------------------------------------------------------------------------------
# specification


@dataclass
class View:
    name: str
    column: int
    function: str
    options: dict
    fn: Callable[[str], str]


@dataclass
class FeatureSpec:
    """A parsed, validated feature specification."""

    name: str
    columns: list[str]
    views: list[View]
    templates: list[list[tuple[int, int]]]  # per template: (view index, offset) components
    template_names: list[str]
    min_count: int = 1
    all_pairs: bool = False
    source: dict = field(default_factory=dict)
    label_map: dict = field(default_factory=dict)     # gold label -> label learned
    label_keep: tuple | None = None                   # labels kept as they are
    label_other: str = "O"                            # what every other label becomes

    def map_label(self, label: str) -> str:
        label = self.label_map.get(label, label)
        if self.label_keep is not None and label not in self.label_keep:
            return self.label_other
        return label

    def relabel(self, sentences: list) -> list:
        """The sentences with their gold labels mapped by the ``[labels]`` table (the same
        list when the specification has none)."""
        if not self.label_map and self.label_keep is None:
            return sentences
        from tagger.sentence import Sentence

        return [s if s.labels is None else
                Sentence(s.columns, [self.map_label(lab) for lab in s.labels], s.meta)
                for s in sentences]

    @classmethod
    def from_dict(cls, data: dict, name: str = "custom") -> "FeatureSpec":
        errors: list[str] = []
        if not isinstance(data, dict) or "featurizer" not in data:
            raise FeatureSpecError("a feature file needs a [featurizer] table with 'columns' "
                                   "and 'templates'")
        fz = data["featurizer"]
        known = {"columns", "templates", "min_count", "all_pairs", "name"}
        for key in fz:
            if key not in known:
                errors.append(f"featurizer.{key}: unknown key (known: {', '.join(sorted(known))})")
        for key in data:
            if key not in ("featurizer", "views", "labels"):
                errors.append(f"{key}: unknown table (known: featurizer, views, labels)")
        label_map, label_keep, label_other = _parse_labels(data.get("labels", {}), errors)
        columns = fz.get("columns")
        if not (isinstance(columns, list) and columns and all(isinstance(c, str) for c in columns)):
            errors.append("featurizer.columns must be a non-empty list of column names")
            columns = ["word"]
        col_index = {c: i for i, c in enumerate(columns)}
        views: list[View] = [View(c, i, "identity", {}, lambda s: s) for i, c in enumerate(columns)]
        view_index = {c: i for i, c in enumerate(columns)}
        raw_views = data.get("views", {})
        if not isinstance(raw_views, dict):
            errors.append("views must be a table of [views.NAME] tables")
            raw_views = {}
        for vname, vdef in raw_views.items():
            where = f"views.{vname}"
            if vname in view_index or vname == "bias":
                errors.append(f"{where}: the name {vname!r} is already taken")
                continue
            if not isinstance(vdef, dict):
                errors.append(f"{where} must be a table")
                continue
            col = vdef.get("column", columns[0])
            if col not in col_index:
                errors.append(f"{where}.column: unknown column {col!r} (columns: {', '.join(columns)})")
                continue
            fname = vdef.get("function")
            opts = {k: v for k, v in vdef.items() if k not in ("column", "function")}
            try:
                fn = _make_function(fname, opts, where)
            except FeatureSpecError as exc:
                errors.append(str(exc))
                continue
            view_index[vname] = len(views)
            views.append(View(vname, col_index[col], fname, opts, fn))
        templates_src = fz.get("templates")
        templates: list[list[tuple[int, int]]] = []
        names: list[str] = []
        if not (isinstance(templates_src, list) and templates_src):
            errors.append("featurizer.templates must be a non-empty list of strings such as "
                          "\"word[0]\" or \"pos[-1]|pos[0]\"")
            templates_src = []
        for k, tmpl in enumerate(templates_src):
            where = f"featurizer.templates[{k}]"
            if not isinstance(tmpl, str):
                errors.append(f"{where} must be a string")
                continue
            if tmpl.strip() == "bias":
                templates.append([])
                names.append("bias")
                continue
            comps = []
            for part in tmpl.split("|"):
                m = TEMPLATE_RE.match(part)
                if not m:
                    errors.append(f"{where}: {part!r} is not of the form view[offset]")
                    break
                vname, off = m.group(1), int(m.group(2))
                if vname not in view_index:
                    errors.append(f"{where}: unknown view {vname!r} (known: "
                                  f"{', '.join(view_index)})")
                    break
                comps.append((view_index[vname], off))
            else:
                canon = "|".join(f"{views[v].name}[{o}]" for v, o in comps)
                if canon in names:
                    errors.append(f"{where}: duplicate template {canon!r}")
                    continue
                templates.append(comps)
                names.append(canon)
        min_count = fz.get("min_count", 1)
        if not isinstance(min_count, int) or isinstance(min_count, bool) or min_count < 1:
            errors.append(f"featurizer.min_count must be an integer >= 1; got {min_count!r}")
            min_count = 1
        all_pairs = fz.get("all_pairs", False)
        if not isinstance(all_pairs, bool):
            errors.append(f"featurizer.all_pairs must be true or false; got {all_pairs!r}")
            all_pairs = False
        if errors:
            raise FeatureSpecError("invalid feature specification:\n  " + "\n  ".join(errors))
        return cls(name=str(fz.get("name", name)), columns=list(columns), views=views,
                   templates=templates, template_names=names, min_count=min_count,
                   all_pairs=all_pairs, source=data, label_map=label_map,
                   label_keep=label_keep, label_other=label_other)

    @classmethod
    def load(cls, name_or_path: str | Path) -> "FeatureSpec":
        """A shipped preset by name (``chunk``, ``pos``, ``citation``) or a TOML file."""
        text: str
        label = str(name_or_path)
        if str(name_or_path) in PRESETS:
            text = resources.files("tagger.presets").joinpath(f"{name_or_path}.toml").read_text("utf-8")
        else:
            path = Path(name_or_path)
            if not path.exists():
                raise FeatureSpecError(f"feature specification {label!r} is neither a preset "
                                       f"({', '.join(PRESETS)}) nor an existing file")
            text = path.read_text("utf-8")
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise FeatureSpecError(f"{label}: not valid TOML: {exc}") from None
        try:
            return cls.from_dict(data, name=Path(label).stem)
        except FeatureSpecError as exc:
            raise FeatureSpecError(f"{label}: {exc}") from None

    @property
    def n_columns(self) -> int:
        return len(self.columns)


def _parse_labels(table, errors: list[str]) -> tuple[dict, tuple | None, str]:
    """The optional ``[labels]`` table: ``map`` renames gold labels, ``keep`` lists the labels
    learned as they are and ``other`` (default "O") replaces every other one, e.g. NP chunking
    from full CoNLL-2000 files: ``keep = ["B-NP", "I-NP", "O"]``."""
    if not isinstance(table, dict):
        errors.append("labels must be a table with 'map', 'keep' and/or 'other'")
        return {}, None, "O"
    for key in table:
        if key not in ("map", "keep", "other"):
            errors.append(f"labels.{key}: unknown key (known: keep, map, other)")
    mapping = table.get("map", {})
    if not (isinstance(mapping, dict) and all(isinstance(v, str) for v in mapping.values())):
        errors.append("labels.map must be a table of label = \"new label\" strings")
        mapping = {}
    keep = table.get("keep")
    if keep is not None and not (isinstance(keep, list) and keep
                                 and all(isinstance(v, str) for v in keep)):
        errors.append("labels.keep must be a non-empty list of label strings")
        keep = None
    other = table.get("other", "O")
    if not isinstance(other, str) or not other:
        errors.append(f"labels.other must be a non-empty string; got {other!r}")
        other = "O"
    return dict(mapping), None if keep is None else tuple(keep), other


# --------------------------------------------------------------------------------------
# numba kernels: hash table and template instantiation

_HASH_MULT = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(**NUMBA_OPTS)
def _slot(key, mask):
    h = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)
    return np.int64((h >> np.uint64(17)) & np.uint64(mask))


@numba.njit(**NUMBA_OPTS)
def _build_table(keys, table_keys, table_vals):
    mask = table_keys.shape[0] - 1
    for i in range(keys.shape[0]):
        s = _slot(keys[i], mask)
        while table_keys[s] != -1:
            s = (s + 1) & mask
        table_keys[s] = keys[i]
        table_vals[s] = i


@numba.njit(**NUMBA_OPTS)
def _lookup(key, table_keys, table_vals, mask):
    s = _slot(key, mask)
    while True:
        k = table_keys[s]
        if k == key:
            return table_vals[s]
        if k == -1:
            return -1
        s = (s + 1) & mask


@numba.njit(**NUMBA_OPTS)
def _template_key(view_ids, a, b, i, k, t_ptr, t_view, t_off, t_mult):
    """Exact key of template k at token i of the sentence on tokens a..b-1; -1 if a component
    value is unknown (such an attribute cannot have been seen in training)."""
    key = np.int64(k)
    for c in range(t_ptr[k], t_ptr[k + 1]):
        p = i + t_off[c]
        if p < a:
            v = 1
        elif p >= b:
            v = 2
        else:
            v = view_ids[t_view[c], p]
            if v == 0:
                return np.int64(-1)
        key += t_mult[c] * v
    return key


@numba.njit(**NUMBA_OPTS)
def _attribute_id(view_ids, a, b, i, k, t_ptr, t_view, t_off, t_mult, table_keys, table_vals,
                  mask):
    """Attribute id of template k at token i, or -1 when it is not a known attribute."""
    key = _template_key(view_ids, a, b, i, k, t_ptr, t_view, t_off, t_mult)
    if key < 0:
        return -1
    return _lookup(key, table_keys, table_vals, mask)


@numba.njit(**NUMBA_PARALLEL_OPTS)
def _template_keys(view_ids, offsets, t_ptr, t_view, t_off, t_mult, out):
    """out[i, k] = exact key of template k at token i, or -1 when a component is unknown."""
    n_sent = offsets.shape[0] - 1
    n_tmpl = t_ptr.shape[0] - 1
    for s in numba.prange(n_sent):
        a = offsets[s]
        b = offsets[s + 1]
        for i in range(a, b):
            for k in range(n_tmpl):
                out[i, k] = _template_key(view_ids, a, b, i, k, t_ptr, t_view, t_off, t_mult)


@numba.njit(**NUMBA_PARALLEL_OPTS)
def _attributes(view_ids, offsets, t_ptr, t_view, t_off, t_mult, table_keys, table_vals,
                slots):
    """slots[i, k] = attribute id of template k at token i, or -1."""
    n_sent = offsets.shape[0] - 1
    n_tmpl = t_ptr.shape[0] - 1
    mask = table_keys.shape[0] - 1
    for s in numba.prange(n_sent):
        a = offsets[s]
        b = offsets[s + 1]
        for i in range(a, b):
            for k in range(n_tmpl):
                slots[i, k] = _attribute_id(view_ids, a, b, i, k, t_ptr, t_view, t_off, t_mult,
                                            table_keys, table_vals, mask)


@numba.njit(**NUMBA_OPTS)
def _compact_slots(slots, indptr, attrs):
    n = slots.shape[0]
    k = slots.shape[1]
    pos = 0
    indptr[0] = 0
    for i in range(n):
        for j in range(k):
            a = slots[i, j]
            if a >= 0:
                attrs[pos] = a
                pos += 1
        indptr[i + 1] = pos
    return pos


@numba.njit(**NUMBA_OPTS)
def _remap_ids(table_keys, table_vals, keep_map):
    """Rewrite attribute ids after pruning; drop entries whose attribute is gone."""
    for s in range(table_keys.shape[0]):
        if table_keys[s] != -1:
            table_vals[s] = keep_map[table_vals[s]]


def _table_for(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    cap = 1
    while cap < 2 * max(len(keys), 1):
        cap *= 2
    table_keys = np.full(cap, -1, dtype=np.int64)
    table_vals = np.full(cap, -1, dtype=np.int32)
    _build_table(keys.astype(np.int64), table_keys, table_vals)
    return table_keys, table_vals


# --------------------------------------------------------------------------------------
# featurized data


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

    indptr: np.ndarray   # int64[N+1]
    attrs: np.ndarray    # int32[nnz]
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


@dataclass
class EncodedViews:
    """Sentences as view ids, with the template layout and the attribute hash table."""

    view_ids: np.ndarray   # (n_views, N) int64
    offsets: np.ndarray    # int64[n+1]
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
        self.vocabs_: list[dict[str, int]] | None = None   # per view: value -> id (>= 3)
        self.attr_keys_: np.ndarray | None = None           # int64[n_attrs], sorted
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
        return (np.asarray(t_ptr, np.int64), np.asarray(t_view, np.int64),
                np.asarray(t_off, np.int64))

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
                    f"use fewer components or coarser views (lowercase, shape, prefixes)")
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
                tids = np.fromiter(map(cache.__getitem__, chain.from_iterable(
                    [s.columns[c] for s in sentences])), dtype=np.int64, count=n_tok)
            except IndexError:
                raise FeatureSpecError(
                    f"the feature specification reads {n_cols} input column(s) "
                    f"({', '.join(self.spec.columns)}) but a sentence has only "
                    f"{min(len(s.columns) for s in sentences)}") from None
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
            _TypeCache([self.spec.views[vi] for vi in views],
                       [self.vocabs_[vi] for vi in views], views) if views else None
            for views in by_col]

    # ---- fitting
    def fit(self, sentences: Sequence) -> "Featurizer":
        """Build view vocabularies and the attribute set from training sentences."""
        self.vocabs_ = [dict() for _ in self.spec.views]
        self._reset_type_cache()
        offsets = _offsets(sentences)
        view_ids = self._view_ids(sentences, offsets, grow=True)
        self.t_mult_ = self._compute_multipliers()
        t_ptr, t_view, t_off = self._template_arrays()
        keys = np.empty((offsets[-1], len(self.spec.templates)), dtype=np.int64)
        _template_keys(view_ids, offsets, t_ptr, t_view, t_off, self.t_mult_, keys)
        flat = keys.ravel()
        flat = flat[flat >= 0]
        uniq, counts = np.unique(flat, return_counts=True)
        if self.spec.min_count > 1:
            uniq = uniq[counts >= self.spec.min_count]
        self.attr_keys_ = uniq
        self._table = _table_for(uniq)
        # the tag-time cache starts from the training types (their view ids are final) and
        # never forgets them
        self._base_types = [0 if c is None else len(c) for c in self._type_cache]
        return self

    @property
    def n_attributes(self) -> int:
        return 0 if self.attr_keys_ is None else len(self.attr_keys_)

    def encode(self, sentences: Sequence) -> "EncodedViews":
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
        view_ids = self._view_ids(sentences, offsets, grow=False)
        t_ptr, t_view, t_off = self._template_arrays()
        n_tok = int(offsets[-1])
        slots = np.empty((n_tok, len(self.spec.templates)), dtype=np.int32)
        tk, tv = self._table
        _attributes(view_ids, offsets, t_ptr, t_view, t_off, self.t_mult_, tk, tv, slots)
        indptr = np.empty(n_tok + 1, dtype=np.int64)
        attrs = np.empty(slots.size, dtype=np.int32)
        nnz = _compact_slots(slots, indptr, attrs)
        return Featurized(indptr, attrs[:nnz].copy(), offsets)

    def prune(self, keep: np.ndarray) -> np.ndarray:
        """Keep only the attributes where ``keep`` is true; returns old id -> new id (-1 gone)."""
        keep = np.asarray(keep, dtype=bool)
        new_id = np.full(len(keep), -1, dtype=np.int32)
        new_id[keep] = np.arange(int(keep.sum()), dtype=np.int32)
        self.attr_keys_ = self.attr_keys_[keep]
        self._table = _table_for(self.attr_keys_)
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
        from tagger.serialize import pack_strings

        arrays: dict[str, np.ndarray] = {"feat.attr_keys": self.attr_keys_}
        sizes = []
        for vi, vocab in enumerate(self.vocabs_):
            values = sorted(vocab, key=vocab.__getitem__)
            data, offs = pack_strings(values)
            arrays[f"feat.vocab{vi}.data"] = data
            arrays[f"feat.vocab{vi}.offsets"] = offs
            sizes.append(len(values))
        meta = {"spec": self.spec.source, "name": self.spec.name, "vocab_sizes": sizes}
        return meta, arrays

    @classmethod
    def from_arrays(cls, meta: dict, arrays: dict[str, np.ndarray]) -> "Featurizer":
        from tagger.serialize import unpack_strings

        spec = FeatureSpec.from_dict(meta["spec"], name=meta.get("name", "custom"))
        self = cls(spec)
        self.vocabs_ = []
        for vi in range(len(spec.views)):
            values = unpack_strings(arrays[f"feat.vocab{vi}.data"], arrays[f"feat.vocab{vi}.offsets"])
            self.vocabs_.append({v: i + N_SPECIAL for i, v in enumerate(values)})
        if [len(v) for v in self.vocabs_] != list(meta["vocab_sizes"]):
            raise ValueError("vocabulary sizes do not match the header")
        self.attr_keys_ = np.ascontiguousarray(arrays["feat.attr_keys"], dtype=np.int64)
        self.t_mult_ = self._compute_multipliers()
        self._table = _table_for(self.attr_keys_)
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
