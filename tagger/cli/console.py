"""What the command line needs around the API: data errors as one line with exit status 1,
usage errors (exit 2) for bad learner settings, a quiet end when stdout's reader goes away,
JSON output, the training configuration a run resolves (file, model, options), training
settings refused as usage errors, and the sharded tagging command."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

import click


def quiet_broken_pipe() -> None:
    """The reader of stdout went away (``tagger tag ... | head``): stop without a word.

    stdout is pointed at /dev/null so that the interpreter's final flush cannot fail again.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout without a descriptor (tests)
        pass


class TaggerGroup(click.Group):
    """A click group that turns data errors into one line on stderr and exit status 1."""

    def invoke(self, ctx: click.Context):
        from tagger.errors import TaggerError, describe, one_line

        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            quiet_broken_pipe()
            ctx.exit(0)
        except (TaggerError, OSError, UnicodeDecodeError) as exc:
            click.echo(f"error: {one_line(describe(exc))}", err=True)
            ctx.exit(1)
        except KeyboardInterrupt:
            click.echo("error: interrupted", err=True)
            ctx.exit(130)


def run(group: click.Group) -> None:
    """Run the command line and exit with its status, flushing what stdout still buffers."""
    _show_tagger_warnings()
    try:
        group.main(prog_name="tagger")
    except SystemExit as exc:
        code = exc.code
    else:
        code = 0
    # the command is over: a Ctrl-C from here on would only turn a finished run (its output
    # written, its status decided) into one killed while the interpreter shuts down
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:  # what is still buffered (short outputs such as `tagger learners | head -1`)
        sys.stdout.flush()
    except BrokenPipeError:
        quiet_broken_pipe()
    except (OSError, ValueError):
        pass
    sys.exit(code)


def _show_tagger_warnings() -> None:
    """The API's :class:`~tagger.errors.TaggerWarning` as one ``warning: ...`` line on stderr
    (without Python's file and line of the ``warnings.warn`` call); other warnings as usual."""
    import warnings

    from tagger.errors import TaggerWarning

    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, TaggerWarning):
            click.echo(f"warning: {message}", err=True)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    warnings.simplefilter("always", TaggerWarning)


def learner_settings(learner: str, pairs: tuple[str, ...]) -> dict:
    """The learner's ``--set key=value`` settings; any mistake is a usage error (exit 2)
    whose message lists the learner's parameters."""
    from tagger.errors import ParameterError
    from tagger.learners import AUTO, get_learner, parse_settings

    if learner == AUTO:
        if pairs:
            raise click.BadParameter(
                "--learner auto chooses each candidate's parameters "
                "itself; name a learner to --set its parameters",
                param_hint="'--set'",
            )
        return {}
    try:
        get_learner(learner)
    except ParameterError as exc:
        raise click.BadParameter(
            f"{exc}; see 'tagger learners'", param_hint="'--learner'"
        ) from None
    try:
        return parse_settings(learner, pairs)
    except ParameterError as exc:
        raise click.BadParameter(str(exc), param_hint="'--set'") from None


def load_constraints(path: str | None):
    """The constraint file, every mistake reported before any data is read."""
    if path is None:
        return None
    from tagger.constraints import ConstraintSet

    return ConstraintSet.load(path)


def path_values(text: str) -> list[float]:
    try:
        values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise click.BadParameter(
            f"expected comma-separated numbers, got {text!r}", param_hint="'--values'"
        ) from None
    if not values:
        raise click.BadParameter("no values given", param_hint="'--values'")
    return values


def path_param(learner: str, params: dict, param: str | None, values: list[float]) -> str:
    """The parameter the path varies (the learner's own by default), each value checked."""
    from tagger.errors import ParameterError
    from tagger.learners import get_learner

    try:
        cls = get_learner(learner)
        param = param or (cls.strength[0] if cls.strength else None)
        if param is None:
            raise click.BadParameter(f"learner {learner} needs --param", param_hint="'--param'")
        p = cls.param(param)
        for v in values:
            cls(**dict(params, **{param: p.kind(v) if p.kind is int else v})).validated()
    except ParameterError as exc:
        raise click.BadParameter(str(exc), param_hint="'--values'") from None
    return param


def to_json(obj) -> str:
    import json

    from tagger.cli.reports import jsonable

    return json.dumps(jsonable(obj), ensure_ascii=False)


def check_plot(path: str | None, inputs) -> None:
    """A usage error, before any work, when a picture is asked for (``--plot PATH``) and
    cannot be drawn or written there."""
    if path is None:
        return
    from tagger.cli.plots import plot_available

    check_output(path, inputs, "'--plot'")
    if not plot_available():
        raise click.UsageError("--plot needs matplotlib (pip install matplotlib)")


