"""Reading a JSON lines file (``*.jsonl``: one JSON object per line, a list per column) into
sentences, the way :mod:`tagger.io.hf` reads a dataset's rows, without going through
``datasets``.

Why not ``datasets``' JSON builder: it reads the file in blocks with pyarrow, so a bad line is
reported as "an error occurred while generating the dataset" after its own log lines and
progress bar, without a line number; and pyarrow turns a ``null`` token or label into the text
``None``. Read here, every mistake is one line ``FILE:LINE: ...`` naming the field, the file is
streamed, and ``import datasets`` (a second or two) is not needed for it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence

from tagger.errors import CorpusFormatError
from tagger.io.records import token_values
from tagger.sentence import Sentence


def _records(path: str) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` for every line that is not blank."""
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise CorpusFormatError(
                    f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); save "
                    f"the file as UTF-8",
                    path,
                    number,
                ) from None
            if number == 1:
                text = text.removeprefix("\ufeff")
            try:
                record = json.loads(text.strip())
            except (ValueError, RecursionError) as exc:
                why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                col = f" at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
                raise CorpusFormatError(
                    f"not valid JSON ({why}{col}); a JSON lines file has one JSON object a line",
                    path,
                    number,
                ) from None
            if not isinstance(record, dict):
                raise CorpusFormatError(
                    f'expected a JSON object such as {{"tokens": [...], "tags": [...]}}, '
                    f"found {type(record).__name__ if record is not None else 'null'}",
                    path,
                    number,
                )
            yield number, record


def default_jsonl_fields(record: dict) -> list[str]:
    """``tokens`` (or the first list-of-texts field), then every other list field, in the
    order of the first object: the label last, as in a CoNLL file."""
    if "tokens" in record:
        token_values(record["tokens"], "tokens")  # a text or a null there is the mistake
    lists = [k for k, v in record.items() if isinstance(v, list)]
    if not lists:
        raise ValueError(
            f"the first object has no list fields (its fields: {', '.join(record) or 'none'}); "
            f"a sentence is a list of tokens"
        )
    texts = [k for k in lists if record[k] and all(isinstance(x, str) for x in record[k])]
    first = "tokens" if "tokens" in lists else (texts or lists)[0]
    return [first] + [k for k in lists if k != first]


def read_jsonl(
    path: str | os.PathLike, fields: Sequence[str] | None = None, labeled: bool = True
) -> Iterator[Sentence]:
    """Sentences of a JSON lines file: ``fields`` are the input fields then (when ``labeled``)
    the label field (default: :func:`default_jsonl_fields` of the first object)."""
    path = os.fspath(path)
    names = list(fields) if fields else None
    seen = False
    for number, record in _records(path):
        seen = True
        if names is None:
            try:
                names = default_jsonl_fields(record)
            except ValueError as exc:
                raise CorpusFormatError(str(exc), path, number) from None
        if labeled and len(names) < 2:
            raise CorpusFormatError(
                f"fields {','.join(names)} name no label field; give the input fields then the "
                f"label field, e.g. --fields tokens,tags",
                path,
            )
        columns = []
        for name in names:
            if name not in record:
                raise CorpusFormatError(
                    f"no field {name!r} (this object's fields: {', '.join(record) or 'none'})",
                    path,
                    number,
                )
            try:
                columns.append(token_values(record[name], name))
            except ValueError as exc:
                raise CorpusFormatError(str(exc), path, number) from None
        n = len(columns[0])
        for name, column in zip(names[1:], columns[1:]):
            if len(column) != n:
                raise CorpusFormatError(
                    f"field {name!r} has {len(column)} values but {names[0]!r} has {n}",
                    path,
                    number,
                )
        if not n:
            continue
        inputs = names[:-1] if labeled else names
        if labeled:
            yield Sentence(columns[:-1], columns[-1], {"format": "conll", "fields": inputs})
        else:
            yield Sentence(columns, None, {"format": "conll", "fields": inputs})
    if not seen:
        raise CorpusFormatError(
            "no JSON objects (the file is empty); a JSON lines file has one object a line, "
            'such as {"tokens": ["The", "cat"], "tags": ["DT", "NN"]}',
            path,
        )
