"""Grafting-Light against full OWL-QN and greedy Grafting (Zhu, Lao & Xing, KDD 2010).

    python bench/grafting.py synthetic [--c1 10] [--select-unit 50] [--json PATH]
    python bench/grafting.py np [--c1 1] [--select-unit 20000] [--path 8,4,2,1] [--l2 1]
                                [--limit N] [--json PATH]

``synthetic``: the slides' setting, 2000 state weights (1000 real-valued inputs x 2 labels, 30
relevant in correlated groups; ``tagger.training.synthetic``, the KDD'09 generator) and 4 transition
weights; 1000 training and 1000 test sequences of length 8 from one generating CRF. ``np``:
CoNLL-2000 NP chunking with the ``np-chunk-large`` preset (about 4.0 million candidate
weights), trained on train.txt and scored on test.txt.

The three L1 learners minimise the same objective at the same c1 from w = 0 and stop by the
same rule (relative decrease below ``delta`` over 10 iterations, and for the grafting learners
no violating weight left). Printed: final objective (and its gap to the best of the three),
seconds, gradient evaluations, iterations, non-zeros, test F1; then the trace of every learner
(seconds, objective, F1, gradient evaluations, working set, non-zeros) at a few points, and
when and after how many gradient evaluations each learner first came within 0.1 % of full
OWL-QN's final objective. "Gradient evals" counts forward-backward passes over the training
data (each gives the objective and a gradient: over all weights for crf-l1, over the working
set S for the grafting learners); "full-gradient passes" counts gradients over all weights
(every evaluation of crf-l1; for the grafting learners a scatter from the marginals of an
accepted working-set pass, without inference, once per growth check). Test F1 along the
trace is computed from each iterate by a scorer whose own time is subtracted from the clock.

``np --path c1,c1,...`` adds Grafting-Light along a decreasing c1 path (each run warm-started
from the previous solution): non-zeros and F1 against c1. ``--l2 c2`` adds the dense L2 CRF
(every one of the 4 million weights non-zero) as the reference for the feature-selection claim
(99.9 % of the weights discarded for < 1 % F1 loss).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

L1_LEARNERS = ("crf-l1", "crf-grafting", "crf-grafting-greedy")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("task", choices=("synthetic", "np"))
    p.add_argument("--c1", type=float, default=None)
    p.add_argument("--select-unit", type=int, default=None)
    p.add_argument("--learners", default=",".join(L1_LEARNERS))
    p.add_argument("--path", default="", help="np: comma-separated decreasing c1 values")
    p.add_argument("--l2", type=float, default=None, help="np: also train the dense L2 CRF")
    p.add_argument("--limit", type=int, default=None, help="np: first N training sentences")
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument(
        "--l1-adaptive-step",
        action="store_true",
        help="crf-l1 with adaptive_step=true (the grafting learners' line-search "
        "start) instead of its default unit first step",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None)
    a = p.parse_args(argv)
    if a.c1 is None:
        a.c1 = 10.0 if a.task == "synthetic" else 1.0
    if a.select_unit is None:
        a.select_unit = 50 if a.task == "synthetic" else 20000
    a.learners = [x for x in a.learners.split(",") if x]
    a.path = [float(x) for x in a.path.split(",") if x]
    return a


def log(msg):
    print(f"# {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------- data


def synthetic_data(seed):
    from tagger.learners import TrainingProblem
    from tagger.training.synthetic import generate

    data = generate(n_sequences=2000, length=8, n_features=1000, n_relevant=30, seed=seed)
    Xtr, ytr = data.subset(np.arange(1000))
    Xte, yte = data.subset(np.arange(1000, 2000))
    problem = TrainingProblem(data.model, Xtr, ytr)

    def f1(w):
        from tagger.inference import viterbi_batch

        pred, _ = viterbi_batch(
            data.model.state_scores(Xte, w), Xte.offsets, data.model.transitions(w)
        )
        tp = int(((pred == 1) & (yte == 1)).sum())
        fp = int(((pred == 1) & (yte == 0)).sum())
        fn = int(((pred == 0) & (yte == 1)).sum())
        return 200.0 * tp / max(2 * tp + fp + fn, 1)

    return (
        problem,
        f1,
        {
            "weights": data.model.n_weights,
            "train_sequences": 1000,
            "test_sequences": 1000,
            "label 1 F1": "token-level F1 of label 1",
        },
    )


def np_data(limit):
    from tagger.chain.layout import ChainModel
    from tagger.evaluation.labels import LabelIndex
    from tagger.evaluation.metrics import evaluate
    from tagger.features import FeatureSpec, Featurizer
    from tagger.io import read_corpus
    from tagger.learners import TrainingProblem

    root = C.corpora() / "conll2000"
    spec = FeatureSpec.load("np-chunk-large")
    train = spec.relabel(list(read_corpus(root / "train.txt")))
    if limit:
        train = train[:limit]
    test = spec.relabel(list(read_corpus(root / "test.txt")))
    t0 = time.perf_counter()
    fz = Featurizer(spec).fit(train)
    X = fz.transform(train)
    labels = LabelIndex.from_sentences(train)
    y = labels.encode([lab for s in train for lab in s.labels])
    model = ChainModel.from_data(X, y, len(labels), fz.n_attributes, spec.all_pairs)
    Xte = fz.transform(test)
    gold = [s.labels for s in test]
    names = labels.labels
    offs = Xte.offsets.tolist()
    t_feat = time.perf_counter() - t0

    def f1(w):
        from tagger.inference import viterbi_batch

        pred, _ = viterbi_batch(model.state_scores(Xte, w), Xte.offsets, model.transitions(w))
        flat = [names[i] for i in pred.tolist()]
        return 100 * evaluate(gold, [flat[a:b] for a, b in zip(offs[:-1], offs[1:])])["f1"]

    return (
        TrainingProblem(model, X, y),
        f1,
        {
            "weights": model.n_weights,
            "attributes": fz.n_attributes,
            "train_sentences": len(train),
            "featurize_seconds": round(t_feat, 1),
        },
    )


# ---------------------------------------------------------------------- runs


class Scorer:
    """Test F1 of every iterate; its own time is reported so that it can be taken off."""

    def __init__(self, f1):
        self.f1, self.seconds = f1, 0.0

    def __call__(self, w):
        t0 = time.perf_counter()
        v = self.f1(w)
        self.seconds += time.perf_counter() - t0
        return {"test_f1": round(v, 3), "score_seconds": self.seconds}


def run(name, params, problem, f1, w0=None, trace_f1=True):
    from tagger.learners import LEARNERS, TrainingProblem

    scorer = Scorer(f1) if trace_f1 else None
    prob = TrainingProblem(problem.model, problem.X, problem.y, dev_score=scorer)
    learner = LEARNERS[name](**params)
    t0 = time.perf_counter()
    w = learner.fit(prob, w0=w0)
    seconds = time.perf_counter() - t0 - (scorer.seconds if scorer else 0.0)
    trace = []
    for r in learner.trace_:
        trace.append(
            {
                "seconds": r["time"] - r.get("score_seconds", 0.0),
                "objective": r["objective"],
                "test_f1": r.get("test_f1"),
                "grad_evals": r["grad_evals"],
                "full_grads": r.get("full_grads"),
                "nonzero": r["nonzero"],
                "working_set": r.get("working_set", problem.model.n_weights),
            }
        )
    last = learner.trace_[-1]
    return w, {
        "learner": name,
        "params": params,
        "objective": last["objective"],
        "seconds": seconds,
        "grad_evals": last["grad_evals"],
        "full_grads": last["full_grads"],
        "iterations": last["epoch"],
        "nonzero": int(np.count_nonzero(w)),
        "test_f1": f1(w),
        "trace": trace,
    }


def first_within(trace, target, rel=1e-3):
    for r in trace:
        if r["objective"] <= target * (1 + rel):
            return r
    return None


def main(argv):
    args = parse_args(argv)
    mach = C.machine()
    if args.task == "synthetic":
        problem, f1, about = synthetic_data(args.seed)
    else:
        problem, f1, about = np_data(args.limit)
    log(f"{args.task}: {about}")
    # compile every kernel before anything is timed
    for name in args.learners + (["crf-l2"] if args.l2 is not None else []):
        run(name, {"epochs": 2}, problem, f1)
    base = {"c1": args.c1, "delta": args.delta, "epochs": 5000}
    results = {}
    for name in args.learners:
        params = dict(base)
        if name != "crf-l1":
            params["select_unit"] = args.select_unit
        elif args.l1_adaptive_step:
            params["adaptive_step"] = True
        log(f"training {name} {params}")
        _, r = run(name, params, problem, f1)
        log(
            f"{name}: objective {r['objective']:.4f}, {r['seconds']:.1f} s, "
            f"{r['grad_evals']} gradient evaluations, {r['nonzero']} non-zeros, "
            f"F1 {r['test_f1']:.2f}"
        )
        results[name] = r
    out = C.machine_lines(mach) + [""]
    if results:
        best = min(r["objective"] for r in results.values())
        out += [
            f"## {args.task}: c1={args.c1:g}, select unit M={args.select_unit}, "
            f"{about['weights']:,} weights",
            "",
        ]
        rows = []
        for name, r in results.items():
            rows.append(
                [
                    name,
                    f"{r['objective']:.4f}",
                    f"{100 * (r['objective'] / best - 1):.4f} %",
                    f"{r['seconds']:.1f}",
                    r["grad_evals"],
                    r["full_grads"],
                    r["iterations"],
                    C.fmt_int(r["nonzero"]),
                    f"{r['test_f1']:.2f}",
                ]
            )
        out.append(
            C.markdown_table(
                [
                    "learner",
                    "final objective",
                    "gap to best",
                    "seconds",
                    "gradient evals",
                    "full-gradient passes",
                    "iterations",
                    "non-zeros",
                    "test F1",
                ],
                rows,
            )
        )
        if "crf-l1" in results:
            target = results["crf-l1"]["objective"]
            out += ["", "Within 0.1 % of full OWL-QN's final objective:", ""]
            rows = []
            for name, r in results.items():
                hit = first_within(r["trace"], target)
                rows.append(
                    [
                        name,
                        "never" if hit is None else f"{hit['seconds']:.1f}",
                        "" if hit is None else hit["grad_evals"],
                        "" if hit is None else hit["full_grads"],
                        "" if hit is None else C.fmt_int(hit["nonzero"]),
                        "" if hit is None else f"{hit['test_f1']:.2f}",
                    ]
                )
            out.append(
                C.markdown_table(
                    [
                        "learner",
                        "seconds",
                        "gradient evals",
                        "full-gradient passes",
                        "non-zeros",
                        "test F1",
                    ],
                    rows,
                )
            )
        out += ["", "Traces (seconds, objective, test F1, gradient evals, working set, non-zeros):"]
        for name, r in results.items():
            tr = r["trace"]
            picks = sorted(set(np.unique(np.linspace(0, len(tr) - 1, 12).astype(int)).tolist()))
            out.append(f"\n{name}:")
            out.append(
                C.markdown_table(
                    ["s", "objective", "F1", "grad evals", "full grads", "|S|", "nnz"],
                    [
                        [
                            f"{tr[i]['seconds']:.1f}",
                            f"{tr[i]['objective']:.4f}",
                            f"{tr[i]['test_f1']:.2f}",
                            tr[i]["grad_evals"],
                            tr[i]["full_grads"],
                            C.fmt_int(tr[i]["working_set"]),
                            C.fmt_int(tr[i]["nonzero"]),
                        ]
                        for i in picks
                    ],
                )
            )
    path_rows = []
    if args.task == "np" and args.path:
        w = None
        for c1 in args.path:
            log(f"path: crf-grafting c1={c1:g}")
            w, r = run(
                "crf-grafting",
                {"c1": c1, "delta": args.delta, "epochs": 5000, "select_unit": args.select_unit},
                problem,
                f1,
                w0=w,
                trace_f1=False,
            )
            path_rows.append(r)
            log(f"c1={c1:g}: {r['nonzero']} non-zeros, F1 {r['test_f1']:.2f}, {r['seconds']:.1f} s")
    dense = None
    if args.task == "np" and args.l2 is not None:
        log(f"dense L2 CRF c2={args.l2:g}")
        _, dense = run(
            "crf-l2",
            {"c2": args.l2, "delta": args.delta, "epochs": 5000},
            problem,
            f1,
            trace_f1=False,
        )
        log(
            f"L2: {dense['nonzero']} non-zeros, F1 {dense['test_f1']:.2f}, {dense['seconds']:.1f} s"
        )
    if path_rows or dense:
        ref = dense["test_f1"] if dense else None
        out += [
            "",
            "F1 against the number of selected weights (Grafting-Light along c1; "
            "dense L2 CRF for reference):",
            "",
        ]
        rows = [
            [
                f"c1={r['params']['c1']:g}",
                C.fmt_int(r["nonzero"]),
                f"{100 * r['nonzero'] / about['weights']:.3f} %",
                f"{r['test_f1']:.2f}",
                "" if ref is None else f"{r['test_f1'] - ref:+.2f}",
                f"{r['seconds']:.1f}",
            ]
            for r in path_rows
        ]
        if dense:
            rows.append(
                [
                    f"L2 c2={args.l2:g}",
                    C.fmt_int(dense["nonzero"]),
                    f"{100 * dense['nonzero'] / about['weights']:.3f} %",
                    f"{dense['test_f1']:.2f}",
                    "+0.00",
                    f"{dense['seconds']:.1f}",
                ]
            )
        out.append(
            C.markdown_table(
                ["model", "non-zeros", "of all weights", "test F1", "vs dense", "seconds"], rows
            )
        )
    out += [
        "",
        "load average at the end: " + " ".join(map(str, C.load_average())),
        "command: " + C.command_line(),
    ]
    print("\n".join(out))
    path = Path(args.json) if args.json else C.OUT / f"grafting-{args.task}.json"
    C.write_json(
        path,
        {
            "command": C.command_line(),
            "machine": mach,
            "about": about,
            "results": results,
            "path": path_rows,
            "dense": dense,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
