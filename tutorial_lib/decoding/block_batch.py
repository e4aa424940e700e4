r"""Speculative blocks of any $\gamma$ for a batch of prompts, decoder-only or encoder-decoder.

`batch.generate_batch` hands its work here when $\gamma > 1$, when a block ends with a bonus token, when
the models are encoder-decoders, or for the token cascade, the sequence cascade and the original BiLD.
Per block and row $i$ (Algorithm 4, as `engine._speculative_block`):

1. draft $n_i = \min(\gamma, \text{budget left}_i)$ tokens $x_{t+j} \sim q_{t+j}$ (one drafter call per
   step, every row at once; a row with $n_i$ below the batch's largest feeds placeholders it never samples);
2. score every row's block with **one** verifier call, which gives $p_{t}, \dots, p_{t+n_i}$ per row;
3. `verification.verify_block` keeps $x_{t+j}$ with probability $\min\{1, \pi_{t+j}(x_{t+j}) / q_{t+j}(x_{t+j})\}$
   up to the first rejection $j^*_i$, rows grouped by their $n_i$ and bonus, each from its own stream;
4. replaces $x_{t+j^*_i}$ from $\mathrm{norm}(\max\{0, \pi - q\})$, or after a full block draws the bonus
   token from $p_{t+n_i}$ (`bonus="verifier"`; `"none"`: no bonus, the last draft is not scored);
5. keeps in each model's cache the longest prefix that agrees with the row's tokens (`Side.realign`).

**Ragged acceptance.** Rows keep different numbers of drafts, so after a block their sequences end at
different lengths. The batch keeps one cache per model, every row right-aligned on the last column
with masked padding on its left; step 5 moves each row's kept columns right by what it falls short
of the longest (a gather along the cache's sequence axis) and drops columns no row needs:

    before:  row a [pad | s_a  d1 d2 d3]    row b [pad | s_b  d1 d2 d3]   (a kept 3 drafts, b 1)
    after:   row a [pad | s_a  d1 d2 d3]    row b [pad pad pad | s_b d1]

Each row's tokens stay contiguous, so relative positions (T5's position bias) and position ids
$\mathrm{cumsum}(\text{mask}) - 1$ (rotary models) both see the row as if alone. The next block feeds every
row the same number $w$ of tokens (the largest backlog; a row with a shorter one re-feeds its last
cached tokens): 1 for the verifier, 1 or 2 for the drafter (after a full block the last draft was
never fed to it). Rows that stop (EOS, budget) leave the batch. This is the shift-and-cut of the open
transformers proposal for batched assisted generation (huggingface/transformers#32165, PR #32189); serving
engines such as vLLM instead give each sequence its own paged KV blocks, which a ragged step never moves.
The shift copies each cache once per block (one gather), which is small beside the forward passes here.

**The other methods** step the same batch: plain decoding (one call of one model per token); the
token cascade (Algorithm 2: the drafter's $q_t$ for every row, the verifier's $p_t$ for the whole batch
when any row's Chow test defers, each row sampling from its own choice); the sequence cascade
(equation 1: the drafter answers every row, then the verifier re-answers the rows whose answer
probability falls below $1 - \alpha$); BiLD (rows draft until their own fallback test or budget stops
them, one verifier call, each row rolls back at its own first rejected draft).

**Equal to `generate`.** Row $i$ draws from `torch.Generator().manual_seed(seeds[i])` in the engine's
order (drafts, coins, then residual or bonus), so it returns what `generate(..., gamma=gamma,
bonus=bonus, seed=seeds[i])` returns: the same tokens at $T = 0$, the same law at $T > 0$ (the same
draws, up to float noise between batched and single forward passes). The counters (`calls_by_k`,
prefills, `feed_log`) are those of the single run: a `_Ledger` per row and model records what
`generate` would feed, apart from the physical batch (which re-feeds and pads).
"""
from __future__ import annotations

import math
import time
from typing import Dict, List, Optional

import torch

from ..maths import targets
from ..maths.verification import block_targets, temperature_laws, verify_block
from ..models.adapter import LanguageModel
from .engine import Generation, TraceStep
from .shared_prefix import PAD, forward_rows

__all__ = ["BLOCK_BONUS", "CASCADE_METHODS", "Side", "decode_blocks", "encode_batch"]

#: The bonus options the batched blocks run (`"target"` needs one more drafter step per row: use `generate`).
BLOCK_BONUS = ("verifier", "none")
#: The other methods this module batches besides speculative and plain decoding (not the oracle).
CASCADE_METHODS = ("token_cascade", "seq_cascade", "bild")


