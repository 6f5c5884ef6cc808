"""Reading the project's TOML files (feature specifications, constraint files, training
configurations): each mistake is one line naming the file, raised as the caller's error.

A UTF-8 byte-order mark at the start (what some Windows editors write) is taken off: TOML does
not allow one, and tomllib would call it an "invalid statement" on line 1."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


BOM = "\ufeff"


def read_text(path: str | Path, error: type[Exception], what: str) -> str:
    """The file's text; unreadable or not UTF-8 raises ``error`` naming ``what`` it is."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise error(
            f"{path}: not UTF-8 text (byte {exc.start}); save the {what} as UTF-8"
        ) from None


def parse(text: str, source: str, error: type[Exception]) -> dict:
    """``text`` parsed as TOML; a syntax error raises ``error`` with its line and column."""
    try:
        return tomllib.loads(text.removeprefix(BOM))
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{source}: not valid TOML: {exc}") from None


def read(path: str | Path, error: type[Exception], what: str) -> dict:
    """The file read and parsed (:func:`read_text`, :func:`parse`)."""
    return parse(read_text(path, error, what), str(path), error)
