"""The package's numba kernels, compiled when first needed and run by the interpreter for small
inputs.

Importing numba and loading a kernel's cached machine code takes about 0.7 s on a 2-core
machine, far longer than tagging one sentence. So no module imports numba itself: each kernel
is declared with :func:`njit` (numba's options, the same plain-Python body) and :func:`prange`
marks parallel loops. Until numba is started, a kernel is a :class:`Kernel` that holds its
Python function:

- called normally, it starts numba (:func:`start`): numba is imported, every kernel of the
  package gets its numba dispatcher, and each module's global that named a :class:`Kernel` (or
  :func:`prange`) now names the dispatcher (``numba.prange``), so compiled kernels call
  compiled kernels and later calls go straight to numba;
- called inside :func:`interpreted` before numba has started, it runs its Python body, as
  ``NUMBA_DISABLE_JIT`` would: the same code and the same floating-point operations in the
  same order, so the same output (``tagger tag`` uses this for short inputs, up to
  :data:`INTERPRETED_WORK`; the tests compare the two paths).

Once numba has started, :func:`njit` returns numba's dispatcher directly.

Serial twins. Compiling a kernel with ``parallel=True`` costs two to five times what the same
kernel costs without it, and on a small input its threads gain nothing. So a kernel that runs
parallel loops, or calls one that does, becomes a :class:`Twins` when numba starts: its
dispatcher, and a *serial twin*, the same function compiled with ``parallel=False`` (and
calling the twins of such kernels), built and compiled only when first needed and cached under
its own name (``<name>__serial``). A call whose array arguments hold fewer than
:func:`parallel_min_bytes` bytes in all runs the twin, a larger one the parallel kernel; a
kernel that does far more work per byte than the objectives (constrained decoding) declares
``work_per_byte=N`` and its bytes count N times. The
parallel kernels cut their work by the data alone, never by the thread count, and reduce
nothing across threads, so both give the same bits (tests/learners/test_threads.py trains
seven learners both ways). The first ``tagger train`` on the shipped sample thus compiles only
twins, in two processes at once (:mod:`tagger.precompile`; docs/architecture.md, "Start-up").
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import types
from collections.abc import Mapping
from pathlib import Path

# Inputs up to this much work (tokens times squared labels: the Viterbi's inner loop) are
# tagged by the interpreted kernels when numba has not started. Interpreted, a token costs
# about 0.25 us per squared label plus its templates: 65 us with 16 labels, 224 us with the
# default chunker's 22 labels and 19 templates, 604 us with 42 POS tags, so this budget is
# 0.25-0.5 s of tagging, under the 0.7-1.5 s that starting numba takes (docs/architecture.md,
# "Start-up").
INTERPRETED_WORK = 1_000_000

#: Calls of a parallel kernel whose array arguments hold fewer bytes than this in all run its
#: serial twin (see the module's docstring). The objective of the shipped chunking sample (1,035
#: tokens, 8,398 weights) takes 4.5 MB, most of it its 64 per-chunk gradient buffers: there
#: the serial twin costs 2.3 ms a call, a second thread would save about 1 ms of it, and
#: compiling the parallel kernels costs 9 s of CPU more than the twins. CoNLL-2000's (211,727
#: tokens) takes over 80 MB.
PARALLEL_MIN_BYTES = 8 * 2**20

#: options of :func:`njit` that are the package's, not numba's: ``work_per_byte`` (an int,
#: default 1) multiplies a parallel kernel's argument bytes before they are compared with
#: :func:`parallel_min_bytes`
OWN_OPTIONS = ("work_per_byte",)

_kernels: list[Kernel] = []
_numba = None
_min_bytes = PARALLEL_MIN_BYTES
#: the serial twins' module globals, one namespace per module namespace (by id)
_serial_spaces: dict[int, dict] = {}
_threads: int | None = None
_local = threading.local()
_lock = threading.RLock()


def prange(*args):
    """``range`` for the interpreter; :func:`start` replaces it by ``numba.prange``."""
    return range(*args)


class Kernel:
    """A kernel before numba has started: its Python function and numba options."""

    def __init__(self, fn, options: dict):
        self.py_func = fn
        self.options = options
        self.dispatcher = None
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __call__(self, *args):
        if self.dispatcher is None and getattr(_local, "interpreted", False):
            return self.py_func(*args)
        if self.dispatcher is None:
            start()
        return self.dispatcher(*args)

    @property
    def _numba_type_(self):
        """How numba types a kernel met as a global of a function it compiles (one imported
        before numba started into a user's own numba code): as its dispatcher."""
        if self.dispatcher is None:
            start()
        return _numba.typeof(self.dispatcher)

    def __repr__(self) -> str:
        return f"<kernel {self.__module__}.{self.__qualname__}>"


def njit(fn=None, **options):
    """``numba.njit``, deferred until numba starts (``@njit`` or ``@njit(**options)``)."""

    def declare(fn):
        if _numba is not None:
            with _lock:
                if options.get("parallel") or _calls_twins(fn):
                    return Twins(fn, options, _numba)
            return _numba.njit(**numba_options(options))(fn)
        kernel = Kernel(fn, options)
        _kernels.append(kernel)
        return kernel

    return declare if fn is None else declare(fn)


def started() -> bool:
    """Whether numba has been imported and the kernels bound to it."""
    return _numba is not None


def start():
    """Import numba, give every declared kernel its dispatcher and put the dispatchers (and
    ``numba.prange``) in place of the kernels in the package's modules. Returns numba."""
    global _numba
    with _lock:
        if _numba is not None:
            return _numba
        # numba refuses to import under a NUMBA_NUM_THREADS that is no positive count (a
        # traceback from its import); resolve_threads says that the value is ignored
        value = os.environ.get("NUMBA_NUM_THREADS")
        if value is not None and not (
            value.strip().isascii() and value.strip().isdigit() and int(value) > 0
        ):
            _refused_environment["NUMBA_NUM_THREADS"] = os.environ.pop("NUMBA_NUM_THREADS")
        import numba

        if _threads is not None:
            _apply_threads(numba, _threads)
        parallel = _reaching_parallel(_kernels)
        for kernel in _kernels:
            kernel.dispatcher = (
                Twins(kernel.py_func, kernel.options, numba)
                if id(kernel) in parallel
                else numba.njit(**numba_options(kernel.options))(kernel.py_func)
            )
        swap = {id(k): k.dispatcher for k in _kernels}
        swap[id(prange)] = numba.prange
        for name, module in list(sys.modules.items()):
            if module is None or not (name == "tagger" or name.startswith("tagger.")):
                continue
            space = vars(module)
            for key, value in list(space.items()):
                new = swap.get(id(value))
                if new is not None:
                    space[key] = new
        _numba = numba
        return numba


class Twins:
    """A kernel with parallel loops (or calling one), once numba has started: the parallel
    dispatcher and its serial twin, chosen per call by the size of the array arguments."""

    def __init__(self, fn, options: dict, numba):
        self.py_func = fn
        self.options = options
        self.work_per_byte = int(options.get("work_per_byte", 1))
        self.parallel = numba.njit(**numba_options(options))(fn)
        self._serial = None
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__module__ = fn.__module__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __call__(self, *args):
        if _array_bytes(args) * self.work_per_byte < _min_bytes:
            return self.serial(*args)
        return self.parallel(*args)

    @property
    def serial(self):
        """The serial twin's dispatcher (made on first use; compiled on its first call)."""
        if self._serial is None:
            with _lock:
                if self._serial is None:
                    self._serial = _serial_twin(self)
        return self._serial

    @property
    def _numba_type_(self):
        """Compiled code that names the kernel calls the parallel dispatcher (the serial twins
        call each other through their own globals)."""
        return _numba.typeof(self.parallel)

    def __repr__(self) -> str:
        return f"<parallel kernel {self.__module__}.{self.__qualname__} and its serial twin>"


def numba_options(options: dict) -> dict:
    """The options of :func:`njit` numba takes (without :data:`OWN_OPTIONS`)."""
    return {k: v for k, v in options.items() if k not in OWN_OPTIONS}


def _array_bytes(args) -> int:
    """Bytes of the arrays among ``args``, inside tuples (named ones: layouts, batches) too."""
    total = 0
    for arg in args:
        if isinstance(arg, tuple):
            total += _array_bytes(arg)
        else:
            total += getattr(arg, "nbytes", 0)
    return total


def global_names(code) -> set[str]:
    """The global names a function's code (and the code nested in it) may read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= global_names(const)
    return names


def _reaching_parallel(kernels: list[Kernel]) -> set[int]:
    """The ids of the kernels that run parallel loops or call, directly or not, one that does
    (by the global names their code reads)."""
    found = {id(k) for k in kernels if k.options.get("parallel")}
    grew = True
    while grew:
        grew = False
        for k in kernels:
            if id(k) in found:
                continue
            space = k.py_func.__globals__
            if any(id(space.get(n)) in found for n in global_names(k.py_func.__code__)):
                found.add(id(k))
                grew = True
    return found


def _calls_twins(fn) -> bool:
    """Whether a kernel declared after numba started names a :class:`Twins` it would call."""
    space = fn.__globals__
    return any(isinstance(space.get(n), Twins) for n in global_names(fn.__code__))


def _serial_twin(twins: Twins):
    """A dispatcher of ``twins``' function without ``parallel``, reading globals in which
    every :class:`Twins` is its serial twin, cached under ``<qualname>__serial``."""
    fn = twins.py_func
    twin = types.FunctionType(
        fn.__code__, _serial_space(fn.__globals__), fn.__name__, fn.__defaults__, fn.__closure__
    )
    twin.__qualname__ = fn.__qualname__ + "__serial"
    twin.__module__ = fn.__module__
    twin.__doc__ = fn.__doc__
    options = {k: v for k, v in numba_options(twins.options).items() if k != "parallel"}
    return _numba.njit(**options)(twin)


def _serial_space(space: dict) -> dict:
    """The serial twins' copy of a module's globals (made once per module)."""
    twin_space = _serial_spaces.get(id(space))
    if twin_space is None:
        twin_space = _serial_spaces[id(space)] = dict(space)
        for key, value in space.items():
            if isinstance(value, Twins):
                twin_space[key] = value.serial
    return twin_space


def parallel_min_bytes() -> int:
    """Array bytes from which a parallel kernel runs in parallel (below: its serial twin)."""
    return _min_bytes


def set_parallel_min_bytes(n: int) -> None:
    """Let calls whose array arguments hold at least ``n`` bytes run the parallel kernels (0:
    every call; the tests that compare thread counts use it). Results are the same bits."""
    global _min_bytes
    _min_bytes = max(0, int(n))


def set_threads(n: int) -> None:
    """Let parallel kernels use at most ``n`` threads (applied when numba starts, if later)."""
    global _threads
    with _lock:
        _threads = n
        if _numba is not None:
            _apply_threads(_numba, n)


def _apply_threads(numba, n: int) -> None:
    numba.set_num_threads(max(1, min(n, numba.config.NUMBA_NUM_THREADS)))


#: the environment variables that set the thread count when no option does, in this order
THREAD_VARIABLES = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS")
#: values :func:`start` took out of the environment because numba refuses them, kept for
#: :func:`resolve_threads` to name
_refused_environment: dict[str, str] = {}


def usable_cores(
    affinity: set[int] | None = None, cgroup_root: str | os.PathLike | None = None
) -> int:
    """The cores this process may really use: those of its CPU affinity mask (``taskset``,
    ``os.sched_getaffinity``; ``os.cpu_count`` where there is none), fewer when a cgroup CPU
    quota (a container's ``--cpus``) allows less, at least 1.

    ``affinity`` and ``cgroup_root`` (default ``/sys/fs/cgroup``) stand in for the process's
    own, so that the rule can be checked without changing the machine."""
    if affinity is None:
        try:
            affinity = os.sched_getaffinity(0)
        except (AttributeError, OSError):  # not on Linux
            affinity = set(range(os.cpu_count() or 1))
    cores = max(1, len(affinity))
    quota = cgroup_cores(Path("/sys/fs/cgroup" if cgroup_root is None else cgroup_root))
    return cores if quota is None else max(1, min(cores, quota))


def cgroup_cores(root: Path) -> int | None:
    """Whole cores the cgroup CPU quota under ``root`` allows (None: no quota, or none found):
    ``cpu.max`` of cgroup v2, else ``cpu.cfs_quota_us`` and ``cpu.cfs_period_us`` of v1."""

    def text(*parts: str) -> str | None:
        try:
            return (root.joinpath(*parts)).read_text()
        except (OSError, UnicodeDecodeError):
            return None

    cpu_max = text("cpu.max")
    if cpu_max is not None:
        return quota_cores(cpu_max=cpu_max)
    for folder in ("cpu", "cpu,cpuacct", ""):
        quota = text(folder, "cpu.cfs_quota_us") if folder else text("cpu.cfs_quota_us")
        period = text(folder, "cpu.cfs_period_us") if folder else text("cpu.cfs_period_us")
        if quota is not None and period is not None:
            return quota_cores(cfs_quota=quota, cfs_period=period)
    return None


def quota_cores(
    cpu_max: str | None = None, cfs_quota: str | None = None, cfs_period: str | None = None
) -> int | None:
    """Whole cores a cgroup quota allows, from the files' contents: ``cpu.max`` (v2, ``"QUOTA
    PERIOD"`` or ``"max PERIOD"``) or ``cpu.cfs_quota_us`` and ``cpu.cfs_period_us`` (v1, a
    quota of -1 for none). The floor of quota / period, at least 1 (a quota of half a core
    still runs one thread); None when there is no quota or the contents are not understood."""
    if cpu_max is not None:
        fields = cpu_max.split()
        if not fields or fields[0] == "max":
            return None
        quota_text, period_text = fields[0], fields[1] if len(fields) > 1 else "100000"
    elif cfs_quota is not None and cfs_period is not None:
        quota_text, period_text = cfs_quota.strip(), cfs_period.strip()
    else:
        return None
    try:
        quota, period = int(quota_text), int(period_text)
    except ValueError:
        return None
    if quota <= 0 or period <= 0:
        return None
    return max(1, quota // period)


def resolve_threads(
    requested: int | None,
    environ: Mapping[str, str] | None = None,
    usable: int | None = None,
) -> tuple[int, str | None]:
    """The threads a run uses, and a warning to show when it had to use fewer than asked.

    ``requested`` (an option, a configuration key, a keyword; None when none was given) wins;
    then the first of :data:`THREAD_VARIABLES` set to a positive whole number; then every
    usable core (:func:`usable_cores`). A request above the usable cores is cut to them, with
    the warning; a variable above them is cut silently (it is often set for a whole machine); a
    variable that is no count (``0``, ``two``) is ignored, with a warning."""
    environ = {**os.environ, **_refused_environment} if environ is None else environ
    usable = usable_cores() if usable is None else usable
    if requested is not None:
        if requested > usable:
            cores = f"{usable} core{'s' if usable > 1 else ''}"
            return usable, (
                f"{requested} threads asked for, but this process may use {cores} (its CPU "
                f"affinity and cgroup quota); using {usable}"
            )
        return requested, None
    ignored = None
    for name in THREAD_VARIABLES:
        value = environ.get(name, "").strip()
        if value.isascii() and value.isdigit() and int(value) > 0:
            return min(int(value), usable), ignored
        if value and ignored is None:
            ignored = (
                f"{name}={value!r} is not a number of threads (a whole number, at least 1); ignored"
            )
    return usable, ignored


def thread_count() -> int:
    """Threads a parallel kernel will use (starts numba)."""
    return start().get_num_threads()


@contextlib.contextmanager
def interpreted(on: bool = True):
    """Inside, kernels called before numba has started run as Python (see the module's
    docstring); ``on=False`` leaves them alone. Per thread."""
    import numpy as np

    before = getattr(_local, "interpreted", False)
    _local.interpreted = bool(on)
    try:
        # numba's integers wrap around silently (the feature hash relies on it); NumPy's
        # scalars would warn
        with np.errstate(over="ignore") if on else contextlib.nullcontext():
            yield
    finally:
        _local.interpreted = before
