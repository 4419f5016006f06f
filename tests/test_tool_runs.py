"""agentkit.training.tool_runs and scripts/tool_runs_data.py: the agent's own runs on synthetic multi-step requests
(the generator's real conversations), judged against the written calls and results, a failed request played again
with its plan, and a right hinted run kept as if the plan had not been shown (prompts rendered by a real chat
template and tokenised by its real tokenizer). The models stand for the model's choices only."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agentkit.messages import Message, ToolCall
from agentkit.models import GenerationSettings
from agentkit.models.protocol import ModelResponse, TokenRecord
from agentkit.testing import FunctionModel
from agentkit.training.synthetic import synthetic_conversations
from agentkit.training.tool_runs import (
    COLLECT_KINDS,
    KIND,
    PLAN_TITLE,
    collect_tool_runs,
    gold_tools,
    kind_weights,
    plan_hint,
    quotes,
    written_calls,
)
from agentkit.trajectory import read_jsonl

sys.path.insert(0, str(Path(__file__).parents[1] / "scripts"))


def conversations(n: int = 30, seed: int = 3) -> list[Any]:
    return synthetic_conversations(n, seed=seed, weights=dict.fromkeys(COLLECT_KINDS, 1.0), refusals=False,
                                   fresh_names=0.5)


def replies_of(conv: Any) -> list[Message]:
    """The conversation's assistant replies, with fresh call ids (as a model writes them)."""
    return [Message.assistant(m.content, [ToolCall(name=c.name, arguments=dict(c.arguments)) for c in m.tool_calls])
            for m in conv.messages if m.role == "assistant"]


