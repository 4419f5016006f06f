"""Rollouts from a vLLM server, kept on the current policy after every update.

    server = VLLMServer(VLLMServer.plan_for(base_dir, runtime_lora=True, fp8_weights=False)).start()
    trainer = Trainer(...)                                   # LoRA enabled
    trainer.rollout = VLLMRollout.from_server(server, adapter_root=out / "adapters", policy=trainer.policy)
    trainer.fit(env)

After each optimiser step `sync(policy, step)` ships the policy:

- LoRA (a peft model): `save_pretrained` into a fresh directory, `POST /v1/load_lora_adapter` under a new,
  never reused name (`policy-step-N`), check `/v1/models` lists it, point the rollout model at it, then
  unload the previous adapter. Names are never reused because a same-name reload can serve stale
  weights (vllm#42125; vllm RFC #48312 recommends immutable versioned adapter names for RL).
- Full weights: `save_pretrained` (plus the tokenizer) into a fresh directory and restart the server
  on it under the new name (vLLM's OpenAI server has no stable reload-from-disk route across versions:
  vllm#12774, and `reload_weights` can return cached weights: vllm#32718).

Rollouts name the adapter in every request, so a missing adapter is a 404, never a silent answer
from the base model; every response's `model` field is checked too. `verify_probe=True` adds a
greedy probe after each load that fails when the adapter's answer equals the base model's although
the adapter changes the weights by more than a bf16 server can round away (`probe_min_effect`): the
"inference silently hits the base model" pitfall, without false alarms on tiny early updates.

Under torchrun (replicated or FSDP-sharded weights) every process calls `sync` together: the adapter
is gathered from the shards (a collective), rank 0 alone saves it, loads it on the server and checks
it, and the other processes wait for rank 0 and then sample from the name it chose. Each process rolls
out its share of the step against the same server. Full-weight updates under torchrun are not
implemented (NotImplementedError).

The server reads adapter directories from its own filesystem: `adapter_root` must be visible to it.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentkit.messages import Message
from agentkit.models.protocol import GenerationSettings, ModelResponse, StreamItem, ToolSpecs
from agentkit.models.vllm_server import VLLMAdmin, VLLMServer
from agentkit.training import distributed as dist

__all__ = ["AdapterNotApplied", "PinnedModel", "VLLMRollout", "adapter_effect", "save_adapter"]

PROBE_MESSAGES = [{"role": "user", "content": "Continue the sequence with five words: red, green, blue,"}]


class AdapterNotApplied(RuntimeError):
    """The server does not (or not verifiably) generate with the policy that was just shipped."""


class PinnedModel:
    """A model that must be answered by one served name: checks each response's `model` field."""

    def __init__(self, inner: Any, served_name: str) -> None:
        self.inner = inner
        self.served_name = served_name
        self.name = getattr(inner, "name", served_name)

    def _check(self, response: ModelResponse) -> ModelResponse:
        raw = response.raw
        answered = raw.get("model") if isinstance(raw, dict) else getattr(raw, "model", None)
        if answered is not None and answered != self.served_name:
            raise AdapterNotApplied(
                f"asked for {self.served_name!r} but {answered!r} answered: rollouts would not use the policy"
            )
        return response

    def generate(self, messages: Sequence[Message], tools: ToolSpecs = (),
                 settings: GenerationSettings | None = None) -> ModelResponse:
        """The inner model's reply, after checking the served name that answered it.

        Raises:
            AdapterNotApplied: another model (e.g. the base) answered.
        """
        return self._check(self.inner.generate(messages, tools, settings))

    def stream(self, messages: Sequence[Message], tools: ToolSpecs = (),
               settings: GenerationSettings | None = None) -> Iterator[StreamItem]:
        """The inner model's stream; its final response is checked like `generate`'s."""
        for item in self.inner.stream(messages, tools, settings):
            if isinstance(item, ModelResponse):
                self._check(item)
            yield item


