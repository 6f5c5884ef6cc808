"""CoNLL-2000 chunking: our L2 and L1 CRFs against python-crfsuite's L-BFGS at equal c1 / c2.

    python bench/crf.py [--systems crf-l2,crfsuite-l2,crf-l1,crfsuite-l1] [--c1 1] [--c2 1]
                        [--quick] [--json PATH]

Same objective on both sides: the likelihood summed over sentences plus ``c2 ||w||^2`` or
``c1 ||w||_1`` (CRFsuite's definitions), the ``chunk`` preset's attributes (CRFsuite receives
``Featurizer.string_attributes``, the same attributes as strings), state weights for the
(attribute, label) pairs seen in training, every transition (CRFsuite's
``feature.possible_transitions=1``) and no start / end weights (our ``start_end=false``;
CRFsuite has none). Both stop by CRFsuite's rule (relative decrease below ``delta=1e-5`` over
``period=10`` iterations) with 6 L-BFGS memories. The systems run one after the other in this
process, on the same machine state.

Columns: the final objective each optimiser reports; for CRFsuite also our objective evaluated
at CRFsuite's weights (read back from the model with ``Tagger.info()``, which prints six
decimals) as a check that the two objectives are the same function; iterations; gradient
evaluations (ours); training seconds, wall clock and process CPU time (the machine may be
shared: CPU time counts both of our threads; optimisation only: featurisation and CRFsuite's
``Trainer.append`` are reported apart); non-zero weights; conlleval F1 on test.txt.

``--quick`` trains on the first 1000 sentences.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

SYSTEMS = ("crf-l2", "crfsuite-l2", "crf-l1", "crfsuite-l1")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--c1", type=float, default=1.0)
    p.add_argument("--c2", type=float, default=1.0)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json", default=None)
    a = p.parse_args(argv)
    a.systems = [s for s in a.systems.split(",") if s]
    for s in a.systems:
        if s not in SYSTEMS:
            p.error(f"unknown system {s!r}")
    return a


def log(msg):
    print(f"# {msg}", file=sys.stderr, flush=True)


def setup(train):
    from tagger.chain.layout import ChainModel
    from tagger.evaluation.labels import LabelIndex
    from tagger.features import FeatureSpec, Featurizer
    from tagger.learners import TrainingProblem

    spec = FeatureSpec.load("chunk")
    t0 = time.perf_counter()
    fz = Featurizer(spec).fit(train)
    X = fz.transform(train)
    labels = LabelIndex.from_sentences(train)
    y = labels.encode([lab for s in train for lab in s.labels])
    model = ChainModel.from_data(X, y, len(labels), fz.n_attributes)
    return spec, fz, labels, TrainingProblem(model, X, y), time.perf_counter() - t0


def f1_of(pred_fn, test):
    from tagger.evaluation.metrics import evaluate

    return 100 * evaluate([s.labels for s in test], pred_fn(test))["f1"]


def run_ours(name, c, problem, fz, labels, test):
    from tagger.api import Tagger
    from tagger.learners import LEARNERS

    key = "c2" if name == "crf-l2" else "c1"
    learner = LEARNERS[name](
        **{key: c, "start_end": False, "memory": 6, "delta": 1e-5, "period": 10}
    )
    t0, c0 = time.perf_counter(), time.process_time()
    w = learner.fit(problem)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    tg = Tagger(features=fz.spec, learner=name, select=False)
    tg.featurizer_, tg.labels_, tg.model_, tg.weights_ = fz, labels, problem.model, w
    tg.info_ = {"learner": name}
    last = learner.trace_[-1]
    return {
        "objective": last["objective"],
        "iterations": last["epoch"],
        "grad_evals": last["grad_evals"],
        "train_seconds": seconds,
        "cpu_seconds": cpu,
        "nonzero": int(np.count_nonzero(w)),
        "f1": f1_of(tg.predict, test),
    }


def run_crfsuite(name, c, train, test, problem, fz, labels, workdir):
    import pycrfsuite

    attributes = fz.string_attributes
    params = {
        "c1": c if name == "crfsuite-l1" else 0.0,
        "c2": c if name == "crfsuite-l2" else 0.0,
        "feature.possible_transitions": True,
        "num_memories": 6,
        "delta": 1e-5,
        "period": 10,
    }
    trainer = pycrfsuite.Trainer(algorithm="lbfgs", params=params, verbose=False)
    t0 = time.perf_counter()
    for s in train:
        trainer.append(attributes(s), s.labels)
    t_append = time.perf_counter() - t0
    model_path = str(Path(workdir) / f"{name}.crfsuite")
    t0, c0 = time.perf_counter(), time.process_time()
    trainer.train(model_path)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    its = trainer.logparser.iterations
    tagger = pycrfsuite.Tagger()
    tagger.open(model_path)
    info = tagger.info()

    def predict(sents):
        return [tagger.tag(attributes(s)) for s in sents]

    f1 = f1_of(predict, test)
    # CRFsuite's weights in our layout, to evaluate our objective at them
    model = problem.model
    L = model.n_labels
    attr_id = {fz.attribute_name(a): a for a in range(fz.n_attributes)}
    w = np.zeros(model.n_weights)
    lab = {name_: i for i, name_ in enumerate(labels.labels)}
    from tagger.chain.layout import param_index

    missing = 0
    for (attr, label), value in info.state_features.items():
        a = attr_id.get(attr)
        p = -1 if a is None else param_index(model.layout, a, lab[label])
        if p < 0:
            missing += 1
            continue
        w[p] = value
    for (i, j), value in info.transitions.items():
        w[model.n_state + lab[i] * L + lab[j]] = value
    from tagger.learners.solvers.crf_objective import CRFObjective

    nll, _ = CRFObjective(model, problem.X, problem.y)(w)
    ours = nll + (params["c2"] * float(w @ w) + params["c1"] * float(np.abs(w).sum()))
    tagger.close()
    return {
        "objective": its[-1]["loss"],
        "objective_ours_at_their_weights": ours,
        "iterations": len(its),
        "train_seconds": seconds,
        "cpu_seconds": cpu,
        "append_seconds": t_append,
        "nonzero": len(info.state_features) + len(info.transitions),
        "unmapped_features": missing,
        "f1": f1,
    }


def main(argv):
    args = parse_args(argv)
    from tagger.io import read_corpus

    root = C.corpora() / "conll2000"
    train = list(read_corpus(root / "train.txt"))
    test = list(read_corpus(root / "test.txt"))
    if args.quick:
        train = train[:1000]
    spec, fz, labels, problem, t_feat = setup(train)
    log(f"{len(train)} sentences, {problem.model.n_weights} weights, featurized in {t_feat:.1f} s")
    from tagger.learners import LEARNERS

    for name in args.systems:  # compile every kernel before anything is timed
        if not name.startswith("crfsuite"):
            LEARNERS[name](epochs=2).fit(problem)
    results = {}
    with tempfile.TemporaryDirectory() as work:
        for name in args.systems:
            c = args.c2 if name.endswith("l2") else args.c1
            log(f"training {name} (c={c:g})")
            if name.startswith("crfsuite"):
                r = run_crfsuite(name, c, train, test, problem, fz, labels, work)
            else:
                r = run_ours(name, c, problem, fz, labels, test)
            log(json.dumps(r))
            results[name] = r
    header = [
        "system",
        "c",
        "objective",
        "our objective at its weights",
        "iterations",
        "grad evals",
        "train s",
        "CPU s",
        "non-zeros",
        "test F1",
    ]
    rows = []
    for name, r in results.items():
        c = args.c2 if name.endswith("l2") else args.c1
        rows.append(
            [
                name,
                f"{'c2' if name.endswith('l2') else 'c1'}={c:g}",
                f"{r['objective']:.2f}",
                f"{r['objective_ours_at_their_weights']:.2f}"
                if "objective_ours_at_their_weights" in r
                else "",
                r["iterations"],
                r.get("grad_evals", ""),
                f"{r['train_seconds']:.1f}",
                f"{r['cpu_seconds']:.1f}",
                C.fmt_int(r["nonzero"]),
                f"{r['f1']:.2f}",
            ]
        )
    print(C.markdown_table(header, rows))
    for pair in (("crf-l2", "crfsuite-l2"), ("crf-l1", "crfsuite-l1")):
        if all(p in results for p in pair):
            a, b = results[pair[0]], results[pair[1]]
            print(
                f"{pair[0]} vs {pair[1]}: objective "
                f"{100 * (a['objective'] / b['objective'] - 1):+.3f} %, "
                f"F1 {a['f1'] - b['f1']:+.2f}, "
                f"time x{a['train_seconds'] / b['train_seconds']:.2f}, "
                f"CPU time x{a['cpu_seconds'] / b['cpu_seconds']:.2f}"
            )
    print(
        f"\n{len(train)} training sentences, {problem.model.n_weights} weights; "
        f"featurisation {t_feat:.1f} s (ours)"
    )
    print("command: " + C.command_line())
    out = Path(args.json) if args.json else C.OUT / ("crf-quick.json" if args.quick else "crf.json")
    C.write_json(out, {"command": C.command_line(), "machine": C.machine(), "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
