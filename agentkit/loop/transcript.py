"""Earlier turns of a conversation shown as a transcript inside the new user message.

`Agent(history_view="transcript")` gives the model a multi-turn conversation as one fresh request: the earlier
turns (what the user said, the calls made and what they returned, the answers) written out as text above the
new message, instead of as chat turns. The model then meets each request as it meets a single one, and does
not continue the pattern of its own earlier replies (an answer given without a call is followed by more of
them). The conversation itself is kept whole (`conversation_after`); only the model's prompt changes.

    prompt = with_transcript(history, "And the second one?")   # one user message's text
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from agentkit.messages import Message

MAX_RESULT_CHARS = 1_500
"""A tool result longer than this is cut in the transcript (its start kept)."""
MAX_TRANSCRIPT_CHARS = 12_000
"""The transcript keeps the latest lines that fit in this many characters; older ones are left out, marked."""
EARLIER = "Earlier in this conversation:"
NOW = "Now the user says:"
LEFT_OUT = "(earlier turns left out)"


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split()) if len(text) <= 4 * limit else " ".join(text[: 4 * limit].split())
    return text if len(text) <= limit else text[:limit] + " ..."


def transcript_lines(history: Sequence[Message]) -> list[str]:
    """One line per user message, call (with what it returned) and answer of `history`; system messages and
    empty replies are skipped. A result is matched to its call by the call's id."""
    results = {m.tool_call_id: m for m in history if m.role == "tool" and m.tool_call_id}
    lines: list[str] = []
    for message in history:
        if message.role == "user":
            lines.append(f"user: {_cut(message.content, MAX_RESULT_CHARS)}")
        elif message.role == "assistant":
            for call in message.tool_calls:
                arguments = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
                result = results.get(call.id)
                got = "no result" if result is None else _cut(result.content, MAX_RESULT_CHARS)
                failed = " (error)" if result is not None and result.is_error else ""
                lines.append(f"call {call.name}({_cut(arguments, MAX_RESULT_CHARS)}) returned{failed}: {got}")
            if message.content.strip() and not message.tool_calls:
                lines.append(f"assistant: {_cut(message.content, MAX_RESULT_CHARS)}")
    return lines


def with_transcript(history: Sequence[Message], text: str) -> str:
    """The user's new message `text` with the earlier turns written above it; `text` alone without history.
    Only the latest lines that fit in `MAX_TRANSCRIPT_CHARS` are kept."""
    lines = transcript_lines(history)
    if not lines:
        return text
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        size += len(line) + 1
        if size > MAX_TRANSCRIPT_CHARS:
            kept.append(LEFT_OUT)
            break
        kept.append(line)
    return "\n".join([EARLIER, *reversed(kept), "", NOW, text])


def conversation_after(history: Sequence[Message], task: str, messages: Sequence[Message],
                       transcript: bool) -> list[Message]:
    """The conversation after a run, without its system message: `history`, the user's `task` and the run's
    own messages. `messages` are the run's trajectory messages; `transcript` says whether the run showed the
    history as a transcript (its second message then is the user message with the transcript)."""
    if not transcript or not history:
        return list(messages[1:])
    return [*history, Message.user(task), *messages[2:]]
