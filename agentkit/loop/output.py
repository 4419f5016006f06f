"""Typed output: the model answers through a final structured call whose schema is the output type's.

`Agent(output_type=Invoice)` (a pydantic model, dataclass, TypedDict, or a type such as `int` or
`list[str]`) adds a `final_result` tool whose parameters are the type's JSON schema (a type that is
not an object is wrapped as `{"result": ...}`). It works with native tool calling and with the text
protocol alike. The arguments are validated into the type; a validation error, a reply that does not
call `final_result`, or a validator raising `ModelRetry` goes back to the model as an observation,
up to `output_retries` times. Each check is recorded in `trajectory.output_checks`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError

from agentkit.messages import Message
from agentkit.tools import _format_validation_error
from agentkit.trajectory import OutputCheck, Trajectory

FINAL_RESULT_TOOL = "final_result"

OutputValidator = Callable[[Any], Any]
"""Checks (and may replace) the output: return a new value, or None to keep it; raise `ModelRetry` to
send a message back to the model."""


class ModelRetry(Exception):
    """Raised by an output validator: the message goes back to the model, which tries again."""


class OutputError(ValueError):
    """The model's final result was rejected; the message is the observation it gets."""


class OutputSpec:
    """How one output type is asked for (the `final_result` tool spec) and checked."""

    def __init__(self, output_type: Any, validators: Sequence[OutputValidator] = ()) -> None:
        self.type = output_type
        self.validators = list(validators)
        try:
            self.adapter: TypeAdapter[Any] = TypeAdapter(output_type)
            schema = self.adapter.json_schema()
        except Exception as exc:
            raise TypeError(f"output_type {output_type!r} has no JSON schema: {exc}") from exc
        self.wrapped = not (schema.get("type") == "object" and "properties" in schema)
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():  # as for tools: titles only repeat the names
            prop.pop("title", None)
        if self.wrapped:
            defs = schema.pop("$defs", None)
            schema = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
            if defs:
                schema["$defs"] = defs
        self.spec: dict[str, Any] = {
            "type": "function",
            "function": {
                "name": FINAL_RESULT_TOOL,
                "description": "Give your final answer as structured data. Call this once, when you have the "
                               "answer, instead of replying with text.",
                "parameters": schema,
            },
        }

    def parse(self, arguments: dict[str, Any]) -> Any:
        """The typed value of a `final_result` call, checked by the validators; raises OutputError."""
        if self.wrapped:
            if "result" not in arguments:
                raise OutputError(f"Invalid arguments for {FINAL_RESULT_TOOL}: result: Field required")
            raw: Any = arguments["result"]
        else:
            raw = arguments
        try:
            value = self.adapter.validate_python(raw)
        except ValidationError as exc:
            raise OutputError(_format_validation_error(FINAL_RESULT_TOOL, exc)) from None
        return self.check(value)

    @property
    def accepts_text(self) -> bool:
        """Whether a plain text reply is an answer (for `output_type=str`)."""
        return self.type is str

    def check(self, value: Any) -> Any:
        """Run the validators over a typed value; raises OutputError when one asks for a retry."""
        for validator in self.validators:
            try:
                checked = validator(value)
            except ModelRetry as exc:
                raise OutputError(str(exc) or "The output was rejected; try again.") from None
            if checked is not None:
                value = checked
        return value

    def check_text(self, text: str, trajectory: Trajectory) -> tuple[bool, Any]:
        """A reply in text (the run's last turn) when this output is asked for: `(True, output)` when the type
        is `str` and the validators pass it, else `(False, None)` with the feedback appended to the
        conversation. Recorded in `trajectory.output_checks`."""
        turn = len(trajectory.turns) - 1
        try:
            if not self.accepts_text:
                raise OutputError(NO_FINAL_CALL)
            value = self.check(text)
        except OutputError as exc:
            trajectory.output_checks.append(OutputCheck(turn=turn, passed=False, error=str(exc)))
            trajectory.messages.append(Message.user(str(exc)))
            return False, None
        trajectory.output_checks.append(OutputCheck(turn=turn, passed=True))
        return True, value

    def check_call(self, arguments: dict[str, Any], trajectory: Trajectory) -> tuple[bool, Any, str]:
        """A `final_result` call's arguments (of the run's last turn): `(True, value, "")` when they parse and
        pass the validators, else `(False, None, why)`. Recorded in `trajectory.output_checks`."""
        turn = len(trajectory.turns) - 1
        try:
            value = self.parse(arguments)
        except OutputError as exc:
            trajectory.output_checks.append(OutputCheck(turn=turn, passed=False, error=str(exc)))
            return False, None, str(exc)
        trajectory.output_checks.append(OutputCheck(turn=turn, passed=True))
        return True, value, ""

    def dump(self, value: Any) -> str:
        """The value as the run's text answer (JSON; a string stays itself)."""
        if isinstance(value, str):
            return value
        return self.adapter.dump_json(value).decode()


NO_FINAL_CALL = (f"Your reply did not call {FINAL_RESULT_TOOL}. Give your final answer by calling the "
                 f"{FINAL_RESULT_TOOL} tool with arguments that match its schema.")
