"""Does the order tools are listed in decide which one a local model calls? First-call choice under permutations.

    python tests/benchmarks/bench_tool_order.py --model default --set a --out results/tool-order-default-a.json

For every request of a tool-use set that needs a tool, the agent's own first prompt is rendered with the tools
in several orders (as given, reversed, `--shuffles` random ones). After the call's opening (`<tool_call>` and
`{"name": "`), each tool's name is scored by the model (the sum of its tokens' log-probs, teacher-forced on
llama.cpp), and the chosen tool is the best-scoring name. Reported: right first tools per order, and per
debiasing rule (the mean of the orders' normalised log-probs; the sum of their probabilities), as in the
permutation self-consistency and PriDe work on multiple-choice position bias.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path
from typing import Any

from agentkit import Agent
from agentkit.models import load_local
from agentkit.models.protocol import GenerationSettings
from agentkit.tools.text_calls import OPEN_TAG

sys.path.insert(0, str(Path(__file__).parent))

NAME_OPENING = '{"name": "'


def first_prompt(model: Any, tools: list[Any], request: str) -> str:
    """The exact first prompt the agent sends for `request` with `tools` in this order (the model is stopped
    as soon as the prompt is rendered)."""
    render = type(model).render_prompt
    seen: list[str] = []

    def hook(messages: Any, specs: Any = ()) -> str:
        seen.append(render(model, messages, specs))
        raise InterruptedError("prompt rendered")

    model.render_prompt = hook
    try:
        Agent(model, tools, max_steps=1, max_retries=0, settings=GenerationSettings(temperature=0)).run(request)
    except InterruptedError:
        pass
    finally:
        del model.render_prompt
    if not seen:
        raise RuntimeError("the agent sent no prompt")
    return seen[0]


def name_scores(model: Any, prompt: str, names: list[str]) -> dict[str, float]:
    """log P(name | prompt + call opening) for each name, teacher-forced token by token."""
    import numpy as np

    llm = model.llm
    opening = prompt + OPEN_TAG + NAME_OPENING
    base_ids = model.tokenize(opening)
    llm.reset()
    base = model._eval(llm, base_ids)
    scores = {}
    for name in names:
        ids = model.tokenize(opening + name + '"')
        if ids[: len(base_ids)] != base_ids:  # the name merged with the opening's last token: score from there
            raise RuntimeError(f"{name!r} does not tokenize after the call opening")
        llm.n_tokens, logits, total = len(base_ids), base, 0.0
        for token in ids[len(base_ids):]:
            top = logits.max()
            total += float(logits[token] - top - np.log(np.exp(logits - top).sum()))
            logits = model._eval(llm, [token])
        scores[name] = total
    return scores


def _normalised(scores: dict[str, float]) -> dict[str, float]:
    top = max(scores.values())
    z = top + math.log(sum(math.exp(v - top) for v in scores.values()))
    return {k: v - z for k, v in scores.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="default", help="embedded model name or .gguf path (llama.cpp)")
    parser.add_argument("--set", choices=["a", "b"], default="a")
    parser.add_argument("--shuffles", type=int, default=0, help="random orders besides given and reversed")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    import bench_capability as cap
    from tool_set_b import DATA_B, TOOLS_B

    data, tools = (cap.DATA, cap.TOOLS) if args.set == "a" else (DATA_B, TOOLS_B)
    items = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    items = [i for i in items if i["calls"]]
    model = load_local(args.model, engine="llama.cpp")
    names = [t.name for t in tools]
    orders = {"given": list(range(len(tools))), "reversed": list(range(len(tools)))[::-1]}
    rng = random.Random(0)
    for k in range(args.shuffles):
        orders[f"shuffle{k}"] = rng.sample(range(len(tools)), len(tools))
    rows = []
    for item in items:
        per_order = {key: _normalised(name_scores(model, first_prompt(model, [tools[i] for i in order],
                                                                        item["request"]), names))
                     for key, order in orders.items()}
        want = item["calls"][0]["name"]
        row: dict[str, Any] = {"id": item["id"], "want": want,
                               "chosen": {k: max(s, key=s.__getitem__) for k, s in per_order.items()}}
        mean_logp = {n: sum(s[n] for s in per_order.values()) / len(per_order) for n in names}
        prob_sum = {n: sum(math.exp(s[n]) for s in per_order.values()) for n in names}
        row["chosen"]["mean log-prob"] = max(mean_logp, key=mean_logp.__getitem__)
        row["chosen"]["summed prob"] = max(prob_sum, key=prob_sum.__getitem__)
        row["p_given"] = {n: round(math.exp(v), 4) for n, v in per_order["given"].items()}
        rows.append(row)
        print(f"{item['id']:<22} want {want:<18} " + " ".join(f"{k}={v}" for k, v in row["chosen"].items()),
              flush=True)
    summary = {rule: sum(r["chosen"][rule] == r["want"] for r in rows) for rule in rows[0]["chosen"]}
    print(json.dumps({"n": len(rows), "right_first_tool": summary}, indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"model": args.model, "set": args.set, "orders": orders, "n": len(rows),
                                        "right_first_tool": summary, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
