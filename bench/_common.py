"""Shared by the benchmarks: training workers in their own processes, the machine, tables.

Keep the top-level imports to the standard library: a worker process imports this module,
and its peak RSS should hold what its system needs (numba alone adds about 110 MB).
"""

from __future__ import annotations

import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
OUT = BENCH / "out"

#: python-crfsuite's own defaults (lbfgs) that we state in the rows; everything else is default
CRFSUITE_L2 = {"c1": 0.0, "c2": 1.0}
CRFSUITE_L1 = {"c1": 1.0, "c2": 0.0}


# ------------------------------------------------------------------ environment


def corpora() -> Path:
    from tagger._config import corpora_dir

    d = corpora_dir()
    known = ("conll2000/train.txt", "ud_english_gum", "citations")
    if not any((d / k).exists() for k in known):
        sys.exit(f"the real corpora are not in {d}; set TAGGER_CORPORA (see corpora/README.md)")
    return d


def command_line() -> str:
    """The exact command that reproduces this run."""
    env = (
        f"TAGGER_CORPORA={shlex.quote(os.environ['TAGGER_CORPORA'])} "
        if os.environ.get("TAGGER_CORPORA")
        else ""
    )
    script = os.path.relpath(os.path.abspath(sys.argv[0]), REPO)
    return (
        f"cd {shlex.quote(str(REPO))} && {env}{shlex.join([sys.executable, script, *sys.argv[1:]])}"
    )


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "absent"


def _commit() -> tuple[str, str]:
    """The checkout's short commit and whether tagger/ has changes; where the tree is a copy
    without git (a borrowed machine), ``BENCH_COMMIT`` names the commit it was copied from."""
    try:
        git = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", "tagger", "cli.py"],
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        git, dirty = "", ""
    return git or os.environ.get("BENCH_COMMIT", ""), dirty


def machine() -> dict:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import numba

    try:
        import pycrfsuite

        crfsuite = getattr(pycrfsuite, "CRFSUITE_VERSION", "?")
    except ImportError:  # bench/threads.py runs without the peer, on machines without it
        crfsuite = "absent"
    git, dirty = _commit()
    return {
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)),
        "cpu": cpu,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "numba": _version("numba"),
        "numba_threads": numba.get_num_threads(),
        "python-crfsuite": _version("python-crfsuite"),
        "crfsuite": crfsuite,
        "tagger": _version("sparse-m3n-tagger"),
        "commit": git + (" + uncommitted changes in tagger/ or cli.py" if dirty else ""),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def machine_lines(m: dict) -> list[str]:
    return [
        f"machine: {m['cores']} cores ({m['usable_cores']} usable, numba threads "
        f"{m['numba_threads']}), {m['cpu']}, {m['platform']}",
        f"versions: Python {m['python']}, numpy {m['numpy']}, numba {m['numba']}, "
        f"python-crfsuite {m['python-crfsuite']} (CRFsuite {m['crfsuite']}), tagger "
        f"{m['tagger']} at {m['commit']}",
        f"load average at start: {' '.join(map(str, m['load_average_at_start']))} "
        "(timings are noisy when it is above ~0.5)",
    ]


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# ------------------------------------------------------------------ corpora


def load(spec: dict) -> list:
    """Sentences described by ``spec``: ``path``, ``format``, optional ``label_column``,
    ``keep_columns`` (input columns kept, from the first) and ``limit`` (first sentences)."""
    from tagger.io import load_corpus

    opts = {"label_column": spec["label_column"]} if spec.get("label_column") is not None else {}
    sents = load_corpus(spec["path"], format=spec.get("format", "auto"), **opts)
    if spec.get("limit"):
        sents = sents[: spec["limit"]]
    keep = spec.get("keep_columns")
    if keep:
        for s in sents:
            del s.columns[keep:]
    return sents


