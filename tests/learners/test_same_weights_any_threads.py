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

# every learner whose training runs parallel kernels, with settings that keep it short; a
# name after "/" tells two settings of one learner apart. ssvm-annealing learns from the last
# UNLABELED sentences of the sample with their labels taken off (and the rest as labeled)
LEARNERS = {
    "m3n-owlqn": {"epochs": 30},
    "crf-l1": {"epochs": 30},
    "crf-l2": {"epochs": 30},
    "crf-grafting": {},
    "m3n-subgradient": {"epochs": 3},
    "m3n-l2": {},
    "m3n-l2/blocks": {"epochs": 6, "blocks": 3, "block_size": 4},
    "m3n-em/blocks": {"epochs": 3, "blocks": 3, "block_size": 4},
    "lp-extragradient": {"epochs": 20},
    # the rounds' pricing (second-best Viterbi over every sentence) runs on the threads;
    # HiGHS itself is kept to one
    "lp-simplex": {"epochs": 30},
    "ssvm-annealing": {"steps": 2, "epochs": 3, "start_epochs": 3},
    "ssvm-annealing/owlqn": {"steps": 2, "owlqn_epochs": 3, "start_epochs": 3, "inner": "owlqn"},
    "ssvm-annealing/blocks": {
        "steps": 2,
        "epochs": 3,
        "start_epochs": 3,
        "blocks": 3,
        "block_size": 4,
    },
}
UNLABELED = 40

CHILD = r"""
import hashlib, json, sys
from tagger import jit
from tagger.api import Tagger
from tagger.io import load_corpus

from tagger.sentence import Sentence
import tagger.training.run as run

# fit() gives the kernels the default threads (every usable core, at most the variable's 3);
# here the loop sets them, so that 1, 2 and 3 threads are really compared
run.use_threads = lambda requested: jit.thread_count()

sentences = load_corpus(sys.argv[1], format="conll")
cut = len(sentences) - int(sys.argv[3])
labeled = sentences[:cut]
unlabeled = [Sentence(s.columns, None) for s in sentences[cut:]]
out = {}
for key, params in json.loads(sys.argv[2]).items():
    name = key.split("/")[0]
    digests = []
    for threads in (1, 2, 3, "serial twins"):
        if threads == "serial twins":
            jit.set_parallel_min_bytes(jit.PARALLEL_MIN_BYTES)
        else:
            jit.set_parallel_min_bytes(0)
            jit.set_threads(threads)
            assert jit.thread_count() == threads
        tg = Tagger(learner=name, params=params, select=False)
        if name == "ssvm-annealing":
            tg.fit(labeled, unlabeled=unlabeled)
        else:
            tg.fit(sentences)
        if threads != "serial twins":
            assert jit.thread_count() == threads
        digests.append(hashlib.sha256(tg.weights_.tobytes()).hexdigest())
    out[key] = digests
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def digests() -> dict:
    env = dict(os.environ, NUMBA_NUM_THREADS="3", PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(SAMPLE), json.dumps(LEARNERS), str(UNLABELED)],
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
