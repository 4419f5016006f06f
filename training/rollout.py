"""The rollout seam: where online training gets its samples from.

A `RolloutEngine` hands out an agentkit `Model` that samples with the *current* policy, and is told
after every optimiser step that the policy changed:

    class RolloutEngine(Protocol):
        def model(self) -> Model: ...                       # used by the agent loop for rollouts
        def sync(self, policy: nn.Module, step: int) -> None: ...   # after each optimiser step

`LocalRollout` shares the trained torch module with a `LocalModel` (updates are in place, so `sync`
has nothing to do). A vLLM engine (training/vllm_rollout.py) implements the same two methods: `model()`
returns an OpenAI-compatible model pointed at the server, `sync()` pushes the new weights or LoRA
adapter to it. Whatever the engine, the model must return `TokenRecord`s (token ids and the
log-probs of the sampled tokens at the sampling temperature), since training uses them as they are.

`SnapshotRollout` keeps its own copy of the trainable weights, refreshed by `sync`: asynchronous
training (training/online.py, `max_staleness` > 0) rolls out from it while the module is updated.

`sample_completions` is a batched sampler for single-turn prompts (all G samples of all prompts in one
KV-cached decode loop), used by benchmarks and by engines that batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, cast, runtime_checkable

import torch
from torch import nn

from agentkit.models.protocol import Model, TokenRecord


@runtime_checkable
class RolloutEngine(Protocol):
    """Produces rollouts with the current policy. Keep this interface stable: other engines plug in here."""

    def model(self) -> Model:
        """The model the agent loop samples from (must return token ids and log-probs)."""
        ...

    def sync(self, policy: nn.Module, step: int) -> None:
        """Called after optimiser step `step`: make `model()` sample from the updated `policy`."""
        ...


class LocalRollout:
    """Rollouts from a `LocalModel` that wraps the very module being trained (in-place updates)."""

    in_place = True
    """Its model reads the trained weights themselves: rollouts cannot overlap an update."""

    def __init__(self, local_model: Any) -> None:
        self._model = local_model

    def model(self) -> Model:
        """The local model that samples with the weights being trained."""
        model: Model = self._model
        return model

    def sync(self, policy: nn.Module, step: int) -> None:
        """Nothing to copy: the module is shared. The LocalModel drops its KV cache by itself when it
        sees the weights changed; we reset it too, to be explicit."""
        reset = getattr(self._model, "reset_cache", None)
        if callable(reset):
            reset()


@torch.inference_mode()
def sample_completions(
    module: nn.Module,
    prompts: Sequence[Sequence[int]],
    *,
    n: int = 1,
    max_new_tokens: int = 64,
    temperature: float = 1.0,
    stop_ids: Sequence[int] = (),
    pad_id: int = 0,
    generator: torch.Generator | None = None,
) -> list[TokenRecord]:
    """Sample `n` completions for each prompt (token ids) in one batched decode loop.

    Returns len(prompts)·n records, prompt-major, each with the sampled ids and their log-probs under
    softmax(logits / temperature); a completion ends at the first stop id (kept) or at the limit.
    """
    from transformers import DynamicCache

    if temperature <= 0:
        raise ValueError("sampling needs temperature > 0")
    device = next(module.parameters()).device
    unique = [list(p) for p in prompts]
    rows = [p for p in unique for _ in range(n)]
    width = max(len(r) for r in unique)
    ids = torch.full((len(unique), width), pad_id, dtype=torch.long, device=device)
    attn = torch.zeros_like(ids)
    for i, r in enumerate(unique):  # left padding: every row's next token goes in the same column
        ids[i, width - len(r):] = torch.tensor(r, device=device)
        attn[i, width - len(r):] = 1
    positions = (attn.cumsum(-1) - 1).clamp_min(0)
    cache = DynamicCache(config=getattr(module, "config", None))
    # Prefill each prompt once, then copy its cache for its n samples.
    out = module(input_ids=ids, attention_mask=attn, position_ids=positions, past_key_values=cache, use_cache=True,
                 logits_to_keep=1)
    for layer in cache.layers:
        cast(Any, layer).batch_repeat_interleave(n)  # the attention layers' caches have it
    logits = out.logits[:, -1, :].repeat_interleave(n, dim=0)
    attn = attn.repeat_interleave(n, dim=0)
    positions = positions.repeat_interleave(n, dim=0)
    stops = torch.tensor(sorted(set(stop_ids)), dtype=torch.long, device=device)
    done = torch.zeros(len(rows), dtype=torch.bool, device=device)
    tokens: list[torch.Tensor] = []
    logps: list[torch.Tensor] = []
    alive: list[torch.Tensor] = []
    next_pos = positions[:, -1] + 1
    for _ in range(max_new_tokens):
        logp = torch.log_softmax(logits.float() / temperature, dim=-1)
        token = _sample(logp, generator)
        alive.append(~done)
        tokens.append(token)
        logps.append(logp.gather(1, token[:, None]).squeeze(1))
        if stops.numel():
            done = done | torch.isin(token, stops)
        if bool(done.all()):
            break
        attn = torch.cat([attn, (~done).long()[:, None]], dim=1)
        out = module(input_ids=token[:, None], attention_mask=attn, position_ids=next_pos[:, None],
                     past_key_values=cache, use_cache=True)
        logits = out.logits[:, -1, :]
        next_pos = next_pos + 1
    records: list[TokenRecord] = []
    tok = torch.stack(tokens, 1).tolist() if tokens else [[] for _ in rows]
    lp = torch.stack(logps, 1).tolist() if logps else [[] for _ in rows]
    keep = torch.stack(alive, 1).tolist() if alive else [[] for _ in rows]
    for i, r in enumerate(rows):
        k = sum(keep[i])
        records.append(TokenRecord(prompt_ids=r, completion_ids=tok[i][:k], logprobs=lp[i][:k],
                                   temperature=float(temperature)))
    return records


def _sample(logp: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One token per row from softmax probabilities exp(logp), by inverting the CDF with one uniform per row.

    Exact like `torch.multinomial`, which draws an exponential for every vocabulary entry instead
    (16 × 49,152 draws per step: ~1 s of a 64-token SmolLM2 rollout on CPU). The CDF is float64.
    """
    cdf = logp.double().exp().cumsum(-1)
    u = torch.rand(logp.shape[0], 1, generator=generator, device=logp.device, dtype=torch.float64)
    token = torch.searchsorted(cdf, u * cdf[:, -1:], right=True).squeeze(1)
    return token.clamp_max(logp.shape[-1] - 1)


