"""The KDD'09 synthetic study (Zhu, Xing & Zhang 2009, section 5.1), reproduced.

    python bench/synthetic.py [--quick] [--learners NAME,...] [--sets 10] [--folds N]
                              [--json PATH] [--png DIR]

Data: ``tagger.training.synthetic.generate_sets`` (10 sets of 1000 sequences from 10
generating CRFs, d = 100 real-valued inputs, 30 relevant in 10 correlated groups, length 8,
binary labels).
Every learner is called by name through ``tagger.learners.LEARNERS`` on the same data, so
learners registered later become rows without changes here (a learner with none of the
regularization parameters below is skipped with a note). Four parts:

1. **Table 1**: on the first set, each learner over its grid of regularization constants,
   trained on each of the 10 folds (100 sequences) and tested on the other 900; the number of
   non-zero *average* state weights (over the folds), out of the 200, and among the 140 of the 70
   irrelevant inputs (plus how many of those are below 1e-4 in magnitude).
2. **Figure 5**: the same runs' mean test error and training seconds against the constant.
3. **Figure 2**: for K = 20, 10, 7, 5, 4 on every set, train on one part and test on the other
   K - 1 parts (50 ... 250 training sequences), each learner at its best constant of part 1;
   mean error over sets and folds (``--folds`` of the K parts per set are used as training part;
   default all of them).
4. **LP check**: lp-simplex and lp-extragradient on the same small generated problem (20
   sequences, 30 inputs, strong generating weights so the margin-1 LP is not solved by w = 0):
   their whole objectives and the relative difference.

Error rate: token error of Viterbi labels against the sampled labels. ``--quick``: 2 sets,
folds 0-1 of the first set in part 1, 1 training part per K in part 3 (about a minute).
Results go to ``bench/out/synthetic.json``; with matplotlib installed, figures to ``--png``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tagger.inference import viterbi_batch  # noqa: E402
from tagger.learners import LEARNERS, TrainingProblem  # noqa: E402
from tagger.training.synthetic import generate, generate_sets, kfold_parts, true_error  # noqa: E402

import _common as Cm  # noqa: E402

#: regularization constant and grid per learner (fixed settings alongside)
GRIDS = {
    # the subgradient defaults are tuned for CoNLL-2000; 100 sequences want batches of 10
    "m3n-subgradient": ("radius", [2.0, 3.0, 4.0, 8.0, 16.0], {"epochs": 40, "batch_size": 10}),
    "m3n-l2-subgradient": ("lambda", [0.03, 0.1, 0.3, 1.0, 3.0], {"epochs": 40, "batch_size": 10}),
    "m3n-cutting-plane": ("C", [0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.1], {}),
    "lp-simplex": ("C", [3.0, 10.0, 30.0, 100.0], {}),
    "lp-extragradient": ("C", [3.0, 10.0, 30.0], {"gap_tol": 1e-4, "early_gap_tol": 1e-2}),
    "m3n-em": ("lambda", [100.0, 300.0, 1000.0, 3000.0, 10000.0], {}),
    "m3n-l2": ("C", [0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03], {}),
    "crf-l1": ("c1", [0.1, 0.3, 1.0, 3.0], {}),
    "crf-l2": ("c2", [0.1, 1.0, 10.0, 100.0], {}),
}
# lp-simplex / lp-extragradient are left out by default: on these data the margin-1 LP is
# solved by (nearly) w = 0 at any C we tried (docs/synthetic.md); part 4 checks them
DEFAULT = [
    "m3n-subgradient",
    "m3n-l2-subgradient",
    "m3n-cutting-plane",
    "m3n-em",
    "m3n-l2",
    "crf-l1",
    "crf-l2",
]
#: the learners compared in Figure 2 (the L1-M3N and the L2 M3N, plus the CRFs when present)
FIG2 = ["m3n-cutting-plane", "m3n-em", "m3n-l2-subgradient", "m3n-l2", "crf-l1", "crf-l2"]
KS = (20, 10, 7, 5, 4)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--learners", default=",".join(DEFAULT))
    ap.add_argument("--sets", type=int, default=10)
    ap.add_argument(
        "--folds",
        type=int,
        default=1,
        help="training parts per (set, K) in Figure 2; 0 = all K (the paper's protocol; hours)",
    )
    ap.add_argument(
        "--table-folds",
        type=int,
        default=5,
        help="folds of set 1 (of 10) used as training parts in Table 1 / Figure 5",
    )
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--png", type=Path, default=None)
    return ap.parse_args(argv)


def error_rate(model, w, X, y) -> float:
    state = model.state_scores(X, w)
    pred, _ = viterbi_batch(state, X.offsets, model.transitions(w))
    return float(np.mean(pred != y))


def fit(name, value, extra, data, train_idx, test_idx):
    reg, _, fixed = GRIDS[name]
    learner = LEARNERS[name](**{reg: value, **fixed})
    X, y = data.subset(train_idx)
    t0 = time.perf_counter()
    w = learner.fit(TrainingProblem(data.model, X, y), seed=0)
    seconds = time.perf_counter() - t0
    Xt, yt = data.subset(test_idx)
    return w, error_rate(data.model, w, Xt, yt), seconds


def main(argv) -> int:
    args, mach = Cm.begin(argv, parse_args)
    names = [n for n in args.learners.split(",") if n]
    missing = [n for n in names if n not in LEARNERS]
    names = [n for n in names if n in LEARNERS]
    for n in missing:
        print(f"(not registered here, skipped: {n})")
    n_sets = 2 if args.quick else args.sets
    t_all = time.perf_counter()
    sets = generate_sets(n_sets, seed=0)
    first = sets[0]
    print(
        f"generating CRF's own Viterbi error (sets 1..{n_sets}): "
        + ", ".join(f"{100 * true_error(s):.1f}%" for s in sets)
        + "\n"
    )
    result = {
        "machine": mach,
        "command": Cm.command_line(),
        "quick": args.quick,
        "true_error": [true_error(s) for s in sets],
        "table1": {},
        "figure2": {},
        "lp_check": {},
    }

    # ---- parts 1 and 2: 10-fold on the first set
    parts = kfold_parts(first.n_sequences, 10, seed=0)
    folds = range(2) if args.quick else range(min(args.table_folds, 10))
    rel = first.relevant_params
    best = {}
    for name in names:
        reg, grid, _ = GRIDS[name]
        res = []
        for value in grid:
            ws, errs, secs = [], [], []
            for f in folds:
                test = np.concatenate([p for j, p in enumerate(parts) if j != f])
                w, err, sec = fit(name, value, None, first, parts[f], test)
                ws.append(w)
                errs.append(err)
                secs.append(sec)
            avg = np.mean(ws, axis=0)[: first.model.n_state]
            row = {
                "value": value,
                "nonzero": int(np.count_nonzero(avg)),
                "irrelevant": int(np.count_nonzero(avg[~rel])),
                "irrelevant_below_1e-4": int(
                    np.count_nonzero((avg[~rel] != 0) & (np.abs(avg[~rel]) < 1e-4))
                ),
                "error": float(np.mean(errs)),
                "error_sd": float(np.std(errs)),
                "seconds": float(np.mean(secs)),
            }
            res.append(row)
            print(
                f"{name} {reg}={value:g}: error {100 * row['error']:.2f}%  non-zero "
                f"{row['nonzero']}/200, irrelevant {row['irrelevant']}/140  "
                f"{row['seconds']:.2f}s/fit",
                flush=True,
            )
        result["table1"][name] = {"param": reg, "rows": res}
        best[name] = min(res, key=lambda r: r["error"])["value"]
    print("\n" + table_1(result) + "\n\n" + figure_5(result), flush=True)

    # ---- part 3: error against training size, every set, each learner at its best constant
    fig2 = [n for n in FIG2 if n in names]
    result["figure2_constants"] = {n: [GRIDS[n][0], best[n]] for n in fig2}
    for K in KS:
        n_folds = 1 if args.quick else (args.folds or K)
        cells = {}
        size = None
        for name in fig2:
            errs = []
            irr = []
            for si, data in enumerate(sets):
                kp = kfold_parts(data.n_sequences, K, seed=si)
                for f in range(min(n_folds, K)):
                    test = np.concatenate([p for j, p in enumerate(kp) if j != f])
                    w, err, _ = fit(name, best[name], None, data, kp[f], test)
                    errs.append(err)
                    irr.append(
                        int(np.count_nonzero(w[: data.model.n_state][~data.relevant_params]))
                    )
                    size = len(kp[f])
            cells[name] = {
                "error": float(np.mean(errs)),
                "sd": float(np.std(errs)),
                "runs": len(errs),
                "irrelevant_mean": float(np.mean(irr)),
            }
        result["figure2"][str(K)] = {"train_size": size, **cells}
        print(f"K={K} done", flush=True)
    print("\n" + figure_2(result))

    # ---- part 4: the LP solvers agree
    small = generate(n_sequences=20, n_features=30, n_relevant=12, weight_range=(0.0, 5.0), seed=2)
    prob = TrainingProblem(small.model, small.X, small.y)
    objs = {}
    for name, kw in (("lp-simplex", {}), ("lp-extragradient", {"gap_tol": 1e-6})):
        if name not in LEARNERS:
            continue
        learner = LEARNERS[name](C=20.0, epsilon=1e-7, **kw)
        t0 = time.perf_counter()
        learner.fit(prob)
        objs[name] = {
            "objective": learner.trace_[-1]["objective"],
            "converged": learner.trace_[-1]["converged"],
            "rows": learner.trace_[-1]["rows"],
            "seconds": time.perf_counter() - t0,
        }
    if len(objs) == 2:
        a, b = objs["lp-simplex"]["objective"], objs["lp-extragradient"]["objective"]
        objs["relative_difference"] = abs(a - b) / abs(a)
    result["lp_check"] = objs
    print("\n" + lp_check(result))
    result["seconds"] = time.perf_counter() - t_all
    print(f"\nwhole study: {result['seconds']:.0f} s")

    out = args.json or Cm.OUT / ("synthetic-quick.json" if args.quick else "synthetic.json")
    Cm.write_json(out, result)
    if args.png:
        _figures(result, fig2, args.png)
    return 0


def table_1(result: dict) -> str:
    """Table 1 from a run's JSON: non-zero average state weights per learner and constant."""
    rows = [
        [
            name,
            f"{t['param']}={r['value']:g}",
            r["nonzero"],
            r["irrelevant"],
            r["irrelevant_below_1e-4"],
        ]
        for name, t in result["table1"].items()
        for r in t["rows"]
    ]
    header = [
        "learner",
        "constant",
        "non-zero (of 200)",
        "irrelevant (of 140)",
        "irrelevant < 1e-4",
    ]
    return (
        "Table 1: non-zero average state weights (cross-validation on set 1; of 200, and of "
        "the 140 on irrelevant inputs)\n\n" + Cm.markdown_table(header, rows)
    )


