r"""The small T5 drafter and verifier of the synthetic translation task (`toy.synthetic_mt`), trained offline.

The paper's T5 experiments fine-tune T5-small and T5-large on WMT; here two `T5ForConditionalGeneration`
models of very different sizes (`BUDGETS`) are trained in minutes on the toy language, whose correct
translations are known exactly. The verifier's corpus lost its negations on purpose (see
`toy.synthetic_mt`), so it is better on average and worse in one context.

`train_t5_pair(budget=...)` puts both into the cache once; `load_trained_t5` loads one as an engine
model and never trains.

**Shipped weights.** Training is seeded and runs on one thread, so on one machine it gives the same
weights every time; but torch's CPU kernels choose their code paths, and so the order of their
floating-point sums, by the processor, so another processor can train other weights (two machines of
this project did, with the same torch and transformers). The committed T5
rows are keyed by a hash of the weights, so the default budget's pair that produced them is shipped in
the repository (`SHIPPED_DIR`, 3.3 MB), and `train_t5_pair` copies it into the cache instead of
training (`shipped=False` trains here). Each model's `training_record.json` names the processor, torch
and transformers it was trained with. This module registers the aliases `synthetic-t5-drafter[:budget]` and
`synthetic-t5-verifier[:budget]` with `adapter.load_model`.

**Checked files.** `SHIPPED_DIR/shipped_sha256.json` (`SHIPPED_HASHES`) records the SHA-256 of every file
of each shipped model (all but `training_record.json`); a model trained here records its own in its
`training_record.json` (`files`). The shipped folder is checked before it is copied, the cache's copy on
every `train_t5_pair`, `load_trained_t5` and `describe_training`: a changed, missing or added file raises
`ModelFilesDiffer`, naming the file, both hashes and the repair (`train_t5_pair(..., repair=True)`, or git
for the shipped folder), rather than loading other weights under the same names.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

from ..toy.synthetic_mt import (
    FLAWED_CONTEXT,
    ROLES,
    TRAINING_RECORD,
    TranslationGrammar,
    build_tokenizer,
    training_pairs,
)
from ..paths import DATA_DIR
from .adapter import pretrained, register_loader
from .language_model import LanguageModel
from .files import cache_dir

__all__ = [
    "BUDGETS",
    "ModelSpec",
    "TrainSpec",
    "SHIPPED_DIR",
    "SHIPPED_HASHES",
    "ModelFilesDiffer",
    "train_t5_pair",
    "load_trained_t5",
    "model_dir",
    "shipped_model_dir",
    "training_environment",
    "describe_training",
    "model_file_hashes",
    "verify_model",
    "record_shipped_hashes",
]

#: Where the repository ships trained pairs, in folders named as in the cache (`model_dir`).
SHIPPED_DIR = DATA_DIR / "models"
#: In `SHIPPED_DIR`: `{folder: {file: sha256}}` of the shipped models (`record_shipped_hashes`).
SHIPPED_HASHES = "shipped_sha256.json"


class ModelFilesDiffer(RuntimeError):
    """A T5 model folder whose files are not those recorded for it (changed, missing or added)."""


@dataclass(frozen=True)
class ModelSpec:
    d_model: int
    d_ff: int
    num_layers: int  # encoder layers; the decoder has as many
    num_heads: int
    d_kv: int


@dataclass(frozen=True)
class TrainSpec:
    steps: int
    batch_size: int = 32
    learning_rate: float = 3e-3
    warmup: int = 100
    n_pairs: int = 20000  # training pairs drawn from the train split (repeats allowed)
    seed: int = 0


#: Per budget and role: (model, training). Measured on two cores (one thread): the default drafter
#: (d_model 16, 1 + 1 layers, 10k parameters, 40 s) learns the grammar to BLEU ~73 and stops
#: improving: its capacity, not its steps, limits it (at d_model 24 it reaches ~95, as good as the
#: verifier). The verifier (d_model 128, 2 + 2 layers, 0.8M parameters, 200 s) reaches ~97 outside
#: the flawed context; a third layer each side learned more slowly per second, and the larger model
#: needs the smaller learning rate. "tiny" only checks the plumbing (seconds, no quality).
BUDGETS = {
    "default": {
        "drafter": (ModelSpec(16, 32, 1, 4, 4), TrainSpec(steps=3000)),
        "verifier": (ModelSpec(128, 256, 2, 4, 32), TrainSpec(steps=3000, learning_rate=1e-3)),
    },
    "tiny": {
        "drafter": (ModelSpec(16, 32, 1, 2, 8), TrainSpec(steps=20, warmup=5, n_pairs=500)),
        "verifier": (ModelSpec(32, 64, 1, 4, 8), TrainSpec(steps=20, warmup=5, n_pairs=500)),
    },
}


def _config_hash(role: str, budget: str, grammar: TranslationGrammar) -> str:
    model, train = BUDGETS[budget][role]
    key = {
        "role": role,
        "grammar": grammar.fingerprint(),
        "model": asdict(model),
        "train": asdict(train),
        "format": 2,
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=list).encode()).hexdigest()[:10]


def model_dir(role: str, budget: str = "default", cache=None) -> Path:
    """Where `train_t5_pair` keeps the model of `role` trained with `budget`."""
    if budget not in BUDGETS:
        raise ValueError(f"budget={budget!r} is unknown; use one of {', '.join(BUDGETS)}.")
    if role not in ROLES:
        raise ValueError(f"role={role!r} is unknown; use 'drafter' or 'verifier'.")
    root = Path(cache).expanduser() if cache is not None else cache_dir()
    return root / "models" / f"synthetic-t5-{role}-{_config_hash(role, budget, TranslationGrammar())}"


def shipped_model_dir(role: str, budget: str = "default"):
    """The repository's trained model of `role` and `budget` (same settings hash as `model_dir`), or None.
    A folder the hashes file lists counts even when files are gone, so a damaged checkout is reported
    (`verify_model`) rather than trained over."""
    path = SHIPPED_DIR / model_dir(role, budget, cache=".").name
    return path if (path / TRAINING_RECORD).exists() or path.name in _shipped_hashes() else None


def model_file_hashes(folder) -> dict:
    """`{file: sha256}` of a model folder's files, all but `training_record.json` (which a copy rewrites)."""
    folder = Path(folder)
    if not folder.is_dir():
        return {}
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.iterdir())
        if path.is_file() and path.name != TRAINING_RECORD
    }


