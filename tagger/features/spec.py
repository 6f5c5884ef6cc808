"""The feature specification: input columns, views (token functions such as lowercase, shape,
prefixes and suffixes) and templates (conjunctions of views at relative offsets), read
from a TOML preset or file and checked with every problem reported at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from tagger.errors import FeatureSpecError
from tagger.io import toml_file
from tagger.io.patterns import PatternError, compile_pattern

UNKNOWN, BEFORE, AFTER = 0, 1, 2
N_SPECIAL = 3
PRESETS = ("chunk", "pos", "citation", "np-chunk-large", "hmm")
TEMPLATE_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\[\s*([+-]?[0-9]+)\s*\]\s*$")
#: largest distance a template may look from the token (a sentence longer than this is rare,
#: and the offsets must fit the 64-bit arrays the kernels read)
MAX_OFFSET = 1000
#: what a label-pair template's name ends with (``pos[-1]|pos[0]@pair``), so that the same
#: conjunction may be both an ordinary and a pair template
PAIR_SUFFIX = "@pair"

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


def _cluster_function(opts: dict, where: str, clusters_of) -> Callable[[str], str]:
    """``function = "cluster"``: the bit string of the token's word cluster (its first
    ``prefix`` bits when given), ``-`` for a word the clusters do not know."""
    path = opts.get("clusters")
    if not isinstance(path, str) or not path:
        raise FeatureSpecError(
            f"{where}.clusters must name a clusters file (made by 'tagger clusters TEXT -o "
            f"FILE') for function 'cluster'; got {path!r}"
        )
    n = opts.get("prefix", 0)
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise FeatureSpecError(
            f"{where}.prefix must be a whole number >= 1 (the bits kept), or 0 for the whole "
            f"path; got {n!r}"
        )
    table = clusters_of(path)
    if n:
        return lambda s: table.path(s)[:n]
    return table.path


# name -> (factory taking the view's options, allowed option names)
def _make_function(name: str, opts: dict, where: str, clusters_of) -> Callable[[str], str]:
    def need_length() -> int:
        n = opts.get("length")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise FeatureSpecError(
                f"{where}.length must be a positive integer for function '{name}'; got {n!r}"
            )
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
        if not isinstance(cap, int) or isinstance(cap, bool) or cap < 1:
            raise FeatureSpecError(
                f"{where}.max must be a positive integer for function 'length'; got {cap!r}"
            )
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
    if name == "cluster":
        return _cluster_function(opts, where, clusters_of)
    if name == "regex":
        pattern = opts.get("pattern")
        if not isinstance(pattern, str):
            raise FeatureSpecError(f"{where}.pattern must be a string for function 'regex'")
        try:
            # RE2 matches in linear time: a pattern such as ^(a+)+$ (in a feature file, or
            # edited into a model's header) cannot hang featurizing
            rx = compile_pattern(pattern, ignore_case=bool(opts.get("ignore_case")))
        except PatternError as exc:
            raise FeatureSpecError(
                f"{where}.pattern is not a valid regular expression ({exc}): {pattern!r}"
            ) from None
        return _flag(rx.search)
    raise FeatureSpecError(
        f"{where}.function: unknown token function {name!r}; known: {', '.join(TOKEN_FUNCTIONS)}"
    )


TOKEN_FUNCTIONS = (
    "identity",
    "lower",
    "shape",
    "short_shape",
    "prefix",
    "suffix",
    "length",
    "is_digit",
    "has_digit",
    "is_punct",
    "is_upper",
    "is_title",
    "has_upper",
    "has_hyphen",
    "is_alpha",
    "regex",
    "cluster",
)


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
    #: templates[pair_from:] are label-pair templates (``pair_templates``): their attributes
    #: fire on (previous label, label) at every token but a sentence's first
    pair_from: int = -1
    #: the chain's order: 1 (labels depend on the previous one) or 2 (on the two previous)
    order: int = 1
    min_count: int = 1
    all_pairs: bool = False
    source: dict = field(default_factory=dict)
    label_map: dict = field(default_factory=dict)  # gold label -> label learned
    label_keep: tuple | None = None  # labels kept as they are
    label_other: str = "O"  # what every other label becomes
    #: the word clusters of the ``cluster`` views, by the file name their ``clusters`` key
    #: gives (read once; a model file keeps them, so tagging needs no file)
    cluster_tables: dict = field(default_factory=dict)

    def __reduce__(self):
        # the views hold compiled functions (closures); the parsed source rebuilds them
        return (_rebuilt, (self.source, self.name, self.cluster_tables))

    def __post_init__(self):
        if self.pair_from < 0:
            self.pair_from = len(self.templates)

    @property
    def has_pairs(self) -> bool:
        """Whether some template fires on label pairs."""
        return self.pair_from < len(self.templates)

    def with_order(self, order: int) -> FeatureSpec:
        """The same specification with the chain's ``order`` (1 or 2) instead of its own."""
        source = {**self.source, "featurizer": {**self.source["featurizer"], "order": order}}
        return FeatureSpec.from_dict(source, self.name, clusters=self.cluster_tables)

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

        return [
            s
            if s.labels is None
            else Sentence(s.columns, [self.map_label(lab) for lab in s.labels], s.meta)
            for s in sentences
        ]

    @classmethod
    def from_dict(
        cls,
        data: dict,
        name: str = "custom",
        clusters: dict | None = None,
        base: Path | None = None,
        read_cluster_files: bool = True,
    ) -> FeatureSpec:
        """The specification of a parsed TOML table. A ``cluster`` view's file is taken from
        ``clusters`` (file name -> :class:`~tagger.features.word_clusters.WordClusters`) when
        there, else read, relative to ``base`` (the feature file's folder) when not absolute;
        never read with ``read_cluster_files=False`` (a model file holds its clusters: loading one
        reads no other file)."""
        errors: list[str] = []
        tables: dict = dict(clusters or {})

        def clusters_of(path: str):
            if path not in tables and not read_cluster_files:
                # not a mistake of the feature file to list with the others: the model file
                # lacks part of itself
                raise ValueError(f"the clusters {path!r} of a cluster view are not in the file")
            if path not in tables:
                from tagger.features.word_clusters import read_clusters

                full = Path(path) if base is None or Path(path).is_absolute() else base / path
                tables[path] = read_clusters(full)
            return tables[path]

        if not isinstance(data, dict) or "featurizer" not in data:
            raise FeatureSpecError(
                "a feature file needs a [featurizer] table with 'columns' and 'templates'"
            )
        fz = data["featurizer"]
        if not isinstance(fz, dict):
            raise FeatureSpecError(
                f"featurizer must be a table [featurizer] with 'columns' and "
                f"'templates'; got {fz!r}"
            )
        known = {
            "columns",
            "templates",
            "pair_templates",
            "order",
            "min_count",
            "all_pairs",
            "name",
        }
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
            if not isinstance(col, str) or col not in col_index:
                errors.append(
                    f"{where}.column: unknown column {col!r} (columns: {', '.join(columns)})"
                )
                continue
            fname = vdef.get("function")
            opts = {k: v for k, v in vdef.items() if k not in ("column", "function")}
            try:
                fn = _make_function(fname, opts, where, clusters_of)
            except FeatureSpecError as exc:
                errors.append(str(exc))
                continue
            view_index[vname] = len(views)
            views.append(View(vname, col_index[col], fname, opts, fn))
        templates: list[list[tuple[int, int]]] = []
        names: list[str] = []
        templates_src = fz.get("templates")
        if not (isinstance(templates_src, list) and templates_src):
            errors.append(
                "featurizer.templates must be a non-empty list of strings such as "
                '"word[0]" or "pos[-1]|pos[0]"'
            )
            templates_src = []
        _parse_templates(templates_src, "templates", views, view_index, templates, names, errors)
        pair_from = len(templates)
        pair_src = fz.get("pair_templates", [])
        if not isinstance(pair_src, list):
            errors.append(
                "featurizer.pair_templates must be a list of template strings (features that "
                'fire on the pair (previous label, label)), such as ["pos[-1]|pos[0]"]'
            )
            pair_src = []
        _parse_templates(
            pair_src, "pair_templates", views, view_index, templates, names, errors, PAIR_SUFFIX
        )
        min_count = fz.get("min_count", 1)
        if not isinstance(min_count, int) or isinstance(min_count, bool) or min_count < 1:
            errors.append(f"featurizer.min_count must be an integer >= 1; got {min_count!r}")
            min_count = 1
        order = fz.get("order", 1)
        if order not in (1, 2) or isinstance(order, bool):
            errors.append(
                f"featurizer.order must be 1 (first-order chain) or 2 (labels depend on the two "
                f"previous labels); got {order!r}"
            )
            order = 1
        all_pairs = fz.get("all_pairs", False)
        if not isinstance(all_pairs, bool):
            errors.append(f"featurizer.all_pairs must be true or false; got {all_pairs!r}")
            all_pairs = False
        if errors:
            raise FeatureSpecError("invalid feature specification:\n  " + "\n  ".join(errors))
        return cls(
            name=str(fz.get("name", name)),
            columns=list(columns),
            views=views,
            templates=templates,
            template_names=names,
            pair_from=pair_from,
            order=order,
            min_count=min_count,
            all_pairs=all_pairs,
            source=data,
            label_map=label_map,
            label_keep=label_keep,
            label_other=label_other,
            cluster_tables={k: v for k, v in tables.items() if _uses(views, k)},
        )

    @classmethod
    def load(cls, name_or_path: str | Path) -> FeatureSpec:
        """A shipped preset by name (``chunk``, ``pos``, ``citation``) or a TOML file."""
        text: str
        label = str(name_or_path)
        if str(name_or_path) in PRESETS:
            text = (
                resources.files("tagger.presets")
                .joinpath(f"{name_or_path}.toml")
                .read_text("utf-8")
            )
        else:
            path = Path(name_or_path)
            if not path.exists():
                raise FeatureSpecError(
                    f"feature specification {label!r} is neither a preset "
                    f"({', '.join(PRESETS)}) nor an existing file"
                )
            text = toml_file.read_text(path, FeatureSpecError, "feature specification")
        data = toml_file.parse(text, label, FeatureSpecError)
        base = None if str(name_or_path) in PRESETS else Path(name_or_path).parent
        try:
            return cls.from_dict(data, name=Path(label).stem, base=base)
        except FeatureSpecError as exc:
            raise FeatureSpecError(f"{label}: {exc}") from None

    @property
    def n_columns(self) -> int:
        return len(self.columns)