def figure_5(result: dict) -> str:
    """Figure 5's numbers from a run's JSON: test error and seconds per learner and constant."""
    rows = [
        [
            name,
            f"{t['param']}={r['value']:g}",
            f"{100 * r['error']:.2f} ± {100 * r['error_sd']:.2f}",
            f"{r['seconds']:.2f}",
        ]
        for name, t in result["table1"].items()
        for r in t["rows"]
    ]
    return (
        "Figure 5: test error (%, mean ± sd over folds) and training seconds per fit\n\n"
        + Cm.markdown_table(["learner", "constant", "error %", "seconds"], rows)
    )


def figure_2(result: dict) -> str:
    """Figure 2's numbers from a run's JSON: error against training size, each learner at its
    best constant of Table 1."""
    constants = result.get("figure2_constants", {})
    names = list(constants) or [
        k for k in next(iter(result["figure2"].values()), {}) if k != "train_size"
    ]
    rows = [
        [K, str(cells["train_size"])]
        + [f"{100 * cells[n]['error']:.2f} ± {100 * cells[n]['sd']:.2f}" for n in names]
        for K, cells in result["figure2"].items()
    ]
    chosen = ", ".join(f"{n} {p}={v:g}" for n, (p, v) in constants.items())
    return (
        f"Figure 2: token error (%) against training size, mean ± sd over the sets and "
        f"training parts{'; constants: ' + chosen if chosen else ''}\n\n"
        + Cm.markdown_table(["K", "train size", *names], rows)
    )


