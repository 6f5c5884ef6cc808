"""The ``tagger`` command line: thin shells over the API (:mod:`tagger.cli.commands`).

Importing this package is cheap: the commands (and numpy, numba and the rest behind them) are
imported by :func:`main`, after Ctrl-C and SIGTERM already end the command with its one line,
so that a signal during the start-up is no traceback from the middle of an import.
"""

from __future__ import annotations

import os
import signal
from typing import Any

__all__ = ["cli", "main"]


def _stop_while_starting(signum, frame) -> None:
    """Ctrl-C or SIGTERM before the command runs: nothing is written yet, so the process ends
    at once. (An exception would be raised inside some import, where a library's bare
    ``except:`` can swallow it and let the command run on as if no signal had come.)"""
    os.write(2, b"error: interrupted\n")
    os._exit(143 if signum == signal.SIGTERM else 130)


def main() -> None:
    """Entry point of the ``tagger`` console script."""
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) is not signal.SIG_IGN:  # kept ignored, as Python keeps it
                signal.signal(sig, _stop_while_starting)
    except ValueError:  # not the main thread: signals are the caller's business
        pass
    from tagger.cli.commands import main as run_command

    run_command()


def __getattr__(name: str) -> Any:
    if name == "cli":
        from tagger.cli.commands import cli

        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
