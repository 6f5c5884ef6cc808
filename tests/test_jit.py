"""Kernels compiled on first use (:mod:`tagger.jit`): small inputs are tagged without starting
numba, with the same output as the compiled kernels; the NumPy-built hash table finds what one
built key by key finds."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import numpy as np
import pytest

from tagger import Tagger, jit
from tagger.features.hash_table import table_for

from _helpers import ROOT, run_cli

CORPORA = ROOT / "corpora"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Models of three presets trained on the shipped samples, and an input for each."""
    d = tmp_path_factory.mktemp("jit")
    jobs = {
        "chunk": (CORPORA / "sample_chunk.txt", CORPORA / "sample_chunk_dev.txt", []),
        "pos": (
            CORPORA / "sample_pos.conllu",
            CORPORA / "sample_pos.conllu",
            ["--features", "pos"],
        ),
        "citation": (
            CORPORA / "sample_citations.txt",
            CORPORA / "sample_citations.txt",
            ["--features", "citation", "--learner", "crf-l2"],
        ),
    }
    out = {}
    for name, (train, test, extra) in jobs.items():
        path = d / f"{name}.tgm"
        r = run_cli("train", train, "-o", path, "--set", "epochs=3", "-q", *extra)
        assert r.exit_code == 0, r.output
        out[name] = (path, test)
    return out


def test_no_module_but_jit_imports_numba_on_import():
    """Importing any module of the package leaves numba alone: only tagger.jit starts it."""
    found = []
    for path in sorted((ROOT / "tagger").rglob("*.py")):
        if path.name == "jit.py" and path.parent.name == "tagger":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n == "numba" or n.startswith("numba.") for n in names):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []


SCRIPT = """
import json, sys
from tagger import Tagger, jit
from tagger.io import read_corpus

jobs = {}
for name, (model, test) in json.loads(sys.argv[1]).items():
    tagger = Tagger.load(model)
    fmt = "conllu" if test.endswith(".conllu") else "auto"
    sentences = list(read_corpus(test, fmt, labeled=False))[:20]
    for s in sentences:
        del s.columns[tagger.featurizer_.spec.n_columns:]
    with jit.interpreted():
        p = tagger.predict_batch(sentences, marginals=True)
    jobs[name] = (tagger, sentences, p.ids.tolist(), p.marginals.tolist())
out = {"numba_during_interpreted": jit.started()}
for name, (tagger, sentences, ids, marginals) in jobs.items():
    p = tagger.predict_batch(sentences, marginals=True)
    out[name] = {"same_labels": p.ids.tolist() == ids,
                 "same_marginals": p.marginals.tolist() == marginals, "tokens": len(ids)}
out["numba_after"] = jit.started()
print(json.dumps(out))
"""


def test_interpreted_kernels_give_the_compiled_output(models):
    """Featurization, scores, Viterbi and forward-backward run by the interpreter (before numba
    starts, in a fresh process) give the compiled kernels' labels and marginals exactly."""
    arg = json.dumps({k: [str(m), str(t)] for k, (m, t) in models.items()})
    r = subprocess.run(
        [sys.executable, "-c", SCRIPT, arg], capture_output=True, text=True, cwd=ROOT
    )
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert (result.pop("numba_during_interpreted"), result.pop("numba_after")) == (False, True)
    for name, got in result.items():
        assert got["tokens"] > 50, name
        assert got == {"same_labels": True, "same_marginals": True, "tokens": got["tokens"]}


TAG = """
import sys
from tagger.cli import main
sys.argv[0] = "tagger"
try:
    main()
except SystemExit as e:
    code = e.code
print("numba" in sys.modules, code)
"""


