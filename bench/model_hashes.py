"""Train the README's models from the command line and print the sha256 of each model file,
its test score and its non-zero weights: a refactoring that changes nothing a user sees leaves
every line identical.

    python bench/model_hashes.py [--repo PATH] [--out DIR] [--only chunk,pos,citation,semisup]

``--repo`` runs the ``tagger`` command of another checkout (``python -c "import cli"`` from
that directory), so two commits are compared on the same data in one run. The models:

- ``chunk``: CoNLL-2000 chunking, ``--set radius=8000 --set max_nonzero=40000`` (README);
- ``pos``: CoNLL-2000's POS column, ``--features pos --set radius=6000`` (README);
- ``citation``: the CPF split, ``--features citation --set radius=800`` (README);
- ``semisup``: ``ssvm-annealing`` on 20 labeled citations (draw 0 of the citation study) with
  the 1,000 unlabeled ones and ``constraints/citations.toml``, the study's settings for 20
  labeled citations with one run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _common as C  # noqa: E402

SEMISUP = {
    "C": 1.0,
    "steps": 3,
    "rounds": 1,
    "epochs": 15,
    "start_epochs": 200,
    "max_working_set": 64,
    "cu_end": 1.0,
}


#: the README's figures were measured with this learner (the default until m3n-owlqn)
SUBGRADIENT = ["--learner", "m3n-subgradient"]


def _blocks(path: Path) -> list[list[str]]:
    out, cur = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            cur.append(line)
        elif cur:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def _write(path: Path, blocks: list[list[str]], keep: int) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for b in blocks:
            for line in b:
                f.write("\t".join(line.split("\t")[:keep]) + "\n")
            f.write("\n")
    return path


def _citation_files(corpora: Path, out: Path) -> dict[str, Path]:
    """20 labeled citations (draw 0), dev, the unlabeled citations (tokens only)."""
    cpf = corpora / "citations" / "cpf_zheng_chang_2016"
    train = _blocks(cpf / "citation_train.300.1.txt")
    idx = sorted(np.random.default_rng(0).choice(len(train), 20, replace=False))
    return {
        "train20": _write(out / "train20.tsv", [train[i] for i in idx], 2),
        "dev": _write(out / "dev.tsv", _blocks(cpf / "citation_dev.txt"), 2),
        "test": _write(out / "test.tsv", _blocks(cpf / "citation_test.txt"), 2),
        "unlabeled": _write(out / "unlabeled.tsv", _blocks(cpf / "citation_unlabeled.txt"), 1),
    }


def _jobs(corpora: Path, files: dict[str, Path]) -> dict[str, tuple[list, list]]:
    conll = corpora / "conll2000"
    cpf = corpora / "citations" / "cpf_zheng_chang_2016"
    semisup = [a for k, v in SEMISUP.items() for a in ("--set", f"{k}={v}")]
    return {
        "chunk": (
            [
                "train",
                conll / "train.txt",
                *SUBGRADIENT,
                "--set",
                "radius=8000",
                "--set",
                "max_nonzero=40000",
            ],
            ["eval", conll / "test.txt"],
        ),
        "pos": (
            [
                "train",
                conll / "train.txt",
                "--label-column",
                "1",
                "--features",
                "pos",
                *SUBGRADIENT,
                "--set",
                "radius=6000",
            ],
            ["eval", conll / "test.txt", "--label-column", "1"],
        ),
        "citation": (
            [
                "train",
                cpf / "citation_train.300.1.txt",
                "--dev",
                cpf / "citation_dev.txt",
                "--features",
                "citation",
                *SUBGRADIENT,
                "--set",
                "radius=800",
            ],
            ["eval", cpf / "citation_test.txt"],
        ),
        "semisup": (
            [
                "train",
                files["train20"],
                "--unlabeled",
                files["unlabeled"],
                "--constraints",
                "constraints/citations.toml",
                "--dev",
                files["dev"],
                "--features",
                "citation",
                "--learner",
                "ssvm-annealing",
                *semisup,
            ],
            ["eval", files["test"]],
        ),
    }


def _tagger(repo: Path, args: list) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-c",
        "import sys; sys.path.insert(0, '.'); import cli; cli.main()",
        *map(str, args),
    ]
    env = dict(os.environ, PYTHONPATH=str(repo))
    return subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, check=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, default=HERE.parent)
    ap.add_argument("--out", type=Path, default=HERE / "out" / "model_hashes")
    ap.add_argument("--only", default="chunk,pos,citation,semisup")
    args = ap.parse_args(argv)
    repo = args.repo.resolve()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    corpora = C.corpora()
    files = _citation_files(corpora, out)
    commit = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(f"# {repo} at {commit}; load average {C.load_average()}")
    rows = {}
    for name, (train, evaluate) in _jobs(corpora, files).items():
        if name not in args.only.split(","):
            continue
        model = out / f"{name}.tgm"
        t0 = time.perf_counter()
        _tagger(repo, [*train, "--seed", "0", "-q", "-o", model])
        seconds = time.perf_counter() - t0
        scores = json.loads(_tagger(repo, [evaluate[0], model, *evaluate[1:], "--json"]).stdout)
        info = json.loads(_tagger(repo, ["inspect", model, "--json"]).stdout)
        digest = hashlib.sha256(model.read_bytes()).hexdigest()
        headline = scores.get("f1", scores.get("accuracy"))
        rows[name] = {
            "sha256": digest,
            "score": headline,
            "n_nonzero": info["n_nonzero"],
            "seconds": round(seconds, 1),
        }
        print(
            f"{name:9s} {digest}  score {headline:.4f}  non-zero {info['n_nonzero']:>7,}  "
            f"{seconds:6.1f} s",
            flush=True,
        )
    (out / "hashes.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
