"""Trajectories → training sequences: the exact token ids recorded at generation, and their masks.

Text is never re-tokenised: a sequence is made of the `prompt_ids` and `completion_ids` each turn
recorded, so turn boundaries cannot drift. One sequence per CHAIN of turns: a turn that `extends`
the last turn of an open sequence continues it (its prompt delta — tool and environment
observations, the next user message — enters with loss mask 0, its completion with mask 1), so a
whole multi-turn main conversation is one sequence. A turn that starts a new context (a skill query,
a rerank, a distillation, a map) or branches off an earlier turn starts a new sequence from its full
prompt. The loss mask is 1 exactly on tokens the model generated.

Per generated token a sequence keeps the behaviour log-prob, the sampling temperature and the index
of the turn that generated it (from which its phase label follows). `collate` packs sequences into
padded tensors plus a flat list of the generated positions, so everything downstream (log-probs,
advantages, losses) works on the N generated tokens only and never touches prompt positions.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import torch

from agentkit.trajectory import Trajectory


class MissingTokensError(ValueError):
    """A trajectory has turns without token ids (an API backend that does not return them)."""


V = TypeVar("V", list[float], torch.Tensor)


@dataclass
class TrackValues(Generic[V]):
    """One credit track's per-generated-token advantage and mask (lists on a `TokenSequence`, flat
    tensors on a `PackedBatch`), in generated-token order."""

    advantages: V
    mask: V


@dataclass
class TokenSequence:
    """One training sequence: token ids, the loss mask, and per-token generation data.

    `old_logprobs`, `temperatures` and `turn_ids` are aligned with `input_ids`; at positions where
    `loss_mask` is 0 they hold 0.0, 1.0 and -1. The per-generated-token arrays the trainer attaches
    (length = sum of `loss_mask`): `tracks` (each credit track's advantage and mask, by track name) and
    `teacher_mask` (the tokens an algorithm's teacher pass scores, e.g. SDAR; None without one).
    """

    trajectory: int
    context: str
    input_ids: list[int]
    loss_mask: list[int]
    old_logprobs: list[float]
    temperatures: list[float]
    turn_ids: list[int]
    tracks: dict[str, TrackValues[list[float]]] = field(default_factory=dict)
    teacher_mask: list[float] | None = None

    @property
    def generated_turns(self) -> list[int]:
        """The turn index of each generated token, in order."""
        return [t for t, m in zip(self.turn_ids, self.loss_mask, strict=True) if m]

    @property
    def n_generated(self) -> int:
        """How many tokens of the sequence the model generated (the ones with a loss)."""
        return sum(self.loss_mask)

    def __len__(self) -> int:
        return len(self.input_ids)


def sequences_from_trajectory(
    trajectory: Trajectory, index: int = 0, *, max_len: int | None = None
) -> list[TokenSequence]:
    """Build the training sequences of one trajectory (one per chain of turns).

    Raises `MissingTokensError` if a turn has no completion tokens or its log-probs do not match.
    """
    open_by_last_turn: dict[int, TokenSequence] = {}
    sequences: list[TokenSequence] = []
    for turn in trajectory.turns:
        if not turn.completion_ids:
            raise MissingTokensError(
                f"trajectory {trajectory.id} turn {turn.index} has no token ids; log runs with a backend "
                "that returns tokens (local:, vllm:) to train on them"
            )
        if len(turn.logprobs) != len(turn.completion_ids):
            raise MissingTokensError(
                f"trajectory {trajectory.id} turn {turn.index}: {len(turn.logprobs)} log-probs for "
                f"{len(turn.completion_ids)} completion tokens"
            )
        seq = open_by_last_turn.pop(turn.extends, None) if turn.extends is not None else None
        if seq is None:
            prompt = trajectory.prompt_ids(turn.index)
            seq = TokenSequence(index, turn.context, [], [], [], [], [])
            sequences.append(seq)
        else:
            prompt = turn.prompt_ids
        if not prompt and not seq.input_ids:
            raise MissingTokensError(f"trajectory {trajectory.id} turn {turn.index} has an empty prompt")
        n_prompt = len(prompt)
        n_comp = len(turn.completion_ids)
        seq.input_ids += list(prompt) + list(turn.completion_ids)
        seq.loss_mask += [0] * n_prompt + [1] * n_comp
        seq.old_logprobs += [0.0] * n_prompt + [float(x) for x in turn.logprobs]
        seq.temperatures += [1.0] * n_prompt + [float(turn.temperature)] * n_comp
        seq.turn_ids += [-1] * n_prompt + [turn.index] * n_comp
        open_by_last_turn[turn.index] = seq
    if max_len is not None:
        for seq in sequences:
            if len(seq) > max_len:
                for name in ("input_ids", "loss_mask", "old_logprobs", "temperatures", "turn_ids"):
                    setattr(seq, name, getattr(seq, name)[:max_len])
    return [s for s in sequences if s.n_generated > 0]


def build_sequences(trajectories: Sequence[Trajectory], *, max_len: int | None = None,
                    include: Collection[int] | None = None) -> list[TokenSequence]:
    """The sequences of several trajectories (of those whose index is in `include`, when given);
    `TokenSequence.trajectory` indexes into the list."""
    out: list[TokenSequence] = []
    for i, traj in enumerate(trajectories):
        if include is None or i in include:
            out.extend(sequences_from_trajectory(traj, i, max_len=max_len))
    return out


def phase_labels(trajectory: Trajectory, seq: TokenSequence) -> list[str | None]:
    """The phase label of each position (None where the model did not generate the token)."""
    return [trajectory.turns[t].phase if t >= 0 else None for t in seq.turn_ids]


@dataclass
class PackedBatch:
    """Sequences padded into [B, T] tensors plus the N generated positions, flattened.

    The logits at (rows[k], cols[k]) predict `targets[k]`, the k-th generated token; `tracks[name]`
    holds each credit track's flat [N] advantage and mask, `teacher_mask` the flat [N] teacher-pass mask
    (None when no sequence has one). A sequence without a track or teacher mask contributes zeros.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    rows: torch.Tensor
    cols: torch.Tensor
    targets: torch.Tensor
    old_logprobs: torch.Tensor
    temperatures: torch.Tensor
    seq_of_token: torch.Tensor
    tracks: dict[str, TrackValues[torch.Tensor]] = field(default_factory=dict)
    teacher_mask: torch.Tensor | None = None
    prompt_lens: torch.Tensor | None = None
    """Per row: the position of its first generated token (the length of its first prompt)."""

    @property
    def n_tokens(self) -> int:
        """How many generated tokens the batch holds."""
        return int(self.targets.numel())

    def to(self, device: torch.device | str) -> PackedBatch:
        """The batch on `device`."""
        return PackedBatch(
            **{k: getattr(self, k).to(device) for k in ("input_ids", "attention_mask", "rows", "cols", "targets",
                                                       "old_logprobs", "temperatures", "seq_of_token")},
            tracks={k: TrackValues(v.advantages.to(device), v.mask.to(device)) for k, v in self.tracks.items()},
            teacher_mask=None if self.teacher_mask is None else self.teacher_mask.to(device),
            prompt_lens=self.prompt_lens,
        )


def collate(
    sequences: Sequence[TokenSequence], *, pad_id: int = 0, prefixes: Sequence[Sequence[int]] | None = None
) -> PackedBatch:
    """Pad sequences to one batch. `prefixes[i]` (token ids) is put before sequence i — SDAR's
    privileged context — and shifts its positions; generated positions stay the same tokens."""
    if not sequences:
        raise ValueError("collate needs at least one sequence")
    prefixes = prefixes or [[] for _ in sequences]
    full = [list(p) + s.input_ids for p, s in zip(prefixes, sequences, strict=True)]
    width = max(len(x) for x in full)
    input_ids = torch.full((len(full), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(full), width), dtype=torch.long)
    rows: list[int] = []
    cols: list[int] = []
    targets: list[int] = []
    old: list[float] = []
    temps: list[float] = []
    for b, (ids, prefix, seq) in enumerate(zip(full, prefixes, sequences, strict=True)):
        input_ids[b, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        attention[b, : len(ids)] = 1
        shift = len(prefix)
        for t, m in enumerate(seq.loss_mask):
            if m:
                if t + shift == 0:
                    raise ValueError("a generated token cannot be the first token of a sequence")
                rows.append(b)
                cols.append(t + shift - 1)
                targets.append(seq.input_ids[t])
                old.append(seq.old_logprobs[t])
                temps.append(seq.temperatures[t])
    seq_of_token = torch.tensor(rows, dtype=torch.long)
    names = sorted(set().union(*(s.tracks.keys() for s in sequences)))
    tracks = {
        name: TrackValues(
            _flat(sequences, f"track {name!r} advantages", [s.tracks[name].advantages if name in s.tracks else None
                                                            for s in sequences]),
            _flat(sequences, f"track {name!r} mask", [s.tracks[name].mask if name in s.tracks else None
                                                      for s in sequences]),
        )
        for name in names
    }
    teacher = None
    if any(s.teacher_mask is not None for s in sequences):
        teacher = _flat(sequences, "teacher mask", [s.teacher_mask for s in sequences])
    return PackedBatch(
        input_ids=input_ids,
        attention_mask=attention,
        rows=torch.tensor(rows, dtype=torch.long),
        cols=torch.tensor(cols, dtype=torch.long),
        targets=torch.tensor(targets, dtype=torch.long),
        old_logprobs=torch.tensor(old, dtype=torch.float32),
        temperatures=torch.tensor(temps, dtype=torch.float32),
        seq_of_token=seq_of_token,
        tracks=tracks,
        teacher_mask=teacher,
        prompt_lens=torch.tensor([len(p) + s.loss_mask.index(1) for p, s in zip(prefixes, sequences, strict=True)],
                                 dtype=torch.long),
    )


def _flat(sequences: Sequence[TokenSequence], what: str, arrays: Sequence[list[float] | None]) -> torch.Tensor:
    """One per-generated-token array of every sequence, concatenated (zeros where a sequence has none)."""
    flat: list[float] = []
    for s, arr in zip(sequences, arrays, strict=True):
        if arr is None:
            arr = [0.0] * s.n_generated
        if len(arr) != s.n_generated:
            raise ValueError(f"{what} has {len(arr)} entries for {s.n_generated} generated tokens")
        flat.extend(arr)
    return torch.tensor(flat, dtype=torch.float32)
