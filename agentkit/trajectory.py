"""Trajectories: the record of one run, and the JSONL logs that training reads.

Every model call is a `Turn` with its phase label and, when the backend gives them, the exact token
ids and log-probs. To keep logs linear in the length of a run, a turn whose prompt continues an
earlier turn (its prompt + completion is a prefix of this prompt) stores only the new tokens and
names that turn in `extends`; `Trajectory.prompt_ids(i)` rebuilds the full prompt. The earlier
turns are found from the recorded turns themselves (no cache on the object: a trajectory read back
from a log encodes its next turn the same way).
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from agentkit.jsontext import MAX_JSON_DEPTH, loads_bounded
from agentkit.messages import Message, Usage, clean_text, new_id
from agentkit.models.protocol import TokenRecord
from agentkit.records import Records

SCHEMA_VERSION = 5  # 2: the `policy` record (agentkit.records.POLICY); 3: `tools_offered`; 4: `experience`, `feedback`;
# 5: `ShownExample.other_database`
# Fields added with defaults (the nested runs' `agent`, `parent_id`, `parent_call_id`, `relation`, `children`) keep
# the version: older logs load with the defaults, and an older agentkit reads newer logs without those fields.
_PREFIX_WINDOW = 8  # how many of the latest turns with token ids a new prompt may continue
MAX_RECORD_BYTES = 64 * 1024 * 1024
"""The longest line of a JSONL log `iter_jsonl` reads; a longer one is skipped (read past in pieces)."""
MAX_RECORD_DEPTH = MAX_JSON_DEPTH + 28
"""The deepest nesting of a logged record `iter_jsonl` reads: a call's arguments (at most
`agentkit.jsontext.MAX_JSON_DEPTH`) inside a trajectory's own levels."""
GIVEN = "given"
"""The phase of a turn written into a trajectory as history rather than produced: a demonstration's reply that
shows what came before without being taught (`algo="sft"` gives its tokens no loss)."""
log = logging.getLogger(__name__)


class Turn(BaseModel):
    """One model call.

    `context` names the conversation the call belongs to: "main" is `Trajectory.messages` (the
    call saw its first `n_input` messages); any other context (a skill query, a distillation, a map)
    keeps its own `input` messages. Token fields are empty for backends that do not expose tokens.
    """

    index: int
    phase: str = "act"
    context: str = "main"
    n_input: int = 0
    input: list[Message] | None = None
    output: Message
    prompt_ids: list[int] = Field(default_factory=list)
    extends: int | None = None
    prompt_text: str = ""
    completion_ids: list[int] = Field(default_factory=list)
    logprobs: list[float] = Field(default_factory=list)
    completion_text: str = ""
    temperature: float = 1.0
    usage: Usage = Field(default_factory=Usage)
    duration_s: float = 0.0

    @model_validator(mode="after")
    def _clean(self) -> Turn:
        prompt, completion = self.prompt_text, self.completion_text
        if not (type(prompt) is str and prompt.isascii() and type(completion) is str and completion.isascii()):
            self.prompt_text, self.completion_text = clean_text(prompt), clean_text(completion)
        return self


class ApprovalRecord(BaseModel):
    """A decision on a tool call that needed approval: who said yes or no is outside agentkit, what was
    decided is here (a reward signal, or a mistake-notebook entry when a call was denied)."""

    call_id: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    approved: bool
    reason: str | None = None
    turn: int = 0
    """The index of the turn whose reply made the call."""


class OutputCheck(BaseModel):
    """One validation of a typed final output (`Agent(output_type=...)`): a free verifiable reward."""

    turn: int
    passed: bool
    error: str | None = None