def attribute_function(preset: str, kind: str):
    """A ``Sentence -> list of attribute-string lists`` function for python-crfsuite.

    ``featurizer``: ``Featurizer.string_attributes`` of the preset (imports numba);
    ``handwritten``: ``crfsuite_tag.chunk_attributes`` (the ``chunk`` preset only).
    """
    if kind == "handwritten":
        if preset != "chunk":
            raise ValueError("the hand-written attribute function covers the chunk preset only")
        from crfsuite_tag import chunk_attributes

        return lambda s: chunk_attributes(s.columns[0], s.columns[1])
    from tagger.features import PRESETS, FeatureSpec, Featurizer

    spec = FeatureSpec.load(preset)
    if spec.has_pairs:  # CRFsuite has no label-pair features: it gets the ordinary templates
        table = {k: v for k, v in spec.source["featurizer"].items() if k != "pair_templates"}
        base = None if preset in PRESETS else Path(preset).parent
        spec = FeatureSpec.from_dict({**spec.source, "featurizer": table}, spec.name, base=base)
    return Featurizer(spec).string_attributes


# ------------------------------------------------------------------ training workers


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _prepare_ours(job: dict):
    from tagger.api import Tagger

    def train(sentences: list) -> dict:
        tg = Tagger(
            features=job["features"],
            learner=job["learner"],
            params=job["params"],
            seed=job.get("seed", 0),
            select=False,
        )
        t0 = time.perf_counter()
        tg.fit(sentences)
        seconds = time.perf_counter() - t0
        size = tg.save(job["model"])
        info = tg.info_
        return {
            "train_seconds": seconds,
            "model_bytes": size,
            "learner_train_seconds": info.get("train_seconds"),
            "featurize_seconds": info.get("featurize_seconds"),
            "params": info.get("params"),
            "n_params": info.get("n_params"),
            "n_nonzero": info.get("n_nonzero"),
            "final": info.get("final"),
        }

    return train


def _prepare_crfsuite(job: dict):
    import pycrfsuite

    attributes = attribute_function(job["features"], job["attributes"])

    def train(sentences: list) -> dict:
        trainer = pycrfsuite.Trainer(algorithm="lbfgs", params=job["params"], verbose=False)
        t0 = time.perf_counter()
        for s in sentences:
            trainer.append(attributes(s), s.labels)
        t_append = time.perf_counter() - t0
        trainer.train(job["model"])
        seconds = time.perf_counter() - t0
        log = trainer.logparser
        last = log.last_iteration or {}
        active = None
        for line in (log.last_log or "").splitlines():
            if line.startswith("Number of active features:"):
                active = int(line.split(":")[1].split()[0])
        return {
            "train_seconds": seconds,
            "attributes_and_append_seconds": t_append,
            "model_bytes": os.path.getsize(job["model"]),
            "params": trainer.get_params(),
            "iterations": len(log.iterations),
            "final_loss": last.get("loss"),
            "active_features": active,
        }

    return train


def worker_main(job_path: str) -> int:
    """Run one training job (JSON file) and write its result next to it."""
    job = json.loads(Path(job_path).read_text())
    train = (_prepare_ours if job["system"] == "ours" else _prepare_crfsuite)(job)
    from tagger.io import load_corpus  # noqa: F401  (counted with the imports)

    after_imports = _maxrss_mb()
    sentences = load(job["train"])
    after_reading = _maxrss_mb()
    result = train(sentences)
    result.update(
        rss_after_imports_mb=round(after_imports, 1),
        rss_after_reading_mb=round(after_reading, 1),
        n_train_sentences=len(sentences),
        n_train_tokens=sum(len(s) for s in sentences),
    )
    Path(job_path).with_suffix(".result.json").write_text(json.dumps(result))
    return 0


def measured(cmd: list[str], what: str) -> dict:
    """Run ``cmd`` to completion; its wall seconds, CPU seconds and peak RSS (MB).

    The command is started by a small launcher process (``_common.py --spawn``), not by this
    one: on Linux a child's ``ru_maxrss`` starts from the RSS of the process that forked it
    (the kernel carries the old memory's high-water mark across ``exec``), so a child of a
    benchmark process that holds corpora and numba would inherit its size. The launcher is a
    bare Python (~10 MB), times the command and reads ``wait4``'s ``ru_maxrss``.
    """
    fd, path = tempfile.mkstemp(suffix=".json", prefix="spawn-")
    os.close(fd)
    try:
        code = subprocess.call(
            [sys.executable, str(BENCH / "_common.py"), "--spawn", path, "--", *cmd], cwd=REPO
        )
        if code != 0:
            sys.exit(f"{what} failed (exit {code}): {shlex.join(cmd)}")
        return json.loads(Path(path).read_text())
    finally:
        os.unlink(path)


