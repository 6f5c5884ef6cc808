"""The tagger inside spaCy, and `tagger tag --jobs N`, on CoNLL-2000 chunking.

    python bench/ecosystem.py [--model chunker.tgm] [--repeat 1 10 50] [--runs 3]
                              [--crfsuite-iterations 30]

Table 1 tags CoNLL-2000's test set (pre-tokenized Docs with their POS tags, blank English + our
chunker writing ``doc.spans``) through ``nlp.pipe`` and compares its throughput and labels with
``tagger tag`` on the same file: end to end as a command (start-up included) and warm (the
command's own read -> tag -> write path in this process, after a first run).

Table 2 runs ``tagger tag --jobs 1`` (one core) and ``--jobs 2`` (two worker processes) on the
test file repeated ``--repeat`` times, on one sentence (the start-up), and beside them numba's
own floor (importing numba and loading one cached kernel), each ``--runs`` times: median wall
time, speed-up (also with each command's start-up taken off), identical output, and memory (the
largest single process, from wait4, and the sum over the process tree sampled every 20 ms from
/proc), so that memory independent of input size shows as equal figures at 1x and 10x.
python-crfsuite tags the same files with the script a user would write
(bench/crfsuite_tag.py) as the peer.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", help="a chunker to reuse (default: train one on train.txt)")
    p.add_argument(
        "--repeat",
        type=int,
        nargs="+",
        default=[1, 10, 50],
        help="copies of test.txt in the inputs of table 2",
    )
    p.add_argument(
        "--crfsuite-iterations",
        type=int,
        default=30,
        help="L-BFGS iterations of the python-crfsuite peer (tagging speed only)",
    )
    p.add_argument("--no-crfsuite", action="store_true")
    p.add_argument("--tables", default="spacy,jobs", help="which tables: spacy, jobs or both")
    p.add_argument(
        "--runs",
        type=int,
        default=3,
        help="runs of each --jobs command; the table shows the median wall time "
        "and the largest memory of the runs",
    )
    return p.parse_args(argv)


# ------------------------------------------------------------------ memory of a process tree


def _tree_rss_kb(pid: int) -> int:
    """Sum of VmRSS over ``pid`` and its descendants, from /proc."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in open(f"/proc/{p}/status"):
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
                    break
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    todo.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError):
            continue
    return total


def run_sampled(cmd: list[str]) -> dict:
    """Wall seconds, peak RSS of the largest process and peak summed RSS of the process tree.

    The command runs under ``_common.py --spawn`` (a bare launcher), whose ``wait4`` gives the
    largest process's peak without this process's high-water mark; the launcher's own ~10 MB
    are left out of the tree sum.
    """
    import tempfile

    fd, result = tempfile.mkstemp(suffix=".json", prefix="spawn-")
    os.close(fd)
    proc = subprocess.Popen(
        [sys.executable, str(C.BENCH / "_common.py"), "--spawn", result, "--", *cmd], cwd=C.REPO
    )
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            try:
                with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as fh:
                    kids = [int(c) for c in fh.read().split()]
            except OSError:
                kids = []
            peak[0] = max(peak[0], sum(_tree_rss_kb(k) for k in kids))
            done.wait(0.02)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    code = proc.wait()
    done.set()
    th.join()
    m = json.loads(Path(result).read_text())
    os.unlink(result)
    if code != 0:
        sys.exit(f"failed: {' '.join(cmd)}")
    return {
        "wall": m["wall_seconds"],
        "max_process_mb": m["peak_rss_mb"],
        "tree_mb": peak[0] / 1024,
        "cpu": m["cpu_seconds"],
    }


