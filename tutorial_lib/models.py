r"""Model pairs with one interface: next-token logits for a prefix, over a KV cache that can be cropped.

The engine (`tutorial_lib.engine`) needs three things from the drafter $q$ and the verifier $p$:

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
| `smollm2-135m`, `qwen2.5-coder-0.5b`, `qwen2.5-coder-1.5b` | offline GGUF aliases, see `model_files` |
| `tiny-random-llama[:SEED]`, `tiny-random-t5[:SEED]` | small random models built from a config (tests) |
| `toy-drafter`, `toy-verifier` | the default `ToyWorld`'s models (or pass `world.drafter` itself) |
| `synthetic-t5-drafter[:tiny]`, `synthetic-t5-verifier[:tiny]` | small T5s trained offline on `synthetic_mt`'s toy translation task (trained once, minutes; `:tiny` takes seconds, for tests) |
| anything else (`google/gemma-2-2b-it`, `t5-small`, ...) | `from_pretrained` from the Hugging Face hub |

and already-loaded `transformers` models (with a tokenizer, or without one if prompts are token ids).
"""
from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple, Union

import torch

from .toyworld import BOS, EOS, ToyLanguageModel, ToyWorld

__all__ = ["LanguageModel", "ModelPair", "Session", "load_model", "load_pair", "tiny_random_llama",
           "tiny_random_t5", "next_token_distributions", "perturbed", "toy_pair", "TINY_VOCAB"]

Prompt = Union[str, Sequence[int]]
#: Vocabulary of the tiny random models: small enough for exact chi-square tests.
TINY_VOCAB = 16
_DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
           "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}


def _as_dtype(dtype) -> Optional[torch.dtype]:
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
            elif self.model._has_logits_to_keep:
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


class _ToySession(Session):
    """The toy models see only the last two tokens, so the token list is all the cache there is."""

    def _forward(self, tokens, keep):
        context = self.tokens[-1:] + tokens
        logits = self.model.model(torch.tensor([context]))[0]  # (len(context), V)
        return logits[len(context) - len(tokens):][-keep:].float()

    def _crop(self, length):
        pass


