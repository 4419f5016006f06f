"""`Toolkit.from_mcp`: a real FastMCP server (tests/fixtures/mcp_server.py) over stdio and streamable HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from agentkit import Agent, Toolkit
from agentkit.testing import ScriptedModel, call
from agentkit.tools.mcp import MCPConnectionError, MCPToolkit

SERVER = Path(__file__).parent / "fixtures" / "mcp_server.py"
STDIO = [sys.executable, str(SERVER)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # a zombie child of this process counts as gone once reaped
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


def start_http_server() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([*STDIO, "--http", str(port)])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"test MCP server exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"http://127.0.0.1:{port}/mcp"
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("test MCP server did not open its port in 30 s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def stdio_kit() -> Iterator[MCPToolkit]:
    with Toolkit.from_mcp(STDIO, timeout_s=5) as kit:
        yield kit


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    proc, url = start_http_server()
    yield url
    stop(proc)


def observations(result) -> list:  # type: ignore[no-untyped-def]
    return [m for m in result.trajectory.messages if m.role == "tool"]


def test_stdio_tools_keep_the_servers_schema(stdio_kit: MCPToolkit) -> None:
    tools = {t.name: t for t in stdio_kit.tools()}
    assert {"add", "echo", "divide", "slow", "pid", "crash"} <= set(tools)
    params = tools["add"].spec()["function"]["parameters"]
    assert params["type"] == "object"
    assert set(params["properties"]) == {"a", "b"} and params["properties"]["a"]["type"] == "integer"
    assert sorted(params["required"]) == ["a", "b"]
    assert tools["add"].description == "Add two integers."


def test_agent_calls_an_mcp_tool_over_stdio(stdio_kit: MCPToolkit) -> None:
    model = ScriptedModel([call("add", a=2, b=40), call("echo", text="héllo"), "42"])
    result = Agent(model, tools=[stdio_kit]).run("2 + 40?")
    obs = observations(result)
    assert [o.content for o in obs] == ["42", "héllo"]
    assert not any(o.is_error for o in obs)
    assert result.answer == "42"


def test_tool_error_and_bad_arguments_become_observations(stdio_kit: MCPToolkit) -> None:
    model = ScriptedModel([call("divide", a=1, b=0), call("add", a=1), call("divide", a=1, b=4), "done"])
    result = Agent(model, tools=[stdio_kit]).run("divide")
    error, missing, ok = observations(result)
    assert error.is_error and "cannot divide by zero" in error.content
    assert missing.is_error and "Invalid arguments for add" in missing.content and "b" in missing.content
    assert not ok.is_error and ok.content == "0.25"
    assert result.answer == "done"


def test_a_call_past_its_time_limit_is_an_observation_and_the_session_survives() -> None:
    with Toolkit.from_mcp(STDIO, timeout_s=1) as kit:
        model = ScriptedModel([call("slow", seconds=3), call("add", a=1, b=1), "ok"])
        start = time.monotonic()
        result = Agent(model, tools=[kit]).run("slow")
        timed_out, after = observations(result)
        assert timed_out.is_error and "did not answer within 1 s" in timed_out.content
        assert time.monotonic() - start < 10
        assert not after.is_error and after.content == "2"


def test_server_crashing_mid_call_is_an_observation_then_fails_fast() -> None:
    with Toolkit.from_mcp(STDIO, timeout_s=20) as kit:
        model = ScriptedModel([call("crash"), call("add", a=1, b=2), "the server is gone"])
        start = time.monotonic()
        result = Agent(model, tools=[kit]).run("crash it")
        crashed, after = observations(result)
        assert crashed.is_error and "went away" in crashed.content
        assert "simulated fatal error" in crashed.content  # the server's stderr tells why
        assert after.is_error and "not connected" in after.content
        assert time.monotonic() - start < 15  # noticed from the closed pipe, not from the 20 s limit
        assert result.answer == "the server is gone" and not kit.connected


def test_close_stops_the_server_process() -> None:
    kit = Toolkit.from_mcp(STDIO)
    pid = int(kit.connection.call("pid", {}))
    os.kill(pid, 0)  # alive
    kit.close()
    assert process_gone(pid)
    kit.close()  # idempotent
    model = ScriptedModel([call("add", a=1, b=2), "closed"])
    (obs,) = observations(Agent(model, tools=[kit]).run("add"))
    assert obs.is_error and "not connected" in obs.content


def test_server_is_stopped_when_the_interpreter_exits_without_close(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        from agentkit import Agent, Toolkit
        from agentkit.testing import ScriptedModel, call
        # the toolkit object itself is dropped at once: its tools keep the session alive
        agent = Agent(ScriptedModel([call("pid"), "x"]), tools=[Toolkit.from_mcp({STDIO!r})])
        print(agent.run("pid").trajectory.messages[-2].content, flush=True)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    pid = int(out.stdout.strip())
    assert process_gone(pid)


def test_a_server_that_cannot_start_is_a_connection_error() -> None:
    with pytest.raises(MCPConnectionError, match="cannot connect to MCP server") as info:
        Toolkit.from_mcp([sys.executable, "-c", "import sys; print('no such server', file=sys.stderr); sys.exit(2)"],
                         connect_timeout_s=20)
    assert "no such server" in str(info.value)
    with pytest.raises(MCPConnectionError):
        Toolkit.from_mcp(f"http://127.0.0.1:{free_port()}/mcp", connect_timeout_s=10)
    with pytest.raises(ValueError, match="empty"):
        Toolkit.from_mcp([])


def test_agent_calls_an_mcp_tool_over_http(http_url: str) -> None:
    with Toolkit.from_mcp(http_url, prefix="calc") as kit:
        assert "calc_add" in {t.name for t in kit.tools()}
        model = ScriptedModel([call("calc_add", a=20, b=22), call("calc_divide", a=1, b=0), "42"])
        result = Agent(model, tools=[kit]).run("2 + 40?")
        ok, error = observations(result)
        assert ok.content == "42" and not ok.is_error
        assert error.is_error and "cannot divide by zero" in error.content


def test_http_server_crashing_mid_call_is_an_observation() -> None:
    proc, url = start_http_server()
    try:
        with Toolkit.from_mcp(url, timeout_s=20) as kit:
            model = ScriptedModel([call("crash"), call("add", a=1, b=2), "gone"])
            start = time.monotonic()
            result = Agent(model, tools=[kit]).run("crash it")
            crashed, after = observations(result)
            assert crashed.is_error and "went away" in crashed.content
            assert after.is_error and "not connected" in after.content
            assert time.monotonic() - start < 15  # the broken connection is noticed, not the 20 s limit
            assert result.answer == "gone" and not kit.connected
        assert proc.wait(timeout=10) == 3
    finally:
        if proc.poll() is None:
            stop(proc)


def test_cli_run_and_chat_take_mcp_servers(tmp_path: Path) -> None:
    import json
    import shlex

    from typer.testing import CliRunner

    from agentkit.cli.main import app

    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool": "add", "arguments": {"a": 2, "b": 40}}, "42"]))
    server = shlex.join(STDIO)
    out = CliRunner().invoke(app, ["run", "--model", f"script:{script}", "--tools", "none", "--mcp", server, "--json",
                                   "2 + 40?"])
    assert out.exit_code == 0, out.output
    trajectory = json.loads(out.stdout)
    (obs,) = [m for m in trajectory["messages"] if m["role"] == "tool"]
    assert obs["content"] == "42" and not obs["is_error"] and trajectory["answer"] == "42"

    out = CliRunner().invoke(app, ["chat", "--model", f"script:{script}", "--mcp", server, "--mcp", server],
                             input="/tools\n")
    assert out.exit_code == 2 and "two tools are named" in out.output  # the same server twice: names clash

    out = CliRunner().invoke(app, ["chat", "--model", f"script:{script}", "--tools", "calculator", "--mcp", server,
                                   "--ask", "none"],  # the test server's tools are not marked read-only
                             input="/tools\n2 + 40?\n/usage\n")
    assert out.exit_code == 0, out.output
    assert "calculator" in out.output and "divide" in out.output and "crash" in out.output
    assert "42" in out.output and "total" in out.output

    out = CliRunner().invoke(app, ["run", "--model", f"script:{script}", "--mcp", f"http://127.0.0.1:{free_port()}/mcp",
                                   "task"])
    assert out.exit_code == 2 and "cannot connect to MCP server" in out.output
