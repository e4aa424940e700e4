r"""Every configuration of a sweep decoded in one batch; rows with one history computed once.

A sweep runs $C$ configurations (method, rule, $\alpha$, $T$) on the same $N$ prompts with the same
seeds (common random numbers): $C \times N$ rows. `batch.generate_batch` runs one configuration at a
time. Here all of them step together, and one observation removes most of their work: at step $t$ the
drafter's and the verifier's next-token laws

$$q_t = q(\cdot \mid x_{<t}), \qquad p_t = p(\cdot \mid x_{<t})$$

depend on the prompt and the tokens $x_{<t}$ emitted so far, not on the rule, $\alpha$ or $T$ that
chose them. Rows of one prompt whose histories are equal need one forward pass between them.

The batch therefore holds one cache entry per distinct history, a *slot*. Every row starts in its
prompt's slot ($N$ slots for $C \times N$ rows). After each step a slot whose rows emitted different
tokens splits: its cache entries are copied to each new slot (`batch_select_indices` with repeated
indices), and a slot whose rows all stopped leaves the batch. Rules agree on most tokens (they defer
only where drafter and verifier disagree), at $T = 0$ SpecDecode emits the verifier's tokens, and at
$T > 0$ every row of a prompt draws from the same seed, so slots split late and the forward passes
cost far fewer rows than are decoded (`SharedDecoding.rows_needed` against `rows_computed`). A
model's cache holds only the slots that need it: once a slot holds rows of the drafter alone, the
verifier no longer computes it (and the other way round).

Each row then takes its configuration's step on its slot's laws, exactly as `generate_batch` does
(`lockstep.speculative_step_on_laws`, `lockstep.plain_step_on_law`), with its own random stream; a slot's
laws $\mathrm{softmax}(\ell / T)$ are computed once per model and temperature, not once per row, and
the rows draw their tokens in parallel threads (`accept_reject.sample_each`: one draw from Qwen's 152k
vocabulary took about 5 ms on one core here, single-threaded). Row $(c, i)$ returns what
`generate_batch` returns for prompt $i$ under configuration $c$ (token for token at $T = 0$; at
$T > 0$ up to draws that float noise between differently composed batches moves across a boundary).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import torch

from ..maths import laws
from ..maths.verification import temperature_laws
from .lockstep import (
    BATCH_METHODS,
    BatchPrefill,
    check_batch_size,
    check_prefill,
    check_seeds,
    Chunk,
    build_feed_log,
    forward_step,
    load_models,
    plain_step_on_law,
    prefill_chunks,
    encode_prompts,
    row_generation,
    Rows,
    speculative_step_on_laws,
    MODELS_USED,
)
from ..checks import check_whole_number
from .generation import Generation
from .options import check_generate_options, stop_tokens

__all__ = ["SharedDecoding", "generate_configs"]


@dataclass
class SharedDecoding:
    """`generations[c][i]`: configuration `c` on prompt `i`. Per model, `rows_needed` counts the
    (row, step) pairs that needed its logits, `rows_computed` the rows its forward passes computed."""

    generations: List[List[Generation]]
    rows_needed: Dict[str, int]
    rows_computed: Dict[str, int]
    wall_s: float

    @property
    def sharing(self) -> Dict[str, float]:
        """Per model, rows needed per row computed: how much work the shared histories saved."""
        return {w: self.rows_needed[w] / max(self.rows_computed[w], 1) for w in self.rows_needed}


def _settings(configurations: Sequence[dict]) -> List[dict]:
    if isinstance(configurations, dict) or not len(configurations):
        raise ValueError(
            "configurations must be a non-empty list of dicts such as "
            "{'method': 'speculative', 'rule': 'chow', 'alpha': 0.3, 'temperature': 1.0}."
        )
    out = []
    for c, given in enumerate(configurations):
        unknown = set(given) - {"method", "rule", "alpha", "beta", "temperature"}
        if unknown:
            raise ValueError(
                f"configurations[{c}] has keys {sorted(unknown)}; each takes method, rule, alpha, "
                "beta and temperature (gamma is 1, one token per step)."
            )
        method = given.get("method", "speculative")
        if method not in BATCH_METHODS:
            raise ValueError(
                f"configurations[{c}]: method={method!r} is not batched; use one of {BATCH_METHODS}."
            )
        o = check_generate_options(
            method=method,
            rule=given.get("rule"),
            alpha=given.get("alpha"),
            gamma=1,
            temperature=given.get("temperature", 0.0),
            max_new_tokens=1,
            aggregate="sequence",
            bonus="none",
        )
        out.append(
            dict(
                method=method,
                rule=o.rule,
                alpha=o.alpha,
                beta=given.get("beta", 1.0),
                temperature=o.temperature,
            )
        )
    return out


def _decode_chunk(chunk: Chunk, lms, verifier, prompt_ids, seeds, settings, max_new_tokens, eos, bar):
    start = time.perf_counter()
    ids = [prompt_ids[i] for i in chunk.rows]
    n, C = len(ids), len(settings)
    rows = Rows(
        [ids[i] for _ in range(C) for i in range(n)],  # row c * n + i
        [seeds[chunk.rows[i]] for _ in range(C) for i in range(n)],
        max_new_tokens,
        eos,
    )
    uses = [MODELS_USED[s["method"]] for s in settings]
    slot_of = {c * n + i: i for c in range(C) for i in range(n)}  # live row -> its slot
    slot_rows = [[c * n + i for c in range(C)] for i in range(n)]  # slot -> its live rows
    # Each model's cache holds the slots some row of which needs that model (a slot of the drafter's
    # rows alone never calls the verifier), in the order of `held[which]`; its mask rows follow it.
    held = {which: list(range(n)) for which in lms}
    caches = {which: copy.deepcopy(chunk.caches[which]) for which in lms}
    masks = {which: chunk.mask for which in lms}  # (S_w, M + steps so far)
    time_s = {which: chunk.time_s.get(which, 0.0) for which in lms}
    needed = {which: 0 for which in lms}
    computed = {which: 0 for which in lms}
    with laws.trusted_inputs():
        while slot_rows:
            logits, position = {}, {}
            for which, lm in lms.items():
                if not held[which]:
                    continue
                feed = rows.last[[slot_rows[j][0] for j in held[which]]]  # (S_w,) one history per slot
                masks[which] = torch.cat([masks[which], torch.ones(len(feed), 1, dtype=torch.long)], dim=1)
                tic = time.perf_counter()
                logits[which] = forward_step(lm, caches[which], feed.unsqueeze(1), masks[which])  # (S_w, V)
                time_s[which] += time.perf_counter() - tic
                computed[which] += len(feed)
                position[which] = {j: k for k, j in enumerate(held[which])}
            # Each slot's laws once per model and temperature; a row reads its slot's.
            slot_laws: Dict[tuple, tuple] = {}
            for c, s in enumerate(settings):
                live = [r for r in range(c * n, (c + 1) * n) if r in slot_of]
                if not live:
                    continue
                row_laws = {}
                for w in uses[c]:
                    key = (w, s["temperature"])
                    if key not in slot_laws:
                        slot_laws[key] = temperature_laws(logits[w], s["temperature"])
                    index = torch.tensor([position[w][slot_of[r]] for r in live])
                    scaled, unscaled = slot_laws[key]
                    row_laws[w] = (scaled[index], scaled[index] if unscaled is scaled else unscaled[index])
                    needed[w] += len(live)
                if s["method"] == "speculative":
                    speculative_step_on_laws(rows, row_laws, live, s["rule"], s["alpha"], s["beta"])
                else:
                    plain_step_on_law(rows, row_laws[s["method"]][0], live, s["method"])
            # The new slots: each old slot's running rows, grouped by the token they just emitted.
            new_rows, parents = [], []
            for old, members in enumerate(slot_rows):
                by_token: Dict[int, List[int]] = {}
                for r in members:
                    if rows.active[r]:
                        by_token.setdefault(int(rows.last[r]), []).append(r)
                    else:
                        del slot_of[r]
                        if bar is not None:
                            bar.update(1)
                for group in by_token.values():
                    for r in group:
                        slot_of[r] = len(new_rows)
                    new_rows.append(group)
                    parents.append(old)
            for which in lms:
                keep = [j for j, group in enumerate(new_rows) if any(which in uses[r // n] for r in group)]
                index = [position[which][parents[j]] for j in keep]
                if keep and index != list(range(len(held[which]))):
                    index = torch.tensor(index)
                    caches[which].batch_select_indices(index.cpu())  # a CPU index serves every layer's device
                    masks[which] = masks[which][index]
                held[which] = keep
            slot_rows = new_rows
    wall = (sum(chunk.time_s.get(w, 0.0) for w in lms) + time.perf_counter() - start) / (n * C)
    # the batch's cost split evenly among its rows, as in generate_batch
    shares = {w: time_s.get(w, 0.0) / (n * C) for w in lms}
    out = [
        [
            row_generation(
                rows,
                c * n + i,
                ids[i],
                verifier,
                method=s["method"],
                rule=s["rule"],
                alpha=s["alpha"],
                temperature=s["temperature"],
                used=uses[c],
                wall_s=wall,
                time_s=shares,
                feed_log=build_feed_log(ids[i], rows.tokens[c * n + i], uses[c]),
            )
            for i in range(n)
        ]
        for c, s in enumerate(settings)
    ]
    return out, needed, computed


def generate_configs(
    drafter,
    verifier,
    prompts,
    configurations: Sequence[dict],
    *,
    max_new_tokens: int = 64,
    seeds: Optional[Sequence[int]] = None,
    eos_token_id=None,
    prefill: Optional[BatchPrefill] = None,
    batch_size: Optional[int] = None,
    progress: bool = False,
    shared_vocabulary: bool = False,
) -> SharedDecoding:
    r"""Decode every prompt under every configuration at $\gamma = 1$, all in one batch.

    `configurations`: dicts of `generate_batch`'s options (`method`, `rule`, `alpha`, `beta`,
    `temperature`). Returns a `SharedDecoding` whose `generations[c][i]` is what
    `generate_batch(drafter, verifier, prompts, seeds=seeds, **configurations[c])[i]` returns (module
    docstring), counters and trace included. `batch_size` prompts (default all) are decoded together
    with all their configurations, from one shared `prefill` (made here if not given).
    """
    settings = _settings(configurations)
    drafter, verifier = load_models(drafter, verifier, shared_vocabulary)
    max_new_tokens = check_whole_number(
        max_new_tokens, "max_new_tokens", 1, "each row emits at least one token"
    )
    prompt_ids = encode_prompts(verifier, prompts)
    seeds = check_seeds(seeds, len(prompt_ids))
    eos = stop_tokens(eos_token_id, verifier)
    which = tuple(w for w in ("drafter", "verifier") if any(w in MODELS_USED[s["method"]] for s in settings))
    if prefill is None:
        prefill = prefill_chunks(drafter, verifier, prompt_ids, which, check_batch_size(batch_size), progress)
    else:
        check_prefill(prefill, drafter, verifier, prompt_ids, which, batch_size)
    lms = {name: lm for name, lm in (("drafter", drafter), ("verifier", verifier)) if name in which}
    from tqdm.auto import tqdm

    bar = tqdm(
        total=len(prompt_ids) * len(settings),
        desc=f"{len(settings)} configurations",
        unit="row",
        disable=not progress,
    )
    start = time.perf_counter()
    generations: List[List[Generation]] = [[] for _ in settings]
    needed: Dict[str, int] = {}
    computed: Dict[str, int] = {}
    try:
        for chunk in prefill.chunks:
            out, need, done = _decode_chunk(
                chunk,
                lms,
                verifier,
                prompt_ids,
                seeds,
                settings,
                max_new_tokens,
                eos,
                bar if progress else None,
            )
            for c, gens in enumerate(out):
                generations[c] += gens
            for w in need:
                needed[w], computed[w] = needed.get(w, 0) + need[w], computed.get(w, 0) + done[w]
    finally:
        bar.close()
    return SharedDecoding(generations, needed, computed, time.perf_counter() - start)
