r"""The harness: tasks x configurations, run, kept and priced.

- `evaluation` - tasks, configurations and resumable sweeps (`run_sweep`).
- `rows_file`  - a sweep's `rows.jsonl` (a cut or malformed line is kept aside or named, never silently dropped).
- `reruns`     - the profiles (hub / offline / smoke ...) of the T5 and Gemma-style reruns.
- `pricing`    - a sweep's rows priced from their counted calls with its stored calibration.
"""
import importlib

__all__ = ['evaluation', 'rows_file', 'reruns', 'pricing']


def __getattr__(name: str):
    if name in __all__:  # a module of this wing, loaded on first use
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}; its modules: {', '.join(__all__)}")
