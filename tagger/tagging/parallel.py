"""Tagging a large input with several processes, in constant memory, output in input order.

The main process only cuts the input's bytes into blocks of whole sentences (at blank lines,
or at line ends for one-sentence-per-line formats) and writes finished text; the worker
processes each load the model once and do everything else on a block: parse, featurize,
decode (numba, one thread each), format. At most ``2 * jobs`` blocks are in flight, so memory
does not grow with the input, and results are written in the order the blocks were read.
"""

from __future__ import annotations

import io
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Iterator

from tagger.errors import CorpusFormatError
from tagger.io import gc_paused, read_corpus, write_corpus
from tagger.io.sources import without_gold

#: bytes of input per block: about 800 CoNLL-2000 sentences, small enough that the last
#: blocks of an input keep every worker busy, large enough that decoding dominates each one
BLOCK_BYTES = 1 << 18
#: formats whose sentences are separated by blank lines / that hold one sentence per line
BLANK_LINE_FORMATS = ("conll", "conllu", "tab")
LINE_FORMATS = ("text", "raw")
PARALLEL_FORMATS = BLANK_LINE_FORMATS + LINE_FORMATS
#: seconds the blocks in flight may take to finish when tagging stops early (Ctrl-C, an error)
STOP_GRACE_SECONDS = 1.5
#: the signals a terminal (Ctrl-C) or a job scheduler and ``timeout`` (SIGTERM) stop a command
#: with; both may reach the whole process group, workers included
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def iter_blocks(stream, fmt: str, block_bytes: int = BLOCK_BYTES) -> Iterator[tuple[bytes, int]]:
    """``(block, first line number)`` of whole sentences read from a binary stream."""
    buf = b""
    line = 1
    while True:
        data = stream.read(block_bytes)
        if data:
            buf += data
            if len(buf) < block_bytes:
                continue
            if fmt in BLANK_LINE_FORMATS:
                cut = max(buf.rfind(b"\n\n"), buf.rfind(b"\n\r\n"))
                cut = -1 if cut < 0 else buf.index(b"\n", cut + 1) + 1
            else:
                cut = buf.rfind(b"\n") + 1 or -1
            if cut <= 0:
                continue  # one sentence longer than a block: read on
            block, buf = buf[:cut], buf[cut:]
        else:
            block, buf = buf, b""
        if block:
            yield block, line
            line += block.count(b"\n")
        if not data:
            return


# ------------------------------------------------------------------------------------------
# worker side

_WORKER: dict = {}


def _init_worker(model_path: str, options: dict, stopping) -> None:
    from tagger import jit

    # Ctrl-C and SIGTERM reach the whole process group; only the main process may act on
    # them. A worker interrupted while it holds the pool's queue lock would leave the pool
    # unable to stop, and one killed while it sends a result would leave half a message that
    # the pool's result thread waits on forever. SIGTERM stays the pool's way to end its
    # workers, so it ends a worker once the main process has said it is stopping them.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def on_sigterm(signum, frame):
        if stopping.value:
            os._exit(0)

    signal.signal(signal.SIGTERM, on_sigterm)

    jit.set_threads(1)  # the processes share the cores, not the threads of one kernel
    if "tagger" not in _WORKER:  # not inherited through fork
        from tagger.api import Tagger

        _WORKER["tagger"] = Tagger.load(model_path)
    _WORKER["options"] = options


def warm_up(tagger) -> None:
    """Load the compiled kernels once in the parent, so that forked workers inherit them
    instead of each loading them from numba's cache."""
    from tagger.sentence import Sentence

    n = tagger.featurizer_.spec.n_columns
    tagger.predict([Sentence([["warm", "up"] for _ in range(n)])])


def _tag_block(block: bytes, first_line: int):
    """Tag one block; returns ``("ok", text, n_fields)`` or ``("error", message)``."""
    tagger, o = _WORKER["tagger"], _WORKER["options"]
    spec = tagger.featurizer_.spec
    fh = io.BytesIO(block)
    fh.name = o["name"]
    try:
        with gc_paused():
            return _tag_sentences(tagger, spec, fh, o)
    except CorpusFormatError as exc:
        msg = str(exc)
        if exc.path is not None and exc.line is not None:
            msg = msg[len(f"{exc.path}:{exc.line}: ") :]
            return "error", f"{o['name']}:{exc.line + first_line - 1}: {msg}"
        return "error", msg
    except Exception as exc:  # anything else is reported by the main process, not lost
        return "error", f"{o['name']}: {type(exc).__name__}: {exc}"


