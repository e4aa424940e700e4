r"""Model pairs with one interface: next-token logits for a prefix, over a KV cache that can be cropped.

The engine (`tutorial_lib.decoding.engine`) needs three things from the drafter $q$ and the verifier $p$:

1. `session = model.start(prompt_ids)`: the state of one prompt (for an encoder-decoder model the
   encoder runs here, once per model and prompt);
2. `session.feed(tokens) -> logits` of shape `(n, V)`: row `i` holds the next-token logits after
   `tokens[i]`, computed on top of everything fed before (the KV cache);
3. `session.crop(length)`: forget every fed token from position `length` on, as after a rejected draft.

Speculative decoding feeds $\gamma$ drafted tokens to $p$ in one call and crops the caches at the
first rejection, so each accepted token is fed to each model once. Every session keeps a `feed_log`
of `(position, token)` pairs so tests can check that discipline.

Names `load_model` / `load_pair` accept:

| name | what |
|---|---|
| `smollm2-135m`, `qwen2.5-coder-0.5b`, `qwen2.5-coder-1.5b` | offline GGUF aliases, see `models.files` |
| `tiny-random-llama[:SEED]`, `tiny-random-t5[:SEED]` | small random models built from a config (tests) |
| `toy-drafter`, `toy-verifier` | the default `ToyWorld`'s models, see `models.toy` (or `world.drafter`) |
| `synthetic-t5-drafter[:tiny]`, `synthetic-t5-verifier[:tiny]` | small T5s trained offline (see below) |
| anything else (`google/gemma-2-2b-it`, `t5-small`, ...) | `from_pretrained` from the Hugging Face hub |

and already-loaded `transformers` models (with a tokenizer, or without one if prompts are token ids).
The synthetic T5s (`models.synthetic_t5`) learn `toy.synthetic_mt`'s toy translation task: train them first
with `synthetic_t5.train_t5_pair(budget=...)` (minutes; `"tiny"` takes seconds, for tests).

**A model bigger than one device.** The names loaded by `from_pretrained` (the hub, the offline
aliases, the trained synthetic T5s) also take `device_map` and `max_memory`, passed through to
transformers (`pretrained`): `device_map="auto"` spreads the model's layers over the devices
`max_memory` allows (e.g. `{0: "40GiB", 1: "40GiB", "cpu": "100GiB"}`), so a verifier that fits no
single GPU still runs. Each forward pass then walks through the devices one after another: this
buys memory, not speed (for speed, one model pair per GPU and the sweep split over processes,
`sweeps.processes`). Sessions put their input ids where the model reads them (`LanguageModel.device`:
the input embeddings' device).
Each alias has a loader in `LOADERS` (`register_loader` adds one), a family of names a resolver in
`RESOLVERS` (`register_resolver`); a name that none claims goes to the hub. The backends register
themselves when `tutorial_lib.models` is imported (`files`, `toy`, `synthetic_t5`), so this module
imports none of them.

`LanguageModel` adapts a `transformers` model; `models.toy.ToyModel` adapts the toy world's models.
Both present the same session API, so the engine never asks which one it has. `LanguageModel`, `Session`,
`ModelPair` and `check_compatible` live in `models.language_model`; this module loads models into them
and re-exports them.

A drafter and a verifier must give their token ids the same meaning (speculation compares
$q(x)$ with $p(x)$ id by id): `check_compatible` compares their tokenizers (or the toy world's
words, or the `vocabulary` label of tokenizer-less models). For models without a tokenizer nothing
says what the ids mean, so the user must say they share them: `shared_vocabulary=True`.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from typing import Callable, Dict, List, Optional, Tuple

import torch

from ..checks import check_device
from .language_model import LanguageModel, ModelPair, Prompt
from .language_model import declare_shared_vocabulary as declare_shared_vocabulary

__all__ = [
    "load_model",
    "load_pair",
    "tiny_random_llama",
    "tiny_random_t5",
    "next_token_distributions",
    "perturbed",
    "TINY_VOCAB",
    "register_resolver",
    "register_wrapper",
    "RESOLVERS",
    "WRAPPERS",
    "LOADERS",
    "register_loader",
    "pretrained",
    "PLACEMENT_KEYS",
]

#: Vocabulary of the tiny random models: small enough for exact chi-square tests.
TINY_VOCAB = 16
_DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
}


def _as_dtype(dtype) -> Optional[torch.dtype]:
    if isinstance(dtype, torch.dtype) and not dtype.is_floating_point:
        raise ValueError(
            f"dtype={dtype} is not a floating-point type, and a model's weights need one; use "
            "torch.float32, torch.bfloat16 or torch.float16 (or 'float32', 'bfloat16', "
            "'float16')."
        )
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    if dtype in _DTYPES:
        return _DTYPES[dtype]
    raise ValueError(
        f"dtype={dtype!r} is not understood; use torch.float32, torch.bfloat16 or one of {sorted(_DTYPES)}."
    )


# ---- loading ------------------------------------------------------------------------------


def tiny_random_llama(
    seed: int = 0,
    *,
    vocab_size: int = TINY_VOCAB,
    hidden_size: int = 32,
    n_layers: int = 2,
    logit_scale: float = 2.0,
) -> LanguageModel:
    """A 2-layer LLaMA with random weights from `seed`: any two seeds form a (meaningless) pair."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=n_layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        bos_token_id=0,
        eos_token_id=1,
        pad_token_id=0,
        tie_word_embeddings=False,
    )
    return LanguageModel(
        _seeded(LlamaForCausalLM, config, seed, logit_scale),
        None,
        name=f"tiny-random-llama:{seed}",
        eos_token_id=None,
        vocabulary=f"tiny-random:{vocab_size}",
    )


