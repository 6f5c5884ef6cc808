"""Runs the ``tagger`` command from a checkout without installing it: ``python cli.py ARGS``.

The command itself lives in :mod:`tagger.cli` (the installed ``tagger`` script calls
``tagger.cli:main``), so that installing the project puts no module but ``tagger`` on the path.
"""

from tagger.cli import cli, main

__all__ = ["cli", "main"]

if __name__ == "__main__":
    main()
