"""The POS table of Wang, Shawe-Taylor & Szedmak (AISTATS 2009) on public data: their protocol,
their features, their rows, next to the published numbers.

    python bench/lp_paper.py [--corpora conll2000,gum] [--splits 5] [--workers 2]
                             [--learners hmm,perceptron,lp-extragradient,lp-simplex,...]
                             [--train-size 5700] [--max-seconds S]
                             [--set NAME:key=value ...] [--json PATH]

Protocol (the paper's, on 6,700 MEDLINE sentences): 6,700 sentences drawn at random from a
corpus (``numpy.random.default_rng(0)``), then ``--splits`` random splits of them into 5,700
training and 1,000 test sentences (split k: ``default_rng(k + 1)``). Corpora: the CoNLL-2000
POS column (train.txt and test.txt pooled, 10,948 sentences) and UD English GUM UPOS (train,
dev and test pooled). Features: the ``hmm`` preset (the word with the label, label
transitions, a bias per label; every (word, label) pair a parameter). Columns as the paper's:
Err_all (token error, %), Err_voc (error on tokens whose word is in the split's training
sentences), CPU seconds of training (process time, all threads), iterations (rounds of column
generation, epochs, or passes), each the mean (± standard deviation) over the splits; also
wall seconds and how many runs converged. A learner's regularization strength is chosen on a
held-out tenth of the training sentences (``NO_SELECT``: not for the LP learners), training
time includes that choice. One job per (corpus, split, learner), ``--workers``
at a time, one numba thread each. ``--train-size N`` trains on the first N sentences of each
split's 5,700 (the test sentences stay the same), for learners that do not reach the full
size; ``--max-seconds`` bounds the iterative learners' training (a run stopped by it counts
as not converged). Results go to ``bench/out/lp_paper.json``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

#: the paper's table: Err_all, Err_voc (mean, sd), CPU seconds, iterations (8 x 3.0 GHz Xeon)
PUBLISHED = {
    "HMM": ((20.02, 0.29), (14.44, 0.19), None, None),
    "MIRA": ((4.91, 0.06), (1.96, 0.12), 9084, 46),
    "Perceptron": ((5.38, 0.19), (2.10, 0.07), 26, 100),
    "LP-Simplex": ((4.94, 0.18), (1.96, 0.14), 3879, 23),
    "LP-Xgrad": ((4.92, 0.13), (1.98, 0.12), 856, 14),
    "CRF": ((4.58, 0.14), (1.81, 0.19), 51403, 205),
}
LEARNERS = ("hmm", "perceptron", "mira", "lp-extragradient", "lp-simplex", "crf-l2", "m3n-owlqn")
#: settings on top of each learner's defaults: the perceptron's 100 passes as in the paper
PARAMS = {
    "perceptron": {"epochs": 100},
    "mira": {"epochs": 46},
    # the LP learners' C is not chosen (NO_SELECT): 100 makes a slack cost as much as
    # a hundred units of weight, so that training errors are expensive, as at the
    # paper's error rates; it was fixed before any test score was seen
    "lp-extragradient": {"C": 100.0},
    "lp-simplex": {"C": 100.0},
}
POOL, TRAIN = 6700, 5700
#: learners whose strength is not chosen: the LP learners (one converged run on a split takes
#: the better part of the paper's time budget; a path would multiply it); every other learner
#: with a strength (the HMM's smoothing, MIRA's step cap, the CRF's c2, the L1-M3N's c1) has
#: it chosen on a held-out tenth of the split's training sentences and is then trained on all
#: of them (``Tagger(select=True)``)
NO_SELECT = ("lp-extragradient", "lp-simplex")


def _corpus(name: str) -> list:
    root = C.corpora()
    if name == "conll2000":
        parts = [
            C.load({"path": str(root / "conll2000" / f), "label_column": -2, "keep_columns": 1})
            for f in ("train.txt", "test.txt")
        ]
    else:
        gum = root / "ud_english_gum"
        parts = [
            C.load({"path": str(gum / f"en_gum-ud-{f}.conllu")}) for f in ("train", "dev", "test")
        ]
    return [s for part in parts for s in part if len(s)]


def _splits(sentences: list, n_splits: int) -> list[tuple[list, list]]:
    import numpy as np

    pool = np.random.default_rng(0).choice(len(sentences), POOL, replace=False)
    out = []
    for k in range(n_splits):
        perm = np.random.default_rng(k + 1).permutation(POOL)
        out.append(
            ([sentences[i] for i in pool[perm[:TRAIN]]], [sentences[i] for i in pool[perm[TRAIN:]]])
        )
    return out


def run_job(job: dict) -> dict:
    """Train one learner on one split in a worker process; CPU and wall time of training."""
    from tagger import Tagger

    train, test = _splits(_corpus(job["corpus"]), job["split"] + 1)[job["split"]]
    train = train[: job["train_size"]]
    tagger = Tagger(
        features="hmm",
        learner=job["learner"],
        params=job["params"],
        select=job["learner"] not in NO_SELECT,
        seed=job["split"],
    )
    cpu0, wall0 = time.process_time(), time.perf_counter()
    tagger.fit(train)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    result = tagger.evaluate(test, vocabulary=train)
    last = tagger.trace_[-1] if tagger.trace_ else {}
    return {
        "corpus": job["corpus"],
        "split": job["split"],
        "learner": job["learner"],
        "params": job["params"],
        "err_all": 100 * (1 - result["accuracy"]),
        "err_voc": 100 * result["by_vocabulary"]["seen"]["error"],
        "cpu_s": cpu,
        "wall_s": wall,
        "iterations": len(tagger.trace_),
        "converged": bool(last.get("converged", True)),
        "nonzero": tagger.n_nonzero_,
        "last": {k: v for k, v in last.items() if isinstance(v, (int, float, str, bool))},
    }


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpora", default="conll2000,gum")
    p.add_argument("--splits", type=int, default=5)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--learners", default=",".join(LEARNERS))
    p.add_argument("--set", action="append", default=[], metavar="NAME:key=value")
    p.add_argument("--train-size", type=int, default=TRAIN)
    p.add_argument("--max-seconds", type=float, default=0.0)
    p.add_argument("--json", default=str(C.OUT / "lp_paper.json"))
    return p.parse_args(argv)


def _cell(values: list[float], digits: int = 2) -> str:
    if not values:
        return "-"
    sd = f" ± {statistics.stdev(values):.{digits}f}" if len(values) > 1 else ""
    return f"{statistics.mean(values):.{digits}f}{sd}"


def main(argv) -> int:
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")  # one thread per worker process
    args, mach = C.begin(argv, parse_args)
    from tagger.learners import get_learner

    names = [n for n in args.learners.split(",") if n]
    params = {n: dict(PARAMS.get(n, {})) for n in names}
    for n in names:
        if args.max_seconds and any(p.name == "max_seconds" for p in get_learner(n).params):
            params[n]["max_seconds"] = args.max_seconds
    for item in args.set:
        name, kv = item.split(":", 1)
        params[name].update(get_learner(name).parse_settings([kv]))
    corpora = [c for c in args.corpora.split(",") if c]
    jobs = [
        {"corpus": c, "split": k, "learner": n, "params": params[n], "train_size": args.train_size}
        for c in corpora
        for k in range(args.splits)
        for n in names
    ]
    results = []
    t0 = time.perf_counter()
    with ProcessPoolExecutor(
        max_workers=args.workers, mp_context=multiprocessing.get_context("spawn")
    ) as pool:
        for future in as_completed([pool.submit(run_job, j) for j in jobs]):
            r = future.result()
            results.append(r)
            print(
                f"  {r['corpus']} split {r['split']} {r['learner']}: Err_all "
                f"{r['err_all']:.2f} Err_voc {r['err_voc']:.2f} cpu {r['cpu_s']:.1f} s "
                f"wall {r['wall_s']:.1f} s iterations {r['iterations']} converged "
                f"{r['converged']}",
                flush=True,
            )
    for corpus in corpora:
        rows = []
        for n in names:
            rs = [r for r in results if r["corpus"] == corpus and r["learner"] == n]
            rows.append(
                [
                    n,
                    _cell([r["err_all"] for r in rs]),
                    _cell([r["err_voc"] for r in rs]),
                    _cell([r["cpu_s"] for r in rs], 0),
                    _cell([r["wall_s"] for r in rs], 0),
                    _cell([r["iterations"] for r in rs], 1),
                    f"{sum(r['converged'] for r in rs)}/{len(rs)}",
                ]
            )
        for name, (ea, ev, cpu, it) in PUBLISHED.items():
            rows.append(
                [
                    f"published: {name}",
                    f"{ea[0]:.2f} ± {ea[1]:.2f}",
                    f"{ev[0]:.2f} ± {ev[1]:.2f}",
                    "-" if cpu is None else str(cpu),
                    "-",
                    "-" if it is None else str(it),
                    "-",
                ]
            )
        print(
            f"\n{corpus}: {POOL:,} sentences, {args.splits} splits of {TRAIN:,} / "
            f"{POOL - TRAIN:,} (training on {args.train_size:,}), hmm features"
        )
        print(
            C.markdown_table(
                ["model", "Err_all", "Err_voc", "CPU s", "wall s", "iterations", "converged"], rows
            )
        )
    print("\nsettings: " + "; ".join(f"{n} {C.fmt_params(params[n])}" for n in names))
    print(
        f"whole run: {time.perf_counter() - t0:.0f} s wall clock with {args.workers} "
        f"worker(s); load average at the end {' '.join(map(str, C.load_average()))}"
    )
    C.write_json(Path(args.json), {"machine": mach, "params": params, "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
