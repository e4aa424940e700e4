r"""Speculative blocks of any $\gamma$ for a batch of prompts, decoder-only or encoder-decoder.

`batch.generate_batch` hands its work here when $\gamma > 1$, when a block ends with a bonus token, when
the models are encoder-decoders, or for the token cascade, the sequence cascade and the original BiLD.
Per block and row $i$ (Algorithm 4, as `engine.methods._speculative_block`):

1. draft $n_i = \min(\gamma, \text{budget left}_i)$ tokens $x_{t+j} \sim q_{t+j}$ (one drafter call per
   step, every row at once; a row with $n_i$ below the batch's largest feeds placeholders it never samples);
2. score every row's block with **one** verifier call, which gives $p_{t}, \dots, p_{t+n_i}$ per row;
3. `verification.verify_block` keeps $x_{t+j}$ with probability
   $\min\{1, \pi_{t+j}(x_{t+j}) / q_{t+j}(x_{t+j})\}$ up to the first rejection $j^*_i$, rows grouped by
   their $n_i$ and bonus, each from its own stream;
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
prefills, `feed_log`) are those of the single run: a `Ledger` per row and model records what
`generate` would feed, apart from the physical batch (which re-feeds and pads).

Its parts: `state` (each model's `Side` of the batch, each row's state and ledgers, the encoder pass) and
`steps` (each method's step for every running row, and `decode_blocks`).
"""

from .state import Side, encode_batch
from .steps import BLOCK_BONUS, CASCADE_METHODS, decode_blocks

__all__ = ["BLOCK_BONUS", "CASCADE_METHODS", "Side", "decode_blocks", "encode_batch"]
