"""`agentkit chat` end to end: as a subprocess in a pseudo-terminal and through a stdin pipe, and in-process.

The model's choices come from script files (`script:FILE.json`); everything else is real: the CLI
entry point, rich rendering, the agent loop, the built-in tools, the JSONL logs.
"""

from __future__ import annotations

import errno
import fcntl
import http.server
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from agentkit import Agent
from agentkit.cli import chat_cmd, run_cmd
from agentkit.cli.chat import ChatConfig, SlashCommand, run_chat
from agentkit.cli.console import EventPrinter
from agentkit.loop.extensions import Instructions
from agentkit.messages import Message, ToolCall
from agentkit.records import TOOLS_OFFERED
from agentkit.testing import ScriptedModel
from agentkit.tools.builtin import calculator, evaluate
from agentkit.trajectory import read_jsonl

DATA = Path(__file__).parent / "data"
CHAT_SCRIPT = DATA / "chat_calculator.json"
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>]|\r")


def chat_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "agentkit.cli.main", "chat", *args]


def subprocess_env() -> dict[str, str]:
    return {**os.environ, "COLUMNS": "120", "LINES": "40", "TERM": "xterm-256color", "PYTHONUNBUFFERED": "1"}


def script() -> list:
    return json.loads(CHAT_SCRIPT.read_text())


def check_reset_log(log: Path) -> None:
    """The log of the scripted session: history is passed on, and /reset really empties it."""
    first, second, third = read_jsonl(log)
    assert [first.task, second.task, third.task] == ["hi", "what is 17*23?", "hi again"]
    # The second turn saw the first as history (no system message repeated in the middle).
    assert [m.content for m in second.messages[1:3]] == ["hi", script()[0]]
    assert [m.role for m in second.messages].count("system") == 1
    # After /reset the next request holds only the system prompt and the new question.
    assert [m.role for m in third.messages] == ["system", "user", "assistant"]
    assert third.messages[1].content == "hi again"
    assert not any("17*23" in m.content or m.content == "hi" for m in third.messages)


# -- through a stdin pipe -----------------------------------------------------------------------------


