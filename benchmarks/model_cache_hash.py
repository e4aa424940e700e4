r"""What the per-load hash of the converted model cache costs, against the load it guards.

`model_files.offline_model_dir` hashes every file of a converted model on every load
(`verify_model_dir`, XXH3-128). Per model and round this times, interleaved and alternating which
goes first: the check alone (`verify_model_dir`), and the load itself
(`AutoModelForCausalLM.from_pretrained(path, dtype=float32)` + `AutoTokenizer.from_pretrained`).
Both read the same bytes, so the page cache is warm for both after the first round; the first
round is reported but left out of the medians. For each model: the median and range over rounds of
the check's milliseconds, the load's seconds, and the check as a fraction of the load; SHA-256 of
the same files (what the check would cost with it) is timed once beside them.

    python benchmarks/model_cache_hash.py                       # every converted offline model, 5 rounds
    # checks the script
    python benchmarks/model_cache_hash.py --models smollm2-135m --rounds 3 --out /tmp/hash
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
from tqdm.auto import tqdm
from transformers import AutoModelForCausalLM, AutoTokenizer

from tutorial_lib.models import files as model_files

REPO = Path(__file__).resolve().parents[1]


def _converted(alias: str) -> Path | None:
    folder = model_files.cache_dir() / "models" / alias
    return folder if model_files._is_finished(folder, model_files._spec(alias)) else None


def _time_check(folder: Path, alias: str) -> float:
    start = time.perf_counter()
    model_files.verify_model_dir(folder, alias)
    return time.perf_counter() - start


def _time_load(folder: Path) -> float:
    start = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    AutoTokenizer.from_pretrained(folder)
    seconds = time.perf_counter() - start
    del model
    return seconds


def _time_sha256(folder: Path) -> float:
    start = time.perf_counter()
    for path in model_files._converted_files(folder):
        model_files._sha256_file(path)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(model_files.OFFLINE_MODELS))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default=str(REPO / "data" / "benchmarks" / "model_cache_hash_cpu"))
    args = parser.parse_args()
    if args.rounds < 2:
        parser.error(f"--rounds={args.rounds}: the first round warms the page cache, so give at least 2")
    summary = {"rounds": args.rounds, "torch_threads": torch.get_num_threads(), "models": {}}
    for alias in args.models.split(","):
        folder = _converted(alias)
        if folder is None:
            print(f"{alias}: not converted here; skipped ({model_files.install_command(alias)})")
            continue
        size = sum(path.stat().st_size for path in model_files._converted_files(folder))
        rounds = []
        for r in tqdm(range(args.rounds), desc=alias):
            if r % 2 == 0:
                check, load = _time_check(folder, alias), _time_load(folder)
            else:
                load, check = _time_load(folder), _time_check(folder, alias)
            rounds.append({"check_ms": 1000 * check, "load_s": load, "fraction": check / load})
        warm = rounds[1:]
        result = {"bytes": size, "rounds": rounds, "sha256_s_once": _time_sha256(folder)}
        for name in ("check_ms", "load_s", "fraction"):
            values = [r[name] for r in warm]
            result[name] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
        summary["models"][alias] = result
        print(
            f"{alias} ({size / 1e6:.0f} MB): check {result['check_ms']['median']:.0f} ms "
            f"[{result['check_ms']['min']:.0f}, {result['check_ms']['max']:.0f}], load "
            f"{result['load_s']['median']:.2f} s "
            f"[{result['load_s']['min']:.2f}, {result['load_s']['max']:.2f}], "
            f"check / load {result['fraction']['median']:.3f} [{result['fraction']['min']:.3f}, "
            f"{result['fraction']['max']:.3f}]; SHA-256 once {result['sha256_s_once']:.2f} s",
            flush=True,
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"wrote {out.with_suffix('.json')}")


if __name__ == "__main__":
    main()
