"""Where a sweep's rows live: the results folder, one folder per run named by a hash of its configuration
(`Sweep`, `sweep_of`), and the models that hash records (`model_identity`, `ModelRecord`, `saved_models`:
a saved run reloads without its models). `evaluation` runs the sweeps and re-exports these names."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import pandas as pd

from .. import paths
from . import rows_file
from .configs import Config, Task, check_run_name
from .identity import canonical, key_of_row
from .processes import Processes

__all__ = ["results_dir", "ModelRecord", "model_identity", "saved_models", "Sweep", "sweep_of"]


def results_dir() -> Path:
    """Where sweeps are saved: `$TUTORIAL_LIB_RESULTS`, else the repository's `data/results/`."""
    if os.environ.get("TUTORIAL_LIB_RESULTS"):
        return Path(os.environ["TUTORIAL_LIB_RESULTS"])
    repo = paths.CHECKOUT
    return (repo if (repo / "pyproject.toml").exists() else Path.cwd()) / "data" / "results"


@dataclass(frozen=True)
class ModelRecord:
    """A model as a sweep's hash records it, standing in for a model that is not loaded: `run_sweep`
    with a pair of records returns the saved rows of that run (the models are needed only for rows
    still missing). Models of up to 20M parameters are recorded with a hash of their weights, so
    their runs can only be reloaded with the models themselves."""

    name: str
    dtype: str = "float32"
    weights: Optional[str] = None
    install: str = ""  # how to get the model, for the error that reports missing rows

    def identity(self) -> dict:
        ident = {"name": self.name, "dtype": self.dtype}
        return ident if self.weights is None else {**ident, "weights": self.weights}


def model_identity(lm) -> dict:
    """What identifies a model in a sweep's hash: its name, dtype and, for models small enough to
    hash quickly, its weights (so rows of a retrained checkpoint are never mixed with older ones)."""
    if isinstance(lm, ModelRecord):
        return lm.identity()
    ident = {"name": lm.name, "dtype": str(lm.dtype).replace("torch.", "")}
    network = getattr(lm, "model", None)
    from ..toy.toyworld import ToyLanguageModel

    if hasattr(network, "parameters") and not isinstance(
        network, ToyLanguageModel
    ):  # the toy world: its name says all
        parameters = list(network.parameters())
        if sum(w.numel() for w in parameters) <= 20_000_000:
            digest = hashlib.sha256()
            for w in parameters:
                digest.update(w.detach().float().cpu().numpy().tobytes())
            ident["weights"] = digest.hexdigest()[:16]
    return ident


def saved_models(
    name: str, *, root: Optional[os.PathLike] = None, extra_config: Optional[dict] = None, install: str = ""
) -> Tuple[ModelRecord, ModelRecord]:
    """The drafter and verifier (as `ModelRecord`s) of a saved sweep `name` whose `extra_config`
    matches, to reload its rows without the models: `run_sweep(saved_models(...), ...)`. Where
    several saved runs match (the same settings with other weights), the one with the most rows."""
    root = Path(root or results_dir())
    wanted = canonical(json.loads(json.dumps(extra_config or {}, sort_keys=True, default=str)))
    found = []
    for config_file in sorted(root.glob(f"{name}-*/config.json")):
        config = json.loads(config_file.read_text())
        if config.get("name") == name and all(canonical(config.get(k)) == v for k, v in wanted.items()):
            size = sum(
                path.stat().st_size
                for path in rows_file.folder_rows_paths(config_file.parent)
                if path.exists()
            )
            found.append((size, config))
    if not found:
        raise FileNotFoundError(
            f"no saved sweep {name!r} with these settings in {root}; run it with the models "
            f"first{f' ({install})' if install else ''}."
        )
    config = max(found, key=lambda item: item[0])[1]
    return ModelRecord(**config["drafter"], install=install), ModelRecord(
        **config["verifier"], install=install
    )


#: What keys a row in its sweep: the same example id may occur in two tasks.
ROW_KEY = ("task", "config", "example_id")


