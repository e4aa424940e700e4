r"""Speculative cascades at $\gamma = 1$ for a batch of prompts, every row in lockstep.

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
(`targets.output_distribution`). As in the engine, the sampled laws are temperature-scaled and the
decisions (max-probability tests, acceptance sets) use the $T = 1$ laws.

How the rows share the forward passes:

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
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import torch

from . import targets
from .checks import check_gamma, check_seed, check_whole_number
from .engine import Generation, TraceStep
from .models import LanguageModel, check_compatible, load_model
from .options import check_generate_options, stop_tokens
from .shared_prefix import SharedPrefix, common_prefix_length, forward_rows
from .verification import block_targets, temperature_laws, verify_block

__all__ = ["BATCH_METHODS", "BatchPrefill", "prefill_batch", "generate_batch"]

#: The methods `generate_batch` runs; the others need per-row control flow, see `engine.generate`.
BATCH_METHODS = ("speculative", "drafter", "verifier")
#: The models each batched method calls.
_USES = {"speculative": ("drafter", "verifier"), "drafter": ("drafter",), "verifier": ("verifier",)}
_NAN = float("nan")


@dataclass
class _Chunk:
    """Up to `batch_size` rows prefilled together: their caches, their mask and what it cost."""
    rows: range                                   # indices into the prompt list
    caches: Dict[str, object]                     # "drafter"/"verifier" -> DynamicCache of the rows
    mask: torch.Tensor                            # (b, M) int64: 1 on prompt tokens, 0 on left padding
    time_s: Dict[str, float] = field(default_factory=dict)  # seconds of each model's prefill pass
    wall_s: float = 0.0


@dataclass
class BatchPrefill:
    """Both models' KV caches after the prompts minus their last token, left-padded, in chunks.

    Made by `prefill_batch`; `generate_batch(..., prefill=...)` copies the caches before decoding,
    so one prefill serves every configuration of a sweep (rules x alphas x temperatures).
    """
    prompt_ids: List[List[int]]
    chunks: List[_Chunk] = field(repr=False)
    batch_size: Optional[int]
    drafter: LanguageModel = field(repr=False)
    verifier: LanguageModel = field(repr=False)

    @property
    def models(self) -> tuple:
        """Which models were prefilled (`"drafter"`, `"verifier"` or both)."""
        return tuple(self.chunks[0].caches) if self.chunks else ()


# ---- input checks -----------------------------------------------------------------------------

def _load_models(drafter, verifier, shared_vocabulary: bool = False):
    drafter, verifier = load_model(drafter), load_model(verifier)
    check_compatible(drafter, verifier, shared_vocabulary=shared_vocabulary)
    for lm in (drafter, verifier):
        if lm.is_toy or lm.is_encoder_decoder:
            kind = "a toy model" if lm.is_toy else "an encoder-decoder model"
            raise ValueError(f"{lm.name} is {kind}; batched decoding needs decoder-only transformers "
                             "models. Use tutorial_lib.generate (one prompt at a time) instead.")
    return drafter, verifier


def _prompt_ids(verifier: LanguageModel, prompts) -> List[List[int]]:
    if isinstance(prompts, str) or torch.is_tensor(prompts):
        raise ValueError("prompts must be a list of prompts (texts or lists of token ids); "
                         "wrap a single prompt in a list.")
    prompts = list(prompts)
    if not prompts:
        raise ValueError("prompts is empty; pass at least one prompt.")
    return [verifier.encode(prompt) for prompt in prompts]


def _check_batch_size(batch_size) -> Optional[int]:
    if batch_size is None:
        return None
    return check_whole_number(batch_size, "batch_size", 1,
                              "a forward pass holds at least one row; None puts all prompts in one")


def _check_seeds(seeds, n: int) -> List[int]:
    if seeds is None:
        return list(range(n))
    if isinstance(seeds, (int, str)) or torch.is_tensor(seeds) and seeds.ndim == 0:
        raise ValueError(f"seeds={seeds!r}: pass one seed per prompt, e.g. seeds=range({seeds}, {seeds} + {n}).")
    seeds = [check_seed(s, "seeds[i]") for s in seeds]
    if len(seeds) != n:
        raise ValueError(f"{len(seeds)} seeds for {n} prompts; pass one seed per prompt (or None for 0..{n - 1}).")
    return seeds


# ---- forward passes ---------------------------------------------------------------------------

def _forward(lm: LanguageModel, cache, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The float32 next-token logits after the last column, `(b, V)` (`shared_prefix.forward_rows`)."""
    return forward_rows(lm, cache, ids, mask, keep=1)[:, -1]                   # (b, V)


