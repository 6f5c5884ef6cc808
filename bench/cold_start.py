"""The README's second command on a fresh install: the first ``tagger train`` on the shipped
sample, with numba's cache empty, so that every kernel the run needs is compiled.

    python bench/cold_start.py [--rounds 3] [--before CHECKOUT] [--json PATH]

Each round runs ``tagger train corpora/sample_chunk.txt --dev corpora/sample_chunk_dev.txt -o
MODEL -q`` in a fresh process with ``NUMBA_CACHE_DIR`` pointing to a new empty folder (what a
fresh install has: numba keys its cache on the source file's path and time stamp, so a checkout
never shares another's), then once more on the cache that run filled (the same command on a
machine where it ran before). ``--before CHECKOUT`` runs another checkout of the project (e.g.
``git worktree add ../before COMMIT``) the same way in each round, just before this one, so
that the pair shares the machine's load. Every run must train the same weights: the SHA-256
of ``Tagger.weights_`` is compared (a model file also keeps its training files' absolute paths,
so two checkouts' files differ; the files' own SHA-256 are in the JSON).

Columns: wall and CPU seconds (user and system, the numba threads' included) and peak RSS of
the command's process (``_common.measured``), the load average just before it, and the weights'
SHA-256 (first 12 hex digits). Results go to ``bench/out/cold_start.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

COMMAND = ["train", "corpora/sample_chunk.txt", "--dev", "corpora/sample_chunk_dev.txt"]


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3, help="cold runs per checkout (default 3)")
    p.add_argument("--before", type=Path, help="another checkout, run just before this one")
    p.add_argument("--json", type=Path, default=C.OUT / "cold_start.json")
    return p.parse_args(argv)


def commit_of(checkout: Path) -> str:
    """The checkout's commit, or its folder's name when it is not a git checkout (an export
    by ``git archive``)."""
    done = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() if done.returncode == 0 else checkout.name


def tagger_train(checkout: Path, cache: Path, model: Path) -> dict:
    """The command in a fresh process of ``checkout``, with numba's cache in ``cache``, timed
    by ``_common.py --spawn`` (as ``_common.measured``, but run in ``checkout``: ``python -c``
    puts its working directory first on the path)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(checkout))
    load = C.load_average()
    cmd = [
        sys.executable,
        "-c",
        "import sys; from tagger.cli import main; sys.argv[0] = 'tagger'; main()",
        *COMMAND,
        "-o",
        str(model),
        "-q",
    ]
    fd, path = tempfile.mkstemp(suffix=".json", prefix="spawn-")
    os.close(fd)
    try:
        code = subprocess.call(
            [sys.executable, str(C.BENCH / "_common.py"), "--spawn", path, "--", *cmd],
            cwd=checkout,
            env=env,
        )
        if code != 0:
            sys.exit(f"tagger train failed in {checkout} (exit {code})")
        result = json.loads(Path(path).read_text())
    finally:
        os.unlink(path)
    result["load_average_before"] = load
    result["model_sha256"] = hashlib.sha256(model.read_bytes()).hexdigest()
    result["weights_sha256"] = weights_digest(checkout, model)
    return result


WEIGHTS = """
import hashlib, sys
from tagger import Tagger
print(hashlib.sha256(Tagger.load(sys.argv[1]).weights_.tobytes()).hexdigest())
"""


def weights_digest(checkout: Path, model: Path) -> str:
    """SHA-256 of the model's weights, read by ``checkout``'s own code (the model files of two
    checkouts differ in the training paths they keep, not in their weights)."""
    done = subprocess.run(
        [sys.executable, "-c", WEIGHTS, str(model)],
        cwd=checkout,
        env=dict(os.environ, PYTHONPATH=str(checkout)),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"could not read {model} in {checkout}: {done.stderr.strip()}")
    return done.stdout.strip()


def runs_table(runs: list[dict]) -> str:
    """The runs as a markdown table (what the script prints, and bench/tables.py)."""
    rows = [
        [
            run["round"],
            run["checkout"],
            f"{run['cold']['wall_seconds']:.1f}",
            f"{run['cold']['cpu_seconds']:.1f}",
            f"{run['warm']['wall_seconds']:.1f}",
            f"{run['cold']['peak_rss_mb']:.0f}",
            " ".join(map(str, run["cold"]["load_average_before"])),
            run["cold"]["weights_sha256"][:12],
        ]
        for run in runs
    ]
    header = [
        "round",
        "code",
        "cold wall s",
        "cold CPU s",
        "warm wall s",
        "peak MB",
        "load before",
        "weights sha256",
    ]
    return C.markdown_table(header, rows)


def main(argv: list[str]) -> int:
    args, mach = C.begin(argv, parse_args)
    checkouts = [("this checkout", C.REPO)]
    if args.before is not None:
        before = args.before.resolve()
        if not (before / "tagger" / "jit.py").exists():
            sys.exit(f"{before} is not a checkout of this project (no tagger/jit.py)")
        checkouts.insert(0, (f"{commit_of(before)} (before)", before))
    runs = []
    with tempfile.TemporaryDirectory(prefix="cold-start-") as work:
        for r in range(1, args.rounds + 1):
            for name, checkout in checkouts:
                cache = Path(tempfile.mkdtemp(dir=work, prefix="numba-cache-"))
                model = Path(work) / f"model-{r}-{len(runs)}.tgm"
                cold = tagger_train(checkout, cache, model)
                warm = tagger_train(checkout, cache, model)
                runs.append({"round": r, "checkout": name, "cold": cold, "warm": warm})
                print(
                    f"round {r}, {name}: cold {cold['wall_seconds']:.1f} s wall, "
                    f"{cold['cpu_seconds']:.1f} s CPU (load {cold['load_average_before'][0]}); "
                    f"warm {warm['wall_seconds']:.1f} s wall",
                    flush=True,
                )
    digests = {run[k]["weights_sha256"] for run in runs for k in ("cold", "warm")}
    print()
    print(runs_table(runs))
    print()
    same = len(digests) == 1
    print("every run trained the same weights" if same else f"weights differ: {sorted(digests)}")
    print(f"load average at the end: {' '.join(map(str, C.load_average()))}")
    C.write_json(
        args.json,
        {
            "command": C.command_line(),
            "machine": mach,
            "tagger_command": ["tagger", *COMMAND, "-o", "MODEL", "-q"],
            "runs": runs,
            "same_weights": same,
            "load_average_at_end": C.load_average(),
        },
    )
    print(f"wrote {args.json}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
