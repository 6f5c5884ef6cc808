"""tagger.signals: Ctrl-C and SIGTERM held over a stretch of work and delivered after it, to
the handler in place then; forked children started under ``starting_children`` receive
neither before they ignore them."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal

import pytest

from tagger.signals import STOP_SIGNALS, held, ignore_in_child, starting_children


class Raised(Exception):
    pass


@pytest.fixture()
def raising_handlers():
    """Handlers that raise as the command line's do, with the signal's number."""

    def handler(signum, frame):
        raise Raised(signum)

    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    yield
    for sig, h in previous.items():
        signal.signal(sig, h)


@pytest.mark.parametrize("sig", STOP_SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_signal_within_is_delivered_on_the_way_out(raising_handlers, sig):
    steps = []
    with pytest.raises(Raised) as raised:
        with held():
            os.kill(os.getpid(), sig)
            steps.append("after the signal")  # not cut here
        steps.append("after the block")  # the handler raised on leaving it
    assert raised.value.args == (sig,)
    assert steps == ["after the signal"]
    # the handlers are the ones from before
    assert signal.getsignal(sig) is not None and signal.getsignal(sig) is not signal.SIG_IGN


def test_only_the_first_signal_is_delivered_and_nothing_without_one(raising_handlers):
    with held():
        pass  # nothing arrived: nothing raised
    with pytest.raises(Raised) as raised:
        with held():
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGINT)
    assert raised.value.args == (signal.SIGTERM,)


def test_an_ignored_signal_stays_ignored():
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with held():
            os.kill(os.getpid(), signal.SIGTERM)
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN  # and the process lives
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_an_exception_within_still_restores_the_handlers(raising_handlers):
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(ValueError):
        with held():
            raise ValueError("work failed")
    assert signal.getsignal(signal.SIGINT) is before


def _report_start(conn) -> None:
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    conn.send(sorted(int(s) for s in blocked & set(STOP_SIGNALS)))
    ignore_in_child()
    conn.send(
        [
            sorted(
                int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, []) & set(STOP_SIGNALS)
            ),
            [signal.getsignal(s) is signal.SIG_IGN for s in STOP_SIGNALS],
        ]
    )
    os.kill(os.getpid(), signal.SIGTERM)  # ignored: the child carries on
    conn.send("alive")


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_child_starts_with_the_signals_blocked_then_ignores_them(raising_handlers, method):
    if method not in mp.get_all_start_methods():
        pytest.skip(f"no {method} here")
    ctx = mp.get_context(method)
    ours, theirs = ctx.Pipe()
    with pytest.raises(Raised):
        with starting_children():
            child = ctx.Process(target=_report_start, args=(theirs,))
            child.start()
            os.kill(os.getpid(), signal.SIGINT)  # held in the parent meanwhile
    blocked_at_start = ours.recv()
    if method == "fork":  # a new interpreter starts with its own mask and handlers
        assert blocked_at_start == sorted(int(s) for s in STOP_SIGNALS)
    assert ours.recv() == [[], [True, True]]
    assert ours.recv() == "alive"
    child.join(30)
    assert child.exitcode == 0
    assert not signal.pthread_sigmask(signal.SIG_BLOCK, []) & set(STOP_SIGNALS)
