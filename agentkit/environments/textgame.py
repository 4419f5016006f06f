"""Interactive text games through TextWorldExpress (CookingWorld, CoinCollector); an optional extra.

Needs the PyPI package `textworld-express` (`pip install agentkit[games]`) and a Java runtime
(Debian: `default-jre-headless`). Each episode starts its own game server (a JVM, about a second).

The agent plays with tools: `act(command)` changes the world (one game step); `look()`,
`inventory()` and `valid_actions()` only observe it and are marked read-only, so the map-then-act
planner may use them to explore. The score: success 1/0 when the game is won, and the game's own
progress score in [0, 1].
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentkit.environments.base import StepResult, Task
from agentkit.messages import Message, ToolCall
from agentkit.tools import Tool
from agentkit.tools import tool as make_tool
from agentkit.trajectory import Trajectory

GAMES = {
    "coin": ("CoinCollector", "numLocations=1,numDistractorItems=0,includeDoors=0"),
    "cookingworld": ("CookingWorld",
                     "numLocations=1,numIngredients=1,numDistractorItems=0,includeDoors=0,limitInventorySize=0"),
}
GAME_ALIASES = {"coincollector": "coin", "coin_collector": "coin", "cooking": "cookingworld",
                "cooking_world": "cookingworld"}

GAME_OVER = "[The game is over: {outcome}. Reply with a one-line summary; do not call act again.]"
ALREADY_OVER = "The game is already over. Reply with a one-line summary."
PLAY_HINT = "Play the game with the tools: act(command) performs one action (e.g. 'take coin', 'open fridge')."


class GameUnavailable(RuntimeError):
    """TextWorldExpress or Java is missing."""


def check_available() -> None:
    """Raise `GameUnavailable` saying what to install when the games cannot run here."""
    if importlib.util.find_spec("textworld_express") is None:
        raise GameUnavailable("text games need TextWorldExpress: pip install 'agentkit[games]' (textworld-express)")
    if shutil.which("java") is None:
        raise GameUnavailable("text games need a Java runtime (Debian/Ubuntu: apt-get install default-jre-headless)")


def _game_name(game: str) -> str:
    key = GAME_ALIASES.get(game.lower(), game.lower())
    if key not in GAMES:
        raise ValueError(f"unknown game {game!r}; known: {', '.join(GAMES)}")
    return key


class TextGameEpisode:
    """One play-through of one generated game."""

    def __init__(self, task: Task, step_limit: int) -> None:
        check_available()
        from textworld_express import TextWorldExpressEnv

        self.task = task
        self.done = False
        self.success = False
        self.progress = 0.0
        self.moves = 0
        self._env = TextWorldExpressEnv(envStepLimit=step_limit)
        d = task.data
        obs, self._infos = self._env.reset(seed=d["seed"], gameFold=d["fold"], gameName=d["game"],
                                           gameParams=d["params"], generateGoldPath=False)
        description = str(self._infos.get("taskDescription", "")).strip()
        self.observation = "\n\n".join(p for p in (description, obs.strip()) if p and p not in task.prompt)
        self._tools = self._make_tools()

    def _make_tools(self) -> list[Tool]:
        episode = self

        def act(command: str) -> str:
            """Perform one action in the game world, e.g. 'take coin', 'open fridge', 'move north'.

            Args:
                command: the action, in the game's words (see valid_actions).
            """
            return episode.step(ToolCall(name="act", arguments={"command": command})).observation

        def look() -> str:
            """Describe the current room (does not change the world)."""
            return episode.step(ToolCall(name="look")).observation

        def inventory() -> str:
            """List what you carry (does not change the world)."""
            return episode.step(ToolCall(name="inventory")).observation

        def valid_actions() -> str:
            """List the actions possible right now (does not change the world)."""
            return episode.step(ToolCall(name="valid_actions")).observation

        return [make_tool(act), make_tool(look, read_only=True), make_tool(inventory, read_only=True),
                make_tool(valid_actions, read_only=True)]

    @property
    def tools(self) -> list[Tool]:
        """The game's actions, as tools."""
        return list(self._tools)

    def step(self, call: ToolCall) -> StepResult:
        """Play one action in the game."""
        if call.name == "look":
            return StepResult(str(self._infos.get("look", "")).strip())
        if call.name == "inventory":
            return StepResult(str(self._infos.get("inventory", "")).strip())
        if call.name == "valid_actions":
            return StepResult(", ".join(sorted(self._infos.get("validActions", []))))
        if call.name != "act":
            raise ValueError(f"unknown action {call.name!r}")
        if self.done:
            return StepResult(ALREADY_OVER, done=True)
        command = str(call.arguments.get("command", "")).strip()
        obs, reward, done, self._infos = self._env.step(command)
        self.moves += 1
        self.progress = float(self._infos.get("score", self.progress))
        self.success = bool(self._infos.get("tasksuccess", False))
        self.done = bool(done or self.success or self._infos.get("taskfailure", False))
        text = obs.strip()
        if self.done:
            text += "\n" + GAME_OVER.format(outcome="you won" if self.success else "you did not win")
        return StepResult(text, reward=float(reward), done=self.done)

    def score(self, trajectory: Trajectory) -> dict[str, float]:
        """The game's outcome as reward components: success (also the reward) and progress."""
        success = float(self.success)
        return {"reward": success, "success": success, "progress": max(0.0, min(1.0, self.progress))}

    def close(self) -> None:
        """Close the game."""
        env, self._env = self._env, None
        if env is not None:
            env.close()

    def __del__(self) -> None:
        if getattr(self, "_env", None) is not None:
            self.close()


