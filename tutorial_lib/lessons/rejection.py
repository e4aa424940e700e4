r"""How often the verifier overrules the drafter: each target's rejection rate, Lemma 3, and a simulation.

Algorithm 4 keeps a draft $x \sim q$ with probability $\min\{1, \pi(x)/q(x)\}$, so a draft is rejected
with probability

$$\rho(\pi, q) = \sum_v \max\{0,\, q(v) - \pi(v)\},$$

and for a mixture $\pi = (1 - r)\,q + r\,p$ (a deferral rule's target, $r = \delta \in \{0, 1\}$, or a
randomised deferral $r \in [0, 1]$) Lemma 3 gives

$$\rho = r\, D_{TV}(p, q), \qquad D_{TV}(p, q) = \sum_v \max\{0,\, p(v) - q(v)\}.$$

Over several contexts with visit weights $w_c$ the rate is $\sum_c w_c\,\rho_c / \sum_c w_c$. The
simulation passes $n$ drafts $x \sim q$ through `verification.verify_draft`; the number rejected $k$ is
binomial, so $\hat\rho = k/n$ has standard error $\mathrm{se} = \sqrt{\rho(1-\rho)/n}$ and
$z = (\hat\rho - \rho)/\mathrm{se}$.

Examples (`examples.Example`) hold temperature-1 probabilities; they are scaled with `scaled`
(decisions use the temperature-1 ones, as in `targets`). Each rule sits somewhere on its alpha span
(`alpha_span`: `rules.ALPHA_RANGES`, bounded); `alpha_at(rule, lenience)` puts every rule at the
same fraction of its span.
"""

from __future__ import annotations

import functools
import math
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch

from ..maths import targets, verification
from ..maths import rules
from ..maths import laws
from ..maths import accept_reject
from ..checks import check_gamma, check_temperature
from ..maths.rules import check_rule
from ..toy.examples import Example, get_example, single_example, toy_examples, toy_world_inputs
from ..maths.latency import expected_tokens_per_call

__all__ = [
    "Beta",
    "VARIANTS",
    "CURVE_VARIANTS",
    "LESSON_SPANS",
    "LOSSY_VARIANTS",
    "alpha_span",
    "alpha_at",
    "alpha_sweep",
    "scaled",
    "target_at",
    "target_readouts",
    "every_rule_numbers",
    "rejection_table",
    "lemma3_gap",
    "rejection_curves",
    "rejection_at",
    "simulate_rejections",
    "binomial_z",
    "lemma3_check",
    "rule_rejection_check",
]

Beta = Union[float, str]

#: The lessons' labels of the lossy rule's two betas.
LOSSY_VARIANTS: Tuple[Tuple[str, str, Beta], ...] = (
    ("Lossy (β=1)", "lossy", 1.0),
    ("Lossy* (β normalises)", "lossy", "normalize"),
)


def _variants() -> tuple:
    deciding = [(r.label, r.name, 1.0) for r in rules.RULE_TABLE.values() if r.family in ("prefix", "token")]
    return (("SpecDecode", "spec", 1.0), *LOSSY_VARIANTS, *deciding)


#: (label, rule, beta) for every target the lessons compare: SpecDecode, lossy at both betas, and every rule
#: of the prefix and token families of `rules.RULE_TABLE` (a live view); `beta` only matters for `lossy`.
VARIANTS = rules.TableView(_variants)
#: The variants whose rejection rate moves with alpha (SpecDecode is their common reference).
CURVE_VARIANTS = rules.TableView(lambda: _variants()[1:])

#: The span of alpha the lessons sweep, where it is not the rule's alpha range (`alpha_span`): OPT (unbounded)
#: gets [-5, 5] and lossy (which excludes 1) stops at 0.99. OPT's decision can only change where
#: |alpha| <= |max p - max q| / D_TV(p, q). At T = 1 that ratio is at most 1 (with v the argmax of p,
#: max p - max q <= p(v) - q(v) <= D_TV, and the same the other way round), so [-1, 1] would do; at
#: other temperatures D_TV is that of the scaled distributions and the ratio grows, hence [-5, 5].
LESSON_SPANS: Dict[str, Tuple[float, float]] = {"opt": (-5.0, 5.0), "lossy": (0.0, 0.99)}