def run_median(cmd: list[str], runs: int) -> dict:
    """``run_sampled`` ``runs`` times: the run with the median wall time, with the largest
    memory figures of all runs (so a noisy neighbour shows as spread, not as a speed-up)."""
    ms = sorted((run_sampled(cmd) for _ in range(max(1, runs))), key=lambda m: m["wall"])
    out = dict(ms[len(ms) // 2])
    out["max_process_mb"] = max(m["max_process_mb"] for m in ms)
    out["tree_mb"] = max(m["tree_mb"] for m in ms)
    out["walls"] = [m["wall"] for m in ms]
    return out


# ------------------------------------------------------------------ table 1: nlp.pipe


def spacy_table(model: str, test: Path, work: Path) -> tuple[list, dict]:
    import spacy
    from spacy.tokens import Doc

    import tagger.integrations.spacy_component  # noqa: F401  (registers the factory without an install)
    from tagger import Tagger
    from tagger.evaluation.labels import bio_spans
    from tagger.io import gc_paused, load_corpus, read_corpus, write_corpus
    from tagger.io.sources import without_gold

    sents = load_corpus(test)
    n_tok = sum(len(s) for s in sents)
    tg = Tagger.load(model)
    spec = tg.featurizer_.spec

    # tagger tag as a command, end to end
    cli_out = work / "cli.txt"
    m = run_sampled(
        [
            sys.executable,
            "-c",
            "import cli; cli.main()",
            "tag",
            model,
            str(test),
            "-o",
            str(cli_out),
        ]
    )
    cli_tps = n_tok / m["wall"]

    # the command's read -> tag -> write path in this process, warm
    def tag_file():
        buf = io.StringIO()
        with gc_paused():
            ss = without_gold(
                read_corpus(str(test), "auto", labeled=False),
                spec.n_columns,
                ", ".join(spec.columns),
                str(test),
            )
            out_s, out_l = [], []
            for s, labs in tg.tag_stream(ss):
                out_s.append(s)
                out_l.append(labs)
            write_corpus(buf, out_s, out_l, sep=" ")
        return buf

    tag_file()
    warm_tps, _ = C.rate(tag_file, n_tok, min_seconds=3.0)

    nlp = spacy.blank("en")
    nlp.add_pipe(
        "sparse_tagger",
        config={"model": model, "target": "spans", "spans_key": "chunks", "preannotated": True},
    )

    def make_docs():
        return [Doc(nlp.vocab, words=s.columns[0], tags=s.columns[1]) for s in sents]

    def run_pipe(docs):
        return list(nlp.pipe(docs, batch_size=1024))

    run_pipe(make_docs())
    best = 0.0
    t_end = time.perf_counter() + 3.0
    while True:  # Docs are rebuilt outside the timed part: the pipe writes into them
        docs = make_docs()
        t0 = time.perf_counter()
        out = run_pipe(docs)
        best = max(best, n_tok / (time.perf_counter() - t0))
        if time.perf_counter() > t_end:
            break
    pipe_tps = best
    t0 = time.perf_counter()
    out = run_pipe(make_docs())
    with_docs_tps = n_tok / (time.perf_counter() - t0)

    # identical labels: the spans against the chunks of the command's output
    cli_sents = load_corpus(cli_out)
    same = [[(sp.label_, sp.start, sp.end) for sp in d.spans["chunks"]] for d in out] == [
        bio_spans(s.labels) for s in cli_sents
    ]
    rows = [
        ["`tagger tag` command, end to end (start-up included)", C.fmt_int(cli_tps), "", ""],
        [
            "`tagger tag` path in process, warm (read, tag, write)",
            C.fmt_int(warm_tps),
            "100 %",
            "reference",
        ],
        [
            "spaCy `nlp.pipe`, blank English + sparse_tagger, pre-built Docs",
            C.fmt_int(pipe_tps),
            f"{100 * pipe_tps / warm_tps:.0f} %",
            "identical" if same else "DIFFERENT",
        ],
        [
            "spaCy `nlp.pipe` including building the Docs",
            C.fmt_int(with_docs_tps),
            f"{100 * with_docs_tps / warm_tps:.0f} %",
            "",
        ],
    ]
    return rows, {
        "tokens": n_tok,
        "cli_tps": cli_tps,
        "warm_tps": warm_tps,
        "pipe_tps": pipe_tps,
        "pipe_with_docs_tps": with_docs_tps,
        "same": same,
    }


# ------------------------------------------------------------------ table 2: --jobs


def jobs_table(
    model: str, test: Path, work: Path, repeats: list[int], crf_model: str | None, runs: int = 3
):
    data = test.read_bytes()
    n1 = sum(1 for line in data.decode().splitlines() if line.strip())
    tiny = work / "one_sentence.txt"
    tiny.write_bytes(data[: data.index(b"\n\n") + 2])
    tag = [sys.executable, "-c", "import cli; cli.main()", "tag", model]
    start = {
        j: run_median(tag + [str(tiny), "-o", os.devnull, "--jobs", str(j)], runs) for j in (1, 2)
    }
    rows = [
        [
            f"tagger tag --jobs {j}",
            "1 sentence (start-up)",
            "",
            f"{start[j]['wall']:.2f}",
            "",
            "",
            "",
            f"{start[j]['max_process_mb']:.0f}",
            f"{start[j]['tree_mb']:.0f}",
        ]
        for j in (1, 2)
    ]
    raw = {f"startup_j{j}": start[j] for j in (1, 2)}
    # the floor under any start-up: numba imported and one cached kernel loaded, no tagger code
    floor_script = work / "numba_floor.py"
    floor_script.write_text(
        "import numba\n\n\n@numba.njit(cache=True)\ndef one(x):\n    return x + 1\n\n\none(1)\n"
    )
    run_sampled([sys.executable, str(floor_script)])  # compiles and caches the kernel
    floor = run_median([sys.executable, str(floor_script)], runs)
    rows.append(
        [
            "numba alone (import, one cached kernel)",
            "",
            "",
            f"{floor['wall']:.2f}",
            "",
            "",
            "",
            f"{floor['max_process_mb']:.0f}",
            f"{floor['tree_mb']:.0f}",
        ]
    )
    raw["numba_floor"] = floor
    for rep in repeats:
        name = f"{rep}x"
        path = test if rep == 1 else work / f"test_x{rep}.txt"
        if rep != 1:
            path.write_bytes(data * rep)
        n_tok = n1 * rep
        outs = {}
        for jobs in (1, 2):
            out = work / f"out_{name}_j{jobs}.txt"
            outs[jobs] = (
                out,
                run_median(tag + [str(path), "-o", str(out), "--jobs", str(jobs)], runs),
            )
            raw[f"{name}_j{jobs}"] = outs[jobs][1]
        same = outs[1][0].read_bytes() == outs[2][0].read_bytes()
        for jobs in (1, 2):
            m = outs[jobs][1]
            speed = f"{outs[1][1]['wall'] / m['wall']:.2f}x" if jobs == 2 else ""
            rows.append(
                [
                    f"tagger tag --jobs {jobs}",
                    name,
                    C.fmt_int(n_tok),
                    f"{m['wall']:.2f}",
                    C.fmt_int(n_tok / m["wall"]),
                    speed,
                    "" if jobs == 1 else ("identical" if same else "DIFFERENT"),
                    f"{m['max_process_mb']:.0f}",
                    f"{m['tree_mb']:.0f}",
                ]
            )
        if crf_model:
            out = work / f"out_{name}_crf.txt"
            m = run_sampled(
                [sys.executable, str(C.BENCH / "crfsuite_tag.py"), crf_model, str(path), str(out)]
            )
            raw[f"{name}_crf"] = m
            rows.append(
                [
                    "python-crfsuite (bench/crfsuite_tag.py)",
                    name,
                    C.fmt_int(n_tok),
                    f"{m['wall']:.2f}",
                    C.fmt_int(n_tok / m["wall"]),
                    "",
                    "",
                    f"{m['max_process_mb']:.0f}",
                    f"{m['tree_mb']:.0f}",
                ]
            )
        if rep != 1:
            path.unlink()
    return rows, raw


def train_crfsuite(train: Path, work: Path, iterations: int) -> str:
    import pycrfsuite
    from crfsuite_tag import chunk_attributes

    from tagger.io import load_corpus

    tr = pycrfsuite.Trainer(verbose=False)
    for s in load_corpus(train):
        tr.append(chunk_attributes(s.columns[0], s.columns[1]), s.labels)
    tr.set_params({**C.CRFSUITE_L2, "max_iterations": iterations})
    path = str(work / f"crf_l2_it{iterations}.model")
    tr.train(path)
    return path


def main(argv=None) -> int:
    args, mach = C.begin(sys.argv[1:] if argv is None else argv, parse_args)
    corp = C.corpora()
    train, test = corp / "conll2000" / "train.txt", corp / "conll2000" / "test.txt"
    work = C.OUT / "ecosystem"
    work.mkdir(parents=True, exist_ok=True)
    model = args.model
    if model is None:
        model = str(work / "chunker.tgm")
        t0 = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import cli; cli.main()",
                "train",
                str(train),
                "-o",
                model,
                "-q",
            ],
            cwd=C.REPO,
            check=True,
        )
        print(f"trained {model} (defaults) in {time.perf_counter() - t0:.1f} s", flush=True)
    crf = None
    if "jobs" not in args.tables:
        args.no_crfsuite = True
    if not args.no_crfsuite and (work / f"crf_l2_it{args.crfsuite_iterations}.model").exists():
        crf = str(work / f"crf_l2_it{args.crfsuite_iterations}.model")
        print(f"reusing {crf}", flush=True)
    elif not args.no_crfsuite:
        t0 = time.perf_counter()
        crf = train_crfsuite(train, work, args.crfsuite_iterations)
        print(
            f"trained the python-crfsuite peer ({args.crfsuite_iterations} L-BFGS "
            f"iterations) in {time.perf_counter() - t0:.1f} s",
            flush=True,
        )
    print(f"load average before: {C.load_average()}", flush=True)

    tables = set(args.tables.split(","))
    raw1 = raw2 = None
    if "spacy" in tables:
        rows1, raw1 = spacy_table(model, test, work)
        print(
            "\nTagging CoNLL-2000 test.txt (2,012 sentences, 47,377 tokens), tokens per second:\n"
        )
        print(C.markdown_table(["path", "tokens/s", "of `tagger tag` warm", "labels"], rows1))
    if "jobs" in tables:
        rows2, raw2 = jobs_table(model, test, work, args.repeat, crf, args.runs)
        print(
            f"\n`tagger tag --jobs N` on test.txt repeated {args.repeat} times (median wall "
            f"time of {args.runs} runs):\n"
        )
        print(
            C.markdown_table(
                [
                    "system",
                    "input",
                    "tokens",
                    "wall s",
                    "tokens/s",
                    "speed-up vs --jobs 1",
                    "output",
                    "largest process MB",
                    "process tree MB",
                ],
                rows2,
            )
        )
    print(f"\nload average after: {C.load_average()}")
    C.write_json(
        work / "result.json",
        {"machine": mach, "spacy": raw1, "jobs": raw2, "command": C.command_line()},
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