class SnapshotRollout:
    """Rollouts from a copy of the policy that changes only at `sync`: what asynchronous online training
    needs locally, since its rollouts run while the trained module is being updated.

    The copy shares the frozen weights with the trained module (a LoRA base costs nothing twice) and
    holds its own trainable ones; `sync` copies them over (call it while no rollout is in flight).
    """

    in_place = False

    def __init__(self, module: nn.Module, tokenizer: Any, *, name: str = "local:policy-snapshot") -> None:
        import copy

        from agentkit.models.local import LocalModel

        self._source = module
        shared = {id(p): p for p in module.parameters() if not p.requires_grad}
        snapshot = copy.deepcopy(module, memo=shared).eval()
        for p in snapshot.parameters():
            p.requires_grad_(False)
        self._pairs = [(dict(snapshot.named_parameters())[n], p) for n, p in module.named_parameters()
                       if p.requires_grad]
        self._model = LocalModel(snapshot, tokenizer, name=name)

    def model(self) -> Model:
        """The local model over the snapshot (the policy as of the last `sync`)."""
        return self._model

    @torch.no_grad()
    def sync(self, policy: nn.Module, step: int) -> None:
        """Copy the trained weights of the module given at construction into the snapshot."""
        for mine, theirs in self._pairs:
            mine.copy_(theirs.detach())
        self._model.reset_cache()
