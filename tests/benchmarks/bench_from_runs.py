"""Learning from rated use (`agentkit learn --from-runs`): an afternoon of rated runs on a database, and the next
day's held-out questions on that database without and with what was learned.

    python tests/benchmarks/bench_from_runs.py --split dev                       # 3 databases, 40 + 20 questions
    python tests/benchmarks/bench_from_runs.py --split dev --db-ids home_care --afternoon 20 --heldout 10
    python tests/benchmarks/bench_from_runs.py --split dev --dbs 1 --afternoon 3 --heldout 2 --out /tmp/smoke.json
    python tests/benchmarks/bench_from_runs.py --split dev --no-spare            # the task file's 30 questions only
    python tests/benchmarks/bench_from_runs.py --split dev --dbs 11 --before-only # how hard each database's next day is

Per database of the generated SQL task set's split (`--dbs` first ones in the split's order, or `--db-ids`).
The task file holds 30 questions per database; by default (`--spare`) the next day's questions are the last
`--heldout` of them, in order, and the afternoon is the database's other task-file questions followed by its
spare questions (`agentkit.sql.taskgen.spare_questions`: further checked questions over the same data that no
split scores, the build's own candidates less the task file's, written to DATA/DB.spares.jsonl), up to
`--afternoon`; so 40 + 20 fit. Before use, a spare is dropped from the afternoon when its question is a close
paraphrase of a held-out question (cosine of the packaged all-MiniLM-L6-v2 embeddings, L2-normalised, at
least `--max-similarity`, default 0.9) or its gold SQL is a held-out question's once whitespace and case are
normalised. Each database's report records under "spares" the spares available, used and dropped (with the
held-out question each one was too close to) and, for the held-out questions, each one's highest similarity
to any afternoon question (their max and median). `--no-spare`: the task file alone, the afternoon its first
`--afternoon` questions and the next day the next `--heldout`.

1. the afternoon: its `--afternoon` questions (above), each one run of the agent `agentkit sql` is (the draft
   planner, `--votes` drafts voting by their results, the CREATE TABLEs shown up front: `--schema tables`;
   built as `bench_sql_split.py` builds its draft configuration), greedy. Each run is logged to a JSONL
   trajectory log as an application logs it (without the gold scores) and rated by a simulated user with
   `agentkit.feedback.rate`: good when the run's confirmed query returned the gold query's result (the
   environment's execution match, the check every SQL evaluation scores with), bad otherwise (a run with no
   answer too), never with a reason;
2. learning: `agentkit.memory.from_runs.learn_from_runs([log], DIR, db=DATABASE)`, the default methods;
3. the next day: its `--heldout` questions (above; disjoint from the afternoon's), run twice with the same
   configuration: without memory ("before") and with DIR attached as `--memory DIR` attaches it
   (`agentkit.cli.memory_options.learned_extensions`) ("after").

With spares, a database with too few spares left has a shorter afternoon (marked short); with `--no-spare`
a database with fewer than afternoon + held-out questions (the engine writes 30 per database) is split in
the same proportion. The counts used are printed and written. Reports, per database and pooled: before
and after correct counts, accuracy with Wilson 95 % intervals, the change in points, the held-out tasks that
flipped each way with what their "after" run was shown (the worked example ids, from the runs' EXPERIENCE
records, attributed as `agentkit learn` attributes its flips), the afternoon's good and bad ratings, and
minutes per phase. Writes `--out` (default tests/benchmarks/results/from-runs-SPLIT[-LABEL].json, with the
split's kind as "data_kind") and prints a Markdown table; the logs, learned folders and held-out
trajectories go to DATA/from-runs/SPLIT[-LABEL]/DB/.

`--before-only` runs the next day's questions without memory and nothing else, to find the databases whose
held-out questions the agent finds hard before choosing where to measure learning: per database the same
"before" the full benchmark makes (the same plan and configuration, greedy), hardest first; written to
results/from-runs-SPLIT[-LABEL]-before.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentkit.sql.extract import query_key

sys.path.insert(0, str(Path(__file__).parent))
from bench_sql_split import config_factory, split_environment, summarise, wilson

RESULTS = Path(__file__).parent / "results"
CONFIG = "draft"
MAX_SIMILARITY = 0.9
"""A spare whose question is this close (MiniLM cosine) to a held-out question, or closer, is not used."""

Similarity = Callable[[list[str], list[str]], Any]
"""Cosine similarity matrix of two lists of texts (`Embedder.similarity`)."""


@dataclass(frozen=True)
class Options:
    """How every run of the benchmark is made: the draft configuration's drafts and steps, tasks at once, and the
    worked examples' question-cosine floor learning saves (None: `Experience`'s)."""

    votes: int = 5
    max_steps: int = 8
    concurrency: int = 2
    min_similarity: float | None = None


def by_database(tasks: Sequence[Any]) -> dict[str, list[Any]]:
    """The split's tasks grouped by database, databases and tasks in the split's order."""
    out: dict[str, list[Any]] = {}
    for t in tasks:
        out.setdefault(str(t.data.get("db_id") or t.data.get("db")), []).append(t)
    return out


def split_database(tasks: Sequence[Any], afternoon: int, heldout: int) -> tuple[list[Any], list[Any]]:
    """The afternoon (the first `afternoon` tasks) and the next day (the next `heldout`); a database with fewer
    than both is split in the same proportion (at least one task on each side when it has two)."""
    n = len(tasks)
    if n >= afternoon + heldout:
        first = afternoon
    else:
        first = round(n * afternoon / (afternoon + heldout)) if afternoon + heldout else 0
        if heldout and n > 1:
            first = min(first, n - 1)
        if afternoon:
            first = max(first, 1)
    return list(tasks[:first]), list(tasks[first:first + heldout])


@dataclass(frozen=True)
class Plan:
    """One database's afternoon and held-out tasks; `questions`: how many it had to draw from; `spares`: how
    its spare questions were used and checked (`with_spares`), None without spares."""

    afternoon: list[Any]
    heldout: list[Any]
    questions: int
    spares: dict[str, Any] | None = None


def minilm_similarity(a: list[str], b: list[str]) -> Any:
    """Cosine similarity matrix of two lists of texts by the packaged all-MiniLM-L6-v2 (offline)."""
    from agentkit.memory.embeddings import Embedder

    return Embedder.default().similarity(a, b)


def with_spares(frozen: Sequence[Any], spares: Sequence[Any], afternoon: int, heldout: int, *,
                max_similarity: float = MAX_SIMILARITY, similarity: Similarity | None = None) -> Plan:
    """A database's plan with spare questions: held out, the last `heldout` of its task-file tasks `frozen`, in
    order; the afternoon, its other task-file tasks then its `spares`, up to `afternoon` in all. A spare is
    dropped first when its question's similarity to a held-out question's is at least `max_similarity`
    (`similarity`: the packaged MiniLM's cosine by default) or its gold SQL is a held-out one's once whitespace
    and case are normalised. The plan's `spares` records the spares available, used and dropped (with the
    held-out question each was closest to) and each held-out question's highest similarity to any
    afternoon question (max and median over the held-out set)."""
    similar = similarity or minilm_similarity
    n_held = min(heldout, len(frozen))
    held = list(frozen[len(frozen) - n_held:])
    first = list(frozen[:len(frozen) - n_held])[:afternoon]
    held_q = [str(t.data["question"]) for t in held]
    held_sql = {query_key(str(t.data["gold_sql"])): t.id for t in held}
    paraphrases: list[dict[str, Any]] = []
    same_sql: list[dict[str, Any]] = []
    kept: list[Any] = []
    if spares and held:
        sims = similar([str(t.data["question"]) for t in spares], held_q)
        index = {t.id: k for k, t in enumerate(held)}
        for i, spare in enumerate(spares):
            j = max(range(len(held)), key=lambda k: float(sims[i][k]))
            twin = held_sql.get(query_key(str(spare.data["gold_sql"])))
            if float(sims[i][j]) < max_similarity and twin is not None:
                j = index[twin]
            near = {"id": spare.id, "question": spare.data["question"], "heldout": held[j].id,
                    "heldout_question": held_q[j], "similarity": round(float(sims[i][j]), 4)}
            if float(sims[i][j]) >= max_similarity:
                paraphrases.append({**near, "why": "paraphrase"})
            elif twin is not None:
                same_sql.append({**near, "why": "same SQL"})
            else:
                kept.append(spare)
    else:
        kept = list(spares)
    used = kept[:max(afternoon - len(first), 0)]
    day = first + used
    nearest: list[float] = []
    if held and day:
        sims = similar(held_q, [str(t.data["question"]) for t in day])
        nearest = [max(float(v) for v in row) for row in sims]
    check = {
        "available": len(spares), "used": len(used), "used_ids": [t.id for t in used],
        "dropped_paraphrase": len(paraphrases), "dropped_same_sql": len(same_sql),
        "dropped": paraphrases + same_sql, "unused": len(kept) - len(used), "max_similarity": max_similarity,
        "heldout_nearest_afternoon": {"max": round(max(nearest), 4) if nearest else None,
                                      "median": round(statistics.median(nearest), 4) if nearest else None},
        "method": "cosine of the packaged all-MiniLM-L6-v2 question embeddings (L2-normalised) between every "
                  "spare and every held-out question, the spare dropped at max_similarity or more; and gold "
                  "SQL compared with whitespace and case normalised; heldout_nearest_afternoon: each held-out "
                  "question's highest cosine to any afternoon question (task-file and spare)",
    }
    return Plan(day, held, len(frozen) + len(kept), check)


def user_view(trajectory: Any) -> Any:
    """The run as an application logs it: the environment's gold scores removed (the user has no gold)."""
    seen = trajectory.model_copy(deep=True)
    seen.rewards, seen.reward = {}, None
    return seen


