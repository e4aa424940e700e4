"""Does the rewritten code judge give any committed code row a different score?

Reads every `data/results/*/rows.jsonl`, keeps the rows of the code tasks ("humaneval" and "code"),
finds each row's task example in `tutorial_lib.tasks.tasksets.offline_task(task)` (by the example's "id"
= the row's "example_id"), and scores each unique reply, de-duplicated over (task, example_id, text)
since many configurations give the same text, with today's judge (`tutorial_lib.tasks.judge`,
`tutorial_lib.tasks.sandbox`) in two ways:

- "new": `tutorial_lib.tasks.metrics.score(task["metric"], text, example)` on the raw reply;
- "sweep": the way the sweep scored the row when it made it (`sweeps.reruns` builds each task with
  `postprocess=tasksets.postprocess(task, .)`, and `sweeps.configs.Task.score` cleans the reply with it
  before the metric): `metrics.score(metric, tasksets.postprocess(task, text), example)`. Where both
  ways hand `sandbox.run_python` the same arguments, the sweep score is the new one (not run twice).

Every row whose committed "quality" differs from either score is listed; for each differing reply the
judge's reason comes from re-running it through `tutorial_lib.tasks.sandbox.run_python` the way
`metrics.humaneval_pass` / `metrics.code_pass` call it (`--reruns` times, so that a verdict that flips
between runs, such as a timeout under load, shows as such).

Written: the count of rows and unique replies per results folder and task, the seconds taken, and every
mismatching row (folder, task, example_id, config, committed, new and sweep quality, the reply's first
300 characters, the judge's reasons).

    .venv/bin/python benchmarks/rescore_code_rows.py                       # every code row
    .venv/bin/python benchmarks/rescore_code_rows.py --limit 20 --out /tmp/rescore.json   # checks the script
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter, defaultdict
from pathlib import Path

from tqdm.auto import tqdm

from tutorial_lib.tasks import humaneval, metrics, tasksets
from tutorial_lib.tasks.sandbox import SandboxUnavailableError, run_python

REPO = Path(__file__).resolve().parents[1]
CODE_TASKS = ("humaneval", "code")
REPLY_HEAD = 300
TAIL = 300


def read_rows(results_dir: Path, tasks: tuple[str, ...]) -> list[dict]:
    """The code rows of every `<results_dir>/*/rows.jsonl`, each with its folder's name."""
    rows = []
    for path in sorted(results_dir.glob("*/rows.jsonl")):
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                row = json.loads(line)
                if row.get("task") not in tasks:
                    continue
                if not isinstance(row.get("text"), str):
                    raise ValueError(f"{path}:{number}: the row's text is not a str")
                rows.append(
                    {
                        "folder": path.parent.name,
                        "task": row["task"],
                        "example_id": row["example_id"],
                        "config": row.get("config"),
                        "quality": row.get("quality"),
                        "text": row["text"],
                    }
                )
    return rows


def judge_call(task_name: str, text: str, example: dict) -> tuple[str, tuple[str, ...], tuple]:
    """(code, tests, keyword arguments as sorted pairs): what `metrics.humaneval_pass` ("humaneval") or
    `metrics.code_pass` ("code") hands `sandbox.run_python` for the reply `text`, default limits."""
    if task_name == "humaneval":
        info = example["info"]
        problem = {
            "task_id": info["task_id"],
            "prompt": info["prompt"],
            "entry_point": info["entry_point"],
            "test": "",
        }
        code = metrics.extract_code(text, info["entry_point"])
        if not humaneval.defines(code, info["entry_point"]) and "```" not in text:
            code = text
        prompt_code, solution_code = humaneval.program(problem, code)
        options = {"prompt_code": prompt_code, "entry_point": info["entry_point"]}
        return solution_code, tuple(info["tests"]), tuple(sorted(options.items()))
    tests, setup, entry_point = metrics._code_problem_fields(example)
    options = {"setup": setup, "entry_point": entry_point}
    return metrics.extract_code(text, entry_point), tuple(tests), tuple(sorted(options.items()))


