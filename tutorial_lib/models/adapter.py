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
| `toy-drafter`, `toy-verifier` | the default `ToyWorld`'s models (or pass `world.drafter` itself), see `models.toy` |
| `synthetic-t5-drafter[:tiny]`, `synthetic-t5-verifier[:tiny]` | small T5s trained on `toy.synthetic_mt`'s toy translation task (`models.synthetic_t5`); train them first with `synthetic_t5.train_t5_pair(budget=...)` (minutes; `"tiny"` takes seconds, for tests) |
| anything else (`google/gemma-2-2b-it`, `t5-small`, ...) | `from_pretrained` from the Hugging Face hub |

and already-loaded `transformers` models (with a tokenizer, or without one if prompts are token ids).

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
Both present the same session API, so the engine never asks which one it has.

A drafter and a verifier must give their token ids the same meaning (speculation compares
$q(x)$ with $p(x)$ id by id): `check_compatible` compares their tokenizers (or the toy world's
words, or the `vocabulary` label of tokenizer-less models). For models without a tokenizer nothing
says what the ids mean, so the user must say they share them: `shared_vocabulary=True`.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, Hashable, List, Optional, Sequence, Tuple, Union

import torch

from ..checks import check_device, check_whole_number
from ..toy.toyworld import ToyWorld

__all__ = ["LanguageModel", "ModelPair", "Session", "load_model", "load_pair", "tiny_random_llama",
           "tiny_random_t5", "next_token_distributions", "perturbed", "TINY_VOCAB", "register_resolver", "register_wrapper", "RESOLVERS", "WRAPPERS",
           "check_compatible", "LOADERS", "register_loader", "pretrained", "PLACEMENT_KEYS"]

Prompt = Union[str, Sequence[int]]
#: Vocabulary of the tiny random models: small enough for exact chi-square tests.
TINY_VOCAB = 16
_DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
           "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}


def _as_dtype(dtype) -> Optional[torch.dtype]:
    if isinstance(dtype, torch.dtype) and not dtype.is_floating_point:
        raise ValueError(f"dtype={dtype} is not a floating-point type, and a model's weights need one; use "
                         "torch.float32, torch.bfloat16 or torch.float16 (or 'float32', 'bfloat16', "
                         "'float16').")
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    if dtype in _DTYPES:
        return _DTYPES[dtype]
    raise ValueError(f"dtype={dtype!r} is not understood; use torch.float32, torch.bfloat16 or one of {sorted(_DTYPES)}.")


class Session:
    """One prompt's decoding state for one model: the tokens in its KV cache, and what it was fed."""

    def __init__(self, model: "LanguageModel"):
        self.model = model
        self.tokens: List[int] = []                # decoder tokens held in the cache, in order
        self.feed_log: List[Tuple[int, int]] = []  # (position, token) of every token ever fed
        self.n_calls = 0
        self.time_s = 0.0
        self._logits = {}  # position i -> logits after tokens[: i + 1], for the last few positions

    @property
    def length(self) -> int:
        return len(self.tokens)

    def feed(self, tokens: Sequence[int], keep: Optional[int] = None) -> torch.Tensor:
        """Feed `tokens` after the cached ones; returns float32 logits `(n, V)` (the last `keep` rows)."""
        tokens = [int(t) for t in tokens]
        if not tokens:
            raise ValueError("feed() needs at least one token.")
        start = time.perf_counter()
        logits = self._forward(tokens, len(tokens) if keep is None else keep)
        self.time_s += time.perf_counter() - start
        self.feed_log.extend(zip(range(self.length, self.length + len(tokens)), tokens))
        self.tokens.extend(tokens)
        self.n_calls += 1
        logits = logits[..., : self.model.vocab_size]
        first = self.length - logits.shape[0]
        self._logits = {i: row for i, row in self._logits.items() if i >= self.length - 32}
        self._logits.update((first + i, row) for i, row in enumerate(logits))
        return logits

    def last_logits(self) -> Optional[torch.Tensor]:
        """The next-token logits after every cached token, if a recent call computed them."""
        return self._logits.get(self.length - 1)

    def crop(self, length: int) -> None:
        """Drop the cache from position `length` on (a rejected draft is never seen again)."""
        if not 0 <= length <= self.length:
            raise ValueError(f"cannot crop a cache of {self.length} positions to {length}.")
        if length < self.length:
            self._crop(length)
            del self.tokens[length:]
            self._logits = {i: row for i, row in self._logits.items() if i < length}

    def _forward(self, tokens: List[int], keep: int) -> torch.Tensor:
        raise NotImplementedError

    def _crop(self, length: int) -> None:
        raise NotImplementedError


