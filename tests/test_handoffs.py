"""Handoffs: `Agent(handoffs=[...])` hands the conversation to another agent, which continues it and answers."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from agentkit import Agent, Message, tool
from agentkit.events import InnerEvent, ModelTurn, RunFinished, ToolStarted
from agentkit.runs.approval import approve
from agentkit.runs.handoffs import BEFORE_HANDOVER, drop_tool_calls, handoff
from agentkit.testing import ScriptedModel, call, calls
from agentkit.tools import ToolDefinitionError


@tool(read_only=True)
def find_account(email: str) -> str:
    """Find a customer's account."""
    return f"account 17 ({email})"


@tool(read_only=True)
def invoices(account: int) -> str:
    """List an account's invoices."""
    return f"account {account}: invoice 9 charged twice"


def billing_agent(script: list, **options) -> Agent:
    return Agent(ScriptedModel(script), tools=[invoices], name="billing", instructions="You handle billing.",
                 **options)


def test_the_agent_handed_to_answers_and_its_answer_is_the_runs() -> None:
    billing = billing_agent([call("invoices", account=17), "Invoice 9 was charged twice; I refunded one."])
    triage_model = ScriptedModel([call("transfer_to_billing")])
    triage = Agent(triage_model, name="triage", handoffs=[billing])
    result = triage.run("I was charged twice.")

    assert result.answer == "Invoice 9 was charged twice; I refunded one." and result.stop_reason == "final"
    assert result.output == result.answer
    spec = triage.tools["transfer_to_billing"].spec()["function"]
    assert spec["parameters"].get("properties", {}) == {} and "billing" in spec["description"]
    [child] = result.trajectory.children
    transfer = result.trajectory.messages[2].tool_calls[0]
    assert (child.relation, child.agent, child.parent_call_id) == ("handoff", "billing", transfer.id)
    assert child.task == "I was charged twice." and child.messages[0].content == "You handle billing."
    assert result.trajectory.messages[-1].content == result.answer  # the transfer's observation
    assert result.usage.calls == 3  # triage once, billing twice


def test_who_spoke_when_is_recorded_and_streamed() -> None:
    billing = billing_agent(["Your balance is 0."])
    triage = Agent(ScriptedModel([call("find_account", email="a@b.c"), call("transfer_to_billing")]),
                   tools=[find_account], name="triage", handoffs=[billing])
    events = list(triage.stream("What do I owe? a@b.c"))
    speakers = [(e.agent if isinstance(e, InnerEvent) else "triage") for e in events
                if isinstance(e, ModelTurn) or (isinstance(e, InnerEvent) and isinstance(e.event, ModelTurn))]
    assert speakers == ["triage", "triage", "billing"]
    result = events[-1].result  # type: ignore[union-attr]
    assert isinstance(events[-1], RunFinished) and result.answer == "Your balance is 0."
    assert result.trajectory.agent == "triage" and len(result.trajectory.turns) == 2
    assert result.trajectory.children[0].agent == "billing" and len(result.trajectory.children[0].turns) == 1
    transfer_turn = result.trajectory.turns[-1].output.tool_calls[0]
    assert result.trajectory.children[0].parent_call_id == transfer_turn.id


def test_by_default_the_target_sees_the_whole_conversation_and_what_was_done_for_the_request() -> None:
    billing_model = ScriptedModel(["You owe nothing."])
    billing = Agent(billing_model, name="billing", instructions="You handle billing.")
    triage = Agent(ScriptedModel([call("find_account", email="a@b.c"), call("transfer_to_billing")]),
                   tools=[find_account], name="triage", handoffs=[billing])
    earlier = [Message.user("Hi"), Message.assistant("Hello! How can I help?")]
    triage.run("What do I owe? a@b.c", history=earlier)

    [prompt] = billing_model.requests
    assert [m.role for m in prompt] == ["system", "user", "assistant", "user"]
    assert [m.content for m in prompt[1:]] == ["Hi", "Hello! How can I help?", "What do I owe? a@b.c"]
    assert prompt[0].content.startswith("You handle billing.")
    assert f"## {BEFORE_HANDOVER}" in prompt[0].content
    assert 'called find_account({"email": "a@b.c"})' in prompt[0].content
    assert "find_account returned: account 17 (a@b.c)" in prompt[0].content


