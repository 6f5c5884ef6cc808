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


class ParameterError(TaggerError, ValueError):
    """A learner or featurizer parameter is out of its allowed range."""


class NotFittedError(TaggerError):
    """The tagger has no model yet: call ``fit`` or ``load`` first."""


class ConstraintError(TaggerError, ValueError):
    """A constraint file is invalid; the message lists every mistake with its key path."""
