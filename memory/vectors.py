"""A vector store over chromadb: a local folder (embedded) or a chromadb server, same code.

    store = VectorStore.open("~/.agentkit/vectors", "skills", Embedder.default())   # PersistentClient
    store = VectorStore.open("http://127.0.0.1:8000", "skills", Embedder.default())  # HttpClient
    store.upsert(["a"], ["count tracks per genre"], [{"kind": "sql"}])
    store.query("how many songs in each genre", k=3)  # [Hit(id='a', score=0.8, ...)]

We always pass the embeddings ourselves: chromadb's default embedding function downloads a model,
so the collection is opened with `embedding_function=None`. Distances are cosine; scores returned
are cosine similarities in [-1, 1].
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from agentkit.extras import require

require("numpy", "chromadb", "sentence_transformers", extra="memory", feature="the vector store")

import numpy as np

from agentkit.memory.embeddings import Embedder

_JSON_KEYS = "_json_keys"  # metadata values that are not scalars are stored as JSON strings


@dataclass
class Record:
    """One stored item."""

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Hit:
    """One query result: `score` is the cosine similarity to the query, in [-1, 1]."""

    id: str
    score: float
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


def _encode_metadata(metadata: dict[str, Any] | None) -> dict[str, Any] | None:
    if not metadata:
        return None
    out: dict[str, Any] = {}
    json_keys = []
    for key, value in metadata.items():
        if not isinstance(key, str) or key == _JSON_KEYS:
            raise ValueError(f"metadata key {key!r} is not allowed")
        if value is None or isinstance(value, (str, bool, int, float)):
            if value is not None:
                out[key] = value
        else:
            out[key] = json.dumps(value, sort_keys=True, default=str)
            json_keys.append(key)
    if json_keys:
        out[_JSON_KEYS] = ",".join(json_keys)
    return out or None


def _decode_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    if not metadata:
        return {}
    out = dict(metadata)
    for key in filter(None, str(out.pop(_JSON_KEYS, "")).split(",")):
        if key in out:
            out[key] = json.loads(out[key])
    return out


def _where(where: dict[str, Any] | None) -> dict[str, Any] | None:
    """Several plain conditions {a: 1, b: 2} become chromadb's {"$and": [{a: 1}, {b: 2}]}."""
    if not where or len(where) == 1 or any(k.startswith("$") for k in where):
        return where or None
    return {"$and": [{k: v} for k, v in where.items()]}


