"""Tagging a large input with several processes, in constant memory, output in input order.

The main process only cuts the input's bytes into blocks of whole sentences (at blank lines,
or at line ends for one-sentence-per-line formats) and writes finished text; the worker
processes each load the model once and do everything else on a block: parse, featurize,
decode (numba, one thread each), format. At most ``2 * jobs`` blocks are read and not yet
written, so memory does not grow with the input, and results are written in the order the
blocks were read.

Each worker has a pipe for its blocks and one for its results, which the main process reads
itself: no thread of a pool sits between them. So stopping early (Ctrl-C, SIGTERM, an error)
is always the same few steps: the workers, which ignore both signals, are killed and reaped,
and whatever a killed worker was sending is left unread. There is no state a signal can
catch half-changed that the stop then waits on (a pool's result thread waits forever on half
a message, its queue lock on a worker killed while holding it).
"""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Iterator

from tagger.errors import CorpusFormatError
from tagger.io import gc_paused, read_corpus, write_corpus
from tagger.io.sources import without_gold
from tagger.signals import held, ignore_in_child, raise_if_arrived, starting_children

#: bytes of input per block: about 800 CoNLL-2000 sentences, small enough that the last
#: blocks of an input keep every worker busy, large enough that decoding dominates each one
BLOCK_BYTES = 1 << 18
#: formats whose sentences are separated by blank lines / that hold one sentence per line
BLANK_LINE_FORMATS = ("conll", "conllu", "tab")
LINE_FORMATS = ("text", "raw")
PARALLEL_FORMATS = BLANK_LINE_FORMATS + LINE_FORMATS


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


def _serve(model_path: str, options: dict, blocks, results, inherited: list) -> None:
    """A worker: tag each ``(index, block, first line)`` received on ``blocks`` and send
    ``(index, result)`` on ``results``, until the main process closes its end."""
    # Ctrl-C and SIGTERM reach the whole process group; only the main process acts on them,
    # and it ends the workers itself. They arrive blocked (see _start_workers), so none
    # reaches a handler of the main process's or a default one before this line.
    ignore_in_child()
    for conn in inherited:  # the other pipes' ends a forked worker holds: see _start_workers
        conn.close()
    failed = None
    try:
        from tagger import jit

        jit.set_threads(1)  # the processes share the cores, not the threads of one kernel
        if "tagger" not in _WORKER:  # not inherited through fork
            from tagger.api import Tagger

            _WORKER["tagger"] = Tagger.load(model_path)
        _WORKER["options"] = options
    except Exception as exc:  # reported by the main process, for each block
        failed = ("error", f"{options['name']}: {type(exc).__name__}: {exc}")
    while True:
        try:
            index, block, first_line = blocks.recv()
        except (EOFError, OSError):  # the main process is done, or gone
            return
        result = failed or _tag_block(block, first_line)
        try:
            results.send((index, result))
        except OSError:  # the main process is gone
            return


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


class _Worker:
    """A worker process and the main process's ends of its two pipes."""

    def __init__(self, process, blocks, results):
        self.process, self.blocks, self.results = process, blocks, results
        self.busy = False  # a block sent, its result not yet received


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
    import gc
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
    gc.freeze()  # objects made so far stay out of the collector: fork shares their pages
    workers: list[_Worker] = []
    try:
        _start_workers(ctx, fork, jobs, os.fspath(model_path), options, workers)
        _feed(workers, iter_blocks(stream, fmt, block_bytes or BLOCK_BYTES), out, fmt, name)
    finally:
        _end_workers(workers)
        _WORKER.clear()
        gc.unfreeze()