def _shipped_hashes() -> dict:
    try:
        return json.loads((SHIPPED_DIR / SHIPPED_HASHES).read_text())
    except (OSError, ValueError):
        return {}


def record_shipped_hashes() -> Path:
    """Write `SHIPPED_HASHES` from the model folders now in `SHIPPED_DIR`: run it once when a pair is
    shipped (or replaced on purpose), never to make a changed file pass."""
    hashes = {
        folder.name: model_file_hashes(folder)
        for folder in sorted(SHIPPED_DIR.iterdir())
        if (folder / TRAINING_RECORD).exists()
    }
    path = SHIPPED_DIR / SHIPPED_HASHES
    path.write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
    return path


def _differences(expected: dict, found: dict) -> list:
    lines = []
    for name in sorted(set(expected) | set(found)):
        if name not in found:
            lines.append(f"{name}: missing (expected sha256 {expected[name]})")
        elif name not in expected:
            lines.append(f"{name}: not a file of this model (found sha256 {found[name]})")
        elif expected[name] != found[name]:
            lines.append(f"{name}: expected sha256 {expected[name]}, found {found[name]}")
    return lines


def _repair_call(budget: str, cache, **extra) -> str:
    options = "".join(f", {key}={value!r}" for key, value in extra.items())
    where = "" if cache is None or Path(cache) == cache_dir() else f", cache={str(cache)!r}"
    return f"tutorial_lib.models.synthetic_t5.train_t5_pair(budget={budget!r}{where}{options})"


def _check_shipped(source: Path) -> dict:
    """The shipped folder's hashes, or `ModelFilesDiffer` naming what differs and how to restore it."""
    expected = _shipped_hashes().get(source.name)
    found = model_file_hashes(source)
    if not expected:
        differ = [f"{SHIPPED_HASHES} in {SHIPPED_DIR} records no hashes for {source.name}"]
    else:
        differ = _differences(expected, found)
    if differ:
        raise ModelFilesDiffer(
            f"The repository's shipped model {source} is not the one recorded in "
            f"{SHIPPED_DIR / SHIPPED_HASHES}:\n  "
            + "\n  ".join(differ)
            + "\nNothing was copied, trained or loaded. Restore it from git: "
            f"`git -C {SHIPPED_DIR} checkout -- {source.name}` (or train a pair here on purpose with "
            "train_t5_pair(shipped=False): other weights, so a new sweep)."
        )
    return found