class VectorStore:
    """A chromadb collection with our embeddings, cosine space."""

    def __init__(self, client: Any, collection: str, embedder: Embedder, location: str) -> None:
        self.client = client
        self.embedder = embedder
        self.location = location
        self.name = collection
        try:
            self.collection = client.get_or_create_collection(
                name=collection,
                embedding_function=None,
                metadata={"hnsw:space": "cosine", "embedder": embedder.name},
            )
        except ValueError as error:
            raise ValueError(f"cannot open collection {collection!r} at {location}: {error}") from error

    @classmethod
    def open(cls, path_or_url: str | Path, collection: str, embedder: Embedder | None = None) -> VectorStore:
        """Open (creating if needed) `collection` in a local folder or on a chromadb server URL."""
        require("chromadb", extra="memory", feature="the vector store")
        import chromadb
        from chromadb.config import Settings

        embedder = embedder or Embedder.default()
        settings = Settings(anonymized_telemetry=False)
        location = str(path_or_url)
        if location.startswith(("http://", "https://")):
            url = urlparse(location)
            if not url.hostname:
                raise ValueError(f"not a chromadb server URL: {location!r} (expected http://host:port)")
            ssl = url.scheme == "https"
            client = chromadb.HttpClient(host=url.hostname, port=url.port or (443 if ssl else 8000), ssl=ssl,
                                         settings=settings)
        else:
            folder = Path(location).expanduser()
            if folder.exists() and not folder.is_dir():
                raise ValueError(f"vector store path {folder} exists and is not a folder")
            folder.mkdir(parents=True, exist_ok=True)
            client = chromadb.PersistentClient(path=str(folder), settings=settings)
            location = str(folder)
        return cls(client, collection, embedder, location)

    # ---- writing
    def _vectors(self, texts: Sequence[str], embeddings: Any) -> list[list[float]]:
        if embeddings is None:
            array = self.embedder.embed(list(texts))
        else:
            array = np.asarray(embeddings, dtype=np.float32)
            if array.ndim == 1:
                array = array[None, :]
        if array.shape[0] != len(texts):
            raise ValueError(f"{array.shape[0]} embeddings for {len(texts)} texts")
        vectors: list[list[float]] = array.tolist()
        return vectors

    def _write(self, method: str, ids: Sequence[str], texts: Sequence[str],
               metadatas: Sequence[dict[str, Any] | None] | None, embeddings: Any) -> None:
        ids, texts = [str(i) for i in ids], [str(t) for t in texts]
        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
        if len(set(ids)) != len(ids):
            raise ValueError("duplicate ids in one write")
        if not ids:
            return
        metas = list(metadatas) if metadatas is not None else [None] * len(ids)
        if len(metas) != len(ids):
            raise ValueError(f"{len(metas)} metadatas for {len(ids)} ids")
        vectors = self._vectors(texts, embeddings)
        encoded = [_encode_metadata(m) for m in metas]
        batch = max(1, int(getattr(self.client, "get_max_batch_size", lambda: 1000)()))
        for start in range(0, len(ids), batch):
            end = start + batch
            chunk_meta = encoded[start:end]
            getattr(self.collection, method)(
                ids=ids[start:end], documents=texts[start:end], embeddings=vectors[start:end],
                metadatas=chunk_meta if any(m is not None for m in chunk_meta) else None,
            )

    def add(self, ids: Sequence[str], texts: Sequence[str], metadatas: Sequence[dict[str, Any] | None] | None = None,
            embeddings: Any = None) -> None:
        """Add new items (ids must not exist yet); embeddings are computed from texts when not given."""
        existing = {r.id for r in self.get(list(ids))}
        if existing:
            raise ValueError(f"ids already stored: {sorted(existing)[:5]} (use upsert to replace)")
        self._write("add", ids, texts, metadatas, embeddings)

    def upsert(self, ids: Sequence[str], texts: Sequence[str],
               metadatas: Sequence[dict[str, Any] | None] | None = None, embeddings: Any = None) -> None:
        """Add or replace items."""
        self._write("upsert", ids, texts, metadatas, embeddings)

    def delete(self, ids: Sequence[str]) -> None:
        """Remove items by id (unknown ids are ignored)."""
        ids = [str(i) for i in ids]
        if ids:
            self.collection.delete(ids=ids)

    def clear(self) -> None:
        """Remove every item."""
        ids = self.collection.get(include=[])["ids"]
        if ids:
            self.delete(ids)

    # ---- reading
    def query(self, query: str | Sequence[float] | np.ndarray, k: int = 5,
              where: dict[str, Any] | None = None) -> list[Hit]:
        """The `k` nearest items to a text or an embedding, best first (optionally filtered by metadata)."""
        if k <= 0:
            return []
        count = self.count()
        if count == 0:
            return []
        if isinstance(query, str):
            vector = self.embedder.embed([query])[0]
        else:
            vector = np.asarray(query, dtype=np.float32).reshape(-1)
        result = self.collection.query(
            query_embeddings=[vector.tolist()], n_results=min(k, count), where=_where(where),
            include=["documents", "metadatas", "distances"],
        )
        ids = result["ids"][0]
        documents = (result.get("documents") or [[None] * len(ids)])[0]
        metadatas = (result.get("metadatas") or [[None] * len(ids)])[0]
        distances = (result.get("distances") or [[1.0] * len(ids)])[0]
        return [Hit(id=i, score=float(1.0 - d), text=doc or "", metadata=_decode_metadata(meta))
                for i, doc, meta, d in zip(ids, documents, metadatas, distances, strict=True)]

    def get(self, ids: Sequence[str]) -> list[Record]:
        """The stored items with these ids, in the order asked (missing ids are left out)."""
        ids = [str(i) for i in ids]
        if not ids:
            return []
        result = self.collection.get(ids=ids, include=["documents", "metadatas"])
        found = {i: Record(i, doc or "", _decode_metadata(meta))
                 for i, doc, meta in zip(result["ids"], result["documents"], result["metadatas"], strict=True)}
        return [found[i] for i in ids if i in found]

    def embeddings(self, ids: Sequence[str]) -> np.ndarray:
        """Stored embeddings for these ids (in the order asked; all must exist)."""
        ids = [str(i) for i in ids]
        result = self.collection.get(ids=ids, include=["embeddings"])
        by_id = dict(zip(result["ids"], result["embeddings"], strict=True))
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise KeyError(f"ids not stored: {missing[:5]}")
        return np.asarray([by_id[i] for i in ids], dtype=np.float32).reshape(len(ids), -1)

    def all(self, where: dict[str, Any] | None = None) -> list[Record]:
        """Every stored item (optionally filtered by metadata)."""
        result = self.collection.get(where=_where(where), include=["documents", "metadatas"])
        return [Record(i, doc or "", _decode_metadata(meta))
                for i, doc, meta in zip(result["ids"], result["documents"], result["metadatas"], strict=True)]

    def count(self) -> int:
        """Number of stored items."""
        return int(self.collection.count())

    def __len__(self) -> int:
        return self.count()

    def close(self) -> None:
        """Release the client (a local store's files are let go once no other client in the process uses them)."""
        close = getattr(self.client, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> VectorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"VectorStore({self.location!r}, {self.name!r}, embedder={self.embedder.name!r})"
