"""Training gives the same weights, bit for bit, whatever the number of threads.

Each learner is trained four times in one child process started with room for three numba
threads (``NUMBA_NUM_THREADS=3``, so that the test means the same on a 2-core machine): by the
parallel kernels (:func:`tagger.jit.set_parallel_min_bytes` 0, since the sample is small enough
for the serial twins) at 1, 2 and 3 threads, then by the serial twins; the SHA-256 of its
weights must agree. The sample corpus is cut into several chunks by the parallel objectives,
so a sum whose order followed the threads would show here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests._helpers import ROOT, SAMPLE

# every learner whose training runs parallel kernels, with settings that keep it short
LEARNERS = {
    "m3n-owlqn": {"epochs": 30},
    "crf-l1": {"epochs": 30},
    "crf-l2": {"epochs": 30},
    "crf-grafting": {},
    "m3n-subgradient": {"epochs": 3},
    "m3n-l2": {},
    "lp-extragradient": {"epochs": 20},
}

CHILD = r"""
import hashlib, json, sys
from tagger import jit
from tagger.api import Tagger
from tagger.io import load_corpus

sentences = load_corpus(sys.argv[1], format="conll")
out = {}
for name, params in json.loads(sys.argv[2]).items():
    digests = []
    for threads in (1, 2, 3, "serial twins"):
        if threads == "serial twins":
            jit.set_parallel_min_bytes(jit.PARALLEL_MIN_BYTES)
        else:
            jit.set_parallel_min_bytes(0)
            jit.set_threads(threads)
            assert jit.thread_count() == threads
        tg = Tagger(learner=name, params=params, select=False).fit(sentences)
        digests.append(hashlib.sha256(tg.weights_.tobytes()).hexdigest())
    out[name] = digests
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def digests() -> dict:
    env = dict(os.environ, NUMBA_NUM_THREADS="3", PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(SAMPLE), json.dumps(LEARNERS)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("learner", sorted(LEARNERS))
def test_same_weights_with_1_2_and_3_threads_and_serially(digests, learner):
    one, two, three, serial = digests[learner]
    assert one == two == three == serial, f"{learner}: {digests[learner]}"