def verify_model(folder, record=None) -> dict:
    """The cached model in `folder` checked against its recorded hashes: the shipped ones for a copy
    (`copied_from`), its own `training_record.json`'s for a model trained here. Returns its hashes;
    `ModelFilesDiffer` (with the call that repairs it) where a file differs, is missing or was added."""
    folder = Path(folder)
    record = _read_record(folder) if record is None else record
    if record is None:
        raise ModelFilesDiffer(
            f"{folder} has no readable {TRAINING_RECORD}, so its model cannot be checked. "
            f"Repair: delete the folder and call train_t5_pair again."
        )
    budget = record.get("budget", "default")
    cache = folder.parent.parent
    found = model_file_hashes(folder)
    if "copied_from" in record:
        expected = _shipped_hashes().get(record["copied_from"])
        what = f"a copy of the repository's shipped data/models/{record['copied_from']}"
        differ = (
            [f"{SHIPPED_HASHES} records no shipped model {record['copied_from']!r}"]
            if not expected
            else _differences(expected, found)
        )
        if record["copied_from"] != folder.name:  # the other shipped model passes its own hashes
            differ.insert(0, f"{TRAINING_RECORD} says it copies {record['copied_from']!r}, another model")
        repair = (
            f"{_repair_call(budget, cache, repair=True)} copies the shipped model into the cache again "
            f"(or delete {folder} and call {_repair_call(budget, cache)})"
        )
    else:
        expected = record.get("files")
        what = "a model trained on this machine"
        differ = (
            [
                f"{TRAINING_RECORD} records no hashes of the model's files (not written by this "
                "version's train_t5_pair)"
            ]
            if not isinstance(expected, dict) or not expected
            else _differences(expected, found)
        )
        repair = (
            f"{_repair_call(budget, cache, shipped=False, repair=True)} trains it again "
            f"(minutes; or delete {folder})"
        )
    if differ:
        raise ModelFilesDiffer(
            f"The model in {folder} is not the one it is recorded as ({what}):\n  "
            + "\n  ".join(differ)
            + f"\nIt is not loaded (other weights would run under the same name). Repair: {repair}."
        )
    return found


def train_t5_pair(
    *,
    budget: str = "default",
    cache=None,
    progress: bool = True,
    retrain: bool = False,
    shipped: bool = True,
    repair: bool = False,
) -> dict:
    """Put the drafter and the verifier into the cache; returns `{role: folder}`.

    `shipped=True`: where the repository ships a model of the same settings (`shipped_model_dir`), the
    cache holds a copy of it (copied in seconds, also over a model trained here earlier): the weights of
    the committed rows. Else, and with `shipped=False`, the cache holds a model trained on this machine
    (minutes, once; a shipped copy in the cache is replaced by one trained here). `retrain=True` trains
    here even over a cached model trained here.
    `cache` is the cache root (default `files.cache_dir()`, i.e. `$TUTORIAL_LIB_CACHE`);
    models go to `<cache>/models/synthetic-t5-<role>-<hash of grammar, model and training>`.
    Each folder holds a `save_pretrained` T5 and its tokenizer, loadable with
    `T5ForConditionalGeneration.from_pretrained` / `AutoTokenizer.from_pretrained`, and
    `training_record.json` (parameters, wall time, settings, `trained_with`: the processor and library
    versions; `copied_from` in a shipped copy; `files`, the SHA-256 of each file, in a model trained here).

    Every file is checked against its recorded hash (`verify_model`; the shipped folder against
    `SHIPPED_HASHES` before it is copied): a difference raises `ModelFilesDiffer` and nothing is retrained
    or copied over it unless `repair=True`, which replaces a cached model that fails the check (a fresh copy
    of the shipped one, else trained again). A model trained here by a version that recorded no hashes is
    trained again.
    """
    paths = {role: model_dir(role, budget, cache) for role in ROLES}
    for role, path in paths.items():
        record = _read_record(path)
        source = shipped_model_dir(role, budget) if shipped and not retrain else None
        if source is not None:
            _check_shipped(source)
            stale = record is None or record.get("copied_from") != source.name
            if stale or (repair and not _passes(path, record)):
                _publish(
                    path, lambda partial, source=source: _copy_shipped(source, partial), replace_existing=True
                )
        elif retrain or record is None or "copied_from" in record or (repair and not _passes(path, record)):
            _train_one(role, budget, path, progress, replace_existing=True)
        elif "files" not in record:
            warnings.warn(f"{path} was trained here before model files were hashed: training it again.")
            _train_one(role, budget, path, progress, replace_existing=True)
        verify_model(path)
    return paths


