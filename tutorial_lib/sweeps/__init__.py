r"""The harness: tasks x configurations, run and kept (priced by `stats.pricing`).

- `configs`    - tasks and configurations, the paper's curves, `sweep_configs` (checked when built).
- `identity`   - a configuration's identity: the exact values that name its numbers in its key and in a
  sweep's hash, whatever last bits a processor computed.
- `evaluation` - resumable sweeps (`run_sweep`), their rows and models.
- `sweep_folders` - where a sweep's rows live: its folder named by a hash, the models it records.
- `rows_file`  - a sweep's `rows.jsonl` (a cut or malformed line is kept aside or named, never silently
  dropped).
- `reruns`     - the profiles (hub / offline / smoke ...) of the T5 and Gemma-style reruns.
- `rerun_profiles` - the profile tables `reruns` reads: each profile's settings, alpha placements, hub
  datasets.
- `processes`  - a sweep split over processes (`accelerate launch`): each runs its share into its own rows
  file.
- `launch`     - the command line that runs a rerun profile's sweep, split over the processes it is launched
  as.
- `result_files` - a run's result files stamped with their inputs and SHA-256, checked before they are shown,
  and rewritten only where a value changes beyond 1e-9.
"""

import importlib

__all__ = [
    "configs",
    "evaluation",
    "identity",
    "launch",
    "processes",
    "rerun_profiles",
    "reruns",
    "result_files",
    "rows_file",
    "sweep_folders",
]


def __getattr__(name: str):
    if name in __all__:  # a module of this wing, loaded on first use
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}; its modules: {', '.join(__all__)}")
