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
"""
from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..toy.synthetic_mt import FLAWED_CONTEXT, ROLES, TRAINING_RECORD, TranslationGrammar, build_tokenizer, training_pairs
from ..paths import DATA_DIR
from .adapter import LanguageModel, pretrained, register_loader
from .files import cache_dir

__all__ = ["BUDGETS", "ModelSpec", "TrainSpec", "SHIPPED_DIR", "train_t5_pair", "load_trained_t5", "model_dir",
           "shipped_model_dir", "training_environment", "describe_training"]

#: Where the repository ships trained pairs, in folders named as in the cache (`model_dir`).
SHIPPED_DIR = DATA_DIR / "models"


@dataclass(frozen=True)
class ModelSpec:
    d_model: int
    d_ff: int
    num_layers: int           # encoder layers; the decoder has as many
    num_heads: int
    d_kv: int


@dataclass(frozen=True)
class TrainSpec:
    steps: int
    batch_size: int = 32
    learning_rate: float = 3e-3
    warmup: int = 100
    n_pairs: int = 20000      # training pairs drawn from the train split (repeats allowed)
    seed: int = 0


#: Per budget and role: (model, training). Measured on two cores (one thread): the default drafter
#: (d_model 16, 1 + 1 layers, 10k parameters, 40 s) learns the grammar to BLEU ~73 and stops
#: improving: its capacity, not its steps, limits it (at d_model 24 it reaches ~95, as good as the
#: verifier). The verifier (d_model 128, 2 + 2 layers, 0.8M parameters, 200 s) reaches ~97 outside
#: the flawed context; a third layer each side learned more slowly per second, and the larger model
#: needs the smaller learning rate. "tiny" only checks the plumbing (seconds, no quality).
BUDGETS = {
    "default": {"drafter": (ModelSpec(16, 32, 1, 4, 4), TrainSpec(steps=3000)),
                "verifier": (ModelSpec(128, 256, 2, 4, 32), TrainSpec(steps=3000, learning_rate=1e-3))},
    "tiny": {"drafter": (ModelSpec(16, 32, 1, 2, 8), TrainSpec(steps=20, warmup=5, n_pairs=500)),
             "verifier": (ModelSpec(32, 64, 1, 4, 8), TrainSpec(steps=20, warmup=5, n_pairs=500))},
}


def _config_hash(role: str, budget: str, grammar: TranslationGrammar) -> str:
    model, train = BUDGETS[budget][role]
    key = {"role": role, "grammar": grammar.fingerprint(), "model": asdict(model), "train": asdict(train),
           "format": 2}
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
    """The repository's trained model of `role` and `budget` (same settings hash as `model_dir`), or None."""
    path = SHIPPED_DIR / model_dir(role, budget, cache=".").name
    return path if (path / TRAINING_RECORD).exists() else None


def train_t5_pair(*, budget: str = "default", cache=None, progress: bool = True, retrain: bool = False,
                  shipped: bool = True) -> dict:
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
    versions; `copied_from` in a shipped copy).
    """
    paths = {role: model_dir(role, budget, cache) for role in ROLES}
    for role, path in paths.items():
        record = _read_record(path)
        source = shipped_model_dir(role, budget) if shipped and not retrain else None
        if source is not None:
            if record is None or record.get("copied_from") != source.name:
                _publish(path, lambda partial, source=source: _copy_shipped(source, partial), replace_existing=True)
        elif retrain or record is None or "copied_from" in record:
            _train_one(role, budget, path, progress, replace_existing=True)
    return paths


def describe_training(folders: dict) -> str:
    """Where each model of `train_t5_pair`'s `folders` came from: shipped or trained here, on which processor."""
    here = training_environment()
    lines = []
    for role, folder in folders.items():
        record = _read_record(Path(folder)) or {}
        made = record.get("trained_with", {})
        where = f"{made.get('processor', 'an unrecorded processor')} ({', '.join(made.get('vector_units', [])) or '-'}; torch {made.get('torch', '?')})"
        if "copied_from" in record:
            text = f"{role}: the repository's shipped model (data/models/{record['copied_from']}), trained on {where}"
            if made and (made.get("vector_units"), made.get("torch")) != (here["vector_units"], here["torch"]):
                text += "; this machine's vector units or torch differ, so training here may give other weights"
        else:
            text = f"{role}: trained on this machine in {record.get('train_seconds', '?')} s, on {where}"
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
    (partial / TRAINING_RECORD).write_text(json.dumps({**record, "copied_from": source.name}, indent=2) + "\n")


