"""The first ``tagger train`` on a machine compiles its kernels in two processes at once.

Compiling numba kernels is mostly Python (typing and lowering hold the GIL), so threads would
not help; a second process does. The kernels the README's second command compiles, with the
exact argument types it compiles them for, are listed in ``tagger/_kernel_signatures.txt``
(written by ``bench/kernel_signatures.py`` from a run on an empty cache): one *unit* a line,
a kernel and its argument types, the unit whose compilation compiled it (``parent``; -1 for a
call from Python), its compile seconds there and whether the helper process compiles it.

When a run looks like that command (:func:`compile_for_training`: the list's learner, small
local files) and numba's cache lacks units the list names, the run starts one helper process
(``python -c ... helper_main()``) that compiles its share of the units into numba's on-disk
cache and says which it has finished, one line each, on its standard output. Meanwhile this
process compiles the rest: first what reaches none of the helper's kernels, then what does,
each after the helper has finished those (numba then loads them from the cache, keyed by
function and argument types), and at last it waits for the helper to end, so that the run
itself finds everything in the cache. The two never compile the same function at once (numba
rewrites a function's cache index without a lock). Whether a unit reaches a kernel is read
from the code (the kernels its globals name, transitively), so a stale list costs time, never
correctness: whatever the list misses, the run compiles as it would have.

If the helper fails, is killed or says nothing for :data:`STALL_SECONDS`, this process stops
waiting and compiles what it needs itself. An interruption here kills the helper and reaps it
before it propagates; a helper whose parent died ends at its next line (a broken pipe).
A warm cache (every unit found in numba's cache index) starts nothing.

The split was chosen when the list was written, by simulating the two processes with the
recorded seconds (``bench/kernel_signatures.py``). One helper only: the CRF objective's
chain of callees (forward-backward, its callers) must be compiled one after the other, so a
third process would have little to take.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tagger import jit
from tagger.signals import held

#: the list of units shipped with the package
SIGNATURES = Path(__file__).with_name("_kernel_signatures.txt")
#: runs whose training and dev files hold more bytes than this (in all) are not precompiled:
#: their objective's arrays pass :data:`tagger.jit.PARALLEL_MIN_BYTES` and run the parallel
#: kernels, not the serial twins listed (the shipped chunking sample holds 16 KB)
SMALL_INPUT_BYTES = 32 * 1024
#: seconds without a word from the helper after which it is given up (killed)
STALL_SECONDS = 120.0
#: the suffix of a serial twin's name (:class:`tagger.jit.Twins`)
SERIAL = "__serial"


@dataclass(frozen=True)
class Unit:
    """One compilation: ``kernel`` (``module:name``, ``name__serial`` for a serial twin) for
    the argument types ``args`` (:func:`encode_type`), compiled inside the compilation of unit
    ``parent`` (-1: called from Python), in ``seconds`` (its callees' included) when recorded;
    ``helper``: compiled by the helper process."""

    kernel: str
    args: tuple
    parent: int
    seconds: float
    helper: bool

    def line(self) -> str:
        return json.dumps(
            {
                "kernel": self.kernel,
                "args": self.args,
                "parent": self.parent,
                "seconds": round(self.seconds, 2),
                "helper": self.helper,
            }
        )


@dataclass(frozen=True)
class Listing:
    """The list: the learner it was recorded for and its units, in the order compiled."""

    learner: str
    units: tuple[Unit, ...]


def read_listing(path: Path = SIGNATURES) -> Listing:
    """The list at ``path``: ``# learner: NAME`` and other comment lines, then a JSON object a
    line (:meth:`Unit.line`)."""
    learner, units = "", []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# learner:"):
            learner = line.partition(":")[2].strip()
        elif line.strip() and not line.startswith("#"):
            d = json.loads(line)
            units.append(
                Unit(d["kernel"], _frozen(d["args"]), d["parent"], d["seconds"], d["helper"])
            )
    return Listing(learner, tuple(units))


def write_listing(path: Path, listing: Listing, header: Sequence[str]) -> None:
    lines = [f"# {h}" if h else "#" for h in header]
    lines.append(f"# learner: {listing.learner}")
    lines += [u.line() for u in listing.units]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _frozen(value):
    """JSON lists as tuples (units are hashable and compare with encoded types)."""
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


# ---------------------------------------------------------------------------------------------
# Argument types, written as JSON
# ---------------------------------------------------------------------------------------------


def encode_type(t) -> object:
    """A numba type as JSON: ``"int64"``, ``["array", DTYPE, NDIM, LAYOUT, READONLY]``,
    ``["tuple", [ITEMS]]``, ``["namedtuple", "module:Class", [ITEMS]]``, ``["literal", V]``.
    Other types raise ValueError (the kernels take nothing else)."""
    from numba.core import types

    if isinstance(t, types.Array):
        return ("array", str(t.dtype), t.ndim, t.layout, not t.mutable)
    if isinstance(t, types.BaseNamedTuple):
        cls = t.instance_class
        items = tuple(encode_type(x) for x in t.types)
        return ("namedtuple", f"{cls.__module__}:{cls.__qualname__}", items)
    if isinstance(t, types.BaseTuple):
        return ("tuple", tuple(encode_type(x) for x in t.types))
    if isinstance(t, types.Literal) and isinstance(t.literal_value, (bool, int)):
        return ("literal", t.literal_value)
    if isinstance(t, (types.Integer, types.Float, types.Boolean)):
        return str(t)
    raise ValueError(f"no way to write the numba type {t} ({type(t).__name__})")


def decode_type(value):
    """The numba type :func:`encode_type` wrote as ``value``."""
    from numba.core import types

    if isinstance(value, str):
        return _scalar(types, value)
    kind = value[0]
    if kind == "array":
        _, dtype, ndim, layout, readonly = value
        return types.Array(_scalar(types, dtype), ndim, layout, readonly=readonly)
    if kind == "tuple":
        return types.BaseTuple.from_types([decode_type(v) for v in value[1]])
    if kind == "namedtuple":
        module, _, name = value[1].partition(":")
        cls = getattr(importlib.import_module(module), name)
        return types.BaseTuple.from_types([decode_type(v) for v in value[2]], cls)
    if kind == "literal":
        return types.literal(value[1])
    raise ValueError(f"unknown type {value!r}")


def _scalar(types, name: str):
    t = types.boolean if name == "bool" else getattr(types, name, None)
    if not isinstance(t, (types.Integer, types.Float, types.Boolean)):
        raise ValueError(f"unknown scalar type {name!r}")
    return t


# ---------------------------------------------------------------------------------------------
# Kernels by name, and what they reach
# ---------------------------------------------------------------------------------------------


def kernel_name(dispatcher) -> str | None:
    """``module:name`` of a dispatcher of the package's kernels (None for numba's own)."""
    return _qualified(getattr(dispatcher, "py_func", None))


def _qualified(fn) -> str | None:
    module = getattr(fn, "__module__", "") or ""
    if not (module == "tagger" or module.startswith("tagger.")):
        return None
    return f"{module}:{fn.__qualname__}"


def dispatcher_of(name: str):
    """The numba dispatcher a unit's kernel names (numba must have started)."""
    module, _, qualname = name.partition(":")
    serial = qualname.endswith(SERIAL)
    base = qualname[: -len(SERIAL)] if serial else qualname
    obj = vars(importlib.import_module(module))[base]
    if isinstance(obj, jit.Twins):
        return obj.serial if serial else obj.parallel
    if serial or not hasattr(obj, "compile"):
        raise LookupError(f"{name} is no kernel of this version")
    return obj


