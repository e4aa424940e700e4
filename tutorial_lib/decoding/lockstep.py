r"""The shared parts of lockstep decoding at $\gamma = 1$: `batch.generate_batch` (one configuration over
many prompts) and `config_batch.generate_configs` (many configurations over one chunk of prompts) both
run on them.

- `prefill_chunks` / `prefill_rows`: the prompts minus their last token, left-padded, prefilled in
  chunks after one pass of their shared prefix (`shared_prefix`), into a `BatchPrefill` of `Chunk` records;
- `Rows`: one chunk's outputs, traces, counters and per-row random streams;
- `speculative_step` / `plain_step`: one lockstep step for the running rows, drawing in the order
  `engine.generate` draws (draft, coin, residual) through `verification.verify_block`;
- `row_generation`, `build_feed_log`: a row's `generation.Generation`, with the calls `generate` would make
  for that prompt alone;
- `MODELS_USED`: the models each batched method calls; the argument checks both entry points share.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import torch

from ..checks import check_seed, check_whole_number
from ..maths.accept_reject import sample_each
from ..maths.verification import block_targets, temperature_laws, verify_block
from ..models.adapter import load_model
from ..models.language_model import LanguageModel, check_compatible
from .generation import Generation, TraceStep
from .shared_prefix import SharedPrefix, common_prefix_length, forward_rows

__all__ = [
    "BATCH_METHODS",
    "MODELS_USED",
    "Chunk",
    "BatchPrefill",
    "load_models",
    "encode_prompts",
    "check_batch_size",
    "check_seeds",
    "forward_step",
    "prefill_rows",
    "prefill_chunks",
    "Rows",
    "speculative_step",
    "plain_step",
    "build_feed_log",
    "row_generation",
    "check_prefill",
]

#: The methods lockstep decoding runs; the others need per-row control flow, see `engine.generate`.
BATCH_METHODS = ("speculative", "drafter", "verifier")
#: The models each batched method calls.
MODELS_USED = {"speculative": ("drafter", "verifier"), "drafter": ("drafter",), "verifier": ("verifier",)}
_NAN = float("nan")


@dataclass
class Chunk:
    """Up to `batch_size` rows prefilled together: their caches, their mask and what it cost."""

    rows: range  # indices into the prompt list
    caches: Dict[str, object]  # "drafter"/"verifier" -> DynamicCache of the rows
    mask: torch.Tensor  # (b, M) int64: 1 on prompt tokens, 0 on left padding
    time_s: Dict[str, float] = field(default_factory=dict)  # seconds of each model's prefill pass
    wall_s: float = 0.0


@dataclass
class BatchPrefill:
    """Both models' KV caches after the prompts minus their last token, left-padded, in chunks.

    Made by `prefill_batch`; `generate_batch(..., prefill=...)` copies the caches before decoding,
    so one prefill serves every configuration of a sweep (rules x alphas x temperatures).
    """

    prompt_ids: List[List[int]]
    chunks: List[Chunk] = field(repr=False)
    batch_size: Optional[int]
    drafter: LanguageModel = field(repr=False)
    verifier: LanguageModel = field(repr=False)

    @property
    def models(self) -> tuple:
        """Which models were prefilled (`"drafter"`, `"verifier"` or both)."""
        return tuple(self.chunks[0].caches) if self.chunks else ()


# ---- input checks -----------------------------------------------------------------------------


def load_models(drafter, verifier, shared_vocabulary: bool = False, encoder_decoder: bool = False):
    """The two models, loaded and checked; toy models are refused, encoder-decoders unless
    `encoder_decoder`."""
    drafter, verifier = load_model(drafter), load_model(verifier)
    check_compatible(drafter, verifier, shared_vocabulary=shared_vocabulary)
    for lm in (drafter, verifier):
        if lm.is_toy or lm.is_encoder_decoder and not encoder_decoder:
            kind = "a toy model" if lm.is_toy else "an encoder-decoder model"
            raise ValueError(
                f"{lm.name} is {kind}; batched decoding needs decoder-only transformers "
                "models. Use tutorial_lib.generate (one prompt at a time) instead."
            )
    return drafter, verifier


def encode_prompts(verifier: LanguageModel, prompts) -> List[List[int]]:
    if isinstance(prompts, str) or torch.is_tensor(prompts):
        raise ValueError(
            "prompts must be a list of prompts (texts or lists of token ids); wrap a single prompt in a list."
        )
    prompts = list(prompts)
    if not prompts:
        raise ValueError("prompts is empty; pass at least one prompt.")
    return [verifier.encode(prompt) for prompt in prompts]


def check_batch_size(batch_size) -> Optional[int]:
    if batch_size is None:
        return None
    return check_whole_number(
        batch_size, "batch_size", 1, "a forward pass holds at least one row; None puts all prompts in one"
    )


def check_seeds(seeds, n: int) -> List[int]:
    if seeds is None:
        return list(range(n))
    if isinstance(seeds, (int, str)) or torch.is_tensor(seeds) and seeds.ndim == 0:
        raise ValueError(
            f"seeds={seeds!r}: pass one seed per prompt, e.g. seeds=range({seeds}, {seeds} + {n})."
        )
    seeds = [check_seed(s, "seeds[i]") for s in seeds]
    if len(seeds) != n:
        raise ValueError(
            f"{len(seeds)} seeds for {n} prompts; pass one seed per prompt (or None for 0..{n - 1})."
        )
    return seeds


# ---- forward passes ---------------------------------------------------------------------------


def forward_step(lm: LanguageModel, cache, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The float32 next-token logits after the last column, `(b, V)` (`shared_prefix.forward_rows`)."""
    return forward_rows(lm, cache, ids, mask, keep=1)[:, -1]  # (b, V)