def run_afternoon(env: Any, tasks: Sequence[Any], model: Any, log: Path, options: Options,
                  tick: Callable[[Any], None] | None = None) -> tuple[Any, dict[str, str]]:
    """Run each afternoon task once, log it and rate it good exactly when it matched the gold result; returns
    the evaluation and each task's rating ("good", "bad", or "error" for a run that raised: nothing to rate)."""
    from agentkit.evaluation import EvalConfig, evaluate
    from agentkit.feedback import rate
    from agentkit.trajectory import append_jsonl

    build = config_factory(CONFIG, env, model, max_steps=options.max_steps, votes=options.votes)
    run = evaluate(env, EvalConfig("afternoon", build), tasks=list(tasks), concurrency=options.concurrency,
                   on_result=tick)
    ratings: dict[str, str] = {}
    for result in run.results:
        trajectory = run.trajectories.get(result.task_id)
        if trajectory is None:
            ratings[result.task_id] = "error"
            continue
        seen = user_view(trajectory)
        append_jsonl(log, seen)  # the run as it finished, then rated (the chat's /good, /bad)
        rate(seen, good=result.success, log=log)
        ratings[result.task_id] = "good" if result.success else "bad"
    return run, ratings


def evaluation(env: Any, tasks: Sequence[Any], model: Any, label: str, log: Path, options: Options,
               learned: Sequence[Any] = (), tick: Callable[[Any], None] | None = None) -> Any:
    """The held-out tasks under the draft configuration, with the `learned` extensions attached."""
    from agentkit.evaluation import EvalConfig, evaluate

    build = config_factory(CONFIG, env, model, max_steps=options.max_steps, votes=options.votes, learned=learned)
    return evaluate(env, EvalConfig(label, build), tasks=list(tasks), concurrency=options.concurrency, log=log,
                    on_result=tick)


