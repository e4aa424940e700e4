r"""The first clock a reader sees (notebook 01's last cell): plain decoding against speculation.

`time_decoding` runs the verifier alone, speculative decoding at a fixed $\gamma$ and with
`gamma="auto"` on one prompt, greedily ($T = 0$, so all three must emit the same tokens), each
`repeats` times in turn, and reports the median wall time per token. `auto_reason` says why
`gamma="auto"` chose what it chose: before each block it asks the block-cost model of
`maths.latency` (through the pair's `Calibration`: a drafter step $t_q$, a verifier call over $k$
tokens $t_p(k)$) which $\gamma$ minimises the time per token at its current estimate $a$ of the
acceptance, $\tau(\gamma) = (\gamma t_q + t_p(\gamma + 1))(1 - a) / (1 - a^{\gamma + 1})$, and
$\gamma = 0$ (the verifier alone) when no block beats $t_p(1)$. Notebook 09 measures all of it.
"""

from __future__ import annotations

import statistics
from typing import Sequence

import pandas as pd

__all__ = ["DEFAULT_PAIR", "time_decoding", "auto_reason"]

#: (drafter, verifier) of notebook 01's clock: SmolLM2-135M's first 16 of 30 layers drafting for the whole
#: model.
DEFAULT_PAIR = ("smollm2-135m:layers=16", "smollm2-135m")


def time_decoding(
    pair, prompt, *, max_new_tokens: int = 32, gamma: int = 3, repeats: int = 3, seed: int = 0
) -> pd.DataFrame:
    """One row per way of decoding (`verifier`, `gamma=<gamma>`, `gamma=auto`): median seconds per token
    over `repeats` interleaved runs, the speed-up over the verifier, tokens per verifier call, the
    acceptance, whether every run emitted the verifier's tokens, and (auto) the block sizes chosen."""
    from ..decoding.engine import generate

    if int(repeats) < 1:
        raise ValueError(f"repeats={repeats}: time each way of decoding at least once.")
    ways = {
        "verifier": dict(method="verifier"),
        f"gamma={gamma}": dict(method="speculative", rule="spec", gamma=gamma),
        "gamma=auto": dict(method="speculative", rule="spec", gamma="auto"),
    }
    runs = {name: [] for name in ways}
    generate(
        pair.drafter,
        pair.verifier,
        prompt,
        method="speculative",
        rule="spec",
        gamma="auto",
        max_new_tokens=2,
        temperature=0.0,
        seed=seed,
    )  # calibrates once, outside the clock
    for _ in range(int(repeats)):
        for name, options in ways.items():
            runs[name].append(
                generate(
                    pair.drafter,
                    pair.verifier,
                    prompt,
                    temperature=0.0,
                    seed=seed,
                    max_new_tokens=max_new_tokens,
                    **options,
                )
            )
    reference = runs["verifier"][0].tokens
    rows = []
    for name, outs in runs.items():
        per_token = statistics.median(g.wall_time_s / max(len(g.tokens), 1) for g in outs)
        judged = sum(g.n_accepted + g.n_rejected for g in outs)
        rows.append(
            dict(
                way=name,
                s_per_token=per_token,
                tokens=len(outs[0].tokens),
                tokens_per_verifier_call=statistics.median(g.mean_accepted_per_call for g in outs),
                acceptance=sum(g.n_accepted for g in outs) / judged if judged else float("nan"),
                same_tokens_as_verifier=all(g.tokens == reference for g in outs),
                gammas_chosen=sorted({k for g in outs for k in g.gammas}),
            )
        )
    table = pd.DataFrame(rows).set_index("way")
    table["speedup"] = table.loc["verifier", "s_per_token"] / table["s_per_token"]
    return table


def auto_reason(pair, acceptance: float, gammas: Sequence[int] = range(0, 6)) -> pd.DataFrame:
    """The block-cost model's predicted speed-up over the verifier at each of `gammas`, at `acceptance`, from
    the calibration `gamma="auto"` starts from (its quick one, measured once per pair and stored): the row it
    would pick is the largest speed-up (`best`)."""
    from ..decoding.gamma_policy import calibration_for

    calibration = calibration_for(pair.drafter, pair.verifier)
    usable = [g for g in gammas if g < calibration.max_k]
    table = pd.DataFrame(
        {"gamma": usable, "predicted_speedup": [calibration.speedup(g, acceptance) for g in usable]}
    ).set_index("gamma")
    table["best"] = table.index == calibration.best_gamma(
        acceptance, max_gamma=max(usable) if usable else None
    )
    table.attrs.update(
        t_q_ms=1e3 * calibration.t_q(), t_p1_ms=1e3 * calibration.t_p(1), cost_ratio=calibration.cost_ratio
    )
    return table