def tiny_random_t5(
    seed: int = 0,
    *,
    vocab_size: int = TINY_VOCAB,
    d_model: int = 32,
    n_layers: int = 2,
    logit_scale: float = 2.0,
) -> LanguageModel:
    """A small T5 (encoder-decoder) with random weights from `seed`."""
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(
        vocab_size=vocab_size,
        d_model=d_model,
        d_kv=8,
        d_ff=2 * d_model,
        num_layers=n_layers,
        num_decoder_layers=n_layers,
        num_heads=4,
        feed_forward_proj="gated-gelu",
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=1,
        tie_word_embeddings=False,
    )
    return LanguageModel(
        _seeded(T5ForConditionalGeneration, config, seed, logit_scale),
        None,
        name=f"tiny-random-t5:{seed}",
        eos_token_id=None,
        vocabulary=f"tiny-random:{vocab_size}",
    )


def perturbed(model: LanguageModel, noise: float, seed: int = 0) -> LanguageModel:
    """A copy of `model` whose weights get Gaussian noise of `noise` times their own scale.

    The copy agrees with the original often but not always: a drafter that makes rollbacks happen.
    """
    import copy

    if noise < 0:
        raise ValueError(f"noise={noise} must be >= 0 (a relative standard deviation).")
    net = copy.deepcopy(model.model)
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        for weight in net.parameters():
            weight.add_(
                torch.randn_like(weight) * noise * weight.float().std().nan_to_num(0).to(weight.dtype)
            )
    return dataclasses.replace(model, model=net, name=f"{model.name}~{noise}:{seed}", derived_from=model)


def _seeded(cls, config, seed: int, logit_scale: float):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = cls(config)
        # Default initialisation gives nearly uniform next-token laws; logits of standard deviation
        # about `logit_scale` give distinct, peaked laws that make the tests bite.
        head = model.get_output_embeddings().weight
        with torch.no_grad():
            head.normal_(0.0, logit_scale / head.shape[1] ** 0.5)
    return model.eval()


#: alias -> loader(suffix, dtype, device): the text after ':' in the name (or ""), a torch dtype or None.
LOADERS: Dict[str, Callable[[str, Optional[torch.dtype], str], LanguageModel]] = {}


def register_loader(alias: str, loader: Callable[[str, Optional[torch.dtype], str], LanguageModel]) -> None:
    """Make `load_model(alias)` and `load_model(f"{alias}:{suffix}")` call `loader(suffix, dtype, device)`
    (and `device_map=` / `max_memory=` where given: a loader that takes them, or `**placement`, passes
    them to `from_pretrained`, e.g. through `pretrained`; any other refuses them by name)."""
    LOADERS[alias] = loader


#: Functions giving a loader for a whole name (or None), asked in order before `LOADERS` and the hub: names
#: that grow at run time (`files.OFFLINE_MODELS`), a suffix any model takes (`layer_skip`'s `:layers=N`).
RESOLVERS: List[Callable[[str], Optional[Callable]]] = []

#: (type, wrap): `load_model(obj)` of an instance of `type` returns `wrap(obj)` (the toy world's models).
WRAPPERS: List[Tuple[type, Callable[[object], "LanguageModel"]]] = []


