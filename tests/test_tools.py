"""`@tool`: schemas from signatures and docstrings, validation, and how failures reach the model."""

from __future__ import annotations

import enum
from typing import Literal

import pytest
from pydantic import BaseModel

from agentkit import Tool, Toolkit, tool
from agentkit.tools import ToolDefinitionError, ToolRunner, as_tools, parse_docstring, render_output


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: float
    y: float


def params(t: Tool) -> dict:
    return t.spec()["function"]["parameters"]


def test_required_and_descriptions_from_google_docstring() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: The first number.
            b: The second number,
                on two lines.
        """
        return a + b

    spec = add.spec()["function"]
    assert spec["name"] == "add"
    assert spec["description"] == "Add two integers."
    p = spec["parameters"]
    assert p["required"] == ["a", "b"]
    assert p["properties"]["a"] == {"type": "integer", "description": "The first number."}
    assert p["properties"]["b"]["description"] == "The second number, on two lines."
    assert p["additionalProperties"] is False


def test_optional_defaults_lists_enums_literals_and_models() -> None:
    @tool
    def f(
        query: str,
        limit: int = 10,
        tags: list[str] | None = None,
        color: Color = Color.RED,
        mode: Literal["fast", "slow"] = "fast",
        point: Point | None = None,
    ) -> str:
        """Search things."""
        return query

    p = params(f)
    assert p["required"] == ["query"]
    assert p["properties"]["limit"]["default"] == 10
    tags = p["properties"]["tags"]["anyOf"]
    assert {"type": "array", "items": {"type": "string"}} in tags
    assert p["properties"]["mode"]["enum"] == ["fast", "slow"]
    assert "$defs" in p and set(p["$defs"]) >= {"Color", "Point"}
    assert p["$defs"]["Color"]["enum"] == ["red", "blue"]
    kwargs = f.validate({"query": "q", "color": "blue", "point": {"x": 1, "y": "2.5"}})
    assert kwargs["color"] is Color.BLUE and kwargs["point"] == Point(x=1, y=2.5) and kwargs["limit"] == 10


def test_missing_docstring_is_a_clear_error() -> None:
    def nodoc(a: int) -> int:
        return a

    with pytest.raises(ToolDefinitionError, match="no docstring"):
        tool(nodoc)
    assert tool(description="Identity.")(nodoc).description == "Identity."


def test_untyped_and_varargs_parameters_are_refused() -> None:
    def untyped(a):  # type: ignore[no-untyped-def]
        """Doc."""

    def varargs(*a: int) -> None:
        """Doc."""

    with pytest.raises(ToolDefinitionError, match="type hint"):
        tool(untyped)
    with pytest.raises(ToolDefinitionError, match=r"\*args"):
        tool(varargs)


def test_options_and_duplicates() -> None:
    @tool(name="lookup", read_only=True, phase="explore", final=False, timeout_s=1.5)
    def look(key: str) -> str:
        """Look a key up."""
        return key

    assert (look.name, look.read_only, look.phase, look.timeout_s) == ("lookup", True, "explore", 1.5)
    kit = Toolkit([look], name="kit")
    assert [t.name for t in kit] == ["lookup"]
    with pytest.raises(ToolDefinitionError, match="two tools"):
        as_tools([kit, look])


def test_validation_errors_and_exceptions_become_error_outcomes() -> None:
    @tool
    def div(a: int, b: int) -> float:
        """Divide."""
        return a / b

    runner = ToolRunner()
    bad_type, extra, missing, crash, ok, unknown = runner.run_many([
        (div, "div", {"a": "x", "b": 1}),
        (div, "div", {"a": 1, "b": 2, "c": 3}),
        (div, "div", {"a": 1}),
        (div, "div", {"a": 1, "b": 0}),
        (div, "div", {"a": 1, "b": 4}),
        (None, "nope", {}),
    ])
    assert bad_type.is_error and "Invalid arguments for div" in bad_type.content and "a:" in bad_type.content
    assert extra.is_error and "c:" in extra.content
    assert extra.content.endswith("div takes a (integer, required), b (integer, required).")  # what to call it with
    assert missing.is_error and "b:" in missing.content
    assert crash.is_error and "ZeroDivisionError" in crash.content
    assert not ok.is_error and ok.content == "0.25"
    assert unknown.is_error and "Unknown tool 'nope'" in unknown.content
    runner.close()


def test_long_outputs_are_truncated_with_a_note() -> None:
    text = render_output("x" * 100, limit=10)
    assert text.startswith("x" * 10) and "truncated: 100 characters" in text
    assert render_output({"a": [1, 2]}, 100) == '{"a": [1, 2]}'


def test_async_tool_runs() -> None:
    @tool
    async def hello(name: str) -> str:
        """Greet."""
        return f"hi {name}"

    [out] = ToolRunner().run_many([(hello, "hello", {"name": "bo"})])
    assert out.content == "hi bo" and not out.is_error


def test_parse_docstring_sections() -> None:
    summary, args = parse_docstring(
        """Do a thing.

        More detail.

        Args:
            path (str): Where.
            **opts: Extra.

        Returns:
            Something.
        """
    )
    assert summary == "Do a thing.\n\nMore detail."
    assert args == {"path": "Where.", "opts": "Extra."}


def test_a_tool_can_take_its_json_schema_as_given() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
              "required": ["city"], "additionalProperties": False}
    seen: list[dict[str, object]] = []

    def forecast(**arguments: object) -> str:
        seen.append(arguments)
        return "sunny"

    t = Tool(forecast, name="forecast", description="The weather.", parameters=schema)
    assert t.spec()["function"] == {"name": "forecast", "description": "The weather.", "parameters": schema}
    runner = ToolRunner()
    ok, missing, unknown = runner.run_many([(t, "forecast", {"city": "Oslo", "days": 2}),
                                            (t, "forecast", {"days": 2}),
                                            (t, "forecast", {"city": "Oslo", "hours": 3})])
    runner.close()
    assert ok.content == "sunny" and not ok.is_error and seen == [{"city": "Oslo", "days": 2}]
    assert missing.is_error and "Invalid arguments for forecast" in missing.content and "city" in missing.content
    assert unknown.is_error and "hours" in unknown.content
    assert "forecast takes city (string, required), days (integer)." in unknown.content  # a schema as given
