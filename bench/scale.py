"""Past one process: sharded tagging on a Dask LocalCluster against `tagger tag --jobs`, the
memory of its driver and workers, one-sentence start-up, and semi-supervised training time as
the unlabeled text grows.

    python bench/scale.py [--tables shards,startup,annealing] [--repeat 50] [--shards 20]
                          [--runs 3] [--unlabeled 1000 10000] [--before CHECKOUT]
                          [--model CHUNKER] [--json PATH]

shards     CoNLL-2000's test.txt repeated ``--repeat`` times and cut into ``--shards`` files;
           `tagger tag MODEL 'shards/*' --output-dir` on a 2-worker LocalCluster against
           `tagger tag --jobs 1` and `--jobs 2` on the whole file (median wall of ``--runs``),
           the outputs compared line for line, and peak memory: the largest process (wait4)
           and the process tree (sampled from /proc), at 1/5 and all of the repeats, so memory
           that does not grow with the corpus shows as equal figures.
startup    one sentence through `tagger tag` (median of 10 runs) against a python-crfsuite
           script doing the same (bench/crfsuite_tag.py).
annealing  `tagger train --learner ssvm-annealing` with 20 labeled citations (draw 0 of
           bench/citations_semisup.py, its settings for 20 with one restart, seed 0) and
           ``--unlabeled`` unlabeled ones (the 1,000 unlabeled citations repeated in shuffled
           order past 1,000: said in the table): wall seconds, peak memory and test accuracy.
           Also this checkout with the unlabeled sentences decoded on a 2-worker LocalCluster
           (``--set scheduler=``: the same result, the time of the round trips).
           ``--before CHECKOUT`` times that checkout too, and this one on its constraint file
           (the same problem for both: the speed-up).
memory     the annealing run with the largest ``--unlabeled`` count inside a memory cgroup
           limited to ``--memory-limit`` MB (less than the run needs): in memory, and with
           ``--set scratch_dir=`` (the unlabeled arrays memory-mapped on disk). Whether each
           finishes or is killed by the kernel's out-of-memory killer, its wall seconds, the
           cgroup's peak usage and the test accuracy. Needs a writable cgroup v1 memory
           controller (/sys/fs/cgroup/memory, as root); elsewhere the table says so.

Results go to ``bench/out/scale.json`` (``--json PATH``), the tables with them.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ecosystem import run_median, run_sampled, train_crfsuite  # noqa: E402

import _common as C  # noqa: E402

TAGGER = [sys.executable, "-c", "import cli; cli.main()"]


SHARDS_HEADER = [
    "test.txt",
    "command",
    "tokens",
    "wall s",
    "vs --jobs 1",
    "tokens/s",
    "largest process MB",
    "process tree MB",
    "output identical",
]
ANNEALING_HEADER = [
    "unlabeled citations (20 labeled)",
    "code",
    "train s",
    "unlabeled per s",
    "peak MB",
    "test accuracy",
]
MEMORY_HEADER = [
    "unlabeled citations (20 labeled)",
    "arrays",
    "cgroup limit MB",
    "outcome",
    "wall s",
    "cgroup peak MB",
    "test accuracy",
]
#: what each table is, for bench/tables.py
TITLES = {
    "shards": "Sharded tagging against tagger tag --jobs (CoNLL-2000 test.txt repeated)",
    "startup": "One sentence through tagger tag against python-crfsuite",
    "annealing": "ssvm-annealing as the unlabeled text grows (20 labeled citations)",
    "memory": "The largest annealing run in a memory cgroup",
}


def tables_text(data: dict) -> str:
    """The tables of a run's JSON, each under its title (bench/tables.py)."""
    return "\n\n".join(
        f"{TITLES.get(name, name)}:\n\n" + C.markdown_table(t["header"], t["rows"])
        for name, t in data["tables"].items()
    )


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tables", default="shards,startup,annealing,memory")
    p.add_argument("--repeat", type=int, default=50)
    p.add_argument("--shards", type=int, default=20)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--unlabeled", type=int, nargs="+", default=[1000, 10000])
    p.add_argument(
        "--json", type=Path, default=C.BENCH / "out" / "scale.json", help="where the results go"
    )
    p.add_argument(
        "--model",
        type=Path,
        default=None,
        help="a chunker trained on CoNLL-2000 already (default: train one with "
        "tagger train's defaults)",
    )
    p.add_argument(
        "--before",
        type=Path,
        default=None,
        help="an earlier checkout to time the annealing runs against",
    )
    p.add_argument("--memory-limit", type=int, default=450, help="MB of the memory table's cgroup")
    return p.parse_args(argv)