def training_environment() -> dict:
    """What training's floating-point sums depend on: the processor, its widest vector units, the libraries."""
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
    return {"processor": processor, "machine": platform.machine(), "vector_units": vector_units,
            "torch": torch.__version__, "transformers": transformers.__version__}


def load_trained_t5(role: str, budget: str = "default", *, dtype=None, device="cpu", cache=None, device_map=None,
                    max_memory=None):
    """The T5 of `role` that `train_t5_pair(budget=budget)` trained, as an engine model; never trains.

    `load_model("synthetic-t5-drafter[:budget]")` calls this. A model not trained yet raises
    `FileNotFoundError` naming the call that trains it (`train_t5_pair`), so loading never starts a
    training run as a side effect. `device_map` / `max_memory` go to `from_pretrained` (`adapter.pretrained`).
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
            f"({'seconds' if budget == 'tiny' else 'a few minutes'}), then load it again.")
    model = pretrained(T5ForConditionalGeneration, path, dtype=dtype or torch.float32, device=device,
                       device_map=device_map, max_memory=max_memory)
    name = f"synthetic-t5-{role}" + ("" if budget == "default" else f":{budget}")
    return LanguageModel(model, AutoTokenizer.from_pretrained(path), name=name)


def _train_one(role: str, budget: str, final: Path, progress: bool, replace_existing: bool) -> None:
    import torch
    from tqdm.auto import tqdm
    from transformers import T5Config, T5ForConditionalGeneration
    spec, train = BUDGETS[budget][role]
    grammar, tokenizer = TranslationGrammar(), build_tokenizer()
    vocab = tokenizer.get_vocab()
    pairs = [([vocab[w] for w in s.split()] + [1], [vocab[w] for w in t.split()] + [1])
             for s, t, _ in training_pairs(role, train.n_pairs, train.seed, grammar)]
    config = T5Config(vocab_size=len(tokenizer), d_model=spec.d_model, d_ff=spec.d_ff, d_kv=spec.d_kv,
                      num_layers=spec.num_layers, num_decoder_layers=spec.num_layers, num_heads=spec.num_heads,
                      feed_forward_proj="gated-gelu", dropout_rate=0.0, decoder_start_token_id=0,
                      pad_token_id=0, eos_token_id=1, tie_word_embeddings=False)
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
            torch.nn.init.normal_(model.lm_head.weight, 0.0, spec.d_model ** -0.5)
            optimiser = torch.optim.AdamW(model.parameters(), lr=train.learning_rate, weight_decay=0.0)
            # linear warm-up, then linear decay to zero: the last steps polish rather than jump
            schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda s: min(
                (s + 1) / train.warmup, max(0.0, (train.steps - s) / max(1, train.steps - train.warmup))))
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
    record = {"role": role, "budget": budget, "parameters": sum(p.numel() for p in model.parameters()),
              "train_seconds": round(time.perf_counter() - start, 1), "final_loss": loss.item(),
              "model": asdict(spec), "train": asdict(train), "flawed_context": FLAWED_CONTEXT if role == "verifier" else None,
              "trained_with": training_environment()}

    def write(partial: Path) -> None:
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
        (partial / TRAINING_RECORD).write_text(json.dumps(record, indent=2) + "\n")
    _publish(final, write, replace_existing)


def _publish(final: Path, write, replace_existing: bool) -> None:
    """`write(folder)` into a folder beside `final`, then rename it: a reader never sees a half-written model."""
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
