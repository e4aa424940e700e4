r"""Speculative cascades for a batch of prompts: at $\gamma = 1$ every row in lockstep (below); blocks of
$\gamma > 1$ drafts (rows keeping different numbers of them), Algorithm 4's bonus token, encoder-decoder
pairs and the sequential cascades in `block_batch`.

`engine.generate` runs one prompt at a time; on a CPU or a GPU a batch of prompts costs little more
per forward pass than one, so a sweep over many prompts (and many rules and $\alpha$) is far
cheaper batched. At $\gamma = 1$ without a bonus token (the authors' colab) every step emits exactly
one token per row, so all rows stay aligned and need no cache cropping. Per step $t$ and row:

1. feed the last emitted token $x_{t-1}$ to both models (one call each, the whole batch at once),
   which gives the drafter's $q_t$ and the verifier's $p_t$ for the same prefix;
2. build the target $\pi_t = \mathbb{T}(q_t, p_t)$ of the rule (`targets.target_distribution`);
3. draw $x \sim q_t$ and keep it with probability $\min\{1, \pi_t(x) / q_t(x)\}$, else replace it by a
   sample of the residual $\mathrm{norm}(\max\{0, \pi_t - q_t\})$: `verification.verify_block` with
   one draft per row and one random stream per row, the step `engine.generate` runs too.

The emitted token then follows $\min\{q_t, \pi_t\} + \big(\sum_v \max\{0, q_t(v) - \pi_t(v)\}\big)\,
\mathrm{norm}(\max\{0, \pi_t - q_t\})$, which is $\pi_t$ for every rule whose target sums to one
(`accept_reject.output_distribution`). As in the engine, the sampled laws are temperature-scaled and the
decisions (max-probability tests, acceptance sets) use the $T = 1$ laws.

How the rows share the forward passes:

The shared steps live in `lockstep` (also used by `config_batch`).

- prompts of different lengths are *left*-padded, so every row's next token sits in the last
  column; an attention mask (1 on real tokens, 0 on padding) covers cache and new tokens (the two
  models are fed the same tokens, so one mask serves both), and position ids are
  `cumsum(mask) - 1`, so each row sees positions $0, 1, \dots$ as if alone (rotary models would
  not notice a shift, models with absolute positions would);
- one `DynamicCache` per model holds the whole batch; the prompts minus their last token are
  prefilled once (`prefill_batch`), the first step feeds the last prompt token;
- the prompts' shared prefix (a few-shot task's instructions and examples) runs once per model and
  every chunk starts from a copy of its cache (`shared_prefix`), so a prefill feeds only each
  row's own tokens: the padding sits between prefix and row, masked, and takes no position;
- a row that stopped (EOS or `max_new_tokens`) leaves the batch: its cache entries are dropped
  (`batch_select_indices`) and the next steps compute the running rows only;
- row $i$ draws from its own `torch.Generator().manual_seed(seeds[i])` in exactly the order
  `generate(..., gamma=1, bonus="none", seed=seeds[i])` does (draft, coin, residual), so a row's
  output equals that single run: token for token at $T = 0$, and at $T > 0$ except where float
  noise between a batched and a single forward pass moves a draw across a boundary.
"""

from __future__ import annotations

import copy
import time
from typing import Dict, List, Optional, Sequence

import torch

from ..checks import check_gamma
from ..maths import laws
from ..models.language_model import LanguageModel
from .generation import Generation
from .lockstep import (
    BATCH_METHODS,
    BatchPrefill,
    Chunk,
    MODELS_USED,
    Rows,
    build_feed_log,
    check_batch_size,
    check_prefill,
    check_seeds,
    encode_prompts,
    forward_step,
    load_models,
    plain_step,
    prefill_chunks,
    row_generation,
    speculative_step,
)
from .options import check_generate_options, stop_tokens
from .block_batch import BLOCK_BONUS, CASCADE_METHODS, Side, decode_blocks, encode_batch

__all__ = ["BATCH_METHODS", "prefill_batch", "generate_batch"]


def prefill_batch(
    drafter,
    verifier,
    prompts,
    *,
    batch_size: Optional[int] = None,
    progress: bool = False,
    shared_vocabulary: bool = False,
) -> BatchPrefill:
    """Run each model once on the left-padded prompts (minus their last token) and keep the caches.

    `prompts` are texts or token-id lists (as for `generate_batch`, which must get the same
    prompts); with `batch_size`, rows are prefilled in chunks of that many. Pass the result as
    `generate_batch(..., prefill=...)` to every configuration of a sweep: it is never modified.
    """
    drafter, verifier = load_models(drafter, verifier, shared_vocabulary)
    batch_size = check_batch_size(batch_size)
    prompt_ids = encode_prompts(verifier, prompts)
    return prefill_chunks(drafter, verifier, prompt_ids, ("drafter", "verifier"), batch_size, progress)