class _HFSession(Session):
    def __init__(self, model: "LanguageModel", prompt_ids: List[int]):
        super().__init__(model)
        from transformers import DynamicCache, EncoderDecoderCache
        net = model.model
        self.encoder_outputs = None
        if model.is_encoder_decoder:
            start = time.perf_counter()
            with torch.inference_mode():
                ids = torch.tensor([prompt_ids], device=model.device)
                self.encoder_outputs = net.get_encoder()(input_ids=ids)
            self.time_s += time.perf_counter() - start
            self.cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        else:
            self.cache = DynamicCache()

    def _forward(self, tokens, keep):
        net, ids = self.model.model, torch.tensor([tokens], device=self.model.device)
        with torch.inference_mode():
            if self.model.is_encoder_decoder:
                out = net(encoder_outputs=self.encoder_outputs, decoder_input_ids=ids,
                          past_key_values=self.cache, use_cache=True)
                logits = out.logits[0, -keep:]
            elif self.model.has_logits_to_keep:
                out = net(input_ids=ids, past_key_values=self.cache, use_cache=True, logits_to_keep=keep)
                logits = out.logits[0, -keep:]
            else:
                out = net(input_ids=ids, past_key_values=self.cache, use_cache=True)
                logits = out.logits[0, -keep:]
        self.cache = out.past_key_values
        return logits.float().cpu()  # (keep, V)

    def _crop(self, length):
        # transformers 5.23 crops by a negative count of tokens to drop (a positive size is refused)
        self.cache.crop(length - self.length)


@dataclass
class LanguageModel:
    """A drafter or verifier: a `transformers` model, its tokenizer (optional) and how to start a session.

    `decoder_prefix(prompt_ids)` is what the decoder starts from: the prompt itself for a
    decoder-only model, `[decoder_start_token_id]` for an encoder-decoder model (whose prompt goes to
    the encoder). Generated tokens follow it. `vocabulary` labels what the ids mean for a model
    without a tokenizer (models with equal labels share ids); `derived_from` is the model this one
    was made from (`perturbed`), with the same ids. `has_logits_to_keep` says whether the forward
    pass accepts `logits_to_keep` (then only the rows asked for are computed). `is_toy` is False
    here and True for `models.toy.ToyModel`.
    """
    model: object
    tokenizer: object = None
    name: str = "model"
    eos_token_id: Optional[Union[int, List[int]]] = None
    world: Optional[ToyWorld] = field(default=None, repr=False)
    vocabulary: Optional[Hashable] = field(default=None, repr=False)
    derived_from: Optional["LanguageModel"] = field(default=None, repr=False)

    is_toy = False

    def __post_init__(self):
        config = getattr(self.model, "config", None)
        self.is_encoder_decoder = bool(getattr(config, "is_encoder_decoder", False))
        self.model.eval()
        self.vocab_size = int(self.model.get_output_embeddings().weight.shape[0])
        if self.tokenizer is not None:  # padded embeddings: keep only ids the tokenizer can emit
            self.vocab_size = min(self.vocab_size, len(self.tokenizer))
        if self.eos_token_id is None:
            generation = getattr(self.model, "generation_config", None)
            self.eos_token_id = getattr(generation, "eos_token_id", None) or getattr(config, "eos_token_id", None)
        self.has_logits_to_keep = "logits_to_keep" in inspect.signature(self.model.forward).parameters

    @property
    def device(self) -> torch.device:
        """Where the model reads its input ids: its input embeddings' device (read from the weights, so
        it follows `model.to(...)`; with a `device_map` the other layers may sit elsewhere)."""
        embeddings = self.model.get_input_embeddings() if hasattr(self.model, "get_input_embeddings") else None
        weight = getattr(embeddings, "weight", None)
        if weight is not None and weight.device.type != "meta":
            return weight.device
        placed = getattr(self.model, "hf_device_map", None)  # weights offloaded by accelerate: where they run
        if placed:
            first = next(iter(placed.values()))
            return torch.device("cpu" if first == "disk" else first)
        return next(self.model.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.model.parameters()).dtype

    def encode(self, prompt: Prompt) -> List[int]:
        """Token ids of a prompt given as text or as ids; an empty prompt is an error."""
        if isinstance(prompt, str):
            if not prompt.strip():
                raise ValueError("the prompt is empty; give some text or a non-empty list of token ids.")
            ids = self._text_ids(prompt)
        elif prompt is None or isinstance(prompt, (bytes, dict, set)) or not hasattr(prompt, "__iter__") \
                or (torch.is_tensor(prompt) and prompt.ndim != 1):
            raise TypeError(f"prompt={prompt!r:.60} is neither text nor a list of token ids; pass a string "
                            "or a list of integer ids such as [3, 5, 7].")
        else:
            values = prompt.tolist() if hasattr(prompt, "tolist") else list(prompt)
            try:
                ids = [check_whole_number(t, "prompt token id") for t in values]
            except (TypeError, ValueError) as error:
                raise type(error)(f"{error} A prompt of ids holds whole numbers, e.g. [3, 5, 7].") from None
        if not ids:
            raise ValueError("the prompt is empty; give some text or a non-empty list of token ids.")
        if min(ids) < 0 or max(ids) >= self.vocab_size:
            raise ValueError(f"prompt token ids must lie in [0, {self.vocab_size}) for {self.name}.")
        return ids

    def _text_ids(self, text: str) -> List[int]:
        if self.tokenizer is None:
            raise ValueError(f"{self.name} has no tokenizer; pass the prompt as a list of token ids.")
        return list(self.tokenizer(text)["input_ids"])

    def chat_prompt(self, message: str, system: Optional[str] = None) -> List[int]:
        """Token ids of one user message in the model's chat template, ready for the reply."""
        if self.tokenizer is None or getattr(self.tokenizer, "chat_template", None) is None:
            raise ValueError(f"{self.name} has no chat template; pass a plain prompt instead.")
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": message}]
        text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return self.encode_plain(text)

    def encode_plain(self, text: str) -> List[int]:
        """Ids of text that already holds its special tokens (no BOS added)."""
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids: Sequence[int]) -> str:
        if self.tokenizer is None:
            return " ".join(str(int(t)) for t in ids)
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def decoder_prefix(self, prompt_ids: List[int]) -> List[int]:
        if not self.is_encoder_decoder:
            return list(prompt_ids)
        return [int(self.model.config.decoder_start_token_id)]

    def start(self, prompt_ids: List[int]) -> Session:
        return _HFSession(self, prompt_ids)

    def ids_meaning(self):
        """What this model's ids mean, for `check_compatible`: `("label", vocabulary)`,
        `("tokenizer", tokenizer)`, or None when nothing says."""
        if self.vocabulary is not None:
            return ("label", self.vocabulary)
        return None if self.tokenizer is None else ("tokenizer", self.tokenizer)


