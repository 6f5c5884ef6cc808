"""The two generated pages are what their generators write now: docs/learner-reference.md from
the learners' parameter tables (docs/gen/learners.py), docs/bench-tables.md from the benchmark
JSON committed under bench/out/ (bench/tables.py); and bench/tables.py reads each layout it
knows and refuses, in one line, a file it does not."""

from __future__ import annotations

import importlib.util
import json

import pytest

from _helpers import ROOT


def load_script(relative: str):
    """A script of the repository (not a package module) imported by its path."""
    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(path.stem + "_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tables():
    return load_script("bench/tables.py")


def test_the_learner_reference_is_up_to_date():
    gen = load_script("docs/gen/learners.py")
    expected = gen.render()
    assert gen.PAGE.read_text(encoding="utf-8") == expected, (
        "docs/learner-reference.md is out of date: run python docs/gen/learners.py"
    )


def test_the_learner_reference_has_every_learner_and_parameter():
    from tagger.learners import DEFAULT_LEARNER, LEARNERS

    text = (ROOT / "docs" / "learner-reference.md").read_text(encoding="utf-8")
    for name, cls in LEARNERS.items():
        assert f"\n## {name}\n" in text
        for p in cls.params:
            assert f"| `{p.name}` | `{p.default!r}` |" in text
    assert text.index(f"## {DEFAULT_LEARNER}\n") < min(
        text.index(f"## {name}\n") for name in LEARNERS if name != DEFAULT_LEARNER
    )


def test_the_benchmark_tables_are_up_to_date(tables):
    committed = tables.committed_json()
    assert committed, "no benchmark JSON is committed under bench/out/"
    assert tables.PAGE.read_text(encoding="utf-8") == tables.page(committed), (
        "docs/bench-tables.md is out of date: run python bench/tables.py -o docs/bench-tables.md"
    )


def test_the_lp_paper_table_is_up_to_date():
    """docs/lp-paper-table.md is what bench/lp_paper.py writes from the committed split files of
    the commit the page names."""
    lp_table = load_script("bench/lp_paper_table.py")
    commit = lp_table.page_commit()
    assert commit, "docs/lp-paper-table.md does not name the commit it was generated for"
    expected, _ = lp_table.page_text(ROOT / "bench" / "out", commit)
    assert lp_table.PAGE.read_text(encoding="utf-8") == expected, (
        f"docs/lp-paper-table.md is out of date: run python bench/lp_paper.py --table "
        f"--commit {commit} -o docs/lp-paper-table.md"
    )


def test_every_figure_comes_with_its_commit_machine_and_load(tables):
    text = tables.PAGE.read_text(encoding="utf-8")
    for path in tables.committed_json():
        data = json.loads(path.read_text())
        part = text.split(f"## {path.relative_to(ROOT).as_posix()}\n", 1)[1].split("\n## ")[0]
        machine = data["machine"]
        assert f"| commit | `{machine['commit']}` |" in part
        assert machine["cpu"] in part and f"{machine['cores']} cores" in part
        assert " ".join(f"{x:g}" for x in machine["load_average_at_start"]) in part


MACHINE = {
    "cores": 2,
    "usable_cores": 2,
    "cpu": "Test CPU",
    "platform": "Linux",
    "python": "3.11",
    "numpy": "2",
    "numba": "0.60",
    "numba_threads": 2,
    "python-crfsuite": "0.9",
    "crfsuite": "0.12",
    "tagger": "0.1.0",
    "commit": "abc1234",
    "load_average_at_start": [0.25, 0.5, 1.0],
}


def test_a_chunking_run_has_every_system_in_one_table(tables, tmp_path):
    row = {
        "f1": 0.9352,
        "accuracy": 0.9595,
        "train_seconds": 14.1,
        "e2e_tokens_per_s": 374601.2,
        "decode_tokens_per_s": 2670170.7,
        "n_nonzero": 40229,
        "model_bytes": 485163,
        "peak_rss_mb": 357.4,
        "load_average_before_tagging": [0.9, 1.17, 1.51],
        "n_train_sentences": 8936,
    }
    data = {
        "command": "python bench/chunking.py",
        "machine": MACHINE,
        "quick": False,
        "repeat": 50,
        "n_tagging_tokens": 2368850,
        "systems": {"ours": row, "crfsuite-l2": dict(row, f1=0.9341, n_nonzero=None)},
    }
    path = tmp_path / "chunking.json"
    path.write_text(json.dumps(data))
    text = tables.page([path])
    assert "Written by `bench/chunking.py`." in text and "`python bench/chunking.py`" in text
    assert "| ours | 93.52 | 95.95 | 14.1 | 374,601 | 2,670,171 | 40,229 |" in text
    assert "| crfsuite-l2 | 93.41 | 95.95 | 14.1 | 374,601 | 2,670,171 | – |" in text
    assert "| load average (1, 5, 15 min) when the machine was recorded | 0.25 0.5 1 |" in text


@pytest.mark.parametrize(
    "content, expected",
    [
        ('{"machine": {}, "results": []}', "no table for a JSON file with the keys machine, "),
        ("[1, 2]", "expected a JSON object, found list"),
        ('{"machine": ', "cannot read it as JSON"),
    ],
)
def test_a_file_it_cannot_read_is_one_line(tables, tmp_path, capsys, content, expected):
    path = tmp_path / "run.json"
    path.write_text(content)
    assert tables.main([str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: ") and expected in err
    assert err.count("\n") == 1


def test_the_script_writes_and_checks_a_page(tables, tmp_path, monkeypatch, capsys):
    source = ROOT / "bench" / "out" / "compare_checkouts.json"
    page = tmp_path / "tables.md"
    assert tables.main([str(source), "-o", str(page)]) == 0
    assert page.read_text() == tables.page([source])
    monkeypatch.setattr(tables, "PAGE", page)
    assert tables.main(["--check", str(source)]) == 0
    page.write_text(page.read_text() + "a figure typed by hand\n")
    assert tables.main(["--check", str(source)]) == 1
    assert "out of date" in capsys.readouterr().err


def test_the_readme_results_table_is_up_to_date(tables):
    runs = tables.defaults_runs(tables.committed_json())
    assert runs, "no bench/defaults.py run is committed under bench/out/"
    text = tables.README.read_text(encoding="utf-8")
    assert text == tables.with_readme_table(text, tables.readme_table(runs)), (
        "README.md's results table is out of date: run python bench/tables.py --readme"
    )
    assert tables.main(["--readme", "--check"]) == 0


def test_the_readme_table_has_each_task_of_the_runs(tables):
    text = tables.README.read_text(encoding="utf-8")
    table = text.split(tables.README_BEGIN, 1)[1].split(tables.README_END, 1)[0]
    for path in tables.defaults_runs(tables.committed_json()):
        data = json.loads(path.read_text())
        for task, res in data["tasks"].items():
            ours, day = res["rows"]["ours default"], res["rows"]["crfsuite everyday"]
            row = next(line for line in table.splitlines() if tables.README_TASKS[task] in line)
            cells = [c.strip() for c in row.strip("|").split("|")]
            assert cells[1:7] == [
                f"{ours['test']:.2f}",
                f"{ours['n_nonzero']:,}",
                f"{ours['seconds']:.0f}",
                f"{day['test']:.2f}",
                f"{day['n_nonzero']:,}",
                f"{day['seconds']:.0f}",
            ]
            assert data["machine"]["commit"] in cells[7]


def test_the_readme_table_is_written_and_checked(tables, tmp_path, capsys):
    data = {
        "machine": MACHINE,
        "tasks": {
            "chunk": {
                "metric": "chunk F1",
                "rows": {
                    "ours default": {"test": 93.8, "n_nonzero": 19306, "seconds": 53.2},
                    "crfsuite everyday": {"test": 93.86, "n_nonzero": 53325, "seconds": 44.0},
                },
            }
        },
    }
    run = tmp_path / "defaults-chunk.json"
    run.write_text(json.dumps(data))
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{tables.README_BEGIN}\nold\n{tables.README_END}\n\nafter\n")
    assert tables.main(["--readme", "--check", "-o", str(readme), str(run)]) == 1
    assert "out of date" in capsys.readouterr().err
    assert tables.main(["--readme", "-o", str(readme), str(run)]) == 0
    text = readme.read_text()
    assert "| CoNLL-2000 chunking (chunk F1) | 93.80 | 19,306 | 53 | 93.86 | 53,325 | 44 |" in text
    assert "`abc1234`, 2 cores" in text and text.endswith(f"{tables.README_END}\n\nafter\n")
    assert tables.main(["--readme", "--check", "-o", str(readme), str(run)]) == 0
    readme.write_text("# x\n\nno markers\n")
    assert tables.main(["--readme", "-o", str(readme), str(run)]) == 1
    assert "no results table to fill" in capsys.readouterr().err
