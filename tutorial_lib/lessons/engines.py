r"""The paper's rules behind the knobs of the engines people run (notebook 10).

**transformers** (the pinned 5.23): `model.generate(..., assistant_model=drafter, do_sample=True,
assistant_ensemble_weight=w)` accepts a draft $x \sim q$ with probability
$\min\{1, 1 - w + w\,p(x)/q(x)\}$ and resamples a rejected one from $\mathrm{norm}(\max\{0, p - q\})$
(`transformers/generation/utils.py`, `_speculative_sampling`). That is Algorithm 4 with the target
$\nu = w\,p + (1 - w)\,q$: the paper's mixture (equation 6) with a *constant* deferral weight $r = w$,
the package's `rule="mixture"` at $\alpha = 1 - w$. By Lemma 3 a draft is rejected with probability
$w\,D_{TV}(p, q)$, and every emitted draft-position token follows $\nu$ (`ensemble_first_tokens`
samples it through `generate` itself).

**vLLM / SGLang relaxed acceptance** (vLLM pull requests #21506, #22238 and #43184, greedy path:
"accept iff `draft_id` is in `topK(target_probs)` and `P(draft_id) >= P(target_top1) * relax_ratio`",
else emit the verifier's greedy token). **TensorRT-LLM relaxed acceptance** (`MTPDecodingConfig(
relaxed_topk=K, relaxed_delta=delta)`, described in NVIDIA's "DeepSeek R1 MTP Implementation and
Optimization" blog): the draft is accepted if it is among the verifier's top K tokens and
$p(x) \ge p_{\rm top1} - \delta$. With a greedy drafter ($q$ one-hot at its argmax) and a greedy verifier,
Algorithm 4 with a token rule emits the draft when it lies in the acceptance set $A$ (there
$\pi = q$) and otherwise the verifier's argmax (there $\pi = p$, one-hot), so

- vLLM / SGLang with `relax_ratio` $= \rho$ is Token-V3 with $\alpha = 1 - \rho$, the set capped to
  $A \cap \mathrm{top}_K(p)$;
- TensorRT-LLM with `relaxed_delta` $= \delta$ is Token-V2 with $\alpha = \delta$, capped the same way.

The sets are computed from the temperature-1 laws, as the package's decisions always are
(`capped_token_target`); `relaxed_tokens` writes the engines' rules out on their own, so the two can be
compared token for token.

**Engines that test a draft against the drafter's law $q$.** A verifier that keeps the drafter's
probabilities can run Algorithm 4 with any target: $\min\{1, \pi(x)/q(x)\}$ needs $q(x)$, and the rules whose
target depends on $q$ (Chow, Diff, OPT, BiLD\*, Token-V1, the mixtures) need all of $q$. TensorRT-LLM's pull
request #15775 (merged) extends rejection sampling to its one-model speculative decoding (MTP, draft-target,
PARD, DFlash) and keeps the draft's proposal law in `draft_probs`; SGLang's pull request #26312 does the same
for SGLang (as reported; its source was not read here). Both verify against the verifier's $p$ (SpecDecode);
the paper's rules are then one change of the target away. vLLM's relaxed greedy acceptance (#21506, #22238,
#43184, #45229) closed unmerged; mlx-lm keeps exact token matching (SpecDecode at $T = 0$ only).
"""

from __future__ import annotations

import contextlib
from typing import List, Sequence

import numpy as np
import torch
from scipy import stats as scipy_stats

from ..maths import targets
from ..maths import rules
from ..maths import laws
from ..maths.verification import verify_block

__all__ = [
    "ENGINE_PROFILES",
    "CONTEXTS",
    "engine_profile",
    "ENGINE_RULES",
    "RELAXED_FORMS",
    "relaxed_tokens",
    "capped_token_target",
    "algorithm4_greedy_tokens",
    "ensemble_alpha",
    "counting_ensemble_verification",
    "ensemble_first_tokens",
    "engine_first_tokens",
    "chi_square_test",
]

#: Notebook 10's profiles: the SmolLM2-135M pair (its first 16 layers draft) for the engines' checks, draws
#: per context; the learned rule always trains on the committed Qwen data of notebook 08 (no model needed).
#: 100 draws: the first check's cell took over 10 minutes with 300 beside a test run (transformers' assisted
#: generate per draw).
ENGINE_PROFILES = {
    "default": dict(
        drafter="smollm2-135m:layers=16", verifier="smollm2-135m", n_samples=100, n_resamples=1000
    ),
    "smoke": dict(drafter="smollm2-135m:layers=16", verifier="smollm2-135m", n_samples=30, n_resamples=200),
}
#: The contexts whose next-token laws the engines' checks sample.
CONTEXTS = ("def fibonacci(n):", "The capital of France is")