@dataclass
class LanguageModel:
    """A drafter or verifier: the network, its tokenizer (optional) and how to start a session.

    `decoder_prefix(prompt_ids)` is what the decoder starts from: the prompt itself for a
    decoder-only model, `[decoder_start_token_id]` for an encoder-decoder model (whose prompt goes to
    the encoder). Generated tokens follow it.
    """
    model: object
    tokenizer: object = None
    name: str = "model"
    eos_token_id: Optional[Union[int, List[int]]] = None
    world: Optional[ToyWorld] = field(default=None, repr=False)

    def __post_init__(self):
        self.is_toy = isinstance(self.model, ToyLanguageModel)
        config = getattr(self.model, "config", None)
        self.is_encoder_decoder = bool(getattr(config, "is_encoder_decoder", False))
        if self.is_toy:
            self.vocab_size = self.model.vocab_size
            self.eos_token_id = EOS if self.eos_token_id is None else self.eos_token_id
        else:
            self.model.eval()
            self.vocab_size = int(self.model.get_output_embeddings().weight.shape[0])
            if self.tokenizer is not None:  # padded embeddings: keep only ids the tokenizer can emit
                self.vocab_size = min(self.vocab_size, len(self.tokenizer))
            if self.eos_token_id is None:
                generation = getattr(self.model, "generation_config", None)
                self.eos_token_id = getattr(generation, "eos_token_id", None) or getattr(config, "eos_token_id", None)
            forward = inspect.signature(self.model.forward).parameters
            self._has_logits_to_keep = "logits_to_keep" in forward

    @property
    def device(self) -> torch.device:  # read from the weights, so it follows `model.to(...)`
        return torch.device("cpu") if self.is_toy else next(self.model.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return torch.float32 if self.is_toy else next(self.model.parameters()).dtype

    def encode(self, prompt: Prompt) -> List[int]:
        """Token ids of a prompt given as text or as ids; an empty prompt is an error."""
        if isinstance(prompt, str):
            if not prompt.strip():
                raise ValueError("the prompt is empty; give some text or a non-empty list of token ids.")
            if self.is_toy:
                ids = [BOS] + [self._toy_id(w) for w in prompt.split()]
            elif self.tokenizer is None:
                raise ValueError(f"{self.name} has no tokenizer; pass the prompt as a list of token ids.")
            else:
                ids = list(self.tokenizer(prompt)["input_ids"])
        else:
            ids = [int(t) for t in (prompt.tolist() if torch.is_tensor(prompt) else prompt)]
        if not ids:
            raise ValueError("the prompt is empty; give some text or a non-empty list of token ids.")
        if min(ids) < 0 or max(ids) >= self.vocab_size:
            raise ValueError(f"prompt token ids must lie in [0, {self.vocab_size}) for {self.name}.")
        return ids

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
        if self.is_toy:
            return (self.world.decode(ids) if self.world is not None else " ".join(map(str, ids)))
        if self.tokenizer is None:
            return " ".join(str(int(t)) for t in ids)
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def decoder_prefix(self, prompt_ids: List[int]) -> List[int]:
        if not self.is_encoder_decoder:
            return list(prompt_ids)
        return [int(self.model.config.decoder_start_token_id)]

    def start(self, prompt_ids: List[int]) -> Session:
        return _ToySession(self) if self.is_toy else _HFSession(self, prompt_ids)

    def _toy_id(self, word: str) -> int:
        if self.world is None or word not in self.world.tokens:
            raise ValueError(f"{word!r} is not a word of the toy world; use its words or token ids.")
        return self.world.tokens.index(word)


@dataclass
class ModelPair:
    """A drafter and a verifier that share a vocabulary (unpacks as `drafter, verifier = pair`)."""
    drafter: LanguageModel
    verifier: LanguageModel

    def __post_init__(self):
        check_compatible(self.drafter, self.verifier)

    def __iter__(self):
        return iter((self.drafter, self.verifier))


def check_compatible(drafter: LanguageModel, verifier: LanguageModel) -> None:
    """Refuse a pair whose token ids mean different things: speculation compares q(x) with p(x)."""
    if drafter.is_encoder_decoder != verifier.is_encoder_decoder:
        raise ValueError(f"{drafter.name} and {verifier.name} mix a decoder-only and an encoder-decoder "
                         "model; pair two of the same kind.")
    if drafter.vocab_size != verifier.vocab_size:
        raise ValueError(f"vocabularies differ: {drafter.name} has {drafter.vocab_size} tokens, "
                         f"{verifier.name} {verifier.vocab_size}; use two models with the same tokenizer.")
    a, b = drafter.tokenizer, verifier.tokenizer
    if a is not None and b is not None and a is not b and _vocab(a) != _vocab(b):
        raise ValueError(f"the tokenizers of {drafter.name} and {verifier.name} map tokens to different ids; "
                         "use two models with the same tokenizer (e.g. one family).")
    if drafter.is_toy and verifier.is_toy and drafter.world is not verifier.world and \
            drafter.world is not None and verifier.world is not None and drafter.world.tokens != verifier.world.tokens:
        raise ValueError("the two toy models come from worlds with different vocabularies.")


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
                         name=f"tiny-random-llama:{seed}", eos_token_id=None)


def tiny_random_t5(seed: int = 0, *, vocab_size: int = TINY_VOCAB, d_model: int = 32,
                   n_layers: int = 2, logit_scale: float = 2.0) -> LanguageModel:
    """A small T5 (encoder-decoder) with random weights from `seed`."""
    from transformers import T5Config, T5ForConditionalGeneration
    config = T5Config(vocab_size=vocab_size, d_model=d_model, d_kv=8, d_ff=2 * d_model, num_layers=n_layers,
                      num_decoder_layers=n_layers, num_heads=4, feed_forward_proj="gated-gelu",
                      decoder_start_token_id=0, pad_token_id=0,
                      eos_token_id=1, tie_word_embeddings=False)
    return LanguageModel(_seeded(T5ForConditionalGeneration, config, seed, logit_scale), None,
                         name=f"tiny-random-t5:{seed}", eos_token_id=None)


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
    return LanguageModel(net, model.tokenizer, name=f"{model.name}~{noise}:{seed}",
                         eos_token_id=model.eos_token_id, world=model.world)


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