def _spawn_main(argv: list[str]) -> int:
    """``--spawn RESULT -- CMD...``: run CMD, write its wall time and rusage to RESULT."""
    result_path, cmd = argv[0], argv[2:]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    Path(result_path).write_text(
        json.dumps(
            {
                "wall_seconds": wall,
                "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
                "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
                "exit": code,
            }
        )
    )
    return code


def run_worker(script: str, job: dict, workdir: Path, name: str) -> dict:
    """Train in a fresh process (``script --worker JOB``) and add its peak RSS."""
    job_path = workdir / f"{name}.job.json"
    job_path.write_text(json.dumps(job))
    m = measured(
        [sys.executable, script, "--worker", str(job_path)], f"the training worker for {name}"
    )
    result = json.loads(job_path.with_suffix(".result.json").read_text())
    result["peak_rss_mb"] = m["peak_rss_mb"]
    result["worker_wall_seconds"] = round(m["wall_seconds"], 2)
    result["cpu_seconds"] = m["cpu_seconds"]
    return result


def maybe_worker(argv: list[str]) -> None:
    """``--worker JOB`` as the first arguments: run the job and exit."""
    if len(argv) >= 2 and argv[0] == "--worker":
        sys.path.insert(0, str(BENCH))
        sys.exit(worker_main(argv[1]))


# ------------------------------------------------------------------ timing helpers


def timed_subprocess(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of a command run to completion (see :func:`measured`)."""
    m = measured(cmd, "command")
    return m["wall_seconds"], m["peak_rss_mb"]


def rate(fn, n_tokens: int, min_seconds: float = 1.0) -> tuple[float, int]:
    """Tokens per second of ``fn()`` (which handles ``n_tokens``), repeated for >= min_seconds
    after one untimed warm-up call; returns (tokens/s, repetitions)."""
    fn()
    reps = 0
    t0 = time.perf_counter()
    while True:
        fn()
        reps += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= min_seconds:
            return reps * n_tokens / elapsed, reps


def crfsuite_model_counts(model_path: str) -> dict:
    """Non-zero weights of a CRFsuite model from ``Tagger.info()``.

    CRFsuite stores only features whose weight is non-zero, so every entry of
    ``state_features`` and ``transitions`` is one. ``info()`` reads the weights from the
    model dump, printed with six decimals: ``printed_zero`` counts stored weights that print
    as 0.000000 (tiny but non-zero).
    """
    import pycrfsuite

    tg = pycrfsuite.Tagger()
    tg.open(model_path)
    info = tg.info()
    state, trans = info.state_features, info.transitions
    printed_zero = sum(1 for v in state.values() if v == 0) + sum(
        1 for v in trans.values() if v == 0
    )
    tg.close()
    return {
        "n_nonzero": len(state) + len(trans),
        "state_features": len(state),
        "transitions": len(trans),
        "printed_zero": printed_zero,
        "attributes": len(info.attributes),
        "labels": len(info.labels),
    }


# ------------------------------------------------------------------ output


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def fmt_int(x) -> str:
    return "–" if x is None else f"{int(round(x)):,}"


def fmt_pct(x, digits: int = 2) -> str:
    return "–" if x is None else f"{100 * x:.{digits}f}"


def fmt_params(params: dict) -> str:
    def show(v):
        return f"{v:g}" if isinstance(v, float) else str(v)

    return " ".join(f"{k}={show(v)}" for k, v in params.items())


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str) + "\n")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--spawn" and sys.argv[3] == "--":
        sys.exit(_spawn_main(sys.argv[2:]))
    sys.exit("usage: _common.py --spawn RESULT.json -- COMMAND...")


def begin(argv: list[str], parse_args) -> tuple:
    """Common start of a benchmark script: serve a worker job if asked to, otherwise parse the
    arguments and print the reproducing command and the machine. Returns (args, machine)."""
    maybe_worker(argv)
    args = parse_args(argv)
    print(f"$ {command_line()}")
    mach = machine()
    for line in machine_lines(mach):
        print(line)
    print(flush=True)
    return args, mach
