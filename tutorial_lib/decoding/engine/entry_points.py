"""The engine's entry points: `generate` (one prompt, any method), `generate_many` (a list of prompts) and
`calibrate` (the call costs of a pair, with this engine's loop timed)."""

from __future__ import annotations

import time
from typing import Callable, Iterable, List, Optional, Union

from ...checks import check_seed
from ...maths import laws
from ...models.adapter import load_model
from ...models.language_model import check_compatible
from .. import calibration
from ..calibration import Calibration
from ..gamma_policy import AutoGamma, auto_policy
from ..options import check_generate_options, stop_tokens
from ..generation import Generation
from .methods import Run, run_method

__all__ = ["generate", "generate_many", "calibrate"]


def generate(
    drafter,
    verifier,
    prompt,
    *,
    method: str,
    rule: Optional[str] = None,
    alpha: Optional[float] = None,
    beta=1.0,
    gamma: Union[int, str] = 5,
    temperature: float = 0.0,
    max_new_tokens: int = 128,
    seed: int = 0,
    eos_token_id=None,
    aggregate: str = "sequence",
    bonus: str = "verifier",
    bild_threshold: Optional[float] = None,
    bild_fallback: float = 0.5,
    shared_vocabulary: bool = False,
    on_token: Optional[Callable[[int], None]] = None,
) -> Generation:
    r"""Generate a continuation of `prompt` with a drafter $q$ and a verifier $p$, by `method`.

    Methods (each emitted token's law in brackets):

    - `"drafter"`, `"verifier"`: plain autoregressive decoding with one model [$q$ or $p$]; the
      two ends of every quality-cost curve.
    - `"speculative"`: Algorithm 4 with target $\pi$ = `targets.target_distribution(rule, q, p,
      alpha, beta=beta)` [$\pi$]. Per block: draft `gamma` tokens from $q$, score them with one call
      of $p$, keep draft $j$ with probability $\min\{1, \pi_j(x_j)/q_j(x_j)\}$, replace the first
      rejected one from $\mathrm{norm}(\max\{0, \pi_j - q_j\})$, or add a bonus token from
      $p_{t+\gamma}$ when all are kept; then crop both caches to the accepted prefix.
      `rule="spec"` is speculative decoding (Algorithm 1: lossless, $\pi = p$), `"lossy"` is
      SpecDecode [Lossy] (`beta=1`) or Lossy* (`beta="normalize"`), and the deferral rules
      (`chow`, `diff`, `opt`, `bild`, `token_v1..3`) are speculative cascades (Algorithm 5).
      `bonus="target"` instead draws the bonus token from $\pi_{t+\gamma}$ (one more drafter step),
      so that every token, bonus ones included, follows $\pi$. `bonus="none"` draws no bonus token:
      the next block starts with a new draft, so every token is an accepted draft or a residual
      token (law `accept_reject.output_distribution(pi, q)`), and the verifier is not fed the last draft
      (nothing would use $p_{t+\gamma}$). At `gamma=1` this is the authors' colab: one token per
      step, the draft accepted or replaced from the residual, one call of each model per token
      (`tutorial_lib.decoding.batch.generate_batch` runs it for a batch of prompts).
      `gamma="auto"` (or a `gamma_policy.AutoGamma`) picks each block's size from the block-cost
      model (`latency`) with the pair's measured call costs (`calibration.calibrate`, run on first
      use) and a running estimate of the acceptance; 0 is one plain verifier step (`rule="spec"`
      only). Exact as for a fixed gamma; `Generation.gammas` lists the sizes chosen.
    - `"token_cascade"`: Algorithm 2 with Chow's rule: sample from $q_t$ unless
      $\max_v q_t(v) < 1 - \alpha$, then call $p$ for this one position and sample from $p_t$.
    - `"oracle"`: Algorithm 3: both models at every position, sample from the one a prefix rule
      picks (measures head-room: it costs a call of $p$ per token).
    - `"seq_cascade"`: equation (1): the drafter answers; if its $T = 1$ probability of the answer
      (`aggregate="sequence"`, or the per-token geometric `"mean"` or `"min"`) is below $1 - \alpha$,
      the verifier answers instead.
    - `"bild"`: the original Big-Little Decoder: draft while $\max_v q(v) \ge$ `bild_fallback` (at
      most `gamma` tokens), score with $p$, roll back at the first draft with
      $-\log p(x) >$ `bild_threshold` and take the verifier's token there (or after the block).
      This threshold is not the `alpha` of `rule="bild"` (a bound on $D_{TV}(p, q)$): passing
      `alpha` with `method="bild"` is an error.

    Decisions (max-probability tests, acceptance sets) use the $T = 1$ probabilities; sampling uses
    temperature $T$, and $T = 0$ is greedy (one-hot laws), where a lossless method returns exactly
    the verifier's greedy tokens. The output stops after an EOS token (default: the verifier's) or
    after `max_new_tokens`; pass `eos_token_id=()` to never stop early. `prompt` is text or token
    ids; an encoder-decoder model reads it with its encoder, once per model. `alpha=None` is 0.
    `seed` is a whole number (None is refused: runs are reproducible). The two models must share
    their token ids (`models.check_compatible`); `shared_vocabulary=True` says so for models without
    a tokenizer. `on_token(token_id)` is called with each token as it is emitted (a streamer's feed); the
    sequence cascade may discard its drafter's answer, so `method="seq_cascade"` refuses it.

    Returns a `Generation`: the tokens and text, the calls of each model, drafted / accepted /
    rejected counts, `rejection_rate`, `deferral_rate`, `mean_accepted_per_call`, times, and a
    per-token `trace`.
    """
    drafter, verifier = load_model(drafter), load_model(verifier)
    check_compatible(drafter, verifier, shared_vocabulary=shared_vocabulary)
    policy = None
    if isinstance(gamma, (str, AutoGamma)):  # gamma="auto": a block size per block, from the cost model
        policy, gamma = auto_policy(gamma, drafter, verifier, method=method, rule=rule, bonus=bonus), 1
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
    seed = check_seed(seed)
    if on_token is not None and (o.method == "seq_cascade" or not callable(on_token)):
        raise ValueError(
            "on_token must be a function of one token id, and method='seq_cascade' takes none "
            "(it may replace its drafter's whole answer): read Generation.tokens at the end."
        )
    prompt_ids = verifier.encode(prompt)
    run = Run(
        drafter,
        verifier,
        prompt_ids,
        temperature=o.temperature,
        max_new_tokens=o.max_new_tokens,
        seed=seed,
        eos=stop_tokens(eos_token_id, verifier),
        on_token=on_token,
    )
    start = time.perf_counter()
    with laws.trusted_inputs():  # every law below comes from `probabilities`
        run_method(run, o, beta, policy)
    wall = time.perf_counter() - start
    tokens = run.seq[run.n_prefix :]
    sessions = run.sessions
    by_model = {k: [sessions[k]] if k in sessions else [] for k in ("drafter", "verifier")}
    return Generation(
        tokens=tokens,
        text=verifier.decode(tokens),
        prompt_tokens=prompt_ids,
        method=o.method,
        rule=o.rule,
        alpha=o.alpha,
        gamma=o.gamma if policy is None else "auto",
        temperature=o.temperature,
        bild_threshold=o.bild_threshold,
        gammas=policy.gammas if policy is not None else [],
        auto_costs=policy.cost_table() if policy is not None else [],
        auto_acceptance=policy.acceptance if policy is not None else None,
        n_verifier_calls=sum(s.n_calls for s in by_model["verifier"]),
        n_drafter_calls=sum(s.n_calls for s in by_model["drafter"]),
        wall_time_s=wall,
        drafter_time_s=sum(s.time_s for s in by_model["drafter"]),
        verifier_time_s=sum(s.time_s for s in by_model["verifier"]),
        stopped_at_eos=run.stopped_at_eos,
        trace=run.trace,
        feed_log={k: list(s.feed_log) for k, s in sessions.items()},
        **run.counts,
        **{f"{which}_{name}": value for which, counts in run.calls.items() for name, value in counts.items()},
    )


def generate_many(
    drafter,
    verifier,
    prompts: Iterable,
    *,
    seed: int = 0,
    progress: bool = True,
    desc: Optional[str] = None,
    **options,
) -> List[Generation]:
    """`generate` over a list of prompts (prompt `i` uses seed `seed + i`), with a progress bar."""
    from tqdm.auto import tqdm

    seed = check_seed(seed)
    prompts = list(prompts)
    label = desc or options.get("method", "generate")
    return [
        generate(drafter, verifier, prompt, seed=seed + i, **options)
        for i, prompt in enumerate(tqdm(prompts, desc=label, disable=not progress))
    ]


def calibrate(pair, verifier=None, **options) -> Calibration:
    """The call costs of a loaded pair (`calibration.calibrate`), with this engine's loop timed for the
    per-call and per-block overheads: `tl.calibrate(pair, max_k=..., repeats=...)`."""
    return calibration.calibrate(pair, verifier, decode=generate, **options)
