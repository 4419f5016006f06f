"""The light core install: `import agentkit` and an agent on a hosted model load no heavy extra, and a
missing extra is an error that names it. Each check runs in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

HEAVY = ["torch", "chromadb", "sentence_transformers", "transformers", "litellm", "mcp", "numpy"]

# A meta-path finder that makes the named top-level modules look uninstalled.
BLOCKER = textwrap.dedent("""
    import sys
    class Block:
        def __init__(self, names): self.names = set(names)
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in self.names:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None
    def block(*names):
        sys.meta_path.insert(0, Block(names))
""")


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCKER + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120, env={"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "sk-test"})


def loaded_heavy(code: str) -> list[str]:
    report = f"\nimport json\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    out = run_python(textwrap.dedent(code) + report)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_agentkit_loads_no_heavy_dependency() -> None:
    assert loaded_heavy("import agentkit") == []


def test_an_agent_on_a_hosted_model_loads_no_heavy_dependency() -> None:
    code = """
        from agentkit import Agent, tool, Toolkit

        @tool
        def add(a: int, b: int) -> int:
            '''Add two integers.'''
            return a + b

        agent = Agent("openai:gpt-4o-mini", tools=[add])
        assert agent.model.name == "gpt-4o-mini"
    """
    assert loaded_heavy(code) == []


def test_the_cli_starts_without_heavy_dependencies() -> None:
    assert loaded_heavy("import agentkit.cli.main") == []


@pytest.mark.parametrize(
    ("blocked", "code", "extra"),
    [
        ("chromadb", "from agentkit.memory.notebook import MistakeNotebook", "memory"),
        ("chromadb", "import agentkit.skills", "memory"),
        ("torch", "import agentkit.training", "train"),
        ("torch", "from agentkit.models import resolve_model; resolve_model('local:smollm2-135m', engine='torch')",
             "local"),
        ("mcp", "from agentkit import Toolkit; Toolkit.from_mcp('python server.py')", "mcp"),
    ],
)
def test_a_missing_extra_is_named(blocked: str, code: str, extra: str) -> None:
    out = run_python(f"block({blocked!r})\n{code}")
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert "MissingExtraError" in last and f"pip install 'agentkit[{extra}]'" in last and repr(blocked) in last


def test_sessions_work_without_the_memory_extra(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = run_python(f"""
        block("chromadb", "sentence_transformers", "numpy", "torch")
        import os
        os.environ["AGENTKIT_HOME"] = {str(tmp_path)!r}
        from agentkit.memory.sessions import chat_persistence
        print("ok")
    """)
    assert out.returncode == 0, out.stderr


def test_cli_names_the_missing_extra_without_a_traceback(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = run_python(f"""
        block("chromadb")
        import sys
        from agentkit.cli.main import app
        sys.argv = ["agentkit", "skills", "list", "--library", {str(tmp_path)!r}]
        app()
    """)
    assert out.returncode == 2
    assert "pip install 'agentkit[memory]'" in out.stderr and "Traceback" not in out.stderr