@dataclass
class Sweep:
    """Where one run's rows live: `<results>/<name>-<hash>/{config.json, rows.jsonl}`."""

    name: str
    config: dict
    root: Optional[Path] = None
    #: This process's place among those that run the sweep (None: alone; `run_sweep` sets it).
    processes: Optional[Processes] = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        check_run_name(self.name)
        # floats by their exact values: a profile's float computed with other last bits names this sweep
        blob = json.dumps(
            canonical(json.loads(json.dumps(self.config, default=str))), sort_keys=True
        ).encode()
        self.hash = hashlib.sha256(blob).hexdigest()[:12]
        self.path = Path(self.root or results_dir()) / f"{self.name}-{self.hash}"

    @property
    def rows_path(self) -> Path:
        return self.path / "rows.jsonl"

    def rows_paths(self) -> List[Path]:
        """The folder's rows files: `rows.jsonl`, and `rows.<writer>.jsonl` of processes that each wrote
        their own (a sweep split over processes); read together as one run."""
        if not self.path.is_dir():
            return []
        return rows_file.folder_rows_paths(self.path)

    def load(
        self, *, example_ids: Optional[Dict[str, set]] = None, configs: Sequence["Config"] = ()
    ) -> pd.DataFrame:
        """Every saved row once, from all of the folder's rows files (`rows_paths`). Refused with a
        `rows_file.RowsFileError` naming the file and line: a row written twice with different results,
        and, given `example_ids` (task name -> its example ids), a row for an example its task does not
        have. Each row is read under its configuration's key as `Config.key` writes it today
        (`configs.key_of_row`), whatever form of the key it was saved under."""
        numbered = []
        for path in self.rows_paths():
            numbered += [(path, number, row) for number, row in rows_file.read_numbered_rows(path)]
        for _, _, row in numbered:
            row["config"] = key_of_row(row)
        for path in self.rows_paths():
            rows_file.check_rows([(n, r) for p, n, r in numbered if p == path], path, example_ids=example_ids)
        if len(self.rows_paths()) > 1:  # copies across files must agree too
            rows_file.check_rows(
                [(f"{n} of {p.name}", r) for p, n, r in numbered],
                self.path / "rows*.jsonl",
                example_ids=example_ids,
            )
        rows = rows_file.unique_rows(row for _, _, row in numbered)
        return pd.DataFrame(rows) if rows else pd.DataFrame()

    def done(self, **load_options) -> set:
        """The (task, config key, example id) of every saved row."""
        table = self.load(**load_options)
        return set() if table.empty else set(zip(*(table[k] for k in ROW_KEY)))

    def write_config(self) -> None:
        """Create the folder and its `config.json` (once; written whole, so a process that reads it
        meanwhile never sees half of it)."""
        self.path.mkdir(parents=True, exist_ok=True)
        config_file = self.path / "config.json"
        if not config_file.exists():
            handle, temporary = tempfile.mkstemp(prefix="config.json.", dir=self.path)  # one per writer
            with os.fdopen(handle, "w") as out:
                out.write(
                    json.dumps(
                        {"name": self.name, "hash": self.hash, **self.config},
                        indent=2,
                        sort_keys=True,
                        default=str,
                    )
                )
            os.chmod(temporary, 0o644)  # mkstemp's 0600 would hide the run's settings from other users
            os.replace(temporary, config_file)

    def append(self, rows: Iterable[dict]) -> None:
        """Append rows to the folder's rows file: `rows.jsonl`, or this process's own among several
        (`processes`)."""
        self.write_config()
        name = self.processes.rows_name if self.processes is not None else rows_file.ROWS_NAME
        rows_file.append_rows(self.path / name, rows)


def sweep_of(
    pair,
    tasks: Sequence[Task],
    name: str,
    *,
    runner: str,
    seed: int = 0,
    extra_config: Optional[dict] = None,
    root=None,
) -> Sweep:
    """The `Sweep` (folder and configuration) that `run_sweep` with these arguments reads and writes: a script
    can count its saved rows (`.done()`) before deciding what to measure."""
    drafter, verifier = pair
    return Sweep(
        name,
        {
            "drafter": model_identity(drafter),
            "verifier": model_identity(verifier),
            "seed": seed,
            "runner": runner,
            "tasks": {t.name: t.fingerprint() for t in tasks},
            **(extra_config or {}),
        },
        root,
    )