def judge_runs(task_name: str, text: str, example: dict, reruns: int) -> list[dict]:
    """`reruns` verdicts of `run_python` on the reply, with the judge's reason for each."""
    runs = []
    for _ in range(max(1, reruns)):
        try:
            code, tests, options = judge_call(task_name, text, example)
            result = run_python(code, list(tests), **dict(options))
        except SandboxUnavailableError:
            raise
        except Exception as error:
            runs.append({"passed": None, "reason": f"{type(error).__name__}: {error}"})
            continue
        runs.append(
            {
                "passed": result.passed,
                "reason": result.reason,
                "tests_passed": result.tests_passed,
                "tests_total": result.tests_total,
                "timed_out": result.timed_out,
                "returncode": result.returncode,
                "duration_s": round(result.duration_s, 3),
                "stderr_tail": result.stderr_tail[-TAIL:],
            }
        )
    return runs


def _same(committed, new) -> bool:
    if not isinstance(committed, (int, float)) or not isinstance(new, (int, float)):
        return False
    return abs(float(committed) - float(new)) <= 1e-9


def _score(metric: str, text: str, example: dict, errors: list[str]) -> float | None:
    try:
        return metrics.score(metric, text, example)
    except SandboxUnavailableError:
        raise
    except Exception as error:  # a scorer that raises is a finding of its own, not the end of the run
        errors.append(f"{type(error).__name__}: {error}")
        return None


