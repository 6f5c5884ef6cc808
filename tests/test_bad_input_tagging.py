"""Bad input to ``tagger tag``, case by case, through the command line as a user meets it: the
sharded tagging of ``--output-dir`` (input shards, the output directory, ``--scheduler``) and
input that the model cannot read (a chunker given words alone, or untokenized text).

As in ``tests/test_bad_input.py``, every case runs one command in a directory of its own and
asserts the promised end: exit status 1 with exactly one line ``error: ...`` on stderr for bad
data (an unusable output path included), exit status 2 with click's usage error for a
malformed option value, no traceback either way, the fragments the message must contain, and
that nothing changed: no file that existed before was changed, and no file or directory was
created (every case here is refused before any work starts, so no Dask cluster either).
"""

from __future__ import annotations

import os
import shutil
import socket
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner

from tagger.cli import cli

GOOD = "The DT B-NP\ncat NN I-NP\nsat VBD B-VP\n\nA DT B-NP\ndog NN I-NP\n"
PROSE = (
    "The school board voted on Thursday to extend the contract by two years.\n"
    '"We are very pleased," a spokeswoman said.\n'
)
#: a file entry that is a symbolic link to this (missing) target
LINK = "link:"
#: a file entry that is a directory made read-only
READ_ONLY = "read-only"


@dataclass
class Case:
    id: str
    args: list  # "{m}": the trained model; "{closed}": a local port nothing listens on
    code: int  # 1 data error, 2 usage error
    says: tuple = ()  # fragments of the message
    files: dict = field(default_factory=dict)  # name -> str | bytes | LINK + target | READ_ONLY


SHARDS = {"s/a.txt": GOOD, "s/b.txt": GOOD}


def _shards(*args, **files):
    """``tag {m} 's/*' --output-dir out ARGS`` over the two good shards and ``files``."""
    return ["tag", "{m}", "s/*", "--output-dir", "out", *args], {**SHARDS, **files}


def _case(id, args_files, code, says):
    args, files = args_files
    return Case(id, args, code, says, files)


CASES = [
    # -- input shards: refused before a cluster starts, named as the user typed them
    _case(
        "shard-dangling-link",
        _shards(**{"s/c.txt": LINK + "gone.txt"}),
        1,
        ("s/c.txt (matched by 's/*') is a broken symbolic link (to gone.txt)",),
    ),
    _case(
        "shard-is-a-directory",
        _shards(**{"s/sub/x.txt": GOOD}),
        1,
        ("s/sub (matched by 's/*') is a directory, not a file",),
    ),
    Case(
        "shard-glob-matches-nothing",
        ["tag", "{m}", "s/*.xml", "--output-dir", "out"],
        1,
        ("no input file matches 's/*.xml';",),
        SHARDS,
    ),
    Case(
        "one-of-two-globs-matches-nothing",
        ["tag", "{m}", "s/*.txt", "t/*.txt", "--output-dir", "out"],
        1,
        ("no input file matches 't/*.txt';",),
        SHARDS,
    ),
    Case(
        "shard-glob-with-a-space-matches-nothing",
        ["tag", "{m}", "my shards/*.txt", "--output-dir", "out"],
        1,
        ("no input file matches 'my shards/*.txt';",),
        SHARDS,
    ),
    # -- the output directory: checked before anything starts
    _case(
        "output-dir-holds-the-inputs",
        (["tag", "{m}", "s/*.txt", "--output-dir", "s"], SHARDS),
        1,
        ("the output directory s holds the input s/a.txt", "choose another output directory"),
    ),
    _case(
        "output-dir-holds-the-inputs-spelled-otherwise",
        (["tag", "{m}", "s/*.txt", "--output-dir", "s/../s/"], SHARDS),
        1,
        ("holds the input s/a.txt",),
    ),
    _case(
        "output-dir-read-only",
        _shards(**{"out": READ_ONLY}),
        1,
        ("cannot write in the directory out (permission denied)",),
    ),
    Case(
        "output-dir-to-create-in-a-read-only-one",
        ["tag", "{m}", "s/*", "--output-dir", "ro/new"],
        1,
        ("cannot create ro/new in the directory", "(permission denied)"),
        {**SHARDS, "ro": READ_ONLY},
    ),
    Case(
        "output-dir-below-a-file",
        ["tag", "{m}", "s/*", "--output-dir", "s/a.txt/out"],
        1,
        ("cannot create the output directory s/a.txt/out", "is a file, not a directory"),
        SHARDS,
    ),
    # -- the scheduler: a malformed address is a usage error, a silent one a data error
    _case("scheduler-empty", _shards("--scheduler", ""), 2, ("the scheduler address is empty",)),
    _case(
        "scheduler-not-an-address",
        _shards("--scheduler", "not an address"),
        2,
        ("'not an address' is not an address", "tcp://host:8786"),
    ),
    _case(
        "scheduler-without-port",
        _shards("--scheduler", "tcp://localhost"),
        2,
        ("'tcp://localhost' has no port number",),
    ),
    _case(
        "scheduler-host-without-port",
        _shards("--scheduler", "localhost"),
        2,
        ("'localhost' has no port number",),
    ),
    _case(
        "scheduler-port-not-a-number",
        _shards("--scheduler", "tcp://localhost:http"),
        2,
        ("the port 'http' is not a number from 1 to 65535",),
    ),
    _case(
        "scheduler-port-superscript-digit",
        _shards("--scheduler", "0:\u00b2"),
        2,
        ("the port '\u00b2' is not a number from 1 to 65535",),
    ),
    _case(
        "scheduler-port-arabic-indic-digits",
        _shards("--scheduler", "localhost:\u0663\u0664"),
        2,
        ("the port '\u0663\u0664' is not a number from 1 to 65535",),
    ),
    _case(
        "scheduler-dashboard-url",
        _shards("--scheduler", "http://localhost:8787/status"),
        2,
        ("is a web address (the dashboard's",),
    ),
    _case(
        "scheduler-unknown-protocol",
        _shards("--scheduler", "udp://localhost:8786"),
        2,
        ("unknown protocol 'udp'",),
    ),
    _case(
        "scheduler-is-a-file",
        _shards("--scheduler", "scheduler.json", **{"scheduler.json": '{"address": "x"}'}),
        2,
        ("'scheduler.json' is a file, not an address",),
    ),
    _case(
        "scheduler-closed-port",
        _shards("--scheduler", "tcp://127.0.0.1:{closed}"),
        1,
        ("no Dask scheduler answers at tcp://127.0.0.1:", "connection refused"),
    ),
    # -- input the model cannot read
    Case(
        "chunker-given-words-alone",
        ["tag", "{m}", "w.txt"],
        1,
        ("w.txt:1: this model reads word and pos on each token line", "1 field(s) ('The')"),
        {"w.txt": "The\ncat\n\nA\ndog\n"},
    ),
    Case(
        "chunker-given-words-alone-after-docstart",
        ["tag", "{m}", "w.txt", "--jobs", "2"],
        1,
        ("w.txt:3: this model reads word and pos",),
        {"w.txt": "-DOCSTART-\n\nThe\ncat\n"},
    ),
    Case(
        "chunker-given-untokenized-text",
        ["tag", "{m}", "p.txt"],
        1,
        ("p.txt:1: this model reads word and pos, one token per line", "untokenized text"),
        {"p.txt": PROSE},
    ),
    Case(
        "chunker-given-long-text-lines",
        ["tag", "{m}", "t.txt"],
        1,
        ("t.txt:1: this model reads word and pos", "text, one sentence per line"),
        {"t.txt": "the cat sat on the mat\nit was happy\n"},
    ),
]


