"""The Hugging Face hub as :mod:`tagger.io.hf` meets it: whether it answers (within seconds,
rather than after datasets' minutes of retries), and ``datasets`` kept quiet while it loads
for us (its progress bars and log lines off, the hub's timeouts short)."""

from __future__ import annotations

import contextlib
import http.client
import os
import socket
import ssl
from urllib.parse import urlsplit

from tagger.errors import DatasetSourceError

#: seconds the hub has to accept a connection and to answer a request (the check below)
_HUB_TIMEOUT = 5.0
#: huggingface_hub's timeouts while we load (seconds; theirs are 10 for metadata requests and
#: 10 for downloads, retried several times)
_HUB_TIMEOUTS = {"HF_HUB_ETAG_TIMEOUT": 10, "HF_HUB_DOWNLOAD_TIMEOUT": 20}
OFFLINE_HINT = (
    "download the data elsewhere and give local files instead: a CoNLL file as "
    "it is, 'hf:conll:train.txt', or a file saved with Dataset.to_parquet / "
    "to_json ('train.parquet', 'train.jsonl'); with the dataset already in the "
    "local cache, set HF_HUB_OFFLINE=1"
)


def offline_requested() -> bool:
    return any(
        os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
        for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    )


def _hub_endpoint() -> str:
    # the environment first: huggingface_hub reads HF_ENDPOINT once, when it is imported
    if os.environ.get("HF_ENDPOINT"):
        return os.environ["HF_ENDPOINT"].rstrip("/")
    try:
        return _hub_constants().ENDPOINT
    except Exception:  # pragma: no cover - huggingface_hub always comes with datasets
        return "https://huggingface.co"


def check_hub_reachable(name: str) -> None:
    """Fail within seconds, with a way out, when the hub cannot be reached.

    Without this, ``load_dataset`` on a machine without network retries for a long time and
    ends with an error that does not say what to do.
    """
    endpoint = _hub_endpoint()
    parts = urlsplit(endpoint)
    host = parts.hostname or endpoint
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=_HUB_TIMEOUT):
            pass
    except OSError as exc:
        why = exc.strerror or str(exc) or type(exc).__name__
        raise DatasetSourceError(
            f"hf:{name}: cannot reach the Hugging Face hub at {endpoint} ({why}); {OFFLINE_HINT}"
        ) from None
    # a server that accepts connections but never answers (a proxy that hangs, a port held by
    # something else) would keep datasets retrying for minutes: ask once, with a timeout
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    kwargs = {"context": ssl.create_default_context()} if parts.scheme == "https" else {}
    conn = cls(host, port, timeout=_HUB_TIMEOUT, **kwargs)
    try:
        conn.request("HEAD", f"{parts.path.rstrip('/')}/api/datasets/{name}")
        conn.getresponse()
    except (OSError, http.client.HTTPException) as exc:
        why = (
            f"no answer within {_HUB_TIMEOUT:g} s"
            if isinstance(exc, TimeoutError)
            else getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        )
        raise DatasetSourceError(
            f"hf:{name}: the Hugging Face hub at {endpoint} does not answer ({why}); {OFFLINE_HINT}"
        ) from None
    finally:
        conn.close()


@contextlib.contextmanager
def quiet_datasets():
    """``datasets``' progress bars and log lines off while it loads for us: the tagger reports
    what goes wrong in its own one line (and with ``-q`` nothing else may be printed); the
    caller's settings come back afterwards. The hub's timeouts are kept short, so that a hub
    that does not answer fails in seconds instead of retrying for minutes."""
    import datasets
    from datasets.utils import logging as ds_logging

    bars = datasets.is_progress_bar_enabled()
    verbosity = ds_logging.get_verbosity()
    hub = _hub_constants()
    saved = {k: getattr(hub, k) for k in _HUB_TIMEOUTS if hasattr(hub, k)}
    datasets.disable_progress_bar()
    ds_logging.set_verbosity(ds_logging.CRITICAL + 1)
    for key, value in saved.items():
        setattr(hub, key, min(value, _HUB_TIMEOUTS[key]))
    try:
        yield
    finally:
        ds_logging.set_verbosity(verbosity)
        if bars:
            datasets.enable_progress_bar()
        for key, value in saved.items():
            setattr(hub, key, value)


def _hub_constants():
    from huggingface_hub import constants

    return constants
