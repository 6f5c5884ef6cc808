"""The 5-split table of bench/lp_paper.py, built from its split files:

    python bench/lp_paper.py --table [--commit SHA] [--out-dir DIR]

This module reads and checks the split files, chooses the commit, checks that its files were
trained with the same settings, and renders the table; bench/lp_paper.py, which runs one split
and writes its file, dispatches ``--table`` here. It also holds what the two share (the
table's corpora, splits and rows, the published numbers, a split file's name, the
:class:`Usage` error and :func:`split_command`), so that bench/lp_paper.py imports this module
and this module imports nothing of it.

``--table`` builds the whole table from the split files in DIR of one commit (``--commit``, a
prefix of the hash; default the newest commit that has a split file there: by commit date
where git knows every commit found, else the one whose file was written last): per corpus and
learner the mean ± sample standard deviation over the splits present of Err_all, Err_voc, CPU
and wall seconds and iterations, how many converged, the published rows beside, then each
file's machine and load averages. It names on stderr and in the table the (corpus, split)
files missing for that commit, each with the command that makes it. Files of another commit
are never mixed in, nor files of one commit trained with other settings (exit 2). No split
file, or an unreadable one, is one line on stderr and exit status 2.
"""

from __future__ import annotations

import json
import re
import shlex
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

# ------------------------------------------------------------------ shared with bench/lp_paper.py

#: the paper's table: Err_all, Err_voc (mean, sd), CPU seconds, iterations (8 x 3.0 GHz Xeon)
PUBLISHED = {
    "HMM": ((20.02, 0.29), (14.44, 0.19), None, None),
    "MIRA": ((4.91, 0.06), (1.96, 0.12), 9084, 46),
    "Perceptron": ((5.38, 0.19), (2.10, 0.07), 26, 100),
    "LP-Simplex": ((4.94, 0.18), (1.96, 0.14), 3879, 23),
    "LP-Xgrad": ((4.92, 0.13), (1.98, 0.12), 856, 14),
    "CRF": ((4.58, 0.14), (1.81, 0.19), 51403, 205),
}
LEARNERS = ("hmm", "perceptron", "mira", "lp-extragradient", "lp-simplex", "crf-l2", "m3n-owlqn")
POOL, TRAIN = 6700, 5700
CORPORA = ("conll2000", "gum")
N_SPLITS = 5
#: a split's file in the output folder
FILE = "lp-paper-{corpus}-split{split}.json"
FILE_RE = re.compile(r"lp-paper-(?P<corpus>[a-z0-9]+)-split(?P<split>[0-9]+)\.json")


class Usage(Exception):
    """Bad input: one line on stderr, exit status 2."""


def split_command(corpus: str, split: int, options=(), out_dir: Path | None = None) -> str:
    """The command that (re)makes one split's file."""
    extra = list(options)
    if out_dir is not None and Path(out_dir).resolve() != C.OUT.resolve():
        extra += ["--out-dir", str(out_dir)]
    return shlex.join(
        ["python", "bench/lp_paper.py", "--corpus", corpus, "--split", str(split), *extra]
    )


# ------------------------------------------------------------------ one corpus's table


def _cell(values: list[float], digits: int = 2) -> str:
    if not values:
        return "-"
    sd = f" ± {statistics.stdev(values):.{digits}f}" if len(values) > 1 else ""
    return f"{statistics.mean(values):.{digits}f}{sd}"


def _learner_order(runs: list[dict]) -> list[str]:
    seen = [r["learner"] for run in runs for r in run["results"]]
    return [n for n in LEARNERS if n in seen] + [
        n for n in dict.fromkeys(seen) if n not in LEARNERS
    ]


def corpus_table(corpus: str, runs: list[dict]) -> str:
    """The table of one corpus from the split files ``runs`` (one commit, one setting): a row
    per learner, each cell the mean ± sample standard deviation over the splits that hold it,
    then the published rows."""
    rows = []
    for n in _learner_order(runs):
        rs = [r for run in runs for r in run["results"] if r["learner"] == n]
        rows.append(
            [
                n,
                _cell([r["err_all"] for r in rs]),
                _cell([r["err_voc"] for r in rs]),
                _cell([r["cpu_s"] for r in rs], 1),
                _cell([r["wall_s"] for r in rs], 1),
                _cell([r["iterations"] for r in rs], 1),
                f"{sum(bool(r['converged']) for r in rs)}/{len(rs)}",
                ", ".join(str(r["split"]) for r in sorted(rs, key=lambda r: r["split"])),
            ]
        )
    for name, (ea, ev, cpu, it) in PUBLISHED.items():
        rows.append(
            [
                f"published: {name}",
                f"{ea[0]:.2f} ± {ea[1]:.2f}",
                f"{ev[0]:.2f} ± {ev[1]:.2f}",
                "-" if cpu is None else str(cpu),
                "-",
                "-" if it is None else str(it),
                "-",
                "-",
            ]
        )
    header = ["model", "Err_all", "Err_voc", "CPU s", "wall s", "iterations", "converged"]
    return C.markdown_table([*header, "splits"], rows)


