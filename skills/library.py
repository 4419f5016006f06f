"""The skill library: skills as folders on disk, a chromadb index to find them, and the Skill1 cycle.

    lib = SkillLibrary.open("~/.agentkit/skills")              # embedded chromadb under the folder
    lib = SkillLibrary.open("lib/", index="http://127.0.0.1:8000")  # the same, index on a chromadb server
    agent = Agent(model, tools, extensions=[lib])               # query, retrieve, rerank, use, distill

The folders are the source of truth (people can read, write and version them); the index is derived
and rebuilt when it disagrees with them. Every write happens under a file lock, so several processes
can grow one library.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from agentkit.skills.cycle import SkillCycle, SkillSettings
from agentkit.skills.index import HnswSettings, SkillIndex
from agentkit.skills.model import Admission, Retrieved, Skill, SkillFormatError, check_name
from agentkit.skills.select import ema, ucb_bonus
from agentkit.skills.skillmd import META_FILE, find_skill_dirs, read_skill_dir, write_meta, write_skill_dir
from agentkit.skills.storage import LibraryFolder, default_library_path

if TYPE_CHECKING:
    from agentkit.loop.extensions import RunContext
    from agentkit.memory.embeddings import Embedder

log = logging.getLogger(__name__)


class SkillLibrary:
    """A library of skills that an agent selects, uses and distills (an `Extension`)."""

    name = "skills"

    def __init__(self, folder: LibraryFolder, index: SkillIndex, settings: SkillSettings) -> None:
        self.folder = folder
        self.index = index
        self.settings = settings
        self.cycle = SkillCycle(self)
        self._generation = folder.state().get("generation", 0)
        self._names: dict[str, str] = {}
        self._cache: dict[Path, tuple[tuple[tuple[int, int, int], ...], Skill]] = {}

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        index: str | None = None,
        embedder: Embedder | None = None,
        hnsw: HnswSettings | None = None,
        settings: SkillSettings | None = None,
        **overrides: Any,
    ) -> SkillLibrary:
        """Open (creating if needed) the library folder at `path` (default `$AGENTKIT_HOME/skills`).

        Args:
            index: a chromadb server URL for the index; remembered in the library. Default: a
                chromadb folder inside the library.
            embedder: the embedding model (default: the packaged all-MiniLM-L6-v2).
            hnsw: HNSW search settings for large libraries.
            settings: how the skill cycle runs; keyword overrides (e.g. `rerank="top"`,
                `query="task"`, `distill="off"`, `capacity=1000`) change single fields.
        """
        from agentkit.memory.embeddings import Embedder

        folder = LibraryFolder(path or default_library_path())
        embedder = embedder or Embedder.default()
        manifest = folder.open_manifest({"embedder": embedder.name, "index": index})
        if manifest.get("embedder") != embedder.name:
            raise ValueError(
                f"the library at {folder.root} was indexed with {manifest.get('embedder')!r}, not {embedder.name!r}; "
                "open it with the same embedder (or rebuild its index after changing `embedder` in library.json)"
            )
        if index and manifest.get("index") != index:
            manifest = folder.update_manifest(index=index)
        location = manifest.get("index") or str(folder.index)
        settings = settings or SkillSettings()
        if overrides:
            settings = settings.replace(**overrides)
        # one collection per kind of query: task queries match solved tasks, model-written ones descriptions
        collection = f"skills-{manifest['uid']}" + ("-tasks" if settings.query == "task" else "")
        library = cls(folder, SkillIndex(location, collection, embedder, hnsw or HnswSettings()), settings)
        library.sync_index(only_if_needed=True)
        return library

    # -- Extension protocol -------------------------------------------------------------------------
    def before_run(self, run: RunContext) -> None:
        """Query, retrieve, rerank, and put the chosen skill into context (recorded as the `SKILLS` record)."""
        self.cycle.before_run(run)

    def after_run(self, run: RunContext) -> None:
        """Update the used skill's utility, distill the run into a new skill, admit it on success."""
        self.cycle.after_run(run)

    # -- reading ------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.folder.skill_dirs())

    def has_skills(self) -> bool:
        """Whether the library holds at least one skill (cheap: stops at the first folder)."""
        if not self.folder.skills.is_dir():
            return False
        with os.scandir(self.folder.skills) as entries:
            return any(e.is_dir() and not e.name.startswith(".") for e in entries)

    def skills(self) -> list[Skill]:
        """Every skill in the library (read from the folders)."""
        out = []
        for path in self.folder.skill_dirs():
            try:
                out.append(read_skill_dir(path))
            except (SkillFormatError, OSError) as error:
                log.warning("skipping unreadable skill folder %s: %s", path, error)
        return out

    def get(self, name_or_id: str) -> Skill:
        """A skill by name or id (KeyError if there is none)."""
        path = self._path_of(name_or_id)
        if path is None:
            raise KeyError(f"no skill named or with id {name_or_id!r} in {self.folder.root}")
        return read_skill_dir(path)

    def _path_of(self, name_or_id: str, *, scan: bool = True) -> Path | None:
        direct = self.folder.skills / name_or_id
        if not name_or_id.startswith(".") and "/" not in name_or_id and (direct / "SKILL.md").is_file():
            return direct
        if not name_or_id.startswith("skill_"):
            return None
        name = self._names.get(name_or_id) or self.index.name_of(name_or_id)
        if name and (self.folder.skills / name / "SKILL.md").is_file():
            path = self.folder.skills / name
            if read_skill_dir(path).id == name_or_id:
                self._names[name_or_id] = name
                return path
        if not scan:
            return None
        for path in self.folder.skill_dirs():  # the index is stale or the folder was renamed
            try:
                if read_skill_dir(path).id == name_or_id:
                    self._names[name_or_id] = path.name
                    return path
            except (SkillFormatError, OSError):
                continue
        return None

    def retrieve(self, query: str | np.ndarray, k: int | None = None, min_score: float | None = None,
                 ucb_c: float | None = None) -> list[Retrieved]:
        """The skills most similar to a query (text or embedding), best first, above the relevance floor.

        With `ucb_c > 0`, candidates above the floor are reordered by similarity + U + c·sqrt(ln N / n).
        """
        k = self.settings.k if k is None else k
        min_score = self.settings.min_score if min_score is None else min_score
        ucb_c = self.settings.ucb_c if ucb_c is None else ucb_c
        if k <= 0:
            return []
        vector = self.index.embed([query])[0] if isinstance(query, str) else np.asarray(query, dtype=np.float32)
        if self._catch_up():  # a writer querying the other way indexed its skills in its own collection
            self.sync_index(only_if_needed=True)
        hits = self.index.query(vector, k * 4 if ucb_c > 0 else k)
        found: list[Retrieved] = []
        for hit in hits:
            if hit.score < min_score:
                continue
            name = str(hit.metadata.get("name", ""))
            path = self.folder.skills / name if name else self._path_of(hit.id, scan=False)
            try:
                skill = self._read_cached(path) if path is not None else None
            except (SkillFormatError, OSError):
                skill = None
            if skill is None or skill.id != hit.id:
                path = self._path_of(hit.id, scan=False)
                skill = read_skill_dir(path) if path is not None else None
            if skill is None:
                log.warning("index entry %s has no skill folder; `agentkit skills sync` rebuilds the index", hit.id)
                continue
            found.append(Retrieved(skill, hit.score))
        if ucb_c > 0:
            total = int(self.folder.state().get("uses", 0))
            found.sort(key=lambda r: -(r.score + ucb_bonus(r.skill.utility, r.skill.use_count, total, ucb_c)))
        return found[:k]

    def _read_cached(self, path: Path) -> Skill:
        """A skill folder, parsed once per version of its files (keyed by inode, mtime and size)."""
        key = tuple((st.st_ino, st.st_mtime_ns, st.st_size) for st in
                    (os.stat(path / "SKILL.md"), os.stat(path / META_FILE)))
        cached = self._cache.get(path)
        if cached is not None and cached[0] == key:
            return cached[1].model_copy(deep=True)
        skill = read_skill_dir(path)
        if len(self._cache) >= 4096:
            self._cache.pop(next(iter(self._cache)))
        self._cache[path] = (key, skill)
        return skill.model_copy(deep=True)

    def search(self, text: str, k: int = 5) -> list[Retrieved]:
        """Skills for a free-text search (no relevance floor)."""
        return self.retrieve(text, k=k, min_score=-1.0, ucb_c=0.0)

    # -- writing ------------------------------------------------------------------------------------
    def add(self, skill: Skill, *, copy_from: str | os.PathLike[str] | None = None, dedup: bool = True,
            replace: bool = False, embedding: np.ndarray | None = None,
            trajectory_id: str | None = None) -> Admission:
        """Offer a skill to the library: refused or merged if a near-duplicate exists, else added.

        A distilled skill close to another distilled skill (similarity ≥ `dedup_threshold` of their index
        texts: the solved tasks when the library is queried by task, so one skill per distinct task) is merged
        into it (its new lessons are appended; provenance records the source); other near-duplicates
        are refused. The library then retires skills beyond its capacity.
        """
        check_name(skill.name)
        text = self._index_text(skill)
        vector = self.index.embed([text])[0] if embedding is None else np.asarray(embedding, dtype=np.float32)
        with self.folder.lock():
            self._catch_up()
            same_id = self._path_of(skill.id, scan=False) if skill.id.startswith("skill_") else None
            if same_id is not None and not replace:
                return self._decide("refused", skill, trajectory_id, f"a skill with id {skill.id} is already here")
            existing_dir = self.folder.skills / skill.name
            if existing_dir.exists() and not replace:
                if skill.source != "distilled":
                    return self._decide("refused", skill, trajectory_id,
                                        f"a skill named {skill.name!r} already exists (remove it or use replace)")
                skill = skill.model_copy(update={"name": self._free_name(skill.name)})
            if dedup and self.settings.dedup_threshold < 1.0:
                near = [h for h in self.index.query(vector, 2) if h.id != skill.id]
                if near and near[0].score >= self.settings.dedup_threshold:
                    return self._on_duplicate(skill, near[0].id, near[0].score, trajectory_id)
            if replace and same_id is not None and same_id.name != skill.name:
                shutil.rmtree(same_id, ignore_errors=True)
            if replace and existing_dir.exists():
                previous = read_skill_dir(existing_dir)
                if previous.id != skill.id:
                    self.index.delete([previous.id])
            write_skill_dir(skill, self.folder.skills / skill.name, copy_from=copy_from)
            self.index.upsert([skill.id], [text], [skill.name], embeddings=vector[None, :])
            self._names[skill.id] = skill.name
            self._changed()
            admission = self._decide("added", skill, trajectory_id, None)
            self.retire_over_capacity(keep={skill.id})
            return admission

    def add_many(self, skills: Sequence[Skill], embeddings: np.ndarray | None = None, batch: int = 256) -> int:
        """Bulk insert without duplicate checks and without fsync (loading many skills); returns the count."""
        names = [check_name(s.name) for s in skills]
        clashes = [n for n in names if (self.folder.skills / n).exists()]
        if clashes or len(set(names)) != len(names):
            raise ValueError(f"skill names already taken or repeated: {(clashes or names)[:5]}; nothing was added")
        added = 0
        for start in range(0, len(skills), batch):
            chunk = list(skills[start : start + batch])
            vectors = (self.index.embed([self._index_text(s) for s in chunk]) if embeddings is None
                       else np.asarray(embeddings[start : start + batch], dtype=np.float32))
            with self.folder.lock():
                for skill in chunk:
                    check_name(skill.name)
                    if (self.folder.skills / skill.name).exists():
                        raise ValueError(f"a skill named {skill.name!r} already exists")
                for skill in chunk:
                    write_skill_dir(skill, self.folder.skills / skill.name, durable=False)
                self.index.upsert([s.id for s in chunk], [self._index_text(s) for s in chunk], [s.name for s in chunk],
                                  embeddings=vectors)
                self._changed()
                added += len(chunk)
        with self.folder.lock():
            self.retire_over_capacity(keep=set())
        return added

    def remove(self, name_or_id: str) -> Skill:
        """Delete a skill (its folder and index entry); returns what was removed."""
        with self.folder.lock():
            path = self._path_of(name_or_id)
            if path is None:
                raise KeyError(f"no skill named or with id {name_or_id!r}")
            skill = read_skill_dir(path)
            shutil.rmtree(path)
            self.index.delete([skill.id])
            self._names.pop(skill.id, None)
            self._changed()
            return skill

    def record_outcome(self, skill_id: str, reward: float | None, *, count_use: bool = True) -> Skill | None:
        """After a run that used the skill: count the use and, given a reward, update U by EMA.

        `count_use=False` applies a reward that arrived later for a use already counted.
        """
        with self.folder.lock():
            path = self._path_of(skill_id)
            if path is None:
                log.warning("skill %s was used but is no longer in the library", skill_id)
                return None
            skill = read_skill_dir(path)
            if count_use:
                skill.use_count += 1
                skill.last_used_at = time.time()
                self.folder.bump("uses")
            if reward is not None:
                r = min(max(float(reward), 0.0), 1.0)
                skill.utility = ema(skill.utility, r, self.settings.alpha)
                skill.success_count += int(reward >= self.settings.success_at)
            write_meta(skill, path)
            return skill

    def retire_over_capacity(self, keep: Iterable[str] = ()) -> list[Skill]:
        """Retire skills beyond the capacity bound: lowest utility first, then least used, then oldest.

        Retired skills move to `retired/` (nothing is deleted) and leave the index.
        """
        with self.folder.lock():
            dirs = self.folder.skill_dirs()
            excess = len(dirs) - self.settings.capacity
            if excess <= 0:
                return []
            keep = set(keep)
            ranked = []  # (utility, uses, created, folder, stats): only skill.json is read, for speed
            for path in dirs:
                try:
                    meta = json.loads((path / META_FILE).read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    continue  # no statistics yet (a folder dropped in by hand): not retired blindly
                if meta.get("id") in keep:
                    continue
                ranked.append((float(meta.get("utility", 0.5)), int(meta.get("use_count", 0)),
                               float(meta.get("created_at", 0.0)), path.name, meta))
            ranked.sort(key=lambda r: r[:4])
            retired = []
            self.folder.retired.mkdir(exist_ok=True)
            for utility, uses, _, name, meta in ranked[:excess]:
                skill_id = str(meta.get("id"))
                os.rename(self.folder.skills / name, self.folder.retired / f"{name}-{skill_id}")
                retired.append(read_skill_dir(self.folder.retired / f"{name}-{skill_id}"))
                self.folder.log_admission({"status": "retired", "skill_id": skill_id, "name": name,
                                           "reason": f"capacity {self.settings.capacity}: utility "
                                                     f"{utility:.3f}, {uses} uses"})
            if retired:
                self.index.delete([s.id for s in retired])
                self._changed()
            return retired

    # -- import / export ----------------------------------------------------------------------------
    def import_dir(self, source: str | os.PathLike[str], *, dedup: bool = True,
                   replace: bool = False) -> list[Admission]:
        """Add every skill folder (SKILL.md) under `source`; hand-written folders are welcome."""
        results: list[Admission] = []
        found: list[tuple[Path, Skill]] = []
        for path in find_skill_dirs(source):
            try:
                found.append((path, read_skill_dir(path)))
            except SkillFormatError as error:
                results.append(self.refuse(str(error), trajectory_id=None, name=path.name, source="import"))
        vectors = self.index.embed([self._index_text(skill) for _, skill in found]) if found else None
        for i, (path, skill) in enumerate(found):
            assert vectors is not None
            results.append(self.add(skill, copy_from=path, dedup=dedup, replace=replace, embedding=vectors[i]))
        return results

    def export_dir(self, target: str | os.PathLike[str]) -> list[Path]:
        """Write every skill as a folder (SKILL.md, skill.json and its other files) under `target`."""
        target = Path(target)
        target.mkdir(parents=True, exist_ok=True)
        written = []
        for path in self.folder.skill_dirs():
            skill = read_skill_dir(path)
            written.append(write_skill_dir(skill, target / skill.name, copy_from=path))
        return written

    # -- index maintenance --------------------------------------------------------------------------
    def sync_index(self, only_if_needed: bool = False) -> dict[str, int]:
        """Make the index agree with the skill folders (add what is missing, drop what is gone).

        Folders a person dropped in without a skill.json get one (an id, neutral statistics).
        `only_if_needed` skips the full comparison when the counts agree and every folder has its
        skill.json (the check `open` makes).
        """
        with self.folder.lock():
            self._catch_up()
            dirs = self.folder.skill_dirs()
            bare = [d for d in dirs if not (d / META_FILE).exists()]
            if only_if_needed and not bare and len(dirs) == self.index.count():
                return {"added": 0, "removed": 0}
            for path in bare:
                try:
                    write_meta(read_skill_dir(path), path)
                except SkillFormatError as error:
                    log.warning("skipping unreadable skill folder %s: %s", path, error)
            skills = self.skills()
            indexed = self.index.names()
            missing = [s for s in skills if indexed.get(s.id) != s.name]
            extra = [i for i in indexed if i not in {s.id for s in skills}]
            if extra:
                self.index.delete(extra)
            for start in range(0, len(missing), 256):
                chunk = missing[start : start + 256]
                self.index.upsert([s.id for s in chunk], [self._index_text(s) for s in chunk], [s.name for s in chunk])
            if missing or extra:
                self._changed()
            return {"added": len(missing), "removed": len(extra)}

    def stats(self) -> dict[str, Any]:
        """Counts and utility figures for the library."""
        skills = self.skills()
        decisions = self.folder.admission_log()
        by_source: dict[str, int] = {}
        for s in skills:
            by_source[s.source] = by_source.get(s.source, 0) + 1
        utilities = [s.utility for s in skills]
        return {
            "path": str(self.folder.root), "index": self.index.location, "skills": len(skills),
            "indexed": self.index.count(), "by_source": by_source, "capacity": self.settings.capacity,
            "retired": len(list(self.folder.retired.iterdir())) if self.folder.retired.is_dir() else 0,
            "uses": sum(s.use_count for s in skills), "successes": sum(s.success_count for s in skills),
            "mean_utility": round(float(np.mean(utilities)), 4) if utilities else None,
            "admitted": sum(d.get("status") in ("added", "merged") for d in decisions),
            "refused": sum(d.get("status") == "refused" for d in decisions),
            "most_used": [s.summary() for s in sorted(skills, key=lambda s: -s.use_count)[:5] if s.use_count],
        }

    # -- internals ----------------------------------------------------------------------------------
    def _on_duplicate(self, skill: Skill, other_id: str, score: float, trajectory_id: str | None) -> Admission:
        path = self._path_of(other_id)
        other = read_skill_dir(path) if path is not None else None
        label = other.name if other else other_id
        mergeable = other is not None and skill.source == other.source == "distilled"
        if not mergeable or self.settings.on_duplicate == "refuse":
            return self._decide("refused", skill, trajectory_id,
                                f"near-duplicate of skill {label!r} (similarity {score:.3f})", similarity=score)
        assert other is not None and path is not None
        known = set(other.body.splitlines())
        new_lines = [ln for ln in skill.body.splitlines() if ln.startswith("- ") and ln not in known]
        if new_lines:
            other.body = other.body.rstrip() + ("\n" if "## Lessons" in other.body else "\n\n## Lessons\n")
            other.body += "\n".join(new_lines)
        other.merged_from.append(trajectory_id or skill.source_trajectory or skill.id)
        write_skill_dir(other, path, copy_from=path)
        return self._decide("merged", other, trajectory_id, f"merged into near-duplicate {label!r}",
                            similarity=score)

    def _decide(self, status: str, skill: Skill, trajectory_id: str | None, reason: str | None,
                similarity: float | None = None) -> Admission:
        entry: dict[str, Any] = {"status": status, "skill_id": skill.id if status != "refused" else None,
                                 "name": skill.name,
                 "source": skill.source, "trajectory": trajectory_id or skill.source_trajectory, "reason": reason}
        if similarity is not None:
            entry["similarity"] = round(similarity, 4)
        with self.folder.lock():
            self.folder.log_admission(entry)
        if status == "refused":
            log.info("skill %r refused: %s", skill.name, reason)
        return Admission(status, entry["skill_id"], skill.name, reason, similarity)

    def refuse(self, reason: str, *, trajectory_id: str | None, name: str | None = None,
               source: str = "distilled") -> Admission:
        """Log a skill that never entered the library (bad distillation output, failed run, bad file)."""
        with self.folder.lock():
            self.folder.log_admission({"status": "refused", "skill_id": None, "name": name,
                                       "source": source, "trajectory": trajectory_id, "reason": reason})
        log.info("skill %s refused: %s", name or "(unnamed)", reason)
        return Admission("refused", None, name, reason)

    def _free_name(self, name: str) -> str:
        for n in range(2, 10_000):
            candidate = f"{name[:58]}-{n}"
            if not (self.folder.skills / candidate).exists():
                return candidate
        raise RuntimeError(f"no free name for skill {name!r}")

    def _index_text(self, skill: Skill) -> str:
        return skill.index_text(by_task=self.settings.query == "task")

    def _changed(self) -> None:
        self._generation = self.folder.bump("generation")

    def _catch_up(self) -> bool:
        """If another process changed the library since we last looked, make chromadb replay its log (True)."""
        generation = self.folder.state().get("generation", 0)
        if generation == self._generation:
            return False
        self.index.refresh()
        self._generation = generation
        return True

    def __repr__(self) -> str:
        return f"SkillLibrary({str(self.folder.root)!r}, index={self.index.location!r})"