def _passes(folder: Path, record: dict) -> bool:
    try:
        verify_model(folder, record)
    except ModelFilesDiffer:
        return False
    return True


def describe_training(folders: dict) -> str:
    """Where each model of `train_t5_pair`'s `folders` came from: shipped or trained here, on which
    processor, with its weights' SHA-256. Each is checked first (`verify_model`): a model whose files are
    not the recorded ones raises `ModelFilesDiffer` rather than being described as what it claims to be."""
    here = training_environment()
    lines = []
    for role, folder in folders.items():
        record = _read_record(Path(folder))
        hashes = verify_model(folder, record)
        weights = f"model.safetensors sha256 {hashes.get('model.safetensors', '?')[:16]}"
        made = record.get("trained_with", {})
        where = (
            f"{made.get('processor', 'an unrecorded processor')} "
            f"({', '.join(made.get('vector_units', [])) or '-'}; torch {made.get('torch', '?')})"
        )
        if "copied_from" in record:
            text = (
                f"{role}: the repository's shipped model (data/models/{record['copied_from']}, "
                f"{weights}, as recorded), trained on {where}"
            )
            if made and (made.get("vector_units"), made.get("torch")) != (
                here["vector_units"],
                here["torch"],
            ):
                text += (
                    "; this machine's vector units or torch differ, so training here may give other weights"
                )
        else:
            text = (
                f"{role}: trained on this machine in {record.get('train_seconds', '?')} s, on {where}; "
                f"its own weights ({weights}), not the shipped ones"
            )
        lines.append(text)
    return "\n".join(lines)


def _read_record(folder: Path):
    try:
        return json.loads((folder / TRAINING_RECORD).read_text())
    except (OSError, ValueError):
        return None


def _copy_shipped(source: Path, partial: Path) -> None:
    shutil.copytree(source, partial, dirs_exist_ok=True)
    record = json.loads((source / TRAINING_RECORD).read_text())
    (partial / TRAINING_RECORD).write_text(
        json.dumps({**record, "copied_from": source.name}, indent=2) + "\n"
    )


