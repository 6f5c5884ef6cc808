"""How training scales with threads, and that the weights do not change with them.

    python bench/threads.py [--task semisup|citations|chunk|gum-upos] [--learner NAME]
                            [--threads 1,2] [--repeat 1] [--set key=value ...]
                            [--workers 2] [--no-warm-up] [--json PATH]

Trains one learner on one task at each thread count (``NUMBA_NUM_THREADS``, which ``fit``
reads; leave it unset at the start, it also caps numba's threads) in one process, after
one untimed run that compiles the kernels, and prints per thread count the
wall-clock and CPU seconds of ``Tagger.fit`` (the best of ``--repeat`` runs), the speed-up over
the first count, the test score and the SHA-256 of the weights; it fails (exit 1) when the
weights differ between thread counts. Timings need a quiet machine: the load average is
printed before each run and stored in the JSON (``bench/out/threads_<task>_<learner>.json``).

Tasks:

- ``semisup``: ``ssvm-annealing`` as the citation study runs it at 20 labeled citations
  (bench/citations_semisup.py: draw 0, its settings for 20 with one restart, seed 0) with the
  1,000 unlabeled citations and ``constraints/citations.toml``; token accuracy on test;
- ``citations``: the 300-citation training split, supervised; token accuracy on test;
- ``chunk``: the first 3,000 sentences of CoNLL-2000's train.txt; chunk F1 on test.txt;
- ``gum-upos``: UD English GUM, UPOS, the ``pos`` preset, our default training (the learner's
  regularization path scored on the dev file, its polish included): what ``tagger train TRAIN
  --dev DEV`` does; token accuracy on test.

``--workers N,...`` then trains once more per count on a Dask ``LocalCluster`` of N worker
processes of one thread each (``scheduler=`` its address: the workers compute the objective of
m3n-owlqn, crf-l1 or crf-l2, the driver keeps the largest thread count), in the same run; those
rows must give the same weights as well.

``--no-warm-up`` leaves out the untimed first run (the kernels' machine code is then loaded
from numba's on-disk cache in the first timed run: about a second). numba's threads start
with the largest count, and numba compiles nothing while ``NUMBA_NUM_THREADS`` names another:
without the first run, a kernel missing from the cache stops the run at a smaller count.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

DEFAULT_LEARNER = {
    "semisup": "ssvm-annealing",
    "citations": "m3n-l2",
    "chunk": "m3n-l2",
    "gum-upos": "m3n-owlqn",
}


def _task(name: str) -> dict:
    """Training sentences, fit keywords, test sentences, the score's key and fixed settings."""
    import numpy as np

    if name == "chunk":
        d = C.corpora() / "conll2000"
        train = C.load({"path": str(d / "train.txt"), "format": "conll", "limit": 3000})
        test = C.load({"path": str(d / "test.txt"), "format": "conll"})
        return {"train": train, "fit": {}, "test": test, "score": "f1", "features": "chunk"}
    if name == "gum-upos":
        gum = C.corpora() / "ud_english_gum"

        def conllu(part):
            return C.load({"path": str(gum / f"en_gum-ud-{part}.conllu"), "format": "conllu"})

        return {
            "train": conllu("train"),
            "fit": {"dev": conllu("dev")},
            "test": conllu("test"),
            "score": "accuracy",
            "features": "pos",
        }
    from citations_semisup import SEMISUP, SEMISUP_BY_SIZE, _data

    data = _data(C.corpora())

    def load(path):
        return C.load({"path": path, "format": "tab", "keep_columns": 1})

    train, dev, test = load(data["train"]), load(data["dev"]), load(data["test"])
    task = {"train": train, "fit": {}, "test": test, "score": "accuracy", "features": "citation"}
    if name == "semisup":
        from tagger.constraints import ConstraintSet
        from tagger.io import load_corpus

        drawn = sorted(np.random.default_rng(0).choice(len(train), 20, replace=False))
        unlabeled = load_corpus(data["unlabeled"], "tab", labeled=False)
        for s in unlabeled:
            del s.columns[1:]
        task["train"] = [train[i] for i in drawn]
        task["fit"] = {
            "dev": dev,
            "unlabeled": unlabeled,
            "constraints": ConstraintSet.load(C.REPO / "constraints" / "citations.toml"),
        }
        task["params"] = {**SEMISUP, **SEMISUP_BY_SIZE[20], "restarts": 1}
    return task