def prefill_rows(prefixes: Dict[str, SharedPrefix], prompt_ids: List[List[int]], rows: range) -> Chunk:
    from transformers import DynamicCache

    start = time.perf_counter()
    contexts = [prompt_ids[i][:-1] for i in rows]  # the last token is fed by the first step
    chunk = Chunk(rows=rows, caches={}, mask=torch.zeros((len(rows), 0), dtype=torch.long))
    for which, prefix in prefixes.items():
        if any(len(c) > len(prefix.prefix) for c in contexts):
            before = prefix.time_s
            cache, chunk.mask, _ = prefix.batch(contexts, keep=1)  # mask (b, P + L)
            chunk.time_s[which] = prefix.time_s - before
        elif prefix.prefix:  # every context is the shared prefix itself
            cache = prefix.cache_for(len(rows))
            chunk.mask = torch.ones((len(rows), len(prefix.prefix)), dtype=torch.long)
        else:  # prompts of one token each leave nothing to prefill
            cache = DynamicCache()
        chunk.caches[which] = cache
    chunk.wall_s = time.perf_counter() - start
    return chunk


def prefill_chunks(drafter, verifier, prompt_ids, which, batch_size, progress) -> BatchPrefill:
    """The prompts' shared prefix runs once per model (`shared_prefix`); each chunk of rows then
    feeds only its own tokens after a copy of that cache. The prefix's own pass is charged to the
    first chunk's time."""
    from tqdm.auto import tqdm

    lms = {name: lm for name, lm in (("drafter", drafter), ("verifier", verifier)) if name in which}
    contexts = [ids[:-1] for ids in prompt_ids]
    shared = contexts[0][: common_prefix_length(contexts, keep_last=0)]  # may be a whole context
    prefixes = {name: SharedPrefix(lm, shared) for name, lm in lms.items()}
    size = batch_size or len(prompt_ids)
    starts = range(0, len(prompt_ids), size)
    chunks = [
        prefill_rows(prefixes, prompt_ids, range(s, min(s + size, len(prompt_ids))))
        for s in tqdm(starts, desc="prefill", unit="chunk", disable=not progress)
    ]
    for name, prefix in prefixes.items():
        if chunks and prefix.prefix:
            chunks[0].time_s[name] = chunks[0].time_s.get(name, 0.0) + prefix.prefix_time_s
    return BatchPrefill(prompt_ids, chunks, batch_size, drafter, verifier)


class Rows:
    """The outputs, traces, counters and random streams of one chunk's rows."""

    def __init__(self, prompt_ids: List[List[int]], seeds: List[int], max_new_tokens: int, eos: frozenset):
        self.prompt_ids = prompt_ids
        self.generators = [torch.Generator().manual_seed(s) for s in seeds]
        self.tokens: List[List[int]] = [[] for _ in prompt_ids]
        self.trace: List[List[TraceStep]] = [[] for _ in prompt_ids]
        self.counts = [dict(n_drafted=0, n_accepted=0, n_rejected=0) for _ in prompt_ids]
        self.stopped_at_eos = [False] * len(prompt_ids)
        self.active = torch.ones(len(prompt_ids), dtype=torch.bool)  # (b,)
        self.last = torch.tensor([ids[-1] for ids in prompt_ids])  # (b,) next token to feed
        self.max_new_tokens, self.eos = max_new_tokens, eos

    def sample_each(self, live: List[int], laws: torch.Tensor) -> List[int]:
        """Row `live[k]` draws from `laws[k]` with its own stream (in parallel threads: `sample_each`)."""
        return sample_each(laws, [self.generators[r] for r in live])

    def emit(self, r: int, step: TraceStep) -> None:
        self.tokens[r].append(step.token)
        self.trace[r].append(step)
        self.last[r] = step.token
        if step.token in self.eos:
            self.active[r], self.stopped_at_eos[r] = False, True
        elif len(self.tokens[r]) >= self.max_new_tokens:
            self.active[r] = False


def speculative_step(
    rows: Rows, logits: Dict[str, torch.Tensor], live: List[int], rule, alpha, beta, temperature
) -> None:
    # `logits` hold the running rows only, in the order of `live`.
    laws = {which: temperature_laws(logits[which], temperature) for which in ("drafter", "verifier")}
    speculative_step_on_laws(rows, laws, live, rule, alpha, beta)