def _prefill_chunk(prefixes: Dict[str, SharedPrefix], prompt_ids: List[List[int]], rows: range) -> _Chunk:
    from transformers import DynamicCache
    start = time.perf_counter()
    contexts = [prompt_ids[i][:-1] for i in rows]  # the last token is fed by the first step
    chunk = _Chunk(rows=rows, caches={}, mask=torch.zeros((len(rows), 0), dtype=torch.long))
    for which, prefix in prefixes.items():
        if any(len(c) > len(prefix.prefix) for c in contexts):
            before = prefix.time_s
            cache, chunk.mask, _ = prefix.batch(contexts, keep=1)              # mask (b, P + L)
            chunk.time_s[which] = prefix.time_s - before
        elif prefix.prefix:  # every context is the shared prefix itself
            cache = prefix.cache_for(len(rows))
            chunk.mask = torch.ones((len(rows), len(prefix.prefix)), dtype=torch.long)
        else:  # prompts of one token each leave nothing to prefill
            cache = DynamicCache()
        chunk.caches[which] = cache
    chunk.wall_s = time.perf_counter() - start
    return chunk


def _prefill(drafter, verifier, prompt_ids, which, batch_size, progress) -> BatchPrefill:
    """The prompts' shared prefix runs once per model (`shared_prefix`); each chunk of rows then
    feeds only its own tokens after a copy of that cache. The prefix's own pass is charged to the
    first chunk's time."""
    from tqdm.auto import tqdm
    lms = {name: lm for name, lm in (("drafter", drafter), ("verifier", verifier)) if name in which}
    contexts = [ids[:-1] for ids in prompt_ids]
    shared = contexts[0][:common_prefix_length(contexts, keep_last=0)]  # may be a whole context
    prefixes = {name: SharedPrefix(lm, shared) for name, lm in lms.items()}
    size = batch_size or len(prompt_ids)
    starts = range(0, len(prompt_ids), size)
    chunks = [_prefill_chunk(prefixes, prompt_ids, range(s, min(s + size, len(prompt_ids))))
              for s in tqdm(starts, desc="prefill", unit="chunk", disable=not progress)]
    for name, prefix in prefixes.items():
        if chunks and prefix.prefix:
            chunks[0].time_s[name] = chunks[0].time_s.get(name, 0.0) + prefix.prefix_time_s
    return BatchPrefill(prompt_ids, chunks, batch_size, drafter, verifier)


def prefill_batch(drafter, verifier, prompts, *, batch_size: Optional[int] = None,
                  progress: bool = False, shared_vocabulary: bool = False) -> BatchPrefill:
    """Run each model once on the left-padded prompts (minus their last token) and keep the caches.

    `prompts` are texts or token-id lists (as for `generate_batch`, which must get the same
    prompts); with `batch_size`, rows are prefilled in chunks of that many. Pass the result as
    `generate_batch(..., prefill=...)` to every configuration of a sweep: it is never modified.
    """
    drafter, verifier = _load_models(drafter, verifier, shared_vocabulary)
    batch_size = _check_batch_size(batch_size)
    prompt_ids = _prompt_ids(verifier, prompts)
    return _prefill(drafter, verifier, prompt_ids, ("drafter", "verifier"), batch_size, progress)


# ---- decoding ---------------------------------------------------------------------------------