def engine_profile(profile: str, **overrides) -> dict:
    """The settings of a notebook-10 profile; keyword arguments that are not None replace them."""
    if profile not in ENGINE_PROFILES:
        raise ValueError(f"profile={profile!r}: choose one of {', '.join(ENGINE_PROFILES)}.")
    return dict(ENGINE_PROFILES[profile], **{k: v for k, v in overrides.items() if v is not None})


#: The table of notebook 10: each engine's knob and the paper's rule it is.
ENGINE_RULES = [
    dict(
        engine="transformers 5.23",
        knob="assistant_ensemble_weight=w (do_sample=True)",
        rule="mixture with constant weight r = w (rule='mixture', alpha = 1 - w)",
        lossless="no (w < 1)",
        cost="rejection w * D_TV(p, q) per draft (Lemma 3); output law w p + (1 - w) q",
    ),
    dict(
        engine="transformers 5.23",
        knob="assistant_model=..., no ensemble weight",
        rule="SpecDecode (rule='spec')",
        lossless="yes",
        cost="rejection D_TV(p, q)",
    ),
    dict(
        engine="vLLM / SGLang (relaxed acceptance proposals; vLLM's closed unmerged, the last #43184)",
        knob="relax_ratio=rho, top-K cap",
        rule="Token-V3, alpha = 1 - rho, set capped to top-K of p",
        lossless="no (rho < 1)",
        cost="greedy path only; the draft is kept whenever it is in the capped set",
    ),
    dict(
        engine="TensorRT-LLM (MTP)",
        knob="relaxed_delta=delta, relaxed_topk=K",
        rule="Token-V2, alpha = delta, set capped to top-K of p",
        lossless="no (delta > 0 or K > 1)",
        cost="greedy path only; the draft is kept whenever it is in the capped set",
    ),
    dict(
        engine="vLLM rejection sampler (draft probabilities passed in)",
        knob="(patches outside the main project)",
        rule="any target: Chow, Diff, OPT, Token-V3 through Algorithm 4",
        lossless="only for rule='spec'",
        cost="the rule's rejection rate; exact for its own target",
    ),
    dict(
        engine="TensorRT-LLM (PR #15775, merged)",
        knob="rejection sampling with the draft's q (draft_probs)",
        rule="SpecDecode; with q kept, any target is one change away: Chow, Diff, OPT, BiLD*, Token-V1..V3",
        lossless="yes (as shipped)",
        cost="rejection D_TV(p, q); a rule's target: its own rate, exact",
    ),
    dict(
        engine="SGLang (PR #26312, as reported)",
        knob="rejection sampling with the draft's q",
        rule="SpecDecode; with q kept, Chow, Diff, OPT, BiLD*, Token-V1..V3 expressible",
        lossless="yes (as shipped)",
        cost="rejection D_TV(p, q)",
    ),
    dict(
        engine="mlx-lm",
        knob="draft_model=...",
        rule="SpecDecode at T = 0 (exact token matching)",
        lossless="yes",
        cost="a draft is kept only when it equals the verifier's token",
    ),
    dict(
        engine="transformers 5.23 + this package",
        knob="generate(custom_generate=tl.speculative_cascade(rule, alpha))",
        rule="every rule of Table 1 and Token-V1..V3, through Algorithm 4",
        lossless="only for rule='spec'",
        cost="the engine's own (tl.generate's tokens); see benchmarks/hf_generate_overhead.py",
    ),
]

#: The relaxed-acceptance forms: engine -> (the package's token rule, alpha as a function of the knob).
RELAXED_FORMS = {
    "vllm": ("token_v3", lambda relax_ratio: 1.0 - relax_ratio),
    "tensorrt": ("token_v2", lambda delta: delta),
}


def _check_form(form: str) -> str:
    if form not in RELAXED_FORMS:
        raise ValueError(
            f"form={form!r}: choose 'vllm' (relax_ratio, as in vLLM and SGLang) "
            "or 'tensorrt' (relaxed_delta)."
        )
    return form