def register_resolver(resolver: Callable[[str], Optional[Callable]]) -> None:
    """Ask `resolver(name)` (the whole name, suffix included) for a loader before the aliases of `LOADERS`."""
    RESOLVERS.append(resolver)


def register_wrapper(kind: type, wrap: Callable[[object], "LanguageModel"]) -> None:
    """Make `load_model(obj)` return `wrap(obj)` for an `obj` of type `kind`: how a backend that is not a
    `transformers` model (the toy world's tables) plugs into the engine."""
    WRAPPERS.append((kind, wrap))


def _tiny_random(build):
    def load(suffix, dtype, device):
        if suffix and not suffix.isdigit():
            raise ValueError(
                f"the part after ':' is the tiny random model's seed, a whole number >= 0; got {suffix!r} "
                "(e.g. 'tiny-random-llama:1')."
            )
        lm = build(int(suffix or 0))
        lm.model.to(device=device, dtype=dtype or torch.float32)
        return lm

    return load


#: The placement settings `from_pretrained` takes through `load_model` (None: not set).
PLACEMENT_KEYS = ("device_map", "max_memory")


def pretrained(cls, path, *, dtype, device, device_map=None, max_memory=None, **options):
    """`cls.from_pretrained(path, dtype=..., **options)` on `device`, or placed by `device_map` (and
    `max_memory`), passed through to transformers (then `device` is not used)."""
    if max_memory is not None and device_map is None:
        raise ValueError(
            f"max_memory={max_memory!r} bounds what device_map='auto' puts on each device; pass "
            "device_map='auto' too (or drop max_memory)."
        )
    if not (isinstance(dtype, str) and dtype == "auto"):
        dtype = _as_dtype(dtype)  # (loaders called directly, not through load_model, get the same check)
    placement = {k: v for k, v in (("device_map", device_map), ("max_memory", max_memory)) if v is not None}
    if isinstance(max_memory, dict):
        placement["max_memory"] = dict(max_memory)  # transformers rewrites it in place (sizes to bytes)
    model = cls.from_pretrained(path, dtype=dtype, **placement, **options)
    return model if device_map is not None else model.to(device)


def _from_hub(name: str, dtype, device, **placement) -> LanguageModel:
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    try:
        config = AutoConfig.from_pretrained(name)
        loader = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForCausalLM
        model = pretrained(loader, name, dtype=dtype or "auto", device=device, **placement)
        tokenizer = AutoTokenizer.from_pretrained(name)
    except OSError as error:
        raise OSError(
            f"could not load {name!r} from the Hugging Face hub ({error}). Without a network use "
            f"an offline alias: {', '.join(sorted(LOADERS))}."
        ) from error
    return LanguageModel(model, tokenizer, name=name)


def _takes_placement(loader: Callable) -> bool:
    parameters = inspect.signature(loader).parameters.values()
    return any(p.kind == p.VAR_KEYWORD or p.name == "device_map" for p in parameters)


def _placed(loader: Callable, name: str, placement: dict) -> Callable:
    """`loader` with the placement settings, refused by name for a model that is not loaded by
    `from_pretrained` (the toy world, the tiny random models: built here, on `device`)."""
    if not placement:
        return loader
    if not _takes_placement(loader):
        raise ValueError(
            f"{name!r} is built here, not loaded by from_pretrained, so {', '.join(placement)} does not "
            "apply to it; place it with device='cpu' / 'cuda:0', or drop "
            f"{' and '.join(placement)} for this model (a pair takes (drafter, verifier) values)."
        )
    return functools.partial(loader, **placement)


def load_model(name, *, dtype=None, device="cpu", device_map=None, max_memory=None) -> LanguageModel:
    """One model by name (see the module docstring), or wrap an already-loaded model. `device_map`
    and `max_memory` go to transformers' `from_pretrained` (`pretrained`), for a model bigger than
    one device: `device_map="auto"`, with `max_memory` to bound each device; `device` is then unused."""
    dtype = _as_dtype(dtype)
    placement = {k: v for k, v in (("device_map", device_map), ("max_memory", max_memory)) if v is not None}
    if placement and not isinstance(name, str):
        raise ValueError(
            f"{', '.join(placement)} places a model as it is loaded; this one is loaded already "
            "(load it by name, or place it yourself)."
        )
    if max_memory is not None and device_map is None:
        raise ValueError(
            f"max_memory={max_memory!r} bounds what device_map='auto' puts on each device; pass "
            "device_map='auto' too (or drop max_memory)."
        )
    if isinstance(name, LanguageModel):
        return name
    for kind, wrap in WRAPPERS:
        if isinstance(name, kind):
            return wrap(name)
    if isinstance(name, torch.nn.Module):
        return LanguageModel(name, None, name=type(name).__name__)
    if not isinstance(name, str):
        raise TypeError(f"cannot load {name!r}; pass a model name or a transformers model.")
    device = check_device(device)
    base, _, suffix = name.partition(":")
    for resolver in RESOLVERS:  # asked first: a resolver may claim a suffix of any alias (`x:layers=N`)
        loader = resolver(name)
        if loader is not None:
            return _placed(loader, name, placement)(suffix, dtype, device)
    if base in LOADERS:
        return _placed(LOADERS[base], name, placement)(suffix, dtype, device)
    return _from_hub(name, dtype, device, **placement)


