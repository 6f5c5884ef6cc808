"""Training progress on stderr, drawn from the records of the ``tagger.train`` logger.

On a terminal, tqdm bars: one for featurization (tokens done out of the total, with its ETA),
one per training run (iterations out of the learner's bound, ETA, and the objective, non-zero
weights and dev score in the bar); the lines of the selection path and of the learners' other
messages print above the bars. Elsewhere (a file, a pipe, CI) plain lines with ``epoch=K/N``,
the time of that iteration alone (``epoch_s``, not a running total), and an upper bound on the
time left: at most one every :data:`PLAIN_INTERVAL` seconds, plus the first and the last
iteration of each run and the end of each featurization pass, so that a log stays readable
whether training takes a second or a day. Compiling the numba kernels (the first run on a
machine; later runs load them from the cache) is timed apart and reported once, so that it
inflates neither the first iteration's time nor the ETA.

tqdm rather than rich: it comes with spaCy already, draws on stderr alone, costs a few
milliseconds to import and has nothing to set up for a bar that is just a counter with a
postfix; rich's live layouts are more than this needs.
"""

from __future__ import annotations

import logging
import sys
import time

from tagger.learners.base import duration_text

#: seconds between two plain progress lines of the same run (off a terminal)
PLAIN_INTERVAL = 5.0
#: fields shown in a bar's postfix and a plain line, in this order, when a row has them
SHOWN = ("objective", "nonzero", "dev_f1", "dev_acc", "gap", "C_u", "stage")


class CompileClock:
    """Seconds spent compiling numba kernels (outermost compilations only) while installed."""

    def __init__(self):
        self.seconds = 0.0
        self._depth = 0
        self._t0 = 0.0

    def on_start(self, event) -> None:
        if self._depth == 0:
            self._t0 = time.perf_counter()
        self._depth += 1

    def on_end(self, event) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.seconds += time.perf_counter() - self._t0


