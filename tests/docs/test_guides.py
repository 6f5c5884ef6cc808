"""The guides' code blocks run as a reader would type them: on each page of :data:`GUIDES`,
every block marked to run as it is (``<!-- docs-test -->``), in order, in a folder of its own
holding ``corpora/``, ``constraints/`` and ``chunker.tgm`` (the quick start's chunker, which
the pages name); the README's commands on files of one's own (``own-data``: the samples copied
to the names it uses) and its Python; and the feature file of the feature templates page,
trained with."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from _pages import RUN_PAGES, marked, reader_env, run_block

from _helpers import ROOT

#: the guides whose blocks run here, each in a folder of its own
GUIDES = (
    "docs/data.md",
    "docs/training.md",
    "docs/tagging.md",
    "docs/evaluation.md",
    "docs/semi-supervised.md",
    "docs/new-domain.md",
    "docs/sklearn.md",
    "docs/model-files.md",
    "docs/errors.md",
)

#: what each guide's blocks must leave in its folder
LEAVES = {
    "docs/data.md": ("my.tgm", "xpos.tgm", "cites.tgm", "recipes.tgm"),
    "docs/training.md": ("best.tgm", "fixed.tgm", "crf.tgm", "clusters.tsv", "clustered.tgm"),
    "docs/tagging.md": ("tagged.txt", "tagged.jsonl", "marginals.jsonl"),
    "docs/evaluation.md": ("cites.tgm",),
    "docs/semi-supervised.md": ("recipes.tgm",),
    "docs/new-domain.md": ("first.tgm", "pos.tgm", "semisup.tgm"),
    "docs/errors.md": ("bad.txt",),
}


def test_every_page_with_blocks_to_run_is_run():
    """A page with blocks marked to run as they are belongs to a test that runs them."""
    run_here = set(GUIDES) | {"README.md"}
    pages = {page for page in RUN_PAGES if marked(page)}
    assert pages - run_here == {"docs/quickstart.md"}
    assert all(marked(page) for page in GUIDES), "a guide without a block to run"


@pytest.fixture(scope="module")
def chunker(tmp_path_factory):
    """The quick start's chunker, trained once for every page that tags with it."""
    folder = tmp_path_factory.mktemp("chunker")
    shutil.copytree(ROOT / "corpora", folder / "corpora")
    train = marked("docs/quickstart.md")[0]
    assert train.code.startswith("tagger train corpora/sample_chunk.txt"), train.code
    first_line = train.code.splitlines()[0]
    run_block(train._replace(code=first_line), folder, reader_env())
    return folder / "chunker.tgm"


def reader_folder(tmp_path, chunker):
    shutil.copytree(ROOT / "corpora", tmp_path / "corpora")
    shutil.copytree(ROOT / "constraints", tmp_path / "constraints")
    shutil.copy(chunker, tmp_path / "chunker.tgm")
    return tmp_path


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.parametrize("page", GUIDES)
def test_a_guide_runs(page, tmp_path, chunker):
    folder = reader_folder(tmp_path, chunker)
    env = reader_env()
    for block in marked(page):
        run_block(block, folder, env)
    for name in LEAVES.get(page, ()):
        assert (folder / name).stat().st_size > 0, f"{page}: no {name}"


@pytest.mark.slow
@pytest.mark.ci
def test_the_readme_runs_on_files_of_ones_own(tmp_path, chunker):
    folder = reader_folder(tmp_path, chunker)
    for name, sample in (
        ("my_train.txt", "sample_chunk.txt"),
        ("my_dev.txt", "sample_chunk_dev.txt"),
        ("my_test.txt", "sample_chunk_dev.txt"),
        ("new_text.txt", "sample_chunk_dev.txt"),
    ):
        shutil.copy(folder / "corpora" / sample, folder / name)
    env = reader_env()
    (own,) = marked("README.md", "own-data")
    out = run_block(own, folder, env)
    assert "B-NP" in (folder / "tagged.txt").read_text()
    assert "m3n-owlqn" in out.stdout  # `tagger learners` lists the default
    (python,) = marked("README.md")
    out = run_block(python, folder, env)
    f1, nonzero = out.stdout.split()
    assert 0 < float(f1) <= 1 and int(nonzero) > 0


@pytest.mark.slow
@pytest.mark.ci
def test_the_feature_file_of_the_templates_page_trains(tmp_path, chunker):
    folder = reader_folder(tmp_path, chunker)
    (spec,) = marked("docs/reference.md", "feature-file")
    (folder / "my.toml").write_text(spec.code)
    command = "tagger train corpora/sample_chunk.txt --features my.toml --no-select -q -o f.tgm"
    run_block(spec._replace(lang="bash", code=command), folder, reader_env())
    assert (folder / "f.tgm").stat().st_size > 0


@pytest.mark.slow
@pytest.mark.ci
@pytest.mark.parametrize("mark", ["pair-file", "order-file"])
def test_the_pair_and_order_files_of_the_templates_page_train_and_tag(tmp_path, chunker, mark):
    folder = reader_folder(tmp_path, chunker)
    (spec,) = marked("docs/reference.md", mark)
    (folder / "f.toml").write_text(spec.code)
    env = reader_env()
    train = "tagger train corpora/sample_chunk.txt --features f.toml -q -o p.tgm"
    tag = "tagger tag p.tgm corpora/sample_chunk_dev.txt -o p.txt"
    inspect = "tagger inspect p.tgm"
    for command in (train, tag):
        run_block(spec._replace(lang="bash", code=command), folder, env)
    assert "B-NP" in (folder / "p.txt").read_text()
    shown = run_block(spec._replace(lang="bash", code=inspect), folder, env).stdout
    assert ("order: 2" in shown) == (mark == "order-file")
    refused = (
        "tagger train corpora/sample_chunk.txt --features f.toml --learner perceptron -o x.tgm"
    )
    out = subprocess.run(refused, shell=True, cwd=folder, env=env, capture_output=True, text=True)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "does not train label-pair templates" in lines[0]
    assert not (folder / "x.tgm").exists()