def lp_check(result: dict) -> str:
    """The two LP learners' objectives on the same small problem."""
    objs = result.get("lp_check") or {}
    parts = [
        f"{k} objective {v['objective']:.6f} ({v['rows']} rows, {v['seconds']:.1f} s)"
        for k, v in objs.items()
        if isinstance(v, dict)
    ]
    if "relative_difference" in objs:
        parts.append(f"relative difference {objs['relative_difference']:.2e}")
    return "LP check (20 sequences, d = 30, C = 20): " + ("; ".join(parts) or "not run")


def study_tables(result: dict) -> str:
    """Every table of a run's JSON (bench/tables.py renders the committed run with it)."""
    true = ", ".join(f"{100 * e:.1f} %" for e in result.get("true_error", []))
    return "\n\n".join(
        [
            f"The generating CRFs' own Viterbi error per set: {true}.",
            table_1(result),
            figure_5(result),
            figure_2(result),
            lp_check(result),
        ]
    )


def _figures(result, fig2, where: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed: no figures)")
        return
    where.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    sizes = [result["figure2"][str(K)]["train_size"] for K in KS]
    for n in fig2:
        ax.plot(
            sizes, [100 * result["figure2"][str(K)][n]["error"] for K in KS], marker="o", label=n
        )
    ax.set_xlabel("training sequences")
    ax.set_ylabel("token error %")
    ax.legend()
    fig.tight_layout()
    fig.savefig(where / "synthetic_fig2.png", dpi=120)
    for name, t in result["table1"].items():
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(7, 3))
        xs = [r["value"] for r in t["rows"]]
        a1.semilogx(xs, [100 * r["error"] for r in t["rows"]], marker="o")
        a2.semilogx(xs, [r["seconds"] for r in t["rows"]], marker="o")
        a1.set_xlabel(t["param"])
        a2.set_xlabel(t["param"])
        a1.set_ylabel("error %")
        a2.set_ylabel("seconds per fit")
        fig.suptitle(name)
        fig.tight_layout()
        fig.savefig(where / f"synthetic_fig5_{name}.png", dpi=120)
    print(f"figures in {where}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