@dataclass
class ModelPair:
    """A drafter and a verifier that share a vocabulary (unpacks as `drafter, verifier = pair`).

    `shared_vocabulary=True` declares that two models without a tokenizer share their ids; the
    declaration is recorded on both models (their `vocabulary` label), so `generate` accepts them.
    """
    drafter: LanguageModel
    verifier: LanguageModel
    shared_vocabulary: bool = field(default=False, repr=False)

    def __post_init__(self):
        if self.shared_vocabulary:
            declare_shared_vocabulary(self.drafter, self.verifier)
        check_compatible(self.drafter, self.verifier)

    def __iter__(self):
        return iter((self.drafter, self.verifier))


def declare_shared_vocabulary(drafter: LanguageModel, verifier: LanguageModel) -> None:
    """Record that the two models' ids mean the same tokens (for models without a tokenizer)."""
    label = verifier.vocabulary or drafter.vocabulary or f"ids shared by {drafter.name} and {verifier.name}"
    drafter.vocabulary = verifier.vocabulary = label


def _root(lm: LanguageModel) -> LanguageModel:
    while lm.derived_from is not None:
        lm = lm.derived_from
    return lm


def _same_ids(drafter: LanguageModel, verifier: LanguageModel) -> Optional[bool]:
    """True / False when the two models say what their ids mean, None when either does not."""
    if _root(drafter) is _root(verifier):
        return True
    a, b = drafter.ids_meaning(), verifier.ids_meaning()
    if a is None or b is None:
        return None
    if a[0] != b[0]:
        return False
    if a[0] == "tokenizer":
        return a[1] is b[1] or _vocab(a[1]) == _vocab(b[1])
    return a[1] == b[1]


