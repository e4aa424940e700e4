r"""A prompt prefix shared by many rows, run once per model and reused by every batch.

Every item of a few-shot task starts with the same instructions and worked examples; only the
question at the end differs. Running that prefix again for every item (and every configuration of a
sweep) is most of a prefill's work. Here it runs once, as one row; a batch of `b` rows gets a copy of
its KV cache repeated `b` times, and each row's own tokens are fed after it, left-padded so that
every row ends in the last column:

    row i:  [ prefix (shared) | padding (masked) | rest_i ]
    mask:   [ 1 ... 1         | 0 ... 0          | 1 ... 1 ]
    position ids: cumsum(mask) - 1

so row $i$ sees positions $0, 1, \dots$ exactly as if it were alone (the padding sits between prefix
and rest, hidden by the mask, and takes no position). Later columns (decode steps) append to the
mask as in `batch`. Only decoder-only `transformers` models share prefixes (an encoder-decoder's
prompt goes through the encoder, which has no cache to share).
"""

from __future__ import annotations

import copy
import time
from typing import List, Optional, Sequence, Tuple

import torch

__all__ = ["PAD", "common_prefix_length", "SharedPrefix", "forward_rows"]

# Fed at padding. Any id works: the attention mask hides it.
PAD = 0


def common_prefix_length(sequences: Sequence[Sequence[int]], keep_last: int = 1) -> int:
    """Length of the longest prefix every sequence starts with, leaving each at least `keep_last`
    tokens of its own (the token whose next-token logits a caller needs must be fed, not cached)."""
    sequences = [list(s) for s in sequences]
    if not sequences:
        return 0
    n = max(min(len(s) for s in sequences) - keep_last, 0)
    first = sequences[0]
    for s in sequences[1:]:
        k = 0
        while k < n and s[k] == first[k]:
            k += 1
        n = k
    return n


def forward_rows(lm, cache, ids: torch.Tensor, mask: torch.Tensor, keep: int = 1) -> torch.Tensor:
    """One call of `lm` on `ids` `(b, n)` after `cache`; `mask` `(b, cache + n)` covers both.

    Returns float32 logits of the last `keep` columns, `(b, keep, V)`; only those are computed
    (`logits_to_keep`), since at V = 151,936 every column's logits would not fit.
    """
    device = lm.device
    mask = mask.to(device)
    position_ids = (mask.cumsum(-1) - 1).clamp_min(0)[:, -ids.shape[1] :]  # (b, n)
    extra = {"logits_to_keep": keep} if lm.has_logits_to_keep else {}
    with torch.inference_mode():
        out = lm.model(
            input_ids=ids.to(device),
            attention_mask=mask,
            position_ids=position_ids,
            past_key_values=cache,
            use_cache=True,
            **extra,
        )
        return out.logits[:, -keep:, : lm.vocab_size].float().cpu()  # (b, keep, V)


class SharedPrefix:
    """The KV cache of `prefix` for `lm`, computed once; `batch(rests)` feeds rows after it.

    `time_s` accumulates the seconds of every forward pass made through this object (the prefix's
    included), `tokens_fed` the tokens fed, padding included.
    """

    def __init__(self, lm, prefix: Sequence[int]):
        from transformers import DynamicCache

        if lm.is_toy or lm.is_encoder_decoder:
            raise ValueError(
                f"{lm.name} is not a decoder-only transformers model; a shared prefix cache "
                "needs one (feed toy and encoder-decoder models one prompt at a time)."
            )
        self.lm, self.prefix = lm, [int(t) for t in prefix]
        self.time_s, self.tokens_fed, self.prefix_time_s = 0.0, 0, 0.0
        self._cache = DynamicCache()
        if self.prefix:
            tic = time.perf_counter()
            forward_rows(
                lm,
                self._cache,
                torch.tensor([self.prefix]),
                torch.ones(1, len(self.prefix), dtype=torch.long),
            )
            self.prefix_time_s = time.perf_counter() - tic
            self.time_s += self.prefix_time_s
            self.tokens_fed += len(self.prefix)

    def check_rows(self, rows: Sequence[Sequence[int]]) -> None:
        n = len(self.prefix)
        for i, row in enumerate(rows):
            if list(row[:n]) != self.prefix:
                raise ValueError(
                    f"row {i} does not start with the shared prefix of {n} tokens; build the "
                    "SharedPrefix from common_prefix_length of these rows."
                )

    def cache_for(self, b: int):
        """A fresh cache holding the prefix `b` times (the shared one is never modified)."""
        from transformers import DynamicCache

        if not self.prefix:
            return DynamicCache()
        cache = copy.deepcopy(self._cache)
        if b > 1:
            cache.batch_repeat_interleave(b)
        return cache

    def batch(
        self, rows: Sequence[Sequence[int]], *, keep: int = 1
    ) -> Tuple[object, torch.Tensor, torch.Tensor]:
        """Feed each row's tokens after the prefix (rows are whole sequences starting with it).

        Returns `(cache, mask, logits)`: the batch's cache and mask `(b, width)` for further steps, and
        the float32 logits of the last `keep` columns `(b, keep, V)` (row i's last `keep` tokens when
        its own part is at least that long). A row that is the prefix alone gets masked padding only.
        """
        self.check_rows(rows)
        n = len(self.prefix)
        rests = [list(row[n:]) for row in rows]
        width = max(len(r) for r in rests)
        if width == 0:
            raise ValueError(
                "every row is the shared prefix alone; there is nothing to feed (use cache_for)."
            )
        b = len(rests)
        ids = torch.full((b, width), PAD, dtype=torch.long)  # (b, L)
        mask = torch.zeros((b, n + width), dtype=torch.long)  # (b, P + L)
        mask[:, :n] = 1
        for i, rest in enumerate(rests):
            if rest:
                ids[i, width - len(rest) :] = torch.tensor(rest)
                mask[i, n + width - len(rest) :] = 1
        cache = self.cache_for(b)
        tic = time.perf_counter()
        logits = forward_rows(self.lm, cache, ids, mask, keep=min(keep, width))
        self.time_s += time.perf_counter() - tic
        self.tokens_fed += b * width
        return cache, mask, logits

    def last_logits(
        self, rows: Sequence[Sequence[int]], counts: Sequence[int], batch_size: Optional[int] = None
    ) -> List[torch.Tensor]:
        """The logits after each of row i's last `counts[i]` tokens, `(counts[i], V)` float32 per row,
        in batches of `batch_size` rows (default all), rows of similar length batched together."""
        rows = [list(r) for r in rows]
        if len(counts) != len(rows):
            raise ValueError(f"{len(counts)} counts for {len(rows)} rows; give one count per row.")
        n = len(self.prefix)
        for i, (row, c) in enumerate(zip(rows, counts)):
            if not 1 <= c <= len(row) - n:
                raise ValueError(
                    f"counts[{i}]={c}: a row's logits can be kept for 1 to {len(row) - n} of its "
                    "own tokens (those after the shared prefix)."
                )
        size = batch_size or len(rows)
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        out: List[Optional[torch.Tensor]] = [None] * len(rows)
        for start in range(0, len(order), size):
            members = order[start : start + size]
            keep = max(counts[i] for i in members)
            _, _, logits = self.batch([rows[i] for i in members], keep=keep)  # (b, keep, V)
            for j, i in enumerate(members):
                out[i] = logits[j, keep - counts[i] :].clone()
        return out