class _Rows:
    """The outputs, traces, counters and random streams of one chunk's rows."""

    def __init__(self, prompt_ids: List[List[int]], seeds: List[int], max_new_tokens: int, eos: frozenset):
        self.prompt_ids = prompt_ids
        self.generators = [torch.Generator().manual_seed(s) for s in seeds]
        self.tokens: List[List[int]] = [[] for _ in prompt_ids]
        self.trace: List[List[TraceStep]] = [[] for _ in prompt_ids]
        self.counts = [dict(n_drafted=0, n_accepted=0, n_rejected=0) for _ in prompt_ids]
        self.stopped_at_eos = [False] * len(prompt_ids)
        self.active = torch.ones(len(prompt_ids), dtype=torch.bool)             # (b,)
        self.last = torch.tensor([ids[-1] for ids in prompt_ids])               # (b,) next token to feed
        self.max_new_tokens, self.eos = max_new_tokens, eos

    def sample(self, r: int, probs: torch.Tensor) -> int:
        return int(targets.sample(probs, self.generators[r]))

    def emit(self, r: int, step: TraceStep) -> None:
        self.tokens[r].append(step.token)
        self.trace[r].append(step)
        self.last[r] = step.token
        if step.token in self.eos:
            self.active[r], self.stopped_at_eos[r] = False, True
        elif len(self.tokens[r]) >= self.max_new_tokens:
            self.active[r] = False


def _speculative_step(rows: _Rows, logits: Dict[str, torch.Tensor], live: List[int], rule, alpha, beta,
                      temperature) -> None:
    # `logits` hold the running rows only, in the order of `live`.
    q, q_unscaled = temperature_laws(logits["drafter"], temperature)              # (k, V)
    p, p_unscaled = temperature_laws(logits["verifier"], temperature)             # (k, V)
    pi, weight = block_targets(rule, q, p, alpha, q_unscaled=q_unscaled, p_unscaled=p_unscaled, beta=beta)
    # Each row draws from its own generator in the engine's order: draft, coin, then residual.
    drafts = torch.tensor([rows.sample(r, q[k]) for k, r in enumerate(live)])    # (k,)
    verdict = verify_block(pi.unsqueeze(1), q.unsqueeze(1), drafts.unsqueeze(1),  # blocks of one draft
                           [rows.generators[r] for r in live])
    for k, r in enumerate(live):
        counts = rows.counts[r]
        counts["n_drafted"] += 1
        x = int(drafts[k]) if int(verdict.n_accepted[k]) else int(verdict.extra[k])
        accepted = bool(verdict.n_accepted[k])
        counts["n_accepted" if accepted else "n_rejected"] += 1
        rows.emit(r, TraceStep(x, "draft" if accepted else "residual", accepted, q=float(q[k, x]),
                               p=float(p[k, x]), pi=float(pi[k, x]), deferral=float(weight[k])))


def _plain_step(rows: _Rows, logits: torch.Tensor, live: List[int], which: str, temperature) -> None:
    law, _ = temperature_laws(logits, temperature)                              # (k, V), rows of `live`
    for k, r in enumerate(live):
        x = rows.sample(r, law[k])
        prob = float(law[k, x])
        rows.emit(r, TraceStep(x, which, q=prob if which == "drafter" else _NAN,
                               p=prob if which == "verifier" else _NAN, pi=prob,
                               deferral=1.0 if which == "verifier" else 0.0))