def _function(name: str) -> str:
    """A unit's function, the same for a kernel and its serial twin."""
    return name[: -len(SERIAL)] if name.endswith(SERIAL) else name


def reach(name: str) -> set[str]:
    """The functions (:func:`_function`) the kernel ``name`` may compile: itself and the
    package's kernels its code names as globals, transitively."""
    module, _, qualname = _function(name).partition(":")
    todo = [vars(importlib.import_module(module))[qualname].py_func]
    seen: set[str] = set()
    while todo:
        fn = todo.pop()
        own = _qualified(fn)
        if own is None or own in seen:
            continue
        seen.add(own)
        space = fn.__globals__
        for global_name in jit.global_names(fn.__code__):
            callee = getattr(space.get(global_name), "py_func", None)
            if callee is not None:
                todo.append(callee)
    return seen


# ---------------------------------------------------------------------------------------------
# Who compiles what, in which order
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """``helper``: the units the helper compiles, in order (each with its callees); ``first``:
    those this process compiles before waiting; ``then``: those it compiles after the helper
    has finished the units ``waits[i]`` (indices into ``helper``)."""

    helper: tuple[int, ...]
    first: tuple[int, ...]
    then: tuple[int, ...]
    waits: dict[int, int]


def plan(units: Sequence[Unit], reaches: dict[str, set[str]] | None = None) -> Plan:
    """Who compiles what: the helper its units whose parent is not its own; this process the
    others whose parent is a call from Python or a unit with a helper's unit below it, first
    those reaching no function the helper compiles, then the rest, each once the helper's units
    it reaches are done (``waits``: how many of the helper's units, counted in its order)."""
    reaches = reaches if reaches is not None else {}

    def reached(i: int) -> set[str]:
        name = units[i].kernel
        if name not in reaches:
            reaches[name] = reach(name)
        return reaches[name]

    above_helper = [False] * len(units)
    for i in range(len(units) - 1, -1, -1):  # children come after their parent
        if units[i].helper or above_helper[i]:
            p = units[i].parent
            if p >= 0:
                above_helper[p] = True
    helper = tuple(
        i for i, u in enumerate(units) if u.helper and (u.parent < 0 or not units[u.parent].helper)
    )
    own = [
        i for i, u in enumerate(units) if not u.helper and (u.parent < 0 or above_helper[u.parent])
    ]
    helper_fns = [_subtree_functions(units, h) for h in helper]
    waits = {}
    for i in own:
        mine = reached(i)
        needed = [k for k, fns in enumerate(helper_fns) if fns & mine]
        if needed:
            waits[i] = max(needed) + 1
    first = tuple(i for i in own if i not in waits)
    # after waiting: in the helper's order, callees before callers
    then = tuple(sorted(waits, key=lambda i: (waits[i], -i)))
    return Plan(helper, first, then, waits)


