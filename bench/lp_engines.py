"""HiGHS's LP engines on the restricted LPs of ``lp-simplex``'s column generation: one run is
one corpus, one size, one engine.

    python bench/lp_engines.py --corpus gum|conll --sentences N --engine auto|simplex|ipm|pdlp
                               [--C 100] [--max-seconds 1200] [--json PATH]

Trains ``lp-simplex`` (its defaults: the trust region from the smoothed start, single-token
rows) with the ``hmm`` preset, as bench/lp_paper.py does, and the fixed C = 100 of
docs/lp_paper.md, on the first N sentences of GUM UPOS (``en_gum-ud-train.conllu``) or of the
CoNLL-2000 POS column (``train.txt``, the words as the only input column), and scores it on
the corpus's test file (``en_gum-ud-test.conllu``, ``test.txt``). ``--engine`` is the
learner's ``engine``: the dual simplex warm-started from the last basis, the interior point
method with crossover, the two by LP size (``auto``), or PDLP to its tolerance
(tagger.learners.solvers.highs_solver).

Recorded: wall seconds of ``Tagger.fit`` (featurization and training; numba is compiled before,
by an untimed fit on 20 sentences), of the smoothed start within it, and inside the LP engine
(every ``HighsSolver.solve()`` call, which also hands the round's new rows and box to HiGHS;
also per solve, with the LP's rows and columns); the rounds (progress rows) and LP solves, the
LP iterations summed over the solves (simplex, interior point, crossover and PDLP iterations
apart), the whole objective at the returned weights and the last LP's value, whether the column
generation certified the optimum (``converged``: every LP that certificate rests on was solved
exactly), the relative gap between the objective and the last LP's value, for PDLP the gap and
infeasibility its approximate rounds stopped at, the non-zero weights (and how many of them are
below 1e-9, rounding left by an LP solve), test accuracy, the peak RSS of this process and the
load average before and after. ``--max-seconds`` is the learner's ``max_seconds``: it stops
after the round during which that much time has passed (the smoothed start before the first
round is not bounded by it), and such a run is recorded as stopped, not certified. Results go
to ``bench/out/lp-engines-<corpus>-<N>-<engine>.json``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

ENGINES = ("auto", "simplex", "ipm", "pdlp")  # tagger.learners.solvers.highs_solver.ENGINES
#: docs/lp_paper.md's fixed C for the LP learners (bench/lp_paper.py PARAMS)
FIXED_C = 100.0


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", choices=("gum", "conll"), required=True)
    p.add_argument("--sentences", type=int, required=True, metavar="N")
    p.add_argument("--engine", choices=ENGINES, required=True)
    p.add_argument("--C", type=float, default=FIXED_C)
    p.add_argument("--max-seconds", type=float, default=1200.0)
    p.add_argument("--json", type=Path, default=None)
    return p.parse_args(argv)


def load_data(corpus: str, n: int) -> tuple[list, list]:
    root = C.corpora()
    if corpus == "conll":
        spec = {"label_column": -2, "keep_columns": 1}
        train = C.load({"path": str(root / "conll2000" / "train.txt"), "limit": n, **spec})
        test = C.load({"path": str(root / "conll2000" / "test.txt"), **spec})
    else:
        gum = root / "ud_english_gum"
        train = C.load({"path": str(gum / "en_gum-ud-train.conllu"), "limit": n})
        test = C.load({"path": str(gum / "en_gum-ud-test.conllu")})
    return [s for s in train if len(s)], [s for s in test if len(s)]


class SolveMeter:
    """Times every ``HighsSolver.solve()`` call of this process and sums what its ``last``
    statistics report."""

    def __init__(self):
        from tagger.learners.solvers import highs_solver

        self.reset()
        original = highs_solver.HighsSolver.solve
        meter = self

        def solve(solver):
            t0 = time.perf_counter()
            out = original(solver)
            spent = time.perf_counter() - t0
            meter.seconds += spent
            meter.solves += 1
            last = solver.last
            meter.per_solve.append(
                [round(spent, 4), solver.rows, solver.cols, last["lp_iterations"], "lp_gap" in last]
            )
            # a PDLP run's exact rounds at the end are simplex iterations
            key = (
                "pdlp"
                if "lp_gap" in last
                else last.get("lp_engine", "ipm" if solver.engine == "ipm" else "simplex")
            )
            meter.count(key, last["lp_iterations"])
            meter.count("crossover", last.get("lp_crossover_iterations", 0))
            if "lp_gap" in last:
                meter.approximate += 1
                meter.pdlp_gaps.append(last["lp_gap"])
                meter.pdlp_infeasibilities.append(last["lp_infeasibility"])
            if "lp_status" in last and "lp_gap" not in last:
                meter.not_optimal.append(last["lp_status"])
            return out

        highs_solver.HighsSolver.solve = solve

    def count(self, key: str, n: int) -> None:
        if n:
            self.iterations[key] = self.iterations.get(key, 0) + n

    def reset(self) -> None:
        self.seconds, self.solves, self.approximate = 0.0, 0, 0
        self.iterations: dict[str, int] = {}
        self.pdlp_gaps: list[float] = []
        self.pdlp_infeasibilities: list[float] = []
        self.not_optimal: list[str] = []
        #: per solve: seconds, rows and weight columns of the LP, iterations, approximate
        self.per_solve: list[list] = []


def main(argv) -> int:
    args, mach = C.begin(argv, parse_args)
    import numpy as np

    from tagger import Tagger

    train, test = load_data(args.corpus, args.sentences)
    params = {"C": args.C, "engine": args.engine, "max_seconds": args.max_seconds}
    meter = SolveMeter()
    # numba's kernels compiled (or loaded from its cache) outside the timed fit
    t0 = time.perf_counter()
    Tagger(
        features="hmm", learner="lp-simplex", params=dict(params, max_seconds=5.0), select=False
    ).fit(train[:20])
    warmup = time.perf_counter() - t0
    meter.reset()
    load_before = C.load_average()
    tagger = Tagger(features="hmm", learner="lp-simplex", params=params, select=False, seed=0)
    t0 = time.perf_counter()
    tagger.fit(train)
    seconds = time.perf_counter() - t0
    load_after = C.load_average()
    trace = tagger.trace_
    w = tagger.weights_
    last = trace[-1] if trace else {}
    accuracy = tagger.evaluate(test)["accuracy"]
    objective = last.get("objective")
    lp_objective = last.get("lp_objective")
    converged = bool(last.get("converged"))
    stopped = not converged and args.max_seconds > 0 and last.get("time", 0) >= args.max_seconds
    result = {
        "corpus": args.corpus,
        "sentences": len(train),
        "tokens": sum(len(s) for s in train),
        "engine": args.engine,
        "params": params,
        "seconds": round(seconds, 2),
        "learner_seconds": tagger.info_.get("train_seconds"),
        "featurize_seconds": tagger.info_.get("featurize_seconds"),
        "start_seconds": trace[0].get("start_time") if trace else None,
        "lp_seconds": round(meter.seconds, 2),
        "lp_solves": meter.solves,
        "rounds": len(trace),
        "lp_iterations": meter.iterations,
        "objective": objective,
        "lp_objective": lp_objective,
        "relative_gap": (
            (objective - lp_objective) / max(1.0, abs(objective))
            if objective is not None and lp_objective is not None
            else None
        ),
        "certified": converged,
        "stopped_by_max_seconds": stopped,
        "last_step": last.get("step"),
        "pdlp_rounds": meter.approximate,
        "pdlp_last_gap": meter.pdlp_gaps[-1] if meter.pdlp_gaps else None,
        "pdlp_max_gap": max(meter.pdlp_gaps) if meter.pdlp_gaps else None,
        "pdlp_max_infeasibility": (
            max(meter.pdlp_infeasibilities) if meter.pdlp_infeasibilities else None
        ),
        "lp_not_optimal": meter.not_optimal,
        "per_solve": {
            "columns": ["seconds", "rows", "weight_columns", "iterations", "approximate"],
            "rows": meter.per_solve,
        },
        "nonzero": tagger.n_nonzero_,
        # non-zero weights below 1e-9 in magnitude: rounding left by an LP solve, not features
        "nonzero_below_1e-9": int(np.count_nonzero((w != 0) & (np.abs(w) < 1e-9))),
        "test_sentences": len(test),
        "test_accuracy": accuracy,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "warmup_seconds": round(warmup, 2),
        "load_average_before": load_before,
        "load_average_after": load_after,
        "last_row": {k: v for k, v in last.items() if isinstance(v, (int, float, str, bool))},
    }
    row = [
        args.corpus,
        f"{len(train):,}",
        args.engine,
        f"{seconds:.1f}",
        f"{meter.seconds:.1f}",
        str(len(trace)),
        f"{objective:.6f}" if objective is not None else "-",
        ("yes" if converged else "stopped" if stopped else "no"),
        C.fmt_int(tagger.n_nonzero_),
        f"{100 * accuracy:.2f}",
        f"{result['peak_rss_mb']:.0f}",
    ]
    print(
        C.markdown_table(
            [
                "corpus",
                "sentences",
                "engine",
                "seconds",
                "LP seconds",
                "rounds",
                "objective",
                "certified",
                "non-zero",
                "test acc",
                "peak RSS MB",
            ],
            [row],
        )
    )
    print(
        f"LP solves {meter.solves}, iterations {meter.iterations}; relative gap objective - "
        f"last LP {result['relative_gap']}; PDLP rounds {meter.approximate} (last gap "
        f"{result['pdlp_last_gap']}, largest infeasibility {result['pdlp_max_infeasibility']}); "
        f"load average before {' '.join(map(str, load_before))}, after "
        f"{' '.join(map(str, load_after))}"
    )
    out = args.json or C.OUT / f"lp-engines-{args.corpus}-{args.sentences}-{args.engine}.json"
    C.write_json(
        out,
        {"machine": mach, "command": C.command_line(), "trace": trace, "result": result},
    )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