def runs_table(runs: list[dict], score: str = "score") -> str:
    """The runs as a markdown table (printed at the end of a run; bench/tables.py too)."""
    rows = [
        [
            f"{r['workers']} workers" if r.get("workers") else str(r["threads"]),
            f"{r['wall_seconds']:.2f}",
            f"{r['cpu_seconds']:.2f}" + (" (driver)" if r.get("workers") else ""),
            f"{runs[0]['wall_seconds'] / r['wall_seconds']:.2f}",
            f"{100 * r['score']:.2f}",
            r["sha256"][:16],
            " ".join(f"{x:.2f}" for x in r["load_average_before"]),
        ]
        for r in runs
    ]
    header = ["threads", "wall s", "CPU s", "speed-up", score, "weights (SHA-256)", "load before"]
    return C.markdown_table(header, rows)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", choices=sorted(DEFAULT_LEARNER), default="semisup")
    p.add_argument(
        "--learner", default=None, help="[default: ssvm-annealing for semisup, else m3n-l2]"
    )
    p.add_argument("--threads", default="1,2", help="thread counts, compared with the first")
    p.add_argument("--repeat", type=int, default=1, help="timed runs per thread count (best kept)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a learner parameter; repeatable",
    )
    p.add_argument(
        "--workers",
        default="",
        help="worker counts of Dask LocalClusters trained on after the thread counts",
    )
    p.add_argument("--no-warm-up", action="store_true", help="no untimed first run")
    p.add_argument("--json", default=None)
    return p.parse_args(argv)


def main(argv) -> int:
    # numba starts its threads when the machine is recorded, with NUMBA_NUM_THREADS as it is
    # then, and refuses to compile a kernel once the variable differs from that count: they
    # start with the largest count, under which the untimed first run compiles every kernel
    os.environ["NUMBA_NUM_THREADS"] = str(max(int(x) for x in parse_args(argv).threads.split(",")))
    args, mach = C.begin(argv, parse_args)
    from tagger import Tagger, jit
    from tagger.learners import get_learner

    learner = args.learner or DEFAULT_LEARNER[args.task]
    counts = [int(x) for x in args.threads.split(",")]
    task = _task(args.task)
    params = {**task.get("params", {}), **get_learner(learner).parse_settings(args.set)}

    def fit(threads: int, **cluster) -> dict:
        # the user's way (fit() reads it when no threads setting is given), cut to the cores
        os.environ["NUMBA_NUM_THREADS"] = str(threads)
        load = C.load_average()
        t0, c0 = time.perf_counter(), time.process_time()
        tg = Tagger(
            features=task["features"], learner=learner, params={**params, **cluster}, seed=0
        )
        tg.fit(task["train"], **task["fit"])
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        return {
            "threads": jit.thread_count(),
            "wall_seconds": round(wall, 2),
            "cpu_seconds": round(cpu, 2),
            "load_average_before": load,
            "score": tg.evaluate(task["test"])[task["score"]],
            "sha256": hashlib.sha256(tg.weights_.tobytes()).hexdigest(),
        }

    print(f"{learner} on {args.task}, {C.fmt_params(params)}", flush=True)
    if not args.no_warm_up:
        fit(max(counts))
    runs = []
    for n in counts:
        tries = [fit(n) for _ in range(args.repeat)]
        best = dict(min(tries, key=lambda r: r["wall_seconds"]))
        best["tries"] = tries
        runs.append(best)
        print(
            f"  {n} thread(s): {best['wall_seconds']:.2f} s wall, {best['cpu_seconds']:.2f} s CPU, "
            f"{task['score']} {100 * best['score']:.2f}, weights {best['sha256'][:16]}, "
            f"load before {' '.join(map(str, best['load_average_before']))}",
            flush=True,
        )
    for n in [int(x) for x in args.workers.split(",") if x]:
        runs.append(_on_a_cluster(n, max(counts), fit))
    print()
    print(runs_table(runs, task["score"]))
    same = len({r["sha256"] for r in runs}) == 1
    print(f"\nweights identical at every thread count: {'yes' if same else 'NO'}")
    print(f"load average at the end {' '.join(map(str, C.load_average()))}")
    C.write_json(
        Path(args.json or C.OUT / f"threads_{args.task}_{learner}.json"),
        {
            "command": C.command_line(),
            "machine": mach,
            "task": args.task,
            "learner": learner,
            "params": params,
            "runs": runs,
            "same_weights": same,
        },
    )
    return 0 if same else 1


def _on_a_cluster(n: int, threads: int, fit) -> dict:
    """One run of ``fit`` with ``scheduler=`` a LocalCluster of ``n`` one-thread workers."""
    from dask.distributed import LocalCluster

    os.environ["NUMBA_NUM_THREADS"] = "1"  # what the workers start with
    with LocalCluster(
        n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        run = fit(threads, scheduler=cluster.scheduler_address)
    run["workers"] = n
    print(
        f"  {n} workers: {run['wall_seconds']:.2f} s wall, {run['cpu_seconds']:.2f} s CPU "
        f"(the driver's), weights {run['sha256'][:16]}",
        flush=True,
    )
    return run


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
