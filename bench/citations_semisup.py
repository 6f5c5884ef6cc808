"""Semi-supervised citation segmentation with domain constraints (the study of Balamurugan et
al.; docs/algorithms.md section 4), next to the published numbers and python-crfsuite.

    python bench/citations_semisup.py [--domain citations|recipes] [--sizes 5,20,300]
                                      [--draws 5] [--workers 2]
                                      [--parts constrained,semisup,supervised]
                                      [--constraints FILE] [--set key=value ...]
                                      [--features PRESET|FILE] [--json PATH]

Data: the CPF files (``citations/cpf_zheng_chang_2016``): 5 or 20 labeled citations drawn at
random from the 300-citation training split (draws 0..4, ``numpy.random.default_rng(draw)``),
or the whole split for 300; the 1000 unlabeled citations; the 100 dev citations (model
selection) and the 100 test citations (reported). Token column only, ``citation`` preset.

Rows, token accuracy on test (mean and standard deviation over the draws):

- python-crfsuite L-BFGS L2 (c2=1), supervised, same templates;
- ours supervised: the L2 SSVM (``m3n-l2``, SDM) on the labeled citations alone;
- ours semi-supervised without constraints: ``ssvm-annealing`` with the unlabeled citations;
- ours semi-supervised with constraints: the same with ``constraints/citations.toml``;
- the last model decoded under the constraints (``Tagger.predict(..., constraints=...)``).

Every semi-supervised model is the one with the best dev accuracy along its annealing
schedule (at 5 and 20 labeled, along three runs from different seeds); test accuracy is
never used to choose.

``--domain recipes`` runs the same protocol on the project's own recipe sample
(``corpora/recipes_*.txt``, ``constraints/recipes.toml``): 5 or 10 labeled ingredient lines
drawn from the 40 training lines, or all 40; 264 unlabeled lines; 40 dev and 60 test lines;
ssvm-annealing with its defaults (the settings the constraint docs recommend for a first run).
``--domain chunking --parts semisup,supervised`` runs it on CoNLL-2000 chunking (``chunk``
preset, no constraint file: self-training alone; see ``CHUNK_CUTS``), a third domain for
choosing between the supervised steps' solvers (``--set inner=sdm`` or ``inner=owlqn``).
Every row also records its model's non-zero weights.

Each labeled set is three jobs (its supervised rows, its run without
and its run with constraints) for worker processes (``--workers`` at a time, one numba
thread each). Results go to
``bench/out/<domain>_semisup.json``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

#: published token accuracy (docs/algorithms.md section 4; mean of 5 splits)
PUBLISHED = {
    "Baseline CRF": {5: 63.1, 20: 79.1, 300: 89.9},
    "Baseline SDM": {5: 66.82, 20: 78.25, 300: 91.54},
    "DASO": {5: 75.2, 20: 84.9, 300: 91.1},
    "SSVM-SDM (paper)": {5: 74.74, 20: 86.2, 300: 92.92},
    "PR": {5: 62.7, 20: 76.0, 300: 87.29},
    "CODL": {5: 71.0, 20: 79.4, 300: 88.8},
}
#: what the issue asks of the constrained rows (mean test token accuracy, %)
TARGETS = {5: 86.0, 20: 91.0, 300: 96.0}

#: our learners' settings (on top of their defaults); the command line's --set overrides the
#: semi-supervised ones
SUPERVISED = {"C": 0.1}
#: chosen on dev (mean dev accuracy over the 5 draws of 5 and of 20 labeled citations): C = 1
#: over 0.1 and 0.3, 15 / 50 SDM passes over 5 / 20 (the dual is far from converged either way,
#: but the longer solves gain 2 points of dev accuracy at 20 labeled), 64 competitors per
#: sentence over 16
SEMISUP = {
    "C": 1.0,
    "steps": 3,
    "rounds": 1,
    "epochs": 15,
    "start_epochs": 50,
    "max_working_set": 64,
    "cu_end": 1.0,
}
#: per labeled-set size, on top of SEMISUP, chosen on the mean dev accuracy over that size's 5
#: draws: the supervised start converges slowly (relative duality gap 0.8-0.9 after 50 passes,
#: 0.5 after 200); 200 passes raise the mean dev accuracy at 20 labeled citations from 85.41
#: to 86.75 but lower it at 5 (78.43 -> 77.67), where the closer fit of 5 citations hurts.
#: With 5 or 20 labeled citations, runs from different seeds end several points apart (the
#: objective is not convex): 3 restarts, the best dev score kept, raise the mean dev accuracy
#: from 78.43 to 79.75 (5) and from 86.75 to 87.78 (20); 300 keeps one run (the time limit)
SEMISUP_BY_SIZE = {5: {"restarts": 3}, 20: {"start_epochs": 200, "restarts": 3}}

#: the independent parts of one labeled set's rows, each a job of its own, longest first
PARTS = ("constrained", "semisup", "supervised")

ROWS = [
    ("crfsuite", "python-crfsuite L-BFGS L2 c2=1 (supervised)"),
    ("supervised", "ours: L2 SSVM, SDM (m3n-l2), supervised"),
    ("semisup", "ours: ssvm-annealing, no constraints"),
    ("constrained", "ours: ssvm-annealing with constraints"),
    ("decoded", "ours: ... and constrained decoding"),
]


def _data(d: Path) -> dict:
    cpf = d / "citations" / "cpf_zheng_chang_2016"
    return {
        k: str(cpf / f)
        for k, f in (
            ("train", "citation_train.300.1.txt"),
            ("dev", "citation_dev.txt"),
            ("test", "citation_test.txt"),
            ("unlabeled", "citation_unlabeled.txt"),
        )
    }


def _recipes() -> dict:
    return {
        k: str(C.REPO / "corpora" / f"recipes_{k}.txt")
        for k in ("train", "dev", "test", "unlabeled")
    }


def _chunking() -> dict:
    conll = C.corpora() / "conll2000"
    return {"train": str(conll / "train.txt"), "test": str(conll / "test.txt")}


#: CoNLL-2000 chunking cut into the study's parts (sentence ranges of its files): labeled
#: sentences are drawn from the first 2,000 training sentences, the next 1,000 are the
#: unlabeled text (labels taken off), the 300 after them the dev set; the first 500 test
#: sentences are the test set
CHUNK_CUTS = {"pool": (0, 2000), "unlabeled": (2000, 3000), "dev": (3000, 3300), "test": (0, 500)}

#: what differs between the citation study and the recipe sample: data (the unlabeled file's
#: format), constraint file, sizes, published figures and targets, settings
DOMAINS = {
    "citations": {
        "data": lambda: _data(C.corpora()),
        "unlabeled_format": "tab",
        "constraints": "citations.toml",
        "sizes": "5,20,300",
        "published": PUBLISHED,
        "targets": TARGETS,
        "semisup": SEMISUP,
        "by_size": SEMISUP_BY_SIZE,
    },
    "recipes": {
        "data": _recipes,
        "unlabeled_format": "text",
        "constraints": "recipes.toml",
        "sizes": "5,10,40",
        "published": {},
        "targets": {5: 90.0},
        "semisup": {},
        "by_size": {},
    },
    # a third domain without a constraint file (the "semisup" rows alone: self-training)
    "chunking": {
        "data": _chunking,
        "unlabeled_format": "conll",
        "features": "chunk",
        "constraints": None,
        "full": CHUNK_CUTS["pool"][1],
        "sizes": "20",
        "published": {},
        "targets": {},
        "semisup": {},
        "by_size": {},
    },
}


def run_part(job: dict) -> dict:
    """One labeled set, one part of its rows: ``supervised`` (python-crfsuite and our
    supervised SSVM), ``semisup`` or ``constrained`` (the latter with constrained decoding).
    Runs in a worker process; the parts of a labeled set are independent (each semi-supervised
    learner starts from its own seed), so splitting them only balances the workers."""
    import numpy as np

    from tagger import Tagger
    from tagger.constraints import ConstraintSet

    def load(path, labeled=True):
        return (
            C.load({"path": path, "format": "tab", "keep_columns": 1})
            if labeled
            else _unlabeled(path)
        )

    def _unlabeled(path):
        from tagger.io import load_corpus

        sents = load_corpus(path, job["unlabeled_format"], labeled=False)
        for s in sents:
            del s.columns[1:]
        return sents

    data = job["data"]
    if job["features"] == "chunk":
        train, dev, test, unl = _chunk_parts(data)
    else:
        train, dev, test = load(data["train"]), load(data["dev"]), load(data["test"])
    n = job["size"]
    if n < len(train):
        idx = np.random.default_rng(job["draw"]).choice(len(train), n, replace=False)
        train = [train[i] for i in sorted(idx)]
    out = {"size": n, "draw": job["draw"], "seconds": {}}

    if job["part"] == "supervised":
        t0 = time.perf_counter()
        out["crfsuite"] = _crfsuite(train, test, job["features"])
        out["seconds"]["crfsuite"] = round(time.perf_counter() - t0, 1)
        t0 = time.perf_counter()
        sup = Tagger(
            features=job["features"], learner="m3n-l2", params=job["supervised"], select=False
        ).fit(train)
        out["supervised"] = sup.evaluate(test)["accuracy"]
        out["supervised_dev"] = sup.evaluate(dev)["accuracy"]
        out["supervised_nonzero"] = sup.n_nonzero_
        out["seconds"]["supervised"] = round(time.perf_counter() - t0, 1)
        return out

    row = job["part"]
    cset = ConstraintSet.load(job["constraints"]) if row == "constrained" else None
    if job["features"] != "chunk":
        unl = load(data["unlabeled"], labeled=False)
    t0 = time.perf_counter()
    tg = Tagger(
        features=job["features"],
        learner="ssvm-annealing",
        params=job["semisup"],
        seed=job["draw"],
    )
    tg.fit(train, dev=dev, unlabeled=unl, constraints=cset, test=test)
    out[row] = tg.evaluate(test)["accuracy"]
    out[f"{row}_dev"] = max(r.get("dev_acc", 0) for r in tg.trace_) / 100
    out[f"{row}_nonzero"] = tg.n_nonzero_
    out[f"{row}_trace"] = [
        {
            k: r.get(k)
            for k in (
                "restart",
                "step",
                "C_u",
                "dev_acc",
                "test_acc",
                "violations",
                "nonzero",
                "selected",
            )
        }
        for r in tg.trace_
    ]
    out["seconds"][row] = round(time.perf_counter() - t0, 1)
    if cset is not None:
        t0 = time.perf_counter()
        out["decoded"] = tg.evaluate(test, constraints=cset)["accuracy"]
        out["seconds"]["decoded"] = round(time.perf_counter() - t0, 1)
    return out


def _chunk_parts(data: dict) -> tuple:
    """The labeled pool, dev, test and unlabeled sentences of CoNLL-2000 (``CHUNK_CUTS``)."""
    from tagger.sentence import Sentence

    def part(name, path):
        a, b = CHUNK_CUTS[name]
        return C.load({"path": path, "format": "conll", "keep_columns": 2, "limit": b})[a:]

    unl = [Sentence(s.columns, None) for s in part("unlabeled", data["train"])]
    return part("pool", data["train"]), part("dev", data["train"]), part("test", data["test"]), unl


def _crfsuite(train, test, features) -> float:
    import pycrfsuite

    from tagger.evaluation.metrics import evaluate
    from tagger.features import FeatureSpec, Featurizer

    fz = Featurizer(FeatureSpec.load(features))
    trainer = pycrfsuite.Trainer(verbose=False)
    for s in train:
        trainer.append(fz.string_attributes(s), s.labels)
    trainer.set_params(dict(C.CRFSUITE_L2))
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.crfsuite")
        trainer.train(path)
        tagger = pycrfsuite.Tagger()
        tagger.open(path)
        pred = [tagger.tag(fz.string_attributes(s)) for s in test]
    return evaluate([s.labels for s in test], pred)["accuracy"]


def _mean_of(results: list, key: str, size: int) -> str:
    vals = [r[key] for r in results if r["size"] == size and key in r]
    return f"{statistics.mean(vals):,.0f}" if vals else "–"


def study_tables(data: dict) -> str:
    """The tables a run prints at its end, from its JSON (``bench/tables.py`` prints them
    too): the settings, test accuracy per system and labeled size (mean ± standard deviation
    over the draws) beside the published rows and targets, non-zero weights, and the mean dev
    accuracy the settings are chosen on."""
    dom = DOMAINS[data["domain"]]
    results = data["results"]
    given = data.get("set", {})
    sizes = sorted({r["size"] for r in results})
    full = dom.get("full", max(int(x) for x in dom["sizes"].split(",")))
    draws = data.get("draws", max(r["draw"] for r in results) + 1)
    by_size = {int(n): extra for n, extra in data["semisup_by_size"].items()}
    constraints = data.get("constraints", f"constraints/{dom['constraints']}")
    lines = [
        f"ours: supervised {C.fmt_params(SUPERVISED)}; ssvm-annealing "
        f"{C.fmt_params(data['semisup']) or 'with its defaults'}"
        + "".join(
            f"; at {n} labeled {C.fmt_params({**extra, **given})}"
            for n, extra in by_size.items()
            if n in sizes
        ),
        f"constraints: {constraints or 'none'}",
        f"features: {data['features']}",
        "",
    ]
    header = ["system"] + [f"{n} labeled" for n in sizes]
    rows = []
    for key, name in ROWS:
        if not any(key in r for r in results):
            continue
        cells = [name]
        for n in sizes:
            vals = [100 * r[key] for r in results if r["size"] == n]
            sd = f" ± {statistics.stdev(vals):.2f}" if len(vals) > 1 else ""
            cells.append(f"{statistics.mean(vals):.2f}{sd}")
        rows.append(cells)
    for name, nums in dom["published"].items():
        rows.append(
            [f"published: {name}"] + [f"{nums[n]:.2f}" if n in nums else "–" for n in sizes]
        )
    if dom["targets"]:
        rows.append(
            ["target for ours with constraints"]
            + [f">= {dom['targets'][n]:.1f}" if n in dom["targets"] else "–" for n in sizes]
        )
    lines.append(C.markdown_table(header, rows))
    nonzero = [
        [name] + [_mean_of(results, key + "_nonzero", n) for n in sizes]
        for key, name in ROWS
        if any(key + "_nonzero" in r for r in results)
    ]
    if nonzero:
        lines += ["", "non-zero weights of the models above (mean over the draws)", ""]
        lines.append(C.markdown_table(header, nonzero))
    lines += [
        "",
        f"test token accuracy (%), mean ± standard deviation over {draws} random labeled sets "
        f"for the smaller sizes, the whole training split for {full}; models chosen on dev only",
    ]
    for key, what in (("supervised", "supervised"), ("constrained", "constrained")):
        if any(f"{key}_dev" in r for r in results):
            dev = {
                n: statistics.mean(100 * r[f"{key}_dev"] for r in results if r["size"] == n)
                for n in sizes
            }
            lines.append(
                f"mean dev accuracy of the {what} models (what settings are chosen on): "
                + ", ".join(f"{n} labeled {v:.2f}" for n, v in dev.items())
            )
    workers = f" with {data['workers']} worker(s)" if "workers" in data else ""
    lines.append(f"whole study: {data['seconds']:.0f} s wall clock{workers}")
    return "\n".join(lines)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--domain", choices=sorted(DOMAINS), default="citations")
    p.add_argument(
        "--sizes",
        default=None,
        help="labeled set sizes [default: 5,20,300 for citations, 5,10,40 for recipes, 20 for "
        "chunking]",
    )
    p.add_argument("--draws", type=int, default=5, help="random labeled sets for 5 and 20")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument(
        "--parts",
        default=",".join(PARTS),
        help="which rows to run (comparing constraint files: constrained)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a parameter of ssvm-annealing; repeatable",
    )
    p.add_argument(
        "--constraints",
        default=None,
        help="constraint file [default: the domain's file in constraints/]",
    )
    p.add_argument(
        "--features",
        default=None,
        metavar="PRESET|FILE",
        help="feature preset or file [default: the domain's preset], e.g. one with cluster "
        "views of clusters learned from the unlabeled text (tagger clusters)",
    )
    p.add_argument(
        "--json", default=None, help="results [default: bench/out/<domain>_semisup.json]"
    )
    return p.parse_args(argv)


def main(argv) -> int:
    os.environ.setdefault("NUMBA_NUM_THREADS", "1")  # one thread per worker process
    args, mach = C.begin(argv, parse_args)
    from tagger.learners import get_learner

    given = get_learner("ssvm-annealing").parse_settings(args.set)
    dom = DOMAINS[args.domain]
    by_size = dom["by_size"]
    semisup = dict(dom["semisup"])
    semisup.update(given)
    sizes = [int(x) for x in (args.sizes or dom["sizes"]).split(",")]
    constraints = args.constraints or (
        str(C.REPO / "constraints" / dom["constraints"]) if dom["constraints"] else ""
    )
    if not constraints and "constrained" in args.parts.split(","):
        raise SystemExit(
            f"--domain {args.domain} has no constraint file: --parts semisup,supervised"
        )
    data = dom["data"]()
    # the whole training split (one draw)
    full = dom.get("full", max(int(x) for x in dom["sizes"].split(",")))
    jobs = []
    for n in sizes:
        for draw in range(args.draws) if n < full else [0]:
            for part in [x for x in PARTS if x in args.parts.split(",")]:
                jobs.append(
                    {
                        "size": n,
                        "draw": draw,
                        "part": part,
                        "data": data,
                        "unlabeled_format": dom["unlabeled_format"],
                        "features": args.features or dom.get("features", "citation"),
                        "constraints": constraints,
                        "supervised": SUPERVISED,
                        "semisup": {**semisup, **by_size.get(n, {}), **given},
                    }
                )
    # the longest parts first (semi-supervised before supervised, restarted sizes first,
    # constrained before unconstrained), so that the last parts to finish are short ones
    restarts = {n: by_size.get(n, {}).get("restarts", 1) for n in sizes}
    jobs.sort(
        key=lambda j: (
            j["part"] == "supervised",
            -restarts[j["size"]],
            -j["size"],
            PARTS.index(j["part"]),
        )
    )
    t0 = time.perf_counter()
    results: dict[tuple, dict] = {}
    # spawn, not fork: the parent has numba's OpenMP threads running already
    with ProcessPoolExecutor(
        max_workers=args.workers, mp_context=multiprocessing.get_context("spawn")
    ) as pool:
        # parts start in the order above and are collected as they finish
        for future in as_completed([pool.submit(run_part, j) for j in jobs]):
            part = future.result()
            r = results.setdefault(
                (part["size"], part["draw"]),
                {"size": part["size"], "draw": part["draw"], "seconds": {}},
            )
            seconds = part.pop("seconds")
            r["seconds"].update(seconds)
            r.update(part)
            print(
                f"  {part['size']} labeled, draw {part['draw']}: "
                + ", ".join(f"{k} {100 * part[k]:.2f}" for k, _ in ROWS if k in part)
                + "".join(
                    f", {k} {part[k + '_nonzero']:,} non-zero weights"
                    for k, _ in ROWS
                    if k + "_nonzero" in part
                )
                + f" ({seconds} s)",
                flush=True,
            )
    results = [results[k] for k in sorted(results)]
    total = time.perf_counter() - t0
    out = {
        "command": C.command_line(),
        "machine": mach,
        "domain": args.domain,
        "features": args.features or dom.get("features", "citation"),
        "constraints": os.path.relpath(constraints, C.REPO) if constraints else "",
        "draws": args.draws,
        "workers": args.workers,
        "semisup": semisup,
        "semisup_by_size": by_size,
        "set": given,
        "results": results,
        "seconds": total,
        "load_average_at_end": C.load_average(),
    }
    print(study_tables(out))
    C.write_json(Path(args.json or C.OUT / f"{args.domain}_semisup.json"), out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