def corpus_title(corpus: str, runs: list[dict]) -> str:
    size = runs[0]["train_size"] if runs else TRAIN
    return (
        f"{corpus}: {POOL:,} sentences, splits of {TRAIN:,} / {POOL - TRAIN:,} (training on "
        f"{size:,}), hmm features; mean ± sd over {len(runs)} of {N_SPLITS} splits"
    )


def settings_line(runs: list[dict]) -> str:
    params: dict = {}
    for run in runs:
        for n, p in run["params"].items():
            params.setdefault(n, p)
    return "settings: " + "; ".join(
        f"{n} {C.fmt_params(p) or '(defaults)'}" for n, p in params.items()
    )


# ------------------------------------------------------------------ the 5-split table


def _shown(path: Path) -> str:
    try:
        return path.resolve().relative_to(C.REPO).as_posix()
    except ValueError:
        return str(path)


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _problem(data, corpus: str, split: int) -> str | None:
    """What makes ``data`` not a split file of this script for (corpus, split), or None."""
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}, not an object"
    machine = data.get("machine")
    if not isinstance(machine, dict) or not isinstance(machine.get("commit"), str):
        return "no machine.commit"
    if data.get("corpus") != corpus or data.get("split") != split:
        return f"it holds corpus {data.get('corpus')!r} split {data.get('split')!r}"
    if not isinstance(data.get("train_size"), int) or not isinstance(data.get("params"), dict):
        return "no train_size or params"
    if not isinstance(data.get("finished"), str):
        return "no finished time"
    results = data.get("results")
    if not isinstance(results, list) or not results:
        return "no results"
    for r in results:
        if not isinstance(r, dict) or not isinstance(r.get("learner"), str):
            return "a result without its learner"
        for key in ("err_all", "err_voc", "cpu_s", "wall_s", "iterations"):
            if not _number(r.get(key)):
                return f"{r['learner']}'s {key} is not a number"
        if not isinstance(r.get("converged"), bool):
            return f"{r['learner']}'s converged is not true or false"
        if r.get("split") != split:
            return f"{r['learner']}'s result is of split {r.get('split')!r}"
    return None


def read_splits(out_dir: Path) -> dict[tuple[str, int], tuple[Path, dict]]:
    """Every split file in ``out_dir``, checked; an unreadable one is :class:`Usage`."""
    found = {}
    for corpus in CORPORA:
        for split in range(N_SPLITS):
            path = out_dir / FILE.format(corpus=corpus, split=split)
            if not path.exists():
                continue
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                problem = _problem(data, corpus, split)
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                problem = f"not JSON ({exc})"
            if problem:
                raise Usage(
                    f"{_shown(path)} is not a readable split file ({problem}); rerun "
                    f"{split_command(corpus, split, out_dir=out_dir)}"
                )
            found[corpus, split] = (path, data)
    return found


def _hash(commit: str) -> str:
    return commit.split()[0] if commit else ""


def _git_time(commit: str) -> int | None:
    """The commit date of ``commit`` where git knows it."""
    if not commit:
        return None
    out = subprocess.run(
        ["git", "-C", str(C.REPO), "log", "-1", "--format=%ct", _hash(commit), "--"],
        capture_output=True,
        text=True,
    )
    try:
        return int(out.stdout.strip()) if out.returncode == 0 else None
    except ValueError:
        return None


def _commit_name(commit: str) -> str:
    return commit or "(no commit recorded)"


def choose_commit(groups: dict[str, list], wanted: str | None) -> str:
    """The commit the table is built from: ``wanted`` (a prefix of its hash, or the recorded
    text), else the newest commit among ``groups``."""
    if wanted is not None:
        w = wanted.strip()
        matches = [
            k
            for k in groups
            if k
            and (k == w or (len(w) >= 4 and (_hash(k).startswith(w) or w.startswith(_hash(k)))))
        ]
        if len(matches) > 1:
            clean = [k for k in matches if k == _hash(k)]
            matches = clean if len(clean) == 1 else matches
        if not matches:
            raise Usage(
                f"no split file of commit {wanted} in the folder (it holds "
                f"{', '.join(_commit_name(k) for k in groups)})"
            )
        if len(matches) > 1:
            raise Usage(
                f"--commit {wanted} matches several commits ({', '.join(matches)}): name one"
            )
        return matches[0]
    written = {k: max(d["finished"] for _, d in groups[k]) for k in groups}
    times = {k: _git_time(k) for k in groups}
    if all(t is not None for t in times.values()):
        return max(groups, key=lambda k: (times[k], written[k]))
    return max(groups, key=lambda k: written[k])


