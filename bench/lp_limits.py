"""How far the LP learners scale on CoNLL-2000 chunking: growing slices of train.txt.

    python bench/lp_limits.py [--sizes 250,500,1000,2000,4000,8936]
                              [--learners m3n-cutting-plane,lp-simplex,lp-extragradient]
                              [--max-seconds 600] [--set NAME:key=value ...] [--quick] [--json PATH]

Each (learner, size) trains with the ``chunk`` preset on the first ``size`` sentences of
train.txt in its own process (so its peak RSS is its own) and is evaluated on test.txt
(conlleval chunk F1). Every run is bounded by the learners' ``max_seconds`` (a run past it
stops after the current round and is reported as not converged); a learner is not tried on
larger slices once a run did not converge within the bound. Columns: training seconds, peak
RSS of the training process, rounds, working-set rows (constraints) and LP columns at the end,
whether the column generation converged, non-zero weights, test F1.

``--quick``: sizes 100, 250, 500 with a 60 s bound. Results go to ``bench/out/lp_limits.json``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as Cm  # noqa: E402

LEARNERS = ("m3n-cutting-plane", "lp-simplex", "lp-extragradient")
#: settings of the runs (C chosen so that one sentence's hinge weighs like one unit of ||w||_1)
PARAMS = {
    "m3n-cutting-plane": {"C": 1.0},
    "lp-simplex": {"C": 1.0},
    "lp-extragradient": {"C": 1.0, "gap_tol": 1e-4, "early_gap_tol": 1e-2, "max_iter": 20000},
}


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="250,500,1000,2000,4000,8936")
    ap.add_argument("--learners", default=",".join(LEARNERS))
    ap.add_argument("--max-seconds", type=float, default=600.0)
    ap.add_argument("--set", action="append", default=[], metavar="NAME:key=value")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", type=Path, default=None)
    return ap.parse_args(argv)


def main(argv) -> int:
    args, mach = Cm.begin(argv, parse_args)
    from tagger.api import Tagger
    from tagger.learners import get_learner

    root = Cm.corpora()
    train_path = root / "conll2000" / "train.txt"
    test = Cm.load({"path": str(root / "conll2000" / "test.txt")})
    sizes = [100, 250, 500] if args.quick else [int(s) for s in args.sizes.split(",")]
    bound = 60.0 if args.quick else args.max_seconds
    names = [n for n in args.learners.split(",") if n]
    params = {n: dict(PARAMS.get(n, {})) for n in names}
    for item in args.set:
        name, kv = item.split(":", 1)
        params[name].update(get_learner(name).parse_settings([kv]))
    results = []
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            for size in sizes:
                job = {
                    "system": "ours",
                    "features": "chunk",
                    "learner": name,
                    "params": {**params[name], "max_seconds": bound},
                    "model": str(Path(tmp) / f"{name}-{size}.tgm"),
                    "train": {"path": str(train_path), "limit": size},
                }
                r = Cm.run_worker(__file__, job, Path(tmp), f"{name}-{size}")
                final = r.get("final") or {}
                f1 = Tagger.load(job["model"]).evaluate(test)["f1"]
                entry = {
                    "learner": name,
                    "size": size,
                    "n_tokens": r["n_train_tokens"],
                    "seconds": r["train_seconds"],
                    "peak_rss_mb": r["peak_rss_mb"],
                    "rounds": final.get("epoch"),
                    "rows": final.get("rows"),
                    "columns": final.get("columns"),
                    "converged": final.get("converged"),
                    "nonzero": r["n_nonzero"],
                    "f1": f1,
                    "params": job["params"],
                    "final": final,
                }
                results.append(entry)
                rows.append(
                    [
                        name,
                        f"{size:,}",
                        f"{r['n_train_tokens']:,}",
                        f"{r['train_seconds']:.1f}",
                        f"{r['peak_rss_mb']:.0f}",
                        str(final.get("epoch")),
                        Cm.fmt_int(final.get("rows")),
                        Cm.fmt_int(final.get("columns")),
                        "yes" if final.get("converged") else "no",
                        Cm.fmt_int(r["n_nonzero"]),
                        f"{100 * f1:.2f}",
                    ]
                )
                print(" | ".join(rows[-1]), flush=True)
                if not final.get("converged"):
                    break
    print()
    print(
        Cm.markdown_table(
            [
                "learner",
                "sentences",
                "tokens",
                "train s",
                "peak RSS MB",
                "rounds",
                "rows",
                "LP columns",
                "converged",
                "non-zero",
                "test F1",
            ],
            rows,
        )
    )
    out = args.json or Cm.OUT / ("lp_limits-quick.json" if args.quick else "lp_limits.json")
    Cm.write_json(
        out,
        {"machine": mach, "command": Cm.command_line(), "bound_seconds": bound, "results": results},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
