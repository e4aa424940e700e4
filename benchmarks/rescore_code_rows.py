"""Does the rewritten code judge give any committed code row a different score?

Reads every `data/results/*/rows.jsonl`, keeps the rows of the code tasks ("humaneval" and "code"),
finds each row's task example in `tutorial_lib.tasks.tasksets.offline_task(task)` (by the example's "id"
= the row's "example_id"), and scores each unique reply, de-duplicated over (task, example_id, text)
since many configurations give the same text, with `tutorial_lib.tasks.metrics.score(task["metric"],
text, example)`: the judge of today (`tutorial_lib.tasks.judge`, `tutorial_lib.tasks.sandbox`). Every row
whose committed "quality" differs from the new score is listed; for each differing reply the judge's
reason comes from re-running it through `tutorial_lib.tasks.sandbox.run_python` the way
`metrics.humaneval_pass` / `metrics.code_pass` call it (`--reruns` times, so that a verdict that flips
between runs, such as a timeout under load, shows as such).

Written: the count of rows and unique replies per results folder and task, the seconds taken, and every
mismatching row (folder, task, example_id, config, committed and new quality, the reply's first 300
characters, the judge's reasons).

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


def judge_result(task_name: str, text: str, example: dict):
    """The `SandboxResult` behind `metrics.score` for one reply: the calls `metrics.humaneval_pass` and
    `metrics.code_pass` make, with the same arguments (default sandbox limits)."""
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
        return run_python(
            solution_code, list(info["tests"]), prompt_code=prompt_code, entry_point=info["entry_point"]
        )
    tests, setup, entry_point = metrics._code_problem_fields(example)
    return run_python(metrics.extract_code(text, entry_point), tests, setup=setup, entry_point=entry_point)


def _same(committed, new) -> bool:
    if not isinstance(committed, (int, float)) or not isinstance(new, (int, float)):
        return False
    return abs(float(committed) - float(new)) <= 1e-9


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

    unique = list(dict.fromkeys((row["task"], row["example_id"], row["text"]) for row in rows))
    if args.limit is not None:
        unique = unique[: args.limit]
        kept = set(unique)
        rows = [row for row in rows if (row["task"], row["example_id"], row["text"]) in kept]

    new_scores: dict[tuple, float | None] = {}
    errors: dict[tuple, str] = {}
    scoring_started = time.monotonic()
    for key in tqdm(unique, desc="scoring unique replies", mininterval=5):
        task_name, example_id, text = key
        try:
            new_scores[key] = metrics.score(
                task_sets[task_name]["metric"], text, examples[task_name][example_id]
            )
        except SandboxUnavailableError:
            raise
        except Exception as error:  # a scorer that raises is a finding of its own, not the end of the run
            new_scores[key], errors[key] = None, f"{type(error).__name__}: {error}"
    scoring_s = time.monotonic() - scoring_started

    mismatched_keys = list(
        dict.fromkeys(
            (r["task"], r["example_id"], r["text"])
            for r in rows
            if not _same(r["quality"], new_scores[(r["task"], r["example_id"], r["text"])])
        )
    )
    reasons: dict[tuple, list[dict]] = {}
    for key in tqdm(mismatched_keys, desc="judge reasons of mismatches"):
        task_name, example_id, text = key
        runs = []
        for _ in range(max(1, args.reruns)):
            try:
                result = judge_result(task_name, text, examples[task_name][example_id])
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
        reasons[key] = runs

    counts: dict[str, dict[str, dict]] = defaultdict(dict)
    per_group = defaultdict(list)
    for row in rows:
        per_group[(row["folder"], row["task"])].append(row)
    for (folder, task_name), group in sorted(per_group.items()):
        keys = [(r["task"], r["example_id"], r["text"]) for r in group]
        differing = [r for r, k in zip(group, keys) if not _same(r["quality"], new_scores[k])]
        counts[folder][task_name] = {
            "rows": len(group),
            "unique_replies": len(set(keys)),
            "mismatched_rows": len(differing),
            "mismatched_unique_replies": len({(r["task"], r["example_id"], r["text"]) for r in differing}),
        }

    mismatches = []
    for row in rows:
        key = (row["task"], row["example_id"], row["text"])
        if _same(row["quality"], new_scores[key]):
            continue
        mismatches.append(
            {
                "folder": row["folder"],
                "task": row["task"],
                "example_id": row["example_id"],
                "config": row["config"],
                "committed_quality": row["quality"],
                "new_quality": new_scores[key],
                "reply_head": row["text"][:REPLY_HEAD],
                "score_error": errors.get(key),
                "judge_runs": reasons.get(key, []),
            }
        )

    summary = {
        "what": __doc__.splitlines()[0],
        "tasks": list(args.tasks),
        "metrics": {name: task["metric"] for name, task in task_sets.items()},
        "limit": args.limit,
        "rows": len(rows),
        "unique_replies": len(unique),
        "unique_replies_by_task": dict(Counter(key[0] for key in unique)),
        "counts": counts,
        "mismatched_rows": len(mismatches),
        "mismatched_unique_replies": len(mismatched_keys),
        "score_errors": len(errors),
        "scoring_s": round(scoring_s, 1),
        "seconds": round(time.monotonic() - started, 1),
        "mismatches": mismatches,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")

    print(
        f"{len(rows)} code rows, {len(unique)} unique replies, scored in {scoring_s:.0f} s "
        f"({summary['seconds']:.0f} s in all)"
    )
    for folder, by_task in counts.items():
        for task_name, c in by_task.items():
            print(
                f"  {folder} {task_name}: {c['rows']} rows, {c['unique_replies']} unique, "
                f"{c['mismatched_rows']} rows / {c['mismatched_unique_replies']} replies differ"
            )
    print(f"{len(mismatches)} rows ({len(mismatched_keys)} unique replies) score differently now")
    for key in mismatched_keys:
        committed = sorted({r["quality"] for r in rows if (r["task"], r["example_id"], r["text"]) == key})
        first = reasons[key][0]["reason"] if reasons.get(key) else errors.get(key)
        print(f"  {key[0]} {key[1]}: committed {committed} -> {new_scores[key]}: {str(first)[:160]}")
    print(f"written: {out}")


if __name__ == "__main__":
    main()
