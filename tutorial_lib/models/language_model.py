r"""The interface the engine talks to: a model's sessions over a croppable KV cache, and a pair of models.

- `Session` - one prompt's state for one model: `feed(tokens) -> logits` `(n, V)` on top of the cache,
  `crop(length)` after a rejected draft, and a `feed_log` of every `(position, token)` fed.
- `LanguageModel` - a `transformers` model (and its tokenizer) behind that session API: encoding of
  prompts, chat templates, the decoder's prefix, the device its input ids go to.
- `ModelPair` and `check_compatible` - a drafter $q$ and a verifier $p$ whose token ids mean the same
  tokens (speculation compares $q(x)$ with $p(x)$ id by id), refused otherwise.

`adapter` loads models into this interface and re-exports every name here.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field
from typing import Hashable, List, Optional, Sequence, Tuple, Union

import torch

from ..checks import check_whole_number
from ..toy.toyworld import ToyWorld

__all__ = ["LanguageModel", "ModelPair", "Session", "check_compatible", "declare_shared_vocabulary", "Prompt"]

Prompt = Union[str, Sequence[int]]


class Session:
    """One prompt's decoding state for one model: the tokens in its KV cache, and what it was fed."""

    def __init__(self, model: "LanguageModel"):
        self.model = model
        self.tokens: List[int] = []  # decoder tokens held in the cache, in order
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
                out = net(
                    encoder_outputs=self.encoder_outputs,
                    decoder_input_ids=ids,
                    past_key_values=self.cache,
                    use_cache=True,
                )
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
            self.eos_token_id = getattr(generation, "eos_token_id", None) or getattr(
                config, "eos_token_id", None
            )
        self.has_logits_to_keep = "logits_to_keep" in inspect.signature(self.model.forward).parameters

    @property
    def device(self) -> torch.device:
        """Where the model reads its input ids: its input embeddings' device (read from the weights, so
        it follows `model.to(...)`; with a `device_map` the other layers may sit elsewhere)."""
        embeddings = (
            self.model.get_input_embeddings() if hasattr(self.model, "get_input_embeddings") else None
        )
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
        elif (
            prompt is None
            or isinstance(prompt, (bytes, dict, set))
            or not hasattr(prompt, "__iter__")
            or (torch.is_tensor(prompt) and prompt.ndim != 1)
        ):
            raise TypeError(
                f"prompt={prompt!r:.60} is neither text nor a list of token ids; pass a string "
                "or a list of integer ids such as [3, 5, 7]."
            )
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
        messages = ([{"role": "system", "content": system}] if system else []) + [
            {"role": "user", "content": message}
        ]
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


def check_compatible(
    drafter: LanguageModel, verifier: LanguageModel, *, shared_vocabulary: bool = False
) -> None:
    """Refuse a pair whose token ids mean different things: speculation compares q(x) with p(x).

    Tokenizers are compared (their whole vocabularies), the toy world's models by their words,
    models without a tokenizer by their `vocabulary` label; a model made from the other one
    (`perturbed`) shares its ids. Where a model says nothing about its ids (no tokenizer, no
    label) the pair is refused unless `shared_vocabulary=True`.
    """
    if drafter.is_encoder_decoder != verifier.is_encoder_decoder:
        raise ValueError(
            f"{drafter.name} and {verifier.name} mix a decoder-only and an encoder-decoder "
            "model; pair two of the same kind."
        )
    if drafter.vocab_size != verifier.vocab_size:
        raise ValueError(
            f"vocabularies differ: {drafter.name} has {drafter.vocab_size} tokens, "
            f"{verifier.name} {verifier.vocab_size}; use two models with the same tokenizer."
        )
    if shared_vocabulary:
        return
    same = _same_ids(drafter, verifier)
    if same is None:
        silent = drafter.name if drafter.ids_meaning() is None else verifier.name
        raise ValueError(
            f"{silent} has no tokenizer, so nothing says that its ids mean what the other model's "
            f"ids mean; if {drafter.name} and {verifier.name} share one vocabulary, say so with "
            "shared_vocabulary=True (load_pair, ModelPair or generate)."
        )
    if not same:
        raise ValueError(
            f"the token ids of {drafter.name} and {verifier.name} mean different things (different "
            "tokenizers or vocabularies, even if their sizes agree); use two models with the same "
            "tokenizer (e.g. one family)."
        )


def _vocab(tokenizer) -> dict:
    # get_vocab() builds a dict of the whole vocabulary (150k entries for Qwen): do it once per tokenizer
    if not hasattr(tokenizer, "_tutorial_lib_vocab"):
        tokenizer._tutorial_lib_vocab = tokenizer.get_vocab()
    return tokenizer._tutorial_lib_vocab
