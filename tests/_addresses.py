"""A small synthetic field-segmentation task for the semi-supervised tests: an address is a
name, a street and a city (one or two words each, a comma after each field), and a rule file
that says what an expert would know about it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

FIELDS = {
    "name": ["Ann", "Bob", "Eve", "Max"],
    "street": ["Main", "Oak", "Elm", "road"],
    "city": ["Paris", "Rome", "Oslo", "Bern"],
}

RULES = """
labels = ["name", "street", "city"]
[[instance]]
rule = "start"
labels = ["name"]
hard = true
[[instance]]
rule = "one-segment"
labels = "all"
hard = true
[[instance]]
rule = "tokens"
words = ["road"]
take = ["street"]
[[corpus]]
rule = "label-fraction"
labels = ["name"]
fraction = 0.3
tolerance = 0.1
"""


def addresses(rng, n: int) -> list[tuple[list[str], list[str]]]:
    """n addresses as (tokens, labels), drawn with the numpy Generator ``rng``."""
    out = []
    for _ in range(n):
        toks, labs = [], []
        for field, words in FIELDS.items():
            for _ in range(int(rng.integers(1, 3))):
                toks.append(words[int(rng.integers(0, 4))])
                labs.append(field)
            toks.append(",")
            labs.append(field)
        out.append((toks, labs))
    return out


def write_addresses(path, rng, n: int, labeled: bool = True) -> None:
    """n addresses as a token-TAB-label file at ``path`` (unlabeled: every label "name", a
    column the unlabeled reader drops)."""
    lines = []
    for toks, labs in addresses(rng, n):
        lines += [f"{t}\t{lab if labeled else 'name'}" for t, lab in zip(toks, labs)] + [""]
    path.write_text("\n".join(lines) + "\n")


#: trains ssvm-annealing on the address task with RULES, every parallel kernel forced on, at 1
#: and then 2 threads, and prints the sha256 of each run's weights
_THREADS_CHILD = r"""
import hashlib, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from tagger import Tagger, jit
from tagger.constraints import ConstraintSet
from tagger.features import FeatureSpec
from tagger.sentence import Sentence
import tagger.training.run as run
from _addresses import RULES, addresses

run.use_threads = lambda requested: jit.thread_count()
rng = np.random.default_rng(1)
mk = lambda n, lab=True: [Sentence([t], l if lab else None) for t, l in addresses(rng, n)]
train, unl = mk(3), mk(30, False)
jit.set_parallel_min_bytes(0)
for threads in (1, 2):
    jit.set_threads(threads)
    tg = Tagger(features=FeatureSpec.load(sys.argv[2]), learner="ssvm-annealing",
                params={"steps": 2, "epochs": 3, "start_epochs": 3}, select=False)
    tg.fit(train, unlabeled=unl, constraints=ConstraintSet.from_text(RULES))
    print(hashlib.sha256(tg.weights_.tobytes()).hexdigest())
"""


def weights_at_1_and_2_threads(features: Path) -> tuple[str, str]:
    """The sha256 of the weights ssvm-annealing trains on a few addresses with the feature
    file ``features`` at 1 and at 2 threads, in a child process (numba's thread pool is set up
    once per process)."""
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, NUMBA_NUM_THREADS="2", PYTHONPATH=str(root))
    args = [sys.executable, "-c", _THREADS_CHILD, str(root / "tests"), str(features)]
    done = subprocess.run(args, capture_output=True, text=True, env=env, cwd=root)
    assert done.returncode == 0, done.stderr[-3000:]
    one, two = done.stdout.split()[-2:]
    return one, two


def address_sentences(rng, n: int, labeled: bool = True) -> list:
    """n addresses as Sentences (without labels when ``labeled`` is False)."""
    from tagger.sentence import Sentence

    return [Sentence([toks], labs if labeled else None) for toks, labs in addresses(rng, n)]


def address_task(directory: Path, features: dict[str, str]) -> dict:
    """The semi-supervised address task: RULES and each feature file of ``features`` (name:
    text) written to ``directory``; 2 labeled, 8 dev, 30 unlabeled and 40 test addresses."""
    (directory / "rules.toml").write_text(RULES)
    for name, text in features.items():
        (directory / name).write_text(text)
    rng = np.random.default_rng(1)
    return {
        "train": address_sentences(rng, 2),
        "dev": address_sentences(rng, 8),
        "unlabeled": address_sentences(rng, 30, labeled=False),
        "test": address_sentences(rng, 40),
        "dir": directory,
    }


def fit_addresses(task: dict, features: str = "f.toml", **params):
    """ssvm-annealing (a short schedule, ``params`` on top) on :func:`address_task`'s data
    with its rules and the feature file ``features``."""
    from tagger import Tagger
    from tagger.features import FeatureSpec

    base = {"steps": 3, "epochs": 15, "start_epochs": 30}
    return Tagger(
        features=FeatureSpec.load(task["dir"] / features),
        learner="ssvm-annealing",
        params={**base, **params},
        seed=0,
        select=False,
    ).fit(
        task["train"],
        dev=task["dev"],
        unlabeled=task["unlabeled"],
        constraints=str(task["dir"] / "rules.toml"),
    )


def majority_floor(test: list) -> float:
    """The accuracy of always saying the most frequent field, plus 0.3: what a model that
    learned from the addresses clears."""
    counts = [sum(lab == f for s in test for lab in s.labels) for f in FIELDS]
    return max(counts) / sum(counts) + 0.3
