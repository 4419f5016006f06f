"""Synthetic tool-use conversations for fine-tuning the embedded model's tool use.

The local model should learn the skills, not particular tools: call the right tool among several offered,
with arguments copied (and normalised) from the request; answer in plain text from a tool's result, quoting
its values; chain calls when a call needs an earlier result (two, three or four in a row); make independent
calls side by side in one reply; compute with results by calling an offered arithmetic tool, never in its
head; keep using tools in a long chat whose other turns need none; answer directly, without a call, when no
offered tool fits; and, on request (`finish=`), end with the call of an offered tool that finishes the run
(`@tool(final=True)`: a `final_answer`, a `submit`) instead of a text answer (off by default; Why:
docs/decisions.md#tool-lora). The tools come from a programmatic pool of invented families across many
domains (`families`); none of them is, or is close to, a tool of the evaluation sets (`heldout`), so the
model is evaluated on tools it was never trained on.

    from agentkit.training.synthetic import MIXES, synthetic_conversations
    for conv in synthetic_conversations(2000, seed=1, weights=MIXES["chains"]):
        conv.kind, conv.tools, conv.messages   # OpenAI function specs; user, calls/results, final answer

Everything is drawn from one `random.Random(seed)`: the same (n, seed, options) gives the same conversations.
The modules: `values` (what arguments and results are drawn from), `family` and `families` (the tools),
`arithmetic` (the calculator-like tools), `chains` and `computing` (what multi-call requests ask),
`no_tool` (requests no tool fits), `surface` (how people type), `turns` (the builder), `kinds`, `multistep`,
`multiturn` and `finishing` (the kinds of conversation), `conversations` (the mix), `tables` (checks of the
literal tables), `heldout`.
"""

from __future__ import annotations

from agentkit.training.synthetic.chains import CHAIN_PATTERNS, LONG_CHAINS, ChainPattern, LongChain
from agentkit.training.synthetic.conversations import (
    CHAINS_WEIGHTS,
    KIND_WEIGHTS,
    KINDS,
    MIXES,
    synthetic_conversations,
    tool_names,
)
from agentkit.training.synthetic.heldout import FRAMEWORK_FINISHERS, HELD_OUT_TOOLS, HELD_OUT_WORDS, held_out
from agentkit.training.synthetic.turns import ToolConversation

__all__ = ["CHAINS_WEIGHTS", "CHAIN_PATTERNS", "FRAMEWORK_FINISHERS", "HELD_OUT_TOOLS", "HELD_OUT_WORDS",
           "KINDS", "KIND_WEIGHTS", "LONG_CHAINS", "MIXES", "ChainPattern", "LongChain", "ToolConversation",
           "held_out", "synthetic_conversations", "tool_names"]
