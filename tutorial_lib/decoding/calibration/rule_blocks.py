"""Each rule's block: the rules a sweep runs (`sweep_rules`) and the time of each one's target computation
and verification on a block of laws (`rule_block_costs`), which `Calibration.block_overhead_for` prices."""

from __future__ import annotations

import random
import time
from typing import Dict, List, Sequence

import numpy as np
import torch

from .record import Calibration, target_kind

__all__ = ["rule_block_costs", "sweep_rules"]


def sweep_rules(rows) -> List[tuple]:
    """`(rule, beta, alpha, gamma)` of every speculative rule a sweep's rows run (one alpha each: the
    median of its grid; the cost of a target does not depend on alpha's value), plus SpecDecode at
    each gamma."""
    import pandas as pd

    table = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    if "method" not in table or table.empty:
        return []
    speculative = table[table["method"] == "speculative"]
    out = []
    for (rule, beta, gamma), part in speculative.groupby(["rule", "beta", "gamma"], sort=True):
        out.append((str(rule), beta, float(np.median(part["alpha"].astype(float))), int(gamma)))
    return out


def _random_laws(n: int, vocab_size: int, generator: torch.Generator) -> torch.Tensor:
    """`n` peaked laws over `vocab_size` tokens (a language model's are far from uniform)."""
    logits = 4.0 * torch.randn(n, vocab_size, generator=generator, dtype=torch.float32)
    return torch.softmax(logits, dim=-1)


def rule_block_costs(
    calibration: Calibration,
    rules: Sequence[tuple],
    vocab_size: int,
    *,
    repeats: int = 30,
    seed: int = 0,
    progress: bool = True,
) -> Calibration:
    """A copy of `calibration` with each rule's block cost (`target_<rule>@g<gamma>`, seconds, one
    sample per round): `rules` are `(rule, beta, alpha, gamma)` (`sweep_rules`); SpecDecode at the
    gamma `overhead_block` was measured at is added, since `block_overhead_for` subtracts it. Each
    round times, in a shuffled order, `verification.block_targets` and `verification.verify_block`
    on one block of `gamma` random peaked laws of `vocab_size` tokens without input checks (the
    engine's work per block that depends on the rule, as the engine runs it), at the calibration's
    thread count; the first round warms up. The time is the process's CPU time divided by the thread
    count, which jobs sharing the machine do not inflate as they inflate wall time (it assumes the
    threads share the work evenly)."""
    from ...maths.laws import trusted_inputs
    from ...maths.verification import block_targets, verify_block

    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 2:
        raise ValueError(f"vocab_size={vocab_size!r}: pass the number of tokens the pair's laws range over.")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 5:
        raise ValueError(f"repeats={repeats!r}: take the median of at least 5 rounds.")
    wanted = {target_kind(r, g, b): (r, b, a, g) for r, b, a, g in rules}
    reference = target_kind("spec", calibration.max_k - 1)
    if (
        reference not in calibration.samples
    ):  # kept where measured before: the other rules' costs were taken beside it
        wanted.setdefault(reference, ("spec", 1.0, 0.0, calibration.max_k - 1))
    generator = torch.Generator().manual_seed(seed)
    blocks = {}
    for kind, (rule, beta, alpha, gamma) in wanted.items():
        q, p = _random_laws(gamma, vocab_size, generator), _random_laws(gamma, vocab_size, generator)
        drafts = torch.multinomial(q, 1, generator=generator).T  # (1, gamma)
        beta_value = beta if str(beta) == "normalize" else float(beta)
        blocks[kind] = (rule, beta_value, float(alpha), q, p, drafts)

    n_threads = max(1, int(calibration.threads or 1))

    def one_block(rule, beta, alpha, q, p, drafts) -> float:
        # CPU time of this process over its threads, not wall time: other jobs on a loaded machine
        # would otherwise be priced into every rule (the calibration's calls were timed on a quiet one)
        start = time.process_time()
        with trusted_inputs():  # as the engine runs it: its laws are valid by construction
            pi, _ = block_targets(rule, q, p, alpha, q_unscaled=q, p_unscaled=p, beta=beta)
            verify_block(pi.unsqueeze(0), q.unsqueeze(0), drafts, generator)
        return (time.process_time() - start) / n_threads

    from tqdm.auto import tqdm

    threads = torch.get_num_threads()
    torch.set_num_threads(n_threads)
    samples: Dict[str, List[float]] = {kind: [] for kind in blocks}
    rng = random.Random(seed)
    try:
        for round_ in tqdm(range(repeats + 1), desc="timing each rule's block", disable=not progress):
            order = list(blocks)
            rng.shuffle(order)
            for kind in order:
                seconds = one_block(*blocks[kind])
                if round_:
                    samples[kind].append(seconds)
    finally:
        torch.set_num_threads(threads)
    merged = {**{k: list(v) for k, v in calibration.samples.items()}, **samples}
    note = (
        calibration.note + "; " if calibration.note else ""
    ) + f"rule_block_costs: {len(samples)} rule blocks at V = {vocab_size}, {repeats} rounds"
    return Calibration(**{**calibration.to_dict(), "samples": merged, "note": note})