_LOG_FLOOR = -1e4  # stands in for log(0) so the logits stay finite; exp() of it is exactly 0


def alpha_span(rule: str) -> Optional[Tuple[float, float]]:
    """`(low, high)` of `rule`'s alpha span (low = SpecDecode end): `LESSON_SPANS`, else its alpha range in
    `rules.RULE_TABLE`; `None` if it ignores alpha."""
    record = rules.rule(rule)
    return LESSON_SPANS.get(record.name, record.alpha_range)


def alpha_at(rule: str, lenience: float) -> float:
    """The alpha a fraction `lenience` of the way along `rule`'s span (0: SpecDecode end, 1: drafter end)."""
    if not 0.0 <= float(lenience) <= 1.0:
        raise ValueError(f"lenience={lenience} must lie in [0, 1] (0 = SpecDecode end, 1 = drafter end).")
    span = alpha_span(rule)
    if span is None:
        return 0.0
    low, high = span
    return low + float(lenience) * (high - low)


def alpha_sweep(rule: str, n: int = 41) -> torch.Tensor:
    """`n` evenly spaced alphas over `rule`'s span (shape `(n,)`)."""
    if int(n) < 2:
        raise ValueError(f"n_alpha={n}: a curve needs at least its two ends (n_alpha >= 2).")
    span = alpha_span(rule)
    if span is None:
        return torch.zeros(int(n), dtype=torch.float64)
    return torch.linspace(span[0], span[1], int(n), dtype=torch.float64)


def scaled(probs, temperature: float) -> torch.Tensor:
    r"""Temperature-$T$ version of temperature-1 probabilities: $\mathrm{softmax}(\log \text{probs} / T)$."""
    probs = torch.as_tensor(probs, dtype=torch.float64)
    logits = probs.clamp_min(1e-300).log().clamp_min(_LOG_FLOOR)
    return laws.probabilities(logits, check_temperature(temperature))


def target_at(rule: str, q_unscaled, p_unscaled, alpha: float, temperature: float, beta: Beta = 1.0):
    """`(q, p, pi)` at `temperature`; decisions use the temperature-1 distributions."""
    q, p = scaled(q_unscaled, temperature), scaled(p_unscaled, temperature)
    pi = targets.target_distribution(
        rule, q, p, alpha, q_unscaled=q_unscaled, p_unscaled=p_unscaled, beta=beta
    )
    return q, p, pi


# --------------------------------------------------------------------------------------------
# One pair: the read-outs of notebook 01
# --------------------------------------------------------------------------------------------