class Templated(FunctionModel):
    """Replies from `fn`, the prompt rendered by a real chat template and tokenised by its tokenizer, as a local
    backend records it; the completion's ids are its characters."""

    def __init__(self, fn: Any, tokenizer: Any) -> None:
        super().__init__(fn, name="templated")
        self.tokenizer = tokenizer

    def tokenize(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def generate(self, messages: Sequence[Message], tools: Any = (), settings: GenerationSettings | None = None
                 ) -> ModelResponse:
        response = super().generate(messages, tools, settings)
        prompt = self.tokenizer.apply_chat_template([{"role": m.role, "content": m.content} for m in messages],
                                                    tokenize=False, add_generation_prompt=True)
        text = json.dumps([c.name for c in response.message.tool_calls]) + response.message.content
        tokens = TokenRecord(prompt_ids=self.tokenize(prompt), completion_ids=[ord(c) for c in text],
                             logprobs=[-0.5] * len(text), temperature=0.0, prompt_text=prompt, completion_text=text)
        return ModelResponse(message=response.message, usage=response.usage, tokens=tokens)


def replaying(convs: Sequence[Any], change: Any = None) -> FunctionModel:
    """A model that writes each conversation's own replies (found by its request), `change(conv, step, reply,
    messages)` editing a reply when given."""

    def fn(messages: Sequence[Message], tools: Any) -> Message:
        request = next(m.content for m in messages if m.role == "user")
        conv = next(c for c in convs if c.messages[0].content == request)
        step = sum(m.role == "assistant" for m in messages)
        replies = replies_of(conv)
        reply = replies[min(step, len(replies) - 1)]
        return change(conv, step, reply, messages) if change else reply

    return FunctionModel(fn, name="replaying")


def test_the_written_conversations_themselves_are_judged_right() -> None:
    """Every generated multi-step conversation, played back call for call, passes the judge: the tools return
    the written results to the written calls, and the written answer quotes a value of the last result."""
    convs = conversations()
    played = collect_tool_runs(replaying(convs), convs, hints=False)
    assert [p.first_right for p in played] == [True] * len(convs)
    assert {p.kind for p in played} == set(COLLECT_KINDS)
    for p in played:
        assert p.kept is not None and p.kept.metadata["kind"] == KIND and p.kept.reward == 1.0
        assert p.kept.metadata["hinted"] is False and p.hinted is None


def test_one_call_and_no_call_requests_are_judged_and_a_stray_call_is_wrong() -> None:
    """The kinds a mix adds beside the chains (`kind_weights`): played as written they are right; a call made to
    a request written without one (a greeting offered many tools) is wrong, as is a skipped single call."""
    weights = kind_weights("single:1, no_tool, crowded:1.5")
    assert weights == {"single": 1.0, "no_tool": 1.0, "crowded": 1.5}
    convs = synthetic_conversations(24, seed=11, weights=weights, refusals=False, fresh_names=0.5)
    assert {c.kind for c in convs} == set(weights)
    assert all(p.first_right for p in collect_tool_runs(replaying(convs), convs, hints=False))
    silent = [c for c in convs if not written_calls(c.messages)]
    assert silent and len(silent) < len(convs)

    def stray(conv: Any, step: int, reply: Message, messages: Sequence[Message]) -> Message:
        if step == 0:
            spec = conv.tools[0]["function"] if conv.tools else {"name": "lookup"}
            return Message.assistant("", [ToolCall(name=spec["name"], arguments={})])
        return Message.assistant("Done.") if not written_calls(conv.messages) else reply

    played = collect_tool_runs(replaying(silent, stray), silent, hints=False)
    assert not any(p.first_right for p in played)

    def skip(conv: Any, step: int, reply: Message, messages: Sequence[Message]) -> Message:
        return Message.assistant("It is 42.") if reply.tool_calls else reply

    called = [c for c in convs if written_calls(c.messages)]
    assert not any(p.first_right for p in collect_tool_runs(replaying(called, skip), called, hints=False))
    for bad in ("", "single:0", "single:x", "single,single", "single:nan"):
        with pytest.raises(ValueError):
            kind_weights(bad)


def test_a_guessed_id_a_skipped_call_or_a_misquoted_result_is_judged_wrong() -> None:
    convs = [c for c in conversations(60) if len(written_calls(c.messages)) >= 2][:12]
    ids = re.compile(r"[A-Z]{1,4}-\d{3,}")

    def guess(conv: Any, step: int, reply: Message, messages: Sequence[Message]) -> Message:
        if step == 1 and reply.tool_calls:  # the second call with an invented argument
            call = reply.tool_calls[0]
            arguments = {k: ("XX-0001" if isinstance(v, str) else (v + 1 if isinstance(v, int | float) else v))
                         for k, v in call.arguments.items()}
            return Message.assistant("", [ToolCall(name=call.name, arguments=arguments)])
        return reply

    played = collect_tool_runs(replaying(convs, guess), convs, hints=False)
    assert not any(p.first_right for p in played) and all(p.kept is None for p in played)
    # the tool said it has no record of the invented value, as a real tool would
    errors = [m for p in played for m in p.first.messages if m.role == "tool" and m.is_error]
    assert errors and all("has no record" in m.content for m in errors)

    def stop(conv: Any, step: int, reply: Message, messages: Sequence[Message]) -> Message:
        return Message.assistant("Done.") if step == 1 else reply

    assert not any(p.first_right for p in collect_tool_runs(replaying(convs, stop), convs, hints=False))

    def misquote(conv: Any, step: int, reply: Message, messages: Sequence[Message]) -> Message:
        if reply.tool_calls:
            return reply
        return Message.assistant(ids.sub("ZZ-9", re.sub(r"\d", "7", reply.content)) + " (probably)")

    assert not any(p.first_right for p in collect_tool_runs(replaying(convs, misquote), convs, hints=False))


def test_gold_tools_answer_the_written_call_in_any_spelling_and_refuse_other_values() -> None:
    (conv,) = [c for c in conversations(40) if c.kind == "chain3"][:1]
    (name, args), *_ = written_calls(conv.messages)
    tools = {t.name: t for t in gold_tools(conv.tools, conv.messages)}
    shouted = {k: (v.upper() + " " if isinstance(v, str) else float(v) if isinstance(v, int) else v)
               for k, v in args.items()}
    first_result = next(m.content for m in conv.messages if m.role == "tool")
    assert tools[name].fn(**shouted) == first_result
    with pytest.raises(ValueError, match="has no record"):
        tools[name].fn(**shouted)  # each written result is given once
    with pytest.raises(ValueError, match="has no record"):
        tools[name].fn(**{k: "something else" for k in args})


def test_the_plan_names_the_tools_in_order_and_where_each_argument_comes_from_but_no_value() -> None:
    for conv in conversations(60):
        hint = plan_hint(conv.messages)
        calls = written_calls(conv.messages)
        positions = [hint.index(f"call {name}") for name, _ in calls]
        assert positions == sorted(positions) and hint.endswith("Then answer from the results.")
        for _, args in calls:
            for value in args.values():
                text = str(value)
                if any(ch.isdigit() for ch in text) and len(text) >= 3:
                    assert text.lower() not in hint.lower(), (hint, text)
    chain = next(c for c in conversations(60) if c.kind == "chain3")
    assert "taken from the result of step 1" in plan_hint(chain.messages)


def test_quotes_reads_numbers_as_numbers() -> None:
    assert quotes("That comes to 1,414.00 in all.", "1414")
    assert quotes("about 20.81 a day", "20.8088") and quotes("338 units", "338.0")
    assert quotes("about 21 a day", "20.8088") and not quotes("about 22 a day", "20.8088")
    assert not quotes("3380 units", "338") and not quotes("no number here", "338")
    assert quotes("0.105 a game", "0.1053") and not quotes("0 goals a game", "0.1053")
    assert quotes("It is in quito now.", "Quito") and not quotes("It is in Lima.", "Quito")


def test_a_request_right_only_with_its_plan_is_kept_without_the_plan() -> None:
    """Rationalisation end to end: the model skips the first lookup and guesses the id unless the plan is in its
    system prompt; the kept run is the hinted one, its prompts are the plain run's prompts exactly (text and ids),
    and its completions are the tokens it wrote with the plan."""
    from agentkit.models.embedded import load_embedded_tokenizer

    convs = [c for c in conversations(40) if c.kind == "chain3"][:2]

    def fn(messages: Sequence[Message], tools: Any) -> Message:
        request = next(m.content for m in messages if m.role == "user")
        conv = next(c for c in convs if c.messages[0].content == request)
        replies = replies_of(conv)
        step = sum(m.role == "assistant" for m in messages)
        if f"## {PLAN_TITLE}" in messages[0].content:
            return replies[step]
        if step == 0:  # no plan: the second call at once, with a guessed argument
            call = replies[1].tool_calls[0]
            return Message.assistant("", [ToolCall(name=call.name, arguments=dict.fromkeys(call.arguments, "ID-1"))])
        return Message.assistant("I could not find it.")

    model = Templated(fn, load_embedded_tokenizer("smollm2-135m"))
    played = collect_tool_runs(model, convs, concurrency=2)
    for p in played:
        assert p.first_right is False and p.hinted_right is True and p.kept is not None and p.hinted is not None
        kept, hinted, first = p.kept, p.hinted, p.first
        assert kept.metadata["hinted"] is True and kept.metadata["hint_removed"] == plan_hint(convs[p.index].messages)
        assert all(f"## {PLAN_TITLE}" not in m.content for m in kept.messages)
        assert f"## {PLAN_TITLE}" in hinted.messages[0].content
        assert kept.messages[0].content == first.messages[0].content
        assert kept.turns[0].prompt_text == first.turns[0].prompt_text
        assert kept.turns[0].prompt_ids == first.turns[0].prompt_ids
        for turn, before in zip(kept.turns, hinted.turns, strict=True):
            assert f"## {PLAN_TITLE}" not in turn.prompt_text
            assert turn.completion_ids == before.completion_ids
            if turn.extends is None:
                assert turn.prompt_ids == model.tokenize(turn.prompt_text)
        assert len(kept.turns) == len(written_calls(convs[p.index].messages)) + 1


def test_the_script_writes_the_kept_runs_every_run_played_and_a_report(tmp_path: Path) -> None:
    from tool_runs_data import main

    args = ["--conversations", "12", "--seed", "5", "--out", str(tmp_path / "runs.jsonl")]
    convs = synthetic_conversations(12, seed=5, weights=dict.fromkeys(COLLECT_KINDS, 1.0), refusals=False,
                                    fresh_names=0.5)
    wrong_first = {c.messages[0].content for c in convs[::3]}

    def stop(conv: Any, step: int, reply: Message, messages: Sequence[Message]) -> Message:
        return Message.assistant("No idea.") if conv.messages[0].content in wrong_first else reply

    assert main([*args, "--no-hints"], model=replaying(convs, stop)) == 0
    summary = json.loads((tmp_path / "runs.json").read_text())
    assert summary["per_kind"]["all"] == {"played": 12, "first_right": 8, "hinted_played": 0, "hinted_right": 0,
                                          "kept": 8}
    kept = read_jsonl([tmp_path / "runs.jsonl"])
    assert len(kept) == 8 and {t.messages[1].content for t in kept}.isdisjoint(wrong_first)
    assert len(read_jsonl([tmp_path / "runs.played.jsonl"])) == 12
    assert summary["data_kind"].startswith("train")


def test_an_arithmetic_call_is_judged_by_what_it_works_out_and_the_tool_computes_any_formula() -> None:
    from agentkit.training.tool_runs import arithmetic_tools, arithmetic_value, right_run

    convs = [c for c in conversations(80) if c.kind == "compute" and arithmetic_tools(c.tools)
             & {n for n, _ in written_calls(c.messages)}]
    assert convs
    for conv in convs[:6]:
        arithmetic = arithmetic_tools(conv.tools)

        def commuted(conv: Any, step: int, reply: Message, messages: Sequence[Message],
                     arithmetic: frozenset[str] = arithmetic) -> Message:
            calls = []
            for call in reply.tool_calls:
                args = dict(call.arguments)
                if call.name in arithmetic and "a" in args and args.get("operation") in ("add", "multiply"):
                    args["a"], args["b"] = args["b"], args["a"]
                elif call.name in arithmetic and "a" not in args:
                    key = next(k for k, v in args.items() if isinstance(v, str))
                    args[key] = f"({args[key]}) * 1"
                calls.append(ToolCall(name=call.name, arguments=args))
            return Message.assistant(reply.content, calls) if calls else reply

        (played,) = collect_tool_runs(replaying([conv], commuted), [conv], hints=False)
        assert played.first_right, plan_hint(conv.messages)
        assert right_run(played.first, conv.messages, conv.tools)
        changed = [c for n, c in written_calls(conv.messages)
                   if n in arithmetic and ("a" not in c or c["operation"] in ("add", "multiply"))]
        assert right_run(played.first, conv.messages) == (not changed)  # compared as text, a changed call differs
    name = sorted(arithmetic_tools(convs[0].tools))[0]
    tool = next(t for t in gold_tools(convs[0].tools, convs[0].messages) if t.name == name)
    spec = next(s for s in convs[0].tools if s["function"]["name"] == name)
    params = list(spec["function"]["parameters"]["properties"])
    args: dict[str, Any] = ({"a": 7, "b": 6, "operation": "multiply"} if "operation" in params
                            else {params[0]: "(3 + 4) * 6"})
    assert tool.fn(**args) == "42" and arithmetic_value(args) == "42"
    assert arithmetic_value({"formula": "2 ** 2000"}) is None and arithmetic_value({"formula": "1/0"}) is None
    assert arithmetic_value({"formula": "(" * 400 + "1" + ")" * 400}) is None


def test_the_leakage_check_covers_each_collection_recipe_as_the_makefile_runs_it() -> None:
    """Every `scripts/tool_runs_data.py` line of the Makefile draws the requests that `check_leakage.RECIPES`
    checks under that recipe's name: the same number, seed and kinds with their shares."""
    sys.path.insert(0, str(Path(__file__).parent / "benchmarks"))
    from check_leakage import RECIPES

    text = (Path(__file__).parents[1] / "Makefile").read_text().replace("\\\n", " ")
    variables = dict(re.findall(r"^([A-Z0-9_]+) := (.+)$", text, flags=re.M))
    checked = {name: options for name, options in RECIPES}
    targets = re.findall(r"^([\w.-]+): setup\n((?:\t.*\n)+)", text, flags=re.M)
    found = 0
    for target, body in targets:
        line = next((ln for ln in body.splitlines() if "scripts/tool_runs_data.py" in ln), None)
        if line is None:
            continue
        line = re.sub(r"\$\((\w+)\)", lambda m: variables.get(m.group(1), m.group(0)), line)
        options = dict(re.findall(r"--(conversations|seed|kinds) (\S+)", line))
        recipe = checked[f"make {target}"]
        assert recipe["n"] == int(options["conversations"]) and recipe["seed"] == int(options["seed"])
        assert recipe["weights"] == kind_weights(options.get("kinds", ",".join(COLLECT_KINDS)))
        assert (recipe["refusals"], recipe["fresh_names"]) == (False, 0.5)  # what the script always draws with
        found += 1
    assert found == 2
