"""Tagging a sharded corpus on a Dask cluster (``tagger tag MODEL 'shards/*.txt' --output-dir
DIR [--scheduler ADDRESS]``): one task per input shard, one output shard of the same name per
input, each written atomically, so that a shard's output exists only once it is whole.

- **Resumable**: a shard whose output already exists is not tagged again, so rerunning the
  command after a failure (a killed worker, a lost machine) does only what is left. Dask itself
  reruns the tasks of a worker that dies during the run; the partial file such a worker leaves
  (``.tagger-*.part``) is removed once every shard is whole.
- **The model travels once**: its bytes (the model file's own, when given a path) are scattered
  to every worker (``broadcast=True``) and each worker process loads them once (cached by
  their digest), not once per shard. Local workers forked from this process hold the loaded
  model already and get nothing.
- **Checked first**: the inputs, the output directory and the scheduler's address are checked
  (:mod:`tagger.integrations.shard_checks`) before the model is loaded or anything is created.
- **A shard's bad input is one error**: a worker reports a shard it cannot tag (not text,
  empty, unreadable) as a value, not as a failed task (which Dask would log with its
  traceback); the first such error stops the run and names the shard.
- **Stopping** (Ctrl-C, SIGTERM, a shard's error): local workers, which ignore the terminal's
  signals so that only this process acts on them, are killed at once and the partial files
  they leave removed; the shards already whole stay, and a rerun does the rest.
- **No scheduler given**: a local scheduler and ``workers`` worker processes with one thread
  each (the kernels use one core per process, as ``--jobs`` does). Where this process runs no
  other thread yet (the command line), the workers are forked *before* the scheduler starts,
  after the model is loaded (they load its kernels while the scheduler starts). Forking
  once the scheduler's threads run is not safe (a child forked while one of them holds a lock,
  an output stream's while it logs, waits for it forever: seen in a test run), and neither is
  forking beside a caller's own threads; then Dask spawns the workers, and each imports the
  package and loads the kernels itself.

Why Dask: it is what the scientific Python stack already runs on (numpy, pandas, scikit-learn's
joblib backend), a ``LocalCluster`` needs nothing installed but the package, its scheduler
places tasks near their data and reruns a dead worker's tasks, and ``dask.bag`` /
``dask.dataframe`` are the collections a user of large corpora already has. Ray and Spark
would each bring a runtime (a raylet, a JVM) far larger than this job needs.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import signal
import threading
from dataclasses import dataclass
from pathlib import Path

from tagger.errors import TaggerError, describe, one_line
from tagger.integrations.shard_checks import (
    check_output_dir,
    check_scheduler_address,
    expand_inputs,
    probe_scheduler,
)
from tagger.signals import STOP_SIGNALS, ignore_in_child, starting_children

__all__ = ["ShardResult", "expand_inputs", "tag_shards"]

#: the worker process's models, by the digest of their bytes
_MODELS: dict[str, object] = {}
#: how long forked local workers may take to join the scheduler
WORKER_START_SECONDS = 120
#: how long Dask may take to greet us at an address whose port accepts connections
CONNECT_TIMEOUT = "10s"
#: a local scheduler without a dashboard, whose HTTP server (health checks) takes any free
#: port: on its default, 8787, it would print a warning whenever another cluster runs
LOCAL_SCHEDULER = {"dashboard_address": None, "scheduler_kwargs": {"dashboard_address": ":0"}}


@dataclass
class ShardResult:
    input: str
    output: str
    status: str  # "tagged", or "skipped" (its output was already there)


def _client(scheduler: str | None, workers: int, tagger, digest: str):
    """(client, cluster to close or None, whether the workers hold the model already)."""
    try:
        import dask
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise TaggerError(
            "sharded tagging needs Dask: pip install 'sparse-m3n-tagger[dask]'"
        ) from None
    if scheduler is not None:
        probe_scheduler(scheduler)
        try:
            return Client(scheduler, timeout=CONNECT_TIMEOUT), None, False
        except OSError as exc:  # the port is open but no scheduler greets us
            raise TaggerError(
                f"no Dask scheduler answers at {scheduler} ({one_line(describe(exc))}); "
                f"check the address (dask scheduler prints it)"
            ) from None
    import multiprocessing as mp

    if threading.active_count() == 1 and "fork" in mp.get_all_start_methods():
        return (*_forked_cluster(workers, tagger, digest), True)
    # other threads run here: spawned workers (see the module docstring)
    with dask.config.set({"distributed.worker.multiprocessing-method": "spawn"}), _own_environ():
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, **LOCAL_SCHEDULER
        )
    return Client(cluster), cluster, False


@contextlib.contextmanager
def _own_environ():
    """Give the process its environment back after Dask started a local cluster: Dask sets
    ``OMP_NUM_THREADS=1`` (and MKL's, OpenBLAS's) in the calling process for its workers, and
    leaves it there, where a later training of the same process would take it for the user's
    thread count."""
    before = dict(os.environ)
    try:
        yield
    finally:
        for name in set(os.environ) - set(before):
            del os.environ[name]
        os.environ.update(before)


class _ForkedWorkers:
    """A scheduler in this process and worker processes forked before it started."""

    def __init__(self, cluster, processes):
        self.cluster, self.processes = cluster, processes

    def close(self, wait: float = 10.0) -> None:
        """Close the scheduler, which closes its workers; those that have not exited after
        ``wait`` seconds (0: stopping now) are killed (they ignore SIGTERM)."""
        if wait <= 0:
            self.kill()
        self.cluster.close()
        for p in self.processes:
            p.join(wait)
        self.kill()

    def kill(self) -> None:
        for p in self.processes:
            if p.is_alive():
                p.kill()
                p.join(5)


def _forked_cluster(workers: int, tagger, digest: str):
    """``workers`` processes forked from this one while it runs no other thread (the model
    loaded), then a scheduler they join. Each loads the kernels while the scheduler starts."""
    import multiprocessing as mp

    from dask.distributed import Client, LocalCluster

    _MODELS[digest] = tagger
    ctx = mp.get_context("fork")
    pipes, processes = [], []
    # the workers start with Ctrl-C and SIGTERM held, and ignore them from their first line:
    # a terminal or a job scheduler signals the whole process group, and this process alone
    # decides how its workers stop (one that arrives meanwhile acts here once they started)
    with starting_children():
        for _ in range(workers):
            ours, theirs = ctx.Pipe()
            p = ctx.Process(target=_serve, args=(theirs, digest), daemon=True)
            p.start()
            theirs.close()
            pipes.append(ours)
            processes.append(p)
    with _own_environ():
        cluster = LocalCluster(n_workers=0, processes=True, **LOCAL_SCHEDULER)
    try:
        for pipe in pipes:
            pipe.send(cluster.scheduler_address)
            pipe.close()
        client = Client(cluster)
        client.wait_for_workers(workers, timeout=WORKER_START_SECONDS)
    except BaseException as exc:
        dead = [p.exitcode for p in processes if p.exitcode is not None]
        _ForkedWorkers(cluster, processes).close(wait=0.0)
        if isinstance(exc, (TimeoutError, BrokenPipeError)):  # a worker died or hung
            why = (
                f"{len(dead)} of them exited (codes {dead})"
                if dead
                else f"they did not join within {WORKER_START_SECONDS} s"
            )
            raise TaggerError(
                f"the {workers} local Dask workers did not start: {why}; run "
                f"again, or give --scheduler ADDRESS of a running "
                f"cluster"
            ) from None
        raise
    return client, _ForkedWorkers(cluster, processes)


def _serve(pipe, digest: str) -> None:
    """A forked worker process: the kernels of the model ``digest`` loaded, then a Dask worker
    of one thread at the address it is sent."""
    import asyncio

    from distributed import Worker

    from tagger import jit
    from tagger.tagging.parallel import warm_up

    ignore_in_child()
    jit.set_threads(1)
    warm_up(_MODELS[digest])
    # as quiet as a LocalCluster's own workers
    logging.getLogger("distributed").setLevel(logging.WARNING)
    address = pipe.recv()
    pipe.close()

    async def run():
        async with Worker(address, nthreads=1) as worker:
            await worker.finished()

    # SIGINT is ignored (inherited), so asyncio.run installs no handler of its own for it
    asyncio.run(run())


def _tag_shard(
    model_bytes: bytes | None, digest: str, shard: str, output: str, options: dict
) -> tuple[str, str]:
    """Runs on a worker: the shard tagged into ``output`` (atomically). ``model_bytes`` is
    None on a forked local worker, which holds the model from before the fork. Returns
    ``("ok", output)`` or, for input it cannot tag, ``("error", message)``: a task that
    raised would be logged by the worker with its traceback, a value is not."""
    from tagger import jit
    from tagger.api import Tagger
    from tagger.tagging.files import tag_file

    jit.set_threads(1)
    tagger = _MODELS.get(digest)
    if tagger is None:
        tagger = _MODELS[digest] = Tagger.from_bytes(model_bytes)
    try:
        tag_file(tagger, shard, output, **options)
    except (TaggerError, OSError, UnicodeDecodeError) as exc:
        message = one_line(describe(exc))
        if shard not in message:
            message = f"{shard}: {message}"
        return "error", message
    return "ok", output


def tag_shards(
    model_path,
    inputs,
    output_dir,
    scheduler: str | None = None,
    workers: int = 2,
    progress=None,
    **options,
) -> list[ShardResult]:
    """Tag every input shard into ``output_dir`` (same file names) on a Dask cluster, skipping
    shards already done. ``scheduler``: the address of a running scheduler (None: a local
    cluster of ``workers`` processes). ``options`` are
    :func:`tagger.tagging.files.tag_file`'s (format, label_column, conllu_label,
    output_format...). ``progress(result)`` is called as each shard finishes.

    Everything that can be checked beforehand is (the address, the inputs, the output
    directory, the model, whether a scheduler listens there) before the output directory is
    created; a shard that cannot be tagged raises a :class:`~tagger.errors.TaggerError`
    naming it, after the shards already finished were kept."""
    from tagger.api import Tagger

    if scheduler is not None:
        check_scheduler_address(scheduler)
    shards = expand_inputs(inputs)
    check_output_dir(output_dir, shards)
    if isinstance(model_path, Tagger):
        tagger, model_bytes = model_path, None
    else:  # the file's bytes are the model's: no second serialization to ship it
        tagger, model_bytes = Tagger.load(model_path), Path(model_path).read_bytes()
    out_dir = Path(output_dir)
    plan = [(s, str(out_dir / os.path.basename(s))) for s in shards]
    results = [ShardResult(s, o, "skipped") for s, o in plan if os.path.exists(o)]
    todo = [(s, o) for s, o in plan if not os.path.exists(o)]
    for r in results:
        if progress is not None:
            progress(r)
    if not todo:
        return results
    if model_bytes is None:
        model_bytes = tagger.to_bytes()
    digest = hashlib.sha256(model_bytes).hexdigest()
    client, cluster, forked = _client(scheduler, workers, tagger, digest)
    finished = False
    try:
        from dask.distributed import as_completed

        out_dir.mkdir(parents=True, exist_ok=True)
        # forked workers hold the model already; others get its bytes once each
        model = None if forked else client.scatter(model_bytes, broadcast=True)
        futures = {
            client.submit(
                _tag_shard,
                model,
                digest,
                s,
                o,
                options,
                pure=False,
                key=f"tag-{digest[:12]}-{os.path.basename(s)}",
            ): (s, o)
            for s, o in todo
        }
        for future in as_completed(futures):
            s, o = futures[future]
            status, text = future.result()
            if status == "error":
                raise TaggerError(text)
            results.append(ShardResult(s, o, "tagged"))
            if progress is not None:
                progress(results[-1])
        finished = True
    finally:
        _close(client, cluster, finished, out_dir)
    order = {s: i for i, s in enumerate(shards)}
    return sorted(results, key=lambda r: order[r.input])


def _close(client, cluster, finished: bool, out_dir: Path) -> None:
    """Close the client and a local cluster, at once when the run did not finish (its
    workers killed), with a second Ctrl-C or SIGTERM ignored meanwhile; then remove the
    partial files that killed workers left, once none of ours can still write one."""
    # a run that stops early: the scheduler in this process may still log about the tasks it
    # drops (a gather of keys the client has just forgotten); the command says one line
    scheduler_log = logging.getLogger("distributed")
    level = scheduler_log.level
    if not finished:
        scheduler_log.setLevel(logging.CRITICAL)
    with stop_signals_ignored():
        try:
            # the client first: the scheduler forgets its tasks, so that workers killed next
            # lose none that it would report as lost
            client.close()
            if not finished and isinstance(cluster, _ForkedWorkers):
                cluster.kill()
            if isinstance(cluster, _ForkedWorkers):
                cluster.close(wait=10.0 if finished else 0.0)
            elif cluster is not None:
                cluster.close()
        finally:
            scheduler_log.setLevel(level)
        # every shard is whole, or every local worker is gone: a partial file here was a
        # killed worker's (a remote cluster's workers may still be writing theirs)
        if (finished or cluster is not None) and out_dir.is_dir():
            for stale in out_dir.glob(".tagger-*.part"):
                stale.unlink(missing_ok=True)


@contextlib.contextmanager
def stop_signals_ignored():
    """Ctrl-C and SIGTERM ignored in this process meanwhile (only the main thread may set
    signal handlers; elsewhere this does nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers = {sig: signal.signal(sig, signal.SIG_IGN) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