def _minutes(since: float) -> float:
    return round((time.perf_counter() - since) / 60, 3)


def _score(run: Any, tasks: Sequence[Any], minutes: float, on: str) -> dict[str, Any]:
    summary = summarise(run, list(tasks))
    summary.update(minutes=minutes, on=on)
    return summary


def _span(split: str, db: str, tasks: Sequence[Any], what: str) -> str:
    ids = [t.id for t in tasks]
    return f"{split}: {db}, {len(ids)} {what}" + (f" ({ids[0]} .. {ids[-1]})" if ids else "")


def flips_with_shown(before: Any, after: Any, runs: dict[str, Any], examples: dict[str, Any]) -> list[dict[str, Any]]:
    """The tasks whose outcome changed between the `Score`s `before` and `after` (`flipped`), each with what its
    "after" run (`runs`, by task id) was shown."""
    from agentkit.records import EXPERIENCE
    from agentkit.training.learning.report import flipped

    out = []
    for flip in flipped(before, after, runs):
        trajectory = runs.get(flip.task)
        record = trajectory.records.get(EXPERIENCE) if trajectory is not None else None
        shown = [{"id": s.id, "from_task": examples[s.id].task_id if s.id in examples else None,
                  "question": s.question, "question_similarity": s.question_similarity,
                  "skeleton_similarity": s.skeleton_similarity, "other_database": s.other_database}
                 for s in (record.shown if record is not None else [])]
        out.append({**flip.model_dump(mode="json"), "shown": shown})
    return out