def _subtree_functions(units: Sequence[Unit], root: int) -> set[str]:
    """The functions compiled under unit ``root``, itself included."""
    inside = {root}
    for i in range(root + 1, len(units)):
        if units[i].parent in inside:
            inside.add(i)
    return {_function(units[i].kernel) for i in inside}


# ---------------------------------------------------------------------------------------------
# This process's side
# ---------------------------------------------------------------------------------------------


def compile_for_training(
    learner: str, files: Sequence[str], listing_path: Path | None = None
) -> float | None:
    """Compile the listed kernels (``listing_path``, default :data:`SIGNATURES`) in this
    process and a helper, when the run looks like the listed one (``learner``; every file of
    ``files`` local and all of them small) and numba's cache lacks some of the helper's.
    Returns the seconds it took, None when it did nothing."""
    if listing_path is None:
        listing_path = SIGNATURES
    if not listing_path.exists():
        return None
    listing = read_listing(listing_path)
    if learner != listing.learner or not _small_files(files) or jit.usable_cores() < 2:
        return None
    numba = jit.start()
    if numba.config.DISABLE_JIT:
        return None
    units = listing.units
    try:
        kernels = [dispatcher_of(u.kernel) for u in units]
        signatures = [tuple(decode_type(a) for a in u.args) for u in units]
        the_plan = plan(units)
        missing = [
            i
            for i in (*the_plan.helper, *the_plan.first, *the_plan.then)
            if not _cached(kernels[i], signatures[i])
        ]
    except (LookupError, ValueError, AttributeError, TypeError, ImportError):
        return None  # a list this version cannot read: the run compiles as it goes
    if not any(i in the_plan.helper for i in missing):
        return None  # warm (or all but this process's share: not worth a process)
    t0 = time.perf_counter()
    with _Helper(listing_path) as helper:
        for i in the_plan.first:
            _compile(kernels[i], signatures[i])
        for i in the_plan.then:
            helper.wait_for(the_plan.waits[i])
            _compile(kernels[i], signatures[i])
        helper.wait_for(len(the_plan.helper))
    return time.perf_counter() - t0


def _compile(dispatcher, signature: tuple) -> None:
    """Compile (or load) one unit; a unit this version's kernels refuse (a stale list) is left
    to the run, which compiles what it really calls."""
    # a signal that lands inside LLVM's callbacks into Python would be printed and dropped by
    # ctypes: held, it acts once the unit is compiled
    with contextlib.suppress(Exception), held():
        dispatcher.compile(signature)


def _small_files(files: Sequence[str]) -> bool:
    try:
        return bool(files) and sum(os.stat(f).st_size for f in files) <= SMALL_INPUT_BYTES
    except (OSError, TypeError, ValueError):
        return False  # not local files (a dataset, a DocBin's name): nothing to judge by


