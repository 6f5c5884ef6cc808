"""CoNLL-2000 chunking: this project's learners against python-crfsuite, side by side.

    python bench/chunking.py [--systems ours,m3n-l2,m3n-em,crfsuite-l2,crfsuite-l1]
                             [--repeat 50] [--set [LEARNER:]key=value ...] [--quick] [--json PATH]

A system is ``ours`` (the L1-M3N by projected subgradient, ``m3n-subgradient``), any learner
registered in ``tagger.learners.LEARNERS`` by its name (``m3n-l2``, ``m3n-em``, ...), or
``crfsuite-l2`` / ``crfsuite-l1``. Learner rows train with the settings in ``BENCH_PARAMS``
(chosen on a dev split carved from train.txt, never on test.txt) unless ``--set
LEARNER:key=value`` overrides them; a plain ``--set key=value`` is for the ``ours`` row.

Every system is trained on CoNLL-2000 train.txt with the ``chunk`` preset's templates (the
CRFsuite rows get the same attributes as strings) in its own process, so that its peak RSS
(``wait4``'s ``ru_maxrss``) is its own, and evaluated on test.txt with
``tagger.evaluation.metrics.evaluate`` (conlleval's chunk F1). Columns:

- training seconds: ``Tagger.fit`` (featurisation + learning) for ours; building the
  attribute strings + ``Trainer.append`` + ``Trainer.train`` for CRFsuite;
- tagging tokens/s end to end: test.txt repeated ``--repeat`` times, tagged by a fresh process
  from raw CoNLL lines to written labels: ``tagger tag MODEL INPUT -o OUTPUT`` for ours,
  ``bench/crfsuite_tag.py`` (what a python-crfsuite user writes) for CRFsuite;
- tagging tokens/s decode-only: scoring and Viterbi (``ChainModel.state_scores``,
  ``tagger.inference.max_product.viterbi_batch_into``) on the featurized test set for ours,
  ``Tagger.tag`` over ``ItemSequence`` objects built beforehand for CRFsuite;
- non-zero weights: ``Tagger.n_nonzero_``; CRFsuite's stored state features + transitions
  (``Tagger.info()``; CRFsuite stores only non-zero weights);
- model bytes: the saved model file; peak RSS: the training process.

``--quick`` trains on the first 2000 sentences and tags test.txt x 5 (a smoke run).
Results also go to ``bench/out/chunking.json`` (``chunking-quick.json`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

CRFSUITE_SYSTEMS = ("crfsuite-l2", "crfsuite-l1")
SYSTEMS = ("ours", "m3n-l2", "m3n-em") + CRFSUITE_SYSTEMS  # the default rows
LEARNER = "m3n-subgradient"
#: settings of the learner rows, chosen on a dev split of train.txt (docs/benchmarks.md)
BENCH_PARAMS: dict[str, dict] = {
    # a larger ball with its tail of small weights cut (see m3n_subgradient's docstring)
    "m3n-subgradient": {"radius": 8000.0, "max_nonzero": 40000},
    "m3n-l2": {"C": 0.1, "epochs": 10},
    "m3n-em": {"lambda": 200.0},
}
CRFSUITE_PARAMS = {"crfsuite-l2": C.CRFSUITE_L2, "crfsuite-l1": C.CRFSUITE_L1}
ROW_NAMES = {
    "ours": "ours: L1-M3N (m3n-subgradient)",
    "crfsuite-l2": "python-crfsuite L-BFGS, L2 c2=1",
    "crfsuite-l1": "python-crfsuite L-BFGS, L1 c1=1",
}
QUICK_SENTENCES = 2000


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--systems",
        default=",".join(SYSTEMS),
        help=f"comma-separated rows among ours, crfsuite-l2, crfsuite-l1 and the "
        f"learner names of `tagger learners` (default {','.join(SYSTEMS)})",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=None,
        help="copies of test.txt in the end-to-end tagging file (default 50; 5 with --quick)",
    )
    p.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"a parameter of the ours row ({LEARNER}), or LEARNER:key=value for "
        f"a learner row; repeatable",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"train on the first {QUICK_SENTENCES} sentences, repeat 5",
    )
    p.add_argument("--json", default=None, help="where to write the results")
    args = p.parse_args(argv)
    from tagger.errors import ParameterError
    from tagger.learners import LEARNERS, get_learner

    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    known = ("ours",) + CRFSUITE_SYSTEMS + tuple(sorted(LEARNERS))
    bad = [s for s in args.systems if s not in known]
    if bad or not args.systems:
        p.error(f"unknown system(s) {bad}; choose among {', '.join(known)}")
    if args.repeat is None:
        args.repeat = 5 if args.quick else 50
    if args.repeat < 1:
        p.error("--repeat must be >= 1")
    # per-row settings: "key=value" for ours, "learner:key=value" for a learner row
    by_row: dict[str, list[str]] = {}
    for item in args.settings:
        head = item.split("=", 1)[0]
        row, _, key = head.rpartition(":")
        row = row or "ours"
        if row not in known or row in CRFSUITE_SYSTEMS:
            p.error(f"--set {item}: {row!r} is not a learner row")
        by_row.setdefault(row, []).append(item.split(":", 1)[1] if ":" in head else item)
    args.row_params = {}
    try:
        for system in args.systems:
            if system in CRFSUITE_SYSTEMS:
                continue
            cls = get_learner(learner_of(system))
            base = dict(BENCH_PARAMS.get(learner_of(system), {}))
            base.update(cls.parse_settings(by_row.get(system, [])))
            cls(**base).validated()
            args.row_params[system] = base
    except ParameterError as exc:
        p.error(str(exc))
    args.params = args.row_params.get("ours", {})
    return args


def learner_of(system: str) -> str:
    return LEARNER if system == "ours" else system


def is_ours(system: str) -> bool:
    return system not in CRFSUITE_SYSTEMS


def row_name(system: str) -> str:
    if system in ROW_NAMES:
        return ROW_NAMES[system]
    from tagger.learners import get_learner

    doc = (get_learner(system).__doc__ or system).strip().splitlines()[0].rstrip(".")
    return f"ours: {doc} ({system})"


def log(msg: str) -> None:
    print(f"# {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------- pieces


def choose_crfsuite_attributes(test) -> dict:
    """Check that the hand-written attribute function equals Featurizer.string_attributes
    on the test set, time both, and pick the faster (fair to CRFsuite)."""
    times = {}
    outputs = {}
    n_tok = sum(len(s) for s in test)
    for kind in ("handwritten", "featurizer"):
        fn = C.attribute_function("chunk", kind)
        fn(test[0])
        t0 = time.perf_counter()
        outputs[kind] = [fn(s) for s in test]
        times[kind] = time.perf_counter() - t0
    if outputs["handwritten"] != outputs["featurizer"]:
        sys.exit(
            "bench/crfsuite_tag.py: chunk_attributes differs from "
            "Featurizer.string_attributes; fix it before comparing"
        )
    best = min(times, key=times.get)
    return {"chosen": best, "tokens_per_s": {k: round(n_tok / v) for k, v in times.items()}}


def evaluate_ours(model_path: str, test, gold) -> dict:  # any of our learners
    import numba
    import numpy as np

    from tagger.api import Tagger
    from tagger.evaluation.metrics import evaluate
    from tagger.inference.max_product import viterbi_batch_into

    tg = Tagger.load(model_path)
    pred = tg.predict(test)
    m = evaluate(gold, pred)
    n_tok = m["n_tokens"]
    feat_rate, _ = C.rate(lambda: tg.featurize(test), n_tok)
    X = tg.featurize(test)

    def decode():  # scoring and Viterbi on features already built (the unchecked kernel)
        state = tg.model_.state_scores(X, tg.weights_)
        trans = np.ascontiguousarray(tg.model_.transitions(tg.weights_))
        viterbi_batch_into(
            state, X.offsets, trans, np.empty(X.n_tokens, dtype=np.int32), np.empty(X.n_sentences)
        )

    decode_rate, reps = C.rate(decode, n_tok)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        decode_rate_1, _ = C.rate(decode, n_tok)
    finally:
        numba.set_num_threads(threads)
    return {
        "f1": m["f1"],
        "accuracy": m["accuracy"],
        "precision": m["precision"],
        "recall": m["recall"],
        "n_nonzero": tg.n_nonzero_,
        "decode_tokens_per_s": decode_rate,
        "decode_repetitions": reps,
        "decode_tokens_per_s_1_thread": decode_rate_1,
        "numba_threads": threads,
        "featurize_tokens_per_s": feat_rate,
    }


def evaluate_crfsuite(model_path: str, test, gold, attributes: str) -> dict:
    import pycrfsuite

    from tagger.evaluation.metrics import evaluate

    fn = C.attribute_function("chunk", attributes)
    tagger = pycrfsuite.Tagger()
    tagger.open(model_path)
    xseqs = [fn(s) for s in test]
    pred = [tagger.tag(x) for x in xseqs]
    m = evaluate(gold, pred)
    n_tok = m["n_tokens"]
    feat_rate, _ = C.rate(lambda: [fn(s) for s in test], n_tok)
    items = [pycrfsuite.ItemSequence(x) for x in xseqs]
    tag = tagger.tag
    decode_rate, reps = C.rate(lambda: [tag(x) for x in items], n_tok)
    tagger.close()
    out = {
        "f1": m["f1"],
        "accuracy": m["accuracy"],
        "precision": m["precision"],
        "recall": m["recall"],
        "decode_tokens_per_s": decode_rate,
        "decode_repetitions": reps,
        "featurize_tokens_per_s": feat_rate,
    }
    out.update(C.crfsuite_model_counts(model_path))
    return out


def make_tagging_file(test_path: Path, repeat: int, workdir: Path) -> tuple[Path, Path, int, int]:
    data = test_path.read_bytes()
    if not data.endswith(b"\n\n"):
        data = data.rstrip(b"\n") + b"\n\n"
    big = workdir / f"test_x{repeat}.txt"
    with open(big, "wb") as fh:
        for _ in range(repeat):
            fh.write(data)
    n_tokens = repeat * sum(1 for line in data.split(b"\n") if line.strip())
    n_lines = repeat * data.count(b"\n")
    small = workdir / "warmup.txt"
    small.write_bytes(b"\n\n".join(data.split(b"\n\n")[:200]) + b"\n\n")
    return big, small, n_tokens, n_lines


def check_tagged(inp: Path, out: Path, n_lines: int) -> dict:
    """Same number of lines as the input; accuracy of the last field against the gold one."""
    lines = correct = tokens = 0
    with open(inp, encoding="utf-8") as fi, open(out, encoding="utf-8") as fo:
        for a, b in zip(fi, fo):
            lines += 1
            fa, fb = a.split(), b.split()
            if fa:
                tokens += 1
                correct += fa[-1] == fb[-1] and fa[0] == fb[0]
        rest = sum(1 for _ in fo)
    return {
        "output_lines": lines + rest,
        "input_lines": n_lines,
        "lines_match": lines + rest == n_lines and lines == n_lines,
        "accuracy": correct / tokens if tokens else 0.0,
    }


def tag_command(system: str, model: str, inp: Path, out: Path, attributes: str) -> list[str]:
    if is_ours(system):
        exe = Path(sys.executable).parent / "tagger"
        if not exe.exists():
            import shutil

            exe = shutil.which("tagger") or sys.exit("the tagger command is not installed")
        return [str(exe), "tag", model, str(inp), "-o", str(out)]
    return [
        sys.executable,
        str(C.BENCH / "crfsuite_tag.py"),
        model,
        str(inp),
        str(out),
        "--features",
        attributes,
    ]


# ---------------------------------------------------------------------- main


def main(argv) -> int:
    args, mach = C.begin(argv, parse_args)

    d = C.corpora()
    train_spec = {
        "path": str(d / "conll2000" / "train.txt"),
        "format": "conll",
        "limit": QUICK_SENTENCES if args.quick else None,
    }
    test = C.load({"path": str(d / "conll2000" / "test.txt"), "format": "conll"})
    gold = [s.labels for s in test]

    crf_attr = None
    if any(not is_ours(s) for s in args.systems):
        crf_attr = choose_crfsuite_attributes(test)
        log(
            f"CRFsuite attribute strings: {crf_attr['chosen']} (tokens/s "
            f"{crf_attr['tokens_per_s']}); identical lists from both functions"
        )

    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench-chunking-") as tmp:
        work = Path(tmp)
        for system in args.systems:
            model = str(work / (f"{system}.tgm" if is_ours(system) else f"{system}.crfsuite"))
            if is_ours(system):
                job = {
                    "system": "ours",
                    "features": "chunk",
                    "learner": learner_of(system),
                    "params": args.row_params[system],
                    "seed": 0,
                    "train": train_spec,
                    "model": model,
                }
            else:
                job = {
                    "system": "crfsuite",
                    "features": "chunk",
                    "attributes": crf_attr["chosen"],
                    "params": CRFSUITE_PARAMS[system],
                    "train": train_spec,
                    "model": model,
                }
            log(f"training {system} (load average {C.load_average()})")
            r = C.run_worker(str(Path(__file__).resolve()), job, work, system)
            log(f"{system}: trained in {r['train_seconds']:.1f} s, peak RSS {r['peak_rss_mb']} MB")
            r["load_average_after_training"] = C.load_average()
            if is_ours(system):
                r.update(evaluate_ours(model, test, gold))
            else:
                r.update(evaluate_crfsuite(model, test, gold, crf_attr["chosen"]))
            r["model"] = model
            results[system] = r

        big, small, n_tokens, n_lines = make_tagging_file(
            d / "conll2000" / "test.txt", args.repeat, work
        )
        log(f"end-to-end tagging of {n_tokens:,} tokens ({args.repeat} x test.txt)")
        for system in args.systems:
            r = results[system]
            attr = crf_attr["chosen"] if crf_attr else None
            C.timed_subprocess(tag_command(system, r["model"], small, work / "warm.out", attr))
            out = work / f"{system}.tagged"
            r["load_average_before_tagging"] = C.load_average()
            cmd = tag_command(system, r["model"], big, out, attr)
            wall, rss = C.timed_subprocess(cmd)
            r["e2e_command"] = cmd
            r["e2e_seconds"] = wall
            r["e2e_tokens"] = n_tokens
            r["e2e_tokens_per_s"] = n_tokens / wall
            r["e2e_peak_rss_mb"] = round(rss, 1)
            r["e2e_check"] = check_tagged(big, out, n_lines)
            out.unlink()
            log(f"{system}: {n_tokens / wall:,.0f} tokens/s end to end ({wall:.2f} s)")
            del r["model"]

    rows = []
    for system in args.systems:
        r = results[system]
        if is_ours(system):
            params = f"{learner_of(system)} {C.fmt_params(r['params'])} seed=0"
        else:
            params = (
                f"lbfgs {C.fmt_params(CRFSUITE_PARAMS[system])}, CRFsuite defaults "
                f"otherwise ({r['iterations']} iterations)"
            )
        rows.append(
            [
                row_name(system),
                C.fmt_pct(r["f1"]),
                C.fmt_pct(r["accuracy"]),
                f"{r['train_seconds']:.1f}",
                C.fmt_int(r["e2e_tokens_per_s"]),
                C.fmt_int(r["decode_tokens_per_s"]),
                C.fmt_int(r["n_nonzero"]),
                C.fmt_int(r["model_bytes"]),
                f"{r['peak_rss_mb']:.0f}",
                params,
            ]
        )
    header = [
        "system",
        "chunk F1",
        "token acc",
        "train s",
        "tag tok/s end-to-end",
        "tag tok/s decode-only",
        "non-zero weights",
        "model bytes",
        "peak RSS MB (training)",
        "parameters",
    ]
    n_train = next(iter(results.values()))["n_train_sentences"]
    print(
        f"CoNLL-2000 chunking: train {n_train:,} sentences"
        f"{' (--quick)' if args.quick else ''}, test 2,012 sentences / 47,377 tokens; "
        f"end-to-end tagging file = test.txt x {args.repeat} ({n_tokens:,} tokens)"
    )
    print()
    print(C.markdown_table(header, rows))
    print()
    notes = []
    for system in [s for s in args.systems if is_ours(s)]:
        r = results[system]
        notes.append(
            f"{system}: learner time (info_['train_seconds']) {r['learner_train_seconds']} s, "
            f"featurisation {r['featurize_seconds']} s; decode-only uses "
            f"{r['numba_threads']} numba threads ({C.fmt_int(r['decode_tokens_per_s_1_thread'])}"
            f" tokens/s with 1 thread); {C.fmt_int(r['n_params'])} parameters before "
            f"compaction"
        )
    for system in args.systems:
        if is_ours(system):
            continue
        r = results[system]
        notes.append(
            f"{system}: attributes+append {r['attributes_and_append_seconds']:.1f} s of "
            f"the training time; {r['state_features']:,} state features + "
            f"{r['transitions']} transitions stored ({r['printed_zero']} print as "
            f"0.000000 in info()); decode-only is Tagger.tag over prebuilt ItemSequence "
            f"(single-threaded)"
        )
    if crf_attr:
        notes.append(
            f"CRFsuite attribute strings built by the {crf_attr['chosen']} function "
            f"(the faster of the two, identical output; tokens/s {crf_attr['tokens_per_s']})"
        )
        crf_params = next(r for s, r in results.items() if not is_ours(s))["params"]
        notes.append(
            "CRFsuite parameters besides c1/c2 (its defaults): "
            + C.fmt_params({k: v for k, v in crf_params.items() if k not in ("c1", "c2")})
        )
    for system in args.systems:
        chk = results[system]["e2e_check"]
        acc = results[system]["accuracy"]
        ok = chk["lines_match"] and abs(chk["accuracy"] - acc) < 1e-12
        notes.append(
            f"{system} end-to-end output: {chk['output_lines']:,} lines for "
            f"{chk['input_lines']:,} input lines, accuracy {100 * chk['accuracy']:.2f}"
            f"{'' if ok else '  <-- MISMATCH'}"
        )
    notes.append(f"load average at end: {' '.join(map(str, C.load_average()))}")
    for n in notes:
        print(f"- {n}")

    path = (
        Path(args.json)
        if args.json
        else C.OUT / ("chunking-quick.json" if args.quick else "chunking.json")
    )
    C.write_json(
        path,
        {
            "command": C.command_line(),
            "machine": mach,
            "quick": args.quick,
            "repeat": args.repeat,
            "n_tagging_tokens": n_tokens,
            "crfsuite_attributes": crf_attr,
            "systems": results,
        },
    )
    print(f"\nresults: {os.path.relpath(path, C.REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