def run_database(env: Any, db_id: str, afternoon: Sequence[Any], heldout: Sequence[Any], model: Any,
                 model_name: str, work: Path, *, options: Options, split: str, questions: int,
                 asked: tuple[int, int], tick: Callable[[str], Callable[[Any], None]] | None = None,
                 spares: dict[str, Any] | None = None) -> dict[str, Any]:
    """The afternoon, learning and the next day on one database (see the module); `work` is emptied first and
    receives the afternoon's log, the learned folder and the held-out trajectories; `questions`: how many the
    database has, `asked`: the afternoon and held-out sizes asked for; `spares`: how spare questions filled
    the afternoon (`Plan.spares`), written as the report's "spares". Returns its report."""
    from agentkit.cli.memory_options import learned_extensions, memory_model
    from agentkit.memory.experience import Experience
    from agentkit.memory.from_runs import learn_from_runs
    from agentkit.training.learning.report import Score

    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    database = str((afternoon or heldout)[0].data["db"])  # the file the split's tasks name
    minutes: dict[str, float] = {}
    log, learned = work / "afternoon.jsonl", work / "learned"

    t0 = time.perf_counter()
    day, ratings = run_afternoon(env, afternoon, model, log, options, tick and tick(f"{db_id} afternoon"))
    minutes["afternoon"] = _minutes(t0)
    afternoon_score = _score(day, afternoon, minutes["afternoon"],
                             _span(split, db_id, afternoon, "afternoon questions, run once each and rated"))

    t0 = time.perf_counter()
    if log.exists():
        summary = learn_from_runs([log], learned, db=database,
                                  min_similarity=options.min_similarity).model_dump(mode="json")
    else:  # every afternoon run raised: nothing was logged, nothing learned
        summary = {"runs": 0, "admitted": [], "examples": 0, "artefacts": {}}
    minutes["learn"] = _minutes(t0)

    on = _span(split, db_id, heldout, "held-out questions (none run in the afternoon)")
    t0 = time.perf_counter()
    before = evaluation(env, heldout, model, "before", work / "before.jsonl", options,
                        tick=tick and tick(f"{db_id} before"))
    minutes["before"] = _minutes(t0)
    attached: list[Any] = []
    if learned.is_dir():  # as `--memory DIR` attaches it: its extensions, and the model with no adapter
        attached = learned_extensions(learned)
        if memory_model(model_name, learned) != model_name:
            raise ValueError(f"{learned} keeps an adapter for {model_name}: not what --from-runs learns")
    t0 = time.perf_counter()
    try:
        after = evaluation(env, heldout, model, "after", work / "after.jsonl", options, learned=attached,
                           tick=tick and tick(f"{db_id} after"))
    finally:
        for extension in attached:
            close = getattr(extension, "close", None)
            if callable(close):
                close()
    minutes["after"] = _minutes(t0)

    scores = {label: Score.of(label, r, minutes=minutes[label], tokens=sum(x.tokens for x in r.results))
              for label, r in (("before", before), ("after", after))}
    examples = ({e.id: e for e in Experience.load(learned / "experience.json").examples}
                if (learned / "experience.json").exists() else {})
    flips = flips_with_shown(scores["before"], scores["after"], after.trajectories, examples)
    b, a, n = scores["before"].successes, scores["after"].successes, len(heldout)
    return {
        "db_id": db_id, "database": database, "questions": questions,
        "asked": {"afternoon": asked[0], "heldout": asked[1]},
        "short": len(afternoon) < asked[0] or len(heldout) < asked[1], "spares": spares,
        "afternoon": {"tasks": [t.id for t in afternoon], "good": sum(v == "good" for v in ratings.values()),
                      "bad": sum(v == "bad" for v in ratings.values()),
                      "errors": sum(v == "error" for v in ratings.values()), "ratings": ratings,
                      "matched_gold": afternoon_score["correct"], "no_answer": afternoon_score["no_answer"],
                      "seconds_per_task": afternoon_score["seconds_per_task"], "log": str(log),
                      "on": afternoon_score["on"]},
        "learned": {"folder": str(learned), "runs": summary.get("runs", 0), "admitted": summary.get("admitted", []),
                    "not_admitted": summary.get("not_admitted", {}), "notes": summary.get("notes", []),
                    "examples": summary.get("examples", 0), "artefacts": summary.get("artefacts", {})},
        "before": _score(before, heldout, minutes["before"], on),
        "after": _score(after, heldout, minutes["after"], on),
        "delta_points": round(100 * (a - b) / n, 1) if n else 0.0,
        "flips": flips, "became_right": sum(f["became"] == "right" for f in flips),
        "became_wrong": sum(f["became"] == "wrong" for f in flips),
        "minutes": minutes,
    }