def _parse_templates(
    src: list,
    key: str,
    views: list[View],
    view_index: dict[str, int],
    templates: list[list[tuple[int, int]]],
    names: list[str],
    errors: list[str],
    suffix: str = "",
) -> None:
    """Append the templates of ``featurizer.<key>`` (strings such as ``"pos[-1]|pos[0]"``) to
    ``templates`` and their canonical names (with ``suffix``) to ``names``."""
    for k, tmpl in enumerate(src):
        where = f"featurizer.{key}[{k}]"
        if not isinstance(tmpl, str):
            errors.append(f"{where} must be a string")
            continue
        comps: list[tuple[int, int]] = []
        if tmpl.strip() == "bias":
            canon = "bias"
        else:
            for part in tmpl.split("|"):
                m = TEMPLATE_RE.match(part)
                if not m:
                    errors.append(f"{where}: {part!r} is not of the form view[offset]")
                    break
                vname, off = m.group(1), int(m.group(2))
                if abs(off) > MAX_OFFSET:
                    errors.append(
                        f"{where}: {part.strip()!r} looks {abs(off)} tokens away; offsets "
                        f"go from -{MAX_OFFSET} to {MAX_OFFSET}"
                    )
                    break
                if vname not in view_index:
                    errors.append(
                        f"{where}: unknown view {vname!r} (known: {', '.join(view_index)})"
                    )
                    break
                comps.append((view_index[vname], off))
            else:
                canon = "|".join(f"{views[v].name}[{o}]" for v, o in comps)
            if len(comps) != len(tmpl.split("|")):
                continue  # reported above
        canon += suffix
        if canon in names:
            errors.append(f"{where}: duplicate template {canon!r}")
            continue
        templates.append(comps)
        names.append(canon)


def _rebuilt(source: dict, name: str, clusters: dict) -> FeatureSpec:
    return FeatureSpec.from_dict(source, name, clusters=clusters)


def _uses(views: list[View], path: str) -> bool:
    return any(v.function == "cluster" and v.options.get("clusters") == path for v in views)


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
        errors.append('labels.map must be a table of label = "new label" strings')
        mapping = {}
    keep = table.get("keep")
    if keep is not None and not (
        isinstance(keep, list) and keep and all(isinstance(v, str) for v in keep)
    ):
        errors.append("labels.keep must be a non-empty list of label strings")
        keep = None
    other = table.get("other", "O")
    if not isinstance(other, str) or not other:
        errors.append(f"labels.other must be a non-empty string; got {other!r}")
        other = "O"
    return dict(mapping), None if keep is None else tuple(keep), other