def _decode_chunk(chunk: _Chunk, lms: Dict[str, LanguageModel], verifier: LanguageModel, prompt_ids, seeds, *,
                  method, rule, alpha, beta, temperature, max_new_tokens, eos, bar) -> List[Generation]:
    start = time.perf_counter()
    ids = [prompt_ids[i] for i in chunk.rows]
    rows = _Rows(ids, [seeds[i] for i in chunk.rows], max_new_tokens, eos)
    # Copies: the prefill stays as it was, for the next configuration of a sweep.
    caches = {which: copy.deepcopy(chunk.caches[which]) for which in lms}
    mask = chunk.mask                                                            # (b, M + steps so far)
    time_s = {which: chunk.time_s.get(which, 0.0) for which in lms}
    live = list(range(len(ids)))             # the rows still running, in the caches' batch order
    with targets.trusted_inputs():  # every law below comes from `probabilities`
        while live:
            feed = rows.last[live]                                               # (k,)
            mask = torch.cat([mask, torch.ones(len(live), 1, dtype=mask.dtype)], dim=1)  # (k, M + steps + 1)
            logits = {}
            for which, lm in lms.items():
                tic = time.perf_counter()
                logits[which] = _forward(lm, caches[which], feed.unsqueeze(1), mask)  # (k, V)
                time_s[which] += time.perf_counter() - tic
            if method == "speculative":
                _speculative_step(rows, logits, live, rule, alpha, beta, temperature)
            else:
                _plain_step(rows, logits[method], live, method, temperature)
            if bar is not None:  # the bar counts the token budget: a row that stops hands in the rest
                bar.update(sum(1 if rows.active[r] else max_new_tokens - len(rows.tokens[r]) + 1 for r in live))
            # Rows that stopped leave the batch (and their cache entries with them): the next step
            # computes only running rows, so a long answer no longer makes every finished row pay.
            keep = [k for k, r in enumerate(live) if rows.active[r]]
            if len(keep) < len(live):
                if keep:
                    index = torch.tensor(keep)
                    for cache in caches.values():
                        cache.batch_select_indices(index.to(next(iter(lms.values())).device))
                    mask = mask[index]
                live = [live[k] for k in keep]
    # The batch's cost, prefill included, split evenly among its rows.
    b = len(ids)
    prefill_s = sum(chunk.time_s.get(which, 0.0) for which in lms)  # only the models this method used
    wall = (prefill_s + time.perf_counter() - start) / b
    used = tuple(lms)
    return [_row_generation(rows, r, ids[r], verifier, method=method, rule=rule, alpha=alpha, temperature=temperature,
                            used=used, wall_s=wall, time_s={w: time_s.get(w, 0.0) / b for w in used},
                            feed_log=_feed_log(ids[r], rows.tokens[r], used))
            for r in range(b)]


def _feed_log(prompt: List[int], tokens: List[int], used) -> Dict[str, list]:
    """What each model in `used` was fed, `(position, token)`: the prompt (its last token in the first
    step), then every emitted token but the last, which ends the row unfed."""
    fed = list(enumerate(prompt)) + [(len(prompt) + j, t) for j, t in enumerate(tokens[:-1])]
    return {which: list(fed) for which in used}


def _row_generation(rows: _Rows, r: int, prompt: List[int], verifier: LanguageModel, *, method, rule, alpha,
                    temperature, used, wall_s: float, time_s: Dict[str, float], feed_log) -> Generation:
    """Row `r`'s `Generation`, with the calls `generate` makes for that prompt alone: the prefill plus
    the first step (the prompt's last token) are its one prefill of the whole prompt, then n - 1
    one-token calls of each model in `used`. Times are the row's share of its batch's."""
    n = len(rows.tokens[r])
    return Generation(
        tokens=rows.tokens[r], text=verifier.decode(rows.tokens[r]), prompt_tokens=prompt, method=method,
        rule=rule, alpha=alpha, gamma=1, temperature=temperature,
        n_verifier_calls=n if "verifier" in used else 0, n_drafter_calls=n if "drafter" in used else 0,
        wall_time_s=wall_s, drafter_time_s=time_s.get("drafter", 0.0), verifier_time_s=time_s.get("verifier", 0.0),
        stopped_at_eos=rows.stopped_at_eos[r], trace=rows.trace[r], feed_log=feed_log, **rows.counts[r],
        **{f"{which}_{name}": value if which in used else empty for which in ("drafter", "verifier")
           for name, value, empty in (("calls_by_k", [n - 1] if n > 1 else [], []), ("prefills", 1, 0))})


