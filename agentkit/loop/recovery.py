"""`Recovery`: what the loop does when a model goes round in circles instead of finishing.

Models, small ones most, loop in a few recognisable ways. The act loop (`Agent._loop`) hands each of them to
this one policy at a fixed point of a step, and the policy answers by changing the loop's `LoopState`:

- the last step, and any reply after a loop, must finish: `finishing` settings force a call of the
  agent's finishing tool, or a reply in text with no tools offered when it has none (`prompt` also hides
  the loops from a reply that must answer in text: a model shown them tends to copy them);
- an unreadable tool call is sent back with the parse error; the same one twice makes the next reply
  finish (`unreadable`);
- a reply in text when the run ends through a finishing tool gets one reminder to call it (`reminded`);
- with `check_answers`, an answer in text that states numbers or ids no result or user message wrote is sent
  back once, and the next reply must be a call (`questioned`; see `agentkit.loop.grounding`);
- a reply that only repeats answered calls, or calls that keep failing the same way, is answered from the
  earlier results without running them; a second such reply ends the run when it cannot go on
  (`repeated`; the rules are in `agentkit.loop.repeats`), and an answer in text after repeats that mentions
  nothing of the results is replaced by them (`answer`);
- a reply an extension's `review` hook declines gets the reason instead of running (`declined`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from agentkit.loop.grounding import UNGROUNDED_ANSWER, ungrounded_values
from agentkit.loop.repeats import NOT_RUN, uses_results
from agentkit.loop.state import LoopState
from agentkit.messages import Message
from agentkit.models.protocol import GenerationSettings
from agentkit.tools import Tool, parameter_list
from agentkit.tools.text_calls import tool_choice_kind


def finish_reminder(finisher: Tool) -> str:
    """What a reply in text gets back when the run ends through the tool `finisher`: what the tool is for and
    what it takes (told only to give its "final answer", a model may put the answer where the tool's argument
    goes)."""
    purpose = (finisher.description.strip().splitlines() or [""])[0]
    return " ".join(p for p in (f"A reply in text does not finish this task: call {finisher.name} now.", purpose,
                                f"{finisher.name} takes {parameter_list(finisher)}.") if p)


class Recovery:
    """The loop's recovery policy for one run (see the module docstring).

    Args:
        settings: the agent's generation settings.
        finishers: the names of the tools that end a run (`final=True`, and a typed output's tool).
        max_steps: the agent's step limit.
        reminder_tool: the tool a reply in text is reminded to call (None: no reminder; the agent has no
            finishing tool, or its answer is a typed output).
        typed: whether the agent's answer is a typed output (then a repeat's results are no output).
        check_answers: send an answer in text back once when it states values the conversation never wrote
            (only where the run ends with a reply in text; give it only to an agent with tools).
    """

    __slots__ = ("answers_in_text", "check_answers", "finishers", "max_steps", "reminder_tool", "settings", "typed")

    def __init__(self, settings: GenerationSettings, finishers: Sequence[str], max_steps: int,
                 reminder_tool: Tool | None = None, *, typed: bool = False, check_answers: bool = False) -> None:
        self.settings, self.finishers, self.max_steps = settings, finishers, max_steps
        self.reminder_tool, self.typed = reminder_tool, typed
        self.answers_in_text = not finishers and tool_choice_kind(settings.tool_choice) == "auto"
        """Whether a loop ends with a reply in text: no finishing tool, and the settings let the model choose
        (a `tool_choice` the user set to "required" or a tool's name is kept)."""
        self.check_answers = check_answers and self.answers_in_text and not typed

    def finishing(self) -> GenerationSettings:
        """Settings for a reply that must end a loop: it calls the first finishing tool when there is one,
        else it answers in text (no tools offered), unless the user's own `tool_choice` demands a call."""
        if self.finishers:
            return replace(self.settings, tool_choice=self.finishers[0])
        return replace(self.settings, tool_choice="none") if self.answers_in_text else self.settings

    def prompt(self, state: LoopState, messages: list[Message]) -> list[Message]:
        """Before a model call: what the model is shown. The last step must finish; a reply that must answer
        in text sees the run without its loops."""
        if state.steps == self.max_steps > 1 and (self.finishers or self.answers_in_text):
            state.settings = self.finishing()  # the last call must finish: not end without an answer
        if state.settings.tool_choice == "none" and state.loops:
            return [m for i, m in enumerate(messages) if i not in state.loops]
        return messages

    def unreadable(self, state: LoopState, reply: Message, messages: list[Message]) -> bool:
        """After a reply: whether it was an unreadable call, now sent back with the parse error (the same
        error twice in a row is a loop: the next reply must finish)."""
        error = reply.parse_error
        if not error:
            state.last_parse_error = None
            return False
        state.loops.update((len(messages) - 1, len(messages)))
        messages.append(Message.user(f"Your tool call could not be parsed: {error}"))
        if error == state.last_parse_error:
            state.settings = self.finishing()
        state.last_parse_error = error
        return True

    def reminded(self, state: LoopState, asked: str | None, messages: list[Message]) -> bool:
        """After a reply in text (`asked`: the call's `tool_choice`): whether it was sent back with a reminder
        to call the finishing tool (once per run, not on the last step, nor when text was asked for), as
        pydantic-ai's output tools and smolagents' final_answer do; the next reply must call it."""
        if (self.reminder_tool is None or state.told_to_finish or state.steps >= self.max_steps
                or tool_choice_kind(asked) == "none"):
            return False
        state.told_to_finish = True
        messages.append(Message.user(finish_reminder(self.reminder_tool)))
        state.settings = self.finishing()
        return True

    def questioned(self, state: LoopState, asked: str | None, messages: list[Message]) -> bool:
        """After a reply in text (the last of `messages`): whether it was sent back because it states numbers or
        ids that no tool result, call or user message wrote (`check_answers`; once per run, not on the last step,
        nor when text was asked for). The next reply must be a call (`tool_choice="required"`); the answer after
        it stands, whatever it states."""
        if (not self.check_answers or state.questioned or state.steps >= self.max_steps
                or tool_choice_kind(asked) == "none"):
            return False
        values = ungrounded_values(messages[-1].content, messages[:-1])
        if not values:
            return False
        state.questioned = True
        them = "them" if len(values) > 1 else "it"
        messages.append(Message.user(UNGROUNDED_ANSWER.format(values=", ".join(values), them=them)))
        state.settings = replace(self.settings, tool_choice="required")
        return True

    def answer(self, state: LoopState, text: str) -> None:
        """A reply in text ends the run with it as the answer; after repeats, a reply that says nothing, or
        nothing of what the run found, is replaced by the repeated calls' results."""
        state.answer = state.output = text
        state.stop_reason = "final"
        if state.repeating and not (text.strip() and uses_results(text, state.results.texts())):
            state.answer = state.output = state.repeated_results or None
            state.stop_reason = "repeated_call"

    def repeated(self, state: LoopState, reply: Message, asked: str | None,
                 messages: list[Message]) -> list[Message] | None:
        """Before a reply's calls run: None when any call is new; else the observations that answer the
        repeat from earlier results (the next reply must finish), or no observations when a second repeat
        ends the run (`state.stop_reason` "repeated_call", the repeated calls' results the answer)."""
        state.results.update(messages)
        repeated = state.results.repeats(reply, self.finishers)
        if repeated is None:
            state.repeating = False
            return None
        state.repeated_results = "\n".join(dict.fromkeys(
            r for c in reply.tool_calls if (r := state.results.earlier(c)) is not None))
        if state.repeating and (not self.answers_in_text or asked == "none" or state.steps >= self.max_steps):
            state.answer, state.stop_reason = state.repeated_results or None, "repeated_call"  # they are the answer
            state.output = None if self.typed else state.answer
            return []
        if (self.finishers or state.repeating) and reply.tool_calls[-1].name not in self.finishers:
            state.settings = self.finishing()
        state.repeating = True
        state.loops.update(range(len(messages) - 1, len(messages) + len(repeated)))
        return repeated

    def declined(self, state: LoopState, reply: Message, reason: str, messages: list[Message]) -> list[Message]:
        """A reply a `review` hook declined: each call gets the reason back instead of running, and the next
        reply must finish."""
        state.loops.update(range(len(messages) - 1, len(messages) + len(reply.tool_calls)))
        state.settings = self.finishing()
        return [Message.tool(call, f"{NOT_RUN}{reason}", is_error=True) for call in reply.tool_calls]

    def calls_ran(self, state: LoopState, reply: Message) -> None:
        """After a reply's calls ran without ending the run: a failed finishing call lets a reply in text be
        reminded again."""
        if any(c.name in self.finishers for c in reply.tool_calls):
            state.told_to_finish = False