def _closed_port() -> int:
    """A local port that nothing listens on (bound, then freed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: a directory that even root cannot write in, for when permissions do not stop this user
ALWAYS_READ_ONLY = Path("/proc/sys")


def _read_only(path: Path) -> None:
    """A directory this user cannot write in at ``path``: made read-only, or, where that does
    not stop this user (root), a link to one that stops everyone."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o555)
    if not os.access(path, os.W_OK):
        return
    path.chmod(0o755)
    path.rmdir()
    if not ALWAYS_READ_ONLY.is_dir() or os.access(ALWAYS_READ_ONLY, os.W_OK):
        pytest.skip("no directory here that this user cannot write in")
    path.symlink_to(ALWAYS_READ_ONLY)


def _snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root``: a file's bytes, None for a directory or a link."""
    out: dict[str, bytes | None] = {}
    for p in root.rglob("*"):
        plain = p.is_file() and not p.is_symlink()
        out[str(p.relative_to(root))] = p.read_bytes() if plain else None
    return out


def test_the_table_covers_both_exit_statuses():
    assert {c.code for c in CASES} == {1, 2}
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_tagging_input(case, model, tmp_path, monkeypatch):
    shutil.copy(model, tmp_path / "m.tgm")
    read_only = []
    for name, content in case.files.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if content == READ_ONLY:
            read_only.append(target)
        elif isinstance(content, str) and content.startswith(LINK):
            target.symlink_to(content[len(LINK) :])
        else:
            target.write_bytes(content.encode() if isinstance(content, str) else content)
    try:
        for target in read_only:
            _read_only(target)
        before = _snapshot(tmp_path)
        monkeypatch.chdir(tmp_path)
        port = str(_closed_port())
        args = [
            str(tmp_path / "m.tgm") if a == "{m}" else a.replace("{closed}", port)
            for a in case.args
        ]
        result = CliRunner().invoke(cli, args, catch_exceptions=True)
        after = _snapshot(tmp_path)
    finally:
        for target in read_only:
            if not target.is_symlink():
                target.chmod(0o755)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code == case.code, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    if case.code == 1:
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    else:
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in case.says:
        assert fragment in result.stderr, (fragment, result.stderr)
    assert after == before, "the command changed or created files"
