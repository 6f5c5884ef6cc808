"""The `ours` row of bench/chunking.py for several checkouts of the project, in one run.

    python bench/compare_checkouts.py --repo BEFORE --repo AFTER [--rounds 2] [--quick]
                                      [--json PATH]

Each checkout runs its own ``bench/chunking.py --systems ours`` with its own package first on
``PYTHONPATH`` (training workers and the ``tagger tag`` subprocess included), the checkouts
taking turns for ``--rounds`` rounds so that a change in the machine's load falls on both. The
table gives each checkout's median over the rounds of training seconds, end-to-end and
decode-only tagging speed, and the model's F1 and non-zero weights, with the load average
before each run: a refactoring should leave every column within noise. The rounds, the medians,
each checkout's commit, the machine and the loads also go to ``--json`` (default
``bench/out/compare_checkouts.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _common as C  # noqa: E402

COLUMNS = [
    ("train_seconds", "train s", "{:.1f}"),
    ("e2e_tokens_per_s", "tag tok/s e2e", "{:,.0f}"),
    ("decode_tokens_per_s", "decode tok/s", "{:,.0f}"),
    ("f1", "F1", "{:.4f}"),
    ("n_nonzero", "non-zero", "{:,.0f}"),
]


def run(repo: Path, out: Path, quick: bool) -> dict:
    env = dict(os.environ, PYTHONPATH=str(repo))
    cmd = [
        sys.executable,
        str(repo / "bench" / "chunking.py"),
        "--systems",
        "ours",
        "--json",
        str(out),
    ] + (["--quick"] if quick else [])
    subprocess.run(cmd, cwd=repo, env=env, check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())["systems"]["ours"]


def commit_of(repo: Path) -> str:
    return (
        subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        or "?"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--repo",
        action="append",
        type=Path,
        required=True,
        help="a checkout of the project (repeat for each)",
    )
    ap.add_argument("--rounds", type=int, default=2, help="turns each checkout takes")
    ap.add_argument("--quick", action="store_true", help="chunking.py --quick")
    ap.add_argument(
        "--json",
        type=Path,
        default=HERE / "out" / "compare_checkouts.json",
        help="where the results go",
    )
    args = ap.parse_args(argv)
    repos = [r.resolve() for r in args.repo]
    results: dict[Path, list[dict]] = {r: [] for r in repos}
    loads: dict[Path, list] = {r: [] for r in repos}
    with tempfile.TemporaryDirectory(prefix="bench-checkouts-") as tmp:
        for k in range(args.rounds):
            for i, repo in enumerate(repos):
                loads[repo].append(C.load_average())
                print(
                    f"round {k + 1}: {repo} at {commit_of(repo)} (load average {loads[repo][-1]})",
                    file=sys.stderr,
                )
                results[repo].append(run(repo, Path(tmp) / f"{k}-{i}.json", args.quick))
    head = ["checkout"] + [name for _, name, _ in COLUMNS] + ["load averages before runs"]
    rows = []
    for repo in repos:
        cells = [f"{repo.name} ({commit_of(repo)})"]
        for key, _, fmt in COLUMNS:
            cells.append(fmt.format(statistics.median(r[key] for r in results[repo])))
        cells.append("; ".join(" ".join(map(str, la)) for la in loads[repo]))
        rows.append(cells)
    print(
        f"CoNLL-2000 chunking, `ours` row of bench/chunking.py{' --quick' if args.quick else ''}"
        f"; median of {args.rounds} alternating rounds per checkout"
    )
    print(C.markdown_table(head, rows))
    end_load = C.load_average()
    print(f"load average at end: {' '.join(map(str, end_load))}")
    C.write_json(
        args.json,
        {
            "machine": C.machine(),
            "command": C.command_line(),
            "quick": args.quick,
            "rounds": args.rounds,
            "load_average_at_end": end_load,
            "checkouts": [
                {
                    "repo": str(repo),
                    "commit": commit_of(repo),
                    "load_averages_before_runs": loads[repo],
                    "runs": results[repo],
                    "median": {
                        key: statistics.median(r[key] for r in results[repo])
                        for key, _, _ in COLUMNS
                    },
                }
                for repo in repos
            ],
        },
    )
    print(f"results: {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