def target_readouts(
    example: Union[str, Example],
    rule: str,
    alpha: float = 0.0,
    temperature: float = 1.0,
    gamma: int = 5,
    beta: Beta = 1.0,
    *,
    examples=None,
) -> dict:
    r"""The numbers notebook 01 shows for one pair: decision, $D_{TV}$, rejection, tokens per call.

    Keys: `decision` (a sentence), `defers` (the prefix decision; `None` for token and lossy rules),
    `deferral_weight` (mass of $\pi$ taken from $p$; `None` for lossy), `acceptance_set` (token
    rules), `tv_distance` $D_{TV}(p, q)$ at `temperature`, `rejection_probability` $\rho$,
    `lemma3_rejection` ($\delta D_{TV}$ for mixtures, else `None`), `acceptance_rate` $1 - \rho$,
    `expected_tokens_per_call` (`latency.expected_tokens_per_call`), `target_mass` ($\sum_v \pi(v)$;
    above 1 for lossy with $\beta = 1$), and for lossy `beta` (the normalising value when
    `beta="normalize"`), plus `q`, `p`, `pi`.
    """
    example = single_example(example, examples)
    check_rule(rule)
    alpha = targets.check_alpha(rule, alpha)
    temperature, gamma = check_temperature(temperature), check_gamma(gamma)
    q, p, pi = target_at(rule, example.q, example.p, alpha, temperature, beta)
    q_u, p_u = example.q, example.p
    tv = float(laws.tv_distance(p, q))
    rho = float(accept_reject.rejection_probability(pi, q))
    out = dict(
        example=example.name,
        rule=rule,
        alpha=alpha,
        temperature=temperature,
        gamma=gamma,
        tv_distance=tv,
        rejection_probability=rho,
        acceptance_rate=1.0 - rho,
        expected_tokens_per_call=expected_tokens_per_call(1.0 - rho, gamma),
        target_mass=float(pi.sum()),
        defers=None,
        deferral_weight=None,
        acceptance_set=None,
        lemma3_rejection=None,
        q=q,
        p=p,
        pi=pi,
    )
    weight = float(targets.deferral_weight(rule, q, p, alpha, q_unscaled=q_u, p_unscaled=p_u))
    max_q, max_p = float(q_u.max()), float(p_u.max())
    if rule == "lossy":
        beta_value = float(targets.lossy_beta(q, p, alpha)) if beta == "normalize" else float(beta)
        out["beta"] = beta_value
        out["decision"] = (
            f"no deferral decision: pi = max{{min{{q, p/(1-alpha)}}, p/beta}} with "
            f"beta = {beta_value:.4g}; pi sums to {out['target_mass']:.3f}"
        )
        return out
    out["deferral_weight"] = weight
    if rule in rules.TOKEN_RULES:
        in_set = targets.acceptance_set(rule, q, p, alpha, q_unscaled=q_u, p_unscaled=p_u)
        accepted = [example.labels[i] for i in in_set.nonzero().flatten().tolist()]
        out["acceptance_set"] = accepted
        out["decision"] = (
            f"keeps drafts in A = {{{', '.join(accepted)}}} (q(A) = {1 - weight:.3f}); "
            f"the other {weight:.3f} of the mass comes from p"
        )
        return out
    out["defers"] = bool(weight > 0.5)
    out["lemma3_rejection"] = weight * tv
    verdict = "defer to p" if out["defers"] else "keep q"
    if rule == "drafter":
        out["decision"] = "pi = q: every draft is kept"
    elif rule in ("spec", "verifier"):
        out["decision"] = "pi = p: always defers to the verifier"
    elif rule == "chow":
        out["decision"] = (
            f"max q = {max_q:.3f} {'<' if out['defers'] else '>='} 1 - alpha = {1 - alpha:.3f}: {verdict}"
        )
    elif rule == "diff":
        out["decision"] = (
            f"max q = {max_q:.3f} {'<' if out['defers'] else '>='} max p - alpha = "
            f"{max_p - alpha:.3f}: {verdict}"
        )
    elif rule == "opt":
        out["decision"] = (
            f"max q = {max_q:.3f} {'<' if out['defers'] else '>='} max p - alpha D_TV = "
            f"{max_p - alpha * tv:.3f}: {verdict}"
        )
    else:  # bild: the distance of the temperature-1 distributions
        distance = float(laws.tv_distance(p_u, q_u))
        out["decision"] = (
            f"D_TV at T=1 = {distance:.3f} {'>' if out['defers'] else '<='} alpha = {alpha:.3f}: {verdict}"
        )
    return out


def every_rule_numbers(example: Example, lenience: float, temperature: float) -> Dict[str, tuple]:
    """`label -> (pi, numbers)` for q, p (numbers `None`) and every variant at `alpha_at(rule, lenience)`;
    numbers hold the rule, its alpha, its rejection probability and its deferral weight."""
    temperature = check_temperature(temperature)
    q, p = scaled(example.q, temperature), scaled(example.p, temperature)
    rows = {"drafter q": (q, None), "verifier p": (p, None)}
    for label, rule, beta in VARIANTS:
        alpha = alpha_at(rule, lenience)
        _, _, pi = target_at(rule, example.q, example.p, alpha, temperature, beta)
        numbers = dict(
            rule=rule,
            alpha=alpha,
            rejection=float(accept_reject.rejection_probability(pi, q)),
            deferral_weight=float(
                targets.deferral_weight(rule, q, p, alpha, q_unscaled=example.q, p_unscaled=example.p)
            ),
        )
        rows[label] = (pi, numbers)
    return rows


def rejection_table(
    examples: Optional[Dict[str, Example]] = None, lenience: float = 0.5, temperature: float = 1.0
) -> Dict[str, Dict[str, float]]:
    """`{example: {variant label: rejection probability}}` with every rule at `alpha_at(rule, lenience)`."""
    examples = toy_examples() if examples is None else examples
    return {
        name: {
            label: numbers["rejection"]
            for label, (_, numbers) in every_rule_numbers(example, lenience, temperature).items()
            if numbers is not None
        }
        for name, example in examples.items()
        if example.n_contexts == 1
    }