class Trajectory(BaseModel):
    """The record of one agent run, as written to and read from JSONL logs.

    `metadata` is the user's (passed to `Agent.run(..., metadata=...)`, stored as given); `extras` holds
    the framework's records of the run, read and written through `records` (see `agentkit.records`).

    A run of another agent that this run started (an agent called as a tool, `Agent.as_tool`, or the agent
    the conversation was handed to, `Agent(handoffs=...)`) is one of its `children`: a trajectory of its own,
    with its own turns and token ids, whose `parent_id` is this run's id and whose `parent_call_id` is the
    call that started it. `usage` counts the children's model calls too.
    """

    schema_version: int = SCHEMA_VERSION
    id: str = Field(default_factory=lambda: new_id("traj"))
    task: str = ""
    task_id: str | None = None
    model: str = ""
    planner: str = "react"
    messages: list[Message] = Field(default_factory=list)
    turns: list[Turn] = Field(default_factory=list)
    answer: str | None = None
    stop_reason: str = ""
    reward: float | None = None
    rewards: dict[str, float] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    approvals: list[ApprovalRecord] = Field(default_factory=list)
    output_checks: list[OutputCheck] = Field(default_factory=list)
    extras: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    started_at: float = Field(default_factory=time.time)
    duration_s: float = 0.0
    agent: str | None = None
    """The name of the agent that ran it (`Agent(name=...)`); None in logs older than nested runs."""
    parent_id: str | None = None
    """The id of the run that started this one; None for a run started by a caller."""
    parent_call_id: str | None = None
    """The id of the parent's tool call that started this run."""
    relation: Literal["tool", "handoff"] | None = None
    """How the parent started this run: as a tool ("tool") or by handing the conversation over ("handoff")."""
    children: list[Trajectory] = Field(default_factory=list)
    """The runs this run started, in the order they started (see `parent_id`)."""

    _clean = field_validator("task", "answer", "model")(lambda value: clean_text(value))

    @model_validator(mode="after")
    def _turns_extend_earlier_turns(self) -> Trajectory:
        """A turn may only extend a turn before it (so rebuilding a prompt always ends)."""
        for i, turn in enumerate(self.turns):
            if turn.extends is not None and not 0 <= turn.extends < i:
                raise ValueError(f"turn {i} extends turn {turn.extends}, which does not come before it")
        return self

    # -- building -------------------------------------------------------------------------------
    def add_turn(
        self,
        output: Message,
        *,
        phase: str,
        context: str = "main",
        input: list[Message] | None = None,
        tokens: TokenRecord | None = None,
        usage: Usage | None = None,
        duration_s: float = 0.0,
    ) -> Turn:
        """Record a model call; token ids are stored as a delta over an earlier turn when possible."""
        turn = Turn(
            index=len(self.turns),
            phase=phase,
            context=context,
            n_input=len(self.messages) if context == "main" else len(input or []),
            input=None if context == "main" else list(input or []),
            output=output,
            usage=usage or Usage(),
            duration_s=duration_s,
        )
        if tokens is not None:
            full_prompt = tokens.prompt_ids
            turn.extends, offset = self._find_prefix(full_prompt)
            turn.prompt_ids = list(full_prompt[offset:])
            turn.prompt_text = tokens.prompt_text if turn.extends is None else ""
            turn.completion_ids = list(tokens.completion_ids)
            turn.logprobs = list(tokens.logprobs)
            turn.completion_text = tokens.completion_text
            turn.temperature = tokens.temperature
        self.turns.append(turn)
        self.usage = self.usage + turn.usage
        return turn

    def _find_prefix(self, prompt: list[int]) -> tuple[int | None, int]:
        """The latest of the last `_PREFIX_WINDOW` turns with token ids whose full prompt + completion
        starts `prompt`, and that length (None, 0: none does)."""
        checked = 0
        for turn in reversed(self.turns):
            if checked == _PREFIX_WINDOW:
                break
            if not (turn.prompt_ids or turn.completion_ids):
                continue
            checked += 1
            n = self._full_length(turn)
            if n <= len(prompt) and prompt[:n] == self.prompt_ids(turn.index) + turn.completion_ids:
                return turn.index, n
        return None, 0

    def _full_length(self, turn: Turn) -> int:
        n = len(turn.completion_ids) + len(turn.prompt_ids)
        while turn.extends is not None:
            turn = self.turns[turn.extends]
            n += len(turn.prompt_ids) + len(turn.completion_ids)
        return n

    # -- reading --------------------------------------------------------------------------------
    @property
    def records(self) -> Records:
        """Typed access to the framework's records of this run (skills, notes, map, SQL, samples)."""
        return Records(self.extras)

    def prompt_ids(self, index: int) -> list[int]:
        """The full prompt token ids of turn `index`, rebuilt through `extends`."""
        chain: list[Turn] = []
        turn: Turn | None = self.turns[index]
        while turn is not None:
            chain.append(turn)
            turn = self.turns[turn.extends] if turn.extends is not None else None
        ids: list[int] = []
        for i, t in enumerate(reversed(chain)):
            ids.extend(t.prompt_ids)
            if i < len(chain) - 1:
                ids.extend(t.completion_ids)
        return ids

    def turns_in(self, phase: str) -> list[Turn]:
        """The turns labelled `phase`."""
        return [t for t in self.turns if t.phase == phase]

    @property
    def has_tokens(self) -> bool:
        """Whether every turn carries token ids (needed for training)."""
        return bool(self.turns) and all(t.completion_ids for t in self.turns)


