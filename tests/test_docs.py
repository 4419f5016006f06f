"""The README and the docs say what the code does: the generated benchmarks page is current, the README's
figures are the results files' figures, every `agentkit` command shown uses options that exist, and every
docs page a docstring points to has the section it names."""

from __future__ import annotations

import importlib.util
import re
import shlex
import sys
import unicodedata
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
CODE_DIRS = ("agentkit", "skills", "memory", "training", "cli", "scripts")


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _slug(text: str) -> str:
    """Python-Markdown's default heading id."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(page: Path) -> set[str]:
    anchors, fenced = set(), False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6}\s+(.*?)\s*$", line)):
            title = m.group(1)
            explicit = re.search(r"\{#([\w-]+)\}\s*$", title)
            anchors.add(explicit.group(1) if explicit else _slug(title))
    return anchors


def test_the_benchmarks_page_is_what_the_script_generates() -> None:
    page = _script("docs_benchmarks")
    assert (DOCS / "benchmarks.md").read_text() == page.generate(), "run: python scripts/docs_benchmarks.py"


def test_every_results_file_is_on_the_benchmarks_page() -> None:
    text = (DOCS / "benchmarks.md").read_text()
    missing = [p.stem for p in (ROOT / "tests/benchmarks/results").glob("*.json") if f"`{p.stem}`" not in text]
    assert not missing


def test_the_readme_is_short_and_its_figures_come_from_results_files() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= 250
    page = (DOCS / "benchmarks.md").read_text().splitlines()
    rows = [line for line in lines if re.search(r"\|\s*`[\w.-]+\.json`\s*\|\s*$", line)]
    assert len(rows) >= 4
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        stem = cells[-1].strip("`").removesuffix(".json")
        assert (ROOT / "tests/benchmarks/results" / f"{stem}.json").is_file(), stem
        assert cells[-2] in ("train", "dev", "test", "-"), f"{stem}: the data kind must be train, dev or test"
        line = next((p for p in page if p.startswith(f"| `{stem}` |")), "")
        assert line, f"{stem} is not on the benchmarks page"
        for figure in re.findall(r"\d+(?:[./-]\d+)+", cells[1]):  # 39/46, 117-130, 0.96
            assert figure in line, f"README says {figure} for {stem}; the file says: {line}"


def test_the_readme_says_chinook_and_clinic_are_dev_databases() -> None:
    assert "Chinook and clinic are dev databases" in README.read_text()


def _command_lines(text: str) -> list[str]:
    """`agentkit ...` lines of the shell blocks, continuations joined, comments dropped."""
    out, fenced, pending = [], False, ""
    for raw in text.splitlines():
        if raw.strip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            continue
        line = pending + raw.split(" #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else pending
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        words = line.split()
        while words and "=" in words[0] and not words[0].startswith("-"):
            words = words[1:]  # ENV=value before the command
        if words[:1] == ["agentkit"]:
            out.append(" ".join(words))
    return out


def _options(command: Any) -> set[str]:
    return {opt for p in command.params for opt in (*p.opts, *getattr(p, "secondary_opts", []))}


@pytest.mark.parametrize("doc", [README, *sorted((DOCS / "guides").glob("*.md")), DOCS / "index.md"],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_shown_uses_options_that_exist(doc: Path) -> None:
    pytest.importorskip("typer")
    import typer.main

    from agentkit.cli.main import app

    root = typer.main.get_command(app)
    for line in _command_lines(doc.read_text()):
        words = shlex.split(line)
        command: Any = root
        i = 1
        while hasattr(command, "commands") and i < len(words) and words[i] in command.commands:
            command, i = command.commands[words[i]], i + 1
        assert command is not root, f"{doc.name}: no such command: {line}"
        known = _options(command)
        for word in words[i:]:
            if word == "--":
                break  # the rest goes to another program (agentkit serve ... -- vllm options)
            if re.fullmatch(r"--?[a-zA-Z][\w-]*(=.*)?", word):
                assert word.split("=", 1)[0] in known, f"{doc.name}: {word} is not an option of: {line}"


def test_every_docs_section_the_code_points_to_exists() -> None:
    cited = re.compile(r"docs/([\w/-]+\.md)#([\w-]+)")
    missing = []
    for folder in CODE_DIRS:
        for path in (ROOT / folder).rglob("*.py"):
            for page, anchor in cited.findall(path.read_text()):
                target = DOCS / page
                if not target.is_file() or anchor not in _anchors(target):
                    missing.append(f"{path.relative_to(ROOT)}: docs/{page}#{anchor}")
    assert not missing


def test_no_code_cites_a_methods_file_that_does_not_exist() -> None:
    citing = [str(p.relative_to(ROOT)) for folder in CODE_DIRS for p in (ROOT / folder).rglob("*.py")
              if "METHODS.md" in p.read_text()]
    assert not citing