def write_shards(test: Path, repeat: int, n_shards: int, work: Path) -> tuple[Path, Path]:
    """The repeated test file whole, and cut into ``n_shards`` files of whole sentences."""
    blocks = test.read_text().strip().split("\n\n") * repeat
    whole = work / f"test_x{repeat}.txt"
    whole.write_text("\n\n".join(blocks) + "\n")
    d = work / f"shards_x{repeat}"
    d.mkdir()
    per = -(-len(blocks) // n_shards)
    for i in range(n_shards):
        part = blocks[i * per : (i + 1) * per]
        if part:
            (d / f"part{i:03d}.txt").write_text("\n\n".join(part) + "\n")
    return whole, d


def shards_table(model: str, test: Path, work: Path, args) -> tuple[list, dict]:
    rows, raw = [], {}
    n1 = sum(1 for line in test.read_text().splitlines() if line.strip())
    for rep in sorted({max(1, args.repeat // 5), args.repeat}):
        whole, shard_dir = write_shards(test, rep, args.shards, work)
        n_tok = n1 * rep
        one = run_median(
            [*TAGGER, "tag", model, str(whole), "-o", str(work / "one.txt")], args.runs
        )
        two = run_median(
            [*TAGGER, "tag", model, str(whole), "-j", "2", "-o", str(work / "two.txt")], args.runs
        )
        out = work / f"dask_x{rep}"
        sharded = [*TAGGER, "tag", model, str(shard_dir / "*.txt"), "--output-dir", str(out)]
        dk = _median_fresh(sharded + ["-j", "2"], out, args.runs)
        # the same on a 2-worker LocalCluster that already runs (its workers have tagged
        # once: numba and the model loaded), as a user's cluster would
        warm, worker_mb = _on_running_cluster(sharded, out, args.runs)
        # each output shard ends with its last sentence's blank line, as the whole file does
        joined = "".join(p.read_text() for p in sorted(out.iterdir()))
        same = joined == (work / "one.txt").read_text() == (work / "two.txt").read_text()
        raw[f"x{rep}"] = {
            "jobs1": one,
            "jobs2": two,
            "dask": dk,
            "dask_running": warm,
            "running_worker_peak_mb": worker_mb,
            "identical": same,
        }
        for name, m in (
            ("--jobs 1", one),
            ("--jobs 2", two),
            (f"--output-dir, {args.shards} shards, 2-worker LocalCluster", dk),
            (
                "--output-dir --scheduler, a running 2-worker LocalCluster "
                f"(workers' peak {'/'.join(f'{v:.0f}' for v in worker_mb)} MB)",
                warm,
            ),
        ):
            rows.append(
                [
                    f"x{rep}",
                    name,
                    C.fmt_int(n_tok),
                    f"{m['wall']:.2f}",
                    f"{one['wall'] / m['wall']:.2f}x",
                    C.fmt_int(n_tok / m["wall"]),
                    f"{m['max_process_mb']:.0f}",
                    f"{m['tree_mb']:.0f}",
                    "yes" if same else "NO",
                ]
            )
    return rows, raw


def _median_fresh(cmd: list[str], out: Path, runs: int) -> dict:
    """The median wall of ``runs`` runs of a sharded command, each into an empty ``out``."""
    measured = []
    for _ in range(max(1, runs)):
        subprocess.run(["rm", "-rf", str(out)], check=True)
        measured.append(run_sampled(cmd))
    measured.sort(key=lambda m: m["wall"])
    median = dict(measured[len(measured) // 2])
    median["tree_mb"] = max(m["tree_mb"] for m in measured)
    return median


def _on_running_cluster(cmd: list[str], out: Path, runs: int) -> tuple[dict, list[float]]:
    """``cmd --scheduler`` against a 2-worker LocalCluster started here and warmed by one
    untimed run; the median of ``runs`` timed runs and each worker's peak RSS (MB)."""
    from dask.distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        with_scheduler = cmd + ["--scheduler", cluster.scheduler_address]
        _median_fresh(with_scheduler, out, 1)
        median = _median_fresh(with_scheduler, out, runs)

        def peak_mb() -> float:
            import resource

            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

        return median, sorted(client.run(peak_mb).values())


def startup_table(model: str, crf_model: str, test: Path, work: Path) -> tuple[list, dict]:
    first = test.read_text().strip().split("\n\n")[0] + "\n"
    one = work / "one_sentence.txt"
    one.write_text(first)
    ours = [
        run_sampled([*TAGGER, "tag", model, str(one), "-o", str(work / "o1.txt")])["wall"]
        for _ in range(10)
    ]
    peer = [
        run_sampled(
            [
                sys.executable,
                str(C.BENCH / "crfsuite_tag.py"),
                crf_model,
                str(one),
                str(work / "o2.txt"),
            ]
        )["wall"]
        for _ in range(10)
    ]
    raw = {"tagger": ours, "crfsuite": peer}
    return [
        ["tagger tag, one sentence", f"{statistics.median(ours):.3f}"],
        ["python-crfsuite script, one sentence", f"{statistics.median(peer):.3f}"],
    ], raw


def _blocks(path: str) -> list[list[str]]:
    return [b.splitlines() for b in Path(path).read_text().strip().split("\n\n") if b.strip()]


def _write_blocks(path: Path, blocks: list[list[str]], keep: int) -> Path:
    path.write_text(
        "".join(
            "".join("\t".join(line.split("\t")[:keep]) + "\n" for line in b) + "\n" for b in blocks
        )
    )
    return path


def _cli(repo: Path) -> list[str]:
    """The ``tagger`` command of the checkout ``repo`` (its package first on the path)."""
    return [
        sys.executable,
        "-c",
        f"import sys; sys.path.insert(0, {str(repo)!r}); import cli; cli.main()",
    ]


def annealing_table(counts: list[int], before: Path | None, work: Path) -> tuple[list, dict]:
    """``tagger train --learner ssvm-annealing`` as bench/citations_semisup.py runs it (20
    labeled citations of draw 0, its settings for 20 with one restart, seed 0), through the
    command line, as the unlabeled text grows: this checkout with its constraint file and,
    with ``before``, that checkout and this one on the earlier checkout's constraint file (the
    same problem for both: the speed-up). Each configuration is first run once untimed on
    100 unlabeled citations, so that no timed run compiles kernels."""
    files, unl, sets = _annealing_inputs(work)
    from dask.distributed import LocalCluster

    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    ours = C.REPO / "constraints" / "citations.toml"
    configs = [
        ("this checkout", C.REPO, ours, []),
        (
            "this checkout, unlabeled decoded on a 2-worker LocalCluster",
            C.REPO,
            ours,
            ["--set", f"scheduler={cluster.scheduler_address}"],
        ),
    ]
    if before is not None:
        commit = subprocess.run(
            ["git", "-C", str(before), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        old_file = before / "constraints" / "citations.toml"
        configs = [
            (f"{commit} (before)", before, old_file, []),
            (f"this checkout, {commit}'s constraint file", C.REPO, old_file, []),
        ] + configs
    with cluster:
        return _annealing_runs(counts, configs, files, unl, sets, work)


def _annealing_inputs(work: Path) -> tuple[dict, list, list[str]]:
    """The labeled files (20 citations of draw 0, dev, test), the unlabeled citations and
    the study's settings for 20 labeled with one restart, as ``--set`` arguments."""
    import numpy as np
    from citations_semisup import SEMISUP, SEMISUP_BY_SIZE, _data

    data = _data(C.corpora())
    train = _blocks(data["train"])
    drawn = sorted(np.random.default_rng(0).choice(len(train), 20, replace=False))
    files = {
        "train": _write_blocks(work / "train20.tsv", [train[i] for i in drawn], 2),
        "dev": _write_blocks(work / "dev.tsv", _blocks(data["dev"]), 2),
        "test": _write_blocks(work / "test.tsv", _blocks(data["test"]), 2),
    }
    params = {**SEMISUP, **SEMISUP_BY_SIZE[20], "restarts": 1}
    sets = [a for k, v in params.items() for a in ("--set", f"{k}={v}")]
    return files, _blocks(data["unlabeled"]), sets


def _unlabeled_file(unl: list, n: int, work: Path) -> Path:
    """n unlabeled citations: the pool repeated in a shuffled order (seed n) past its size."""
    rng = random.Random(n)
    pool = []
    while len(pool) < n:
        block = list(unl)
        rng.shuffle(block)
        pool += block
    return _write_blocks(work / f"unlabeled{n}.tsv", pool[:n], 1)


def _train_cmd(
    repo: Path,
    files: dict,
    unlabeled: Path,
    constraints: Path,
    sets: list,
    extra: list,
    model: Path,
) -> list[str]:
    return [
        *_cli(repo),
        "train",
        str(files["train"]),
        "--unlabeled",
        str(unlabeled),
        "--constraints",
        str(constraints),
        "--dev",
        str(files["dev"]),
        "--features",
        "citation",
        "--learner",
        "ssvm-annealing",
        *sets,
        *extra,
        "--seed",
        "0",
        "-q",
        "-o",
        str(model),
    ]


def _test_accuracy(repo: Path, model: Path, test: Path) -> float:
    scores = subprocess.run(
        [*_cli(repo), "eval", str(model), str(test), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return 100 * json.loads(scores.stdout)["accuracy"]


def _annealing_runs(counts, configs, files, unl, sets, work) -> tuple[list, dict]:
    rows, raw = [], {}
    for n in [100] + list(counts):
        unlabeled = _unlabeled_file(unl, n, work)
        for name, repo, constraints, extra in configs:
            model = work / "semisup.tgm"
            run = run_sampled(_train_cmd(repo, files, unlabeled, constraints, sets, extra, model))
            if n == 100 and 100 not in counts:
                continue  # the untimed first run
            acc = _test_accuracy(repo, model, files["test"])
            raw.setdefault(n, {})[name] = {**run, "test_accuracy": acc}
            note = "" if n <= len(unl) else f" ({len(unl):,} repeated, shuffled)"
            rows.append(
                [
                    f"{n:,}{note}",
                    name,
                    f"{run['wall']:.1f}",
                    f"{n / run['wall']:.0f}",
                    f"{run['max_process_mb']:.0f}",
                    f"{acc:.2f}",
                ]
            )
    return rows, raw


CGROUP_V1 = Path("/sys/fs/cgroup/memory")


def memory_table(n: int, limit_mb: int, work: Path) -> tuple[list, dict]:
    """The annealing run on ``n`` unlabeled citations in a memory cgroup of ``limit_mb`` MB,
    in memory and with ``scratch_dir`` (see the module docstring)."""
    import os
    import time

    files, unl, sets = _annealing_inputs(work)
    unlabeled = _unlabeled_file(unl, n, work)
    constraints = C.REPO / "constraints" / "citations.toml"
    group = CGROUP_V1 / f"tagger-bench-{os.getpid()}"
    try:
        group.mkdir()
        (group / "memory.limit_in_bytes").write_text(str(limit_mb * 2**20))
    except OSError as exc:
        why = f"not measured: no writable cgroup v1 memory controller here ({exc.strerror})"
        return [[f"{n:,}", "-", f"{limit_mb}", why, "-", "-", "-"]], {"skipped": why}
    scratch = work / "scratch"
    scratch.mkdir(exist_ok=True)
    rows, raw = [], {}
    try:
        for name, extra in (
            ("in memory", []),
            ("--set scratch_dir=DIR (memory-mapped files)", ["--set", f"scratch_dir={scratch}"]),
        ):
            model = work / "limited.tgm"
            model.unlink(missing_ok=True)
            (group / "memory.max_usage_in_bytes").write_text("0")
            cmd = _train_cmd(C.REPO, files, unlabeled, constraints, sets, extra, model)
            # the shell joins the cgroup, then becomes the command (its children stay in it)
            joined = ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh", *cmd]
            t0 = time.perf_counter()
            code = subprocess.run(
                joined, cwd=C.REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            ).returncode
            wall = time.perf_counter() - t0
            peak = int((group / "memory.max_usage_in_bytes").read_text()) / 2**20
            done = code == 0 and model.exists()
            outcome = (
                "finished"
                if done
                else "killed by the out-of-memory killer"
                if code in (-9, 137)
                else f"failed (exit {code})"
            )
            acc = _test_accuracy(C.REPO, model, files["test"]) if done else None
            raw[name] = {
                "exit": code,
                "wall": wall,
                "cgroup_peak_mb": peak,
                "test_accuracy": acc,
                "limit_mb": limit_mb,
            }
            rows.append(
                [
                    f"{n:,}",
                    name,
                    f"{limit_mb}",
                    outcome,
                    f"{wall:.1f}",
                    f"{peak:.0f}",
                    "-" if acc is None else f"{acc:.2f}",
                ]
            )
    finally:
        group.rmdir()
    return rows, raw


def main(argv: list[str]) -> int:
    args, mach = C.begin(argv, parse_args)
    tables = {t.strip() for t in args.tables.split(",")}
    corp = C.corpora() / "conll2000"
    results: dict = {"machine": mach, "command": C.command_line(), "tables": {}}

    def show(name: str, header: list[str], rows: list) -> None:
        """Print a table and keep it in the JSON, which bench/tables.py prints from."""
        results["tables"][name] = {"header": header, "rows": [[str(c) for c in r] for r in rows]}
        print(C.markdown_table(header, rows))
        print(flush=True)

    with tempfile.TemporaryDirectory(prefix="tagger-scale-") as tmp:
        work = Path(tmp)
        model = str(work / "chunker.tgm")
        if args.model is not None:
            model = str(args.model.resolve())
        elif tables & {"shards", "startup"}:
            subprocess.run(
                [*TAGGER, "train", str(corp / "train.txt"), "-o", model, "-q"],
                cwd=C.REPO,
                check=True,
            )
        if "shards" in tables:
            rows, results["shards"] = shards_table(model, corp / "test.txt", work, args)
            show("shards", SHARDS_HEADER, rows)
        if "startup" in tables:
            crf = train_crfsuite(corp / "train.txt", work, 30)
            rows, results["startup"] = startup_table(model, crf, corp / "test.txt", work)
            show("startup", ["one sentence", "median wall s (10 runs)"], rows)
        if "annealing" in tables:
            rows, results["annealing"] = annealing_table(args.unlabeled, args.before, work)
            show("annealing", ANNEALING_HEADER, rows)
        if "memory" in tables:
            rows, results["memory"] = memory_table(max(args.unlabeled), args.memory_limit, work)
            show("memory", MEMORY_HEADER, rows)
    results["load_average_at_end"] = C.load_average()
    print(f"load average at the end: {results['load_average_at_end']}")
    C.write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
