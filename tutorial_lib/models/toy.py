"""The toy world's models behind the engine's model interface: `ToyModel`, and the `toy-*` aliases.

`toyworld.ToyLanguageModel` is a next-token table over the last two tokens; `ToyModel` adapts it to
`language_model.LanguageModel`'s session API (`start`, `feed`, `crop`), so the engine runs the toy world's
drafter and verifier exactly as it runs `transformers` models. Prompts are words of the world or
token ids, `<bos>` first; the ids mean the world's words, so two toy models pair only when their
worlds share a vocabulary (`language_model.check_compatible`).

Registers the aliases `"toy-drafter"` and `"toy-verifier"` with `adapter.load_model` (and wraps a
`ToyLanguageModel` passed to it): the models of
`default_world()`, one world shared by every load, so a drafter and a verifier loaded by name
share its truth and vocabulary.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import List, Optional, Sequence

import torch

from .adapter import register_loader, register_wrapper

from .language_model import LanguageModel, ModelPair, Session
from ..toy.toyworld import BOS, EOS, ToyLanguageModel, ToyWorld

__all__ = ["ToyModel", "ToySession", "default_world", "toy_pair", "load_toy"]


class ToySession(Session):
    """The toy models see only the last two tokens, so the token list is all the cache there is."""

    def _forward(self, tokens, keep):
        context = self.tokens[-1:] + tokens
        logits = self.model.model(torch.tensor([context]))[0]  # (len(context), V)
        return logits[len(context) - len(tokens) :][-keep:].float()

    def _crop(self, length):
        pass


@dataclass
class ToyModel(LanguageModel):
    """A `toyworld.ToyLanguageModel` (and its `world`, for words) as an engine model (decoder-only, CPU)."""

    is_toy = True

    def __post_init__(self):
        self.is_encoder_decoder = False
        self.has_logits_to_keep = False
        self.vocab_size = self.model.vocab_size
        self.eos_token_id = EOS if self.eos_token_id is None else self.eos_token_id
        if self.vocabulary is None and self.world is not None:  # the ids mean the world's words
            self.vocabulary = ("toy world words",) + tuple(self.world.tokens)

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    @property
    def dtype(self) -> torch.dtype:
        return torch.float32

    def _text_ids(self, text: str) -> List[int]:
        return [BOS] + [self._word_id(w) for w in text.split()]

    def _word_id(self, word: str) -> int:
        if self.world is None or word not in self.world.tokens:
            raise ValueError(f"{word!r} is not a word of the toy world; use its words or token ids.")
        return self.world.tokens.index(word)

    def decode(self, ids: Sequence[int]) -> str:
        return self.world.decode(ids) if self.world is not None else " ".join(map(str, ids))

    def start(self, prompt_ids: List[int]) -> Session:
        return ToySession(self)


@functools.lru_cache(maxsize=1)
def default_world() -> ToyWorld:
    """The `ToyWorld()` of the `toy-*` aliases, built once."""
    return ToyWorld()


def toy_pair(world: Optional[ToyWorld] = None) -> ModelPair:
    """The toy world's drafter and verifier as engine models (prompts: words or ids, `<bos>` first)."""
    world = world or ToyWorld()
    return ModelPair(
        ToyModel(world.drafter, name="toy-drafter", world=world),
        ToyModel(world.verifier, name="toy-verifier", world=world),
    )


def load_toy(role: str, suffix: str = "", dtype=None, device="cpu") -> ToyModel:
    """The default world's `role` model ("drafter" or "verifier"); toy models are float32 on the CPU."""
    if suffix:
        raise ValueError(
            f"toy-{role}:{suffix}: the toy aliases take no suffix; build ToyWorld(seed=...) and "
            "use toy_pair(world) for another world."
        )
    if str(device) != "cpu" or dtype not in (None, torch.float32):
        raise ValueError(f"the toy models run in float32 on the CPU; drop dtype={dtype} / device={device!r}.")
    world = default_world()
    return ToyModel(world.drafter if role == "drafter" else world.verifier, name=f"toy-{role}", world=world)


for _role in ("drafter", "verifier"):
    register_loader(f"toy-{_role}", functools.partial(load_toy, _role))
register_wrapper(ToyLanguageModel, lambda table: ToyModel(table, name=table.name))