def _cached(dispatcher, signature: tuple) -> bool:
    """Whether numba's cache index holds ``dispatcher`` for these argument types (read from
    the index file alone; numba's own key)."""
    cache = dispatcher._cache
    key = cache._index_key(signature, dispatcher.targetctx.codegen())
    return key in cache._cache_file._load_index()


class _Helper:
    """The helper process, while in the ``with`` block: killed and reaped on the way out."""

    def __init__(self, listing_path: Path):
        self.listing_path = listing_path
        self.done = 0
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> _Helper:
        try:
            # unbuffered: a line read is never followed by others hidden in a buffer, unseen
            # by the selector; held: no interruption between its start and noting it, which
            # would leave it running
            with held():
                self.proc = subprocess.Popen(
                    helper_command(self.listing_path),
                    bufsize=0,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                )
        except OSError:  # no process to be had: this one compiles everything
            self.proc = None
        return self

    def wait_for(self, n: int) -> None:
        """Until the helper has finished ``n`` units (or ended, or stalled)."""
        proc = self.proc
        if proc is None or proc.stdout is None:
            return
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            while self.done < n:
                if not sel.select(STALL_SECONDS):
                    self._end()
                    return
                if not proc.stdout.readline():  # ended, or failed
                    self._end()
                    return
                self.done += 1

    def _end(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    def __exit__(self, *exc) -> bool:
        self._end()
        return False


# ---------------------------------------------------------------------------------------------
# The helper's side
# ---------------------------------------------------------------------------------------------


def helper_command(listing_path: Path) -> list[str]:
    """The helper's command line: this interpreter, this copy of the package first on its path
    (numba's cache is keyed by the kernels' source files)."""
    root = str(Path(__file__).resolve().parent.parent)
    code = (
        f"import sys; sys.path.insert(0, {root!r}); "
        f"from tagger.precompile import helper_main; helper_main({str(listing_path)!r})"
    )
    return [sys.executable, "-c", code]


def helper_main(path: Path | str = SIGNATURES) -> None:
    """Compile the helper's units, one line on standard output as each ends. Quiet: its
    parent waits for the lines, not for its words."""
    try:
        listing = read_listing(Path(path))
        for module in sorted({u.kernel.partition(":")[0] for u in listing.units}):
            importlib.import_module(module)  # every kernel declared before numba starts
        jit.start()
        the_plan = plan(listing.units)
        for i in the_plan.helper:
            unit = listing.units[i]
            with contextlib.suppress(Exception):  # refused: the parent compiles it itself
                dispatcher_of(unit.kernel).compile(tuple(decode_type(a) for a in unit.args))
            print(i, flush=True)
    except (KeyboardInterrupt, BrokenPipeError):
        with contextlib.suppress(OSError):
            sys.stdout.close()
        os._exit(1)


# ---------------------------------------------------------------------------------------------
# Recording
# ---------------------------------------------------------------------------------------------


class Recorder:
    """Records the package's kernel compilations while in the ``with`` block (numba's
    ``numba:compile`` events): ``units`` in the order they began, with their parents and
    seconds (every unit ``helper=False``)."""

    def __enter__(self) -> Recorder:
        from numba.core import event

        self.units: list[Unit] = []
        self._open: list[tuple[int, float]] = []  # (unit or -1, start) per open compilation
        recorder = self

        class Listener(event.Listener):
            def on_start(self, ev):
                recorder._start(ev.data)

            def on_end(self, ev):
                recorder._end()

        self._listener = Listener()
        event.register("numba:compile", self._listener)
        return self

    def _start(self, data: dict) -> None:
        name = kernel_name(data.get("dispatcher"))
        index = -1
        if name is not None:
            parent = next((i for i, _ in reversed(self._open) if i >= 0), -1)
            args = tuple(encode_type(a) for a in data["args"])
            index = len(self.units)
            self.units.append(Unit(name, args, parent, 0.0, False))
        self._open.append((index, time.perf_counter()))

    def _end(self) -> None:
        index, t0 = self._open.pop()
        if index >= 0:
            u = self.units[index]
            self.units[index] = Unit(u.kernel, u.args, u.parent, time.perf_counter() - t0, False)

    def __exit__(self, *exc) -> bool:
        from numba.core import event

        event.unregister("numba:compile", self._listener)
        return False
