"""Training on a Dask cluster (``scheduler=`` of m3n-owlqn, crf-l1 and crf-l2; ``tagger train
--scheduler``): the workers compute the objective's chunks, the driver adds them in chunk
order, and the value, the gradient and the trained weights are those computed in this
process, to the bit, whatever the number of parts (first-order, label-pair and second-order
models)."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

pytest.importorskip("dask.distributed")

from tagger.api import Tagger  # noqa: E402
from tagger.chain.layout import ChainModel  # noqa: E402
from tagger.cli.commands import cli  # noqa: E402
from tagger.errors import TaggerError  # noqa: E402
from tagger.features import FeatureSpec, Featurizer  # noqa: E402
from tagger.io import load_corpus  # noqa: E402
from tagger.learners.solvers.crf_objective import CRFObjective  # noqa: E402
from tagger.learners.solvers.dask_client import connect  # noqa: E402
from tagger.learners.solvers.distributed_objective import (  # noqa: E402
    ClusterData,
    DaskObjective,
)

from _helpers import SAMPLE, SAMPLE_DEV

TEMPLATES = ["bias", "w[0]", "w[-1]", "w[1]", "p[0]", "p[-1]|p[0]"]
SPECS = {
    "first-order": {"featurizer": {"columns": ["w", "p"], "templates": TEMPLATES}},
    "label pairs": {
        "featurizer": {"columns": ["w", "p"], "templates": TEMPLATES, "pair_templates": ["p[0]"]}
    },
    "second order": {"featurizer": {"columns": ["w", "p"], "templates": TEMPLATES, "order": 2}},
}


@pytest.fixture(scope="module")
def cluster():
    from dask.distributed import LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as c:
        yield c.scheduler_address


@pytest.fixture(scope="module")
def sentences():
    return load_corpus(SAMPLE, "conll"), load_corpus(SAMPLE_DEV, "conll")


def _features(tmp_path, kind: str) -> str:
    spec = SPECS[kind]["featurizer"]
    lines = ["[featurizer]", f"columns = {spec['columns']!r}", f"templates = {spec['templates']!r}"]
    if "pair_templates" in spec:
        lines.append(f"pair_templates = {spec['pair_templates']!r}")
    if "order" in spec:
        lines.append(f"order = {spec['order']}")
    path = tmp_path / f"{kind.replace(' ', '-')}.toml"
    path.write_text("\n".join(lines).replace("'", '"') + "\n")
    return str(path)


def _model(sentences, kind: str):
    spec = FeatureSpec.from_dict(SPECS[kind])
    fz = Featurizer(spec).fit(sentences)
    X = fz.transform(sentences)
    labels = sorted({lab for s in sentences for lab in s.labels})
    y = np.array([labels.index(lab) for s in sentences for lab in s.labels], dtype=np.int32)
    pairs = fz.pair_attributes() if "pair_templates" in SPECS[kind]["featurizer"] else None
    order = SPECS[kind]["featurizer"].get("order", 1)
    model = ChainModel.from_data(X, y, len(labels), fz.n_attributes, pair_attrs=pairs, order=order)
    return model, X, y


@pytest.mark.parametrize("kind", sorted(SPECS))
@pytest.mark.parametrize("partitions", [1, 3, 0])
def test_the_objective_on_a_cluster_is_the_objective_here(cluster, sentences, kind, partitions):
    """The smoothed hinge (cost 1, tau 1/2) and the likelihood, value and gradient, at random
    weights: equal to the bit."""
    model, X, y = _model(sentences[0], kind)
    here = CRFObjective(model, X, y)
    client = connect(cluster)
    try:
        data = ClusterData(client, model, X, y, partitions)
        assert len(data.bounds) - 1 >= 4  # several chunks, cut into parts
        there = DaskObjective(data)
        rng = np.random.default_rng(7)
        for cost, tau in [(1.0, 0.5), (0.0, 1.0)]:
            w = rng.normal(scale=0.3, size=model.n_weights)
            for fun in (here, there):
                fun.cost, fun.temperature = cost, tau
            f1, g1 = here(w)
            f2, g2 = there(w)
            assert f1 == f2 and np.array_equal(g1, g2)
            assert here.expected_misses == there.expected_misses
        assert there.n_evals == 2
        data.close()
    finally:
        client.close()


@pytest.mark.parametrize(
    ("learner", "kind", "select"),
    [
        ("m3n-owlqn", "first-order", True),  # the default: a path, its points sharing the data
        ("m3n-owlqn", "second order", False),
        ("crf-l1", "label pairs", False),
        ("crf-l2", "first-order", False),
    ],
)
def test_weights_trained_on_a_cluster_are_those_trained_here(
    cluster, sentences, tmp_path, learner, kind, select
):
    train, dev = sentences
    features = _features(tmp_path, kind)

    def fit(**extra):
        params = {"epochs": 25, **extra} if not select else extra
        tg = Tagger(features=features, learner=learner, params=params, seed=0, select=select)
        return tg.fit(train, dev=dev).weights_

    here = fit()
    there = fit(scheduler=cluster, partitions=3)
    assert np.count_nonzero(here) > 0
    assert np.array_equal(here, there)


def test_the_command_line_trains_on_a_cluster(cluster, tmp_path):
    out = [tmp_path / "here.tagger", tmp_path / "there.tagger"]
    runner = CliRunner()
    base = ["train", str(SAMPLE), "--dev", str(SAMPLE_DEV), "-q", "--no-select", "--seed", "0"]
    r1 = runner.invoke(cli, [*base, "-o", str(out[0])])
    r2 = runner.invoke(cli, [*base, "-o", str(out[1]), "--scheduler", cluster])
    assert r1.exit_code == 0 and r2.exit_code == 0, r1.output + r2.output
    w = [Tagger.load(p).weights_ for p in out]
    assert np.array_equal(w[0], w[1])
    # where it ran is not kept, as the thread count is not: --config-from trains here
    stored = Tagger.load(out[1]).info_["config"]["params"]
    assert "scheduler" not in stored and "partitions" not in stored
    again = tmp_path / "again.tagger"
    r3 = runner.invoke(cli, ["train", "--config-from", str(out[1]), "-o", str(again), "-q"])
    assert r3.exit_code == 0, r3.output
    assert np.array_equal(Tagger.load(again).weights_, w[0])


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["--scheduler", "http://127.0.0.1:8787"], 2, "is a web address"),
        (["--scheduler", "tcp://127.0.0.1:1", "--learner", "hmm"], 2, "trains in this process"),
        (["--scheduler", "tcp://127.0.0.1:1", "--learner", "auto"], 2, "trains in this process"),
        (["--scheduler", "tcp://127.0.0.1:1"], 1, "no Dask scheduler answers at tcp://127.0.0.1:1"),
    ],
)
def test_a_scheduler_that_cannot_train_is_one_line_before_any_data_is_read(
    tmp_path, args, status, message
):
    r = CliRunner().invoke(cli, ["train", str(SAMPLE), "-o", str(tmp_path / "m.tagger"), *args])
    assert r.exit_code == status, r.output
    assert message in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1
    assert not (tmp_path / "m.tagger").exists()


def test_a_learner_with_no_scheduler_at_the_address_says_so(monkeypatch, sentences):
    from tagger.learners.solvers import dask_client

    monkeypatch.setattr(dask_client, "CONNECT_TIMEOUT", "1s")
    tg = Tagger(
        features="chunk", learner="crf-l1", select=False, params={"scheduler": "tcp://127.0.0.1:9"}
    )
    with pytest.raises(TaggerError, match="no Dask scheduler answers at tcp://127.0.0.1:9"):
        tg.fit(sentences[0][:5])