def without_hint(trajectory: Trajectory, hint: str, tokenize: Callable[[str], list[int]]) -> Trajectory:
    """`trajectory` as if the text `hint` had not been in its prompts (rationalisation: a run made with a hint,
    trained as a run of the plain request): `hint` removed from its task, its messages, and the prompt text and
    input messages of every turn that starts a context, whose prompt text is tokenised again with `tokenize` (the
    text of the model's chat template, special tokens included); a turn that continues another keeps its prompt
    ids, its new tokens, since the hint sits in the opening prompt (a system section, the request). Completions keep
    their token ids. Raises ValueError when a turn that starts a context does not show `hint`."""
    turns = []
    for turn in trajectory.turns:
        if turn.extends is not None:
            turns.append(turn)
            continue
        if hint not in turn.prompt_text:
            raise ValueError(f"the prompt of turn {turn.index} of {trajectory.task_id or trajectory.id} does not show "
                             f"the hint {hint.strip()!r}")
        prompt = turn.prompt_text.replace(hint, "")
        inputs = None if turn.input is None else [m.model_copy(update={"content": m.content.replace(hint, "")})
                                                  for m in turn.input]
        turns.append(turn.model_copy(update={"prompt_text": prompt, "prompt_ids": tokenize(prompt), "input": inputs}))
    messages = [m.model_copy(update={"content": m.content.replace(hint, "")}) for m in trajectory.messages]
    return trajectory.model_copy(update={"task": trajectory.task.replace(hint, ""), "messages": messages,
                                         "turns": turns})


# -- JSONL logs -------------------------------------------------------------------------------------


class NewerSchemaError(ValueError):
    """A record (trajectory, skill, library, notebook) was written by a newer agentkit than this one."""


def append_jsonl(path: str | os.PathLike[str], trajectory: Trajectory) -> None:
    """Append one trajectory as one line, atomically with respect to other writers.

    The line is written under an exclusive lock and fsync'd. If an earlier writer was killed
    mid-line, the torn line is closed off first so it cannot corrupt this record.
    """
    line = trajectory.model_dump_json() + "\n"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            f.seek(0, os.SEEK_END)
            if f.tell() > 0:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    f.write(b"\n")
            f.write(line.encode())
            f.flush()
            os.fsync(f.fileno())
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def iter_jsonl(path: str | os.PathLike[str]) -> Iterator[Trajectory]:
    """Read trajectories from a log, skipping torn, corrupted or oversized lines with a warning.

    Linear in the log's size and bounded per line: a line longer than `MAX_RECORD_BYTES` is read past in
    pieces, never held whole, and one nested deeper than `MAX_RECORD_DEPTH` is refused by a linear scan
    before it is decoded."""
    with open(path, "rb") as f:
        lineno = 0
        while True:
            raw = f.readline(MAX_RECORD_BYTES + 1)
            if not raw:
                break
            lineno += 1
            if len(raw) > MAX_RECORD_BYTES and not raw.endswith(b"\n"):
                while (rest := f.readline(1 << 20)) and not rest.endswith(b"\n"):
                    pass
                log.warning("skipping a record of more than %d bytes at %s:%d", MAX_RECORD_BYTES, path, lineno)
                continue
            if not raw.strip():
                continue
            try:
                data = loads_bounded(raw, max_chars=MAX_RECORD_BYTES, max_depth=MAX_RECORD_DEPTH)
                version = data.get("schema_version", 0) if isinstance(data, dict) else 0
                if isinstance(version, int) and version > SCHEMA_VERSION:
                    raise NewerSchemaError(
                        f"{path}:{lineno} has schema version {version}; this agentkit reads up to "
                        f"{SCHEMA_VERSION}. Upgrade agentkit to read it."
                    )
                yield Trajectory.model_validate(data)
            except NewerSchemaError:
                raise
            except (ValueError, ValidationError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
                log.warning("skipping unreadable record at %s:%d (%s)", path, lineno, type(exc).__name__)


def read_jsonl(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[Trajectory]:
    """The readable trajectories of one log or several, each run once: a run logged again under the same id (a
    rated copy appended by `agentkit.feedback.rate`, a durable run logged again after a kill) is its last line,
    at the place its first line had."""
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    runs: dict[str, Trajectory] = {}
    for path in paths:
        for trajectory in iter_jsonl(path):
            runs[trajectory.id] = trajectory  # a dict keeps the first position of a key it updates
    return list(runs.values())
