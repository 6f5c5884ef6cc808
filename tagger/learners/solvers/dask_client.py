"""A connection to the Dask scheduler a learner's ``scheduler`` setting names, shared by the
learners that send work to a cluster (:mod:`tagger.learners.solvers.unlabeled_decoding`,
:mod:`tagger.learners.solvers.distributed_objective`).

Dask is an optional dependency (the ``[dask]`` extra): without it, or without a scheduler
answering at the address, training stops with one line that names the fix before any work is
sent.
"""

from __future__ import annotations

import os

from tagger.errors import TaggerError, bad_value

#: how long to wait for the scheduler to answer
CONNECT_TIMEOUT = "10s"
#: Dask's transports; those that run over TCP are probed before Dask is asked to connect
PROTOCOLS = ("tcp", "tls", "ws", "wss", "ucx", "inproc")
TCP_PROTOCOLS = ("tcp", "tls", "ws", "wss")
#: the dashboard's port: an http:// address there is the dashboard's, not the scheduler's
DASHBOARD_PORT = 8787


class SchedulerAddressError(TaggerError, ValueError):
    """A scheduler address that is not one (no port, an unknown protocol, a file name)."""


def connect(scheduler: str):
    """A ``dask.distributed.Client`` of the scheduler at ``scheduler``; :class:`TaggerError`
    when Dask is not installed or nothing answers there."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise TaggerError("scheduler= needs Dask: pip install 'sparse-m3n-tagger[dask]'") from None
    try:
        return Client(scheduler, timeout=CONNECT_TIMEOUT)
    except (OSError, ValueError, TypeError) as e:
        raise TaggerError(
            f"no Dask scheduler answers at {scheduler} ({e}); start one "
            "(dask scheduler, or a LocalCluster) or leave scheduler unset"
        ) from None


def check_scheduler_setting(settings: dict, owner: str) -> None:
    """The shape of a learner's ``scheduler`` setting, before any data is read (whether a
    scheduler answers there is found at the first fit): a :class:`ParameterError` naming it."""
    where = settings.get("scheduler")
    if not where:
        return
    try:
        check_scheduler_address(where)
    except SchedulerAddressError as exc:
        raise bad_value(
            "scheduler",
            "a string: a Dask scheduler's address such as tcp://host:8786, or empty "
            f"({str(exc).split(';')[0]})",
            where,
            owner,
        ) from None


def worker_count(client) -> int:
    """How many workers the scheduler has now (at least 1)."""
    return max(1, len(client.scheduler_info()["workers"]))


def check_scheduler_address(address: str) -> tuple[str, str, int | None]:
    """``(protocol, host, port)`` of a Dask scheduler address (``tcp://host:8786``,
    ``host:8786``, ``tls://...``); :class:`SchedulerAddressError` for anything else. The port
    is None for the transports without one (``inproc``, ``ucx``)."""
    text = address.strip() if isinstance(address, str) else address
    example = "give the scheduler's address, such as tcp://host:8786"
    if not isinstance(text, str) or not text:
        raise SchedulerAddressError(f"the scheduler address is empty; {example}")
    if os.path.isfile(text):
        raise SchedulerAddressError(
            f"{address!r} is a file, not an address; {example} (a scheduler file holds it "
            f"under 'address')"
        )
    protocol, sep, rest = text.partition("://")
    if not sep:
        protocol, rest = "tcp", text
    if protocol in ("http", "https"):
        raise SchedulerAddressError(
            f"{address!r} is a web address (the dashboard's, on port {DASHBOARD_PORT} by "
            f"default); {example}"
        )
    if protocol not in PROTOCOLS:
        raise SchedulerAddressError(
            f"{address!r}: unknown protocol {protocol!r} (Dask speaks "
            f"{', '.join(PROTOCOLS)}); {example}"
        )
    if protocol not in TCP_PROTOCOLS:
        return protocol, rest, None
    host, port = _host_port(rest)
    if not host or any(c.isspace() for c in host) or "/" in host:
        raise SchedulerAddressError(f"{address!r} is not an address; {example}")
    if port is None:
        raise SchedulerAddressError(f"{address!r} has no port number; {example}")
    # ASCII digits only: str.isdigit() also takes superscripts ('²'), which int() refuses, and
    # other scripts' digits, which int() reads but no socket address is written with
    if not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
        raise SchedulerAddressError(
            f"{address!r}: the port {port!r} is not a number from 1 to 65535; {example}"
        )
    return protocol, host, int(port)


def _host_port(rest: str) -> tuple[str, str | None]:
    """Host and port text of ``host:port`` or ``[v6 address]:port`` (port None if absent)."""
    if rest.startswith("["):
        host, _, tail = rest[1:].partition("]")
        return host, tail[1:] if tail.startswith(":") else None
    host, sep, port = rest.rpartition(":")
    return (host, port) if sep else (rest, None)
