"""`agentkit chat` asks y/n/always before calls that need approval: in a terminal and through a pipe."""

from __future__ import annotations

import json
import subprocess

from test_cli_chat import Terminal, chat_argv, subprocess_env

from agentkit.tools.builtin import evaluate
from agentkit.trajectory import read_jsonl


def approval_script(path) -> list:  # type: ignore[no-untyped-def]
    script = [
        {"tool": "calculator", "arguments": {"expression": "1 + 1"}}, "One and one make 2.",
        {"tool": "calculator", "arguments": {"expression": "2 * 3"}}, "Six.",
        {"tool": "calculator", "arguments": {"expression": "3 * 3"}}, "Nine.",
        [{"tool": "current_time", "arguments": {}}, {"tool": "calculator", "arguments": {"expression": "4 * 4"}}],
        "No time, but 16.",
    ]
    path.write_text(json.dumps(script))
    return script


def check_log(log) -> None:  # type: ignore[no-untyped-def]
    runs = read_jsonl(log)
    assert [t.task for t in runs] == ["first", "second", "third", "fourth"]
    assert [[(a.tool, a.approved, a.reason) for a in t.approvals] for t in runs] == [
        [("calculator", True, None)],
        [("calculator", True, None)],
        [("calculator", True, None)],  # "always": approved without asking, still recorded
        [("current_time", False, "not now"), ("calculator", True, None)],
    ]
    last = [m for m in runs[3].messages if m.role == "tool"][-2:]
    assert last[0].content == "The user denied this call. Reason: not now" and last[1].content == "16"


def test_chat_asks_for_approval_in_a_terminal(tmp_path) -> None:
    script_file = tmp_path / "approval.json"
    approval_script(script_file)
    log = tmp_path / "log.jsonl"
    term = Terminal(chat_argv("--model", f"script:{script_file}", "--ask", "calculator,current_time",
                              "--log", str(log)), subprocess_env(), str(tmp_path))
    try:
        term.expect("you>")
        term.send("first\r")
        term.expect("allow calculator(expression='1 + 1')? [y/n/always]")
        term.send("y\r")
        term.expect(f"↳ {evaluate('1 + 1')}")
        term.expect("One and one make 2.")
        term.expect("you>")
        term.send("second\r")
        term.expect("allow calculator(expression='2 * 3')?")
        term.send("maybe\r")  # not an answer: asked again
        term.expect("answer y (yes), n (no")
        term.expect("allow calculator(expression='2 * 3')?")
        term.send("always\r")
        term.expect("Six.")
        term.expect("you>")
        term.send("third\r")
        term.expect("✓ calculator(expression='3 * 3') (always allowed)")
        term.expect("Nine.")
        term.expect("you>")
        term.send("fourth\r")
        seen = term.expect("allow current_time()?")
        assert "allow calculator" not in seen  # still always allowed
        term.send("n not now\r")
        term.expect("↳ The user denied this call. Reason: not now")
        term.expect("No time, but 16.")
        term.expect("you>")
        term.send("/exit\r")
        assert term.wait() == 0
    finally:
        term.kill()
    check_log(log)


def test_chat_asks_for_approval_through_a_pipe(tmp_path) -> None:
    script_file = tmp_path / "approval.json"
    approval_script(script_file)
    log = tmp_path / "log.jsonl"
    lines = ["first", "y", "second", "a", "third", "fourth", "n not now", "/exit"]
    proc = subprocess.run(chat_argv("--model", f"script:{script_file}", "--ask", "all", "--log", str(log)),
                          input="\n".join(lines) + "\n", capture_output=True, text=True, env=subprocess_env(),
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "allow calculator(expression='1 + 1')? [y/n/always] y" in proc.stdout
    assert "allow current_time()? [y/n/always] n not now" in proc.stdout
    check_log(log)


def test_read_only_tools_are_not_asked_by_default_and_end_of_input_denies(tmp_path) -> None:
    script_file = tmp_path / "approval.json"
    approval_script(script_file)
    # By default ("writes") the built-in tools, all read-only, run without asking.
    proc = subprocess.run(chat_argv("--model", f"script:{script_file}"), input="first\n", capture_output=True,
                          text=True, env=subprocess_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "allow" not in proc.stdout and "One and one make 2." in proc.stdout
    # The input ends while a call waits: it is denied, and the turn finishes.
    log = tmp_path / "log.jsonl"
    proc = subprocess.run(chat_argv("--model", f"script:{script_file}", "--ask", "all", "--log", str(log)),
                          input="first\n", capture_output=True, text=True, env=subprocess_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    [run] = read_jsonl(log)
    assert [(a.approved, a.reason) for a in run.approvals] == [(False, "no answer")]
    assert run.answer == "One and one make 2."  # the script's reply, after the denial
    bad = subprocess.run(chat_argv("--model", f"script:{script_file}", "--ask", "all,calculator"), input="",
                         capture_output=True, text=True, env=subprocess_env(), timeout=120)
    assert bad.returncode == 2 and "none, all, writes" in bad.stderr


def test_agentkit_run_stops_before_calls_it_was_told_to_ask_about(tmp_path) -> None:
    import typer
    from typer.testing import CliRunner

    from agentkit.cli import chat_cmd, run_cmd

    app = typer.Typer()
    chat_cmd.register(app)
    run_cmd.register(app)
    script_file = tmp_path / "approval.json"
    approval_script(script_file)
    log = tmp_path / "log.jsonl"
    result = CliRunner().invoke(app, ["run", "first", "--model", f"script:{script_file}", "--ask", "calculator",
                                      "--log", str(log)])
    assert result.exit_code == 1 and result.stdout == ""
    assert "paused for approval of calculator(expression='1 + 1')" in result.stderr
    assert not log.exists()  # nothing ran, nothing finished
    # Without --ask (default none) the same run answers.
    result = CliRunner().invoke(app, ["run", "first", "--model", f"script:{script_file}"])
    assert result.exit_code == 0 and result.stdout.strip() == "One and one make 2."
