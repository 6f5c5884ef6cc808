"""The command line's one rule for errors, over every command: a usage error (an unknown
option, a malformed or out-of-range value, a missing argument, an unknown command) exits 2 with
exactly one line on stderr, ``error: ... (see 'tagger CMD --help')``; nothing is run."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from tagger.cli import cli


def _commands(group: click.Group, path: tuple[str, ...] = ()):
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


COMMANDS = list(_commands(cli))


def _bad_values(command: click.Command):
    """For each option that checks its value: a value it refuses."""
    for param in command.params:
        if not isinstance(param, click.Option) or param.is_flag:
            continue
        name = max(param.opts, key=len)
        if isinstance(param.type, click.Choice):
            yield name, "no-such-choice"
        elif isinstance(param.type, (click.types.IntParamType, click.types.FloatParamType)):
            yield name, "not-a-number"
            if isinstance(param.type, click.types._NumberRangeBase) and param.type.min is not None:
                yield name, str(param.type.min - 1)


CASES = [((), ["--no-such-option"]), ((), ["no-such-command"])]
for path, command in COMMANDS:
    CASES.append((path, ["--no-such-option"]))
    for name, value in _bad_values(command):
        CASES.append((path, [name, value]))
    if any(isinstance(p, click.Argument) and p.required for p in command.params):
        CASES.append((path, []))  # a required argument left out


def test_every_command_is_covered():
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"train", "tag", "eval", "path", "inspect", "trace", "init-config"} <= names
    assert {"learners", "constraints check"} <= names
    assert len(CASES) > 40


@pytest.mark.parametrize("path, args", CASES, ids=[" ".join(("tagger", *p, *a)) for p, a in CASES])
def test_a_usage_error_is_one_line_and_exit_status_2(path, args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may be written, and nothing is there to read
    result = CliRunner().invoke(cli, [*path, *args], prog_name="tagger", catch_exceptions=False)
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert lines[0].endswith(f"(see '{' '.join(('tagger', *path))} --help')"), lines[0]
    assert "Traceback" not in result.output and result.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_help_gives_the_exit_statuses_and_valid_examples():
    from tagger.cli.options import SET_EXAMPLE
    from tagger.learners import DEFAULT_LEARNER, parse_settings

    text = CliRunner().invoke(cli, ["--help"]).output
    for status in ("0 done", "1 a data error", "2 a usage error", "130", "143"):
        assert status in text, status
    # the --set example of `tagger train --help` is accepted by the default learner
    assert parse_settings(DEFAULT_LEARNER, SET_EXAMPLE)
    assert f"--set {SET_EXAMPLE[0]}" in " ".join(
        CliRunner().invoke(cli, ["train", "--help"]).output.split()
    )
    assert "[FILE]" in CliRunner().invoke(cli, ["init-config", "--help"]).output


def test_options_of_the_same_name_show_the_same_placeholder():
    seen: dict[str, set[str]] = {}
    for _, command in COMMANDS:
        ctx = click.Context(command)
        for param in command.params:
            if isinstance(param, click.Option) and not param.is_flag:
                seen.setdefault(max(param.opts, key=len), set()).add(param.make_metavar(ctx))
    differing = {name: metavars for name, metavars in seen.items() if len(metavars) > 1}
    assert not differing, differing


@pytest.mark.parametrize(
    "args",
    [
        ["trace", "m.tgm", "--plot", "p.txt"],
        ["path", "g.txt", "--dev", "g.txt", "--values", "1", "--plot", "p.txt"],
    ],
)
def test_both_pictures_take_the_same_formats(args, tmp_path, monkeypatch):
    from tagger.cli.plots import PICTURE_FORMATS

    assert PICTURE_FORMATS == ("png", "svg", "pdf")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, args, prog_name="tagger")
    assert result.exit_code == 2 and ".png, .svg, .pdf" in result.stderr, result.output


def test_learners_lists_the_default_first_with_whole_first_sentences():
    from tagger.cli.reports import first_sentence
    from tagger.learners import DEFAULT_LEARNER

    text = CliRunner().invoke(cli, ["learners"]).output
    heads = [ln for ln in text.splitlines() if ln and not ln.startswith(" ")]
    assert heads[0].startswith(f"{DEFAULT_LEARNER}: ") and heads[0].endswith("[default]")
    assert sum("[default]" in h for h in heads) == 1
    assert all(h.removesuffix(" [default]").endswith(".") for h in heads), heads
    doc = """L1 CRF by a method (Smith et al. 2003; e.g. the
    second line). More text.

    Another paragraph."""
    assert first_sentence(doc) == "L1 CRF by a method (Smith et al. 2003; e.g. the second line)."
