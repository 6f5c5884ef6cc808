"""What the command line needs around the API: data errors as one line with exit status 1,
usage errors (exit 2) for bad learner settings, a quiet end when stdout's reader goes away,
JSON output, the training configuration a run resolves (file, model, options), training
settings refused as usage errors, and the sharded tagging command."""

from __future__ import annotations

import os
import signal
import sys
import threading

import click

from tagger.signals import Terminated, arrived


def quiet_broken_pipe() -> None:
    """The reader of stdout went away (``tagger tag ... | head``): stop without a word.

    stdout is pointed at /dev/null so that the interpreter's final flush cannot fail again.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout without a descriptor (tests)
        pass


#: the exit statuses of the command line (``tagger --help`` and docs/errors.md list them)
EXIT_DATA_ERROR = 1
EXIT_USAGE_ERROR = 2
EXIT_SIGINT = 130  # 128 + SIGINT, as a shell reports a command stopped by Ctrl-C
EXIT_SIGTERM = 143  # 128 + SIGTERM


def _raise_terminated(signum, frame) -> None:
    arrived.append(signum)
    raise Terminated()


def _raise_interrupt(signum, frame) -> None:
    arrived.append(signum)
    raise KeyboardInterrupt()


def _quiet_after_a_signal(default_hook):
    """``sys.unraisablehook`` for the command line: once Ctrl-C or SIGTERM has arrived, what
    Python could not raise is not printed. That is the interruption itself, dropped by ctypes
    inside a compilation (the command still stops: :func:`tagger.signals.raise_if_arrived`), or the
    finalizer of an object it cut short in the making (llvmlite's, at exit); the command's one
    line, ``error: interrupted``, says all there is to say."""

    def hook(unraisable):
        if not arrived:
            default_hook(unraisable)

    return hook


def usage_line(exc: click.UsageError) -> str:
    """A usage error as one line: ``error: MESSAGE (see 'tagger CMD --help')``."""
    from tagger.errors import one_line

    message = one_line(exc.format_message()).rstrip(".")
    if message[:1].isupper() and not message[1:2].isupper():
        message = message[0].lower() + message[1:]
    ctx = exc.ctx
    path = ctx.command_path if ctx is not None else "tagger"
    return f"error: {message} (see '{path} --help')"


class TaggerGroup(click.Group):
    """A click group whose every error is one line on stderr: ``error: ...`` with exit status
    1 for data errors, 2 for usage errors (click's own three lines folded into one), 130 for
    Ctrl-C and 143 for SIGTERM (``error: interrupted``)."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as exc:
            click.echo(usage_line(exc), err=True)
            sys.exit(EXIT_USAGE_ERROR)
        except click.ClickException as exc:
            from tagger.errors import one_line

            click.echo(f"error: {one_line(exc.format_message())}", err=True)
            sys.exit(exc.exit_code)
        except click.Abort as exc:  # Ctrl-C while click itself reads or parses
            click.echo("error: interrupted", err=True)
            terminated = isinstance(exc.__context__, Terminated)
            sys.exit(EXIT_SIGTERM if terminated else EXIT_SIGINT)
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx: click.Context):
        from tagger.errors import TaggerError, describe, one_line

        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            quiet_broken_pipe()
            ctx.exit(0)
        except (TaggerError, OSError, UnicodeDecodeError) as exc:
            click.echo(f"error: {one_line(describe(exc))}", err=True)
            ctx.exit(EXIT_DATA_ERROR)
        except KeyboardInterrupt as exc:
            # the cleanup on the way here is done; a second signal now would only lose the line
            _ignore_stop_signals()
            click.echo("error: interrupted", err=True)
            ctx.exit(EXIT_SIGTERM if isinstance(exc, Terminated) else EXIT_SIGINT)


def _ignore_stop_signals() -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


def run(group: click.Group) -> None:
    """Run the command line and exit with its status, flushing what stdout still buffers."""
    _show_tagger_warnings()
    try:  # SIGTERM unwinds as Ctrl-C does (not in a thread other than the main one)
        signal.signal(signal.SIGTERM, _raise_terminated)
        signal.signal(signal.SIGINT, _raise_interrupt)
    except ValueError:
        pass
    else:
        sys.unraisablehook = _quiet_after_a_signal(sys.unraisablehook)
    try:
        group.main(prog_name="tagger")
    except SystemExit as exc:
        code = exc.code
    else:
        code = 0
    # the command is over: a Ctrl-C from here on would only turn a finished run (its output
    # written, its status decided) into one killed while the interpreter shuts down
    _ignore_stop_signals()
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
    from tagger.cli.plots import PICTURE_FORMATS, plot_available

    suffix = os.path.splitext(path)[1].lower().lstrip(".")
    if suffix not in PICTURE_FORMATS:
        raise click.BadParameter(
            f"{path}: the picture's format follows its name's extension: give a name ending "
            f"in {', '.join('.' + f for f in PICTURE_FORMATS)}",
            param_hint="'--plot'",
        )
    check_output(path, inputs)
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
        raise setting_error(exc, None) from None


def check_output(path: str | None, inputs) -> None:
    """Refuse, before any work, an output that would replace one of the ``inputs`` or that
    cannot be written where it is asked for: an :class:`~tagger.io.atomic.OutputPathError`
    naming the path (a data error, exit status 1, as every problem with a file is)."""
    from tagger.io.atomic import check_output as check_path

    check_path(path, inputs)


#: the option that sets each setting of a training run (SettingError.key): its parameter
#: name and how a message names it
SETTING_OPTIONS = {
    "model.learner": ("learner", "'--learner'"),
    "model.features": ("features", "'--features'"),
    "data.unlabeled": ("constraints_file", "'--constraints'"),
    "params": ("settings", "'--set'"),
}


def typed_options() -> set[str]:
    """The parameters of the current command given on the command line (not defaults)."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    return {
        name for name in ctx.params if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE
    }


def setting_error(exc, source: str | None) -> Exception:
    """A training setting refused by :func:`tagger.api.train` (a
    :class:`~tagger.training.config.SettingError`): the usage error of the option that set it
    when it was typed (exit status 2), else, when it came from the configuration file or
    model ``source``, one line naming that file and the key (exit status 1). An unusable output
    path is a data error either way."""
    from tagger.training.config import ConfigError

    name, option = SETTING_OPTIONS.get(exc.key, (None, None))
    if exc.key == "model.output":
        if source is None or "model_path" in typed_options():
            return exc
    elif source is None or (name is not None and name in typed_options()):
        if option is None:
            return click.UsageError(str(exc))
        return click.BadParameter(str(exc), param_hint=option)
    message = str(exc)
    if message.startswith(f"{source}:"):
        return exc
    return ConfigError(f"{source}: {exc.key}: {message}")


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
