"""The ``tagger`` command line: thin shells over the API (:mod:`tagger.cli.commands`)."""

from tagger.cli.commands import cli, main

__all__ = ["cli", "main"]
