"""A path over C for the LP learners: what carrying the working sets from point to point saves.
One run is one corpus, one size and one mode.

    python bench/lp_path.py --corpus gum|conll --sentences N --mode carried|fresh|choose
                            [--learner lp-simplex] [--values 8,16,32,64,128]
                            [--point-epsilon E | --point-gap G] [--max-seconds S]
                            [--quiet] [--json PATH]

Trains the learner (its defaults, the ``hmm`` preset as bench/lp_engines.py uses) at each C of
``--values`` in turn on the first N sentences of GUM UPOS or CoNLL-2000's POS column, each point
warm-started from the weights of the point before, as the regularization path of ``tagger
train`` and ``tagger path`` trains them, strongest first. The default values double from 8 to
128, where the models have weights: below C = 8 the L1 LP on these data keeps next to none
(on 200 GUM sentences, 152 non-zero weights at C = 2 and 7.4 % test accuracy), and the paper's
C = 100 lies within. ``--mode carried`` is the learner as it is: each point starts
from every row (competing labeling) the points before generated, its LP given the new C.
``--mode fresh`` turns that off (the learner is not told it is on a path, so it rebuilds its
working sets at each point from the warm start alone), which is how every point was trained
before the rows were carried. Both certify each point's optimum; the JSON records per point the
seconds, rounds, LP solves, rows (carried and in all), the certified objective, non-zero
weights and test accuracy (scored outside the timed training), and the load average. Results go
to ``bench/out/lp-path-<corpus>-<N>-<mode>.json``; ``bench/tables.py`` puts the modes of one
corpus and size side by side.

``--mode choose`` is what ``tagger train --learner lp-simplex`` does on these sentences: the
path chooses C on GUM's dev file (on CoNLL-2000, which has none, on a held-out tenth) and the
point kept is trained to the learner's own precision. ``--point-epsilon E`` trains the points
of that path at ``epsilon = E`` (the kept point then trained on at the learner's own) instead
of the learner's ``path_settings`` (0: at the learner's own epsilon, every point certified);
``--point-gap G`` trains them instead to the relative optimality gap G (the learner's
``optimality_gap``, 1e-3 by default) at the learner's own epsilon: each point stops once its
objective is certified within G of its optimum, the kept point is then trained on to the
learner's own gap. The JSON records the path's rows, the C kept, the seconds of the whole
choice and the test accuracy (``bench/out/lp-path-<corpus>-<N>-choose-<E, gapG or
default>.json``).

``--max-seconds S`` bounds the whole choice as ``tagger train --max-seconds`` does: the path
stops after the point that reaches it and keeps the best of the points trained.

Progress (each LP round: objective, non-zero weights, the gap, the dev score on the path, and
each point of the path as it ends) goes to stderr as ``tagger train`` shows it; ``--quiet``
turns it off.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lp_engines import load_data  # noqa: E402

import _common as C  # noqa: E402

MODES = ("carried", "fresh", "choose")
#: doubling, as the path's grid does (tagger.training.selection.GRID_FACTOR)
VALUES = "8,16,32,64,128"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", choices=("gum", "conll"), required=True)
    p.add_argument("--sentences", type=int, required=True, metavar="N")
    p.add_argument("--mode", choices=MODES, required=True)
    p.add_argument("--learner", default="lp-simplex")
    p.add_argument("--values", default=VALUES, help="the C of each point, in order")
    points = p.add_mutually_exclusive_group()
    points.add_argument("--point-epsilon", type=float, default=None, metavar="E")
    points.add_argument("--point-gap", type=float, default=None, metavar="G")
    p.add_argument("--max-seconds", type=float, default=0.0, metavar="S")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    try:
        args.values = [float(v) for v in args.values.split(",") if v.strip()]
    except ValueError:
        p.error(f"--values takes numbers separated by commas; got {args.values!r}")
    if not args.values or min(args.values) <= 0:
        p.error("--values takes at least one C, each above 0")
    if args.point_gap is not None and not 0 < args.point_gap < 1:
        p.error(f"--point-gap takes a relative gap between 0 and 1; got {args.point_gap:g}")
    if args.max_seconds < 0:
        p.error(f"--max-seconds takes 0 (no bound) or more; got {args.max_seconds:g}")
    chosen = args.point_gap is not None or args.point_epsilon is not None or args.max_seconds
    if chosen and args.mode != "choose":
        p.error("--point-epsilon, --point-gap and --max-seconds go with --mode choose")
    return args


def _accuracy(featurizer, labels, model, w, test) -> float:
    """Token accuracy of the weights ``w`` on ``test`` (Viterbi of the plain chain)."""
    import numpy as np

    from tagger.chain import viterbi_batch_into

    X = featurizer.transform(test)
    state = model.state_scores(X, w)
    trans = np.ascontiguousarray(model.transitions(w))
    pred = np.empty(X.n_tokens, np.int32)
    viterbi_batch_into(state, X.offsets, trans, pred, np.empty(X.n_sentences))
    index = {lab: i for i, lab in enumerate(labels.labels)}
    gold = np.array([index.get(lab, -1) for s in test for lab in s.labels])
    return float(np.mean(pred == gold))


def main(argv) -> int:
    args, mach = C.begin(argv, parse_args)
    from tagger.training.progress import TrainProgress

    with TrainProgress(quiet=args.quiet):
        return _run(args, mach)


def _run(args, mach) -> int:
    import numpy as np

    from tagger import Tagger
    from tagger.features import FeatureSpec
    from tagger.learners import get_learner
    from tagger.training.data import build_problem

    train, test = load_data(args.corpus, args.sentences)
    if args.mode == "choose":
        return _choose(args, mach, train, test)
    # numba's kernels compiled (or loaded from its cache) outside the timed points
    Tagger(features="hmm", learner=args.learner, params={"max_seconds": 5.0}, select=False).fit(
        train[:20]
    )
    _, featurizer, labels, problem = build_problem(FeatureSpec.load("hmm"), train, None, None)
    learner = get_learner(args.learner)()
    learner.warm_start = args.mode == "carried"
    points, w = [], None
    load_before = C.load_average()
    t_all = time.perf_counter()
    for value in args.values:
        learner.settings["C"] = value
        t0 = time.perf_counter()
        w = learner.fit(problem, w0=w)
        seconds = time.perf_counter() - t0
        trace = learner.trace_
        last = trace[-1] if trace else {}
        points.append(
            {
                "C": value,
                "seconds": round(seconds, 2),
                "rounds": len(trace),
                "carried_rows": trace[0].get("carried_rows", 0) if trace else 0,
                "rows": last.get("rows"),
                "objective": last.get("objective"),
                "lp_objective": last.get("lp_objective"),
                "certified": bool(last.get("converged")),
                "start_seconds": trace[0].get("start_time") if trace else None,
                "nonzero": int(np.count_nonzero(w)),
                "test_accuracy": _accuracy(featurizer, labels, problem.model, w, test),
            }
        )
        p = points[-1]
        print(
            f"  C={value:g}: {p['seconds']:.1f} s, {p['rounds']} rounds, rows {p['rows']} "
            f"({p['carried_rows']} carried), objective {p['objective']:.6g}, certified "
            f"{p['certified']}, {p['nonzero']:,} non-zero, test {100 * p['test_accuracy']:.2f}",
            flush=True,
        )
    total = time.perf_counter() - t_all
    learner.release()
    result = {
        "corpus": args.corpus,
        "sentences": len(train),
        "tokens": sum(len(s) for s in train),
        "learner": args.learner,
        "mode": args.mode,
        "points": points,
        "seconds": round(total, 2),
        "training_seconds": round(sum(p["seconds"] for p in points), 2),
        "all_certified": all(p["certified"] for p in points),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "load_average_before": load_before,
        "load_average_after": C.load_average(),
    }
    print(f"{args.mode}: {result['training_seconds']:.1f} s of training for {len(points)} points")
    C.write_json(
        args.json or C.OUT / f"lp-path-{args.corpus}-{args.sentences}-{args.mode}.json",
        {"command": C.command_line(), "machine": mach, "result": result},
    )
    return 0


def _choose(args, mach, train, test) -> int:
    """``--mode choose``: the whole choice of C, as ``tagger train`` makes it."""
    from tagger import Tagger
    from tagger.learners import get_learner

    cls = get_learner(args.learner)
    if args.point_epsilon is not None:
        cls.path_settings = {"epsilon": args.point_epsilon} if args.point_epsilon > 0 else {}
    elif args.point_gap is not None:
        cls.path_settings = {"optimality_gap": args.point_gap}
    dev = None
    if args.corpus == "gum":
        dev_path = C.corpora() / "ud_english_gum" / "en_gum-ud-dev.conllu"
        dev = [s for s in C.load({"path": str(dev_path)}) if len(s)]
    Tagger(features="hmm", learner=args.learner, params={"max_seconds": 5.0}, select=False).fit(
        train[:20]
    )
    load_before = C.load_average()
    tagger = Tagger(features="hmm", learner=args.learner, seed=0, max_seconds=args.max_seconds)
    t0 = time.perf_counter()
    tagger.fit(train, dev=dev)
    seconds = time.perf_counter() - t0
    selection = tagger.info_.get("selection", {})
    keep = ("value", "dev_acc", "nonzero", "iterations", "seconds", "selected", "refit")
    keep += ("refit_score", "refit_nonzero", "refit_iterations")
    rows = [{k: r[k] for k in keep if k in r} for r in selection.get("rows", [])]
    final = tagger.info_.get("final", {})
    result = {
        "corpus": args.corpus,
        "sentences": len(train),
        "learner": args.learner,
        "mode": "choose",
        "point_epsilon": cls.path_settings.get("epsilon"),
        "point_gap": cls.path_settings.get("optimality_gap"),
        "max_seconds": args.max_seconds,
        "notes": selection.get("notes", []),
        "recipe": selection.get("recipe", {}),
        "path": rows,
        "chosen": {selection.get("param", "C"): selection.get("value")},
        "seconds": round(seconds, 2),
        "certified": bool(final.get("converged")),
        "nonzero": tagger.n_nonzero_,
        "test_accuracy": tagger.evaluate(test)["accuracy"],
        "load_average_before": load_before,
        "load_average_after": C.load_average(),
    }
    for r in rows:
        print(f"  {r}")
    print(
        f"choose: {seconds:.1f} s, kept {result['chosen']}, certified {result['certified']}, "
        f"{result['nonzero']:,} non-zero, test {100 * result['test_accuracy']:.2f}"
    )
    tag = "default" if args.point_epsilon is None else f"{args.point_epsilon:g}"
    if args.point_gap is not None:
        tag = f"gap{args.point_gap:g}"
    name = f"lp-path-{args.corpus}-{args.sentences}-choose-{tag}.json"
    C.write_json(
        args.json or C.OUT / name,
        {"command": C.command_line(), "machine": mach, "result": result},
    )
    return 0


def _kept_note(p: dict) -> str:
    """The last column of a path row: whether the point was kept, and how it was trained."""
    if not p.get("selected"):
        return ""
    if p.get("refit"):
        return "kept (its figures: the training on to the learner's own gap)"
    if "refit_score" in p:
        return (
            f"kept (trained again: dev {p['refit_score']:.2f}, {p['refit_nonzero']:,} non-zero, "
            "lower by more than noise)"
        )
    return "kept"


def choose_table(data: dict) -> str:
    """``--mode choose``: the path's rows, then the whole choice (bench/tables.py)."""
    r = data["result"]
    rows = [
        [
            f"{p['value']:g}",
            f"{p.get('dev_acc', float('nan')):.2f}",
            f"{p['nonzero']:,}",
            str(p.get("iterations", "")),
            f"{p['seconds']:.1f}",
            _kept_note(p),
        ]
        for p in r["path"]
    ]
    header = ["C", "dev accuracy", "non-zero", "rounds", "seconds", ""]
    eps = "the learner's own" if r["point_epsilon"] is None else f"{r['point_epsilon']:g}"
    gap = r.get("point_gap")
    at = f"a relative gap of {gap:g}" if gap is not None else f"epsilon = {eps}"
    return (
        f"points at {at}; the whole choice {r['seconds']:.1f} s, kept "
        f"{', '.join(f'{k} = {v:g}' for k, v in (r['chosen'] or {}).items())}, certified: "
        f"{'yes' if r['certified'] else 'no'}, "
        f"{r['nonzero']:,} non-zero, test accuracy {C.fmt_pct(r['test_accuracy'])}\n\n"
        + C.markdown_table(header, rows)
    )


def table(runs: list[dict]) -> str:
    """The modes of one corpus and size side by side, point by point (bench/tables.py)."""
    rows = []
    for data in runs:
        r = data["result"]
        for p in r["points"]:
            rows.append(
                [
                    r["mode"],
                    f"{p['C']:g}",
                    f"{p['seconds']:.1f}",
                    str(p["rounds"]),
                    f"{p['carried_rows']:,}",
                    f"{p['rows']:,}" if p["rows"] is not None else "",
                    f"{p['objective']:.6g}" if p["objective"] is not None else "",
                    "yes" if p["certified"] else "no",
                    f"{p['nonzero']:,}",
                    C.fmt_pct(p["test_accuracy"]),
                ]
            )
        total = f"**{r['training_seconds']:.1f}**"
        rows.append([f"**{r['mode']}: all points**", "", total] + [""] * 7)
    header = [
        "mode",
        "C",
        "seconds",
        "rounds",
        "rows carried",
        "rows",
        "objective",
        "certified",
        "non-zero",
        "test accuracy",
    ]
    return C.markdown_table(header, rows)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