def _same_judge_call(task_name: str, text: str, cleaned: str, example: dict) -> bool:
    try:
        return judge_call(task_name, text, example) == judge_call(task_name, cleaned, example)
    except Exception:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results-dir", default=str(REPO / "data" / "results"))
    parser.add_argument("--tasks", nargs="+", default=list(CODE_TASKS), choices=list(CODE_TASKS))
    parser.add_argument("--out", default=str(REPO / "data" / "benchmarks" / "rescore_code_rows.json"))
    parser.add_argument("--limit", type=int, default=None, help="score only the first N unique replies")
    parser.add_argument("--reruns", type=int, default=2, help="judge runs of each mismatching reply")
    args = parser.parse_args()
    started = time.monotonic()

    rows = read_rows(Path(args.results_dir), tuple(args.tasks))
    task_sets = {name: tasksets.offline_task(name) for name in sorted({row["task"] for row in rows})}
    examples = {
        name: {example["id"]: example for example in task["examples"]} for name, task in task_sets.items()
    }
    missing = sorted(
        {(r["task"], r["example_id"]) for r in rows if r["example_id"] not in examples[r["task"]]}
    )
    if missing:
        raise ValueError(f"{len(missing)} rows name an example their task lacks, e.g. {missing[:3]}")

    def key_of(row: dict) -> tuple[str, str, str]:
        return row["task"], row["example_id"], row["text"]

    unique = list(dict.fromkeys(key_of(row) for row in rows))
    if args.limit is not None:
        unique = unique[: args.limit]
        kept = set(unique)
        rows = [row for row in rows if key_of(row) in kept]

    new_scores: dict[tuple, float | None] = {}
    sweep_scores: dict[tuple, float | None] = {}
    cleaned_of: dict[tuple, str] = {}
    errors: dict[tuple, list[str]] = defaultdict(list)
    sweep_runs = 0
    scoring_started = time.monotonic()
    for key in tqdm(unique, desc="scoring unique replies", mininterval=5):
        task_name, example_id, text = key
        metric, example = task_sets[task_name]["metric"], examples[task_name][example_id]
        new_scores[key] = _score(metric, text, example, errors[key])
        cleaned = cleaned_of[key] = tasksets.postprocess(task_name, text)
        if _same_judge_call(task_name, text, cleaned, example):
            sweep_scores[key] = new_scores[key]
        else:
            sweep_scores[key] = _score(metric, cleaned, example, errors[key])
            sweep_runs += 1
    scoring_s = time.monotonic() - scoring_started
    errors = {key: found for key, found in errors.items() if found}

    def differs(row: dict, scores: dict) -> bool:
        return not _same(row["quality"], scores[key_of(row)])

    new_keys = list(dict.fromkeys(key_of(r) for r in rows if differs(r, new_scores)))
    sweep_keys = list(dict.fromkeys(key_of(r) for r in rows if differs(r, sweep_scores)))
    reasons: dict[tuple, dict[str, list[dict]]] = defaultdict(dict)
    for key in tqdm(list(dict.fromkeys(new_keys + sweep_keys)), desc="judge reasons of mismatches"):
        task_name, example_id, text = key
        example = examples[task_name][example_id]
        reasons[key]["raw_reply"] = judge_runs(task_name, text, example, args.reruns)
        if cleaned_of[key] != text:
            reasons[key]["postprocessed_reply"] = judge_runs(task_name, cleaned_of[key], example, args.reruns)

    counts: dict[str, dict[str, dict]] = defaultdict(dict)
    per_group = defaultdict(list)
    for row in rows:
        per_group[(row["folder"], row["task"])].append(row)
    for (folder, task_name), group in sorted(per_group.items()):
        new_rows = [r for r in group if differs(r, new_scores)]
        sweep_rows = [r for r in group if differs(r, sweep_scores)]
        counts[folder][task_name] = {
            "rows": len(group),
            "unique_replies": len({key_of(r) for r in group}),
            "mismatched_rows_new": len(new_rows),
            "mismatched_unique_replies_new": len({key_of(r) for r in new_rows}),
            "mismatched_rows_sweep": len(sweep_rows),
            "mismatched_unique_replies_sweep": len({key_of(r) for r in sweep_rows}),
        }

    def listing(scores: dict) -> list[dict]:
        return [
            {
                "folder": row["folder"],
                "task": row["task"],
                "example_id": row["example_id"],
                "config": row["config"],
                "committed_quality": row["quality"],
                "new_quality": new_scores[key_of(row)],
                "sweep_quality": sweep_scores[key_of(row)],
                "reply_head": row["text"][:REPLY_HEAD],
                "score_errors": errors.get(key_of(row)),
                "judge_runs": reasons.get(key_of(row), {}),
            }
            for row in rows
            if differs(row, scores)
        ]

    mismatches, sweep_mismatches = listing(new_scores), listing(sweep_scores)
    summary = {
        "what": __doc__.splitlines()[0],
        "tasks": list(args.tasks),
        "metrics": {name: task["metric"] for name, task in task_sets.items()},
        "limit": args.limit,
        "rows": len(rows),
        "unique_replies": len(unique),
        "unique_replies_by_task": dict(Counter(key[0] for key in unique)),
        "sweep_path_judged_apart": sweep_runs,
        "counts": counts,
        "mismatched_rows_new": len(mismatches),
        "mismatched_unique_replies_new": len(new_keys),
        "mismatched_rows_sweep": len(sweep_mismatches),
        "mismatched_unique_replies_sweep": len(sweep_keys),
        "score_errors": len(errors),
        "scoring_s": round(scoring_s, 1),
        "seconds": round(time.monotonic() - started, 1),
        "mismatches": mismatches,
        "sweep_path_mismatches": sweep_mismatches,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")

    print(
        f"{len(rows)} code rows, {len(unique)} unique replies ({sweep_runs} also judged the sweep's way), "
        f"scored in {scoring_s:.0f} s ({summary['seconds']:.0f} s in all); {len(errors)} scorer errors"
    )
    for folder, by_task in counts.items():
        for task_name, c in by_task.items():
            print(
                f"  {folder} {task_name}: {c['rows']} rows, {c['unique_replies']} unique; differ: "
                f"new {c['mismatched_rows_new']} rows / {c['mismatched_unique_replies_new']} replies, "
                f"sweep {c['mismatched_rows_sweep']} rows / {c['mismatched_unique_replies_sweep']} replies"
            )
    for label, keys in (("metrics.score on the raw reply", new_keys), ("the sweep's way", sweep_keys)):
        print(f"{len(keys)} unique replies score differently now ({label})")
        for key in keys:
            committed = sorted({r["quality"] for r in rows if key_of(r) == key})
            runs = reasons[key].get("raw_reply", [])
            first = runs[0]["reason"] if runs else errors.get(key)
            print(
                f"  {key[0]} {key[1]}: committed {committed}, new {new_scores[key]}, "
                f"sweep {sweep_scores[key]}: {str(first)[:140]}"
            )
    print(f"written: {out}")


if __name__ == "__main__":
    main()
