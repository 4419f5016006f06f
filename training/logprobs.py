"""Memory-efficient log-probs and entropies of the generated tokens.

    log π(y_t) = z_t[y_t] − logsumexp(z_t),   z_t = (W h_t) / T_t
    H_t        = logsumexp(z_t) − Σ_v softmax(z_t)_v · z_t,v

Only the N generated positions are scored (prompt and observation positions never reach the output
layer), and the [N, V] logits exist one chunk of tokens at a time: `SelectedLogProbs` is an autograd
function that keeps only the hidden states and recomputes each chunk's logits in backward, so neither
forward nor backward ever holds a full-vocabulary float32 tensor for the batch (for SmolLM2, V =
49,152: 16 × 300 tokens would be 0.9 GB per copy).

Gradients (per chunk, with p = softmax(z)):
    ∂ log π(y)/∂z = onehot(y) − p            ∂H/∂z = −p ⊙ (log p + H)
and ∂z/∂(W h) = 1/T.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import torch
from torch import nn

if TYPE_CHECKING:
    from agentkit.training.sequences import PackedBatch


class SelectedLogProbs(torch.autograd.Function):
    """(hidden [N, H], weight [V, H], targets [N], inv_temp [N]) → (logp [N], entropy [N]), chunked."""

    @staticmethod
    def forward(
        ctx: Any, hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, inv_temp: torch.Tensor,
        chunk: int, with_entropy: bool,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probs of the selected tokens from the hidden states, chunk by chunk."""
        n = hidden.shape[0]
        w = weight.float()
        logp = torch.empty(n, dtype=torch.float32, device=hidden.device)
        ent = torch.zeros(n, dtype=torch.float32, device=hidden.device)
        for s in range(0, n, chunk):
            e = min(n, s + chunk)
            z = (hidden[s:e].float() @ w.T).mul_(inv_temp[s:e, None])
            lse = torch.logsumexp(z, dim=-1)
            logp[s:e] = z.gather(1, targets[s:e, None]).squeeze(1) - lse
            if with_entropy:
                ent[s:e] = lse - torch.linalg.vecdot(torch.softmax(z, dim=-1), z)
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(hidden, weight, targets, inv_temp, ent)
        ctx.chunk, ctx.with_entropy = chunk, with_entropy
        return logp, ent

    @staticmethod
    def backward(ctx: Any, g_logp: torch.Tensor, g_ent: torch.Tensor) -> tuple[Any, ...]:
        """The gradient of the selected log-probs, recomputed chunk by chunk."""
        hidden, weight, targets, inv_temp, ent = ctx.saved_tensors
        need_h, need_w = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        w = weight.float()
        grad_h = torch.zeros_like(hidden, dtype=torch.float32) if need_h else None
        grad_w = torch.zeros_like(w) if need_w else None
        n = hidden.shape[0]
        use_ent = ctx.with_entropy and g_ent is not None
        if g_logp is None and not use_ent:
            return None, None, None, None, None, None
        if g_logp is None:
            g_logp = torch.zeros(n, dtype=torch.float32, device=hidden.device)
        for s in range(0, n, ctx.chunk):
            e = min(n, s + ctx.chunk)
            h = hidden[s:e].float()
            # In place: z and p (plus logsumexp's temporary) are the only [chunk, V] tensors alive, not ~6.
            z = (h @ w.T).mul_(inv_temp[s:e, None])
            z -= torch.logsumexp(z, dim=-1, keepdim=True)  # z is now log p
            p = z.exp()
            if use_ent:  # gz = −g_ent · p · (log p + H) − g_logp · p, built in z's memory
                gz = z.add_(ent[s:e, None]).mul_(p).mul_(-g_ent[s:e, None])
                gz.addcmul_(p, g_logp[s:e, None], value=-1.0)
                del p
            else:
                gz = p.mul_(-g_logp[s:e, None])
                del z
            gz.scatter_add_(1, targets[s:e, None], g_logp[s:e, None])
            gz *= inv_temp[s:e, None]
            if grad_h is not None:
                grad_h[s:e] = gz @ w
            if grad_w is not None:
                grad_w += gz.T @ h
        return (
            grad_h.to(hidden.dtype) if grad_h is not None else None,
            grad_w.to(weight.dtype) if grad_w is not None else None,
            None, None, None, None,
        )