class ProgressHandler(logging.Handler):
    """Renders ``tagger.train`` records: bars on a terminal (``bars``), plain lines elsewhere."""

    def __init__(
        self,
        stream,
        bars: bool,
        compile_clock: CompileClock | None = None,
        interval: float = 0.0,
        now=time.monotonic,
    ):
        super().__init__()
        self.stream, self.bars = stream, bars
        # plain lines: at most one per `interval` seconds (0: every one); a line held back is
        # kept in `pending` and written when its run ends or another message comes
        self.interval, self.now = interval, now
        self.last_written = -float("inf")
        self.pending: str | None = None
        self.clock = compile_clock or CompileClock()
        self.bar = None
        self.feature_bar = None
        self.run = None  # (learner, counter) of the current training run
        self._k = 0  # its last iteration
        self.last_time = 0.0  # the row's cumulative time at the previous row
        self.last_compile = 0.0  # compile seconds at the previous row
        self.run_compile = 0.0  # compile seconds when the current run started
        self.compile_reported = False

    # ---- records
    def emit(self, record: logging.LogRecord) -> None:
        try:
            if hasattr(record, "featurize"):
                self._featurize(record.featurize, record.getMessage())
            elif hasattr(record, "row"):
                self._row(
                    record.row,
                    record.learner,
                    record.counter,
                    record.total,
                    getattr(record, "first", False),
                )
            else:
                self._line(record.getMessage())
        except Exception:  # a display problem must never stop training
            self.handleError(record)

    def _featurize(self, f: dict, message: str) -> None:
        if not self.bars:
            self._throttled(message, last=f["done"] >= f["total"])
            return
        if self.feature_bar is None:
            self.feature_bar = self._tqdm(
                total=f["total"], desc="featurize", unit="tok", unit_scale=True
            )
        bar = self.feature_bar
        bar.total = f["total"]
        bar.update(f["done"] - bar.n)
        bar.set_postfix_str(f["phase"], refresh=True)
        if f["done"] >= f["total"]:
            bar.close()
            self.feature_bar = None

    def _row(self, row: dict, learner: str, counter: str, total, first: bool) -> None:
        k = row.get(counter)
        new_run = first or self.run != (learner, counter)
        if new_run:
            self._flush()
            self._close_bar()
            self.run, self.last_time = (learner, counter), 0.0
            self.run_compile = self.last_compile
        self._k = k if isinstance(k, int) else 0
        spent = float(row.get("time", self.last_time))
        compiled = self.clock.seconds - self.last_compile
        step = max(spent - self.last_time - compiled, 0.0)
        self.last_time, self.last_compile = spent, self.clock.seconds
        if compiled > 0.05 and not self.compile_reported:
            self.compile_reported = True
            self._line(
                f"compiled the numba kernels in {compiled:.1f} s (once: later runs "
                f"load them from the cache); not counted in the iteration times"
            )
        shown = " ".join(f"{key}={_fmt(row[key])}" for key in SHOWN if key in row)
        if self.bars:
            if self.bar is None:
                self.bar = self._tqdm(
                    total=total if isinstance(total, int) else None, desc=learner, unit=counter
                )
            self.bar.update(max(self._k - self.bar.n, 0))
            self.bar.set_postfix_str(shown, refresh=True)
            return
        of = f"/{total}" if isinstance(total, int) else ""
        left = ""
        if isinstance(total, int) and self._k and spent:
            working = max(spent - (self.clock.seconds - self.run_compile), 0.0)
            left = f" eta<={duration_text(working / self._k * max(total - self._k, 0))}"
        text = f"{learner}: {counter}={k}{of} {shown} {counter}_s={step:.2f}{left}"
        last = isinstance(total, int) and isinstance(k, int) and k >= total
        self._throttled(text, first=new_run, last=last)

    def _throttled(self, text: str, first: bool = False, last: bool = False) -> None:
        """A progress line, written when it is a run's first or last, or when the interval
        has passed since the last one written; else held back as ``pending``."""
        now = self.now()
        if first or last or now - self.last_written >= self.interval:
            self.pending = None
            self._write(text)
            self.last_written = now
        else:
            self.pending = text

    def _flush(self) -> None:
        """The line held back, if any: the last state of a run that ended without saying so."""
        if self.pending is not None:
            text, self.pending = self.pending, None
            self._write(text)
            self.last_written = self.now()

    def _line(self, text: str) -> None:
        self._flush()
        self._write(text)

    def _write(self, text: str) -> None:
        if self.bars:
            from tqdm import tqdm

            tqdm.write(text, file=self.stream)
        else:
            self.stream.write(text + "\n")
            self.stream.flush()

    def _tqdm(self, **kw):
        from tqdm import tqdm

        return tqdm(file=self.stream, leave=False, dynamic_ncols=True, **kw)

    def _close_bar(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def close(self) -> None:
        self._flush()
        self._close_bar()
        if self.feature_bar is not None:
            self.feature_bar.close()
            self.feature_bar = None
        super().close()


class TrainProgress:
    """Shows training progress on stderr while in the ``with`` block (nothing when ``quiet``):
    bars when stderr is a terminal, else plain lines; ``bars`` forces either."""

    def __init__(self, quiet: bool, bars: bool | None = None, stream=None):
        self.quiet = quiet
        self.stream = stream or sys.stderr
        self.bars = _is_terminal(self.stream) if bars is None else bars

    def __enter__(self):
        self.logger = logging.getLogger("tagger.train")
        self.handler = None
        self._listening = None
        if not self.quiet:
            clock = CompileClock()
            self._listen(clock)
            interval = 0.0 if self.bars else PLAIN_INTERVAL
            self.handler = ProgressHandler(self.stream, self.bars, clock, interval)
            self.old_level = self.logger.level
            self.logger.addHandler(self.handler)
            self.logger.setLevel(logging.INFO)
        return self

    def _listen(self, clock: CompileClock) -> None:
        from numba.core import event

        class Listener(event.Listener):
            def on_start(self, ev):
                clock.on_start(ev)

            def on_end(self, ev):
                clock.on_end(ev)

        self._listening = Listener()
        event.register("numba:compile", self._listening)

    def __exit__(self, *exc):
        if self.handler is not None:
            self.logger.removeHandler(self.handler)
            self.logger.setLevel(self.old_level)
            self.handler.close()
        if self._listening is not None:
            from numba.core import event

            event.unregister("numba:compile", self._listening)
        return False


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _fmt(v) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)
