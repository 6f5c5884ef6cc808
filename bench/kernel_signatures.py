"""Writes ``tagger/_kernel_signatures.txt``, the kernels the README's second command compiles
and which of them the helper process compiles on a first run (:mod:`tagger.precompile`).

    python bench/kernel_signatures.py [--check] [--lag SECONDS]

Runs ``tagger train corpora/sample_chunk.txt --dev corpora/sample_chunk_dev.txt -o MODEL -q``
in a fresh process whose ``NUMBA_CACHE_DIR`` is a new empty folder, without the helper,
recording every compilation of the package's kernels (``tagger.precompile.Recorder``: the
kernel, its argument types, the compilation it happened in, its seconds). Then it chooses the
helper's share: whole subtrees of that record (a unit with everything compiled
inside it), the choice whose simulated first run ends first, the helper starting ``--lag``
seconds after this process (default 0.6: a Python with numba and the kernel modules imported)
and the two processes sharing the work as ``tagger.precompile.plan`` says. ``--check`` only
says whether the shipped list names the same units (exit 1 if not) and writes nothing.

Re-run it after changing a kernel's arguments or what it calls: tests/test_precompile.py
fails when the list is stale.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tagger import precompile  # noqa: E402
from tagger.learners import DEFAULT_LEARNER  # noqa: E402

COMMAND = ["train", "corpora/sample_chunk.txt", "--dev", "corpora/sample_chunk_dev.txt", "-q"]

RECORD = """
import json, sys
from tagger import precompile
from tagger.cli import cli

precompile.compile_for_training = lambda *args, **kwargs: None  # record the run alone
with precompile.Recorder() as rec:
    cli.main(sys.argv[2:], prog_name="tagger", standalone_mode=False)
with open(sys.argv[1], "w") as f:
    json.dump([u.line() for u in rec.units], f)
"""


def record() -> list[precompile.Unit]:
    """The units of the command, compiled on an empty cache in a fresh process."""
    with tempfile.TemporaryDirectory(prefix="kernel-signatures-") as work:
        out = Path(work) / "units.json"
        env = dict(os.environ, NUMBA_CACHE_DIR=str(Path(work) / "cache"), PYTHONPATH=str(REPO))
        cmd = [sys.executable, "-c", RECORD, str(out), *COMMAND, "-o", str(Path(work) / "m")]
        subprocess.run(cmd, cwd=REPO, env=env, check=True)
        lines = json.loads(out.read_text())
    path = Path(tempfile.mkstemp(suffix=".txt")[1])
    try:
        path.write_text("\n".join(lines) + "\n")
        return list(precompile.read_listing(path).units)
    finally:
        path.unlink()


def self_seconds(units: list[precompile.Unit]) -> list[float]:
    own = [u.seconds for u in units]
    for u in units:
        if u.parent >= 0:
            own[u.parent] -= u.seconds
    return [max(s, 0.0) for s in own]


def subtree(units: list[precompile.Unit], root: int) -> set[int]:
    inside = {root}
    for i in range(root + 1, len(units)):
        if units[i].parent in inside:
            inside.add(i)
    return inside


def simulate(units: list[precompile.Unit], reaches: dict, lag: float) -> tuple[float, float]:
    """(seconds until both processes are done, the helper's seconds) for this split."""
    the_plan = precompile.plan(units, reaches)
    own = self_seconds(units)
    done: set[int] = set()

    def cost(i: int) -> float:
        todo = subtree(units, i) - done
        done.update(todo)
        return sum(own[j] for j in todo)

    helper_end, t_helper = [], lag
    for i in the_plan.helper:
        t_helper += cost(i)
        helper_end.append(t_helper)
    t = 0.0
    for i in the_plan.first:
        t += cost(i)
    for i in the_plan.then:
        t = max(t, helper_end[the_plan.waits[i] - 1]) + cost(i)
    return max(t, t_helper), t_helper - lag


def choose(units: list[precompile.Unit], lag: float) -> tuple[list[precompile.Unit], float]:
    """The split with the earliest simulated end: the best of every choice of up to three
    subtrees for the helper, then grown one subtree at a time while that helps."""
    reaches: dict = {}
    trees = {i: subtree(units, i) for i in range(len(units))}

    def split_of(roots) -> list[precompile.Unit] | None:
        chosen = set().union(*(trees[r] for r in roots))
        if sum(len(trees[r]) for r in roots) != len(chosen):
            return None  # nested or overlapping
        return [replace(u, helper=i in chosen) for i, u in enumerate(units)]

    best, best_roots = (float("inf"), 0.0), ()
    for k in (1, 2, 3):
        for roots in itertools.combinations(range(len(units)), k):
            split = split_of(roots)
            if split is not None and (result := simulate(split, reaches, lag)) < best:
                best, best_roots = result, roots
    grown = True
    while grown:
        grown = False
        for r in range(len(units)):
            split = split_of((*best_roots, r))
            if split is not None and (result := simulate(split, reaches, lag)) < best:
                best, best_roots, grown = result, (*best_roots, r), True
    return split_of(best_roots) or units, best[0]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="compare with the shipped list only")
    p.add_argument("--lag", type=float, default=0.6, help="the helper's start-up, seconds")
    args = p.parse_args(argv)
    units = record()
    if args.check:
        shipped = precompile.read_listing().units
        same = [(u.kernel, u.args, u.parent) for u in units] == [
            (u.kernel, u.args, u.parent) for u in shipped
        ]
        print("the shipped list is current" if same else "the shipped list is stale")
        return 0 if same else 1
    split, end = choose(units, args.lag)
    total = sum(u.seconds for u in units if u.parent < 0)
    helper = sum(
        u.seconds for u in split if u.helper and (u.parent < 0 or not split[u.parent].helper)
    )
    header = [
        "The kernels that `tagger train corpora/sample_chunk.txt --dev",
        "corpora/sample_chunk_dev.txt` compiles on an empty numba cache, in that order: the",
        "kernel, its argument types, the unit it was compiled inside (-1: called from Python),",
        "its seconds there (callees included) and whether the helper process compiles it",
        "(tagger/precompile.py).",
        "Written by `python bench/kernel_signatures.py`; do not edit.",
        f"Recorded: {total:.1f} s of compilation; the helper's share {helper:.1f} s; both",
        f"processes done after {end:.1f} s in the simulation (the helper starting {args.lag} s",
        "later).",
    ]
    listing = precompile.Listing(DEFAULT_LEARNER, tuple(split))
    precompile.write_listing(precompile.SIGNATURES, listing, header)
    for line in header[-2:]:
        print(line)
    print(f"wrote {precompile.SIGNATURES.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