def run_before(env: Any, plans: Mapping[str, Plan], model: Any, work: Path, *, options: Options, split: str,
               tick: Callable[[str], Callable[[Any], None]] | None = None) -> list[dict[str, Any]]:
    """Each planned database's held-out questions without memory (the full benchmark's "before", trajectories
    under `work/DB/before.jsonl`), hardest first: its `db_id` and score."""
    rows = []
    for db, p in plans.items():
        (work / db).mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        before = evaluation(env, p.heldout, model, "before", work / db / "before.jsonl", options,
                            tick=tick and tick(f"{db} before"))
        rows.append({"db_id": db, "before": _score(before, p.heldout, _minutes(t0), _span(
            split, db, p.heldout, "held-out questions, without memory"))})
    return sorted(rows, key=lambda r: (r["before"]["accuracy"], r["db_id"]))


def pooled(databases: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Held-out counts over every database, with Wilson intervals, the change in points, flips and minutes."""
    n = sum(d["before"]["tasks"] for d in databases)
    before = sum(d["before"]["correct"] for d in databases)
    after = sum(d["after"]["correct"] for d in databases)
    phases = ("afternoon", "learn", "before", "after")
    return {
        "databases": len(databases), "heldout_tasks": n,
        "afternoon_runs": sum(len(d["afternoon"]["tasks"]) for d in databases),
        "afternoon_good": sum(d["afternoon"]["good"] for d in databases),
        "afternoon_bad": sum(d["afternoon"]["bad"] for d in databases),
        "examples_learned": sum(d["learned"]["examples"] for d in databases),
        "spares_used": sum((d.get("spares") or {}).get("used", 0) for d in databases),
        "spares_dropped_paraphrase": sum((d.get("spares") or {}).get("dropped_paraphrase", 0) for d in databases),
        "before": {"correct": before, "tasks": n, "accuracy": round(before / n, 4) if n else 0.0,
                   "wilson95": wilson(before, n)},
        "after": {"correct": after, "tasks": n, "accuracy": round(after / n, 4) if n else 0.0,
                  "wilson95": wilson(after, n)},
        "delta_points": round(100 * (after - before) / n, 1) if n else 0.0,
        "became_right": sum(d["became_right"] for d in databases),
        "became_wrong": sum(d["became_wrong"] for d in databases),
        "minutes": {p: round(sum(d["minutes"][p] for d in databases), 3) for p in phases},
    }


def plan_split(env: Any, db_ids: Sequence[str], afternoon: int, heldout: int, *,
               spares: Mapping[str, Sequence[Any]] | None = None, max_similarity: float = MAX_SIMILARITY,
               similarity: Similarity | None = None) -> dict[str, Plan]:
    """Each database's plan, in the order of `db_ids`: with `spares` (database -> its spare tasks), the
    task file's last questions held out and spares filling the afternoon (`with_spares`); without, the task
    file split by `split_database`. Raises ValueError naming a database the environment's tasks do not have."""
    groups = by_database(env.tasks())
    unknown = [d for d in db_ids if d not in groups]
    if unknown:
        raise ValueError(f"not databases of the task set: {', '.join(unknown)} (it has {', '.join(groups)})")
    if spares is None:
        return {db: Plan(*split_database(groups[db], afternoon, heldout), len(groups[db])) for db in db_ids}
    return {db: with_spares(groups[db], spares.get(db, ()), afternoon, heldout, max_similarity=max_similarity,
                            similarity=similarity) for db in db_ids}


def spare_tasks(data: Path, db_ids: Sequence[str]) -> dict[str, list[Any]]:
    """Each database's spare questions (`agentkit.sql.taskgen.spare_questions` over the split built in `data`)
    as tasks the split's environment runs and scores: written to DATA/DB.spares.jsonl beside the split's task
    files and loaded from there, so their database paths are the split's own."""
    from agentkit.environments.sql import load_tasks
    from agentkit.sql.taskgen import spare_questions
    from agentkit.sql.taskgen.domains import ALL_DOMAINS

    domains = {d.name: d for d in ALL_DOMAINS}
    out: dict[str, list[Any]] = {}
    for db in db_ids:
        path = data / f"{db}.spares.jsonl"
        records = spare_questions(domains[db], data)
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        out[db] = load_tasks(path) if records else []
    return out


def run_benchmark(env: Any, db_ids: Sequence[str], model: Any, model_name: str, work: Path, *, afternoon: int,
                  heldout: int, options: Options, split: str,
                  tick: Callable[[str], Callable[[Any], None]] | None = None,
                  spares: Mapping[str, Sequence[Any]] | None = None, max_similarity: float = MAX_SIMILARITY,
                  plan: Mapping[str, Plan] | None = None) -> dict[str, Any]:
    """The benchmark on the databases `db_ids` of `env`'s tasks (`plan`, or `plan_split` with `spares` and
    `max_similarity`): each database's report (`run_database`, working under `work/DB`) and the pooled figures."""
    plans = plan if plan is not None else plan_split(env, db_ids, afternoon, heldout, spares=spares,
                                                      max_similarity=max_similarity)
    databases = [run_database(env, db, p.afternoon, p.heldout, model, model_name, work / db, options=options,
                              split=split, questions=p.questions, asked=(afternoon, heldout), tick=tick,
                              spares=p.spares)
                 for db, p in ((db, plans[db]) for db in db_ids)]
    return {"databases": databases, "overall": pooled(databases)}


def _pct(score: dict[str, Any]) -> str:
    low, high = score["wilson95"]
    return f"{score['correct']}/{score['tasks']} ({100 * score['accuracy']:.0f}%, {100 * low:.0f}-{100 * high:.0f})"


def markdown(report: dict[str, Any]) -> str:
    """The per-database and pooled table, then the flips with what their runs were shown."""
    head = ("database", "afternoon good / bad", "examples", "held-out", "before (95 % CI)", "after (95 % CI)",
            "Δ points", "flips + / −", "minutes: afternoon / learn / before / after")
    rows = [head, tuple("---" for _ in head)]

    def minutes(m: dict[str, float]) -> str:
        return " / ".join(f"{m[p]:.1f}" for p in ("afternoon", "learn", "before", "after"))

    for d in report["databases"]:
        rows.append((d["db_id"] + (" (short)" if d["short"] else ""), f"{d['afternoon']['good']} / "
                     f"{d['afternoon']['bad']}", str(d["learned"]["examples"]), str(d["before"]["tasks"]),
                     _pct(d["before"]), _pct(d["after"]), f"{d['delta_points']:+.1f}",
                     f"{d['became_right']} / {d['became_wrong']}", minutes(d["minutes"])))
    o = report["overall"]
    rows.append(("**all**", f"{o['afternoon_good']} / {o['afternoon_bad']}", str(o["examples_learned"]),
                 str(o["heldout_tasks"]), _pct(o["before"]), _pct(o["after"]), f"{o['delta_points']:+.1f}",
                 f"{o['became_right']} / {o['became_wrong']}", minutes(o["minutes"])))
    lines = ["| " + " | ".join(r) + " |" for r in rows]
    flips = [(d["db_id"], f) for d in report["databases"] for f in d["flips"]]
    if flips:
        lines += ["", "Flipped held-out tasks (what the \"after\" run was shown):"]
        for _db, f in flips:
            shown = ", ".join(f"{s['id']} (from {s['from_task']})" for s in f["shown"]) or "nothing learned"
            lines.append(f"- {f['task']}: became {f['became']}; shown {shown}"
                         + (f"; its query {f['use']}" if f.get("use") else ""))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("train", "dev", "test"), default="dev")
    parser.add_argument("--dbs", type=int, default=3, help="the split's first N databases")
    parser.add_argument("--db-ids", nargs="+", default=None, help="these databases of the split instead")
    parser.add_argument("--afternoon", type=int, default=40, help="rated runs per database")
    parser.add_argument("--heldout", type=int, default=20, help="next-day questions per database")
    parser.add_argument("--spare", action=argparse.BooleanOptionalAction, default=True,
                        help="hold out the task file's last questions and fill the afternoon with the rest and "
                             "spare questions (default); --no-spare: the task file's first and next questions")
    parser.add_argument("--max-similarity", type=float, default=MAX_SIMILARITY,
                        help="drop a spare this close (MiniLM cosine) to a held-out question, or closer")
    parser.add_argument("--model", default="local:default")
    parser.add_argument("--votes", type=int, default=5, help="drafts that vote by their results")
    parser.add_argument("--schema", default="tables", help="shown up front: tables (default), digest, full, hidden")
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--min-similarity", type=float, default=None,
                        help="question cosine below which a worked example is not shown (default: Experience's)")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--data", type=Path, default=Path("bench-out/sqlgen"), help="where the split is built")
    parser.add_argument("--label", default="", help="suffix of the results file and work folder names")
    parser.add_argument("--before-only", action="store_true",
                        help="only the held-out questions without memory, per database, hardest first")
    parser.add_argument("--out", type=Path, default=None, help="results file (default results/from-runs-SPLIT.json)")
    args = parser.parse_args()
    if args.afternoon < 1 or args.heldout < 1:
        parser.error("--afternoon and --heldout must be at least 1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from agentkit.memory.experience import MIN_SIMILARITY
    from agentkit.models import resolve_model
    from agentkit.sql.taskgen import build_tasks

    build_tasks(args.data, splits=(args.split,))
    env = split_environment(args.data, args.split, args.schema)
    groups = by_database(env.tasks())
    chosen = args.db_ids or list(groups)[:args.dbs]
    unknown = [d for d in chosen if d not in groups]
    if unknown:
        parser.error(f"{args.split} split: not databases of the task set: {', '.join(unknown)}")
    spares = spare_tasks(args.data, chosen) if args.spare else None
    try:
        plan = plan_split(env, chosen, args.afternoon, args.heldout, spares=spares,
                          max_similarity=args.max_similarity)
    except ValueError as exc:
        parser.error(f"{args.split} split: {exc}")
    for db, p in plan.items():
        short = len(p.afternoon) < args.afternoon or len(p.heldout) < args.heldout
        if p.spares is None:
            print(f"{db}: {len(groups[db])} questions; afternoon {len(p.afternoon)} (the first), held-out "
                  f"{len(p.heldout)} (the next)"
                  + (f" (fewer than {args.afternoon} + {args.heldout}: split in that proportion)" if short else ""),
                  flush=True)
            continue
        c, near = p.spares, p.spares["heldout_nearest_afternoon"]
        print(f"{db}: held-out {len(p.heldout)} (the task file's last of {len(groups[db])}); afternoon "
              f"{len(p.afternoon)} = {len(p.afternoon) - c['used']} task-file + {c['used']} spare (of "
              f"{c['available']}; dropped {c['dropped_paraphrase']} as paraphrases at cosine >= "
              f"{args.max_similarity}, {c['dropped_same_sql']} with a held-out's SQL); held-out's nearest "
              f"afternoon question: max {near['max']}, median {near['median']}"
              + (f" (short of {args.afternoon} + {args.heldout})" if short else ""), flush=True)

    def tick(name: str) -> Callable[[Any], None]:
        def show(result: Any) -> None:
            print(f"  [{name}] {'ok ' if result.success else '-- '} {result.task_id} {result.wall_s:.1f}s", flush=True)

        return show

    options = Options(votes=args.votes, max_steps=args.max_steps, concurrency=args.concurrency,
                      min_similarity=args.min_similarity)
    suffix = f"-{args.label}" if args.label else ""
    started = time.strftime("%Y-%m-%d %H:%M")
    t0 = time.perf_counter()
    model = resolve_model(args.model, parallel=args.concurrency)
    work = args.data / "from-runs" / f"{args.split}{suffix}"
    try:
        if args.before_only:
            rows = run_before(env, plan, model, work.with_name(work.name + "-before"), options=options,
                              split=args.split, tick=tick)
        else:
            result = run_benchmark(env, chosen, model, args.model, work, afternoon=args.afternoon,
                                   heldout=args.heldout, options=options, split=args.split, tick=tick, plan=plan)
    finally:
        close = getattr(model, "close", None)
        if callable(close):
            close()
        env.close()
    config = {"planner": CONFIG, "votes": args.votes, "schema": args.schema, "max_steps": args.max_steps,
              "temperature": 0.0, "concurrency": args.concurrency}
    if args.before_only:
        out = args.out or RESULTS / f"from-runs-{args.split}{suffix}-before.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({
            "benchmark": "from-runs", "before_only": True, "split": args.split, "data_kind": args.split,
            "model": args.model, "config": config, "heldout_per_db": args.heldout, "spare": args.spare,
            "data": f"{args.split} split: each database's "
                    + ("last task-file questions" if args.spare else "questions after its first --afternoon")
                    + ", without memory (the full benchmark's 'before')",
            "machine_cores": os.cpu_count(), "started": started, "wall_minutes": _minutes(t0), "databases": rows,
        }, indent=1) + "\n")
        for r in rows:
            print(f"{r['db_id']}: {_pct(r['before'])}, {r['before']['minutes']:.1f} min")
        print(f"written {out}")
        return 0
    report: dict[str, Any] = {
        "benchmark": "from-runs", "split": args.split, "data_kind": args.split, "model": args.model,
        "config": config,
        "afternoon_per_db": args.afternoon, "heldout_per_db": args.heldout, "spare": args.spare,
        "max_similarity": args.max_similarity if args.spare else None,
        "experience_min_similarity": MIN_SIMILARITY if args.min_similarity is None else args.min_similarity,
        "data": {
            "afternoon": (f"{args.split} split: each database's task-file questions not held out, then its spare "
                          "questions (agentkit.sql.taskgen.spare_questions, never scored by any split) less those "
                          "within max_similarity of a held-out question or with its SQL (databases[].spares)"
                          if args.spare else f"{args.split} split: each database's first questions")
                         + " (the afternoon counts in databases[].afternoon), each run once and rated by the "
                           "simulated user against its gold result; learned from, not scored again",
            "before, after, delta_points, flips": f"{args.split} split: each database's "
                                                  + ("last task-file questions" if args.spare else "next questions")
                                                  + " (databases[].before.outcomes), none of them run in the "
                                                  "afternoon; the same tasks before and after",
            "overall": "the held-out questions of every database, pooled",
        },
        "machine_cores": os.cpu_count(), "started": started, "wall_minutes": _minutes(t0), **result,
    }
    out = args.out or RESULTS / f"from-runs-{args.split}{suffix}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(markdown(report))
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