def lemma3_gap(
    example: Union[str, Example], temperature: float = 1.0, n_alpha: int = 21, *, examples=None
) -> float:
    r"""Largest $|\rho - \delta D_{TV}(p, q)|$ of the read-outs over every mixture rule and `n_alpha`
    alphas spanning its range (0 up to rounding, by Lemma 3)."""
    gaps = []
    for rule in ("drafter", "verifier", "spec") + rules.PREFIX_RULES:
        for alpha in alpha_sweep(rule, n_alpha).tolist():
            out = target_readouts(example, rule, alpha, temperature, examples=examples)
            gaps.append(abs(out["rejection_probability"] - out["lemma3_rejection"]))
    return max(gaps)


# --------------------------------------------------------------------------------------------
# Rejection rate against alpha (notebook 02)
# --------------------------------------------------------------------------------------------


def _weighted_rate(example: Example, rule: str, alpha: float, temperature: float, beta: Beta) -> float:
    q_u, p_u = (
        example.q.reshape(-1, example.q.shape[-1]),
        example.p.reshape(-1, example.p.shape[-1]),
    )  # (C, V)
    q, _, pi = target_at(rule, q_u, p_u, alpha, temperature, beta)
    return float(example.context_weights() @ accept_reject.rejection_probability(pi, q))


@functools.lru_cache(maxsize=64)
def _curves(example: Example, temperature: float, n_alpha: int) -> dict:
    q_u, p_u = (
        example.q.reshape(-1, example.q.shape[-1]),
        example.p.reshape(-1, example.p.shape[-1]),
    )  # (C, V)
    w = example.context_weights()
    curves = {}
    for label, rule, beta in CURVE_VARIANTS:
        alphas = alpha_sweep(rule, n_alpha)
        rates = [_weighted_rate(example, rule, float(a), temperature, beta) for a in alphas]
        curves[label] = dict(rule=rule, beta=beta, alpha=alphas.tolist(), rejection=rates)
    spec = float(w @ laws.tv_distance(scaled(p_u, temperature), scaled(q_u, temperature)))
    return dict(example=example.name, temperature=temperature, spec=spec, curves=curves)


def rejection_curves(
    example: Union[str, Example, None] = None, temperature: float = 1.0, n_alpha: int = 41, *, examples=None
) -> dict:
    """Rejection rate against alpha for every variant of `CURVE_VARIANTS` on the same inputs.

    `example` is one pair or a weighted set of contexts (default: `toy_world_inputs()`); rates are
    averaged with the contexts' weights. Returns `{"spec": SpecDecode's rate, "curves": {label:
    {"rule", "beta", "alpha": [...], "rejection": [...]}}}` (a fresh copy; computed once per input).
    """
    example = toy_world_inputs() if example is None else get_example(example, examples)
    if int(n_alpha) < 2:
        raise ValueError(f"n_alpha={n_alpha}: a curve needs at least its two ends (n_alpha >= 2).")
    result = _curves(example, check_temperature(temperature), int(n_alpha))
    return dict(
        result,
        curves={
            label: dict(c, alpha=list(c["alpha"]), rejection=list(c["rejection"]))
            for label, c in result["curves"].items()
        },
    )


def rejection_at(
    example: Union[str, Example, None], alpha: float, temperature: float = 1.0, *, examples=None
) -> Dict[str, Optional[float]]:
    r"""Each variant's rejection rate $\sum_c w_c \rho_c$ at one `alpha`; `None` where `alpha` lies outside
    the rule's span (`alpha_span`)."""
    example = toy_world_inputs() if example is None else get_example(example, examples)
    alpha, temperature = float(alpha), check_temperature(temperature)
    if math.isnan(alpha):
        raise ValueError("alpha is NaN; pass a number.")
    out = {}
    for label, rule, beta in CURVE_VARIANTS:
        low, high = alpha_span(rule)
        out[label] = _weighted_rate(example, rule, alpha, temperature, beta) if low <= alpha <= high else None
    return out


# --------------------------------------------------------------------------------------------
# Lemma 3 by simulation
# --------------------------------------------------------------------------------------------