def generate_batch(drafter, verifier, prompts, *, method: str = "speculative", rule: Optional[str] = None,
                   alpha: Optional[float] = None, beta=1.0, temperature: float = 0.0, max_new_tokens: int = 64,
                   seeds: Optional[Sequence[int]] = None, eos_token_id=None, prefill: Optional[BatchPrefill] = None,
                   batch_size: Optional[int] = None, progress: bool = False, gamma: int = 1,
                   shared_vocabulary: bool = False) -> List[Generation]:
    r"""Generate continuations of many `prompts` at once; one `Generation` per prompt, in order.

    `method="speculative"` is speculative execution at $\gamma = 1$ with target
    $\pi = \mathbb{T}(q, p)$ of `rule` (any of `targets.RULES`, None meaning "spec"; `alpha` and `beta` as in
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

    Models must be decoder-only `transformers` models (not toy or encoder-decoder models: use
    `engine.generate`). `prefill` is a `prefill_batch` of the same models and prompts, shared by
    many calls (its caches are copied, never modified); without it the prompts are prefilled here.
    `batch_size` rows share a forward pass (default: all), `progress=True` shows a bar over the
    token budget. `eos_token_id` is as in `generate` (`()` never stops early). `gamma` exists only
    to say that this runs $\gamma = 1$: anything else is an error.
    """
    if method not in BATCH_METHODS:
        raise ValueError(f"method={method!r} is not batched; generate_batch runs {', '.join(BATCH_METHODS)}. "
                         "Use tutorial_lib.generate (or generate_many) for the other methods.")
    if check_gamma(gamma) != 1:
        raise ValueError(f"gamma={gamma!r}: generate_batch runs gamma = 1 only (one token per row and step). "
                         "For longer draft blocks use tutorial_lib.generate(..., gamma=...).")
    drafter, verifier = _load_models(drafter, verifier, shared_vocabulary)
    o = check_generate_options(method, rule, alpha, 1, temperature, max_new_tokens, "sequence", "none")
    rule, alpha, temperature, max_new_tokens = o.rule, o.alpha, o.temperature, o.max_new_tokens
    batch_size = _check_batch_size(batch_size)
    prompt_ids = _prompt_ids(verifier, prompts)
    seeds = _check_seeds(seeds, len(prompt_ids))
    eos = stop_tokens(eos_token_id, verifier)
    which = _USES[method]
    if prefill is None:
        prefill = _prefill(drafter, verifier, prompt_ids, which, batch_size, progress)
    else:
        _check_prefill(prefill, drafter, verifier, prompt_ids, which, batch_size)
    lms = {name: lm for name, lm in (("drafter", drafter), ("verifier", verifier)) if name in which}
    from tqdm.auto import tqdm
    bar = tqdm(total=len(prompt_ids) * max_new_tokens, desc=method if rule is None else f"{rule} {alpha:g}",
               unit="tok", disable=not progress)
    try:
        out = []
        for chunk in prefill.chunks:
            out += _decode_chunk(chunk, lms, verifier, prompt_ids, seeds, method=method, rule=rule, alpha=alpha,
                                 beta=beta, temperature=temperature, max_new_tokens=max_new_tokens, eos=eos,
                                 bar=bar if progress else None)
    finally:
        bar.close()
    return out


def _check_prefill(prefill, drafter, verifier, prompt_ids, which, batch_size) -> None:
    if not isinstance(prefill, BatchPrefill):
        raise ValueError(f"prefill must come from prefill_batch(...), not {type(prefill).__name__}.")
    if prefill.drafter is not drafter or prefill.verifier is not verifier:
        raise ValueError("prefill was computed with other models; pass the same drafter and verifier "
                         "objects to prefill_batch and generate_batch (loaded once, not by name).")
    if prefill.prompt_ids != prompt_ids:
        raise ValueError("prefill was computed for other prompts; pass generate_batch the prompts given to "
                         "prefill_batch, in the same order.")
    missing = [w for w in which if w not in prefill.models]
    if missing:
        raise ValueError(f"prefill holds no cache of the {' and '.join(missing)}; make it with prefill_batch.")
    if batch_size is not None and batch_size != prefill.batch_size:
        raise ValueError(f"batch_size={batch_size} but the prefill was made in chunks of {prefill.batch_size}; "
                         "leave batch_size out (the prefill's chunks are used) or prefill again.")