def check_features(value: str | None) -> str | None:
    """A feature preset name or an existing TOML file (the training rule,
    :func:`tagger.training.run.check_features`); anything else is a usage error of
    ``--features``."""
    if value is None:
        return None
    from tagger.training.config import SettingError
    from tagger.training.run import check_features as feature_rule

    try:
        return feature_rule(value)
    except SettingError as exc:
        raise setting_usage_error(exc) from None


def check_output(path: str | None, inputs, option: str = "'-o' / '--output'") -> None:
    """Refuse, before any work, an output that would replace one of the ``inputs`` or that
    cannot be written where it is asked for (a usage error naming the path)."""
    from tagger.io.atomic import OutputPathError
    from tagger.io.atomic import check_output as check_path

    try:
        check_path(path, inputs)
    except OutputPathError as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None


#: the option that sets each setting of a training run (SettingError.key)
SETTING_OPTIONS = {
    "model.learner": "'--learner'",
    "model.features": "'--features'",
    "model.output": "'-o' / '--output'",
    "params": "'--set'",
}


def setting_usage_error(exc) -> click.UsageError:
    """A training setting refused by :func:`tagger.api.train` (a
    :class:`~tagger.training.config.SettingError`) as the usage error of the option that set
    it (exit status 2)."""
    option = SETTING_OPTIONS.get(exc.key)
    if option is None:
        return click.UsageError(str(exc))
    return click.BadParameter(str(exc), param_hint=option)


def resolved_config(config_file, config_model, options: dict) -> tuple[dict, str | None]:
    """The settings of a training run: the defaults, under the --config file or the
    --config-from model's configuration, under the options given on the command line. Also
    the configuration's source (None when there is none: --set then carries the parameters)."""
    from click.core import ParameterSource

    from tagger.training import config as training_config

    ctx = click.get_current_context()
    given = {
        name: value
        for name, value in options.items()
        if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE
    }
    if config_file and config_model:
        raise click.UsageError("give --config FILE or --config-from MODEL, not both")
    settings = ctx.params["settings"]
    if config_file:
        cfg, source = training_config.read(config_file), config_file
    elif config_model:
        cfg, source = training_config.from_model(config_model), config_model
    else:
        cfg, source = training_config.defaults(), None
    if source is not None and settings:
        learner = given.get("learner") or cfg["model"]["learner"]
        from tagger.learners import DEFAULT_LEARNER

        settings = learner_settings(learner or DEFAULT_LEARNER, settings)
    else:
        settings = {}
    return training_config.merge(cfg, given, settings), source


class Terminated(KeyboardInterrupt):
    """SIGTERM (``timeout``, a job scheduler ending the job), raised where Ctrl-C raises
    KeyboardInterrupt, so that the same cleanup runs: partial outputs removed, workers
    stopped."""


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Within: SIGTERM stops the command as Ctrl-C does, but with exit status 143 (128 +
    SIGTERM), after the one line ``error: interrupted``."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_sigterm(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    except Terminated:
        # the cleanup on the way here is done; a second SIGTERM now would only lose the line
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        click.echo("error: interrupted", err=True)
        raise click.exceptions.Exit(128 + signal.SIGTERM) from None
    finally:
        signal.signal(signal.SIGTERM, previous)


def tag_shards_command(
    model_path,
    inputs,
    output_dir,
    scheduler,
    jobs,
    output_path,
    constraints_file,
    marginals,
    fields,
    **options,
) -> None:
    """tag --output-dir: the shards on Dask (tagger.integrations.distributed), a line per shard."""
    if not inputs or "-" in inputs:
        raise click.UsageError("--output-dir tags files: give them (or a quoted glob) as INPUT")
    if output_path != "-":
        raise click.UsageError("--output-dir writes one file per input; drop -o")
    if constraints_file or marginals or fields:
        raise click.UsageError(
            "--output-dir tags corpus files as they are: --constraints, "
            "--marginals and --fields go with a single INPUT"
        )
    from tagger.integrations.shard_checks import SchedulerAddressError, check_scheduler_address

    if scheduler is not None:
        try:
            check_scheduler_address(scheduler)
        except SchedulerAddressError as exc:
            raise click.BadParameter(str(exc), param_hint="'--scheduler'") from None
    from tagger.integrations.distributed import tag_shards

    def said(r):
        click.echo(f"{r.status} {r.input} -> {r.output}", err=True)

    results = tag_shards(
        model_path,
        list(inputs),
        output_dir,
        scheduler=scheduler,
        workers=jobs,
        progress=said,
        **options,
    )
    done = sum(r.status == "tagged" for r in results)
    click.echo(
        f"{done} shard(s) tagged, {len(results) - done} already done, in {output_dir}", err=True
    )
