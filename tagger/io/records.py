"""What record sources (Hugging Face datasets, JSON lines files, spaCy DocBins) share: the
``fields`` list that names their columns, and the check of one record's per-token column, so
that a ``null``, a nested list, a table or a bare string where a list of tokens belongs is one
error naming the row and the field instead of a token ``None`` or ``{'x': 1}`` in a model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def split_fields(value: Sequence[str] | str | None, error: type[Exception]) -> list[str] | None:
    """``"tokens,pos,chunk"`` (or a list) as a list of names; None when none is given. An empty
    name (``",,,"``, ``"tokens,,chunk"``) raises ``error``: a list that names nothing is a
    mistake, not a request for the default."""
    if value is None:
        return None
    names = value.split(",") if isinstance(value, str) else list(value)
    out = []
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name.strip():
            found = "empty" if isinstance(name, str) else repr(name)
            raise error(
                f"fields {_shown(value)}: name {i + 1} is {found}; "
                f"give column names separated by commas, e.g. tokens,pos_tags,chunk_tags"
            )
        out.append(name.strip())
    if not out:
        raise error("fields must name at least one column, e.g. tokens,pos_tags,chunk_tags")
    return out


def _shown(value) -> str:
    return repr(value if isinstance(value, str) else ",".join(map(str, value)))


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    if isinstance(value, dict):
        return f"a table {str(value)[:40]}"
    if isinstance(value, (list, tuple)):
        return f"a list {str(list(value))[:40]}"
    return f"{type(value).__name__} {str(value)[:40]}"


def token_values(values: Any, field: str, names: list[str] | None = None) -> list[str]:
    """One record's column ``field``: a list with one text (or whole number, or class id when
    ``names`` are the column's class names) per token. Raises ``ValueError`` saying what was
    found; the caller adds the file and row."""
    if not isinstance(values, (list, tuple)):
        raise ValueError(
            f"field {field!r} must be a list with one value per token, found {_kind(values)}"
        )
    out = []
    for i, v in enumerate(values):
        if names is not None:
            if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < len(names):
                out.append(names[v])
                continue
            raise ValueError(
                f"field {field!r} item {i} is {_kind(v)}, not the id of one of its "
                f"{len(names)} class names"
            )
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, int) and not isinstance(v, bool):
            out.append(str(v))
        else:
            raise ValueError(f"field {field!r} item {i} is {_kind(v)}; expected text")
    return out
