"""HuggingFace ``datasets`` as a source of sentences, and tagging a ``Dataset`` in parallel.

Three kinds of source give the same :class:`~tagger.sentence.Sentence` records as the corpus
readers:

``hf:NAME``                a dataset on the hub (``hf:eriktks/conll2000``); options follow a
                           ``?`` as in a URL: ``split`` (default ``train``), ``revision``,
                           ``config``, ``fields``
``hf:BUILDER:PATH``        local files read by one of datasets' own builders (``conll``,
                           ``json``, ``parquet``, ``arrow``, ``csv``); ``PATH`` may be a glob
``*.parquet`` / ``*.jsonl`` / ``*.json`` / ``*.arrow``
                           shorthand for the matching builder
a ``Dataset`` object       (or ``IterableDataset``, or a ``DatasetDict`` with a ``split``)

``fields`` names the dataset's columns in the order of a CoNLL line: the input columns the
features read (tokens first), then the label column, e.g. ``tokens,pos_tags,chunk_tags`` for
CoNLL-2000 chunking; for ``hf:conll:FILE`` they also name the file's columns for datasets'
CoNLL builder, so they cover every column (the label last). The default is ``tokens`` (or the
first list-of-strings column) followed by every other list column in the dataset's order, so
the last one is the label, as in a
CoNLL file. Columns stored as ``ClassLabel`` ids are mapped to their names.

Nothing here imports ``datasets`` before it is needed: ``import tagger`` stays light.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from tagger.errors import CorpusFormatError, DatasetSourceError
from tagger.io.hf_hub import OFFLINE_HINT, check_hub_reachable, offline_requested, quiet_datasets
from tagger.io.records import split_fields, token_values
from tagger.sentence import Sentence

PREFIX = "hf:"
#: local file suffixes read through datasets' builders without an ``hf:`` prefix
SUFFIX_BUILDERS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".arrow": "arrow"}
BUILDERS = ("conll", "json", "parquet", "arrow", "csv")
#: where the hub keeps its automatic parquet conversion of script-based datasets
#: (``datasets`` >= 4 no longer runs dataset scripts, e.g. eriktks/conll2000's)
PARQUET_REVISION = "refs/convert/parquet"


@dataclass
class DatasetSource:
    """A parsed source string (see the module docstring)."""

    path: str
    builder: str | None = None  # None: a hub dataset
    split: str = "train"
    revision: str | None = None
    config: str | None = None
    fields: list[str] | None = None
    extra: dict = field(default_factory=dict)

    def describe(self) -> str:
        return f"hf:{self.path}" if self.builder is None else self.path


def is_dataset_source(obj: Any) -> bool:
    """True for what :func:`read_dataset` reads and the corpus readers do not."""
    if isinstance(obj, (str, os.PathLike)):
        s = os.fspath(obj)
        return s.startswith(PREFIX) or os.path.splitext(s)[1].lower() in SUFFIX_BUILDERS
    return _is_dataset_object(obj)


def _is_dataset_object(obj: Any) -> bool:
    mod = type(obj).__module__ or ""
    return mod.startswith("datasets.") and hasattr(obj, "column_names")


def _split_fields(value) -> list[str] | None:
    return split_fields(value, DatasetSourceError)


def parse_source(spec: str | os.PathLike, **options) -> DatasetSource:
    """Parse ``hf:NAME?split=test&revision=...``, ``hf:BUILDER:PATH`` or a local file name.

    Keyword ``options`` (split, revision, config, fields) fill in what the string leaves out.
    """
    s = os.fspath(spec)
    query: dict[str, str] = {}
    if s.startswith(PREFIX):
        body = s[len(PREFIX) :]
        if "?" in body:
            body, q = body.split("?", 1)
            query = dict(parse_qsl(q, keep_blank_values=True))
        head, sep, rest = body.partition(":")
        if sep and head in BUILDERS:
            builder, path = head, rest
        else:
            builder, path = None, body
        if not path:
            raise DatasetSourceError(f"{s}: no dataset name or file after 'hf:'")
    else:
        builder, path = SUFFIX_BUILDERS[os.path.splitext(s)[1].lower()], s
    known = {"split", "revision", "config", "fields"}
    unknown = set(query) - known
    if unknown:
        raise DatasetSourceError(
            f"{s}: unknown option(s) {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(known))}"
        )
    merged = {k: v for k, v in options.items() if v is not None}
    merged.update(query)
    return DatasetSource(
        path=path,
        builder=builder,
        split=merged.get("split") or "train",
        revision=merged.get("revision") or None,
        config=merged.get("config") or None,
        fields=_split_fields(merged.get("fields")),
    )


# ------------------------------------------------------------------------------------------
# loading


def load(source: str | os.PathLike | DatasetSource, **options):
    """The ``datasets.Dataset`` a source string names (one split)."""
    src = source if isinstance(source, DatasetSource) else parse_source(source, **options)
    datasets = _import_datasets()
    if src.builder is None:
        return _load_hub(datasets, src)
    if not any(ch in src.path for ch in "*?[") and not os.path.exists(src.path):
        raise FileNotFoundError(2, "No such file or directory", src.path)
    kwargs: dict = {"data_files": {src.split: src.path}, "split": src.split}
    if src.builder == "conll":
        # datasets' CoNLL builder names the columns; ours are the fields (default CoNLL-2000)
        kwargs["column_names"] = src.fields or ["tokens", "pos_tags", "chunk_tags"]
    try:
        with quiet_datasets():
            return datasets.load_dataset(src.builder, **kwargs)
    except (OSError, ValueError, TypeError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise DatasetSourceError(
            f"{src.path}: datasets' {src.builder} loader failed: {_first_line(exc)}"
        ) from None
    except Exception as exc:  # pyarrow and datasets raise their own error types
        raise DatasetSourceError(
            f"{src.path}: datasets' {src.builder} loader failed: "
            f"{type(exc).__name__}: {_first_line(exc)}"
        ) from None


def _is_jsonl_file(src: DatasetSource) -> bool:
    """A local JSON lines file, read by :mod:`tagger.io.jsonl_input` rather than datasets."""
    return (
        src.builder == "json"
        and src.path.lower().endswith(".jsonl")
        and not any(ch in src.path for ch in "*?[")
    )


def _import_datasets():
    try:
        import datasets
    except ImportError:
        raise DatasetSourceError(
            "reading Hugging Face datasets needs the 'datasets' package: pip install 'tagger[hf]'"
        ) from None
    return datasets


def _first_line(exc: BaseException) -> str:
    # datasets wraps the reader's error ("An error occurred while generating the dataset"):
    # the innermost cause says what is wrong with the file (pyarrow's "JSON parse error ...
    # in row 1")
    while exc.__cause__ is not None and type(exc).__name__ == "DatasetGenerationError":
        exc = exc.__cause__
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _is_jsonl_file(src: DatasetSource) -> bool:
    """A local JSON lines file, read by :mod:`tagger.io.jsonl_input` rather than datasets."""
    return (
        src.builder == "json"
        and src.path.lower().endswith(".jsonl")
        and not any(ch in src.path for ch in "*?[")
    )


def _import_datasets():
    try:
        import datasets
    except ImportError:
        raise DatasetSourceError(
            "reading Hugging Face datasets needs the 'datasets' package: pip install 'tagger[hf]'"
        ) from None
    return datasets


def _first_line(exc: BaseException) -> str:
    # datasets wraps the reader's error ("An error occurred while generating the dataset"):
    # the innermost cause says what is wrong with the file (pyarrow's "JSON parse error ...
    # in row 1")
    while exc.__cause__ is not None and type(exc).__name__ == "DatasetGenerationError":
        exc = exc.__cause__
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _load_hub(datasets, src: DatasetSource):
    offline = offline_requested()
    if not offline:
        check_hub_reachable(src.path)

    def attempt(revision):
        with quiet_datasets():
            return datasets.load_dataset(src.path, src.config, split=src.split, revision=revision)

    try:
        try:
            return attempt(src.revision)
        except Exception as exc:
            # a script-based dataset: its parquet conversion has the same rows and features
            if src.revision is None and "script" in str(exc).lower():
                return attempt(PARQUET_REVISION)
            raise
    except Exception as exc:
        hint = f"; {OFFLINE_HINT}" if offline else ""
        raise DatasetSourceError(
            f"hf:{src.path}: {type(exc).__name__}: {_first_line(exc)}{hint}"
        ) from None


# ------------------------------------------------------------------------------------------
# dataset -> sentences


def _inner_feature(feature):
    """The element feature of a list column (``Sequence`` or ``List``), else None."""
    inner = getattr(feature, "feature", None)
    if inner is None and isinstance(feature, list) and len(feature) == 1:
        inner = feature[0]
    return inner


def _is_string_list(feature) -> bool:
    inner = _inner_feature(feature)
    return getattr(inner, "dtype", None) in ("string", "large_string")


def _names_of(feature) -> list[str] | None:
    inner = _inner_feature(feature)
    names = getattr(inner, "names", None)
    return list(names) if names is not None and hasattr(inner, "int2str") else None


def default_fields(features: dict) -> list[str]:
    """``tokens`` (or the first list-of-strings column), then every other list column."""
    lists = [name for name, f in features.items() if _inner_feature(f) is not None]
    if not lists:
        raise DatasetSourceError(
            f"the dataset has no list columns (its columns: "
            f"{', '.join(features)}); a sentence is a list of tokens"
        )
    first = (
        "tokens"
        if "tokens" in lists
        else next((n for n in lists if _is_string_list(features[n])), lists[0])
    )
    return [first] + [n for n in lists if n != first]


def _features_of(ds) -> dict:
    feats = getattr(ds, "features", None)
    if feats is None:  # an IterableDataset whose features are unknown until read
        raise DatasetSourceError(
            "the dataset does not declare its features; call "
            "ds = ds.cast(features) or give a Dataset"
        )
    return dict(feats)


def dataset_sentences(
    ds,
    fields: Sequence[str] | str | None = None,
    labeled: bool = True,
    name: str = "dataset",
    batch_size: int = 1000,
) -> Iterator[Sentence]:
    """Sentences from a ``Dataset``: ``fields`` are the input columns then (when ``labeled``)
    the label column. ClassLabel ids become their names."""
    features = _features_of(ds)
    fields = _split_fields(fields) or default_fields(features)
    missing = [f for f in fields if f not in features]
    if missing:
        raise DatasetSourceError(
            f"{name}: no column {', '.join(map(repr, missing))}; its "
            f"columns are {', '.join(features)}"
        )
    if labeled and len(fields) < 2:
        raise DatasetSourceError(
            f"{name}: fields {','.join(fields)} name no label column; "
            f"give the input columns then the label column, e.g. "
            f"tokens,pos_tags,chunk_tags"
        )
    names = {f: _names_of(features[f]) for f in fields}
    for f in fields:
        if _inner_feature(features[f]) is None:
            raise DatasetSourceError(
                f"{name}: column {f!r} holds {features[f]}, not one value per token"
            )
    view = ds.select_columns(fields) if hasattr(ds, "select_columns") else ds
    inputs = fields[:-1] if labeled else fields  # named in JSON output
    row = 0
    for batch in view.iter(batch_size=batch_size):
        cols = [batch[f] for f in fields]
        for i in range(len(cols[0])):
            seqs = []
            for f, col in zip(fields, cols):
                try:
                    seqs.append(token_values(col[i], f, names[f]))
                except ValueError as exc:
                    raise CorpusFormatError(str(exc), f"{name}: row {row}") from None
            n = len(seqs[0])
            for f, vals in zip(fields[1:], seqs[1:]):
                if len(vals) != n:
                    raise CorpusFormatError(
                        f"column {f!r} has {len(vals)} values but {fields[0]!r} has {n}",
                        f"{name}: row {row}",
                    )
            row += 1
            if not n:
                continue
            if labeled:
                yield Sentence(seqs[:-1], seqs[-1], {"format": "conll", "fields": inputs})
            else:
                yield Sentence(seqs, None, {"format": "conll", "fields": inputs})


def read_dataset(
    source, fields: Sequence[str] | str | None = None, labeled: bool = True, **options
) -> Iterator[Sentence]:
    """Sentences from any dataset source: a source string (module docstring) or a Dataset.

    ``options``: ``split``, ``revision``, ``config`` (for strings; a ``DatasetDict`` takes
    ``split``).
    """
    if isinstance(source, (str, os.PathLike, DatasetSource)):
        src = source if isinstance(source, DatasetSource) else parse_source(source, **options)
        if _is_jsonl_file(src):
            from tagger.io.jsonl_input import read_jsonl

            return read_jsonl(
                src.path, split_fields(fields, DatasetSourceError) or src.fields, labeled
            )
        ds = load(src)
        return dataset_sentences(ds, fields or src.fields, labeled, src.describe())
    if not _is_dataset_object(source):
        raise DatasetSourceError(
            f"expected a datasets Dataset or a source string, got {type(source).__name__}"
        )
    if not hasattr(source, "features") and hasattr(source, "keys"):  # a DatasetDict
        split = options.get("split") or "train"
        if split not in source:
            raise DatasetSourceError(
                f"the DatasetDict has no split {split!r}; its splits: {', '.join(source)}"
            )
        source = source[split]
    return dataset_sentences(source, fields, labeled)


# ------------------------------------------------------------------------------------------
# tagging a Dataset (Dataset.map, batched, optionally in several processes)


class _MapTagger:
    """The function given to ``Dataset.map``: decodes a whole batch in one kernel call.

    Pickled (to the worker processes, and by datasets' fingerprinting) as the model file's
    bytes, so the pickle holds no internals of the Tagger.
    """

    def __init__(self, tagger, fields: list[str], names: dict, output: str):
        self.tagger = tagger
        self.fields = fields
        self.names = names
        self.output = output

    def __getstate__(self):
        return {
            "cls": type(self.tagger),
            "model": self.tagger.to_bytes(),
            "fields": self.fields,
            "names": self.names,
            "output": self.output,
        }

    def __setstate__(self, state):
        self.tagger = state["cls"].from_bytes(state["model"])
        self.fields, self.names, self.output = state["fields"], state["names"], state["output"]

    def __call__(self, batch: dict) -> dict:
        cols = []
        for f in self.fields:
            table = self.names.get(f)
            col = batch[f]
            if table is not None:
                col = [[table[v] for v in seq] for seq in col]
            cols.append(col)
        sentences = [Sentence([list(c[i]) for c in cols]) for i in range(len(cols[0]))]
        return {self.output: self.tagger.predict(sentences)}


def tag_dataset(
    tagger,
    ds,
    fields: Sequence[str] | str | None = None,
    output: str = "predicted",
    num_proc: int | None = None,
    batch_size: int = 1000,
):
    """``ds`` with a new column ``output`` of predicted label lists.

    Runs ``ds.map(batched=True, num_proc=num_proc)``: every batch is featurized and decoded
    together, and with ``num_proc=N`` the shards are tagged by N processes and put back in
    order. A streaming ``IterableDataset`` comes back as one too, tagged lazily as it is read.
    ``fields`` are the model's input columns (default: the first ``n_columns`` of the default
    fields).
    """
    tagger.fitted()
    features = _features_of(ds)
    need = tagger.featurizer_.spec.n_columns
    fields = _split_fields(fields) or default_fields(features)[:need]
    missing = [f for f in fields if f not in features]
    if missing:
        raise DatasetSourceError(
            f"no column {', '.join(map(repr, missing))}; the dataset's "
            f"columns are {', '.join(features)}"
        )
    if len(fields) != need:
        spec = tagger.featurizer_.spec
        raise DatasetSourceError(
            f"the model reads {need} column(s) ({', '.join(spec.columns)}) "
            f"but fields names {len(fields)}: {', '.join(fields)}"
        )
    names = {f: _names_of(features[f]) for f in fields}
    fn = _MapTagger(tagger, fields, names, output)
    if not hasattr(ds, "num_rows"):  # an IterableDataset: its map is lazy, in this process
        if num_proc not in (None, 1):
            raise DatasetSourceError(
                f"num_proc={num_proc}: a streaming dataset is tagged "
                f"lazily in this process as it is read; load it without "
                f"streaming=True to tag it in {num_proc} processes"
            )
        return ds.map(fn, batched=True, batch_size=batch_size)
    return ds.map(fn, batched=True, batch_size=batch_size, num_proc=num_proc)