def load_model(name, *, dtype=None, device="cpu") -> LanguageModel:
    """One model by name (see the module docstring), or wrap an already-loaded model."""
    dtype = _as_dtype(dtype)
    if isinstance(name, LanguageModel):
        return name
    if isinstance(name, ToyLanguageModel):
        return LanguageModel(name, name=name.name)
    if isinstance(name, torch.nn.Module):
        return LanguageModel(name, None, name=type(name).__name__)
    if not isinstance(name, str):
        raise TypeError(f"cannot load {name!r}; pass a model name or a transformers model.")
    base, _, seed = name.partition(":")
    if base in ("tiny-random-llama", "tiny-random-t5"):
        build = tiny_random_llama if base == "tiny-random-llama" else tiny_random_t5
        lm = build(int(seed or 0))
        lm.model.to(device=device, dtype=dtype or torch.float32)
        return lm
    if base in ("synthetic-t5-drafter", "synthetic-t5-verifier"):
        from transformers import AutoTokenizer, T5ForConditionalGeneration
        from .synthetic_mt import train_t5_pair
        path = train_t5_pair(budget=seed or "default")[base.rsplit("-", 1)[1]]  # after ':' the budget, not a seed
        model = T5ForConditionalGeneration.from_pretrained(path, dtype=dtype or torch.float32)
        return LanguageModel(model.to(device), AutoTokenizer.from_pretrained(path), name=name)
    if name in ("toy-drafter", "toy-verifier"):
        world = ToyWorld()
        return LanguageModel(world.drafter if name == "toy-drafter" else world.verifier, name=name, world=world)
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer
    from . import model_files
    if name in model_files.OFFLINE_MODELS:
        path = model_files.offline_model_dir(name)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype or torch.float32)
        return LanguageModel(model.to(device), AutoTokenizer.from_pretrained(path), name=name)
    try:
        config = AutoConfig.from_pretrained(name)
        loader = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForCausalLM
        model = loader.from_pretrained(name, dtype=dtype or "auto")
        tokenizer = AutoTokenizer.from_pretrained(name)
    except OSError as error:
        raise OSError(f"could not load {name!r} from the Hugging Face hub ({error}). Without a network use "
                      f"an offline alias: {', '.join(model_files.OFFLINE_MODELS)}, synthetic-t5-drafter, "
                      "synthetic-t5-verifier, tiny-random-llama, tiny-random-t5, toy-drafter or toy-verifier."
                      ) from error
    return LanguageModel(model.to(device), tokenizer, name=name)


def load_pair(drafter, verifier, *, dtype=None, device="cpu") -> ModelPair:
    """Load a drafter and a verifier that share a tokenizer.

    `dtype` is one dtype for both, or a pair `(drafter_dtype, verifier_dtype)`: for example
    `load_pair("smollm2-135m", "smollm2-135m", dtype=("bfloat16", "float32"))` makes a cheaper,
    slightly different drafter out of the verifier itself.
    """
    d_dtype, v_dtype = dtype if isinstance(dtype, (tuple, list)) else (dtype, dtype)
    toy_names = {"toy-drafter", "toy-verifier"}
    if isinstance(drafter, str) and isinstance(verifier, str) and {drafter, verifier} <= toy_names:
        world = ToyWorld()  # one world for both, so the two share its vocabulary and truth
        pick = {"toy-drafter": world.drafter, "toy-verifier": world.verifier}
        return ModelPair(LanguageModel(pick[drafter], name=drafter, world=world),
                         LanguageModel(pick[verifier], name=verifier, world=world))
    return ModelPair(load_model(drafter, dtype=d_dtype, device=device),
                     load_model(verifier, dtype=v_dtype, device=device))


def toy_pair(world: Optional[ToyWorld] = None) -> ModelPair:
    """The toy world's drafter and verifier as engine models (prompts: words or ids, `<bos>` first)."""
    world = world or ToyWorld()
    return ModelPair(LanguageModel(world.drafter, name="toy-drafter", world=world),
                     LanguageModel(world.verifier, name="toy-verifier", world=world))


def next_token_distributions(pair: ModelPair, prompt: Prompt, temperature: float = 1.0):
    """`(q, p)`: the drafter's and the verifier's next-token distributions after `prompt`, each `(V,)`."""
    from .targets import probabilities
    drafter, verifier = pair
    ids = drafter.encode(prompt)
    rows = []
    for lm in (drafter, verifier):
        session = lm.start(ids)
        rows.append(probabilities(session.feed(lm.decoder_prefix(ids), keep=1)[-1], temperature))
    return rows[0], rows[1]
