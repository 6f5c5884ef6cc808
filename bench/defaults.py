"""What a new user gets: our default training (no --set) against python-crfsuite as people
run it and tuned on the same dev data, on every task, each task in one run.

    python bench/defaults.py [--task chunk,pos,gum-upos,gum-xpos,citation]
                             [--systems ours,crfsuite-everyday,crfsuite-tuned]
                             [--learners m3n-subgradient,crf-l1,...] [--grid full|small]
                             [--grid-jobs N] [--threads N] [--fixed-c1 2,1,0.5]
                             [--json PATH]

Run it a task at a time (``--task gum-upos``): each fits well inside a 3-hour session on 2 cores
with the small grid, and writes its own JSON (``--json``).

Tasks (features: the preset our training picks for the file; crfsuite gets the same attributes
as strings, ``Featurizer.string_attributes``):

chunk       CoNLL-2000 chunking, chunk F1 on test.txt
pos         CoNLL-2000's POS column from the words alone, token accuracy
gum-upos    UD English GUM, UPOS from the words, token accuracy
gum-xpos    UD English GUM, XPOS from the words, token accuracy
citation    Cora citations, CPF split 300/100/100, token accuracy

Rows per task:

- ``ours default``: ``Tagger(features, select=True).fit(train, dev)``, what ``tagger train
  TRAIN --dev DEV`` does (CoNLL-2000 has no dev file: without one, our training holds out a
  tenth of the training sentences itself). Its seconds include the selection path.
- ``ours LEARNER (auto)``: each learner of ``--learners`` with its own automatic choice.
- ``ours c1=X (set)``: with ``--fixed-c1``, the default learner at each strength given, what
  ``tagger train TRAIN --set c1=X`` does: trained to its own stopping rule, no path. These rows
  show what sparsity costs in score when the strength is not chosen on dev (the frontier that
  "half the weights at the same score" asks about).
- ``crfsuite everyday``: python-crfsuite's L-BFGS with the elastic net most tutorials use,
  c1=0.1, c2=0.01, max_iterations=100, on all the training data: what people actually type.
  Its seconds are ``Trainer.train`` alone (the attributes are computed and appended before the
  clock starts, which favours it: our seconds include our featurization).
- ``crfsuite tuned``: python-crfsuite's L-BFGS (OWL-QN when c1 > 0) at every point of the grid
  c1 in {0, 0.01, 0.03, 0.1, 0.3, 1} x c2 in {0, 0.001, 0.01, 0.1, 1} (``--grid small``: c1 in
  {0, 0.1, 1} x c2 in {0, 0.01, 1}), each trained to its own convergence, scored on dev; the
  best is reported on test. Without a dev file the grid is scored on the same held-out tenth
  ours uses. The chosen configuration is then trained again, alone, on all the training data:
  its "seconds" is that one training; the grid's total is reported too. ``--grid-jobs N``
  trains N grid points at once (the grid's choice does not depend on N; the per-point seconds
  then share the machine, the chosen configuration's never does).

Each system trains in its own process (``_common.run_worker``), one after another, so each
has the machine to itself; ``--threads N`` sets our kernels' threads (default: every usable
core; python-crfsuite has one). Results go to ``bench/out/defaults.json``; the summary line per
task gives the figures of "fast by default": seconds, score and non-zero weights against the
everyday configuration, and the score against the better of it and the tuned choice.
Where the task has a dev file, every row also gives its score there (ours: the model kept;
crfsuite everyday: its model, which chose nothing on dev; crfsuite tuned: the chosen grid
point), so that a difference on test can be set beside the one on the data ours chose on.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

TASKS = ("chunk", "pos", "gum-upos", "gum-xpos", "citation")
GRIDS = {
    "full": ([0.0, 0.01, 0.03, 0.1, 0.3, 1.0], [0.0, 0.001, 0.01, 0.1, 1.0]),
    "small": ([0.0, 0.1, 1.0], [0.0, 0.01, 1.0]),
}
DEFAULT_LEARNERS: tuple[str, ...] = ()
SYSTEMS = ("ours", "crfsuite-everyday", "crfsuite-tuned")
#: the configuration most python-crfsuite / sklearn-crfsuite tutorials use
EVERYDAY = {"c1": 0.1, "c2": 0.01, "max_iterations": 100}


def task_data(task: str, d: Path) -> dict:
    conll = d / "conll2000"
    gum = d / "ud_english_gum"
    cpf = d / "citations" / "cpf_zheng_chang_2016"
    if task == "chunk":
        spec = {"format": "conll"}
        return {
            "preset": "chunk",
            "train": {"path": str(conll / "train.txt"), **spec},
            "test": {"path": str(conll / "test.txt"), **spec},
        }
    if task == "pos":
        spec = {"format": "conll", "label_column": 1, "keep_columns": 1}
        return {
            "preset": "pos",
            "train": {"path": str(conll / "train.txt"), **spec},
            "test": {"path": str(conll / "test.txt"), **spec},
        }
    if task.startswith("gum-"):
        spec = {"format": "conllu", "conllu_label": task[4:]}
        return {
            "preset": "pos",
            **{
                k: {"path": str(gum / f"en_gum-ud-{k}.conllu"), **spec}
                for k in ("train", "dev", "test")
            },
        }
    spec = {"format": "tab", "keep_columns": 1}
    return {
        "preset": "citation",
        "train": {"path": str(cpf / "citation_train.300.1.txt"), **spec},
        "dev": {"path": str(cpf / "citation_dev.txt"), **spec},
        "test": {"path": str(cpf / "citation_test.txt"), **spec},
    }


# ------------------------------------------------------------------ workers


def load(spec: dict) -> list:
    from tagger.io import load_corpus

    opts = {}
    if spec.get("label_column") is not None:
        opts["label_column"] = spec["label_column"]
    if spec.get("conllu_label"):
        opts["label"] = spec["conllu_label"]
    sents = load_corpus(spec["path"], format=spec["format"], **opts)
    keep = spec.get("keep_columns")
    if keep:
        for s in sents:
            del s.columns[keep:]
    return sents


def score(gold: list, pred: list, chunk: bool) -> float:
    from tagger.evaluation.metrics import evaluate

    m = evaluate(gold, pred, chunk_level=chunk)
    return 100 * (m["f1"] if chunk else m["accuracy"])


def worker_ours(job: dict) -> dict:
    from tagger import jit
    from tagger.api import Tagger

    train, test = load(job["train"]), load(job["test"])
    dev = load(job["dev"]) if job.get("dev") else None
    if job.get("threads"):
        jit.set_threads(job["threads"])
    threads = jit.thread_count()
    tg = Tagger(
        features=job["preset"],
        learner=job["learner"],
        params=job.get("params", {}),
        seed=0,
        select=job.get("select", True),
    )
    t0 = time.perf_counter()
    tg.fit(train, dev=dev)
    seconds = time.perf_counter() - t0
    size = tg.save(job["model"])
    sel = tg.info_.get("selection") or {}
    return {
        "seconds": seconds,
        "model_bytes": size,
        "n_nonzero": tg.n_nonzero_,
        "test": score([s.labels for s in test], tg.predict(test), job["chunk"]),
        "dev": None
        if dev is None
        else score([s.labels for s in dev], tg.predict(dev), job["chunk"]),
        "chosen": {sel.get("param", "?"): sel.get("value"), **sel.get("mix", {})},
        "recipe": sel.get("recipe", {}),
        "scored_on": sel.get("scored_on"),
        "path_points": len(sel.get("rows", [])),
        "path": sel.get("rows", []),
        "learner": tg.info_["learner"],
        "learner_choice": tg.info_.get("learner_choice"),
        "threads": threads,
        "featurize_seconds": tg.info_.get("featurize_seconds"),
    }


_GRID: dict = {}  # what forked grid workers inherit: the sentences and their attributes


def _crfsuite_fit(sentences, c1, c2, path, **more):
    import pycrfsuite

    params = {"c1": c1, "c2": c2, **more}
    trainer = pycrfsuite.Trainer(algorithm="lbfgs", params=params, verbose=False)
    feats = _GRID["feats"]
    for s in sentences:
        trainer.append(feats[id(s)], s.labels)
    t0 = time.perf_counter()
    trainer.train(path)
    return time.perf_counter() - t0


def _crfsuite_tag(path, sentences):
    import pycrfsuite

    tagger = pycrfsuite.Tagger()
    tagger.open(path)
    out = [tagger.tag(_GRID["feats"][id(s)]) for s in sentences]
    tagger.close()
    return out


def _crfsuite_point(c1: float, c2: float) -> dict:
    """One grid point, trained on the fitting part and scored on dev (in a forked worker)."""
    g = _GRID
    path = f"{g['model']}.c1={c1}.c2={c2}"
    seconds = _crfsuite_fit(g["fit_part"], c1, c2, path)
    dev = score([s.labels for s in g["dev"]], _crfsuite_tag(path, g["dev"]), g["chunk"])
    os.unlink(path)
    print(
        f"# crfsuite c1={c1} c2={c2}: dev {dev:.2f} in {seconds:.1f} s", file=sys.stderr, flush=True
    )
    return {"c1": c1, "c2": c2, "seconds": round(seconds, 2), "dev": dev}


def worker_crfsuite(job: dict) -> dict:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from tagger.training import selection

    train, test = load(job["train"]), load(job["test"])
    attributes = C.attribute_function(job["preset"], "featurizer")
    if job.get("dev"):
        fit_part, dev = train, load(job["dev"])
    else:
        kept, held = selection.holdout_split(len(train))
        fit_part, dev = [train[i] for i in kept], [train[i] for i in held]
    _GRID.update(
        feats={id(s): attributes(s) for s in itertools.chain(train, dev, test)},
        fit_part=fit_part,
        dev=dev,
        chunk=job["chunk"],
        model=job["model"],
    )
    c1s, c2s = GRIDS[job["grid"]]
    grid, jobs = list(itertools.product(c1s, c2s)), job.get("jobs", 1)
    t0 = time.perf_counter()
    # Forked workers share the attribute lists instead of pickling them; the grid's order is
    # kept so that "first of the best" does not depend on the number of jobs.
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        points = list(pool.map(_crfsuite_point, *zip(*grid)))
    grid_wall = time.perf_counter() - t0
    best = max(points, key=lambda p: p["dev"])  # first of the best: the grid's order
    # The chosen configuration is trained again alone on all the training data: its time is
    # the one compared with ours, measured with no grid job beside it.
    model = job["model"]
    seconds = _crfsuite_fit(train, best["c1"], best["c2"], model)
    counts = C.crfsuite_model_counts(model)
    return {
        "seconds": seconds,
        "grid_seconds": sum(p["seconds"] for p in points),
        "grid_wall_seconds": grid_wall,
        "grid_jobs": jobs,
        "model_bytes": os.path.getsize(model),
        "n_nonzero": counts["n_nonzero"],
        "chosen": {"c1": best["c1"], "c2": best["c2"]},
        "test": score([s.labels for s in test], _crfsuite_tag(model, test), job["chunk"]),
        # with a dev file the grid trained on all the training data: the chosen point's score
        "dev": best["dev"] if job.get("dev") else None,
        "points": points,
    }


def worker_crfsuite_everyday(job: dict) -> dict:
    """python-crfsuite at :data:`EVERYDAY` on all the training data."""
    train, test = load(job["train"]), load(job["test"])
    dev = load(job["dev"]) if job.get("dev") else []
    attributes = C.attribute_function(job["preset"], "featurizer")
    _GRID.update(feats={id(s): attributes(s) for s in itertools.chain(train, dev, test)})
    model = job["model"]
    more = {k: v for k, v in EVERYDAY.items() if k not in ("c1", "c2")}
    seconds = _crfsuite_fit(train, EVERYDAY["c1"], EVERYDAY["c2"], model, **more)
    counts = C.crfsuite_model_counts(model)
    return {
        "seconds": seconds,
        "model_bytes": os.path.getsize(model),
        "n_nonzero": counts["n_nonzero"],
        "chosen": dict(EVERYDAY),
        "test": score([s.labels for s in test], _crfsuite_tag(model, test), job["chunk"]),
        # scored after the training, which the seconds above do not include
        "dev": score([s.labels for s in dev], _crfsuite_tag(model, dev), job["chunk"])
        if dev
        else None,
    }


WORKERS = {
    "ours": worker_ours,
    "crfsuite": worker_crfsuite,
    "crfsuite-everyday": worker_crfsuite_everyday,
}


def maybe_worker(argv: list[str]) -> None:
    import json

    if len(argv) >= 2 and argv[0] == "--worker":
        job = json.loads(Path(argv[1]).read_text())
        result = WORKERS[job["system"]](job)
        Path(argv[1]).with_suffix(".result.json").write_text(json.dumps(result))
        sys.exit(0)


# ------------------------------------------------------------------ main


def log(msg: str) -> None:
    print(f"# {msg}", file=sys.stderr, flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default=",".join(TASKS), help=f"comma-separated among {TASKS}")
    p.add_argument(
        "--learners",
        default=",".join(DEFAULT_LEARNERS),
        help="our learners trained with their automatic choice besides the default",
    )
    p.add_argument(
        "--systems",
        default=",".join(SYSTEMS),
        help=f"comma-separated among {SYSTEMS} (ours: the default learner)",
    )
    p.add_argument("--grid", choices=tuple(GRIDS), default="small")
    p.add_argument("--threads", type=int, default=0, help="our kernels' threads (0: default)")
    p.add_argument(
        "--grid-jobs",
        type=int,
        default=1,
        help="crfsuite grid points trained at once (the chosen one is retrained alone)",
    )
    p.add_argument(
        "--features",
        default=None,
        help="a preset or feature file for every task instead of the task's preset "
        "(python-crfsuite gets its ordinary templates: it has no label-pair features)",
    )
    p.add_argument(
        "--fixed-c1",
        default="",
        help="comma-separated strengths: a row of the default learner at each, no path",
    )
    p.add_argument("--json", default=None, help="where to write the results")
    args = p.parse_args(argv)
    try:
        args.fixed_c1 = [float(x) for x in args.fixed_c1.split(",") if x.strip()]
    except ValueError:
        p.error(f"--fixed-c1: expected numbers separated by commas, got {args.fixed_c1!r}")
    if any(not x > 0 for x in args.fixed_c1):
        p.error("--fixed-c1: every strength must be above 0")
    args.tasks = [t.strip() for t in args.task.split(",") if t.strip()]
    args.systems = [x.strip() for x in args.systems.split(",") if x.strip()]
    if not args.systems or any(x not in SYSTEMS for x in args.systems):
        p.error(f"--systems: choose among {', '.join(SYSTEMS)}")
    if not args.tasks or any(t not in TASKS for t in args.tasks):
        p.error(f"--task: choose among {', '.join(TASKS)}")
    from tagger.learners import DEFAULT_LEARNER, LEARNERS

    args.learners = [x.strip() for x in args.learners.split(",") if x.strip()]
    bad = [x for x in args.learners if x not in LEARNERS or LEARNERS[x].strength is None]
    if bad:
        p.error(f"--learners: {', '.join(bad)} cannot choose their strength")
    args.default_learner = DEFAULT_LEARNER
    return args


def run_task(task: str, args, d: Path, work: Path) -> dict:
    data = task_data(task, d)
    chunk = task == "chunk"
    base = {
        "preset": args.features or data["preset"],
        "train": data["train"],
        "test": data["test"],
        "dev": data.get("dev"),
        "chunk": chunk,
    }
    rows = {}
    systems = []
    if "ours" in args.systems:
        ours = {"system": "ours", "learner": args.default_learner, "threads": args.threads}
        systems.append(("ours default", ours))
    systems += [
        (f"ours {x} (auto)", {"system": "ours", "learner": x, "threads": args.threads})
        for x in args.learners
        if x != args.default_learner
    ]
    for c1 in args.fixed_c1:
        fixed = {"params": {"c1": c1}, "select": False, "threads": args.threads}
        systems.append(
            (f"ours c1={c1:g} (set)", {"system": "ours", "learner": args.default_learner, **fixed})
        )
    if "crfsuite-everyday" in args.systems:
        systems.append(("crfsuite everyday", {"system": "crfsuite-everyday"}))
    if "crfsuite-tuned" in args.systems:
        systems.append(
            ("crfsuite tuned", {"system": "crfsuite", "grid": args.grid, "jobs": args.grid_jobs})
        )
    for name, extra in systems:
        slug = name.replace(" ", "-").replace("(", "").replace(")", "")
        job = dict(base, **extra, model=str(work / f"{task}-{slug}.model"))
        log(f"{task}: {name} (load average {C.load_average()})")
        rows[name] = C.run_worker(str(Path(__file__).resolve()), job, work, f"{task}-{slug}")
        log(f"{task}: {name}: test {rows[name]['test']:.2f} in {rows[name]['seconds']:.1f} s")
    return {
        "metric": "chunk F1" if chunk else "token accuracy",
        "features": base["preset"],
        "rows": rows,
        "load_average_after": C.load_average(),
    }


def print_task(task: str, res: dict) -> None:
    # runs before the dev column (or of a task without a dev file) have no dev scores
    with_dev = any(r.get("dev") is not None for r in res["rows"].values())
    header = [
        "system",
        *([f"dev {res['metric']}"] if with_dev else []),
        f"test {res['metric']}",
        "non-zero weights",
        "model bytes",
        "train s (selection included)",
        "chosen",
        "peak RSS MB",
    ]
    table = []
    for name, r in res["rows"].items():
        chosen = ", ".join(f"{k}={v:g}" for k, v in r["chosen"].items() if v is not None)
        if "grid_seconds" in r:
            chosen += (
                f" (grid of {len(r['points'])}: {r['grid_seconds']:.0f} s, "
                f"{r['grid_wall_seconds']:.0f} s wall with {r['grid_jobs']} at once)"
            )
        elif r.get("scored_on"):
            chosen += f" on {r['scored_on']} ({r['path_points']} points)"
        table.append(
            [
                name,
                *((["-" if r.get("dev") is None else f"{r['dev']:.2f}"]) if with_dev else []),
                f"{r['test']:.2f}",
                C.fmt_int(r["n_nonzero"]),
                C.fmt_int(r["model_bytes"]),
                f"{r['seconds']:.1f}",
                chosen,
                f"{r['peak_rss_mb']:.0f}",
            ]
        )
    features = f" (features: `{res['features']}`)" if res.get("features") else ""
    print(f"{task}{features}:")
    print()
    print(C.markdown_table(header, table))
    print()
    for line in verdict(res["rows"]):
        print(f"- {line}")
    print()
    path = (res["rows"].get("ours default") or {}).get("path") or []
    if path:
        print(f"ours default's path, scored on {res['rows']['ours default'].get('scored_on')}:")
        print()
        print(C.markdown_table(*path_table(path)))
        print()


def path_table(path: list) -> tuple[list[str], list[list[str]]]:
    """The path's points as the run recorded them: strength (and mix), dev scores, non-zero
    weights, iterations, seconds, and which point was kept."""
    rows = []
    for r in path:
        point = f"{r.get('param', '?')}={r.get('value', '?'):g}"
        point += "".join(f", {k}={v:g}" for k, v in (r.get("mix") or {}).items())
        f1 = f"{r['dev_f1']:.2f}" if "dev_f1" in r else ""
        mark = "kept" if r.get("selected") else ("within noise" if r.get("within_noise") else "")
        rows.append(
            [
                point,
                f1,
                f"{r.get('dev_acc', float('nan')):.2f}",
                C.fmt_int(r["nonzero"]),
                str(r.get("iterations", "")),
                f"{r.get('seconds', float('nan')):.1f}",
                mark,
            ]
        )
    return ["point", "dev F1", "dev accuracy", "non-zero", "iterations", "s", ""], rows


def verdict(rows: dict) -> list[str]:
    """The figures "fast by default" asks for, from one task's rows: against the everyday
    configuration, our seconds, non-zero weights and score; against the better of it and the
    tuned choice, our score (a shortfall over 0.1 point is a miss)."""
    ours, day, tuned = (
        rows.get(k) for k in ("ours default", "crfsuite everyday", "crfsuite tuned")
    )
    out = []
    if ours and day:
        out.append(
            f"ours / crfsuite everyday: {ours['seconds'] / max(day['seconds'], 1e-9):.2f}x the "
            f"seconds (target <= 1), {ours['n_nonzero'] / max(day['n_nonzero'], 1):.2f}x the "
            f"non-zero weights (target <= 0.5), {ours['test'] - day['test']:+.2f} points"
        )
    if ours and day and ours.get("dev") is not None and day.get("dev") is not None:
        out.append(
            f"on the dev data (nothing is chosen on it for crfsuite everyday): ours - crfsuite "
            f"everyday {ours['dev'] - day['dev']:+.2f} points"
        )
    peers = [r for r in (day, tuned) if r]
    if ours and peers:
        bar = max(peers, key=lambda r: r["test"])
        which = "everyday" if bar is day else "tuned"
        out.append(
            f"ours - the better crfsuite ({which}, {bar['test']:.2f}): "
            f"{ours['test'] - bar['test']:+.2f} points (target >= -0.1)"
        )
    return out


def main(argv: list[str]) -> int:
    maybe_worker(argv)
    args, mach = C.begin(argv, parse_args)
    d = C.corpora()
    import tempfile

    results = {"command": C.command_line(), "machine": mach, "tasks": {}}
    out = Path(args.json) if args.json else C.BENCH / "out" / "defaults.json"
    with tempfile.TemporaryDirectory(prefix="tagger-defaults-") as tmp:
        for task in args.tasks:
            res = run_task(task, args, d, Path(tmp))
            results["tasks"][task] = res
            print_task(task, res)
            sys.stdout.flush()
            # written after every task: a run of several hours that is stopped keeps its tables
            C.write_json(out, results)
    print(f"load average at the end: {C.load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