def test_chat_through_a_pipe(tmp_path) -> None:
    log, saved = tmp_path / "log.jsonl", tmp_path / "saved.jsonl"
    lines = ["hi", "what is 17*23?", "/tools", f"/save {saved}", "/reset", "hi again", "/exit", "never read"]
    proc = subprocess.run(
        chat_argv("--model", f"script:{CHAT_SCRIPT}", "--log", str(log)),
        input="\n".join(lines) + "\n", capture_output=True, text=True, env=subprocess_env(), timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    replies = script()
    assert replies[0] in out and replies[2] in out and replies[3] in out
    assert "⚙ calculator(expression='17 * 23')" in out
    assert f"↳ {evaluate('17 * 23')}" in out
    assert "current_time" in out and "read-only" in out  # the /tools table
    assert f"saved 2 trajectories to {saved}" in out
    assert "never read" not in out  # /exit stopped reading
    assert "\x1b[" not in out  # no terminal codes into a pipe
    assert [t.task for t in read_jsonl(saved)] == ["hi", "what is 17*23?"]
    check_reset_log(log)


# -- through a pseudo-terminal ------------------------------------------------------------------------


class Terminal:
    """A child process on a pseudo-terminal, read and written like a user would (no pexpect needed)."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child: becomes the program
            try:
                # A test run started in the background may ignore SIGINT, and that survives exec:
                # give the program the Ctrl-C a user's terminal would.
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                os.chdir(cwd)
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.text, self.pos, self.status = "", 0, None

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError as exc:  # EIO: the child closed the terminal
            if exc.errno != errno.EIO:
                raise
            return False
        if not data:
            return False
        self.text += ANSI.sub("", data.decode("utf-8", errors="replace"))
        return True

    def expect(self, needle: str, timeout: float = 60) -> str:
        """Wait until `needle` appears after what was already matched; return the text up to it."""
        deadline = time.monotonic() + timeout
        while (at := self.text.find(needle, self.pos)) < 0:
            if time.monotonic() > deadline or not self._read(min(0.2, max(0.0, deadline - time.monotonic()))):
                if (at := self.text.find(needle, self.pos)) >= 0:
                    break
                raise AssertionError(f"did not see {needle!r}; the terminal shows:\n{self.text[-3000:]}")
        seen, self.pos = self.text[self.pos : at], at + len(needle)
        return seen

    def send(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def wait(self, timeout: float = 30) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._read(0.1)
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
        self.kill()
        raise AssertionError(f"chat did not exit; the terminal shows:\n{self.text[-3000:]}")

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


class SlowServer:
    """An HTTP server whose /slow page answers only when released: a tool call that takes its time."""

    def __init__(self) -> None:
        self.started, self.release = threading.Event(), threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.started.set()
                outer.release.wait(30)
                body = b"slow page"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/slow"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def slow_server() -> Iterator[SlowServer]:
    server = SlowServer()
    yield server
    server.close()


def test_chat_in_a_terminal_with_ctrl_c(tmp_path, slow_server: SlowServer) -> None:
    replies = script()
    session_script = tmp_path / "chat_terminal.json"
    session_script.write_text(json.dumps([
        replies[0], replies[1], replies[2],
        {"tool": "http_get", "arguments": {"url": slow_server.url}},  # interrupted by Ctrl-C
        "Still here.",
        "Fresh start.",
    ]))
    log, saved = tmp_path / "log.jsonl", tmp_path / "saved.jsonl"
    term = Terminal(chat_argv("--model", f"script:{session_script}", "--tools", "calculator,time,http_get",
                              "--log", str(log)), subprocess_env(), str(tmp_path))
    try:
        term.expect("you>")
        term.send("hi\r")
        term.expect(replies[0])
        term.expect("you>")
        term.send("what is 17*23?\r")
        term.expect("⚙ calculator(expression='17 * 23')")
        term.expect(f"↳ {evaluate('17 * 23')}")
        term.expect(replies[2])
        term.expect("you>")
        term.send("/tools\r")
        term.expect("read-only")
        term.expect("http_get")
        term.expect("you>")
        term.send("\x03")  # Ctrl-C at the prompt: a hint, not an exit
        try:
            term.expect("use /exit", timeout=5)
        except AssertionError:  # a Ctrl-C landing while readline sets the line up can be dropped: again
            term.send("\x03")
            term.expect("use /exit")
        term.expect("you>")
        term.send("fetch the slow page\r")
        term.expect("⚙ http_get")
        assert slow_server.started.wait(30), "the tool call never reached the server"
        term.send("\x03")  # Ctrl-C while the tool runs: the turn is dropped, the session lives
        term.expect("[interrupted]")
        slow_server.release.set()
        term.expect("you>")
        term.send("still there?\r")
        term.expect("Still here.")
        term.expect("you>")
        term.send(f"/save {saved}\r")
        term.expect("saved 3 trajectories")
        term.send("/reset\r")
        term.expect("conversation reset")
        term.send("again\r")
        term.expect("Fresh start.")
        term.expect("you>")
        term.send("/exit\r")
        assert term.wait() == 0
    finally:
        term.kill()

    logged = read_jsonl(log)
    assert [t.task for t in logged] == ["hi", "what is 17*23?", "still there?", "again"]
    after_interrupt = logged[2]
    assert not any("slow page" in m.content for m in after_interrupt.messages)  # the interrupted turn is gone
    assert [m.content for m in after_interrupt.messages if m.role == "user"] == ["hi", "what is 17*23?", "still there?"]
    assert [m.role for m in logged[3].messages] == ["system", "user", "assistant"]  # after /reset
    assert [t.task for t in read_jsonl(saved)] == ["hi", "what is 17*23?", "still there?"]


# -- in-process (typer's CliRunner: stdin is not a terminal) ------------------------------------------


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer()
    chat_cmd.register(app)
    run_cmd.register(app)
    return app


def test_chat_in_process_keeps_history_and_resets(app, tmp_path) -> None:
    log = tmp_path / "log.jsonl"
    result = CliRunner().invoke(app, ["chat", "--model", f"script:{CHAT_SCRIPT}", "--log", str(log)],
                                input="hi\nwhat is 17*23?\n/reset\nhi again\n")  # ends by end of input
    assert result.exit_code == 0, result.output
    assert "conversation reset (6 messages forgotten)" in result.stdout
    check_reset_log(log)


def test_model_command_shows_and_switches_the_model(app, tmp_path) -> None:
    other = tmp_path / "chat_other.json"
    other.write_text(json.dumps(["From the other model."]))
    lines = ["/model", "hi", f"/model script:{other}", "/model", "/model nope:x", "and now?"]
    result = CliRunner().invoke(app, ["chat", "--model", f"script:{CHAT_SCRIPT}"], input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"model: script:{CHAT_SCRIPT}" in out and f"model: script:{other}" in out
    assert "cannot switch to nope:x" in out
    assert out.index(script()[0]) < out.index("From the other model.")


def test_unknown_commands_and_model_errors_do_not_end_the_session(app, tmp_path) -> None:
    short = tmp_path / "chat_short.json"
    short.write_text(json.dumps(["only reply"]))
    lines = ["/frobnicate", "one", "two", "/help", "/exit"]
    result = CliRunner().invoke(app, ["chat", "--model", f"script:{short}"], input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "unknown command /frobnicate" in out
    assert "only reply" in out and "ScriptExhausted" in out  # the second question fails, visibly
    assert "/save PATH" in out and "/reset" in out  # /help lists the commands


def test_read_file_is_on_only_with_allow_dir(app, tmp_path) -> None:
    (tmp_path / "readme.txt").write_text("sandboxed text")
    reader = tmp_path / "chat_reader.json"
    reader.write_text(json.dumps([{"tool": "read_file", "arguments": {"path": "readme.txt"}},
                                  {"tool": "read_file", "arguments": {"path": "../../etc/passwd"}}, "done"]))
    without = CliRunner().invoke(app, ["chat", "--model", f"script:{reader}"], input="/tools\n")
    assert "tools: calculator, current_time\n" in without.stdout
    with_dir = CliRunner().invoke(app, ["chat", "--model", f"script:{reader}", "--allow-dir", str(tmp_path)],
                                  input="/tools\nread it\n")
    assert with_dir.exit_code == 0, with_dir.output
    assert "tools: calculator, current_time, read_file\n" in with_dir.stdout
    assert "↳ sandboxed text" in with_dir.stdout
    assert "outside the allowed directory" in with_dir.stdout


def test_configuration_errors_exit_2(app) -> None:
    result = CliRunner().invoke(app, ["chat", "--model", "nope:thing"], input="hi\n")
    assert result.exit_code == 2 and "unknown model backend 'nope'" in result.stderr
    result = CliRunner().invoke(app, ["chat", "--model", f"script:{CHAT_SCRIPT}", "--tools", "shell"], input="hi\n")
    assert result.exit_code == 2 and "unknown built-in tool 'shell'" in result.stderr


def test_other_modules_can_add_commands_extensions_and_resume_a_session() -> None:
    seen: list[str] = []
    saved_histories: list[list[str]] = []

    def notes(session, arg: str) -> None:
        seen.append(arg)
        session.console.print(f"{len(session.history)} messages in history")

    out = StringIO()
    notebook = Instructions("Always double-check arithmetic.", title="Notes")
    earlier = [Message.user("my name is Ada"), Message.assistant("Hello Ada.")]
    code = run_chat(
        ChatConfig(model=f"script:{CHAT_SCRIPT}"),
        extensions=[notebook],
        commands={"notes": SlashCommand("notes", "Show notes", notes)},
        history=earlier,
        on_turn=[lambda session, result: saved_histories.append([m.content for m in session.history])],
        console=Console(file=out, width=120),
        stdin=StringIO("hi\n/notes all\n/help\n"),
    )
    text = out.getvalue()
    assert code == 0
    assert seen == ["all"] and "/notes" in text
    assert "4 messages in history" in text
    assert saved_histories == [["my name is Ada", "Hello Ada.", "hi", script()[0]]]
    assert "+ instructions: Notes" in text  # the extension's context is shown
    assert len(notebook.seen) == 1


def test_streamed_text_hides_tool_call_markup_but_shows_the_call() -> None:
    model = ScriptedModel(
        ['Let me compute that.\n<tool_call>{"name": "calculator", "arguments": {"expression": "6*7"}}</tool_call>',
         "It is 42 <b>exactly</b>."],
        text_tools=True,
    )
    out = StringIO()
    printer = EventPrinter(Console(file=out, width=120))
    for event in Agent(model, tools=[calculator]).stream("6*7?"):
        printer.handle(event)
    text = out.getvalue()
    assert "tool_call" not in text and '"arguments"' not in text
    lines = text.splitlines()
    assert lines[:2] == ["Let me compute that.", "⚙ calculator(expression='6*7')"]
    assert re.fullmatch(rf"  ↳ {evaluate('6*7')}  \(\d+\.\d\d s\)", lines[2])
    assert lines[3:] == ["It is 42 <b>exactly</b>."]  # a "<" that is no tool call is shown in the end


def test_a_call_written_as_bare_json_is_not_streamed_as_text() -> None:
    """Qwen writes its calls as bare JSON, streamed piece by piece: the printer holds a reply that starts like
    one until the turn ends, shows only the call when it was one, and the text when it was not."""
    from agentkit.events import ModelText, ModelTurn
    from agentkit.trajectory import Trajectory

    out = StringIO()
    printer = EventPrinter(Console(file=out, width=120))
    raw = '{"name": "calculator", "arguments": {"expression": "6*7"}}'
    trajectory = Trajectory(task="6*7?")
    for reply in (Message.assistant(tool_calls=[ToolCall(name="calculator", arguments={"expression": "6*7"})]),
                  Message.assistant('{"answer": 42} is all.')):
        text = raw if reply.tool_calls else reply.content
        for i in range(0, len(text), 7):
            printer.handle(ModelText(text[i:i + 7], "act"))
        printer.handle(ModelTurn(trajectory.add_turn(reply, phase="act")))
    printer.finish()
    assert out.getvalue().splitlines() == ['{"answer": 42} is all.']


def test_a_malformed_call_the_model_repairs_is_one_quiet_line(caplog) -> None:
    """A bare-JSON call that cannot be read is not shown raw: one quiet line, then the repaired call and the
    answer; the parse error goes to the debug log and stays in the trajectory."""
    import logging

    from agentkit.cli.console import UNREADABLE_CALL

    broken = '{"name": "calculator", "arguments": {"expression": 6*7}}'  # not JSON: the product is unquoted
    model = ScriptedModel([broken, '{"name": "calculator", "arguments": {"expression": "6*7"}}', "It is 42."],
                          text_tools=True)
    out = StringIO()
    printer = EventPrinter(Console(file=out, width=120))
    with caplog.at_level(logging.DEBUG, logger="agentkit.cli.console"):
        for event in Agent(model, tools=[calculator]).stream("6*7?"):
            printer.handle(event)
    lines = out.getvalue().splitlines()
    assert lines[0] == UNREADABLE_CALL
    assert lines[1] == "⚙ calculator(expression='6*7')"
    assert lines[-1] == "It is 42."
    assert not any('"arguments"' in line for line in lines)
    assert any("unreadable tool call" in r.getMessage() for r in caplog.records)


def test_session_resumes_and_map_and_notes_commands(app, tmp_path) -> None:
    first = tmp_path / "first.json"
    first.write_text(json.dumps(["Nice to meet you, Ada."]))
    second = tmp_path / "second.json"
    second.write_text(json.dumps(["You are Ada."]))
    log = tmp_path / "log.jsonl"
    args = ["chat", "--session", "ada", "--log", str(log)]
    out1 = CliRunner().invoke(app, [*args, "--model", f"script:{first}"], input="I am Ada.\n/exit\n")
    assert out1.exit_code == 0, out1.output
    out2 = CliRunner().invoke(app, [*args, "--model", f"script:{second}"], input="Who am I?\n/map\n/notes\n/exit\n")
    assert out2.exit_code == 0, out2.output
    resumed = read_jsonl(log)[-1].messages
    assert [m.content for m in resumed[1:]] == ["I am Ada.", "Nice to meet you, Ada.", "Who am I?", "You are Ada."]
    assert "no map yet" in out2.output and "no notes were shown" in out2.output


def test_notes_option_opens_the_notebook(app, tmp_path) -> None:
    script_file = tmp_path / "s.json"
    script_file.write_text(json.dumps(["ok"]))
    result = CliRunner().invoke(app, ["chat", "--model", f"script:{script_file}", "--notes", str(tmp_path / "nb")],
                                input="hello\n/notes\n/exit\n")
    assert result.exit_code == 0, result.output
    assert "no notes were shown" in result.output


def test_skills_option_runs_the_skill_stages_in_a_chat(app, tmp_path) -> None:
    from agentkit.skills import SkillLibrary

    lib = tmp_path / "lib"
    SkillLibrary.open(lib).import_dir(DATA / "skills" / "percentage-change")
    script_file = tmp_path / "s.json"
    replies = ["<query>percentage change between two numbers</query>", "It is 25%.", '{"not": "a skill"}']
    script_file.write_text(json.dumps(replies))
    log = tmp_path / "log.jsonl"
    result = CliRunner().invoke(app, ["chat", "--model", f"script:{script_file}", "--skills", str(lib),
                                      "--log", str(log)], input="From 80 to 100 is what change?\n/skills\n/exit\n")
    assert result.exit_code == 0, result.output
    [trajectory] = read_jsonl(log)
    assert [t.phase for t in trajectory.turns] == ["query", "act", "distill"]
    used = trajectory.extras["skills"]["used"]
    assert used is not None and trajectory.extras["skills"]["query"] == "percentage change between two numbers"
    assert "percentage" in trajectory.messages[0].content.lower()  # the skill is in the system prompt
    assert "percentage-change" in result.output  # /skills shows what was used


def test_select_tools_option_offers_each_message_the_nearest_tools(app, tmp_path) -> None:
    script_file = tmp_path / "s.json"
    script_file.write_text(json.dumps(["It is noon.", "About 4."]))
    log = tmp_path / "log.jsonl"
    result = CliRunner().invoke(app, ["chat", "--model", f"script:{script_file}", "--tools", "calculator,time,http_get",
                                      "--select-tools", "1", "--log", str(log)],
                                input="What time is it now?\nWhat is the square root of 17?\n/exit\n")
    assert result.exit_code == 0, result.output
    offered = [t.records.get(TOOLS_OFFERED) for t in read_jsonl(log)]
    assert [o.offered if o else None for o in offered] == [["current_time"], ["calculator"]]