def training_environment() -> dict:
    """What training's floating-point sums depend on: the processor, its widest vector units, the
    libraries."""
    import platform
    import torch
    import transformers

    processor, flags = platform.processor() or platform.machine(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                processor = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
                break
    except OSError:  # not Linux: the platform's name is all there is
        pass
    vector_units = [f for f in ("avx512f", "avx512_bf16", "avx2", "fma", "neon", "asimd") if f in flags]
    return {
        "processor": processor,
        "machine": platform.machine(),
        "vector_units": vector_units,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }


def load_trained_t5(
    role: str,
    budget: str = "default",
    *,
    dtype=None,
    device="cpu",
    cache=None,
    device_map=None,
    max_memory=None,
):
    """The T5 of `role` that `train_t5_pair(budget=budget)` trained, as an engine model; never trains.

    `load_model("synthetic-t5-drafter[:budget]")` calls this. A model not trained yet raises
    `FileNotFoundError` naming the call that trains it (`train_t5_pair`), so loading never starts a
    training run as a side effect; one whose files differ from their recorded hashes raises
    `ModelFilesDiffer` (`verify_model`) with the call that repairs it. `device_map` / `max_memory` go to
    `from_pretrained` (`adapter.pretrained`).
    """
    from transformers import AutoTokenizer, T5ForConditionalGeneration
    import torch

    path = model_dir(role, budget, cache)
    if not (path / TRAINING_RECORD).exists():
        suffix = "" if budget == "default" else f":{budget}"
        raise FileNotFoundError(
            f"synthetic-t5-{role}{suffix} is not trained yet (no model in {path}). Train the pair once with "
            f"tutorial_lib.models.synthetic_t5.train_t5_pair(budget={budget!r})"
            f"{'' if cache is None else f', cache={str(cache)!r}'} "
            f"({'seconds' if budget == 'tiny' else 'a few minutes'}), then load it again."
        )
    verify_model(path)  # before transformers reads it: a missing file says how to repair, not a bare OSError
    model = pretrained(
        T5ForConditionalGeneration,
        path,
        dtype=dtype or torch.float32,
        device=device,
        device_map=device_map,
        max_memory=max_memory,
    )
    name = f"synthetic-t5-{role}" + ("" if budget == "default" else f":{budget}")
    return LanguageModel(model, AutoTokenizer.from_pretrained(path), name=name)


def _train_one(role: str, budget: str, final: Path, progress: bool, replace_existing: bool) -> None:
    import torch
    from tqdm.auto import tqdm
    from transformers import T5Config, T5ForConditionalGeneration

    spec, train = BUDGETS[budget][role]
    grammar, tokenizer = TranslationGrammar(), build_tokenizer()
    vocab = tokenizer.get_vocab()
    pairs = [
        ([vocab[w] for w in s.split()] + [1], [vocab[w] for w in t.split()] + [1])
        for s, t, _ in training_pairs(role, train.n_pairs, train.seed, grammar)
    ]
    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=spec.d_model,
        d_ff=spec.d_ff,
        d_kv=spec.d_kv,
        num_layers=spec.num_layers,
        num_decoder_layers=spec.num_layers,
        num_heads=spec.num_heads,
        feed_forward_proj="gated-gelu",
        dropout_rate=0.0,
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=1,
        tie_word_embeddings=False,
    )
    threads = torch.get_num_threads()
    # One thread: these models are small, so on an idle two-core machine two threads gain at most
    # a third of the time, and when another process holds a core they lose ten times over (every
    # operator waits for a descheduled thread). One thread also fixes the order of floating-point
    # sums, so a seed gives the same model however busy the machine is.
    torch.set_num_threads(1)
    start = time.perf_counter()
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(train.seed)
            model = T5ForConditionalGeneration(config)
            # T5 initialises an untied output layer with standard deviation 1, made for the tied
            # layout that scales the decoder output by d_model ** -0.5 first; unscaled, the first
            # logits are huge (about sqrt(d_model)) and the larger model learns markedly slower.
            torch.nn.init.normal_(model.lm_head.weight, 0.0, spec.d_model**-0.5)
            optimiser = torch.optim.AdamW(model.parameters(), lr=train.learning_rate, weight_decay=0.0)
            # linear warm-up, then linear decay to zero: the last steps polish rather than jump
            schedule = torch.optim.lr_scheduler.LambdaLR(
                optimiser,
                lambda s: min(
                    (s + 1) / train.warmup, max(0.0, (train.steps - s) / max(1, train.steps - train.warmup))
                ),
            )
            order = torch.Generator().manual_seed(train.seed)
            model.train()
            for _ in tqdm(range(train.steps), desc=f"training the {role} ({budget})", disable=not progress):
                batch = [pairs[i] for i in torch.randint(len(pairs), (train.batch_size,), generator=order)]
                inputs, labels = _padded([s for s, _ in batch], 0), _padded([t for _, t in batch], -100)
                loss = model(input_ids=inputs, attention_mask=(inputs != 0).long(), labels=labels).loss
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimiser.step()
                schedule.step()
                optimiser.zero_grad()
        model.eval()
    finally:
        torch.set_num_threads(threads)
    record = {
        "role": role,
        "budget": budget,
        "parameters": sum(p.numel() for p in model.parameters()),
        "train_seconds": round(time.perf_counter() - start, 1),
        "final_loss": loss.item(),
        "model": asdict(spec),
        "train": asdict(train),
        "flawed_context": FLAWED_CONTEXT if role == "verifier" else None,
        "trained_with": training_environment(),
    }

    def write(partial: Path) -> None:
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
        hashes = model_file_hashes(partial)  # of what was saved, before the record joins them
        (partial / TRAINING_RECORD).write_text(json.dumps({**record, "files": hashes}, indent=2) + "\n")

    _publish(final, write, replace_existing)


def _publish(final: Path, write, replace_existing: bool) -> None:
    """`write(folder)` into a folder beside `final`, then rename it: a reader never sees a half-written
    model."""
    final.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{final.name}.partial-", dir=final.parent))
    try:
        write(partial)
        if replace_existing or not (final / TRAINING_RECORD).exists():  # else a concurrent run finished first
            if final.exists():  # an unfinished folder, or one to replace
                shutil.rmtree(final)
            partial.rename(final)
    except OSError:
        if not (final / TRAINING_RECORD).exists():
            raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _padded(rows: list, pad: int):
    import torch

    out = torch.full((len(rows), max(map(len, rows))), pad, dtype=torch.long)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.tensor(row)
    return out


def _synthetic_t5_loader(role: str):
    def load(suffix, dtype, device, **placement):
        # the suffix is a training budget
        lm = load_trained_t5(role, budget=suffix or "default", dtype=dtype, device=device, **placement)
        lm.name = f"synthetic-t5-{role}" + (f":{suffix}" if suffix else "")  # the name sweeps are keyed by
        return lm

    return load


for _role in ROLES:
    register_loader(f"synthetic-t5-{_role}", _synthetic_t5_loader(_role))
