"""Runs the ``tagger`` command from a checkout without installing it: ``python cli.py ARGS``.

The command itself lives in :mod:`tagger.cli` (the installed ``tagger`` script calls
``tagger.cli:main``), so that installing the project puts no module but ``tagger`` on the path.
"""

from typing import Any

from tagger.cli import main

__all__ = ["main"]  # and `cli`, the click group, through __getattr__


def __getattr__(name: str) -> Any:  # the click group, imported when asked for
    if name == "cli":
        from tagger.cli import cli

        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    main()