def _top_k_mask(p: torch.Tensor, top_k: int) -> torch.Tensor:
    top_k = int(top_k)
    if not 1 <= top_k:
        raise ValueError(f"top_k={top_k}: the cap keeps at least the verifier's top token (top_k >= 1).")
    k = min(top_k, p.shape[-1])
    return torch.zeros_like(p, dtype=torch.bool).scatter_(-1, p.topk(k, -1).indices, True)


def relaxed_tokens(form: str, p, drafts, knob: float, top_k: int) -> torch.Tensor:
    """The token a relaxed-acceptance engine emits at each row: the draft if it is in the verifier's
    top `top_k` and passes the probability test of `form` (`vllm`: $p(x) \\ge$ `knob` $\\cdot \\max p$;
    `tensorrt`: $p(x) \\ge \\max p -$ `knob`), else the verifier's argmax. `p`: `(B, V)` verifier laws at
    $T = 1$; `drafts`: `(B,)` token ids."""
    form = _check_form(form)
    p = laws.check_pair(p, p)[1]
    drafts = torch.as_tensor(drafts, dtype=torch.long)
    top = p.max(-1).values
    px = p.gather(-1, drafts.unsqueeze(-1)).squeeze(-1)
    in_top_k = _top_k_mask(p, top_k).gather(-1, drafts.unsqueeze(-1)).squeeze(-1)
    passes = px >= (knob * top if form == "vllm" else top - knob)
    return torch.where(in_top_k & passes, drafts, p.argmax(-1))


def capped_token_target(
    rule: str, q, p, alpha: float, top_k: int, *, q_unscaled=None, p_unscaled=None
) -> torch.Tensor:
    r"""A token rule's target with its acceptance set capped to the verifier's top `top_k` tokens:
    $\pi = q\,1_{A_K} + (1 - q(A_K))\,p$ with $A_K = A \cap \mathrm{top}_K(p)$ (`top_k` $\ge$ the vocabulary:
    `targets.target_distribution` itself). Sets from the temperature-1 laws (default `q`, `p`)."""
    if rule not in rules.TOKEN_RULES:
        raise ValueError(
            f"rule={rule!r}: a capped set needs a token rule, one of {', '.join(rules.TOKEN_RULES)}."
        )
    q, p = laws.check_pair(q, p)
    pu = p if p_unscaled is None else torch.as_tensor(p_unscaled, dtype=p.dtype)
    qu = q if q_unscaled is None else torch.as_tensor(q_unscaled, dtype=q.dtype)
    in_set = targets.acceptance_set(rule, qu, pu, alpha) & _top_k_mask(pu, top_k)
    return q * in_set + (1.0 - (q * in_set).sum(-1, keepdim=True)) * p


def algorithm4_greedy_tokens(form: str, p_unscaled, drafts, knob: float, top_k: int) -> torch.Tensor:
    """The tokens Algorithm 4 (`verification.verify_block`) emits with a one-hot drafter at `drafts`, a
    greedy verifier (its $T = 0$ law) and the engine's rule as a capped Token-V3 / Token-V2 target."""
    rule, alpha_of = RELAXED_FORMS[_check_form(form)]
    p1 = laws.check_pair(p_unscaled, p_unscaled)[1].double()
    drafts = torch.as_tensor(drafts, dtype=torch.long)
    q0 = torch.nn.functional.one_hot(drafts, p1.shape[-1]).to(p1.dtype)  # a greedy drafter's law
    p0 = torch.nn.functional.one_hot(p1.argmax(-1), p1.shape[-1]).to(p1.dtype)  # a greedy verifier's law
    pi = capped_token_target(rule, q0, p0, alpha_of(knob), top_k, p_unscaled=p1)
    verdict = verify_block(
        pi.unsqueeze(1), q0.unsqueeze(1), drafts.unsqueeze(1), torch.Generator().manual_seed(0)
    )
    return torch.where(verdict.n_accepted > 0, drafts, verdict.extra)


def ensemble_alpha(weight: float) -> float:
    """The package's `mixture` alpha of transformers' `assistant_ensemble_weight`: $\\alpha = 1 - w$."""
    weight = float(weight)
    if not 0.0 < weight < 1.0:
        raise ValueError(
            f"weight={weight}: transformers takes assistant_ensemble_weight in the open interval (0, 1)."
        )
    return 1.0 - weight