class VLLMRollout:
    """A `RolloutEngine` (agentkit.training.rollout) backed by a vLLM OpenAI-compatible server.

    Args:
        base_url: the server's `http://host:port/v1`.
        base_name: the served name of the base model.
        adapter_root: where shipped adapters / checkpoints are written (visible to the server).
        policy: the module being trained; shipped on the first `model()` call if no `sync` came before
            (a resumed run starts from non-base weights).
        server: the `VLLMServer` running the model; required for full-weight updates (restart).
        tokenizer: saved next to full-weight checkpoints (vLLM loads it from the model directory).
        start_from_base: allow `model()` before anything was shipped to use the base model (correct only
            when the policy equals the base, e.g. a fresh LoRA with B = 0).
        keep: how many shipped directories to keep on disk.
        verify_probe: after each LoRA load, check greedy outputs differ from the base model's when the
            adapter changes the weights visibly (see `probe_min_effect`).
        probe_min_effect: the relative weight change ‖B·A·s‖/‖W‖ (largest over the adapted layers) from which
            the probe expects the served answer to differ from the base's. Below it a bf16 server may
            round the adapter's effect away (an early step with a small learning rate), so no alarm.
        model_options: passed to `OpenAIModel` (e.g. what makes it return token ids and log-probs).
    """

    ships_sharded = True
    """`sync` takes a policy sharded by FSDP (the adapter is gathered on rank 0 and shipped from there)."""

    def __init__(
        self,
        base_url: str,
        base_name: str,
        adapter_root: str | Path,
        *,
        policy: Any = None,
        server: VLLMServer | None = None,
        tokenizer: Any = None,
        api_key: str | None = None,
        name_prefix: str = "policy-step",
        start_from_base: bool = False,
        keep: int = 2,
        verify_probe: bool = False,
        probe_min_effect: float = 1e-2,
        model_options: dict[str, Any] | None = None,
    ) -> None:
        self.probe_min_effect = probe_min_effect
        self.base_url = base_url.rstrip("/")
        self.base_name = base_name
        self.adapter_root = Path(adapter_root)
        self.policy = policy
        self.server = server
        self.tokenizer = tokenizer
        self.api_key = api_key
        self.name_prefix = name_prefix
        self.start_from_base = start_from_base
        self.keep = max(1, keep)
        self.verify_probe = verify_probe
        self.model_options = dict(model_options or {})
        self.admin = VLLMAdmin(self.base_url, api_key)
        self.current: str | None = None
        self.shipped: list[tuple[str, Path]] = []  # (served name, directory), oldest first
        self._used_names: set[str] = set()
        self._models: dict[str, PinnedModel] = {}

    @classmethod
    def from_server(cls, server: VLLMServer, adapter_root: str | Path, **options: Any) -> VLLMRollout:
        """An engine for a server started by agentkit (`VLLMServer`): its URL, served name and API key;
        `options` as for the constructor."""
        return cls(server.base_url, server.served_name, adapter_root, server=server, api_key=server.plan.api_key,
                   **options)

    # -- RolloutEngine ---------------------------------------------------------------------------------
    def model(self) -> PinnedModel:
        """The model rollouts sample from: the last shipped policy, requested by its own name."""
        if self.current is None:
            if self.policy is not None:
                self.sync(self.policy, 0)
            elif not self.start_from_base:
                raise AdapterNotApplied(
                    "no policy shipped to the vLLM server yet: pass policy= (it is shipped on first use), call "
                    "sync(policy, step) first, or start_from_base=True if the policy equals the base model"
                )
        name = self.current or self.base_name
        if name not in self._models:
            from agentkit.models.vllm_model import VLLMModel

            inner = VLLMModel(name, base_url=self.base_url, api_key=self.api_key or "EMPTY", **self.model_options)
            self._models = {name: PinnedModel(inner, name)}  # only the current policy's model is kept
        return self._models[name]

    def sync(self, policy: Any, step: int) -> None:
        """Ship `policy` after optimiser step `step` and make `model()` sample from it.

        A LoRA policy is loaded on the server under a fresh name (the previous one is unloaded); full
        weights restart the server on a saved checkpoint. Under torchrun, every process must call it.

        Raises:
            AdapterNotApplied: the server does not list the new adapter, serves it from elsewhere, or
                (`verify_probe`) answers with the base model's output.
            NotImplementedError: full weights under torchrun.
        """
        if dist.active():
            self._sync_distributed(policy, step)
            return
        self._sync_here(policy, step)

    def _sync_distributed(self, policy: Any, step: int) -> None:
        if not hasattr(policy, "peft_config"):
            raise NotImplementedError(
                "shipping full (sharded or replicated) weights to vLLM under torchrun is not implemented: train a "
                "LoRA adapter (lora.enabled) or run in one process")
        state = dist.whole_trainable(policy)  # every process takes part in the gather
        effect = adapter_effect(policy) if self.verify_probe else None
        failure: BaseException | None = None
        if dist.is_main():
            try:
                self._sync_here(policy, step, state=state, effect=effect)
            except Exception as exc:  # re-raised below, once the others know
                failure = exc
        current, error = dist.broadcast_object((self.current, None if failure is None else repr(failure)))
        if failure is not None:
            raise failure
        if error is not None:
            raise AdapterNotApplied(f"rank 0 could not ship the policy of step {step} to vLLM: {error}")
        self.current = current

    def _sync_here(self, policy: Any, step: int, *, state: dict[str, Any] | None = None,
                   effect: float | None = None) -> None:
        if hasattr(policy, "peft_config"):  # a name another client already loaded on this server is taken too
            self._used_names.update(self.admin.model_ids())
        name = self._fresh_name(step)
        folder = self.adapter_root / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        if hasattr(policy, "peft_config"):
            self._ship_adapter(policy, name, folder, state=state, effect=effect)
        else:
            self._ship_full_weights(policy, name, folder)
        self.shipped.append((name, folder))
        self._prune()

    # -- LoRA ------------------------------------------------------------------------------------------
    def _ship_adapter(self, policy: Any, name: str, folder: Path, *, state: dict[str, Any] | None = None,
                      effect: float | None = None) -> None:
        save_adapter(policy, folder, state)
        self.admin.load_lora_adapter(name, folder.resolve())
        try:
            self._check_listed(name, folder)
            if self.verify_probe and (adapter_effect(policy) if effect is None else effect) >= self.probe_min_effect:
                self._probe_differs_from_base(name)
        except AdapterNotApplied:
            with contextlib.suppress(Exception):  # leave the server as it was; the check's error is the news
                self.admin.unload_lora_adapter(name)
            raise
        previous = self.current
        self.current = name
        if previous is not None and previous != self.base_name:
            self.admin.unload_lora_adapter(previous)

    def _check_listed(self, name: str, folder: Path) -> None:
        entries = {str(entry.get("id")): entry for entry in self.admin.models()}
        if name not in entries:
            raise AdapterNotApplied(f"adapter {name!r} was loaded but /v1/models does not list it: {sorted(entries)}")
        root = entries[name].get("root")
        if root and Path(str(root)).is_absolute() and Path(str(root)).resolve() != folder.resolve():
            raise AdapterNotApplied(f"/v1/models lists {name!r} from {root}, not from {folder}")

    def _probe_differs_from_base(self, name: str) -> None:
        def signature(model: str) -> tuple[str, tuple[float, ...]]:
            reply = self.admin.chat({"model": model, "messages": PROBE_MESSAGES, "max_tokens": 8, "temperature": 0,
                                     "logprobs": True})
            choice = reply["choices"][0]
            content = (choice.get("logprobs") or {}).get("content") or []
            return choice["message"].get("content") or "", tuple(t["logprob"] for t in content)

        if signature(name) == signature(self.base_name):
            raise AdapterNotApplied(
                f"adapter {name!r} is loaded and not zero, yet its greedy answer and log-probs equal the base "
                "model's: the server is generating with the base weights"
            )

    # -- full weights ----------------------------------------------------------------------------------
    def _ship_full_weights(self, policy: Any, name: str, folder: Path) -> None:
        if self.server is None:
            raise AdapterNotApplied(
                "full-weight updates restart the server on the saved checkpoint: build VLLMRollout.from_server(...) "
                "(or train a LoRA adapter and serve with runtime_lora=True)"
            )
        policy.save_pretrained(str(folder))
        if self.tokenizer is not None:
            self.tokenizer.save_pretrained(str(folder))
        plan = self.server.plan
        args = list(plan.args)
        args[plan.model_arg] = str(folder.resolve())
        if "--served-model-name" in args:
            args[args.index("--served-model-name") + 1] = name
        else:
            args += ["--served-model-name", name]
        new_plan = replace(plan, args=args, served_name=name)
        command = None if self.server.command == plan.args else _retarget(self.server.command, plan, folder, name)
        self.server.stop()
        self.server = VLLMServer(new_plan, command=command, env=None, startup_timeout=self.server.startup_timeout)
        self.server.start()
        self._check_listed_full(name)
        self.base_name = name
        self.current = name

    def _check_listed_full(self, name: str) -> None:
        ids = self.admin.model_ids()
        if name not in ids:
            raise AdapterNotApplied(f"restarted server serves {ids}, not {name!r}")

    # -- bookkeeping -----------------------------------------------------------------------------------
    def _fresh_name(self, step: int) -> str:
        name, k = f"{self.name_prefix}-{step}", 1
        while name in self._used_names:
            k += 1
            name = f"{self.name_prefix}-{step}-r{k}"
        self._used_names.add(name)
        return name

    def _prune(self) -> None:
        while len(self.shipped) > self.keep:
            _, folder = self.shipped.pop(0)
            shutil.rmtree(folder, ignore_errors=True)