def _start_workers(ctx, fork: bool, jobs: int, model_path: str, options: dict, workers) -> None:
    """Start ``jobs`` workers, appending each to ``workers`` as it starts. Ctrl-C and SIGTERM
    are held meanwhile (delivered after, not lost): a worker must not start with the main
    process's handlers, and the main process must not be interrupted between a fork and
    noting the worker it made, which it could then not end."""
    with starting_children():
        for _ in range(jobs):
            blocks_out, blocks_in = ctx.Pipe(duplex=False)
            results_out, results_in = ctx.Pipe(duplex=False)
            # a forked worker inherits every pipe made so far: it closes the ends that are
            # not its own, so that each worker sees the end of its input when the main
            # process closes it or dies (a spawned worker inherits none)
            ours = [blocks_in, results_out]
            inherited = [*ours, *(c for w in workers for c in (w.blocks, w.results))]
            process = ctx.Process(
                target=_serve,
                args=(model_path, options, blocks_out, results_in, inherited if fork else []),
                daemon=True,
            )
            process.start()
            blocks_out.close()
            results_in.close()
            workers.append(_Worker(process, blocks_in, results_out))


def _feed(workers: list[_Worker], blocks, out, fmt: str, name: str) -> None:
    """Send the blocks to idle workers (one each at a time, so that neither side can block
    sending to the other) and write the results in input order, with at most ``2 * jobs``
    blocks read and not yet written."""
    from multiprocessing.connection import wait

    waiting: list = []  # blocks read and not yet sent: (index, block, first line)
    first_lines: dict[int, int] = {}  # of the blocks read and not yet written
    done: dict[int, tuple] = {}  # results received and not yet written
    read = written = 0
    fields = _SameFields(fmt, name)
    exhausted = False
    while True:
        raise_if_arrived()  # a Ctrl-C lost while the kernels loaded (warm_up) stops here
        while not exhausted and read - written < 2 * len(workers):
            try:
                block, line = next(blocks)
            except StopIteration:
                exhausted = True
                break
            waiting.append((read, block, line))
            first_lines[read] = line
            read += 1
        for w in workers:
            if waiting and not w.busy:
                _send(w, waiting.pop(0), name)
        while written in done:
            result = done.pop(written)
            if result[0] == "error":
                raise CorpusFormatError(result[1])
            _, text, n_fields = result
            fields.check(n_fields, first_lines.pop(written))
            out.write(text)
            written += 1
        if exhausted and written == read:
            return
        busy = [w for w in workers if w.busy]
        if not busy:
            continue  # every block read was written: read more
        ready = wait([w.results for w in busy] + [w.process.sentinel for w in busy])
        for w in busy:
            if w.results in ready or w.process.sentinel in ready:
                index, result = _receive(w, name)
                done[index] = result


class _SameFields:
    """The check that every block of a CoNLL input has as many fields per token line."""

    def __init__(self, fmt: str, name: str):
        self.fmt, self.name, self.n_fields = fmt, name, None

    def check(self, n_fields: int | None, line: int) -> None:
        if n_fields is None or self.fmt != "conll":
            return
        if self.n_fields is None:
            self.n_fields = n_fields
        elif n_fields != self.n_fields:
            raise CorpusFormatError(
                f"the token lines from here on have {n_fields} fields, those above "
                f"{self.n_fields}; every line needs the same fields",
                self.name,
                line,
            )


def _send(w: _Worker, task: tuple, name: str) -> None:
    try:
        w.blocks.send(task)
    except OSError:
        _worker_ended(w, name)
    w.busy = True


def _receive(w: _Worker, name: str) -> tuple:
    try:
        message = w.results.recv()
    except (EOFError, OSError):
        _worker_ended(w, name)
    w.busy = False
    return message


def _worker_ended(w: _Worker, name: str):
    w.process.join(1)
    raise CorpusFormatError(
        f"{name}: a tagging worker process ended unexpectedly (exit status "
        f"{w.process.exitcode}); tag with --jobs 1 to see why"
    ) from None


def _end_workers(workers: list[_Worker]) -> None:
    """Close the pipes and end the workers: those still busy are killed (what they were
    sending is left unread), then every one is reaped. A second Ctrl-C or SIGTERM is held
    meanwhile, so that no worker outlives the command."""
    with held():
        for w in workers:
            w.blocks.close()  # an idle worker reads the end of its input and returns
            if w.busy:
                w.process.kill()
        for w in workers:
            w.process.join(5)
            if w.process.exitcode is None:
                w.process.kill()
                w.process.join()
            w.results.close()
