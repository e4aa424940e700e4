"""The batch's state: each model's share of it (`Side`: its cache, mask and per-row tokens, realigned after
ragged acceptance), each prompt's decoding state (`Row`), what `generate` would record per row and model
(`Ledger`), and an encoder-decoder's encoder pass (`encode_batch`)."""

from __future__ import annotations

import time
from typing import Dict, List

import torch

from ...models.language_model import LanguageModel
from ..generation import TraceStep
from ..shared_prefix import PAD, forward_rows

__all__ = ["Side", "encode_batch"]


class Ledger:
    """What `engine.methods.Run` would record for one model of one row: its session's tokens, calls and
    feeds."""

    def __init__(self, encoder_decoder: bool):
        self.encoder_decoder = encoder_decoder
        self.tokens: List[int] = []
        self.feed_log: List[tuple] = []
        self.calls_by_k: List[int] = []
        self.prefills = 0
        self.n_calls = 0

    def feed(self, tokens: List[int]) -> None:
        if not tokens:  # the engine then reads the logits it kept, with no call
            return
        if not self.tokens and not self.encoder_decoder:  # a decoder-only model's first call reads the prompt
            self.prefills += 1
        else:
            k = len(tokens)
            self.calls_by_k.extend([0] * (k - len(self.calls_by_k)))
            self.calls_by_k[k - 1] += 1
        self.feed_log.extend(zip(range(len(self.tokens), len(self.tokens) + len(tokens)), tokens))
        self.tokens.extend(tokens)
        self.n_calls += 1

    def backlog(self, seq: List[int]) -> List[int]:
        return seq[len(self.tokens) :]

    def sync(self, seq: List[int]) -> None:
        del self.tokens[agreement(self.tokens, seq) :]


def agreement(held: List[int], seq: List[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    n = min(len(held), len(seq))
    return next((i for i in range(n) if held[i] != seq[i]), n)


class Side:
    """One model's share of the batch: its cache, mask `(b, W)` (1 on a row's tokens) and, per row, the
    tokens its cache holds (in column order, placeholders included)."""

    def __init__(self, lm: LanguageModel, cache, mask: torch.Tensor, held: List[List[int]], encoder=None):
        self.lm, self.cache, self.mask, self.held = lm, cache, mask, held
        self.encoder = encoder  # (encoder outputs, encoder mask) of an encoder-decoder
        self.time_s = 0.0

    def _layers(self):
        cache = getattr(self.cache, "self_attention_cache", self.cache)
        return [
            layer for layer in cache.layers if getattr(layer, "keys", None) is not None and layer.keys.numel()
        ]

    def realign(self, keep: List[int]) -> None:
        """Keep row i's first `keep[i]` tokens, every row right-aligned on the last column (step 5)."""
        if all(k == len(h) for k, h in zip(keep, self.held)):
            return
        mask = self.mask  # (b, W)
        b, width = mask.shape
        cols = torch.arange(width)
        kept = (mask == 1) & (mask.cumsum(1) <= torch.tensor(keep).unsqueeze(1))  # (b, W)
        last = torch.where(kept, cols, torch.full_like(cols, -1)).max(1).values  # (b,) last kept column
        new_width = int(last.max()) + 1
        shift = (new_width - 1) - last  # (b,) how far each row moves
        index = torch.arange(new_width).unsqueeze(0) - shift.unsqueeze(1)  # (b, W') source columns
        inside = index >= 0
        index = index.clamp_min(0)
        new_mask = mask.gather(1, index) * inside
        lead = int((new_mask.cumsum(1) == 0).all(0).sum())  # columns padding in every row: dropped
        new_mask, index = new_mask[:, lead:], index[:, lead:]
        for layer in self._layers():
            at = index.to(layer.keys.device)[:, None, :, None]
            layer.keys = layer.keys.gather(2, at.expand(-1, layer.keys.shape[1], -1, layer.keys.shape[3]))
            layer.values = layer.values.gather(
                2, at.expand(-1, layer.values.shape[1], -1, layer.values.shape[3])
            )
        self.mask = new_mask
        self.held = [h[:k] for h, k in zip(self.held, keep)]

    def feed(self, ids: List[List[int]], keep: int) -> torch.Tensor:
        """One call on `ids` (every row the same number of tokens); float32 logits `(b, keep, V)`."""
        tic = time.perf_counter()
        ids_t = torch.tensor(ids, dtype=torch.long)  # (b, n)
        self.mask = torch.cat([self.mask, torch.ones_like(ids_t)], dim=1)
        if self.encoder is None:
            logits = forward_rows(self.lm, self.cache, ids_t, self.mask, keep=keep)
        else:
            encoded, encoder_mask = self.encoder
            device = self.lm.device
            with torch.inference_mode():
                out = self.lm.model(
                    encoder_outputs=encoded,
                    attention_mask=encoder_mask.to(device),
                    decoder_input_ids=ids_t.to(device),
                    decoder_attention_mask=self.mask.to(device),
                    past_key_values=self.cache,
                    use_cache=True,
                )
            self.cache = out.past_key_values
            logits = out.logits[:, -keep:, : self.lm.vocab_size].float().cpu()
        for h, row in zip(self.held, ids):
            h.extend(row)
        self.time_s += time.perf_counter() - tic
        return logits

    def select(self, index: List[int]) -> None:
        """Only the rows `index` stay in the batch."""
        at = torch.tensor(index)
        self.cache.batch_select_indices(at.cpu())  # a CPU index serves every layer's device (device_map)
        self.mask = self.mask[at]
        self.held = [self.held[i] for i in index]
        if self.encoder is not None:
            from transformers.modeling_outputs import BaseModelOutput

            encoded, encoder_mask = self.encoder
            hidden = encoded.last_hidden_state[at.to(encoded.last_hidden_state.device)]
            self.encoder = (BaseModelOutput(last_hidden_state=hidden), encoder_mask[at])


def encode_batch(lm: LanguageModel, prompt_ids: List[List[int]]):
    """An encoder-decoder's encoder on the right-padded prompts: `(encoder outputs, mask (b, S))`."""
    width = max(len(p) for p in prompt_ids)
    ids = torch.full((len(prompt_ids), width), PAD, dtype=torch.long)
    mask = torch.zeros((len(prompt_ids), width), dtype=torch.long)
    for i, p in enumerate(prompt_ids):
        ids[i, : len(p)], mask[i, : len(p)] = torch.tensor(p), 1
    with torch.inference_mode():
        encoded = lm.model.get_encoder()(input_ids=ids.to(lm.device), attention_mask=mask.to(lm.device))
    return encoded, mask


class Row:
    """One prompt's decoding state, as `engine.methods.Run` keeps it."""

    def __init__(
        self, seq: List[int], seed: int, max_new_tokens: int, eos: frozenset, ledgers: Dict[str, Ledger]
    ):
        self.seq, self.n_prefix = list(seq), len(seq)
        self.generator = torch.Generator().manual_seed(seed)
        self.max_new_tokens, self.eos = max_new_tokens, eos
        self.trace: List[TraceStep] = []
        self.counts = dict(n_drafted=0, n_accepted=0, n_rejected=0)
        self.done = self.stopped_at_eos = False
        self.ledgers = ledgers

    @property
    def remaining(self) -> int:
        return self.max_new_tokens - (len(self.seq) - self.n_prefix)

    def emit(self, step: TraceStep) -> None:
        self.seq.append(step.token)
        self.trace.append(step)
        if step.token in self.eos:
            self.done = self.stopped_at_eos = True
        elif self.remaining <= 0:
            self.done = True
