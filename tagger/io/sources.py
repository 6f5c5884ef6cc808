"""One entry for every kind of input: the CLI and the API decide a source's type here.

A *source* is a corpus file (any of :data:`~tagger.io.formats.FORMATS`, or ``-`` for standard
input), a spaCy ``DocBin`` (``*.spacy``), a Hugging Face dataset source (``hf:NAME``,
``hf:BUILDER:PATH``, ``*.parquet``, ``*.jsonl``, ...) or ``Dataset`` object, or sentences
already read (any iterable of :class:`~tagger.sentence.Sentence`, passed through).
:func:`open_labeled` reads training and evaluation data, :func:`open_unlabeled` streams
text to tag or to learn from without labels.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tagger.errors import CorpusFormatError
from tagger.io.formats import detect_format, load_corpus, read_corpus
from tagger.sentence import Sentence

#: bytes of an input looked at before it is read (format sniffing, the CoNLL separator)
HEAD_BYTES = 65536


def _is_path(source: Any) -> bool:
    return isinstance(source, (str, os.PathLike))


def _is_docbin(source: Any) -> bool:
    return _is_path(source) and os.fspath(source).endswith(".spacy")


def _is_dataset(source: Any) -> bool:
    if not _is_path(source) and not (type(source).__module__ or "").startswith("datasets"):
        return False
    from tagger.io.hf import is_dataset_source

    return is_dataset_source(source)


def is_record_source(source: Any) -> bool:
    """A spaCy DocBin or a dataset (hf: names, parquet, JSON lines, arrow, Dataset objects):
    records read through their own libraries rather than a corpus format."""
    return _is_docbin(source) or _is_dataset(source)


def labeled_format(path: str, fmt: str) -> str:
    """The format of a labeled file (training, dev, test data).

    Detection calls a file whose lines have unequal numbers of fields ``text``; but plain
    text has no labels, so a labeled file that looks like text is a CoNLL file with a bad
    line, and reading it as CoNLL reports that line (``file:line``) instead of "no labels".
    """
    if fmt != "auto" or path == "-":
        return fmt
    found = detect_format(path)
    return "conll" if found in ("text", "raw") else found


def open_labeled(
    source,
    format: str = "auto",
    label_column: int | None = None,
    fields: Sequence[str] | str | None = None,
    conllu_label: str | None = None,
) -> list[Sentence]:
    """Labeled sentences of ``source`` (see the module docstring), read whole.

    ``format``, ``label_column`` and ``conllu_label`` (the CoNLL-U field of the labels,
    ``upos`` or ``xpos``) apply to corpus files, ``fields`` (the input columns, then the
    label) to DocBins and datasets."""
    if _is_docbin(source):
        from tagger.io.docbin import read_docbin

        return list(read_docbin(source, fields))
    if _is_dataset(source):
        from tagger.io.hf import read_dataset

        return list(read_dataset(source, fields))
    if not _is_path(source):
        return list(source)
    options = {} if label_column is None else {"label_column": label_column}
    if conllu_label is not None:
        options["label"] = conllu_label
    path = os.fspath(source)
    return load_corpus(path, labeled_format(path, format), **options)


def open_many_labeled(
    sources: Sequence,
    format: str = "auto",
    label_column: int | None = None,
    fields: Sequence[str] | str | None = None,
    conllu_label: str | None = None,
) -> list[Sentence]:
    """The sentences of several labeled sources, concatenated in order."""
    out: list[Sentence] = []
    for source in sources:
        out.extend(open_labeled(source, format, label_column, fields, conllu_label))
    return out


def open_unlabeled(
    source, format: str = "auto", fields: Sequence[str] | str | None = None
) -> Iterable[Sentence]:
    """Sentences of ``source`` without labels, streamed where the source allows it."""
    if _is_docbin(source):
        from tagger.io.docbin import read_docbin

        return read_docbin(source, fields, labeled=False)
    if _is_dataset(source):
        from tagger.io.hf import read_dataset

        return read_dataset(source, fields, labeled=False)
    if not _is_path(source):
        return source
    return read_corpus(os.fspath(source), format, labeled=False)


def as_sentences(data, labeled: bool = True) -> Iterable[Sentence]:
    """What the API takes as data: a source is read (labeled or not), sentences pass."""
    if _is_path(data) or _is_dataset(data):
        return open_labeled(data) if labeled else open_unlabeled(data)
    return data


def default_preset(sentences: Sequence[Sentence]) -> str:
    """The feature preset for data read from a file: ``chunk`` for CoNLL files with two input
    columns (word and POS), ``citation`` for inline-tagged and tab citation files, ``pos``
    otherwise."""
    fmt = sentences[0].meta.get("format", "conll") if sentences else "conll"
    if fmt == "conll":
        return "chunk" if sentences and len(sentences[0].columns) >= 2 else "pos"
    if fmt in ("inline", "tab"):
        return "citation"
    return "pos"


class HeadReader:
    """A binary stream whose first block was read (to look at it) and is given back."""

    def __init__(self, stream, name: str, size: int = HEAD_BYTES):
        self._stream = stream
        self.name = name
        head = stream.read(size) or b""
        self.head = head if isinstance(head, bytes) else head.encode()
        self._prefix = head

    def read(self, n: int = -1):
        if self._prefix:
            out, self._prefix = self._prefix, b""
            return out
        return self._stream.read(n)


def peek(path: str) -> tuple[Any, bytes]:
    """``(source to read, its first bytes)`` for a path or ``-`` (standard input, which is read
    once: the bytes looked at are given back by the returned reader)."""
    if path == "-":
        import sys

        reader = HeadReader(getattr(sys.stdin, "buffer", sys.stdin), "<stdin>")
        return reader, reader.head
    with open(path, "rb") as fh:
        return path, fh.read(HEAD_BYTES)


def conll_separator(head: bytes) -> str:
    """A tab if the first token line separates its fields by tabs only, else a space."""
    for line in head.split(b"\n")[:-1] or head.split(b"\n"):
        line = line.rstrip(b"\r")
        if line.strip():
            return "\t" if b"\t" in line and b" " not in line else " "
    return " "


def display_name(path: str | Path) -> str:
    """How messages name an input: ``<stdin>`` for ``-``."""
    return "<stdin>" if os.fspath(path) == "-" else os.fspath(path)


def without_gold(sentences, n_columns: int, column_names: str, name: str):
    """CoNLL input read with every field as a column: one field more than the model reads
    is a gold label (dropped, the prediction takes its place), exactly as many is no label."""
    drop = None
    for s in sentences:
        if drop is None:
            if s.meta.get("format") != "conll":
                drop = False
            else:
                nf = len(s.columns)
                if nf == n_columns + 1:
                    drop = True
                elif nf == n_columns:
                    drop = False
                else:
                    raise CorpusFormatError(
                        f"expected {n_columns} field(s) per token ({column_names}), or "
                        f"{n_columns + 1} with a label as the last field, found {nf}; check "
                        "--format and the model",
                        name,
                    )
        if drop:
            s.columns.pop()
        yield s