def speculative_step_on_laws(
    rows: Rows, laws: Dict[str, Tuple[torch.Tensor, torch.Tensor]], live: List[int], rule, alpha, beta
) -> None:
    """`speculative_step` given each model's `(scaled, unscaled)` laws (`temperature_laws`) of the rows
    of `live`, `(k, V)` each."""
    (q, q_unscaled), (p, p_unscaled) = laws["drafter"], laws["verifier"]
    pi, weight = block_targets(rule, q, p, alpha, q_unscaled=q_unscaled, p_unscaled=p_unscaled, beta=beta)
    # Each row draws from its own generator in the engine's order: draft, coin, then residual.
    drafts = torch.tensor(rows.sample_each(live, q), dtype=torch.long)  # (k,)
    verdict = verify_block(
        pi.unsqueeze(1),
        q.unsqueeze(1),
        drafts.unsqueeze(1),  # blocks of one draft
        [rows.generators[r] for r in live],
    )
    for k, r in enumerate(live):
        counts = rows.counts[r]
        counts["n_drafted"] += 1
        x = int(drafts[k]) if int(verdict.n_accepted[k]) else int(verdict.extra[k])
        accepted = bool(verdict.n_accepted[k])
        counts["n_accepted" if accepted else "n_rejected"] += 1
        rows.emit(
            r,
            TraceStep(
                x,
                "draft" if accepted else "residual",
                accepted,
                q=float(q[k, x]),
                p=float(p[k, x]),
                pi=float(pi[k, x]),
                deferral=float(weight[k]),
            ),
        )


def plain_step(rows: Rows, logits: torch.Tensor, live: List[int], which: str, temperature) -> None:
    plain_step_on_law(rows, temperature_laws(logits, temperature)[0], live, which)


def plain_step_on_law(rows: Rows, law: torch.Tensor, live: List[int], which: str) -> None:
    """`plain_step` given the sampled law of the rows of `live`, `(k, V)`."""
    for k, (r, x) in enumerate(zip(live, rows.sample_each(live, law))):
        prob = float(law[k, x])
        rows.emit(
            r,
            TraceStep(
                x,
                which,
                q=prob if which == "drafter" else _NAN,
                p=prob if which == "verifier" else _NAN,
                pi=prob,
                deferral=1.0 if which == "verifier" else 0.0,
            ),
        )


def build_feed_log(prompt: List[int], tokens: List[int], used) -> Dict[str, list]:
    """What each model in `used` was fed, `(position, token)`: the prompt (its last token in the first
    step), then every emitted token but the last, which ends the row unfed."""
    fed = list(enumerate(prompt)) + [(len(prompt) + j, t) for j, t in enumerate(tokens[:-1])]
    return {which: list(fed) for which in used}


def row_generation(
    rows: Rows,
    r: int,
    prompt: List[int],
    verifier: LanguageModel,
    *,
    method,
    rule,
    alpha,
    temperature,
    used,
    wall_s: float,
    time_s: Dict[str, float],
    feed_log,
) -> Generation:
    """Row `r`'s `Generation`, with the calls `generate` makes for that prompt alone: the prefill plus
    the first step (the prompt's last token) are its one prefill of the whole prompt, then n - 1
    one-token calls of each model in `used`. Times are the row's share of its batch's."""
    n = len(rows.tokens[r])
    return Generation(
        tokens=rows.tokens[r],
        text=verifier.decode(rows.tokens[r]),
        prompt_tokens=prompt,
        method=method,
        rule=rule,
        alpha=alpha,
        gamma=1,
        temperature=temperature,
        n_verifier_calls=n if "verifier" in used else 0,
        n_drafter_calls=n if "drafter" in used else 0,
        wall_time_s=wall_s,
        drafter_time_s=time_s.get("drafter", 0.0),
        verifier_time_s=time_s.get("verifier", 0.0),
        stopped_at_eos=rows.stopped_at_eos[r],
        trace=rows.trace[r],
        feed_log=feed_log,
        **rows.counts[r],
        **{
            f"{which}_{name}": value if which in used else empty
            for which in ("drafter", "verifier")
            for name, value, empty in (("calls_by_k", [n - 1] if n > 1 else [], []), ("prefills", 1, 0))
        },
    )


def check_prefill(prefill, drafter, verifier, prompt_ids, which, batch_size) -> None:
    if not isinstance(prefill, BatchPrefill):
        raise ValueError(f"prefill must come from prefill_batch(...), not {type(prefill).__name__}.")
    if prefill.drafter is not drafter or prefill.verifier is not verifier:
        raise ValueError(
            "prefill was computed with other models; pass the same drafter and verifier "
            "objects to prefill_batch and generate_batch (loaded once, not by name)."
        )
    if prefill.prompt_ids != prompt_ids:
        raise ValueError(
            "prefill was computed for other prompts; pass generate_batch the prompts given to "
            "prefill_batch, in the same order."
        )
    missing = [w for w in which if w not in prefill.models]
    if missing:
        raise ValueError(
            f"prefill holds no cache of the {' and '.join(missing)}; make it with prefill_batch."
        )
    if batch_size is not None and batch_size != prefill.batch_size:
        raise ValueError(
            f"batch_size={batch_size} but the prefill was made in chunks of {prefill.batch_size}; "
            "leave batch_size out (the prefill's chunks are used) or prefill again."
        )