# ---- decoding ---------------------------------------------------------------------------------


def _decode_chunk(
    chunk: Chunk,
    lms: Dict[str, LanguageModel],
    verifier: LanguageModel,
    prompt_ids,
    seeds,
    *,
    method,
    rule,
    alpha,
    beta,
    temperature,
    max_new_tokens,
    eos,
    bar,
) -> List[Generation]:
    start = time.perf_counter()
    ids = [prompt_ids[i] for i in chunk.rows]
    rows = Rows(ids, [seeds[i] for i in chunk.rows], max_new_tokens, eos)
    # Copies: the prefill stays as it was, for the next configuration of a sweep.
    caches = {which: copy.deepcopy(chunk.caches[which]) for which in lms}
    mask = chunk.mask  # (b, M + steps so far)
    time_s = {which: chunk.time_s.get(which, 0.0) for which in lms}
    live = list(range(len(ids)))  # the rows still running, in the caches' batch order
    with laws.trusted_inputs():  # every law below comes from `probabilities`
        while live:
            feed = rows.last[live]  # (k,)
            mask = torch.cat([mask, torch.ones(len(live), 1, dtype=mask.dtype)], dim=1)  # (k, M + steps + 1)
            logits = {}
            for which, lm in lms.items():
                tic = time.perf_counter()
                logits[which] = forward_step(lm, caches[which], feed.unsqueeze(1), mask)  # (k, V)
                time_s[which] += time.perf_counter() - tic
            if method == "speculative":
                speculative_step(rows, logits, live, rule, alpha, beta, temperature)
            else:
                plain_step(rows, logits[method], live, method, temperature)
            if bar is not None:  # the bar counts the token budget: a row that stops hands in the rest
                bar.update(
                    sum(1 if rows.active[r] else max_new_tokens - len(rows.tokens[r]) + 1 for r in live)
                )
            # Rows that stopped leave the batch (and their cache entries with them): the next step
            # computes only running rows, so a long answer no longer makes every finished row pay.
            keep = [k for k, r in enumerate(live) if rows.active[r]]
            if len(keep) < len(live):
                if keep:
                    index = torch.tensor(keep)
                    for cache in caches.values():
                        cache.batch_select_indices(
                            index.cpu()
                        )  # a CPU index serves every layer's device (device_map)
                    mask = mask[index]
                live = [live[k] for k in keep]
    # The batch's cost, prefill included, split evenly among its rows.
    b = len(ids)
    prefill_s = sum(chunk.time_s.get(which, 0.0) for which in lms)  # only the models this method used
    wall = (prefill_s + time.perf_counter() - start) / b
    used = tuple(lms)
    return [
        row_generation(
            rows,
            r,
            ids[r],
            verifier,
            method=method,
            rule=rule,
            alpha=alpha,
            temperature=temperature,
            used=used,
            wall_s=wall,
            time_s={w: time_s.get(w, 0.0) / b for w in used},
            feed_log=build_feed_log(ids[r], rows.tokens[r], used),
        )
        for r in range(b)
    ]


