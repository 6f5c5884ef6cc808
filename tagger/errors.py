"""Exceptions a person can act on.

Every error the package raises on bad data or bad parameters derives from ``TaggerError``;
the CLI prints its message on one line and exits 1 (data errors) without a traceback.
"""

from __future__ import annotations


class TaggerError(Exception):
    """Base class for errors caused by the user's data, files or parameters."""


class CorpusFormatError(TaggerError, ValueError):
    """A corpus file is malformed. The message starts with ``file:line:``."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        self.path = path
        self.line = line
        where = ""
        if path is not None and line is not None:
            where = f"{path}:{line}: "
        elif path is not None:
            where = f"{path}: "
        super().__init__(where + message)


class FeatureSpecError(TaggerError, ValueError):
    """A feature template file is invalid."""


class ModelFileError(TaggerError):
    """A model file is missing, damaged, or written by an incompatible format version."""


class UnknownLabelError(TaggerError, ValueError):
    """A label that the model does not know."""


class ConfigError(TaggerError, ValueError):
    """A training configuration file (``tagger train --config``) is invalid. The message names
    the file and the TOML key path."""


class ParameterError(TaggerError, ValueError):
    """A learner or featurizer parameter is out of its allowed range."""


class NotFittedError(TaggerError):
    """The tagger has no model yet: call ``fit`` or ``load`` first."""


class ConstraintError(TaggerError, ValueError):
    """A constraint file is invalid; the message lists every mistake with its key path."""


class FieldError(TaggerError, ValueError):
    """A spaCy Doc field name that is not one of the forms :mod:`tagger.io.docbin` reads."""


class DatasetSourceError(TaggerError, ValueError):
    """A dataset source cannot be read: unknown field, hub out of reach, bad option."""


class ComponentConfigError(TaggerError, ValueError):
    """The spaCy component's config or its place in the pipeline does not fit its model."""


# ---------------------------------------------------------------------------------------------
# messages


def bad_value(name: str, expected: str, found, owner: str | None = None) -> ParameterError:
    """The one form of every parameter check's message: the parameter (and whose), what it
    must be, and what was given."""
    of = f" of {owner}" if owner else ""
    return ParameterError(f"The '{name}' parameter{of} must be {expected}. Got {found!r} instead.")


def one_line(message: str) -> str:
    """Fold a multi-line message (a feature file with several mistakes) into one line."""
    lines = [ln.strip() for ln in str(message).splitlines() if ln.strip()]
    if not lines:
        return "unknown error"
    if len(lines) == 1:
        return lines[0]
    head = lines[0]
    sep = " " if head.endswith(":") else ": "
    return head + sep + "; ".join(lines[1:])


def describe(exc: BaseException) -> str:
    """What went wrong, for a person: an OS error names its file, a decoding error its byte."""
    if isinstance(exc, OSError) and exc.strerror:
        where = exc.filename if exc.filename is not None else ""
        if exc.filename2 is not None:
            where = f"{where} -> {exc.filename2}"
        return f"{where}: {exc.strerror}" if where else exc.strerror
    if isinstance(exc, UnicodeDecodeError):
        return (
            f"expected UTF-8 text, found the byte 0x{exc.object[exc.start]:02x} at byte "
            f"offset {exc.start} that is not valid UTF-8; convert the file to UTF-8"
        )
    return str(exc)


class TaggerWarning(UserWarning):
    """Training went on, but the user should know something about the data or the choice
    (``tagger train`` prints these as ``warning:`` lines)."""
