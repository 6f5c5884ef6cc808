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
"""

from __future__ import annotations

import contextlib
import sys
import threading

# Inputs up to this much work (tokens times squared labels: the Viterbi's inner loop) are
# tagged by the interpreted kernels when numba has not started. Interpreted, a token costs
# about 0.25 us per squared label plus its templates: 65 us with 16 labels, 224 us with the
# default chunker's 22 labels and 19 templates, 604 us with 42 POS tags, so this budget is
# 0.25-0.5 s of tagging, under the 0.7-1.5 s that starting numba takes (docs/integrations.md,
# "Start-up").
INTERPRETED_WORK = 1_000_000

_kernels: list[Kernel] = []
_numba = None
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
            return _numba.njit(**options)(fn)
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
        import numba

        if _threads is not None:
            _apply_threads(numba, _threads)
        for kernel in _kernels:
            kernel.dispatcher = numba.njit(**kernel.options)(kernel.py_func)
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


def set_threads(n: int) -> None:
    """Let parallel kernels use at most ``n`` threads (applied when numba starts, if later)."""
    global _threads
    with _lock:
        _threads = n
        if _numba is not None:
            _apply_threads(_numba, n)


def _apply_threads(numba, n: int) -> None:
    numba.set_num_threads(max(1, min(n, numba.config.NUMBA_NUM_THREADS)))


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