def generate_batch(
    drafter,
    verifier,
    prompts,
    *,
    method: str = "speculative",
    rule: Optional[str] = None,
    alpha: Optional[float] = None,
    beta=1.0,
    temperature: float = 0.0,
    max_new_tokens: int = 64,
    seeds: Optional[Sequence[int]] = None,
    eos_token_id=None,
    prefill: Optional[BatchPrefill] = None,
    batch_size: Optional[int] = None,
    progress: bool = False,
    gamma: int = 1,
    bonus: Optional[str] = None,
    aggregate: str = "sequence",
    bild_threshold: Optional[float] = None,
    bild_fallback: float = 0.5,
    shared_vocabulary: bool = False,
) -> List[Generation]:
    r"""Generate continuations of many `prompts` at once; one `Generation` per prompt, in order.

    `method="speculative"` (at the default `gamma=1`) is speculative execution at $\gamma = 1$ with target
    $\pi = \mathbb{T}(q, p)$ of `rule` (any of `rules.RULES`, None meaning "spec"; `alpha` and `beta` as in
    `engine.generate`): per step each row drafts $x \sim q_t$, keeps it with probability
    $\min\{1, \pi_t(x)/q_t(x)\}$ and otherwise samples the residual $\mathrm{norm}(\max\{0, \pi_t - q_t\})$.
    `method="drafter"` / `"verifier"` decode with one model. Row `i` uses seed `seeds[i]`
    (default `i`) and returns what `generate(drafter, verifier, prompts[i], method=method, rule=rule,
    alpha=alpha, beta=beta, gamma=1, bonus="none", temperature=temperature, seed=seeds[i])` returns:
    the same tokens (at $T > 0$ up to rare draws that float noise between batched and single forward
    passes moves) and the same counters and trace. Each step is one call of each model per row, so
    `n_drafter_calls == n_verifier_calls == len(tokens)` for the speculative method.

    Times: the batch's wall time and each model's forward time, the prefill included (even a
    reused one, so the numbers compare with `generate`), divided evenly among the rows of its chunk.

    Models must be `transformers` models (not toy models: use `engine.generate`); encoder-decoders run
    through `block_batch` (below). `prefill` is a `prefill_batch` of the same models and prompts, shared by
    many calls (its caches are copied, never modified); without it the prompts are prefilled here.
    `batch_size` rows share a forward pass (default: all), `progress=True` shows a bar over the
    token budget. `eos_token_id` is as in `generate` (`()` never stops early).

    `gamma` > 1 (or `bonus="verifier"`) runs Algorithm 4's blocks for every row at once (`block_batch`):
    each row drafts up to `gamma` tokens, one verifier call scores every row's block, rows keep different
    numbers of drafts and continue from their own positions. `bonus` is as in `generate` (`"verifier"` or
    `"none"`; None means `"none"` at `gamma=1` and `"verifier"`, Algorithm 4's, above). Row `i` then returns
    what `generate(..., gamma=gamma, bonus=bonus, seed=seeds[i])` returns: the same tokens at $T = 0$, the
    same draws at $T > 0$ (up to float noise), the same counters (`calls_by_k`, prefills, `feed_log`).
    Encoder-decoder pairs (T5) run this way at any `gamma`, and plain decoding with either model too
    (their encoders read the right-padded prompts once per chunk; `prefill` is for decoder-only pairs).
    So do the token cascade (`method="token_cascade"`, Algorithm 2: the verifier's pass is computed for
    the whole batch when any row defers), the sequence cascade (`"seq_cascade"`, equation 1 with
    `aggregate`: the drafter answers every row, then the verifier the rows that defer) and the original
    BiLD (`"bild"` with `bild_threshold`, `bild_fallback`: rows draft blocks of their own lengths).
    """
    if method not in BATCH_METHODS + CASCADE_METHODS:
        raise ValueError(
            f"method={method!r} is not batched; generate_batch runs "
            f"{', '.join(BATCH_METHODS + CASCADE_METHODS)}. Use tutorial_lib.generate (or generate_many) "
            "for the other methods."
        )
    if isinstance(gamma, str) or not isinstance(gamma, int) and hasattr(gamma, "next_gamma"):
        raise ValueError(
            f"gamma={gamma!r}: generate_batch runs a fixed block size (a batch shares one verifier "
            "call per block); pick one, or use tutorial_lib.generate(..., gamma='auto') per prompt."
        )
    gamma = check_gamma(gamma)
    if bonus is None:
        bonus = "none" if gamma == 1 else "verifier"
    if bonus not in BLOCK_BONUS:
        raise ValueError(
            f"bonus={bonus!r}: generate_batch runs bonus in {BLOCK_BONUS}; bonus='target' needs one "
            "more drafter step per row, use tutorial_lib.generate(..., bonus='target')."
        )
    drafter, verifier = load_models(drafter, verifier, shared_vocabulary, encoder_decoder=True)
    o = check_generate_options(
        method=method,
        rule=rule,
        alpha=alpha,
        gamma=gamma,
        temperature=temperature,
        max_new_tokens=max_new_tokens,
        aggregate=aggregate,
        bonus=bonus,
        bild_threshold=bild_threshold,
        bild_fallback=bild_fallback,
    )
    rule, alpha, temperature, max_new_tokens = o.rule, o.alpha, o.temperature, o.max_new_tokens
    batch_size = check_batch_size(batch_size)
    prompt_ids = encode_prompts(verifier, prompts)
    seeds = check_seeds(seeds, len(prompt_ids))
    eos = stop_tokens(eos_token_id, verifier)
    which = MODELS_USED.get(method, ("drafter", "verifier"))
    if verifier.is_encoder_decoder or gamma > 1 or bonus != "none" or method in CASCADE_METHODS:
        return _generate_blocks(
            drafter,
            verifier,
            prompt_ids,
            seeds,
            which,
            prefill,
            batch_size,
            progress,
            method=method,
            rule=rule,
            alpha=alpha,
            beta=beta,
            gamma=gamma,
            bonus=bonus,
            temperature=temperature,
            max_new_tokens=max_new_tokens,
            eos=eos,
            aggregate=o.aggregate,
            bild_threshold=o.bild_threshold,
            bild_fallback=o.bild_fallback,
        )
    if prefill is None:
        prefill = prefill_chunks(drafter, verifier, prompt_ids, which, batch_size, progress)
    else:
        check_prefill(prefill, drafter, verifier, prompt_ids, which, batch_size)
    lms = {name: lm for name, lm in (("drafter", drafter), ("verifier", verifier)) if name in which}
    from tqdm.auto import tqdm

    bar = tqdm(
        total=len(prompt_ids) * max_new_tokens,
        desc=method if rule is None else f"{rule} {alpha:g}",
        unit="tok",
        disable=not progress,
    )
    try:
        out = []
        for chunk in prefill.chunks:
            out += _decode_chunk(
                chunk,
                lms,
                verifier,
                prompt_ids,
                seeds,
                method=method,
                rule=rule,
                alpha=alpha,
                beta=beta,
                temperature=temperature,
                max_new_tokens=max_new_tokens,
                eos=eos,
                bar=bar if progress else None,
            )
    finally:
        bar.close()
    return out