def save_adapter(policy: Any, folder: Path, state: dict[str, Any] | None = None) -> None:
    """Write a peft policy's adapter into `folder` (peft format: adapter_config.json and the weights), from
    `state` (whole tensors by parameter name, e.g. gathered from shards) or from the policy itself.

    Raises:
        AdapterNotApplied: peft wrote no adapter_config.json.
    """
    policy.save_pretrained(str(folder), state_dict=state)
    if not (folder / "adapter_config.json").is_file():
        raise AdapterNotApplied(f"save_pretrained wrote no adapter_config.json into {folder}")


def _retarget(command: list[str], plan: Any, folder: Path, name: str) -> list[str]:
    """A custom command (a stand-in server in tests) with the served name and model path swapped."""
    swapped = [name if part == plan.served_name else part for part in command]
    return [str(folder.resolve()) if part == plan.args[plan.model_arg] else part for part in swapped]


def adapter_effect(policy: Any) -> float:
    """The largest relative weight change ‖ΔW‖_F / ‖W‖_F of a LoRA layer, ΔW = B·A·scaling (0 for a fresh
    adapter, B = 0). A bf16 server cannot show changes much below its precision (2^-8 ≈ 0.004).
    A collective on a sharded policy (every process must call it)."""
    import torch
    from torch.distributed.tensor import DTensor

    def whole(t: torch.Tensor) -> torch.Tensor:  # sharded (FSDP): gathered, on every process alike
        return t.full_tensor() if isinstance(t, DTensor) else t

    largest = 0.0
    with torch.no_grad():
        for module in policy.modules():
            lora_a, lora_b = getattr(module, "lora_A", None), getattr(module, "lora_B", None)
            base = getattr(module, "base_layer", None)
            if not lora_a or not lora_b or base is None or not hasattr(base, "weight"):
                continue
            for adapter in lora_a:
                if adapter not in lora_b:
                    continue
                a, b = whole(lora_a[adapter].weight).float(), whole(lora_b[adapter].weight).float()
                delta = (b @ a) * float(module.scaling[adapter])
                norm = float(whole(base.weight).float().norm())
                largest = max(largest, float(delta.norm()) / max(norm, 1e-12))
    return largest