def _tag_sentences(tagger, spec, fh, o):
    if o["label_column"] is None:
        sents = read_corpus(fh, o["format"], labeled=False, **o["read_options"])
        sents = without_gold(sents, spec.n_columns, ", ".join(spec.columns), o["name"])
    else:
        sents = read_corpus(fh, o["format"], label_column=o["label_column"], **o["read_options"])
    sents = list(sents)
    n_fields = len(sents[0].columns) if sents else None
    out = io.StringIO()
    labels = [labs for _, labs in tagger.tag_stream(sents)]
    write_corpus(out, sents, labels, **o["write_options"])
    return "ok", out.getvalue(), n_fields


# ------------------------------------------------------------------------------------------
# main side


def tag_parallel(
    model_path: str,
    stream,
    out,
    fmt: str,
    jobs: int,
    name: str,
    label_column: int | None = None,
    write_options: dict | None = None,
    block_bytes: int | None = None,
    tagger=None,
    read_options: dict | None = None,
) -> None:
    """Tag the binary ``stream`` (format ``fmt``, already detected) into the text file ``out``
    with ``jobs`` worker processes. ``tagger``, the model already loaded, is handed to forked
    workers as it is."""
    import multiprocessing as mp

    if fmt not in PARALLEL_FORMATS:
        raise ValueError(f"parallel tagging reads {', '.join(PARALLEL_FORMATS)}; got {fmt}")
    options = {
        "format": fmt,
        "label_column": label_column,
        "name": name,
        "write_options": dict(write_options or {}),
        "read_options": dict(read_options or {}),
    }
    # fork only from a process with no other Python thread: a child forked while another
    # thread holds a lock (an IO loop a Dask client left running in the same process, a
    # logging handler) waits on it forever; otherwise spawned workers load the model themselves
    fork = "fork" in mp.get_all_start_methods() and threading.active_count() == 1
    ctx = mp.get_context("fork") if fork else mp.get_context("spawn")
    if fork:
        if tagger is None:
            from tagger.api import Tagger

            tagger = Tagger.load(model_path)
        warm_up(tagger)
        _WORKER["tagger"] = tagger
    import gc

    gc.freeze()  # objects made so far stay out of the collector: fork shares their pages
    # set by _stop before it ends the workers: until then they ignore SIGTERM
    stopping = ctx.RawValue("b", 0)
    # the workers start with SIGINT and SIGTERM ignored (inherited at fork: no window before
    # the initializer), the main process keeps its own handlers
    handlers = {sig: signal.signal(sig, signal.SIG_IGN) for sig in STOP_SIGNALS}
    try:
        pool = ctx.Pool(
            jobs, initializer=_init_worker, initargs=(os.fspath(model_path), options, stopping)
        )
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    pending: deque = deque()
    n_fields = None

    def finish():
        nonlocal n_fields
        res, line = pending.popleft()
        result = res.get()
        if result[0] == "error":
            raise CorpusFormatError(result[1])
        _, text, nf = result
        if nf is not None and fmt == "conll":
            if n_fields is None:
                n_fields = nf
            elif nf != n_fields:
                raise CorpusFormatError(
                    f"the token lines from here on have {nf} fields, those "
                    f"above {n_fields}; every line needs the same fields",
                    name,
                    line,
                )
        out.write(text)

    try:
        for block, line in iter_blocks(stream, fmt, block_bytes or BLOCK_BYTES):
            pending.append((pool.apply_async(_tag_block, (block, line)), line))
            if len(pending) >= 2 * jobs:
                finish()
        while pending:
            finish()
        pool.close()
    finally:
        _stop(pool, [res for res, _ in pending], stopping)
        _WORKER.clear()
        gc.unfreeze()


def _stop(pool, in_flight: list, stopping, grace: float = STOP_GRACE_SECONDS) -> None:
    """Stop the pool without hanging, whatever interrupted the main process.

    A worker killed while it sends a result leaves half a message in the result pipe, and the
    pool's result thread then waits for the rest forever (so would ``terminate``). So the
    blocks in flight (at most two per worker) are let finish first, for up to ``grace``
    seconds, with a second Ctrl-C or SIGTERM ignored meanwhile; only then are the workers
    told that SIGTERM now ends them, and stopped."""
    handlers = {sig: signal.signal(sig, signal.SIG_IGN) for sig in STOP_SIGNALS}
    try:
        pool.close()
        deadline = time.monotonic() + grace
        for res in in_flight:
            res.wait(max(0.0, deadline - time.monotonic()))
        stopping.value = 1
        pool.terminate()
        pool.join()
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