def binomial_z(count: int, n: int, rho: float) -> Tuple[float, float, float]:
    r"""`(rate, stderr, z)` of `count` rejections in `n` draws against the predicted probability `rho`.

    The standard error $\sqrt{\rho(1-\rho)/n}$ is the one of the prediction; where it is 0 (a draw
    is then always or never rejected) any deviation is infinitely unlikely: z is 0 or inf.
    """
    rate = count / n
    stderr = math.sqrt(max(rho * (1.0 - rho), 0.0) / n)
    if stderr == 0.0:
        return rate, 0.0, 0.0 if abs(rate - rho) < 1e-12 else math.inf
    return rate, stderr, (rate - rho) / stderr


def simulate_rejections(pi, q, n: int, generator: Optional[torch.Generator] = None) -> int:
    r"""How many of `n` drafts $x \sim q$ `verification.verify_draft` rejects under target `pi` (one
    position)."""
    q = torch.as_tensor(q, dtype=torch.float64)
    pi = torch.as_tensor(pi, dtype=torch.float64)
    if int(n) < 1:
        raise ValueError(f"n={n}: simulate at least one draft.")
    V = q.shape[-1]
    q_rows, pi_rows = q.expand(int(n), V), pi.expand(int(n), V)  # (n, V): n independent drafts
    draft = accept_reject.sample(q_rows, generator)
    _, accepted = verification.verify_draft(pi_rows, q_rows, draft, generator)
    return int((~accepted).sum())


def _pairs_and_generator(examples: Optional[Dict[str, Example]], seed: int):
    """The single-context examples (default `toy_examples()`) and the simulation's seeded generator."""
    examples = toy_examples() if examples is None else examples
    return [e for e in examples.values() if e.n_contexts == 1], torch.Generator().manual_seed(seed)


def lemma3_check(
    examples: Optional[Dict[str, Example]] = None,
    rs: Sequence[float] = (0.0, 0.25, 0.5, 0.75, 1.0),
    n: int = 20000,
    temperature: float = 1.0,
    seed: int = 0,
) -> List[dict]:
    r"""Lemma 3 by simulation: for each example and $r$, the empirical rejection rate of the mixture
    $\pi = (1-r)q + rp$ against $r D_{TV}(p, q)$. One row per (example, r) with `predicted`,
    `empirical`, `stderr` and `z` (see `binomial_z`)."""
    pairs, generator = _pairs_and_generator(examples, seed)
    rows = []
    for example in pairs:
        q, p = scaled(example.q, temperature), scaled(example.p, temperature)
        tv = float(laws.tv_distance(p, q))
        for r in rs:
            if not 0.0 <= r <= 1.0:
                raise ValueError(f"r={r}: a mixture weight lies in [0, 1].")
            pi = (1 - r) * q + r * p
            predicted = r * tv
            count = simulate_rejections(pi, q, n, generator)
            rate, stderr, z = binomial_z(count, n, predicted)
            rows.append(
                dict(
                    example=example.name,
                    r=r,
                    tv_distance=tv,
                    predicted=predicted,
                    empirical=rate,
                    stderr=stderr,
                    z=z,
                    n=n,
                )
            )
    return rows


def rule_rejection_check(
    examples: Optional[Dict[str, Example]] = None,
    lenience: float = 0.5,
    n: int = 20000,
    temperature: float = 1.0,
    seed: int = 1,
) -> List[dict]:
    r"""The same simulation for the targets that are not mixtures (lossy and the token rules): the
    empirical rate against $\rho(\pi, q) = \sum_v \max\{0, q(v) - \pi(v)\}$ at `alpha_at(rule, lenience)`."""
    pairs, generator = _pairs_and_generator(examples, seed)
    rows = []
    for example in pairs:
        for label, rule, beta in VARIANTS:
            if rule != "lossy" and rule not in rules.TOKEN_RULES:
                continue
            alpha = alpha_at(rule, lenience)
            q, _, pi = target_at(rule, example.q, example.p, alpha, temperature, beta)
            predicted = float(accept_reject.rejection_probability(pi, q))
            rate, stderr, z = binomial_z(simulate_rejections(pi, q, n, generator), n, predicted)
            rows.append(
                dict(
                    example=example.name,
                    rule=label,
                    alpha=alpha,
                    predicted=predicted,
                    empirical=rate,
                    stderr=stderr,
                    z=z,
                    n=n,
                )
            )
    return rows
