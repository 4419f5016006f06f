"""The skills' search index: a chromadb collection (local folder or server) derived from the skill folders.

The index holds one entry per skill (id, the text embedded, the skill's name) and can always be
rebuilt from the folders. Two things chromadb leaves to us:

- HNSW settings. chromadb's defaults (ef_search 100, M 16, ef_construction 100) are kept unless
  `HnswSettings` says otherwise; they are fixed when the collection is created (see `_configure`).
- Freshness across processes. An embedded chromadb keeps its HNSW graph in memory and only replays
  other processes' writes from its log when it writes itself; `refresh()` issues a no-op delete,
  which makes it catch up. The library calls it when another process has changed the index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentkit.memory.embeddings import Embedder
from agentkit.memory.vectors import Hit, VectorStore

_REFRESH_ID = "__agentkit_refresh__"


@dataclass(frozen=True)
class HnswSettings:
    """HNSW knobs: `ef_search` may change at any time; the others only when the index is created."""

    ef_search: int | None = None
    max_neighbors: int | None = None
    ef_construction: int | None = None


class SkillIndex:
    """Nearest-skill search over skill embeddings (cosine)."""

    def __init__(self, location: str, collection: str, embedder: Embedder, hnsw: HnswSettings = HnswSettings()):
        self.location = location
        self.is_server = location.startswith(("http://", "https://"))
        self.store = VectorStore.open(location, collection, embedder)
        if hnsw.ef_search or hnsw.max_neighbors or hnsw.ef_construction:
            self._configure(hnsw)

    def _configure(self, hnsw: HnswSettings) -> None:
        """HNSW settings are fixed when the collection is created: a new (empty) collection is
        recreated with them. On a filled one only `ef_search` can change, and chromadb 1.5 applies
        the change when the index is next loaded (a new process), not to the one in memory."""
        collection = self.store.collection
        if collection.count() > 0:
            if hnsw.ef_search:
                collection.modify(configuration={"hnsw": {"ef_search": int(hnsw.ef_search)}})
            return
        config: dict[str, Any] = {"space": "cosine"}
        for key in ("ef_search", "max_neighbors", "ef_construction"):
            value = getattr(hnsw, key)
            if value:
                config[key] = int(value)
        metadata = dict(collection.metadata or {})
        metadata = {k: v for k, v in metadata.items() if not k.startswith("hnsw:")}
        client = self.store.client
        client.delete_collection(collection.name)
        self.store.collection = client.create_collection(
            name=collection.name, embedding_function=None, metadata=metadata or None,
            configuration={"hnsw": config},
        )

    @property
    def embedder(self) -> Embedder:
        """The embedder the index uses for queries and skills."""
        return self.store.embedder

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embedding vectors of `texts`."""
        return self.store.embedder.embed(list(texts))

    def upsert(self, ids: Sequence[str], texts: Sequence[str], names: Sequence[str],
               embeddings: np.ndarray | None = None) -> None:
        """Add or replace entries (embeddings are computed from the texts when not given)."""
        metadatas = [{"name": name} for name in names]
        self.store.upsert(list(ids), list(texts), metadatas, embeddings=embeddings)

    def delete(self, ids: Sequence[str]) -> None:
        """Remove skills from the index by id."""
        self.store.delete(list(ids))

    def query(self, vector: np.ndarray, k: int) -> list[Hit]:
        """The k nearest entries to an embedding, best first (score = cosine similarity)."""
        if k <= 0:
            return []
        # A float32 array, not a list: chromadb validates lists element by element (~3 ms at 384 dims).
        result = self.store.collection.query(
            query_embeddings=np.asarray(vector, dtype=np.float32).reshape(1, -1),
            n_results=k, include=["metadatas", "distances"],
        )
        ids = result["ids"][0]
        metadatas = (result.get("metadatas") or [[{}] * len(ids)])[0]
        distances = (result.get("distances") or [[1.0] * len(ids)])[0]
        return [Hit(id=i, score=float(1.0 - d), text="", metadata=dict(m or {}))
                for i, m, d in zip(ids, metadatas, distances, strict=True)]

    def names(self) -> dict[str, str]:
        """Every entry's id and skill name."""
        result = self.store.collection.get(include=["metadatas"])
        return {i: str((m or {}).get("name", "")) for i, m in zip(result["ids"], result["metadatas"], strict=True)}

    def name_of(self, skill_id: str) -> str | None:
        """The name an id is indexed under (None if it is not indexed)."""
        records = self.store.get([skill_id])
        return str(records[0].metadata.get("name")) if records else None

    def count(self) -> int:
        """How many skills are indexed."""
        return self.store.count()

    def refresh(self) -> None:
        """Make an embedded index see other processes' writes (see the module docstring)."""
        if not self.is_server:
            self.store.collection.delete(ids=[_REFRESH_ID])