def _check_settings(chosen: list[tuple[Path, dict]], commit: str) -> None:
    """Split files of one commit trained with other settings are not mixed."""
    first_path, first = chosen[0]
    for path, data in chosen[1:]:
        differs = []
        if data["train_size"] != first["train_size"]:
            differs.append(f"train_size {data['train_size']} against {first['train_size']}")
        for n in set(data["params"]) & set(first["params"]):
            if data["params"][n] != first["params"][n]:
                differs.append(f"{n} {data['params'][n]} against {first['params'][n]}")
        if differs:
            options = first.get("options") or []
            raise Usage(
                f"{_shown(path)} and {_shown(first_path)} (commit {_commit_name(commit)}) were "
                f"trained with other settings ({'; '.join(differs)}); rerun one of them with the "
                f"other's: {split_command(data['corpus'], data['split'], options, path.parent)}"
            )


def table_text(out_dir: Path, wanted: str | None = None) -> tuple[str, list[str]]:
    """The Markdown table of one commit's split files in ``out_dir``, and the lines naming the
    missing (corpus, split) files."""
    found = read_splits(out_dir)
    if not found:
        raise Usage(
            f"no split file ({FILE.format(corpus='CORPUS', split='K')}) in {_shown(out_dir)}; "
            f"make one with {split_command(CORPORA[0], 0, out_dir=out_dir)}"
        )
    groups: dict[str, list[tuple[Path, dict]]] = {}
    for key in sorted(found):
        path, data = found[key]
        groups.setdefault(data["machine"]["commit"], []).append((path, data))
    commit = choose_commit(groups, wanted)
    chosen = groups[commit]
    _check_settings(chosen, commit)
    options = chosen[0][1].get("options") or []
    others = sorted(k for k in groups if k != commit)
    parts = [
        f"# The LP paper's table at commit {_commit_name(commit)}",
        f"From the split files of {_shown(out_dir)} written at that commit"
        + (
            f" (files of other commits left out: {', '.join(map(_commit_name, others))})."
            if others
            else "."
        ),
    ]
    missing = []
    for corpus in CORPORA:
        runs = [d for _, d in chosen if d["corpus"] == corpus]
        present = {d["split"] for d in runs}
        gaps = [k for k in range(N_SPLITS) if k not in present]
        parts.append(f"## {corpus}")
        if runs:
            parts.append(corpus_title(corpus, runs))
            parts.append(corpus_table(corpus, runs))
        for k in gaps:
            path = out_dir / FILE.format(corpus=corpus, split=k)
            held = found.get((corpus, k))
            note = (
                f"; {_shown(path)} holds commit {_commit_name(held[1]['machine']['commit'])}"
                if held
                else ""
            )
            missing.append(
                f"missing for commit {_commit_name(commit)}: {corpus} split {k} (run "
                f"{split_command(corpus, k, options, out_dir)} at that commit{note})"
            )
        parts.append(
            f"Missing for this commit: {corpus} split{'s' if len(gaps) > 1 else ''} "
            f"{', '.join(map(str, gaps))}."
            if gaps
            else f"All {N_SPLITS} splits present."
        )
    parts.append(settings_line([d for _, d in chosen]))
    rows = []
    for path, d in chosen:
        m = d["machine"]
        rows.append(
            [
                f"`{_shown(path)}`",
                f"{m.get('cores', '?')} cores ({m.get('usable_cores', '?')} usable), "
                f"{m.get('cpu') or '?'}",
                " ".join(map(str, m.get("load_average_at_start") or [])) or "-",
                " ".join(map(str, d.get("load_average_at_end") or [])) or "-",
                f"{d['wall_s']:.0f}" if _number(d.get("wall_s")) else "-",
                d["finished"],
            ]
        )
    parts.append(
        C.markdown_table(
            ["split file", "machine", "load average at start", "at end", "wall s", "written"],
            rows,
        )
    )
    return "\n\n".join(parts) + "\n", missing


def table_main(args) -> int:
    text, missing = table_text(Path(args.out_dir), args.commit)
    sys.stdout.write(text)
    for line in missing:
        print(f"lp_paper.py: {line}", file=sys.stderr)
    return 0