class _Ledger:
    """What `engine._Run` would record for one model of one row: its session's tokens, calls and feeds."""

    def __init__(self, encoder_decoder: bool):
        self.encoder_decoder = encoder_decoder
        self.tokens: List[int] = []
        self.feed_log: List[tuple] = []
        self.calls_by_k: List[int] = []
        self.prefills = 0
        self.n_calls = 0

    def feed(self, tokens: List[int]) -> None:
        if not tokens:   # the engine then reads the logits it kept, with no call
            return
        if not self.tokens and not self.encoder_decoder:    # a decoder-only model's first call reads the prompt
            self.prefills += 1
        else:
            k = len(tokens)
            self.calls_by_k.extend([0] * (k - len(self.calls_by_k)))
            self.calls_by_k[k - 1] += 1
        self.feed_log.extend(zip(range(len(self.tokens), len(self.tokens) + len(tokens)), tokens))
        self.tokens.extend(tokens)
        self.n_calls += 1

    def backlog(self, seq: List[int]) -> List[int]:
        return seq[len(self.tokens):]

    def sync(self, seq: List[int]) -> None:
        del self.tokens[_agreement(self.tokens, seq):]


def _agreement(held: List[int], seq: List[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    n = min(len(held), len(seq))
    return next((i for i in range(n) if held[i] != seq[i]), n)


class Side:
    """One model's share of the batch: its cache, mask `(b, W)` (1 on a row's tokens) and, per row, the
    tokens its cache holds (in column order, placeholders included)."""

    def __init__(self, lm: LanguageModel, cache, mask: torch.Tensor, held: List[List[int]], encoder=None):
        self.lm, self.cache, self.mask, self.held = lm, cache, mask, held
        self.encoder = encoder                   # (encoder outputs, encoder mask) of an encoder-decoder
        self.time_s = 0.0

    def _layers(self):
        cache = getattr(self.cache, "self_attention_cache", self.cache)
        return [layer for layer in cache.layers if getattr(layer, "keys", None) is not None and layer.keys.numel()]

    def realign(self, keep: List[int]) -> None:
        """Keep row i's first `keep[i]` tokens, every row right-aligned on the last column (step 5)."""
        if all(k == len(h) for k, h in zip(keep, self.held)):
            return
        mask = self.mask                                                           # (b, W)
        b, width = mask.shape
        cols = torch.arange(width)
        kept = (mask == 1) & (mask.cumsum(1) <= torch.tensor(keep).unsqueeze(1))   # (b, W)
        last = torch.where(kept, cols, torch.full_like(cols, -1)).max(1).values    # (b,) last kept column
        new_width = int(last.max()) + 1
        shift = (new_width - 1) - last                                              # (b,) how far each row moves
        index = torch.arange(new_width).unsqueeze(0) - shift.unsqueeze(1)           # (b, W') source columns
        inside = index >= 0
        index = index.clamp_min(0)
        new_mask = mask.gather(1, index) * inside
        lead = int((new_mask.cumsum(1) == 0).all(0).sum())  # columns padding in every row: dropped
        new_mask, index = new_mask[:, lead:], index[:, lead:]
        for layer in self._layers():
            at = index.to(layer.keys.device)[:, None, :, None]
            layer.keys = layer.keys.gather(2, at.expand(-1, layer.keys.shape[1], -1, layer.keys.shape[3]))
            layer.values = layer.values.gather(2, at.expand(-1, layer.values.shape[1], -1, layer.values.shape[3]))
        self.mask = new_mask
        self.held = [h[:k] for h, k in zip(self.held, keep)]

    def feed(self, ids: List[List[int]], keep: int) -> torch.Tensor:
        """One call on `ids` (every row the same number of tokens); float32 logits `(b, keep, V)`."""
        tic = time.perf_counter()
        ids_t = torch.tensor(ids, dtype=torch.long)                                # (b, n)
        self.mask = torch.cat([self.mask, torch.ones_like(ids_t)], dim=1)
        if self.encoder is None:
            logits = forward_rows(self.lm, self.cache, ids_t, self.mask, keep=keep)
        else:
            encoded, encoder_mask = self.encoder
            device = self.lm.device
            with torch.inference_mode():
                out = self.lm.model(encoder_outputs=encoded, attention_mask=encoder_mask.to(device),
                                    decoder_input_ids=ids_t.to(device), decoder_attention_mask=self.mask.to(device),
                                    past_key_values=self.cache, use_cache=True)
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
        ids[i, :len(p)], mask[i, :len(p)] = torch.tensor(p), 1
    with torch.inference_mode():
        encoded = lm.model.get_encoder()(input_ids=ids.to(lm.device), attention_mask=mask.to(lm.device))
    return encoded, mask


class _Row:
    """One prompt's decoding state, as `engine._Run` keeps it."""

    def __init__(self, seq: List[int], seed: int, max_new_tokens: int, eos: frozenset, ledgers: Dict[str, _Ledger]):
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


def _catch_up(sides: Dict[str, Side], rows: List[_Row], which: str) -> List[List[int]]:
    """Realign `which` so that every row feeds the same number w of its last tokens; returns them."""
    side = sides[which]
    agree = [_agreement(h, r.seq) for h, r in zip(side.held, rows)]
    w = max(max(1, len(r.seq) - a) for r, a in zip(rows, agree))
    side.realign([min(a, len(r.seq) - w) for r, a in zip(rows, agree)])
    return [r.seq[-w:] for r in rows]


def _block(sides: Dict[str, Side], rows: List[_Row], *, rule, alpha, beta, gamma, bonus, temperature) -> None:
    """One block of every running row: steps 1-5 of the module docstring."""
    n = [min(gamma, r.remaining) for r in rows]
    n_max = max(n)
    drafts = [[] for _ in rows]
    q_steps, qu_steps = [], []
    # 1. Draft: step j feeds each row's previous draft (a row past its n_i feeds a placeholder).
    feed = _catch_up(sides, rows, "drafter")
    for r in rows:
        r.ledgers["drafter"].feed(r.ledgers["drafter"].backlog(r.seq))
    for j in range(n_max):
        if j:
            feed = [[d[j - 1] if j - 1 < len(d) else PAD] for d in drafts]
            for k, r in enumerate(rows):
                if j < n[k]:
                    r.ledgers["drafter"].feed([drafts[k][j - 1]])
        logits = sides["drafter"].feed(feed, keep=1)[:, -1]                        # (b, V)
        q_j, qu_j = temperature_laws(logits, temperature)
        q_steps.append(q_j)
        qu_steps.append(qu_j)
        for k, r in enumerate(rows):
            if j < n[k]:
                drafts[k].append(int(targets.sample(q_j[k], r.generator)))
    q, q_unscaled = torch.stack(q_steps, 1), torch.stack(qu_steps, 1)            # (b, n_max, V)
    # 2. One verifier call scores every row's block (p after the drafts too, for a bonus token).
    fed = [n_k if bonus != "none" else n_k - 1 for n_k in n]
    width = max(fed)
    backlog = _catch_up(sides, rows, "verifier")
    ids = [b + d[:f] + [PAD] * (width - f) for b, d, f in zip(backlog, drafts, fed)]
    for k, r in enumerate(rows):
        ledger = r.ledgers["verifier"]
        scored = ledger.backlog(r.seq) + drafts[k][:fed[k]]
        if scored:
            ledger.feed(scored)
    p_all, pu_all = temperature_laws(sides["verifier"].feed(ids, keep=width + 1), temperature)  # (b, width+1, V)
    # 3-4. Verify rows with the same block length and bonus together, each from its own generator.
    groups: Dict[tuple, List[int]] = {}
    for k, r in enumerate(rows):
        groups.setdefault((n[k], bonus != "none" and n[k] < r.remaining), []).append(k)
    for (n_g, with_bonus), members in groups.items():
        at = torch.tensor(members)
        q_g, p_g = q[at, :n_g], p_all[at, :n_g]
        pi, weight = block_targets(rule, q_g, p_g, alpha, q_unscaled=q_unscaled[at, :n_g],
                                   p_unscaled=pu_all[at, :n_g], beta=beta)
        verdict = verify_block(pi, q_g, torch.tensor([drafts[k] for k in members]),
                               [rows[k].generator for k in members],
                               bonus=p_all[at, n_g] if with_bonus else None, stop_tokens=rows[members[0]].eos)
        for g, k in enumerate(members):
            _emit_block(rows[k], drafts[k], verdict, g, q_g[g], p_g[g], pi[g], weight[g], p_all[k, n_g] if with_bonus else None)
    # 5. The ledgers crop as the engine's sessions do; the caches are realigned at the next feed.
    for r in rows:
        for ledger in r.ledgers.values():
            ledger.sync(r.seq)


def _emit_block(row: _Row, drafts, verdict, g, q, p, pi, weight, p_n) -> None:
    n_accepted, extra = int(verdict.n_accepted[g]), int(verdict.extra[g])
    row.counts["n_drafted"] += len(drafts)
    row.counts["n_accepted"] += n_accepted
    for j, x in enumerate(drafts[:n_accepted]):
        row.emit(TraceStep(x, "draft", True, q=float(q[j, x]), p=float(p[j, x]), pi=float(pi[j, x]),
                           deferral=float(weight[j])))
    if bool(verdict.rejected[g]):
        row.counts["n_rejected"] += 1
        j, y = n_accepted, extra
        row.emit(TraceStep(y, "residual", False, q=float(q[j, y]), p=float(p[j, y]), pi=float(pi[j, y]),
                           deferral=float(weight[j])))
    elif extra >= 0:   # the bonus token, from p_{t + n}
        row.emit(TraceStep(extra, "bonus", p=float(p_n[extra]), pi=float(p_n[extra])))


def _plain(sides: Dict[str, Side], rows: List[_Row], which: str, temperature, logs=None) -> None:
    """One step of plain decoding with one model (`engine._plain_step`) for every running row; `logs`
    (row id -> list) collects each sampled token's $T = 1$ log-probability (the sequence cascade's score)."""
    feed = _catch_up(sides, rows, which)
    for r in rows:
        r.ledgers[which].feed(r.ledgers[which].backlog(r.seq))
    law, unscaled = temperature_laws(sides[which].feed(feed, keep=1)[:, -1], temperature)   # (b, V)
    for k, r in enumerate(rows):
        x = int(targets.sample(law[k], r.generator))
        prob = float(law[k, x])
        if logs is not None:
            logs[id(r)].append(math.log(max(float(unscaled[k, x]), 1e-300)))
        r.emit(TraceStep(x, which, q=prob if which == "drafter" else float("nan"),
                         p=prob if which == "verifier" else float("nan"), pi=prob,
                         deferral=1.0 if which == "verifier" else 0.0))


def _token_cascade(sides: Dict[str, Side], rows: List[_Row], alpha, temperature) -> None:
    """One step of Algorithm 2 (`engine._token_cascade`) for every running row: the drafter's $q_t$, and
    where Chow's rule defers, the verifier's $p_t$ (computed for the whole batch when any row defers;
    each row's ledger counts only the calls `generate` makes)."""
    feed = _catch_up(sides, rows, "drafter")
    for r in rows:
        r.ledgers["drafter"].feed(r.ledgers["drafter"].backlog(r.seq))
    q, q_unscaled = temperature_laws(sides["drafter"].feed(feed, keep=1)[:, -1], temperature)   # (b, V)
    defer = targets.deferral_decision("chow", q, q, alpha, q_unscaled=q_unscaled)             # (b,)
    p = None
    if bool(defer.any()):
        for k, r in enumerate(rows):
            if bool(defer[k]):
                r.ledgers["verifier"].feed(r.ledgers["verifier"].backlog(r.seq))
        p, _ = temperature_laws(sides["verifier"].feed(_catch_up(sides, rows, "verifier"), keep=1)[:, -1],
                                temperature)
    for k, r in enumerate(rows):
        if bool(defer[k]):
            x = int(targets.sample(p[k], r.generator))
            r.emit(TraceStep(x, "verifier", q=float(q[k, x]), p=float(p[k, x]), pi=float(p[k, x]), deferral=1.0))
        else:
            x = int(targets.sample(q[k], r.generator))
            r.emit(TraceStep(x, "drafter", q=float(q[k, x]), pi=float(q[k, x]), deferral=0.0))


def _bild(sides: Dict[str, Side], rows: List[_Row], threshold, gamma, fallback, temperature) -> None:
    r"""One block of the original BiLD (`engine._bild`) for every running row: draft while the drafter's
    $T = 1$ top probability stays at or above `fallback` (at most $n_i$ tokens), one verifier call, roll
    back at the first draft with $-\log p(x) >$ `threshold` to the verifier's own token there."""
    n = [min(gamma, r.remaining) for r in rows]
    drafts, q_rows = [[] for _ in rows], [[] for _ in rows]
    drafting = [n_k > 0 for n_k in n]
    feed = _catch_up(sides, rows, "drafter")
    for r in rows:
        r.ledgers["drafter"].feed(r.ledgers["drafter"].backlog(r.seq))
    j = 0
    while any(drafting):
        if j:
            feed = [[d[-1] if d else PAD] for d in drafts]
            for k, r in enumerate(rows):
                if drafting[k]:
                    r.ledgers["drafter"].feed([drafts[k][-1]])
        q_j, qu_j = temperature_laws(sides["drafter"].feed(feed, keep=1)[:, -1], temperature)   # (b, V)
        top = qu_j.max(-1).values
        for k, r in enumerate(rows):
            if not drafting[k]:
                continue
            if float(top[k]) < fallback:   # the small model is unsure: hand over to the large one
                drafting[k] = False
                continue
            drafts[k].append(int(targets.sample(q_j[k], r.generator)))
            q_rows[k].append(q_j[k])
            drafting[k] = len(drafts[k]) < n[k]
        j += 1
    width = max(len(d) for d in drafts)
    backlog = _catch_up(sides, rows, "verifier")
    ids = [b + d + [PAD] * (width - len(d)) for b, d in zip(backlog, drafts)]
    for k, r in enumerate(rows):
        r.ledgers["verifier"].feed(r.ledgers["verifier"].backlog(r.seq) + drafts[k])
    p_all, pu_all = temperature_laws(sides["verifier"].feed(ids, keep=width + 1), temperature)  # (b, width+1, V)
    for k, r in enumerate(rows):
        p, pu, d = p_all[k], pu_all[k], drafts[k]
        r.counts["n_drafted"] += len(d)
        n_accepted = 0
        for i, x in enumerate(d):
            # a rollback to the drafted token itself changes nothing: it counts as an acceptance
            if -math.log(max(float(pu[i, x]), 1e-300)) > threshold:
                y = int(targets.sample(p[i], r.generator))
                if y != x:
                    r.counts["n_rejected"] += 1
                    r.emit(TraceStep(y, "residual", False, q=float(q_rows[k][i][y]), p=float(p[i, y]),
                                     pi=float(p[i, y]), deferral=1.0))
                    break
            n_accepted += 1
            r.emit(TraceStep(x, "draft", True, q=float(q_rows[k][i][x]), p=float(p[i, x]),
                             pi=float(q_rows[k][i][x]), deferral=0.0))
            if r.done:
                break
        else:
            if not r.done:
                y = int(targets.sample(p[len(d)], r.generator))
                r.emit(TraceStep(y, "verifier", p=float(p[len(d), y]), pi=float(p[len(d), y]), deferral=1.0))
        r.counts["n_accepted"] += n_accepted
        for ledger in r.ledgers.values():
            ledger.sync(r.seq)


def _loop(sides: Dict[str, Side], rows: List[_Row], step, bar, max_new_tokens: int) -> None:
    """Run `step(sides, running rows)` until every row of `rows` is done; finished rows leave the batch."""
    live = list(range(len(rows)))
    while live:
        running = [rows[i] for i in live]
        before = [len(r.seq) for r in running]
        step(sides, running)
        if bar is not None:  # the bar counts the token budget: a row that stops hands in the rest
            bar.update(sum((len(r.seq) - b) if not r.done else max_new_tokens - (b - r.n_prefix)
                           for r, b in zip(running, before)))
        keep = [k for k, r in enumerate(running) if not r.done]
        if len(keep) < len(live):
            if keep:
                for side in sides.values():
                    side.select(keep)
            live = [live[k] for k in keep]


def _seq_cascade(sides: Dict[str, Side], rows: List[_Row], alpha, aggregate, temperature, bar,
                 max_new_tokens) -> None:
    r"""Equation (1) (`engine._seq_cascade`): the drafter answers every row; rows whose $T = 1$ answer
    probability (`aggregate` of its tokens' log-probabilities) is below $1 - \alpha$ are answered again
    by the verifier, their streams continuing where the drafter left them."""
    logs = {id(r): [] for r in rows}

    def drafter_step(side, running):
        _plain(side, running, "drafter", temperature, logs)
    _loop({"drafter": sides["drafter"]}, rows, drafter_step, None, max_new_tokens)
    deferred = []
    for k, r in enumerate(rows):
        log_q = torch.tensor(logs[id(r)], dtype=torch.float64)
        score = {"sequence": log_q.sum(), "mean": log_q.mean(), "min": log_q.min()}[aggregate].exp()
        if float(score) < 1.0 - alpha:
            del r.seq[r.n_prefix:]
            r.trace.clear()
            r.done = r.stopped_at_eos = False
            deferred.append(k)
    if bar is not None:
        bar.update(len(rows) * max_new_tokens - len(deferred) * max_new_tokens)
    if deferred:
        sides["verifier"].select(deferred)
        _loop({"verifier": sides["verifier"]}, [rows[k] for k in deferred],
              lambda side, running: _plain(side, running, "verifier", temperature), bar, max_new_tokens)


def decode_blocks(lms: Dict[str, LanguageModel], verifier: LanguageModel, prompt_ids: List[List[int]],
                  seeds: List[int], sides: Dict[str, Side], *, method: str, rule, alpha, beta, gamma: int,
                  bonus: str, temperature: float, max_new_tokens: int, eos: frozenset, aggregate: str = "sequence",
                  bild_threshold: Optional[float] = None, bild_fallback: float = 0.5, bar=None,
                  setup_s: float = 0.0) -> List[Generation]:
    """Decode one chunk whose models' states are `sides` (made by `batch`); one `Generation` per row.

    `method`: `"speculative"` (blocks of `gamma`), `"drafter"` / `"verifier"` (plain decoding),
    `"token_cascade"` (Algorithm 2), `"seq_cascade"` (equation 1, `aggregate` as in `generate`) or `"bild"`
    (the original Big-Little Decoder, `bild_threshold` and `bild_fallback` as in `generate`).
    `setup_s` (the chunk's prefill or encoder passes) is added to the batch's time before it is split
    evenly among the rows, as `generate_batch` does at gamma = 1.
    """
    start = time.perf_counter()
    encoder_decoder = verifier.is_encoder_decoder
    rows = [_Row(verifier.decoder_prefix(ids), s, max_new_tokens, eos,
                 {which: _Ledger(encoder_decoder) for which in lms}) for ids, s in zip(prompt_ids, seeds)]
    with targets.trusted_inputs():  # every law below comes from `probabilities`
        if method == "speculative":
            _loop(sides, rows, lambda s, running: _block(s, running, rule=rule, alpha=alpha, beta=beta, gamma=gamma,
                                                         bonus=bonus, temperature=temperature), bar, max_new_tokens)
        elif method == "token_cascade":
            _loop(sides, rows, lambda s, running: _token_cascade(s, running, alpha, temperature), bar, max_new_tokens)
        elif method == "seq_cascade":
            _seq_cascade(sides, rows, alpha, aggregate, temperature, bar, max_new_tokens)
        elif method == "bild":
            _loop(sides, rows, lambda s, running: _bild(s, running, bild_threshold, gamma, bild_fallback, temperature),
                  bar, max_new_tokens)
        else:
            _loop(sides, rows, lambda s, running: _plain(s, running, method, temperature), bar, max_new_tokens)
    b = len(rows)
    wall = (setup_s + time.perf_counter() - start) / b
    return [_generation(r, ids, verifier, sides, method=method, rule=rule, alpha=alpha, gamma=gamma,
                        bild_threshold=bild_threshold,
                        temperature=temperature, wall_s=wall, b=b, encoder_decoder=encoder_decoder)
            for r, ids in zip(rows, prompt_ids)]


def _generation(row: _Row, prompt, verifier, sides, *, method, rule, alpha, gamma, temperature, wall_s, b,
                encoder_decoder, bild_threshold=None) -> Generation:
    tokens = row.seq[row.n_prefix:]
    calls = {}
    used = {which: ledger for which, ledger in row.ledgers.items() if ledger.n_calls}  # sessions `generate` starts
    for which in ("drafter", "verifier"):
        ledger = used.get(which)
        calls[f"{which}_calls_by_k"] = ledger.calls_by_k if ledger else []
        calls[f"{which}_prefills"] = ledger.prefills if ledger else 0
        calls[f"{which}_encoder_passes"] = int(encoder_decoder and ledger is not None)
    return Generation(
        tokens=tokens, text=verifier.decode(tokens), prompt_tokens=prompt, method=method, rule=rule, alpha=alpha,
        gamma=gamma, temperature=temperature, bild_threshold=bild_threshold,
        n_verifier_calls=row.ledgers["verifier"].n_calls if "verifier" in row.ledgers else 0,
        n_drafter_calls=row.ledgers["drafter"].n_calls if "drafter" in row.ledgers else 0,
        wall_time_s=wall_s, drafter_time_s=sides["drafter"].time_s / b if "drafter" in sides else 0.0,
        verifier_time_s=sides["verifier"].time_s / b if "verifier" in sides else 0.0,
        stopped_at_eos=row.stopped_at_eos, trace=row.trace,
        feed_log={which: list(ledger.feed_log) for which, ledger in used.items()}, **row.counts, **calls)