def test_small_input_is_tagged_without_starting_numba(models, tmp_path):
    """`tagger tag` of a short input never imports numba and writes what the compiled path
    writes; a longer one starts numba."""
    model, _ = models["chunk"]
    dev = (CORPORA / "sample_chunk_dev.txt").read_text()
    short = tmp_path / "short.txt"
    short.write_text(dev.split("\n\n")[0] + "\n")
    long = tmp_path / "long.txt"
    n_labels = len(Tagger.load(model).labels_)
    long.write_text(dev * (1 + 2 * jit.INTERPRETED_WORK // n_labels**2 // dev.count("\n")))
    for path, numba_expected in ((short, False), (long, True)):
        r = subprocess.run(
            [
                sys.executable,
                "-c",
                TAG,
                "tag",
                str(model),
                str(path),
                "-o",
                str(tmp_path / "sub.txt"),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == [str(numba_expected), "0"], path.name
        in_process = run_cli("tag", model, path, "-o", tmp_path / "here.txt")
        assert in_process.exit_code == 0, in_process.output
        assert (tmp_path / "sub.txt").read_bytes() == (tmp_path / "here.txt").read_bytes()


MULTIPLIER = 0x9E3779B97F4A7C15


def _home(key, cap):
    return ((key * MULTIPLIER) % 2**64 >> 17) % cap


def _insert_one_by_one(keys, cap):
    """The table built key by key with linear probing, in plain Python integers."""
    table = [-1] * cap
    for i, key in enumerate(keys):
        s = _home(key, cap)
        while table[s] != -1:
            s = (s + 1) % cap
        table[s] = i
    return table


def _probe(key, table_keys, table_vals):
    cap = len(table_keys)
    s = _home(key, cap)
    while table_keys[s] != -1:
        if table_keys[s] == key:
            return int(table_vals[s])
        s = (s + 1) % cap
    return -1


def _keys_at_home(slot, cap, count, rng):
    """``count`` int64 keys whose home slot is ``slot`` (the hash inverted)."""
    inverse = pow(MULTIPLIER, -1, 2**64)
    low = (cap - 1) << 17
    out = []
    for r in rng.integers(0, 2**63, count):
        h = (int(r) * 2 & ~low) | (slot << 17)
        k = h * inverse % 2**64
        out.append(k - 2**64 if k >= 2**63 else k)
    return out


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000, 5000])
def test_numpy_table_finds_every_key_as_one_built_key_by_key(n):
    rng = np.random.default_rng(n)
    cap = 1 << max(1, (2 * n - 1).bit_length())
    # a third of the keys crowd into three home slots, so that probes run long and wrap
    crowded = [k for slot in (0, cap // 2, cap - 1) for k in _keys_at_home(slot, cap, n // 9, rng)]
    keys = crowded + [int(k) for k in rng.integers(-(2**62), 2**62, n)]
    keys = [k for k in dict.fromkeys(keys) if k != -1][:n]
    rng.shuffle(keys)
    assert all(_home(k, cap) == _home(crowded[0], cap) for k in crowded[: n // 9])
    table_keys, table_vals = table_for(np.array(keys, dtype=np.int64))
    assert len(table_keys) == cap
    reference = _insert_one_by_one(keys, cap)
    ref_keys = [keys[i] if i >= 0 else -1 for i in reference]
    present = set(keys)
    absent = [int(k) for k in rng.integers(0, 2**62, 200) if int(k) not in present]
    for key in keys + absent:
        assert _probe(key, table_keys, table_vals) == _probe(key, ref_keys, reference)
    assert sorted(int(v) for v in table_vals if v >= 0) == list(range(n))


def test_start_puts_dispatchers_in_place_of_kernels():
    from tagger.inference import max_product

    jit.start()
    assert jit.started()
    assert not isinstance(max_product.viterbi_batch_into, jit.Kernel)
    assert jit.prange is not range and max_product.prange is jit.prange


USER_KERNEL = """
import numba
import numpy as np
from tagger import jit
from tagger.inference.max_product import labeling_score   # before numba starts

assert not jit.started() and isinstance(labeling_score, jit.Kernel)

@numba.njit
def score(state, trans, y):
    return labeling_score(state, trans, y)

rng = np.random.default_rng(0)
state, trans = rng.normal(size=(6, 4)), rng.normal(size=(4, 4))
y = rng.integers(0, 4, 6).astype(np.int32)
by_hand = state[np.arange(6), y].sum() + sum(trans[y[t - 1], y[t]] for t in range(1, 6))
print(abs(score(state, trans, y) - by_hand) < 1e-12, jit.started())
"""


def test_a_kernel_imported_before_numba_starts_compiles_inside_user_code():
    """The kernels are a public interface: a user's own numba function may call one it
    imported while it was still a :class:`~tagger.jit.Kernel`."""
    r = subprocess.run(
        [sys.executable, "-c", USER_KERNEL], capture_output=True, text=True, cwd=ROOT
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True"]


@pytest.fixture
def parallel_min_bytes():
    """Restores the size from which parallel kernels run in parallel after a test changes it."""
    before = jit.parallel_min_bytes()
    yield
    jit.set_parallel_min_bytes(before)


def test_kernels_reaching_parallel_loops_get_serial_twins():
    """A parallel kernel, and a serial one that calls it, become :class:`~tagger.jit.Twins`;
    a kernel that reaches no parallel loop stays a plain dispatcher. Twins are cached apart."""
    from tagger.inference import max_product, sum_product

    jit.start()
    assert isinstance(max_product._viterbi_batch_impl, jit.Twins)  # parallel=True
    assert isinstance(max_product.viterbi_batch_into, jit.Twins)  # calls it
    assert isinstance(sum_product.forward_backward_batch_into, jit.Twins)
    for plain in (max_product.viterbi_into, sum_product.forward_backward_into):
        assert not isinstance(plain, (jit.Twins, jit.Kernel)), plain
    twin = sum_product.forward_backward_batch_into.serial
    assert twin.py_func.__qualname__ == "forward_backward_batch_into__serial"
    assert not twin.targetoptions.get("parallel")
    assert sum_product.forward_backward_batch_into.parallel.targetoptions["parallel"]
    # the twin of a caller calls the twin of its callee
    space = max_product.viterbi_batch_into.serial.py_func.__globals__
    assert space["_viterbi_batch_impl"] is max_product._viterbi_batch_impl.serial


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_serial_twin_and_parallel_kernel_give_the_same_bits(seed, parallel_min_bytes):
    """Forward-backward over a batch (log-sum-exps and sums) by the serial twin and by the
    parallel kernel: the same bits; which one runs follows the arrays' bytes."""
    from tagger.inference import sum_product

    print(f"seed={seed}")
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 30, 150)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    L = 7
    state = rng.normal(scale=3.0, size=(int(offsets[-1]), L))
    trans = rng.normal(size=(L, L))
    trans[rng.random((L, L)) < 0.2] = -np.inf
    kernel = sum_product.forward_backward_batch_into
    jit.start()

    def run(min_bytes):
        jit.set_parallel_min_bytes(min_bytes)
        node = np.empty_like(state)
        edge = np.empty((len(lengths), L, L))
        log_z = np.empty(len(lengths))
        kernel(state, offsets, trans, node, edge, log_z)
        return node, edge, log_z

    serial = run(jit.PARALLEL_MIN_BYTES)
    parallel = run(0)
    for a, b in zip(serial, parallel):
        assert a.tobytes() == b.tobytes()
    n_serial, n_parallel = len(kernel.serial.signatures), len(kernel.parallel.signatures)
    assert n_serial >= 1 and n_parallel >= 1


def _row_sums(x, out):
    for i in jit.prange(x.shape[0]):
        out[i] = x[i].sum()


def test_work_per_byte_moves_the_size_from_which_a_kernel_runs_in_parallel(parallel_min_bytes):
    """A kernel declared with ``work_per_byte=N`` runs its parallel dispatcher once its
    arguments' bytes times N reach the threshold; the option never reaches numba. The
    constrained decoders are declared so."""
    from tagger.chain import constrained
    from tagger.constraints import decoding

    numba = jit.start()
    x = np.arange(60.0).reshape(12, 5)
    out = np.empty(12)
    nbytes = x.nbytes + out.nbytes
    jit.set_parallel_min_bytes(3 * nbytes)
    plain = jit.Twins(_row_sums, {"parallel": True, "nogil": True}, numba)
    heavy = jit.Twins(_row_sums, {"parallel": True, "nogil": True, "work_per_byte": 4}, numba)
    for kernel, ran_parallel in ((plain, False), (heavy, True)):
        out[:] = 0.0
        kernel(x, out)
        assert np.array_equal(out, x.sum(axis=1))
        assert bool(kernel.parallel.signatures) is ran_parallel
        assert bool(kernel._serial is not None and kernel._serial.signatures) is not ran_parallel
        assert "work_per_byte" not in kernel.parallel.targetoptions
    for kernel in (decoding._decode_batch, constrained._pair_constrained_batch):
        assert kernel.work_per_byte > 1


def test_array_bytes_counts_arrays_inside_tuples():
    a = np.zeros(10)
    b = np.zeros((3, 4), dtype=np.int32)
    assert jit._array_bytes((a, 3, 2.5, (b, (a,)), "x")) == 80 + 48 + 80
    assert jit._array_bytes(()) == 0
