"""`spacy train` against `tagger train` on CoNLL-2000 chunking, and the trained pipeline packaged
with `spacy package`, installed in a fresh virtual environment and loaded there.

    python bench/spacy_train.py [--learner NAME] [--set KEY=VALUE ...] [--no-package]

CoNLL-2000's train.txt and test.txt become DocBins (words, POS tags, the chunks as
``doc.spans["chunks"]``). `tagger train train.txt` (the chunk preset, the learner's automatic
choice of strength on a held-out tenth) is scored by `tagger eval` on test.txt; `spacy train`
trains a one-component pipeline (the chunker with ``preannotated = true``, the same learner and
settings) and scores it on the test DocBin read through the ``sparse_tagger.gold_inputs.v1``
augmenter, so that both read the gold POS tags. Printed: F1 of each, the difference, the
seconds of each command, and whether the two models are the same. Then `spacy package` builds
the pipeline's sdist, which is installed in a new venv (its requirement, this project, from a
wheel built from the checkout; everything else from the package index) and ``spacy.load``
there loads it. Results go to ``bench/out/spacy_train.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

CONFIG = """
[paths]
train = null
dev = null

[system]
seed = 0
gpu_allocator = null

[nlp]
lang = "en"
pipeline = ["chunker"]

[components]

[components.chunker]
factory = "sparse_tagger"
target = "spans"
spans_key = "chunks"
preannotated = true
features = "chunk"
learner = "{learner}"
seed = 0

[components.chunker.params]
{params}

[corpora]

[corpora.train]
@readers = "spacy.Corpus.v1"
path = ${{paths.train}}

[corpora.dev]
@readers = "spacy.Corpus.v1"
path = ${{paths.dev}}
augmenter = {{"@augmenters": "sparse_tagger.gold_inputs.v1", "fields": ["tag"]}}

[training]
seed = ${{system.seed}}
gpu_allocator = ${{system.gpu_allocator}}
max_steps = 1
eval_frequency = 1

[training.optimizer]
@optimizers = "Adam.v1"

[initialize]
"""


def parse_args(argv):
    from tagger.learners import DEFAULT_LEARNER

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--learner", default=DEFAULT_LEARNER)
    p.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--no-package", action="store_true", help="skip spacy package + fresh venv")
    return p.parse_args(argv)


def to_docbin(path: Path, out: Path) -> None:
    import spacy
    from spacy.tokens import Doc, DocBin, Span

    from tagger.evaluation.labels import bio_spans
    from tagger.io import load_corpus

    nlp = spacy.blank("en")
    db = DocBin()
    for s in load_corpus(path):
        doc = Doc(nlp.vocab, words=s.tokens, tags=s.columns[1])
        doc.spans["chunks"] = [Span(doc, a, b, label=t) for t, a, b in bio_spans(s.labels)]
        db.add(doc)
    db.to_disk(out)


def timed(cmd: list[str], **kw) -> float:
    t0 = time.perf_counter()
    run = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if run.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{run.stderr[-3000:]}")
    return time.perf_counter() - t0


def package(pipeline: Path, work: Path) -> dict:
    """spacy package, then a fresh venv with the project's wheel and the package; load it."""
    py = sys.executable
    timed([py, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(work / "wheels"), str(C.REPO)])
    (work / "packages").mkdir(exist_ok=True)
    timed(
        [
            py,
            "-m",
            "spacy",
            "package",
            str(pipeline),
            str(work / "packages"),
            "--name",
            "chunker",
            "--version",
            "0.0.1",
            "--force",
        ]
    )
    sdist = next((work / "packages").rglob("*.tar.gz"))
    requirements = json.loads(next((work / "packages").rglob("meta.json")).read_text())
    venv = work / "venv"
    timed([py, "-m", "venv", str(venv)])
    vpy = str(venv / "bin" / "python")
    seconds = timed(
        [vpy, "-m", "pip", "install", "-q", "--find-links", str(work / "wheels"), str(sdist)]
    )
    out = subprocess.run(
        [
            vpy,
            "-c",
            "import spacy; nlp = spacy.load('en_chunker'); "
            "print(nlp.pipe_names, nlp.get_pipe('chunker').labels[:3])",
        ],
        capture_output=True,
        text=True,
        cwd=work,
    )
    return {
        "requirements": requirements.get("requirements", []),
        "install_seconds": seconds,
        "loaded": out.returncode == 0,
        "output": (out.stdout + out.stderr).strip()[-500:],
    }


def main(argv: list[str]) -> int:
    args, mach = C.begin(argv, parse_args)
    d = C.corpora() / "conll2000"
    params = "\n".join(args.settings)
    result = {"machine": mach, "learner": args.learner, "settings": args.settings}
    with tempfile.TemporaryDirectory(prefix="tagger-spacy-") as tmp:
        work = Path(tmp)
        for name in ("train", "test"):
            to_docbin(d / f"{name}.txt", work / f"{name}.spacy")
        sets = [x for kv in args.settings for x in ("--set", kv)]
        print(f"# tagger train (load average {C.load_average()})", file=sys.stderr, flush=True)
        t_ours = timed(
            [
                "tagger",
                "train",
                str(d / "train.txt"),
                "--learner",
                args.learner,
                *sets,
                "-o",
                str(work / "tagger.tgm"),
                "-q",
            ]
        )
        ev = subprocess.run(
            ["tagger", "eval", str(work / "tagger.tgm"), str(d / "test.txt"), "--json"],
            capture_output=True,
            text=True,
            check=True,
        )
        f1_ours = 100 * json.loads(ev.stdout)["f1"]
        cfg = work / "config.cfg"
        cfg.write_text(CONFIG.format(learner=args.learner, params=params))
        print(f"# spacy train (load average {C.load_average()})", file=sys.stderr, flush=True)
        t_spacy = timed(
            [
                sys.executable,
                "-m",
                "spacy",
                "train",
                str(cfg),
                "--output",
                str(work / "out"),
                "--paths.train",
                str(work / "train.spacy"),
                "--paths.dev",
                str(work / "test.spacy"),
            ],
            cwd=work,
        )
        best = work / "out" / "model-last"
        meta = json.loads((best / "meta.json").read_text())
        f1_spacy = 100 * meta["performance"]["spans_chunks_f"]
        sys.path.insert(0, str(C.REPO / "tests"))
        from _models import same_model

        same = same_model(work / "tagger.tgm", best / "chunker" / "model.tgm")
        result.update(
            tagger_f1=f1_ours,
            spacy_f1=f1_spacy,
            tagger_seconds=t_ours,
            spacy_seconds=t_spacy,
            same_model=same,
        )
        print(
            C.markdown_table(
                ["command", "chunk F1 on test.txt", "seconds"],
                [
                    ["tagger train + tagger eval", f"{f1_ours:.2f}", f"{t_ours:.1f}"],
                    ["spacy train (scores test.spacy)", f"{f1_spacy:.2f}", f"{t_spacy:.1f}"],
                ],
            )
        )
        print()
        print(f"- F1 difference: {f1_spacy - f1_ours:+.2f}; the same model: {same}", flush=True)
        if not args.no_package:
            result["package"] = package(best, work)
    if "package" in result:
        pk = result["package"]
        print(
            f"- spacy package requirements: {', '.join(pk['requirements'])}; installed in a "
            f"fresh venv in {pk['install_seconds']:.1f} s; spacy.load there: "
            f"{'ok' if pk['loaded'] else 'FAILED'} ({pk['output']})"
        )
    print(f"load average at the end: {C.load_average()}")
    C.write_json(C.BENCH / "out" / "spacy_train.json", result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
