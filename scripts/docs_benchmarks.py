"""Write docs/benchmarks.md from the results files in tests/benchmarks/results/*.json.

    python scripts/docs_benchmarks.py           # rewrite the page
    python scripts/docs_benchmarks.py --check   # exit 1 when the committed page differs

Every figure on the page is read from a results file, and every results file is listed. A file names the
model it ran as a model string; where that string was `local:default`, the weights behind it were those
of the default at the time, which `DEFAULT_THEN` says per file. Each row also says what kind of data it
measured: train (learned from), dev (looked at and tuned on: every task set in this repository so far) or
test (frozen; none yet), or "-" for a measurement of speed or size with no task data.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "tests" / "benchmarks" / "results"
PAGE = ROOT / "docs" / "benchmarks.md"

BARE_05 = "Qwen2.5-Coder-0.5B, bare (the default then)"
Q05_FP16 = "Qwen2.5-Coder-0.5B + tool LoRA, fp16 (the default then)"
Q05 = "Qwen2.5-Coder-0.5B + tool LoRA, 4-bit"
Q05_Q4 = f"{Q05} (the default then)"
Q15_TOOLS = "Qwen2.5-Coder-1.5B + tool LoRA `tool-lora-1.5b` (the default then)"
Q15_SERIAL = "Qwen2.5-Coder-1.5B + tool LoRA `serial` (today's `local:default`)"
Q15_SQL = "Qwen2.5-Coder-1.5B + SQL LoRA (`local:qwen2.5-coder-1.5b-sql`, `agentkit sql`'s model)"
SMOLLM = "SmolLM2-135M"

_ERAS = {
    BARE_05: """capability-answer-step-8steps-unparked capability-answer-step-baseline capability-answer-step
        capability-b-all capability-b-answer-step-baseline capability-b-answer-step capability-b-ranked
        capability-b-select3 capability-ranked capability-refusal capability-repeats capability-select3
        capability-sequences-v3 capability_qwen_native chinook-easy-answer-step-baseline chinook-easy-answer-step
        chinook-easy-react-digest clinic-react-bare learn-answer-step-15m-seed0 learn-library-12m-seed0-session-start
        learn-library-12m-seed0 learn-library-12m-seed1 learn-memory-45m-seed1 learn-memory-45m-seed2
        learn-memory-90m-seed0 learn-memory-sqlnotes-45m-seed1 learn-memory-validated-45m-seed0
        learn-memory-validated-45m-seed1 learn-memory-validated-45m-seed2 learn-pacing-15m-seed0
        learn-pacing-15m-seed1 learn-pacing-15m-seed2 learn-rl-15m-seed0 learn-skills-45m-seed0
        learn-skills-bytask-seed0 learn-skills-examples-seed0 learn-skills-pacing-45m-seed0 learn-skills-seed0-v2
        learn-skills-seed0 refusal-seed0 transfer-vllm-memory-45m-seed0 local_parallel""",
    Q05_FP16: "capability-tool-lora7-fp16-a capability-b-tool-lora7-fp16 chinook-easy-tool-lora7-fp16",
    Q05_Q4: """capability-default-q4-a capability-default-q4-b capability-default-q4-sel-a-3
        capability-default-q4-sel-a-ranked capability-default-q4-sel-b-3 capability-default-q4-sel-b-ranked
        chinook-easy-default-q4 chinook-easy-default-s23 chinook-easy-values-nokeys
        chinook-easy-values-nolimit-instruction chinook-easy-values chinook-medium-tables
        chinook-medium-values-nokeys chinook-medium-values clinic-bare-s19 clinic-checks
        clinic-default-before-last-step clinic-default-last-step clinic-values-nokeys clinic-values heldout0-bare
        heldout0-checks heldout0-repairs learn-checks-pacing-seed0 learn-cli-default-45m-seed0
        learn-cli-default-45m-seed1 learn-memory-default-q4-45m-seed1 learn-min0-checks-pacing-seed1
        learn-min0-checks-pacing-seed2 learn-min0-checks-pacing-seed3 learn-unordered-checks-pacing-seed0
        learn-unordered-checks-pacing-seed1 learn-unordered-checks-pacing-seed2 tool-order-default-a""",
    Q15_TOOLS: """capability-default-1.5b-a capability-default-1.5b-a2 capability-default-1.5b-b
        clinic-qwen1.5b-tools-quoted capability-default-c multiturn-default multiturn-default-first3 from-runs-dev
        capability-default-d-nowait capability-default-d-wait capability-default-a-wait from-runs-dev-spares
        sql-dev-draft-vote5-tables-default-s32 sql-train-draft-vote5-tables-case-off
        sql-train-draft-vote5-tables-case-on sql-train-draft-vote5-tables-lower-case-off
        sql-train-draft-vote5-tables-lower-case-on sql-test-final-case-on multiturn-d-default
        multiturn-d-checked-asked from-runs-dev-hard capability-default-d-map capability-default-a-map
        capability-default-b-map sql-dev-map-then-act-1 from-runs-dev-rest-before from-runs-dev-hardest""",
    Q15_SERIAL: """sql-test-default-serial capability-default-serial-c multiturn-d-serial multiturn-d-second-look
        multiturn-c-serial sql-across-dev-s36 chinook-easy-serial clinic-serial sql-test-react-serial
        learn-split-dev experience-floor-dev experience-floor-dev-rail learn-split-dev-floor
        learn-split-dev-floor-adm from-runs-dev-hard-floor learn-split-dev-mingain experience-floor-dev-gate-insurance
        experience-floor-dev-gate-mingain experience-floor-dev-gate-floor experience-floor-dev-07-decision
        learn-split-dev-last learn-split-dev-g11-experience learn-split-test-default
        learn-split-dev-g11-experience-hints""",
}
DEFAULT_THEN: dict[str, str] = {stem: era for era, stems in _ERAS.items() for stem in stems.split()}
"""What `local:default` was when each file that names it was written."""

DATA = (
    ("Chinook (68 questions; easy 24, medium 25)", "dev", "agentkit/environments/data/chinook_tasks.jsonl",
     "the project's main SQL set; `agentkit learn` splits it into train, validation and held-out tasks, but "
     "its failures shaped the code, so even the held-out split is dev data"),
    ("clinic (26 questions)", "dev", "agentkit/environments/data/clinic_tasks.jsonl",
     "learn's \"unseen\" database: never learned on by the loop, but its failures shaped the shape checks"),
    ("library (24 questions)", "dev", "tests/fixtures/library_tasks.jsonl",
     "written after the loop's defaults were set; its first learning run changed the tie rule"),
    ("tool-use set A (46 requests, 6 tools)", "dev", "tests/benchmarks/data/tool_capability.jsonl",
     "every tool-use change was measured on it"),
    ("tool-use set B (24 requests, 10 other tools)", "dev", "tests/benchmarks/data/tool_capability_b.jsonl",
     "its tools are never in the LoRA's training data, but it was used to choose between LoRA recipes"),
    ("synthetic tool conversations", "train", "agentkit/training/synthetic/",
     "what the tool LoRAs are trained on (none of the benchmarks' tools)"),
    ("generated SQL task set, train split (22 databases, 660 questions)", "train",
     "agentkit/sql/taskgen/manifest.json", "for learning from: the agent's own runs here may be training data"),
    ("generated SQL task set, dev split (11 databases, 330 questions)", "dev", "agentkit/sql/taskgen/manifest.json",
     "failures read and designs compared here (the draft planner was chosen on it)"),
    ("generated SQL task set, test split (10 databases, 300 questions)", "test",
     "agentkit/sql/taskgen/manifest.json", "frozen: reported on once per design, its failures never read"),
    ("tool-use set C (38 multi-step requests, 12 new tools)", "test", "tests/benchmarks/data/tool_capability_c.jsonl",
     "written for measuring only: no tool of it is in any training data, nothing was tuned on it"),
    ("tool-use set D (38 multi-step requests, 12 other new tools)", "dev",
     "tests/benchmarks/data/tool_capability_d.jsonl",
     "built like set C to tune and decide on multi-step use; no tool of it is in any training data"),
    ("multi-turn chat sessions (12 sessions, 75 turns)", "test", "tests/benchmarks/data/multiturn_sessions.jsonl",
     "written for measuring only: nothing was tuned on it"),
    ("multi-turn chat sessions over set D's tools (12 sessions, 89 turns)", "dev",
     "tests/benchmarks/data/multiturn_sessions_d.jsonl",
     "built like the test sessions to tune and decide on multi-turn chat (`bench_multiturn.py --set d`)"),
)


def _pct(rate: float) -> str:
    return f"{100 * rate:.0f}%"


def _count(rate: float, n: int) -> str:
    return f"{round(rate * n)}/{n}"


def _validation_rule(data: dict[str, Any]) -> str:
    """How a learn run's validation judged the methods that change every run: the results file's
    `validation_min_gain`; a file without it ran under the former rule (one more task, or a ceiling tie, kept)."""
    gain = data.get("validation_min_gain")
    if gain is None:
        return "skills and notes kept on one more validation task or a ceiling tie (the former rule)"
    return f"skills and notes kept only on {gain} or more validation tasks above the agent without (none at a ceiling)"


def _model(stem: str, spec: str) -> str:
    """A plain description of the weights a file measured."""
    spec = spec.split(" [")[0].strip()
    base, _, adapter = spec.partition("+")
    if base == "local:default" and not adapter:
        return DEFAULT_THEN.get(stem, "`local:default` (unknown date)")
    if adapter:
        run = next((part for part in adapter.split("/") if part.startswith("tool-lora")), adapter)
        name = {"local:default": "Qwen2.5-Coder-0.5B", "local:qwen2.5-coder-0.5b": "Qwen2.5-Coder-0.5B",
                "local:qwen2.5-coder-1.5b": "Qwen2.5-Coder-1.5B"}.get(base, base)
        if run == "tool-lora-1.5b":
            return Q15_TOOLS
        if run.rsplit("/", 1)[-1] == "serial30-q4":  # the packed step-30 adapter of `make tool-lora-1.5b-serial`
            return Q15_SERIAL
        if run.split("/")[1:2] == ["sql-rs3-q4"]:  # round three of `make sql-lora-1.5b`, packed as it ships
            return Q15_SQL
        if run.split("/")[1:2] == ["sql-rs3"]:
            return f"{Q15_SQL}, before packing"
        return f"{name} + LoRA `{run}`, fp32" if run == "tool-lora-7" else f"{name} + LoRA `{run}` (not shipped)"
    return {"local:qwen2.5-coder-1.5b": "Qwen2.5-Coder-1.5B, bare",
            "local:qwen2.5-coder-1.5b-tools": Q15_TOOLS,
            "local:qwen2.5-coder-1.5b-sql": Q15_SQL,
            "local:qwen2.5-coder-0.5b-tools": Q05,
            "local:smollm2-135m": SMOLLM}.get(base, f"`{spec}`")


def _row(*cells: Any) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _table(header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> list[str]:
    if not rows:
        return ["(none)"]
    return [_row(*header), _row(*("---" for _ in header)), *(_row(*r) for r in rows)]


# -- kinds of results file -----------------------------------------------------------------------------

def _capability(stem: str, data: dict[str, Any]) -> tuple[Any, ...] | None:
    if len(data) != 1:
        return None
    spec, body = next(iter(data.items()))
    if not isinstance(body, dict) or "tool_use" not in body:
        return None
    s = body["tool_use"]["summary"]["all"]
    n = s["n"]
    tag = spec.split(" [", 1)[1].rstrip("]") if " [" in spec else ""
    options = ", ".join(p for p in tag.split(", ")[2:] if p) or "all tools, as given"
    sets = {46: "A (dev)", 24: "B (dev)", 38: "D (dev)" if "-d-" in f"-{stem}-" else "C (test)"}
    return (f"`{stem}`", _model(stem, spec), sets.get(n, f"A, {n} of its requests (dev)"), options,
            f"{_count(s['right_call'], n)} ({_pct(s['right_call'])})",
            f"{_count(s['right_answer'], n)} ({_pct(s['right_answer'])})", f"{s['seconds_per_request']:.1f}")


def _task_set(stem: str, environment: str, tasks: int) -> str:
    if stem.startswith("heldout0"):
        return f"Chinook, learn seed 0's held-out split ({tasks})"
    if "clinic" in environment or stem.startswith("clinic"):
        return f"clinic ({tasks})"
    level = next((w for w in ("easy", "medium", "hard") if f"-{w}-" in f"-{stem}-"), "")
    return f"Chinook {level} ({tasks})".replace("  ", " ")


def _evaluation(stem: str, data: dict[str, Any]) -> tuple[Any, ...] | None:
    if "summary" not in data or "runs" not in data:
        return None
    run = data["runs"][0]
    s = data["summary"][0]
    return (f"`{stem}`", _model(stem, run.get("model", "")), _task_set(stem, run.get("environment", ""), s["tasks"]),
            s["config"], f"{_count(s['success_rate'], s['tasks'])} ({_pct(s['success_rate'])})",
            f"{s['mean_steps']:.1f}", f"{s['mean_wall_s']:.0f}")


def _score(e: dict[str, Any] | None) -> str:
    return "-" if not e else f"{e['successes']}/{e['tasks']}"


def _learning(stem: str, data: dict[str, Any]) -> tuple[Any, ...] | None:
    if "before" not in data or "after" not in data or "methods" not in data:
        return None
    heldout = "library held-out" if "library" in stem else "Chinook held-out"
    budget = f"{data['budget_minutes']:g} min" if data.get("budget_minutes") else "-"
    minutes = (data.get("learning_cost") or {}).get("minutes")
    return (f"`{stem}`", _model(stem, data["model"]), ", ".join(data["methods"]), data["seed"], budget,
            f"{heldout} {_score(data['before'])} → {_score(data['after'])}",
            f"{_score(data.get('unseen_before'))} → {_score(data.get('unseen_after'))}",
            "-" if minutes is None else f"{minutes:.1f}")


def _overhead(d: dict[str, Any], clock: str) -> tuple[str, str, str]:
    """The row of a `bench_overhead.py` run against smolagents and pydantic-ai."""
    m = d.get("machine", {})
    versions = ", ".join(f"{k} {v}" for k, v in m.get("versions", {}).items() if v and k != "opentelemetry-sdk")
    return (f"framework overhead per agent step at 10 / 50 / 200 steps, scripted model, one trivial tool "
            f"(`bench_overhead.py`; {clock} of {d['runs']} runs, lowest of {d['repeat']} rounds; "
            f"{m.get('cpus', '?')} cores, 1-minute load average {m.get('load_1min_before', '?')} at the start, "
            f"{m.get('load_1min_after', '?')} at the end; {versions}), µs", "-",
            "; ".join(f"{k}: " + ("/".join(f"{v[n]:.0f}" for n in ("10", "50", "200")) if isinstance(v, dict)
                                  else str(v)) for k, v in d["results"].items()))


def _other(stem: str, data: dict[str, Any]) -> tuple[str, str, str]:
    """(what it measured, kind of data, the figures)."""
    describe: dict[str, Callable[[dict[str, Any]], tuple[str, str, str]]] = {
        "local_engine-default-1.5b": lambda d: (
            "decode speed: agentkit's llama.cpp wrapper against llama-cpp-python on the same bare 1.5B GGUF, "
            "2 threads (not the shipped default with its LoRA, not llama.cpp's own llama-bench)", "-",
            f"{d['default']['speed']['ours']['decode_tok_s']} against {d['default']['speed']['raw']['decode_tok_s']} "
            f"tok/s ({d['default']['speed']['decode_ratio']}×); `agentkit chat` ready in "
            f"{d['chat_start']['cold_s']} s cold, {d['chat_start']['warm_s'][0]} s warm"),
        "local_engine-shipped": lambda d: (
            "decode speed of the shipped default (the 1.5B GGUF with its tool LoRA applied at run time, as "
            "`local:default` loads it) against llama.cpp's own `llama-bench` (built from the llama.cpp that "
            f"llama-cpp-python {d['default']['llama_bench']['base']['build']} vendors) on the same GGUF, "
            f"{d['default']['llama_bench']['threads']} threads, {d['default']['llama_bench']['new_tokens']} tokens "
            f"after {d['default']['llama_bench']['depth']} in the context; llama-bench runs no adapter, so it also "
            "ran a GGUF with the LoRA merged in (`llama-export-lora` writes the merged weights unquantised: "
            f"{d['default']['llama_bench']['lora merged']['file_mb']} MB against "
            f"{d['default']['llama_bench']['base']['file_mb']} MB, not the same file)", "-",
            f"agentkit, shipped: {d['default']['speed']['shipped']['decode_tok_s']} tok/s; agentkit, bare GGUF: "
            f"{d['default']['speed']['ours']['decode_tok_s']}; llama-cpp-python, bare GGUF: "
            f"{d['default']['speed']['raw']['decode_tok_s']}; llama-bench, bare GGUF: "
            f"{d['default']['llama_bench']['base']['decode_tok_s']}; shipped / llama-bench bare: "
            f"{d['default']['shipped_over_llama_bench']['base']}×; llama-bench, merged unquantised: "
            f"{d['default']['llama_bench']['lora merged']['decode_tok_s']}"),
        "local_engine": lambda d: (
            "decode speed, agentkit's llama.cpp wrapper against llama-cpp-python on the same GGUF, 1 thread, "
            "loaded machine (`default` was the bare 0.5B then)", "-",
            "; ".join(f"{k}: {v['speed']['ours']['decode_tok_s']} against {v['speed']['raw']['decode_tok_s']} tok/s"
                      for k, v in d.items())),
        "local_parallel": lambda d: (
            "replies per minute, 4 conversations at once, llama.cpp contexts × threads (the 0.5B default then)",
            "-", ", ".join(f"{k}: {v['replies_per_min']}" for k, v in d["default"]["parallel"].items())),
        "local_model_quiet": lambda d: (
            f"torch decode loop, {SMOLLM}, 1 thread", "-",
            ", ".join(f"{k}: {v['decode_tok_s']:.1f} tok/s" for k, v in d["decode"].items()
                      if isinstance(v, dict) and "decode_tok_s" in v)),
        "trl_compare": lambda d: (
            "one GRPO step, SmolLM2-135M, 1 thread, TRL's GRPOTrainer against agentkit's Trainer, LoRA r 16 on both "
            "sides or full fine-tuning (rows marked * were measured in an earlier session)", "-",
            "; ".join(f"{r['impl']} {'LoRA' if r['lora'] else 'full'} β={r['beta']}"
                      f"{'*' if r.get('earlier_run') else ''}: {r['total_s']:.1f} s, {r['peak_rss_gb']:.2f} GB"
                      for r in d["results"])),
        "overhead": lambda d: _overhead(d, "wall time, median"),
        "overhead-cpu": lambda d: _overhead(d, "CPU time of all threads, least"),
        "overhead-nested": lambda d: (
            "framework overhead per agent step, scripted model (`bench_overhead.py`): a step whose call is another "
            "agent (`as_tool`, answering at once) against a step with one tool call; CPU time, least of "
            f"{d['runs']} runs × {d['repeat']} rounds, loaded 2-core machine", "-",
            "; ".join(f"{k}: {v['200']:.0f} µs" for k, v in d["results"].items()) + " (200 steps); "
            + "; ".join(f"{k} {v:.2f}×" for k, v in d["nested_over_tool_call"].items())),
        "mcp_roundtrip": lambda d: (
            "tool-call round trip, median ms", "-",
            "; ".join(f"{k}: {v['median_ms']:.3g}" for k, v in d["results"].items())),
        "durable": lambda d: (
            f"durable runs: kill -9 at random moments of {d['kills']['steps']}-step runs with slow tools, each "
            "resumed in a fresh process (scripted model)", "-",
            f"{d['kills']['kills']} kills over {d['kills']['runs']} runs: {d['kills']['runs_lost']} runs lost, "
            f"{d['kills']['completed_calls_run_twice']} completed calls run twice, "
            f"{d['kills']['same_answer_as_unkilled']}/{d['kills']['runs']} same answer as unkilled; "
            f"{d['kills']['kills_with_calls_in_flight']} kills with calls in flight; "
            + (f"the work done by an agent called as a tool: {d['nested_kills']['kills']} kills over "
               f"{d['nested_kills']['runs']} runs ({d['nested_kills']['kills_inside_an_agent_call']} inside the agent "
               f"call's run): {d['nested_kills']['runs_lost']} lost, {d['nested_kills']['completed_calls_run_twice']} "
               f"completed calls run twice, {d['nested_kills']['same_answer_as_unkilled']}/"
               f"{d['nested_kills']['runs']} same answer; " if "nested_kills" in d else "")
            + f"{d['overhead']['ms_per_save']:.3g} ms per checkpoint"),
        "reproducible-dev": lambda d: (
            f"the same greedy command twice (`bench_reproducible.py`), {d['options']['per_db']} questions per "
            f"database, concurrency {d['options']['concurrency']}, under different machine load", d["data_kind"],
            "; ".join(f"{r['config']}: {r['same_tokens']}/{r['tasks']} runs with the same tokens, "
                      f"{r['same_logprobs']}/{r['tasks']} with the same log-probs, {len(r['outcomes_differ'])} "
                      f"outcomes differ ({r['seconds_per_task'][0]} and {r['seconds_per_task'][1]} s/task)"
                      for r in d["configs"])),
        "hostile": lambda d: (
            "hostile SQL, hostile loop replies, kill -9 during writes", "-",
            f"SQL: {d['sql']['tried']} tried, {d['sql']['crashed']} crashed, worst {d['sql']['worst_query_s']} s; "
            f"loop: {d['loop']['runs']} runs, {d['loop']['crashes']} crashes, {d['loop']['hangs']} hangs; "
            f"records lost after kills: {sum(k.get('lost', 0) for k in d['kills'])}"),
        "fresh-chat-empty-cache": lambda d: (
            "`make chat` from a copy of the tree with an empty pip cache, pip's machine configuration off (every "
            "package downloaded from PyPI) and an empty agentkit home; local wheels: "
            f"{d['local_wheels']} (this machine cannot reach the PyTorch CPU index); {d['cores']} cores, "
            f"1-minute load {d['load_1min_at_end']} at the end", "-",
            f"setup {d['setup_s']} s, chat prompt at {d['chat_ready_s']} s, first answer at {d['first_answer_s']} s"),
        "fresh-chat-default-1.5b": lambda d: (
            "`make chat` from a copy of the tree, empty pip cache and agentkit home, 2 idle cores; "
            "a local torch wheel was supplied (not a truly empty cache)", "-",
            f"setup {d['setup_s']} s, chat prompt at {d['chat_ready_s']} s, first answer at {d['first_answer_s']} s"),
        "note-threshold": lambda d: (
            "note-retrieval cosine, task against subject, shipped SQL tasks", "dev",
            f"relevant median {d['relevant']['median']}, irrelevant median {d['irrelevant']['median']}; "
            f"chosen threshold {d['chosen']['threshold']} (F1 {d['chosen']['f1']})"),
    }
    if stem in describe:
        return describe[stem](data)
    if stem.startswith("multiturn"):
        o = data["overall"]
        checked = ", answers checked (a made-up value sent back once)" if data.get("check_answers") else ""
        checked += (", a second look at turns answered in text (an option since removed)" if data.get("second_look")
                    else "")
        return (f"multi-turn chat, {o['turns']} turns ({o['tool_turns']} need a tool), {data.get('model', '')}"
                f"{checked}",
                data.get("data", "test"),
                f"tool turns with a call {_pct(o['tool_turns_called'])}, "
                f"with the right tool {_pct(o['tool_turns_right_tool'])}, no-tool turns with no "
                f"call {_pct(o['no_tool_turns_no_call'])}, right answers {_pct(o['right_answer'])}, "
                f"{o['seconds_per_turn']} s per turn")
    if stem == "leakage":
        sets = data["sets"]
        return ("nearest tool-LoRA training request to each benchmark request (MiniLM cosine): max / p99", "-",
                "; ".join(f"{k}: {v['max']:.2f} / {v['p99']:.2f}" for k, v in sets.items()))
    if stem.startswith("sql-") and "runs" in data and "split" in data:
        extras = (f", {data['votes']} votes" if (data.get("votes") or 1) > 1 else "") + \
            (", the toolkit's LIMIT check on" if data.get("check_limit") is True else "") + \
            (", the letter-case check on" if data.get("check_case") is True else "") + \
            (", the count check on" if data.get("check_count") is True else "") + \
            (f" ({data['check_count_note']})" if data.get("check_count_note") else "")
        after = (f" after each database's first {data['skip']}" if data.get("skip") else "") + \
            (", its spare questions included" if data.get("with_spares") else "")
        which = (f"every question whose gold SQL holds `{data['gold_has']}`{after}" if data.get("gold_has")
                 else f"the questions of `{Path(data['tasks_file']).name}`" + (
                     ", each with its gold query's skeleton as a hint (rationalisation)"
                     if data.get("hinted", True) else "") if data.get("tasks_file")
                 else f"{data['per_db']} questions per database{after}")
        return (f"generated SQL task set, {which}, {data['max_steps']} steps{extras}",
                data["split"], "; ".join(f"{r['config']} ({r['model']}): {r['correct']}/{r['tasks']}, "
                                         f"no query {r['no_answer']}, {r['seconds_per_task']} s/task"
                                         for r in data["runs"]))
    if stem.startswith("count-replay-"):
        return ("the count check replayed offline on the final queries of recorded runs (`replay_count_check.py`): "
                "runs it fires on, right / wrong; its rewrite right on the wrong ones", data["kind"],
                f"{data['checked']} runs ({data['right']} right): fires on {data['fired_on_right']} right / "
                f"{data['fired_on_wrong']} wrong; rewrite right on {data['rewrite_right_on_wrong']}")
    if stem.startswith("validation-replay-"):
        rows = [(Path(folder).name, r) for folder, runs in data["runs"].items() for r in runs]
        return ("`learn`'s validation verdicts replayed under today's rule on finished learn runs "
                "(`replay_validation.py`): with / without the method, the validation tasks it acted on, won and "
                "lost there, the verdict recorded and today's", data["data_kind"],
                "; ".join(f"{db} {r['method']} {r['with']}/{r['tasks']} vs {r['without']}, "
                          + (f"acted on {len(r['acted'])} (+{len(r['won'])} −{len(r['lost'])}), "
                             if "acted" in r else "")
                          + f"{'kept' if r['recorded'] is None else 'set aside'} → "
                          f"{'kept' if r['today'] is None else 'set aside'}" for db, r in rows))
    if stem.startswith("vote-replay-"):
        return ("the draft vote replayed offline under other rules from the recorded drafts "
                f"(`replay_draft_votes.py`, {data['replayed']} runs with drafts that voted)", data["kind"],
                "; ".join(f"{k} {r['right']}/{r['of']} (+{r['wins']} −{r['losses']})"
                          for k, r in data["rules"].items()))
    if stem.startswith("sql-across-"):
        learning, before, after = data["learning"], data["before"], data["after"]
        return (f"worked examples from other databases (`bench_across.py`): the draft agent's gold-checked runs on "
                f"{learning['runs']} train questions ({learning['admitted']} kept), then {data['split']} questions "
                f"without and with them (`Experience(across=True)`, {data['votes']} votes, "
                f"{_model(stem, data['model'])})", data["data_kind"],
                f"{before['correct']}/{before['tasks']} → {after['correct']}/{after['tasks']} "
                f"({data['delta_points']:+.1f} points; {data['became_right']} became right, {data['became_wrong']} "
                f"wrong), {before['seconds_per_task']} → {after['seconds_per_task']} s/task")
    if stem.startswith("learn-split-"):
        per_db = "; ".join(
            f"seed {seed} {r['db_id']} {r['before']['correct']}/{r['before']['tasks']} → "
            f"{r['after']['correct']}/{r['after']['tasks']} ("
            + ", ".join(f"{m['method']} {m['delta_points']:+.1f}{'' if m['kept'] else ' set aside'}"
                        + (f" (if kept {m['if_kept']['correct']}/{m['if_kept']['tasks']}, "
                           f"{m['if_kept']['delta_points']:+.1f})" if "if_kept" in m else "")
                        for m in r["methods"]) + ")"
            for seed, sd in data["seeds"].items() for r in sd["databases"])
        o = data["overall"]
        fresh = (f" of the databases rebuilt with generator seed {data['generator_seed']} (questions the shipped "
                 f"build lacks)" if data.get("generator_seed") is not None else "")
        return (f"`agentkit learn` per database (`bench_learn_split.py`): {data['train_per_db']} questions{fresh} to "
                f"learn from and {data['heldout_per_db']} held out per database, {data['budget_per_database']} each, "
                f"methods {data['methods']}{' with hinted retries' if data.get('hinted_retries') else ''}, "
                f"{data['planner']} agent, worked examples at question cosine "
                f"{data.get('experience_min_similarity', 0.0)} or more, {_validation_rule(data)}, "
                f"{_model(stem, data['model'])}",
                data["data_kind"], f"{per_db}; " + "; ".join(
                    f"seed {seed} in all {sd['overall']['before']['correct']}/{sd['overall']['before']['tasks']} → "
                    f"{sd['overall']['after']['correct']}/{sd['overall']['after']['tasks']}"
                    for seed, sd in data["seeds"].items())
                + f"; mean over {o['seeds']} seed(s) {o['mean_delta_points']:+.1f} points")
    if stem.startswith("experience-floor-"):
        per_db = "; ".join(f"{d['db_id']} " + ", ".join(
            f"{k} {c['correct']}/{c['tasks']}" + (f" (+{len(c['flips_vs_none']['right'])} "
                                                  f"−{len(c['flips_vs_none']['wrong'])})" if k != "none" else "")
            for k, c in d["configs"].items()) for d in data["databases"])
        which = ("the held-out questions some example passes the floor for" if data.get("eligible_only")
                 else "a learn split's held-out questions")
        gated = (", and with the skeleton gate (gate-F)" if data.get("gated_floors") else "")
        return (f"{which}, run without worked examples and with them under question floors{gated} "
                f"(`bench_experience_threshold.py`, seed {data['seed']}, draft, {data['votes']} votes, "
                f"{_model(stem, data['model'])})", data["data_kind"],
                per_db + "; in all " + ", ".join(f"{k} {v}/{data['tasks']}" for k, v in data["total"].items()))
    if stem.startswith("from-runs-") and data.get("before_only"):
        c = data["config"]
        return (f"each database's next-day questions without memory (`bench_from_runs.py --before-only`; draft, "
                f"{c['votes']} votes, {_model(stem, data['model'])}), hardest first", data["data_kind"],
                "; ".join(f"{d['db_id']} {d['before']['correct']}/{d['before']['tasks']}" for d in data["databases"]))
    if stem.startswith("from-runs-") and "overall" in data and "databases" in data:
        o, c = data["overall"], data["config"]
        per_db = ", ".join(f"{d['db_id']} {len(d['afternoon']['tasks'])} + {d['before']['tasks']}"
                           for d in data["databases"])
        return (f"learning from rated use (`bench_from_runs.py`): per database, an afternoon of draft runs "
                f"({c['votes']} votes, {_model(stem, data['model'])}) rated good or bad against gold and learned "
                f"with `learn --from-runs`, then the next questions before and after `--memory` (afternoon + "
                f"held-out: {per_db}; worked examples at question cosine "
                f"{data.get('experience_min_similarity', 0.0)} or more)", data["data_kind"],
                f"held-out {o['before']['correct']}/{o['heldout_tasks']} → {o['after']['correct']}/"
                f"{o['heldout_tasks']} ({o['delta_points']:+.1f} points; {o['became_right']} became right, "
                f"{o['became_wrong']} wrong); afternoon {o['afternoon_good']} good, {o['afternoon_bad']} bad, "
                f"{o['examples_learned']} examples learned")
    if stem.startswith("install_"):
        return (f"core install (`pip install .`, no extras), {data['ref']}", "-",
                f"{data['site_packages_mb']} MB, {data['distributions']} distributions, "
                f"`import agentkit` {data['import_agentkit_s']} s")
    if stem.startswith("grpo_step"):
        low, high = (f"{f(s['total_s'] for s in data['steps']):.0f}" for f in (min, max))
        return (f"one GRPO step with LoRA on CPU, 2 threads, {data['model']}", "-",
                f"{low if low == high else f'{low}-{high}'} s per step, peak {data['peak_rss_gb']:.1f} GB")
    if stem.startswith("vllm_cpu"):
        dtype = data["command"].split("--dtype ", 1)[1].split()[0] if "--dtype " in data["command"] else "bfloat16"
        return (f"vLLM's CPU build serving SmolLM2-135M in {dtype}: decode, 1 and 8 streams", "-",
                f"{data['decode_1_tok_s']:.1f} / {data['decode_8_tok_s']:.1f} tok/s; "
                f"started in {data['start_s']:.0f} s")
    if stem.startswith("gpu-train"):
        setup, lora, full = data["checks"]["setup"], data["checks"]["lora_step"], data["checks"]["full_step"]
        return (f"GRPO step on {data['env']['gpu']}, random weights, {setup['model']['params_m']:.0f}M parameters",
                "-", f"LoRA {lora['step_s_mean']:.2f} s, full fine-tuning {full['step_s_mean']:.2f} s")
    if stem.startswith("tool-lora") and stem.endswith("train-summary"):
        return (f"tool-LoRA training run: {data['conversations']} conversations, {data['steps']} steps, "
                f"r={data['rank']}", "train", f"{data['minutes']} minutes")
    if stem.startswith("shape-checks"):
        rows = data["rows"]
        return ("would a shape check fire, per learn seed, against each question's gold query (no model)", "dev",
                f"{sum(r['covered'] for r in rows)} fires where the gold has no such clause, "
                f"{sum(r['wrong'] for r in rows)} where it has one")
    if stem == "tool-order-default-a":
        right = data["right_first_tool"]
        return (f"first tool chosen with the tools as given and reversed, set A ({Q05_Q4})", "dev",
                f"right first tool {right['given']}/{data['n']} as given, {right['reversed']}/{data['n']} reversed")
    if stem in ("transfer-vllm-memory-45m-seed0", "refusal-seed0"):
        sets = data["sets"]
        engine = "a vLLM server" if data["model"].startswith("vllm") else "llama.cpp"
        return (f"a learning run's artefacts re-evaluated on {engine}, {_model(stem, 'local:default')}", "dev",
                "; ".join(f"{k} {v['successes']}/{v['tasks']}" for k, v in sets.items()))
    if stem == "learn-rl-sft-tool-lora7-45m-seed0":
        before = data["scores"]["before"]
        return ("online rejection-sampling SFT in the learning loop (set aside by validation)", "dev",
                f"held-out {before['successes']}/{before['tasks']} before; {data['note']}")
    if stem.endswith("-artefact"):
        return ("a learned artefact (the file `agentkit learn` writes), kept for the evaluation beside it", "-", "")
    return ("see the file", "-", "")


def generate(results: Path = RESULTS) -> str:
    """The page, from every `*.json` in `results`."""
    files = sorted(results.glob("*.json"))
    capability, evaluations, learning, other = [], [], [], []
    for path in files:
        stem, data = path.stem, json.loads(path.read_text())
        if (row := _capability(stem, data)) is not None:
            capability.append(row)
        elif (row := _evaluation(stem, data)) is not None:
            evaluations.append(row)
        elif (row := _learning(stem, data)) is not None:
            learning.append(row)
        else:
            what, kind, figures = _other(stem, data)
            other.append((f"`{stem}`", what, kind, figures))
    out = [
        "# Benchmarks",
        "",
        "<!-- Generated by scripts/docs_benchmarks.py from tests/benchmarks/results/*.json: do not edit. -->",
        "",
        "Every figure below is read from a results file in `tests/benchmarks/results/`, and every file there is "
        "listed once. All were measured on a 2-core CPU machine unless a row says otherwise, greedy, one run per "
        "configuration; what each result led to is in [Decisions](decisions.md).",
        "",
        "**What the data is.** Every figure is on **train** data (learned from), **dev** data (failures read, "
        "designs tuned and chosen on it), **test** data (frozen: reported on, its failures never read, no design "
        "chosen by it), or measures speed or size (\"-\"); each row says which. Chinook and clinic are dev "
        "databases: their failures shaped the code.",
        "",
        *_table(("data", "kind", "file", "why that kind"), [(a, b, f"`{c}`", d) for a, b, c, d in DATA]),
        "",
        "**Which model.** A file records the model string it ran. `local:default` has named four different "
        "weights over time (SmolLM2-135M, then the bare Qwen2.5-Coder-0.5B, then the 0.5B with its tool LoRA, "
        "now the 1.5B with its tool LoRA); the model column says which one each file measured.",
        "",
        "## Tool use (sets A and B)",
        "",
        "`tests/benchmarks/bench_capability.py`: right call = the expected tool with the expected arguments; "
        "right answer = the expected value in the final answer; at most 4 model calls per request.",
        "",
        *_table(("file", "model", "set", "tools offered", "right calls", "right answers", "s/request"), capability),
        "",
        "## SQL evaluations",
        "",
        "`agentkit eval --env sql` (react, at most 8 steps unless the file says otherwise). Success = the confirmed "
        "query's result equals the gold query's.",
        "",
        *_table(("file", "model", "tasks (all dev)", "planner", "success", "mean steps", "s/task"), evaluations),
        "",
        "## Learning runs",
        "",
        "`agentkit learn` or `tests/benchmarks/bench_learn.py`: success on the held-out split before and after "
        "learning, and on the clinic (never learned on in these runs). All dev data.",
        "",
        *_table(("file", "model", "methods", "seed", "budget", "held-out before → after", "clinic before → after",
                 "learning minutes"), learning),
        "",
        "## Speed, size and other measurements",
        "",
        *_table(("file", "what", "data", "figures"), other),
        "",
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Write the page, or with --check say whether the committed one is current."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/benchmarks.md is not current")
    args = parser.parse_args(argv)
    text = generate()
    if args.check:
        current = PAGE.read_text() if PAGE.exists() else ""
        if current != text:
            print(f"{PAGE.relative_to(ROOT)} is stale: run python scripts/docs_benchmarks.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text)
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
