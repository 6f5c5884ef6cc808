"""Training progress: plain lines off a terminal (iteration K/N, the iteration's own time without
compilation, an ETA), tqdm bars on one, compilation reported once, featurization counted."""

from __future__ import annotations

import io
import logging

from tagger.training.progress import CompileClock, ProgressHandler, TrainProgress

log = logging.getLogger("tagger.train")


def _emit(handler, rows, learner="m3n-subgradient", total=4):
    for i, row in enumerate(rows):
        record = log.makeRecord(
            log.name,
            logging.INFO,
            __file__,
            0,
            "row",
            (),
            None,
            extra={
                "row": row,
                "learner": learner,
                "counter": "epoch",
                "total": total,
                "first": i == 0,
            },
        )
        handler.emit(record)


def test_plain_lines_give_each_iterations_own_time_without_compilation():
    out, clock = io.StringIO(), CompileClock()
    handler = ProgressHandler(out, bars=False, compile_clock=clock)
    clock.seconds = 3.0  # compiled during the first iteration
    _emit(
        handler,
        [
            {"epoch": 1, "objective": 2.0, "nonzero": 10, "time": 3.5},
            {"epoch": 2, "objective": 1.0, "nonzero": 12, "dev_f1": 80.5, "time": 4.0},
        ],
    )
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("compiled the numba kernels in 3.0 s")
    assert "epoch=1/4" in lines[1] and "epoch_s=0.50" in lines[1]
    assert "epoch=2/4" in lines[2] and "epoch_s=0.50" in lines[2] and "dev_f1=80.5" in lines[2]
    # (4.0 s - 3.0 s compiling) / 2 iterations * 2 left
    assert lines[2].endswith("eta<=1s")
    assert "time=" not in out.getvalue()


def test_compilation_is_reported_once():
    out, clock = io.StringIO(), CompileClock()
    handler = ProgressHandler(out, bars=False, compile_clock=clock)
    clock.seconds = 2.0
    _emit(handler, [{"epoch": 1, "time": 2.1}])
    clock.seconds = 4.0  # a second run that compiles more
    _emit(handler, [{"epoch": 1, "time": 2.2}])
    assert out.getvalue().count("compiled the numba kernels") == 1


def test_bars_on_a_terminal():
    out = io.StringIO()
    handler = ProgressHandler(out, bars=True)
    handler.emit(
        log.makeRecord(
            log.name,
            logging.INFO,
            __file__,
            0,
            "featurize",
            (),
            None,
            extra={"featurize": {"phase": "training data", "done": 50, "total": 100}},
        )
    )
    _emit(
        handler,
        [{"epoch": k, "objective": 1.0 / k, "nonzero": 7, "time": 0.1 * k} for k in (1, 2, 3)],
        total=3,
    )
    handler.emit(log.makeRecord(log.name, logging.INFO, __file__, 0, "selection: x", (), None))
    handler.close()
    text = out.getvalue()
    assert "featurize" in text and "50%" in text
    assert "m3n-subgradient" in text and "3/3" in text and "nonzero=7" in text
    assert "selection: x\n" in text


def test_train_progress_attaches_and_detaches(tmp_path):
    from pathlib import Path

    from tagger.api import Tagger
    from tagger.io import load_corpus

    sample = Path(__file__).resolve().parents[2] / "corpora" / "sample_chunk.txt"
    out = io.StringIO()
    with TrainProgress(quiet=False, bars=False, stream=out):
        Tagger(features="chunk", params={"epochs": 2}, select=False).fit(load_corpus(sample))
    text = out.getvalue()
    assert "featurize: vocabulary" in text and "featurize: training data" in text
    assert "epoch=1/2" in text and "epoch=2/2" in text
    before = text
    Tagger(features="chunk", params={"epochs": 1}, select=False).fit(load_corpus(sample))
    assert out.getvalue() == before  # nothing once the block is left
    quiet = io.StringIO()
    with TrainProgress(quiet=True, stream=quiet):
        Tagger(features="chunk", params={"epochs": 1}, select=False).fit(load_corpus(sample))
    assert quiet.getvalue() == ""


def test_off_a_terminal_lines_come_at_most_every_interval_and_at_each_end():
    out, clock = io.StringIO(), [0.0]
    handler = ProgressHandler(out, bars=False, interval=5.0, now=lambda: clock[0])
    rows = []
    for k in range(1, 201):  # 200 iterations of 0.1 s: 20 s
        rows.append({"epoch": k, "objective": 1.0 / k, "time": 0.1 * k})
    for i, row in enumerate(rows):
        clock[0] = row["time"]
        _emit_one(handler, row, total=400, first=i == 0)
    handler.handle(log.makeRecord(log.name, logging.INFO, __file__, 0, "point done", (), None))
    lines = out.getvalue().splitlines()
    epochs = [ln.split("epoch=")[1].split("/")[0] for ln in lines if "epoch=" in ln]
    # the first, one every 5 s, and the run's last (ended early, so written before the message)
    assert epochs == ["1", "51", "101", "151", "200"], lines  # the first at 0.1 s
    assert lines[-1] == "point done"
    # a run that reaches its bound writes its last iteration at once
    out2 = io.StringIO()
    handler = ProgressHandler(out2, bars=False, interval=5.0, now=lambda: 0.0)
    _emit(handler, [{"epoch": k, "time": 0.0} for k in range(1, 5)], total=4)
    assert [ln.split("epoch=")[1][:3] for ln in out2.getvalue().splitlines()] == ["1/4", "4/4"]


def test_the_command_line_off_a_terminal_is_brief(tmp_path):
    from tagger.training.progress import PLAIN_INTERVAL

    out = io.StringIO()
    with TrainProgress(quiet=False, stream=out) as progress:
        assert progress.handler.interval == PLAIN_INTERVAL  # StringIO is no terminal


def _emit_one(handler, row, total, first):
    record = log.makeRecord(
        log.name,
        logging.INFO,
        __file__,
        0,
        "row",
        (),
        None,
        extra={"row": row, "learner": "crf-l1", "counter": "epoch", "total": total, "first": first},
    )
    handler.emit(record)
