"""`agentkit chat --agent FILE.py:NAME`: chat with an agent (or a team of agents) a Python file builds, and the
chat's rendering of the runs of the agents an agent calls or hands over to.

    # support.py
    billing = Agent("local:default", tools=[invoices], name="billing")
    support = Agent("local:default", name="triage", handoffs=[billing])

    agentkit chat --agent support.py:support

NAME is an `Agent` defined in the file, or a function of no arguments that returns one. The agent is used as the
file builds it (its model, tools, agents, approval policy and log); the chat shows what the agents it calls or
hands over to do, each run under its agent's name, and asks for the approvals their calls need.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from rich.text import Text

from agentkit.agent import Agent
from agentkit.cli.console import EventPrinter
from agentkit.events import Event, InnerEvent, PhaseStarted, RunFinished, RunPaused


def load_agent(spec: str) -> Agent:
    """The agent `FILE.py:NAME` names: the file is run as a module and NAME read from it (called when it is a
    function). Raises ValueError saying what is wrong."""
    file, sep, name = spec.rpartition(":")
    if not sep or not file or not name.isidentifier():
        raise ValueError(f"--agent {spec!r}: write FILE.py:NAME, e.g. team.py:support")
    path = Path(file).expanduser()
    if not path.is_file():
        raise ValueError(f"--agent: no file {path}")
    module_name = f"agentkit_agent_file_{abs(hash(str(path.resolve())))}"
    found = importlib.util.spec_from_file_location(module_name, path)
    if found is None or found.loader is None:
        raise ValueError(f"--agent: {path} cannot be loaded as Python")
    module = importlib.util.module_from_spec(found)
    sys.modules[module_name] = module  # the file's own classes (pydantic models, dataclasses) resolve by module
    sys.path.insert(0, str(path.resolve().parent))  # and it may import the files beside it
    try:
        found.loader.exec_module(module)
    except Exception as exc:
        raise ValueError(f"--agent: running {path} raised {type(exc).__name__}: {exc}") from exc
    if not hasattr(module, name):
        agents = sorted(k for k, v in vars(module).items() if isinstance(v, Agent))
        raise ValueError(f"--agent: {path} defines no {name!r}" + (f"; its agents: {', '.join(agents)}" if agents
                                                                  else ""))
    value = getattr(module, name)
    if callable(value) and not isinstance(value, Agent):
        value = value()
    if not isinstance(value, Agent):
        raise ValueError(f"--agent: {name} in {path} is a {type(value).__name__}, not an agentkit Agent "
                         "(or a function returning one)")
    return value


class TeamPrinter(EventPrinter):
    """An `EventPrinter` that also shows the runs of the agents an agent calls or hands over to: a line with
    the agent's name where its events start, then its text and calls as for the agent chatted with."""

    _shown_path: tuple[str, ...] = ()

    def handle(self, event: Event) -> None:
        """Render one event, inner runs' included."""
        path: list[str] = []
        while isinstance(event, InnerEvent):
            path.append(event.agent)
            event = event.event
        if tuple(path) != self._shown_path:
            self._shown_path = tuple(path)
            if path:
                self._line(Text(f"▸ {' › '.join(path)}", style="magenta"))
        if not path:
            super().handle(event)
        elif isinstance(event, RunFinished | RunPaused):
            self.finish()
        elif not (isinstance(event, PhaseStarted) and event.phase == "act"):
            super().handle(event)
