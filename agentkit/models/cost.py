"""What model calls cost, in US dollars, from LiteLLM's local price map (offline, never fetched).

The OpenAI and LiteLLM backends put the cost of each call into `Usage.cost_usd` when the map knows the
model's price; a run's usage sums its turns. Models without a known price (local models, most
self-hosted servers) leave it `None`: unknown, not free.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from agentkit.messages import Usage


@dataclass(frozen=True)
class Price:
    """US dollars per input (prompt) and per output (completion) token."""

    input_per_token: float
    output_per_token: float

    def cost(self, usage: Usage) -> float:
        """The cost of `usage` at this price."""
        return usage.input_tokens * self.input_per_token + usage.output_tokens * self.output_per_token


@functools.lru_cache(maxsize=256)
def price_of(model: str) -> Price | None:
    """The price of `model` ("gpt-4o-mini", "anthropic/claude-sonnet-4-5", ...), or None if unknown."""
    from agentkit.models.litellm_env import import_litellm  # sets the local-cost-map switch first

    try:
        info = import_litellm().get_model_info(model)
    except Exception:  # litellm raises a bare Exception for a model it does not know
        return None
    inp, out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if inp is None or out is None:
        return None
    return Price(float(inp), float(out))


def with_cost(model: str, usage: Usage) -> Usage:
    """`usage` with `cost_usd` filled in when the price of `model` is known."""
    if usage.cost_usd is not None or not (usage.input_tokens or usage.output_tokens):
        return usage
    price = price_of(model)
    return usage if price is None else usage.model_copy(update={"cost_usd": price.cost(usage)})


def format_cost(cost_usd: float | None) -> str:
    """A cost for people: "$0.0123", "<$0.0001", or "n/a" when unknown."""
    if cost_usd is None:
        return "n/a"
    if 0 < cost_usd < 0.0001:
        return "<$0.0001"
    return f"${cost_usd:.4f}"
