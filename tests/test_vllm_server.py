"""The vLLM launcher's lifecycle, for real, against a stand-in OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentkit.models.vllm_server import ServerStartError, VLLMAdmin, VLLMAdminError, VLLMServer, free_port
from agentkit.serving import ServeOptions, ServePlan, plan_serve

STANDIN = str(Path(__file__).parent / "fixtures" / "standin_openai_server.py")
TINY = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "head_dim": 16}


def make_plan(**options: object) -> ServePlan:
    return plan_serve(TINY, None, "0.12.0", ServeOptions(model="tiny", port=free_port(), **options))  # type: ignore[arg-type]


def standin(plan: ServePlan, *extra: str) -> list[str]:
    return [sys.executable, STANDIN, "--port", str(plan.port), "--served-model-name", plan.served_name, *extra]


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def test_start_health_request_stop(tmp_path: Path) -> None:
    plan = make_plan()
    server = VLLMServer(plan, command=standin(plan, "--startup-delay", "0.3"), startup_timeout=30,
                        log_path=tmp_path / "server.log")
    server.start()
    try:
        assert server.running and server.admin.health()
        assert server.admin.model_ids() == ["tiny"]
        reply = server.admin.chat({"model": "tiny", "messages": [{"role": "user", "content": "hello there"}],
                                   "max_tokens": 8, "return_token_ids": True})
        assert reply["choices"][0]["message"]["content"] == "base0000 hello there"
        assert reply["prompt_token_ids"] and reply["choices"][0]["token_ids"]
        with pytest.raises(VLLMAdminError, match="does not exist") as missing:
            server.admin.chat({"model": "nope", "messages": [{"role": "user", "content": "x"}]})
        assert missing.value.status == 404
    finally:
        code = server.stop()
    assert not server.running and code is not None
    assert port_free(plan.port)
    assert "standin: stopped" in server.log_tail()  # SIGTERM reached it and it shut down cleanly


def test_crash_during_start_raises_with_the_log_tail(tmp_path: Path) -> None:
    plan = make_plan()
    server = VLLMServer(plan, command=standin(plan, "--crash-on-start"), startup_timeout=30,
                        log_path=tmp_path / "server.log")
    started = time.monotonic()
    with pytest.raises(ServerStartError) as error:
        server.start()
    assert time.monotonic() - started < 15  # noticed the exit, did not wait for the time-out
    message = str(error.value)
    assert "exited with code 1 during start-up" in message
    assert "standin crash: FP8 KV cache is not supported on this GPU" in message
    assert not server.running


def test_startup_timeout_stops_the_process(tmp_path: Path) -> None:
    plan = make_plan()
    server = VLLMServer(plan, command=standin(plan, "--startup-delay", "30"), startup_timeout=1.0,
                        log_path=tmp_path / "server.log")
    with pytest.raises(ServerStartError, match=r"did not answer .*/health within 1 s"):
        server.start()
    assert server.returncode is not None  # killed, not left behind


def test_a_dropped_server_object_does_not_leave_the_server_running(tmp_path: Path) -> None:
    import gc

    plan = make_plan()
    server = VLLMServer(plan, command=standin(plan), startup_timeout=30, log_path=tmp_path / "server.log").start()
    process = server.process
    assert process is not None
    del server
    gc.collect()
    process.wait(timeout=10)
    assert port_free(plan.port)


def test_port_already_in_use_is_refused_before_launch() -> None:
    plan = make_plan()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", plan.port))
        busy.listen(1)
        server = VLLMServer(plan, command=standin(plan))
        with pytest.raises(ServerStartError, match=f"port {plan.port} .* already in use"):
            server.start()
        assert server.process is None


def test_missing_executable_names_the_extra() -> None:
    if shutil.which("vllm"):
        pytest.skip("vllm is installed here")
    with pytest.raises(ServerStartError, match=r"'vllm' not found \(pip install 'agentkit\[serve\]'\)"):
        VLLMServer(make_plan()).start()


def test_stop_ends_the_whole_process_group(tmp_path: Path) -> None:
    plan = make_plan()
    pid_file = tmp_path / "child.pid"
    # A child process in the same group, like vLLM's engine core: it must not outlive stop().
    script = f"sleep 300 & echo $! > {pid_file}; exec {' '.join(standin(plan))}"
    with VLLMServer(plan, command=["bash", "-c", script], startup_timeout=30) as server:
        assert server.admin.health()
        child = int(pid_file.read_text())
        os.kill(child, 0)  # alive
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("a child of the server outlived stop()")


@pytest.mark.parametrize("kill", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
def test_a_server_does_not_outlive_the_process_that_started_it(tmp_path: Path, kill: int) -> None:
    """Library use with no stop(): the starting process is killed (no handler runs), its server still ends."""
    plan = make_plan()
    parent = f"""