def test_an_input_filter_says_what_the_target_sees() -> None:
    refunds_model = ScriptedModel(["Refunded."])
    refunds = Agent(refunds_model, name="refunds")
    history = [Message.user("Look up a@b.c"), Message.assistant(tool_calls=[call("find_account").tool_calls[0]]),
               Message.tool(call("find_account").tool_calls[0], "account 17"), Message.assistant("Found it.")]
    triage = Agent(ScriptedModel([call("transfer_to_refunds")]), name="triage",
                   handoffs=[handoff(refunds, input_filter=drop_tool_calls)])
    triage.run("Refund my last order.", history=history)
    [prompt] = refunds_model.requests
    assert [(m.role, m.content) for m in prompt[1:]] == [
        ("user", "Look up a@b.c"), ("assistant", "Found it."), ("user", "Refund my last order.")]
    assert BEFORE_HANDOVER not in prompt[0].content

    only_request = Agent(ScriptedModel(["ok"]), name="fresh")
    triage = Agent(ScriptedModel([call("go_fresh")]), name="triage",
                   handoffs=[handoff(only_request, tool_name="go_fresh", description="Start afresh.",
                                     input_filter=lambda messages: [messages[-1]])])
    assert triage.tools["go_fresh"].description == "Start afresh."
    triage.run("Just this.", history=history)
    assert [m.content for m in only_request.model.requests[0][1:]] == ["Just this."]  # type: ignore[attr-defined]


class Refund(BaseModel):
    order: int
    amount: float


def test_the_targets_typed_output_is_the_runs_output() -> None:
    refunds = Agent(ScriptedModel([call("final_result", order=5, amount=9.5)]), name="refunds", output_type=Refund)
    triage = Agent(ScriptedModel([call("transfer_to_refunds")]), name="triage", handoffs=[refunds])
    result = triage.run("Refund order 5.")
    assert result.output == Refund(order=5, amount=9.5)
    assert result.answer == Refund(order=5, amount=9.5).model_dump_json()


def test_a_target_stopping_without_an_answer_stops_the_run_so() -> None:
    stuck = Agent(ScriptedModel([call("invoices", account=1)], repeat_last=True), tools=[invoices], name="billing",
                  max_steps=2)
    triage = Agent(ScriptedModel([call("transfer_to_billing")]), name="triage", handoffs=[stuck])
    result = triage.run("Help.")
    assert result.answer is None and result.stop_reason == result.trajectory.children[0].stop_reason != "final"


def test_a_call_of_the_target_needing_approval_pauses_the_run_and_resumes() -> None:
    refunded: list[int] = []

    @tool(requires_approval=True)
    def refund(order: int) -> str:
        """Refund an order."""
        refunded.append(order)
        return f"refunded {order}"

    refunds = Agent(ScriptedModel([call("refund", order=5), "Refunded order 5."]), tools=[refund], name="refunds")
    triage = Agent(ScriptedModel([call("transfer_to_refunds")]), name="triage", handoffs=[refunds])
    paused = triage.run("Refund order 5.")
    assert paused.stop_reason == "paused" and [c.name for c in paused.pending] == ["refund"] and refunded == []
    result = triage.resume(paused.state.to_json(), {paused.pending[0].id: approve()})
    assert result.answer == "Refunded order 5." and refunded == [5]
    assert result.trajectory.children[0].relation == "handoff"


def test_only_the_first_handoff_of_a_reply_happens() -> None:
    billing = billing_agent(["billing here"])
    refunds = Agent(ScriptedModel(["refunds here"]), name="refunds")
    triage = Agent(ScriptedModel([calls(("transfer_to_billing", {}), ("transfer_to_refunds", {}))]), name="triage",
                   handoffs=[billing, refunds])
    events = list(triage.stream("Help."))
    result = events[-1].result  # type: ignore[union-attr]
    assert result.answer == "billing here" and [c.agent for c in result.trajectory.children] == ["billing"]
    second = result.trajectory.messages[-1]
    assert second.is_error and second.content.startswith("Not handed over")
    assert [e.call.name for e in events if isinstance(e, ToolStarted)] == ["transfer_to_billing",
                                                                          "transfer_to_refunds"]


def test_the_next_turn_of_a_chat_sees_the_answer_of_the_agent_handed_to() -> None:
    billing = billing_agent(["You owe 5 euros."])
    triage_model = ScriptedModel([call("transfer_to_billing"), "You are welcome."])
    triage = Agent(triage_model, name="triage", handoffs=[billing])
    first = triage.run("What do I owe?")
    triage.run("Thanks!", history=first.trajectory.messages[1:])
    assert triage_model.requests[-1][-2].content == "You owe 5 euros."


def test_names() -> None:
    assert Agent(ScriptedModel([])).name == "agent"
    helper = Agent(ScriptedModel([]), name="Customer Care!")
    assert "transfer_to_customer_care" in Agent(ScriptedModel([]), handoffs=[helper]).tools
    with pytest.raises(ToolDefinitionError, match="transfer_to_agent"):
        Agent(ScriptedModel([]), handoffs=[Agent(ScriptedModel([])), Agent(ScriptedModel([]))])
