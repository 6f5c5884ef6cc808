"""Ctrl-C and SIGTERM: held back over a stretch of work that must not be cut in the middle,
and noticed where their exception was lost.

The command line turns both signals into exceptions raised wherever the main thread is
(:mod:`tagger.cli.console`: KeyboardInterrupt, :class:`Terminated`), so that outputs being
written are removed and workers stopped, and notes each in :data:`arrived`.
A few stretches must not be cut anywhere: numba compiles through LLVM, which calls back into
Python through ctypes, and ctypes prints and drops an exception raised there; between a fork
and noting the child, an exception would leave a worker no one ends. :func:`held` records a
signal that arrives within and delivers it again on the way out, to whatever handler was in
place, which then acts as it would have: late by the length of the stretch, never lost.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

#: the signals a terminal (Ctrl-C) or a job scheduler and ``timeout`` (SIGTERM) stop a
#: command with
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

#: the signals the command line's handlers received, in order. An exception raised inside a
#: callback from C (LLVM's, while numba compiles or loads a kernel) is printed and dropped by
#: ctypes, so the work goes on: long loops call :func:`raise_if_arrived` to stop there.
arrived: list[int] = []


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is, so that it unwinds as for Ctrl-C: outputs being
    written are removed, worker processes stopped; the status is 143 rather than 130."""


def raise_if_arrived() -> None:
    """Raise the interruption of a signal that arrived, in case its exception was lost."""
    if arrived:
        raise Terminated() if arrived[-1] == signal.SIGTERM else KeyboardInterrupt()


@contextlib.contextmanager
def held(signals: tuple[int, ...] = STOP_SIGNALS) -> Iterator[None]:
    """Within, ``signals`` are recorded instead of handled; on leaving, the first one recorded
    is delivered again to the handler restored (only the main thread handles signals;
    elsewhere this does nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []

    def record(signum, frame):
        arrived.append(signum)

    previous = {sig: signal.signal(sig, record) for sig in signals}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if arrived:
            signal.raise_signal(arrived[0])


@contextlib.contextmanager
def starting_children(signals: tuple[int, ...] = STOP_SIGNALS) -> Iterator[None]:
    """Held (see :func:`held`) while child processes are started within, and blocked in this
    thread too, so that a forked child starts with them blocked: no signal reaches it before
    it calls :func:`ignore_in_child`. (A child that executes a new interpreter, multiprocessing's
    ``spawn``, starts with them unblocked and the defaults: a signal during its start-up ends
    it, and the parent, which has the same signal, ends the others.)"""
    with held(signals):
        signal.pthread_sigmask(signal.SIG_BLOCK, signals)
        try:
            yield
        finally:  # one that arrived meanwhile is recorded now, and delivered by held
            signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)


def ignore_in_child(signals: tuple[int, ...] = STOP_SIGNALS) -> None:
    """In a child started under :func:`starting_children`: ignore ``signals`` (the parent
    acts on them and ends its children itself), then unblock them."""
    for sig in signals:
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)