def _generate_blocks(
    drafter,
    verifier,
    prompt_ids,
    seeds,
    which,
    prefill,
    batch_size,
    progress,
    *,
    method,
    rule,
    alpha,
    beta,
    gamma,
    bonus,
    temperature,
    max_new_tokens,
    eos,
    aggregate,
    bild_threshold,
    bild_fallback,
) -> List[Generation]:
    """`generate_batch` at any gamma and for encoder-decoders: each chunk's models set up (prefill or
    encoder passes), then `block_batch.decode_blocks`."""
    from tqdm.auto import tqdm

    lms = {name: lm for name, lm in (("drafter", drafter), ("verifier", verifier)) if name in which}
    options = dict(
        method=method,
        rule=rule,
        alpha=alpha,
        beta=beta,
        gamma=gamma,
        bonus=bonus,
        temperature=temperature,
        max_new_tokens=max_new_tokens,
        eos=eos,
        aggregate=aggregate,
        bild_threshold=bild_threshold,
        bild_fallback=bild_fallback,
    )
    bar = tqdm(
        total=len(prompt_ids) * max_new_tokens,
        unit="tok",
        disable=not progress,
        desc=f"{method if rule is None else f'{rule} {alpha:g}'} gamma={gamma}",
    )
    out = []
    try:
        if verifier.is_encoder_decoder:
            if prefill is not None:
                raise ValueError(
                    "prefill is for decoder-only pairs; an encoder-decoder's prompts go through its "
                    "encoder, which generate_batch runs once per chunk. Leave prefill out."
                )
            size = batch_size or len(prompt_ids)
            for start in range(0, len(prompt_ids), size):
                ids = prompt_ids[start : start + size]
                sides, setup = {}, 0.0
                from transformers import DynamicCache, EncoderDecoderCache

                for name, lm in lms.items():
                    tic = time.perf_counter()
                    encoder = encode_batch(lm, ids)
                    sides[name] = Side(
                        lm,
                        EncoderDecoderCache(DynamicCache(), DynamicCache()),
                        torch.zeros((len(ids), 0), dtype=torch.long),
                        [[] for _ in ids],
                        encoder,
                    )
                    sides[name].time_s = time.perf_counter() - tic
                    setup += sides[name].time_s
                out += decode_blocks(
                    lms,
                    verifier,
                    ids,
                    seeds[start : start + size],
                    sides,
                    setup_s=setup,
                    bar=bar if progress else None,
                    **options,
                )
            return out
        if prefill is None:
            prefill = prefill_chunks(drafter, verifier, prompt_ids, which, batch_size, progress)
        else:
            check_prefill(prefill, drafter, verifier, prompt_ids, which, batch_size)
        for chunk in prefill.chunks:
            ids = [prompt_ids[i] for i in chunk.rows]
            # copies: the prefill stays as it was, for the next configuration of a sweep
            sides = {
                name: Side(lm, copy.deepcopy(chunk.caches[name]), chunk.mask.clone(), [p[:-1] for p in ids])
                for name, lm in lms.items()
            }
            for name in lms:
                sides[name].time_s = chunk.time_s.get(name, 0.0)
            out += decode_blocks(
                lms,
                verifier,
                ids,
                [seeds[i] for i in chunk.rows],
                sides,
                bar=bar if progress else None,
                setup_s=sum(chunk.time_s.get(name, 0.0) for name in lms),
                **options,
            )
    finally:
        bar.close()
    return out