def selected_logprobs(
    hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, temperatures: torch.Tensor | float = 1.0,
    *, chunk: int = 256, with_entropy: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probs (and entropies, zeros unless `with_entropy`) of `targets` under softmax(W h / T)."""
    if not torch.is_tensor(temperatures):
        temperatures = torch.full((hidden.shape[0],), float(temperatures), device=hidden.device)
    inv_temp = (1.0 / temperatures.float()).to(hidden.device)
    with torch.autocast(hidden.device.type, enabled=False):  # log-probs in fp32 even under bf16 autocast
        logp, ent = SelectedLogProbs.apply(  # type: ignore[no-untyped-call]
            hidden, weight, targets, inv_temp, max(1, int(chunk)), with_entropy)
    return logp, ent


def naive_logprobs(
    logits: torch.Tensor, targets: torch.Tensor, temperatures: torch.Tensor | float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Reference: the full float32 log-softmax at once. logits [N, V] → (logp [N], entropy [N])."""
    if not torch.is_tensor(temperatures):
        temperatures = torch.full((logits.shape[0],), float(temperatures), device=logits.device)
    z = logits.float() / temperatures.float()[:, None]
    logp_all = torch.log_softmax(z, dim=-1)
    ent = -(logp_all.exp() * logp_all).sum(-1)
    return logp_all.gather(1, targets[:, None]).squeeze(1), ent


# -- the model side ---------------------------------------------------------------------------------


def _unwrapped(model: nn.Module) -> Any:
    """The Transformers model inside a peft wrapper, or `model` itself."""
    base_model = getattr(model, "get_base_model", None)
    return base_model() if callable(base_model) else model


def causal_lm_parts(model: nn.Module) -> tuple[nn.Module, nn.Module]:
    """(decoder returning hidden states, output layer) of a Transformers causal LM, peft-wrapped or not."""
    base = _unwrapped(model)
    decoder = base.get_decoder() if hasattr(base, "get_decoder") else getattr(base, "model", None)
    head = base.get_output_embeddings()
    if decoder is None or head is None:
        raise TypeError(f"{type(base).__name__} is not a causal LM with a decoder and an output layer")
    return decoder, head


def decoder_layers(model: nn.Module) -> list[nn.Module]:
    """The repeated blocks of a causal LM's decoder (the units FSDP shards one by one)."""
    decoder, _ = causal_lm_parts(model)
    layers = getattr(decoder, "layers", None)
    if isinstance(layers, nn.ModuleList):
        return list(layers)
    lists = [m for m in decoder.children() if isinstance(m, nn.ModuleList)]
    if len(lists) != 1:
        raise TypeError(f"cannot find the decoder layers of {type(decoder).__name__} to shard")
    return list(lists[0])


class TokenLogProbs(nn.Module):
    """`sequence_logprobs` as a module around the policy, so one forward covers every weight it reads.

    The fused log-prob reads the output layer's weight outside the LM's own forward; as the root of
    an FSDP2 tree this module's forward gathers that weight (and its backward re-gathers it) like any other.
    """

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, batch: PackedBatch, *, chunk: int = 256, with_entropy: bool = False,
                share_prompts: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probs (and optionally entropies) of the batch's generated tokens."""
        return sequence_logprobs(self.model, batch, chunk=chunk, with_entropy=with_entropy,
                                 share_prompts=share_prompts)


def _fused_ok(model: nn.Module, head: nn.Module) -> bool:
    cfg = getattr(model, "config", None)
    special = any(getattr(cfg, k, None) not in (None, 1.0) for k in ("final_logit_softcapping", "logit_scale"))
    return isinstance(head, nn.Linear) and head.bias is None and not special


def sequence_logprobs(
    model: nn.Module, batch: PackedBatch, *, chunk: int = 256, with_entropy: bool = False,
    share_prompts: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probs and entropies of a batch's generated tokens under `model` (flat [N] tensors).

    With `share_prompts`, rows whose first prompt is identical (the G samples of one task) run that
    prompt through the model once and continue from its KV cache (gradients flow through the cache),
    which saves (G − 1) prompt forwards and backwards per group.
    """
    decoder, head = causal_lm_parts(model)
    if share_prompts and batch.prompt_lens is not None:
        h = _shared_prompt_hidden(decoder, batch)
    else:
        out = decoder(input_ids=batch.input_ids, attention_mask=batch.attention_mask, use_cache=False)
        hidden = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
        h = hidden[batch.rows, batch.cols]
    base = _unwrapped(model)
    if _fused_ok(base, head):
        return selected_logprobs(h, cast(torch.Tensor, head.weight), batch.targets, batch.temperatures, chunk=chunk,
                                 with_entropy=with_entropy)
    # Output layers the fused path does not cover (bias, soft-capping): chunked, logits kept for backward.
    pieces = [naive_logprobs(_head_logits(base, head, h[s : s + chunk]), batch.targets[s : s + chunk],
                             batch.temperatures[s : s + chunk]) for s in range(0, h.shape[0], chunk)]
    return torch.cat([p[0] for p in pieces]), torch.cat([p[1] for p in pieces])


def _head_logits(model: nn.Module, head: nn.Module, h: torch.Tensor) -> torch.Tensor:
    logits: torch.Tensor = head(h).float()
    cfg: Any = model.config
    if getattr(cfg, "logit_scale", None) not in (None, 1.0):
        logits = logits * cfg.logit_scale
    cap = getattr(cfg, "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return logits


def _shared_prompt_hidden(decoder: nn.Module, batch: PackedBatch) -> torch.Tensor:
    """Hidden states at the generated positions, each distinct prompt computed once.

    A group's shared prefix is its prompt minus the last prompt token, so every prediction (the first
    generated token's included) comes from the suffix pass: prefix once → cache repeated per row →
    suffix rows (last prompt token + the rest, right-padded) at positions L, L+1, ...
    """
    from transformers import DynamicCache

    assert batch.prompt_lens is not None
    groups: dict[tuple[int, ...], list[int]] = {}
    for b in range(batch.input_ids.shape[0]):
        n_prefix = int(batch.prompt_lens[b]) - 1
        groups.setdefault(tuple(batch.input_ids[b, :n_prefix].tolist()), []).append(b)
    pieces: list[torch.Tensor] = []
    order: list[torch.Tensor] = []
    rows_all = batch.rows
    for prefix, rows in groups.items():
        n = len(prefix)
        rows_t = torch.tensor(rows, device=batch.input_ids.device)
        width = int(batch.attention_mask[rows_t].sum(1).max())
        cache = None
        if n > 0:
            cache = DynamicCache(config=getattr(decoder, "config", None))
            decoder(input_ids=batch.input_ids[rows_t[:1], :n], past_key_values=cache, use_cache=True)
            for layer in cache.layers:
                cast(Any, layer).batch_repeat_interleave(len(rows))  # the attention layers' caches have it
        suffix = batch.input_ids[rows_t, n:width]
        attn = batch.attention_mask[rows_t, :width]
        positions = torch.arange(n, width, device=suffix.device).expand(len(rows), -1)
        out = decoder(input_ids=suffix, attention_mask=attn, position_ids=positions, past_key_values=cache,
                      use_cache=cache is not None)
        hidden = out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]
        local_row = torch.full((int(rows_all.max()) + 1,), -1, dtype=torch.long, device=suffix.device)
        local_row[rows_t] = torch.arange(len(rows), device=suffix.device)
        token_idx = torch.nonzero(torch.isin(rows_all, rows_t)).squeeze(1)
        pieces.append(hidden[local_row[rows_all[token_idx]], batch.cols[token_idx] - n])
        order.append(token_idx)
    h = torch.cat(pieces)
    return h[torch.argsort(torch.cat(order))]
