"""A hub that accepts connections and never answers: ``train hf:x/y`` fails within the hub
check's timeout with one line, instead of datasets retrying for minutes. The hub is a local
socket server: no network is needed."""

from __future__ import annotations

import socket
import threading

import pytest
from click.testing import CliRunner

from tagger.cli import cli
from tagger.errors import DatasetSourceError
from tagger.io import hf_hub
from tagger.io.hf import read_dataset


@pytest.fixture
def silent_hub(monkeypatch):
    """``HF_ENDPOINT`` at a local port that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            held.append(conn)  # kept open, never read from or written to

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr(hf_hub, "_HUB_TIMEOUT", 0.5)
    yield
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def test_api_refuses_a_hub_that_never_answers(silent_hub):
    pytest.importorskip("datasets")
    with pytest.raises(DatasetSourceError, match="does not answer .no answer within 0.5 s."):
        list(read_dataset("hf:someone/some-dataset"))


def test_train_from_a_hub_that_never_answers_is_one_line(silent_hub, tmp_path, monkeypatch):
    pytest.importorskip("datasets")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["train", "hf:x/y", "-o", "m.tgm", "-q"])
    assert result.exit_code == 1, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: hf:x/y: the Hugging Face hub at")
    assert "does not answer" in lines[0] and "HF_HUB_OFFLINE=1" in lines[0]
    assert not (tmp_path / "m.tgm").exists()