class TextGameEnvironment:
    """Generated TextWorldExpress games, one task per seed.

    Args:
        game: "coin" (CoinCollector) or "cookingworld".
        seeds: which generated games to play.
        params: the generator's parameters (default: the small one-room settings above).
        fold: "train", "dev" or "test" seeds.
        step_limit: most game actions per episode.
    """

    def __init__(self, game: str = "coin", seeds: Sequence[int] = (0, 1, 2), *, params: str | None = None,
                 fold: str = "train", step_limit: int = 30) -> None:
        key = _game_name(game)
        self.game = key
        self.params = params if params is not None else GAMES[key][1]
        self.fold = fold
        self.step_limit = step_limit
        self.name = f"textgame:{key}"
        self._tasks = [Task(id=f"{key}-{fold}-{seed}", prompt=f"Text game {GAMES[key][0]} #{seed}. {PLAY_HINT}",
                            data={"game": key, "params": self.params, "seed": int(seed), "fold": fold})
                       for seed in seeds]

    @classmethod
    def from_file(cls, path: str | Path) -> TextGameEnvironment:
        """Read {"game": ..., "seeds": [...], "params": ..., "fold": ..., "step_limit": ...} from JSON."""
        spec: dict[str, Any] = json.loads(Path(path).read_text())
        return cls(spec.get("game", "coin"), spec.get("seeds", [0, 1, 2]), params=spec.get("params"),
                   fold=spec.get("fold", "train"), step_limit=int(spec.get("step_limit", 30)))

    def identity(self) -> str:
        """The game and its settings, as a stable name."""
        digest = hashlib.sha256(f"{self.game}|{self.params}|{self.fold}".encode()).hexdigest()[:12]
        return f"{self.name}:{digest}"

    def tasks(self) -> list[Task]:
        """One task per game seed."""
        return list(self._tasks)

    def reset(self, task: Task) -> TextGameEpisode:
        """Start the game of `task`."""
        return TextGameEpisode(task, self.step_limit)

    def oracle_script(self, task: Task) -> list[Message | str]:
        """The gold action sequence of the task's game as `act` calls, then a closing reply."""
        check_available()
        from textworld_express import TextWorldExpressEnv

        env = TextWorldExpressEnv(envStepLimit=self.step_limit)
        try:
            d = task.data
            env.reset(seed=d["seed"], gameFold=d["fold"], gameName=d["game"], gameParams=d["params"],
                      generateGoldPath=True)
            gold = [a for a in env.getGoldActionSequence() if a != "look around"]
        finally:
            env.close()
        steps: list[Message | str] = [Message.assistant(tool_calls=[ToolCall(name="act", arguments={"command": a})])
                                      for a in gold]
        return [*steps, "Done: the task is complete."]