def _per_model(value, label: str, example: str) -> tuple:
    """(drafter's, verifier's) of a setting given once for both or as a pair (a tuple or list of two)."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(
                f"{label}={value!r}: pass one {label} for both models, or a pair (drafter's, verifier's) "
                f"such as {example}."
            )
        return tuple(value)
    return value, value


def load_pair(
    drafter,
    verifier,
    *,
    dtype=None,
    device="cpu",
    shared_vocabulary: bool = False,
    device_map=None,
    max_memory=None,
    kernel_paths=None,
    gamma: int = 5,
) -> ModelPair:
    """Load a drafter and a verifier that share a tokenizer (see `check_compatible`).

    `dtype` is one dtype for both, or a pair `(drafter_dtype, verifier_dtype)`: for example
    `load_pair("smollm2-135m", "smollm2-135m", dtype=("bfloat16", "float32"))` makes a cheaper,
    slightly different drafter out of the verifier itself. `shared_vocabulary=True` declares that
    two models without a tokenizer share their ids (see `ModelPair`).

    `device_map` and `max_memory` (one for both, or a pair) go to transformers' `from_pretrained`
    (see the module): `load_pair(small, big, dtype="bfloat16", device="cuda:0", device_map=(None, "auto"),
    max_memory=(None, {0: "30GiB", 1: "80GiB"}))` keeps the drafter on GPU 0 and spreads the verifier.

    `kernel_paths` (one for both, or a pair): each model's kernel (`models.kernel_paths.DRAFTER_PATHS`;
    "int8-dynamic" for a drafter only), or "auto": the cheapest a probe finds here, for the verifier a
    block of `gamma + 1` rows on a path that keeps its fp32 law (bf16 only with bf16 units), for the
    drafter a generation, a prompt's prefill and one-row steps, on any drafter path
    (`models.drafter_paths`: the drafter's law may change, the output's may not); kept and reused.
    `dtype="auto"` is that on float32 weights, the pair `benchmarks/engine_speed.py` measures.
    """
    if dtype == "auto":
        dtype, kernel_paths = torch.float32, "auto" if kernel_paths is None else kernel_paths
    d_dtype, v_dtype = _per_model(dtype, "dtype", "('bfloat16', 'float32')")
    d_map, v_map = _per_model(device_map, "device_map", "(None, 'auto')")
    d_memory, v_memory = _per_model(max_memory, "max_memory", "(None, {0: '20GiB', 1: '80GiB'})")
    pair = ModelPair(
        load_model(drafter, dtype=d_dtype, device=device, device_map=d_map, max_memory=d_memory),
        load_model(verifier, dtype=v_dtype, device=device, device_map=v_map, max_memory=v_memory),
        shared_vocabulary=shared_vocabulary,
    )
    if kernel_paths is not None:
        from .kernel_paths import put_pair_on_paths

        put_pair_on_paths(
            pair, _per_model(kernel_paths, "kernel_paths", "('int8-dynamic', 'auto')"), gamma=gamma
        )
    return pair


def next_token_distributions(pair: ModelPair, prompt: Prompt, temperature: float = 1.0):
    """`(q, p)`: the drafter's and the verifier's next-token distributions after `prompt`, each `(V,)`."""
    from ..maths.laws import probabilities

    drafter, verifier = pair
    ids = drafter.encode(prompt)
    rows = []
    for lm in (drafter, verifier):
        session = lm.start(ids)
        rows.append(probabilities(session.feed(lm.decoder_prefix(ids), keep=1)[-1], temperature))
    return rows[0], rows[1]


register_loader("tiny-random-llama", _tiny_random(tiny_random_llama))
register_loader("tiny-random-t5", _tiny_random(tiny_random_t5))
