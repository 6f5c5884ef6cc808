"""The seam between learners and the model: ``tagger.chain`` is enough to write a learner, and
the learners import nothing else of the package.

A structured perceptron written against ``tagger.chain`` alone fits a separable toy chain to
zero training errors, and its decoding agrees with brute-force enumeration over every labeling
(``tests/_brute.py``, which calls none of the package's kernels). A parse of every module under
``tagger/learners`` checks the import rule that CI's import-linter contract enforces.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from tagger.chain import (
    ChainModel,
    FeatureBatch,
    Featurized,
    SparseAccumulator,
    add_difference,
    fb_buffers,
    fb_sentence,
    fb_tables,
    labeling_score,
    loss_augmented_viterbi_into,
    sentence_state_scores,
    viterbi_into,
)
from tagger.learners.base import Learner, Param, TrainingProblem

from _brute import marginals, path_score, sentence_features

ROOT = Path(__file__).resolve().parents[2]
L = 3


class ToyPerceptron(Learner):
    """Collins' structured perceptron (EMNLP 2002), not averaged: decode each sentence with
    Viterbi and, where it errs, w += f(x, y) - f(x, y^). Uses tagger.chain only."""

    name = "toy-perceptron"
    params = (Param("epochs", 50, int, "passes over the training data", low=1),)

    def _fit(self, problem: TrainingProblem, settings: dict, seed: int, w0) -> np.ndarray:
        model, X, y = problem.model, problem.X, problem.y
        layout, batch = model.layout, FeatureBatch.of(X)
        w = np.zeros(model.n_weights)
        acc = SparseAccumulator.new(model.n_weights)
        pred = np.empty_like(y)
        for epoch in range(1, settings["epochs"] + 1):
            mistakes = 0
            for s in range(X.n_sentences):
                a, b = int(X.offsets[s]), int(X.offsets[s + 1])
                state = np.empty((b - a, model.n_labels))
                sentence_state_scores(layout, batch, w, a, b, state)
                trans = np.ascontiguousarray(model.transitions(w))
                viterbi_into(state, trans, pred[a:b])
                if np.array_equal(pred[a:b], y[a:b]):
                    continue
                mistakes += 1
                n = add_difference(layout, batch, a, b, y, pred, 1.0, acc, 0)
                touched = acc.touched[:n]
                w[touched] += acc.values[touched]
                acc.values[touched] = 0.0
                acc.mark[touched] = False
            self.report(problem, {"epoch": epoch, "mistakes": mistakes})
            if mistakes == 0:
                break
        return w


def _toy_problem(seed: int = 0, n: int = 20) -> TrainingProblem:
    """A separable chain: each token has one of six key attributes, which names its label
    (attr % L), and one or two noise attributes of four others."""
    rng = np.random.default_rng(seed)
    n_key, n_noise = 2 * L, 4
    lengths = rng.integers(1, 5, size=n)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    N = int(offsets[-1])
    y = rng.integers(0, L, size=N).astype(np.int32)
    rows = []
    for t in range(N):
        key = int(y[t]) + L * int(rng.integers(0, n_key // L))
        noise = n_key + rng.choice(n_noise, rng.integers(1, 3), replace=False)
        rows.append(np.sort(np.concatenate([[key], noise])))
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    X = Featurized(indptr, np.concatenate(rows).astype(np.int32), offsets)
    return TrainingProblem(ChainModel.from_data(X, y, L, n_key + n_noise), X, y)


def _sentence_lattice(model: ChainModel, X, w, s):
    a, b = int(X.offsets[s]), int(X.offsets[s + 1])
    state = np.empty((b - a, model.n_labels))
    sentence_state_scores(model.layout, FeatureBatch.of(X), w, a, b, state)
    return a, b, state, np.ascontiguousarray(model.transitions(w))


def test_a_learner_written_against_the_seam_fits_a_separable_chain():
    problem = _toy_problem()
    learner = ToyPerceptron()
    w = learner.fit(problem)
    assert learner.trace_[-1]["mistakes"] == 0
    model, X = problem.model, problem.X
    for s in range(X.n_sentences):
        a, b, state, trans = _sentence_lattice(model, X, w, s)
        pred = np.empty(b - a, np.int32)
        viterbi_into(state, trans, pred)
        np.testing.assert_array_equal(pred, problem.y[a:b])
        # decoding agrees with enumeration of every labeling's f(x, y) . w
        paths, feats = sentence_features(model, X, s)
        np.testing.assert_array_equal(pred, paths[np.argmax(feats @ w)])


@pytest.mark.parametrize("seed", [1, 2])
def test_the_seams_scores_and_marginals_match_enumeration(seed):
    problem = _toy_problem(seed, n=6)
    model, X, y = problem.model, problem.X, problem.y
    w = np.random.default_rng(seed).normal(size=model.n_weights)
    tables = fb_tables(np.ascontiguousarray(model.transitions(w)))
    for s in range(X.n_sentences):
        a, b, state, trans = _sentence_lattice(model, X, w, s)
        paths, feats = sentence_features(model, X, s)
        scores = feats @ w
        gold = y[a:b]
        assert labeling_score(state, trans, gold) == pytest.approx(path_score(state, trans, gold))
        assert labeling_score(state, trans, gold) == pytest.approx(model.score(X, s, gold, w))
        out = np.empty(b - a, np.int32)
        hamming = (paths != gold).sum(axis=1)
        best = loss_augmented_viterbi_into(state, trans, gold, 1.0, out)
        assert best == pytest.approx(np.max(scores + hamming))
        np.testing.assert_array_equal(out, paths[np.argmax(scores + hamming)])
        node, edge = np.empty((b - a, L)), np.empty((L, L))
        log_z = fb_sentence(state, trans, tables, fb_buffers(b - a, L), node, edge)
        ref_z, ref_node, ref_edge = marginals(state, trans)
        assert log_z == pytest.approx(ref_z)
        np.testing.assert_allclose(node, ref_node, atol=1e-12)
        np.testing.assert_allclose(edge, ref_edge, atol=1e-12)


def test_the_weight_blocks_hold_the_joint_features_where_the_definition_puts_them():
    problem = _toy_problem(3, n=5)
    model, X, y = problem.model, problem.X, problem.y
    for s in range(X.n_sentences):
        a, b = int(X.offsets[s]), int(X.offsets[s + 1])
        f = model.joint_features(X, s, y[a:b])
        expected_trans = np.zeros((L, L))
        np.add.at(expected_trans, (y[a : b - 1], y[a + 1 : b]), 1.0)
        np.testing.assert_array_equal(model.transitions(f), expected_trans)
        np.testing.assert_array_equal(model.start_weights(f), np.eye(L)[y[a]])
        np.testing.assert_array_equal(model.end_weights(f), np.eye(L)[y[b - 1]])
        # every attribute occurrence has a parameter for its gold label (from_data saw it)
        assert model.state_weights(f).sum() == X.indptr[b] - X.indptr[a]
        labels = model.state_param_label()
        assert set(labels[model.state_weights(f) > 0]) <= set(y[a:b].tolist())
    assert len(model.state_weights(f)) + len(model.edge_weights(f)) == model.n_weights


# ---- the import rule

#: what a learner may import of the package: the seam, the learners' own modules, errors,
#: settings, the jit switch, scratch memory, and the compiled constraint data and penalties
ALLOWED = ("tagger.chain", "tagger.errors", "tagger._config", "tagger.jit", "tagger.io.scratch")
ALLOWED_PACKAGES = ("tagger.learners", "tagger.constraints")
#: constrained decoding comes through tagger.chain
FORBIDDEN = ("tagger.constraints.decoding",)


def _module_of(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, module) of every import of the package in a file of the tree at ``root``,
    relative ones resolved."""
    module = _module_of(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((node.lineno, target))
    return [(line, m) for line, m in found if m == "tagger" or m.startswith("tagger.")]


def _allowed(module: str) -> bool:
    if any(module == f or module.startswith(f + ".") for f in FORBIDDEN):
        return False
    return module in ALLOWED or any(
        module == p or module.startswith(p + ".") for p in ALLOWED_PACKAGES
    )


LEARNER_MODULES = sorted((ROOT / "tagger" / "learners").rglob("*.py"))


@pytest.mark.parametrize("path", LEARNER_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_learners_import_the_model_only_through_the_seam(path):
    bad = [f"{path.relative_to(ROOT)}:{line}: {m}" for line, m in _imports(path) if not _allowed(m)]
    assert bad == []


def test_the_import_rule_catches_a_learner_reaching_past_the_seam(tmp_path):
    fake = tmp_path / "tagger" / "learners" / "example.py"
    fake.parent.mkdir(parents=True)
    fake.write_text(
        "from tagger.inference.max_product import viterbi_into\n"
        "from tagger.constraints.decoding import constrained_decode\n"
        "from tagger.chain.layout import ChainModel\n"
        "from tagger.chain import viterbi_into\n"
        "from tagger.constraints import ViolationState\n"
        "from .solvers.owlqn import OWLQN\n"
    )
    imported = [m for _, m in _imports(fake, tmp_path)]
    assert [m for m in imported if not _allowed(m)] == [
        "tagger.inference.max_product",
        "tagger.constraints.decoding",
        "tagger.chain.layout",
    ]
    assert "tagger.learners.solvers.owlqn" in imported