def check_compatible(drafter: LanguageModel, verifier: LanguageModel, *, shared_vocabulary: bool = False) -> None:
    """Refuse a pair whose token ids mean different things: speculation compares q(x) with p(x).

    Tokenizers are compared (their whole vocabularies), the toy world's models by their words,
    models without a tokenizer by their `vocabulary` label; a model made from the other one
    (`perturbed`) shares its ids. Where a model says nothing about its ids (no tokenizer, no
    label) the pair is refused unless `shared_vocabulary=True`.
    """
    if drafter.is_encoder_decoder != verifier.is_encoder_decoder:
        raise ValueError(f"{drafter.name} and {verifier.name} mix a decoder-only and an encoder-decoder "
                         "model; pair two of the same kind.")
    if drafter.vocab_size != verifier.vocab_size:
        raise ValueError(f"vocabularies differ: {drafter.name} has {drafter.vocab_size} tokens, "
                         f"{verifier.name} {verifier.vocab_size}; use two models with the same tokenizer.")
    if shared_vocabulary:
        return
    same = _same_ids(drafter, verifier)
    if same is None:
        silent = drafter.name if drafter.ids_meaning() is None else verifier.name
        raise ValueError(f"{silent} has no tokenizer, so nothing says that its ids mean what the other model's "
                         f"ids mean; if {drafter.name} and {verifier.name} share one vocabulary, say so with "
                         "shared_vocabulary=True (load_pair, ModelPair or generate).")
    if not same:
        raise ValueError(f"the token ids of {drafter.name} and {verifier.name} mean different things (different "
                         "tokenizers or vocabularies, even if their sizes agree); use two models with the same "
                         "tokenizer (e.g. one family).")


def _vocab(tokenizer) -> dict:
    # get_vocab() builds a dict of the whole vocabulary (150k entries for Qwen): do it once per tokenizer
    if not hasattr(tokenizer, "_tutorial_lib_vocab"):
        tokenizer._tutorial_lib_vocab = tokenizer.get_vocab()
    return tokenizer._tutorial_lib_vocab


# ---- loading ------------------------------------------------------------------------------

def tiny_random_llama(seed: int = 0, *, vocab_size: int = TINY_VOCAB, hidden_size: int = 32,
                      n_layers: int = 2, logit_scale: float = 2.0) -> LanguageModel:
    """A 2-layer LLaMA with random weights from `seed`: any two seeds form a (meaningless) pair."""
    from transformers import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=hidden_size, intermediate_size=2 * hidden_size,
                         num_hidden_layers=n_layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=512, bos_token_id=0, eos_token_id=1, pad_token_id=0,
                         tie_word_embeddings=False)
    return LanguageModel(_seeded(LlamaForCausalLM, config, seed, logit_scale), None,
                         name=f"tiny-random-llama:{seed}", eos_token_id=None, vocabulary=f"tiny-random:{vocab_size}")


def tiny_random_t5(seed: int = 0, *, vocab_size: int = TINY_VOCAB, d_model: int = 32,
                   n_layers: int = 2, logit_scale: float = 2.0) -> LanguageModel:
    """A small T5 (encoder-decoder) with random weights from `seed`."""
    from transformers import T5Config, T5ForConditionalGeneration
    config = T5Config(vocab_size=vocab_size, d_model=d_model, d_kv=8, d_ff=2 * d_model, num_layers=n_layers,
                      num_decoder_layers=n_layers, num_heads=4, feed_forward_proj="gated-gelu",
                      decoder_start_token_id=0, pad_token_id=0,
                      eos_token_id=1, tie_word_embeddings=False)
    return LanguageModel(_seeded(T5ForConditionalGeneration, config, seed, logit_scale), None,
                         name=f"tiny-random-t5:{seed}", eos_token_id=None, vocabulary=f"tiny-random:{vocab_size}")


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
            weight.add_(torch.randn_like(weight) * noise * weight.float().std().nan_to_num(0).to(weight.dtype))
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
            raise ValueError(f"the part after ':' is the tiny random model's seed, a whole number >= 0; got {suffix!r} "
                             "(e.g. 'tiny-random-llama:1').")
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
        raise ValueError(f"max_memory={max_memory!r} bounds what device_map='auto' puts on each device; pass "
                         "device_map='auto' too (or drop max_memory).")
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
        raise OSError(f"could not load {name!r} from the Hugging Face hub ({error}). Without a network use "
                      f"an offline alias: {', '.join(sorted(LOADERS))}.") from error
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
        raise ValueError(f"{name!r} is built here, not loaded by from_pretrained, so {', '.join(placement)} does not "
                         "apply to it; place it with device='cpu' / 'cuda:0', or drop "
                         f"{' and '.join(placement)} for this model (a pair takes (drafter, verifier) values).")
    return functools.partial(loader, **placement)