import sys, time
from agentkit.models.vllm_server import VLLMServer
from agentkit.serving import ServeOptions, plan_serve
plan = plan_serve({TINY!r}, None, "0.12.0", ServeOptions(model="tiny", port={plan.port}))
server = VLLMServer(plan, command={standin(plan)!r}, startup_timeout=30, log_path={str(tmp_path / "s.log")!r}).start()
print(server.process.pid, flush=True)
time.sleep(600)
"""
    starter = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True)
    try:
        assert starter.stdout is not None
        server_pid = int(starter.stdout.readline())
        os.kill(server_pid, 0)  # the server is up
        assert not port_free(plan.port)
        starter.send_signal(kill)
        starter.wait(timeout=10)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not port_free(plan.port):
            time.sleep(0.1)
        assert port_free(plan.port), "the server outlived the process that started it"
    finally:
        starter.kill()
        starter.wait()


def test_runtime_lora_routes_follow_the_plan_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_ALLOW_RUNTIME_LORA_UPDATING", raising=False)
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"r": 8, "peft_type": "LORA"}))
    (adapter / "adapter_model.safetensors").write_bytes(b"weights-1")

    plan = make_plan(runtime_lora=True)
    assert plan.env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True"
    with VLLMServer(plan, command=standin(plan, "--require-runtime-lora"), startup_timeout=30) as server:
        assert "added successfully" in server.admin.load_lora_adapter("step-1", adapter)
        assert server.admin.model_ids() == ["tiny", "step-1"]
        with pytest.raises(VLLMAdminError, match="already been loaded"):
            server.admin.load_lora_adapter("step-1", adapter)
        server.admin.unload_lora_adapter("step-1")
        assert server.admin.model_ids() == ["tiny"]

    plain = make_plan()
    with VLLMServer(plain, command=standin(plain, "--require-runtime-lora"), startup_timeout=30) as server:
        with pytest.raises(VLLMAdminError) as error:
            server.admin.load_lora_adapter("step-1", adapter)
        assert error.value.status == 404


def test_admin_health_is_false_when_nothing_listens() -> None:
    assert VLLMAdmin(f"http://127.0.0.1:{free_port()}/v1").health(timeout=0.5) is False


def test_model_talks_to_the_server_through_the_openai_backend() -> None:
    from agentkit import Agent, tool
    from agentkit.messages import Message
    from agentkit.models import GenerationSettings, resolve_model

    @tool
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    plan = make_plan()
    with VLLMServer(plan, command=standin(plan), startup_timeout=30) as server:
        response = server.model().generate([Message.user("ping pong")])
        assert response.message.content == "base0000 ping pong"
        same = resolve_model(plan.model_spec).generate([Message.user("ping")])  # vllm:http://host:port/v1/NAME
        assert same.message.content == "base0000 ping"

        # What training needs from a served model: token ids and log-probs of the sampled tokens.
        traced = server.model().generate([Message.user("one two three")], settings=GenerationSettings(logprobs=True))
        assert traced.tokens is not None and len(traced.tokens.completion_ids) == 5  # 4 words + end of turn
        assert len(traced.tokens.logprobs) == 5 and traced.tokens.prompt_ids

        # The SDK end to end: native tool calling through the server, then a final answer.
        result = Agent(server.model(), [shout], max_steps=4).run("please call shout now")
        calls = [c for m in result.trajectory.messages for c in m.tool_calls]
        assert [c.name for c in calls] == ["shout"]
        assert any(m.role == "tool" and m.content == "PLEASE CALL SHOUT NOW" for m in result.trajectory.messages)


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda() or not shutil.which("vllm") or not os.environ.get("AGENTKIT_GPU_TEST_MODEL"),
                    reason="needs CUDA, vLLM and AGENTKIT_GPU_TEST_MODEL (a local model directory)")
def test_real_vllm_serves_with_fp8(tmp_path: Path) -> None:
    from agentkit.messages import Message
    from agentkit.models import GenerationSettings

    model = os.environ["AGENTKIT_GPU_TEST_MODEL"]
    plan = VLLMServer.plan_for(model, port=free_port(), max_model_len=4096, gpu_memory_utilization=0.5)
    with VLLMServer(plan, log_path=tmp_path / "vllm.log", startup_timeout=900) as server:
        reply = server.model().generate([Message.user("Say OK.")], settings=GenerationSettings(max_tokens=8))
        assert reply.message.content.strip()


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_cli_serve_runs_until_stopped(tmp_path: Path, stop_signal: int) -> None:
    """`agentkit serve` for real: a fake `vllm` on PATH execs the stand-in; Ctrl-C or a process manager's
    SIGTERM stops both cleanly (the server runs in its own process group, so it must not be orphaned)."""
    import subprocess

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "vllm"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import os, sys\n"
        "args = sys.argv[1:]\n"
        "port, name = args[args.index('--port') + 1], args[args.index('--served-model-name') + 1]\n"
        f"os.execv(sys.executable, [sys.executable, {STANDIN!r}, '--port', port, '--served-model-name', name])\n"
    )
    fake.chmod(0o755)
    model_dir = tmp_path / "tiny"
    model_dir.mkdir()
    (model_dir / "config.json").write_text(json.dumps(TINY))
    port = free_port()
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    cli = subprocess.Popen(
        [sys.executable, "-m", "agentkit.cli.main", "serve", str(model_dir), "--port", str(port), "--vllm-version",
         "0.12.0", "--gpu", "l40s", "--log", str(tmp_path / "server.log")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a background job may ignore SIGINT
    )
    try:
        admin = VLLMAdmin(f"http://127.0.0.1:{port}/v1")
        deadline = time.monotonic() + 60
        while not admin.health() and time.monotonic() < deadline:
            assert cli.poll() is None, cli.stdout.read() if cli.stdout else ""
            time.sleep(0.2)
        assert admin.model_ids() == ["tiny"]
        time.sleep(0.5)  # let the CLI print its "ready" lines
        cli.send_signal(stop_signal)
        output, _ = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == 0, output
    assert (f"vllm serve {model_dir} --served-model-name tiny --host 127.0.0.1 --port {port} --kv-cache-dtype fp8 "
            "--attention-backend TRITON_ATTN --quantization fp8") in output
    assert f"agentkit chat --model vllm:http://127.0.0.1:{port}/v1/tiny" in output
    assert "stopped" in output
    assert port_free(port)
