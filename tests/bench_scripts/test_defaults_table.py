"""bench/defaults.py's task table: the dev column appears when a row was scored on a dev file,
and the verdict sets ours against python-crfsuite's everyday configuration on dev as on test."""

from __future__ import annotations

import importlib.util
import sys

from _helpers import ROOT

BENCH = ROOT / "bench"


def defaults_module():
    sys.path.insert(0, str(BENCH))  # the script imports its neighbour _common
    spec = importlib.util.spec_from_file_location("defaults_under_test", BENCH / "defaults.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def row(test: float, dev: float | None, nonzero: int, seconds: float) -> dict:
    return {
        "test": test,
        "dev": dev,
        "n_nonzero": nonzero,
        "model_bytes": 1000,
        "seconds": seconds,
        "chosen": {"c1": 0.5},
        "peak_rss_mb": 100.0,
    }


def task(ours_dev, day_dev) -> dict:
    return {
        "metric": "token accuracy",
        "rows": {
            "ours default": row(95.75, ours_dev, 36_647, 97.1),
            "crfsuite everyday": row(95.99, day_dev, 78_760, 99.7),
        },
    }


def test_rows_scored_on_dev_get_a_dev_column_and_a_dev_verdict(capsys):
    defaults = defaults_module()
    defaults.print_task("gum-xpos", task(96.07, 96.15))
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("| system"))
    cells = [c.strip() for c in header.strip("|").split("|")]
    assert cells[1:3] == ["dev token accuracy", "test token accuracy"]
    ours = next(line for line in out.splitlines() if line.startswith("| ours default"))
    assert [c.strip() for c in ours.strip("|").split("|")][1:3] == ["96.07", "95.75"]
    # 96.07 - 96.15 on dev, 95.75 - 95.99 on test
    assert "ours - crfsuite everyday -0.08 points" in out
    assert "-0.24 points" in out


def test_a_run_without_dev_scores_has_no_dev_column(capsys):
    defaults = defaults_module()
    defaults.print_task("chunk", task(None, None))
    out = capsys.readouterr().out
    assert "dev token accuracy" not in out
    assert "on the dev data" not in out
    ours = next(line for line in out.splitlines() if line.startswith("| ours default"))
    assert [c.strip() for c in ours.strip("|").split("|")][1] == "95.75"