def load_model(name, *, dtype=None, device="cpu", device_map=None, max_memory=None) -> LanguageModel:
    """One model by name (see the module docstring), or wrap an already-loaded model. `device_map`
    and `max_memory` go to transformers' `from_pretrained` (`pretrained`), for a model bigger than
    one device: `device_map="auto"`, with `max_memory` to bound each device; `device` is then unused."""
    dtype = _as_dtype(dtype)
    placement = {k: v for k, v in (("device_map", device_map), ("max_memory", max_memory)) if v is not None}
    if placement and not isinstance(name, str):
        raise ValueError(f"{', '.join(placement)} places a model as it is loaded; this one is loaded already "
                         "(load it by name, or place it yourself).")
    if max_memory is not None and device_map is None:
        raise ValueError(f"max_memory={max_memory!r} bounds what device_map='auto' puts on each device; pass "
                         "device_map='auto' too (or drop max_memory).")
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
    for resolver in RESOLVERS:   # asked first: a resolver may claim a suffix of any alias (`x:layers=N`)
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
            raise ValueError(f"{label}={value!r}: pass one {label} for both models, or a pair (drafter's, verifier's) "
                             f"such as {example}.")
        return tuple(value)
    return value, value


def load_pair(drafter, verifier, *, dtype=None, device="cpu", shared_vocabulary: bool = False,
              device_map=None, max_memory=None, kernel_paths=None, gamma: int = 5) -> ModelPair:
    """Load a drafter and a verifier that share a tokenizer (see `check_compatible`).

    `dtype` is one dtype for both, or a pair `(drafter_dtype, verifier_dtype)`: for example
    `load_pair("smollm2-135m", "smollm2-135m", dtype=("bfloat16", "float32"))` makes a cheaper,
    slightly different drafter out of the verifier itself. `shared_vocabulary=True` declares that
    two models without a tokenizer share their ids (see `ModelPair`).

    `device_map` and `max_memory` (one for both, or a pair) go to transformers' `from_pretrained`
    (see the module): `load_pair(small, big, dtype="bfloat16", device="cuda:0", device_map=(None, "auto"),
    max_memory=(None, {0: "30GiB", 1: "80GiB"}))` keeps the drafter on GPU 0 and spreads the verifier.

    `kernel_paths` (one for both, or a pair): each model's kernel (`models.kernel_paths.DRAFTER_PATHS`;
    "int8-dynamic" for a drafter only), or "auto": the cheapest a probe finds here for the verifier's block of
    `gamma + 1` rows and the drafter's one row (kept, reused). `dtype="auto"` is that on float32 weights.
    """
    if dtype == "auto":
        dtype, kernel_paths = torch.float32, "auto" if kernel_paths is None else kernel_paths
    d_dtype, v_dtype = _per_model(dtype, "dtype", "('bfloat16', 'float32')")
    d_map, v_map = _per_model(device_map, "device_map", "(None, 'auto')")
    d_memory, v_memory = _per_model(max_memory, "max_memory", "(None, {0: '20GiB', 1: '80GiB'})")
    pair = ModelPair(load_model(drafter, dtype=d_dtype, device=device, device_map=d_map, max_memory=d_memory),
                     load_model(verifier, dtype=v_dtype, device=device, device_map=v_map, max_memory=v_memory),
                     shared_vocabulary=shared_vocabulary)
    if kernel_paths is not None:
        from .kernel_paths import put_pair_on_paths
        put_pair_on_paths(pair, _per_model(kernel_paths, "kernel_paths", "('int8-dynamic', 'auto')"), gamma=gamma)
    return pair


def next_token_distributions(pair: ModelPair, prompt: Prompt, temperature: float = 1.0):
    """`(q, p)`: the drafter's and the verifier's next-token distributions after `prompt`, each `(V,)`."""
    from ..maths.targets import probabilities
    drafter, verifier = pair
    ids = drafter.encode(prompt)
    rows = []
    for lm in (drafter, verifier):
        session = lm.start(ids)
        rows.append(probabilities(session.feed(lm.decoder_prefix(ids), keep=1)[-1], temperature))
    return rows[0], rows[1]


register_loader("tiny-random-llama", _tiny_random(tiny_random_llama))
register_loader("tiny-random-t5", _tiny_random(tiny_random_t5))
