"""Conversations that end by calling a tool that finishes the run (`@tool(final=True)`: a `final_answer`, a
`submit`) instead of answering in text (Why: docs/decisions.md#tool-lora)."""

from __future__ import annotations

from typing import Any

from agentkit.messages import Message, ToolCall
from agentkit.training.synthetic.turns import Builder, ToolConversation

# (name, description, parameter, its description): the answer is the argument.
ANSWER_FINISHERS: tuple[tuple[str, str, str, str], ...] = (
    ("final_answer", "Give the final answer to the user. Call it last: it ends the task.", "answer",
     "the answer, in a sentence"),
    ("submit_answer", "Submit your answer; this ends the task.", "answer", "the full answer"),
    ("finish", "Finish the task and send your reply to the user.", "reply", "what to tell the user"),
    ("respond_to_user", "Send the final response to the user (ends the conversation).", "response",
     "the response text"),
    ("complete_task", "Mark the task complete with its result; call it once, when done.", "result",
     "the result, stated for the user"),
    ("deliver_answer", "Deliver the answer to the user and end the task.", "text", "the answer text"),
    ("report_back", "Report the outcome to the user. This is the last call.", "message", "the message for the user"),
    ("done", "Call this when you are done: it gives the user your final answer.", "final_answer", "the final answer"),
)
# (name, description): the argument of the call that found the answer is given again, and that call's result
# is the answer (as SQL's confirm_answer takes the query that answered).
ECHO_FINISHERS: tuple[tuple[str, str], ...] = (
    ("submit_final", "Submit the {param} whose result answers the request; it is run once more and ends the task."),
    ("confirm_result", "Confirm the final {param}: it is looked up once more and its result is the answer. "
                       "Ends the task."),
    ("accept_result", "Accept the {param} that gave the answer; this ends the task."),
    ("lock_in", "Lock in the final {param}; this ends the task and shows its result to the user."),
)
_RECEIPTS = ("Answer sent.", "Delivered to the user.", "Done.", "OK")


def finishing(b: Builder, conv: ToolConversation) -> ToolConversation:
    """`conv` with a tool that finishes the run among its tools, and its text answer given by calling
    it: as the answer (`final_answer(answer=...)`), or, after a call with one required argument, as that
    argument again (`submit_final(query=...)`, whose result is the call's; single lookups only, where that
    result is the whole answer)."""
    rng = b.rng
    *head, last = conv.messages  # a single lookup's head: the request, the call, its result
    taken = {t["function"]["name"] for t in conv.tools}
    echo_names = [n for n, _ in ECHO_FINISHERS if n not in taken]
    answering, params = None, {}
    if conv.kind == "single" and rng.random() < 0.6:
        (answering,) = head[1].tool_calls
        params = next(t for t in conv.tools if t["function"]["name"] == answering.name)["function"]["parameters"]
    if answering is not None and len(params["required"]) == 1 and echo_names:
        (key,) = params["required"]
        name, words = rng.choice(echo_names), key.replace("_", " ")
        schema = {k: v for k, v in params["properties"][key].items() if k != "description"}
        spec = finisher_spec(name, dict(ECHO_FINISHERS)[name].format(param=words), key,
                              {**schema, "description": f"the {words} that gave the answer"})
        args, result = {key: answering.arguments[key]}, head[-1].content
    else:
        name, doc, param, param_doc = rng.choice([f for f in ANSWER_FINISHERS if f[0] not in taken])
        spec = finisher_spec(name, doc, param, {"type": "string", "description": param_doc})
        args, result = {param: last.content}, rng.choice(_RECEIPTS)
    call = ToolCall(id=f"call_{rng.getrandbits(40):010x}", name=name, arguments=args)
    tools = list(conv.tools)
    tools.insert(rng.randrange(len(tools) + 1), spec)
    messages = [*head, Message.assistant(tool_calls=[call]), Message.tool(call, result)]
    return ToolConversation(conv.kind, tools, messages, final=(name,))


def finisher_spec(name: str, doc: str, param: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The function spec of a finishing tool with one parameter."""
    return {"type": "function", "function": {"name": name, "description": doc, "parameters": {
        "type": "object", "properties": {param: schema}, "required": [param]}}}
