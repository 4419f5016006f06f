"""The one-request kinds: one call (`single`), one call whose result the answer reasons on (`use_result`), two
calls in sequence (`sequence`: a chain, or two things asked at once) and no call (`no_tool`)."""

from __future__ import annotations

from typing import Any

from agentkit.messages import Message
from agentkit.training.synthetic.chains import CHAIN_PAIRS, ChainPattern
from agentkit.training.synthetic.families import BY_KEY, FAMILIES
from agentkit.training.synthetic.family import Family
from agentkit.training.synthetic.no_tool import CHITCHAT, CREATIVE, KNOWLEDGE, REFUSALS
from agentkit.training.synthetic.surface import dress, fields, join_requests, may_lower, text_of
from agentkit.training.synthetic.turns import Builder, ToolConversation, draw_args, outputs, result_text
from agentkit.training.synthetic.values import value


def single(b: Builder, fam: Family, judged: bool = False) -> ToolConversation:
    """One call; with `judged`, a question on the result (is a value above/below the user's threshold?)."""
    rng, name, judge = b.rng, b.name(fam), fam.judge if judged else None
    template = b.ask(rng.choice(judge.asks if judge else fam.asks))
    args, surf = draw_args(fam, set(fields(template)), rng)
    extra: dict[str, Any] = {}
    if judge:
        extra["threshold"], surf["threshold"] = value(judge.gen, rng, args)
    call = b.call(fam, name, args)
    outs = outputs(fam, args, rng)
    values = {k: text_of(v) for k, v in {**args, **outs, **extra}.items()}
    if judge:
        got, limit = outs[judge.field], extra["threshold"]
        answer = judge.yes if (got >= limit if judge.op == ">=" else got <= limit) else judge.no
    else:
        answer = rng.choice(fam.answers)
    messages = [Message.user(dress(template.format(**surf), rng, may_lower(fam))),
                Message.assistant(tool_calls=[call]), Message.tool(call, result_text(fam, args, outs, rng)),
                Message.assistant(answer.format(**values))]
    return ToolConversation("use_result" if judge else "single", b.offer([(fam, name)], 2, 6), messages)


def chained(b: Builder, chain: ChainPattern) -> ToolConversation:
    """Two calls, the second taking its argument from the first one's result, in a reply of its own after
    that result. The first result is drawn again while the request happens to write the linked value (a
    number the user gives for something else), so that the value can only come from the result."""
    rng = b.rng
    first, second = BY_KEY[chain.first], BY_KEY[chain.second]
    name_a, name_b = b.name(first), b.name(second)
    template = b.ask(rng.choice(chain.asks))
    wanted = set(fields(template))
    args_a, surf_a = draw_args(first, wanted, rng)
    outs_a = outputs(first, args_a, rng)
    args_b, surf_b = draw_args(second, wanted, rng, chain.passed(args_a, outs_a))
    said = template.format(**surf_a, **surf_b)
    for _ in range(20):
        if text_of(outs_a[chain.field]) not in said:
            break
        outs_a = outputs(first, args_a, rng)
        args_b.update(chain.passed(args_a, outs_a))
    else:
        raise RuntimeError(f"the request writes every value drawn for {chain.field}")  # pragma: no cover
    call_a, call_b = b.call(first, name_a, args_a), b.call(second, name_b, args_b)
    outs_b = outputs(second, args_b, rng, args_a)
    answer_a = rng.choice(first.answers).format(**{k: text_of(v) for k, v in {**args_a, **outs_a}.items()})
    answer_b = rng.choice(second.answers).format(**{k: text_of(v) for k, v in {**args_b, **outs_b}.items()})
    messages = [Message.user(dress(said, rng, may_lower(first, second))),
                Message.assistant(tool_calls=[call_a]),
                Message.tool(call_a, result_text(first, args_a, outs_a, rng)),
                Message.assistant(tool_calls=[call_b]),
                Message.tool(call_b, result_text(second, args_b, outs_b, rng)),
                Message.assistant(f"{answer_a} {answer_b}")]
    return ToolConversation("sequence", b.offer([(first, name_a), (second, name_b)], 2, 6), messages)


def two_things(b: Builder) -> ToolConversation:
    """Two unrelated requests in one message, answered by two calls one after the other."""
    rng = b.rng
    while True:
        fa, fb = rng.sample(FAMILIES, 2)
        if (fa.key, fb.key) not in CHAIN_PAIRS:
            break
    requests, calls, answers = [], [], []
    names = [b.name(fa), b.name(fb)]
    for fam, name in zip((fa, fb), names, strict=True):
        template = b.ask(rng.choice(fam.asks))
        args, surf = draw_args(fam, set(fields(template)), rng)
        outs = outputs(fam, args, rng)
        call = b.call(fam, name, args)
        requests.append(template.format(**surf))
        calls += [Message.assistant(tool_calls=[call]), Message.tool(call, result_text(fam, args, outs, rng))]
        answers.append(rng.choice(fam.answers).format(**{k: text_of(v) for k, v in {**args, **outs}.items()}))
    request = join_requests(requests[0], requests[1], rng)
    messages = [Message.user(dress(request, rng, may_lower(fa, fb))), *calls, Message.assistant(" ".join(answers))]
    return ToolConversation("sequence", b.offer([(fa, names[0]), (fb, names[1])], 2, 6), messages)


def no_tool(b: Builder, refusals: bool = True, offered: tuple[int, int] = (1, 5), kind: str = "no_tool"
            ) -> ToolConversation:
    """A request no offered tool fits, answered without a call: small talk, knowledge, a little writing, or
    (`refusals`) a request for a tool that is not offered, answered by saying so; `offered` bounds how many
    tools the request is offered, `kind` names the conversation's kind."""
    rng, r = b.rng, b.rng.random() * (1.0 if refusals else 0.7)
    avoid: tuple[str, ...] = ()
    if r < 0.25:
        request, answer = rng.choice(CHITCHAT)
    elif r < 0.6:
        request, answer, near = rng.choice(KNOWLEDGE)
        request, avoid = dress(request, rng), near
    elif r < 0.7:
        request, answer = rng.choice(CREATIVE)
    else:  # a request for a tool that is not offered
        fam = rng.choice(FAMILIES)
        template = b.ask(rng.choice(fam.asks))
        request = dress(template.format(**draw_args(fam, set(fields(template)), rng)[1]), rng)
        answer, avoid = rng.choice(REFUSALS).format(task=fam.task), (fam.domain,)
    messages = [Message.user(request), Message.assistant(answer)]
    return ToolConversation(kind, b.offer([], *offered, avoid), messages)
