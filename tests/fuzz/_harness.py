"""Time-bounded fuzzing with Hypothesis.

Hypothesis runs a search of a fixed number of examples; a fuzzer runs for a time. ``fuzz`` runs
searches of ``BATCH`` examples until the time budget is spent, so a failure is still shrunk to a
small example and reported by Hypothesis. Search ``k`` of an entry point draws from the seed
``TAGGER_FUZZ_SEED + k`` (a random base seed when the variable is unset); the base seed is
printed, and pytest shows it with a failure, so that a failing run can be repeated exactly.
The budget per entry point is ``--fuzz-minutes`` (tests/conftest.py) or, by default, an equal
share of ``DEFAULT_TOTAL_SECONDS`` (what CI spends). Counts go to ``RESULTS`` for the terminal
summary.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from dataclasses import dataclass

from hypothesis import HealthCheck, Phase, example, given, seed, settings

from tagger.errors import TaggerError

#: seconds all entry points share when no --fuzz-minutes is given (the bounded CI run)
DEFAULT_TOTAL_SECONDS = 60.0
#: examples per Hypothesis search
BATCH = 40
#: base seed of every entry point's searches: TAGGER_FUZZ_SEED, else drawn once per run
BASE_SEED = int(os.environ.get("TAGGER_FUZZ_SEED") or random.SystemRandom().randrange(2**32))


@dataclass
class Result:
    name: str
    inputs: int = 0
    project_errors: int = 0
    seconds: float = 0.0


#: entry point name -> what its fuzzing did, reported at the end of the run
RESULTS: dict[str, Result] = {}


def fuzz(
    name: str, strategy, body, budget: float, batch: int = BATCH, examples: tuple = ()
) -> Result:
    """Call ``body(value)`` for values drawn from ``strategy`` for ``budget`` seconds.

    ``body`` returns normally or raises; a :class:`TaggerError` (the project's one-line errors)
    is an expected outcome and counted, as is a true return (a command that exited with an
    error), anything else fails the test with Hypothesis's shrunk example. ``examples`` are
    tried first, in every run (inputs that once failed).
    """
    result = RESULTS.setdefault(name, Result(name))
    print(f"fuzzing {name}: TAGGER_FUZZ_SEED={BASE_SEED}")

    @settings(
        max_examples=batch,
        deadline=None,
        database=None,
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def search(value):
        result.inputs += 1
        try:
            refused = body(value)
        except TaggerError:
            refused = True
        if refused:
            result.project_errors += 1

    for value in examples:
        search = example(value)(search)
    start = time.monotonic()
    with memory_cap(MEMORY_HEADROOM):
        for k in range(2**62):
            seed(BASE_SEED + k)(search)()
            result.seconds = time.monotonic() - start
            if result.seconds >= budget:
                break
    return result


#: bytes an input of a few kilobytes may make the process allocate beyond what it holds
MEMORY_HEADROOM = 3 << 30


@contextlib.contextmanager
def memory_cap(headroom: int):
    """Make an allocation past ``headroom`` a MemoryError (which fails the search with its
    example) instead of a process the kernel kills: a reader that builds a list as long as a
    number in its input (a split file's index of 10**20) is a fault the fuzzer must report."""
    try:
        import resource
    except ImportError:  # not on this platform: no cap
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    with open("/proc/self/statm") as fh:  # pages: size resident shared text lib data dt
        data = int(fh.read().split()[5]) * resource.getpagesize()
    cap = data + headroom
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
