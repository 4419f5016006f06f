"""Chat sessions in SQLite: save, load, list, delete, and resuming in another process."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from agentkit.memory.sessions import SessionStore
from agentkit.messages import Message, ToolCall

CHILD = """
import json, sys
from agentkit.memory.sessions import SessionStore
from agentkit.messages import Message
store = SessionStore(sys.argv[1])
if sys.argv[2] == "write":
    store.save("work", [Message.system("sys"), Message.user("hi"), Message.assistant("hello")], model="m1",
               metadata={"notes": True})
else:
    s = store.load("work")
    print(json.dumps({"roles": [m.role for m in s.messages], "last": s.messages[-1].content, "model": s.model}))
"""


def run_child(db: Path, mode: str) -> str:
    done = subprocess.run([sys.executable, "-c", CHILD, str(db), mode], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_session_saved_in_one_process_resumes_in_another(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    run_child(db, "write")
    store = SessionStore(db)
    session = store.load("work")
    assert [m.role for m in session.messages] == ["user", "assistant"]  # the system prompt is rebuilt, not stored
    assert session.model == "m1" and session.metadata == {"notes": True}
    call = ToolCall(name="run_query", arguments={"sql": "SELECT 1"})
    store.append("work", [Message.user("count?"), Message.assistant(tool_calls=[call]),
                          Message.tool(call, "1"), Message.assistant("1 row")])
    seen = json.loads(run_child(db, "read"))
    assert seen == {"roles": ["user", "assistant", "user", "assistant", "tool", "assistant"], "last": "1 row",
                    "model": "m1"}
    assert store.load("work").messages[3].tool_calls[0].arguments == {"sql": "SELECT 1"}
    assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_list_replace_delete_and_errors(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    store.save("a", [Message.user("1")])
    store.save("b", [Message.user("2"), Message.assistant("3")], model="x")
    store.save("a", [Message.user("one")])  # replaces, does not append
    infos = {i.name: i for i in store.list()}
    assert set(infos) == {"a", "b"} and infos["a"].n_messages == 1 and infos["b"].n_messages == 2
    assert store.list()[0].name == "a"  # most recently updated first
    assert store.load("a").messages[0].content == "one"
    assert store.exists("b") and store.delete("b") and not store.exists("b") and not store.delete("b")
    with pytest.raises(KeyError, match="no session named 'b'"):
        store.load("b")
    with pytest.raises(ValueError, match="non-empty"):
        store.save("  ", [])
    store.append("new", [Message.user("x")], model="m")
    assert store.load("new").model == "m" and len(store.load("new").messages) == 1


def test_default_location_is_under_agentkit_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AGENTKIT_HOME", str(tmp_path / "home"))
    assert SessionStore().path == tmp_path / "home" / "sessions.db"


def test_chat_persistence_resumes_and_saves_after_each_turn(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from agentkit.memory.sessions import chat_persistence

    store = SessionStore(tmp_path / "s.db")
    history, on_turn = chat_persistence("demo", "local:smollm2-135m", store)
    assert history == []
    chat = SimpleNamespace(history=[Message.user("hi"), Message.assistant("hello")])
    on_turn(chat, None)
    resumed, _ = chat_persistence("demo", "local:smollm2-135m", SessionStore(tmp_path / "s.db"))
    assert [m.content for m in resumed] == ["hi", "hello"]
    assert store.load("demo").model == "local:smollm2-135m"