@contextlib.contextmanager
def counting_ensemble_verification():
    """Inside this block, every call of transformers' verification step (`_speculative_sampling`, what
    `generate` runs with `do_sample=True` and an assistant) is recorded as `(drafted, accepted)` in the
    list it yields: `generate` reports neither number itself."""
    from transformers.generation import utils as generation_utils

    original = generation_utils._speculative_sampling
    calls: List[tuple] = []

    def recording(candidate_input_ids, candidate_logits, candidate_length, new_logits, **kwargs):
        valid, n_matches = original(
            candidate_input_ids, candidate_logits, candidate_length, new_logits, **kwargs
        )
        calls.append((int(candidate_length), int(n_matches)))
        return valid, n_matches

    generation_utils._speculative_sampling = recording
    try:
        yield calls
    finally:
        generation_utils._speculative_sampling = original


def ensemble_first_tokens(pair, prompt_ids: Sequence[int], weight: float, n: int, seed: int = 0):
    """`(tokens, drafted, accepted)`: the first new token of `n` runs of transformers' `generate` with
    the drafter as `assistant_model` and `assistant_ensemble_weight=weight` (`T = 1`, no top-k / top-p),
    each seeded `seed + i`, and the drafts its first verification step judged and kept. The first token
    is always drafted (two new tokens are asked for, so the assistant drafts one)."""
    ensemble_alpha(weight)
    drafter, verifier = pair
    ids = torch.tensor([list(prompt_ids)])
    options = dict(
        do_sample=True,
        temperature=1.0,
        top_k=None,
        top_p=None,
        max_new_tokens=2,
        assistant_model=drafter.model,
        assistant_ensemble_weight=float(weight),
        attention_mask=torch.ones_like(ids),
        pad_token_id=0,
    )
    tokens, drafted, accepted = [], 0, 0
    with counting_ensemble_verification() as calls, torch.no_grad():
        for i in range(int(n)):
            start = len(calls)
            torch.manual_seed(seed + i)
            out = verifier.model.generate(ids, **options)
            tokens.append(int(out[0, ids.shape[1]]))
            if len(calls) == start:
                raise RuntimeError(
                    "transformers generated without a verification step; check that the assistant drafts."
                )
            first = calls[start]
            drafted += min(first[0], 1)
            accepted += min(first[1], 1)
    return np.asarray(tokens), drafted, accepted


def engine_first_tokens(
    pair, prompt_ids: Sequence[int], alpha: float, n: int, seed: int = 0, rule: str = "mixture"
):
    """`(tokens, drafted, accepted)` of the package's engine: `n` runs of one drafted token at `T = 1`
    with `rule` at `alpha` (seeds `seed + i`)."""
    from ..decoding.engine import generate

    tokens, drafted, accepted = [], 0, 0
    for i in range(int(n)):
        g = generate(
            pair.drafter,
            pair.verifier,
            list(prompt_ids),
            method="speculative",
            rule=rule,
            alpha=alpha,
            gamma=1,
            temperature=1.0,
            max_new_tokens=1,
            seed=seed + i,
            eos_token_id=(),
        )
        tokens.append(g.tokens[0])
        drafted += g.n_accepted + g.n_rejected
        accepted += g.n_accepted
    return np.asarray(tokens), drafted, accepted


def chi_square_test(tokens, law) -> tuple:
    """`(statistic, p_value, cells)`: Pearson's test of the sampled `tokens` against `law` (`(V,)`),
    the cells expected to hold fewer than 5 draws pooled into one (`scipy.stats.chisquare`)."""
    law = np.asarray(torch.as_tensor(law, dtype=torch.float64))
    counts = np.bincount(np.asarray(tokens, dtype=np.int64), minlength=len(law)).astype(float)
    expected = law / law.sum() * counts.sum()
    small = expected < 5
    small[np.argmax(expected)] = (
        False  # the likeliest token keeps its own cell: at least two cells with few draws
    )
    observed = np.append(counts[~small], counts[small].sum())
    wanted = np.append(expected[~small], expected[small].sum())
    if wanted[-1] == 0:
        if observed[-1] > 0:
            return np.inf, 0.0, len(observed)  # draws where the law has no mass: certainly not this law
        observed, wanted = observed[:-1], wanted[:-1]
    if len(observed) < 2:  # the law sits on one token and every draw is that token
        return 0.0, 1.0, 1
    result = scipy_stats.chisquare(observed, wanted * observed.sum() / wanted.sum())
    return float(result.statistic), float(result.pvalue), len(observed)
