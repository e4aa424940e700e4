r"""A toy language whose ground truth $P$ is known exactly, with a drafter $q$ and a verifier $p$.

The lemmas of the paper are statements about expectations under the true distribution,
$\mathbb{E}_{x \sim P(\cdot \mid x_{<t})}[\ell(x, q_t)]$, which no real dataset provides. Here:

- $P$ is an order-2 Markov chain over a small vocabulary with an end token: the next token depends
  on the last two tokens (padded with `<bos>`), so every conditional $P(\cdot \mid x_{<t})$ is a table
  lookup, and sequences stop at `<eos>` or after `max_len` tokens.
- The *drafter* $q$ is the best bigram model of $P$ (it sees only the last token), plus noise: a
  smaller model with less context.
- The *verifier* $p$ sees both tokens and is close to $P$ - except in its *blind spots*: after a few
  identifiable tokens it confidently predicts the wrong continuation. There $P$ depends on the last
  token only, so the drafter is right and the verifier is wrong: the situation in which a cascade can
  beat the large model.
- `drafter_sharpness` / `verifier_sharpness` raise each model's probabilities to a power and
  renormalise: 1 keeps the model as built, > 1 makes it over-confident, < 1 under-confident.

Because the state is the last two tokens, the law of a cascade's generations is itself a Markov chain
and `ToyWorld.evaluate` computes its expected loss, deferral rate and rejection rate exactly by
dynamic programming over positions; `ToyWorld.simulate` estimates the same numbers by running the
accept/reject step of Algorithm 4, for checking.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np
import torch

from ..maths import lemmas, targets, verification
from ..maths import laws
from ..maths import accept_reject
from ..checks import check_gamma

__all__ = ["ToyWorld", "ToyLanguageModel", "ContextTable", "ToyMetrics", "BOS", "EOS", "ratio_of_means"]

BOS, EOS = 0, 1
_LOG_FLOOR = -1e4  # stands in for log(0) so logits stay finite; exp() of it is exactly 0


class ToyLanguageModel(torch.nn.Module):
    """A next-token model of the toy world with the causal-LM interface the engine uses.

    `forward(input_ids)` maps token ids of shape `(B, T)` (each row starting with `<bos>`) to
    next-token logits `(B, T, V)`: position `i` holds the logits of the token after `input_ids[:, :i+1]`.
    The model is stateless (its context is two tokens), so cropping a cache costs nothing.
    """

    def __init__(self, table: torch.Tensor, name: str):
        super().__init__()
        V = table.shape[-1]
        self.name = name
        self.vocab_size = V
        self.register_buffer("logit_table", table.clamp_min(1e-300).log().clamp_min(_LOG_FLOOR).float())

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        input_ids = torch.as_tensor(input_ids, dtype=torch.long)
        if input_ids.ndim == 1:
            input_ids = input_ids.unsqueeze(0)
        if input_ids.shape[-1] == 0:
            raise ValueError("input_ids is empty; start every prefix with the <bos> token (id 0).")
        if ((input_ids < 0) | (input_ids >= self.vocab_size)).any():
            raise ValueError(f"token ids must lie in [0, {self.vocab_size}).")
        previous = torch.cat([torch.full_like(input_ids[:, :1], BOS), input_ids[:, :-1]], dim=1)
        return self.logit_table[previous, input_ids]  # (B, T, V)

    def next_token_logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Logits of the token after each prefix: `(B, T)` ids in, `(B, V)` logits out."""
        return self.forward(input_ids)[:, -1]


@dataclass
class ContextTable:
    """Every context `(a, b)` the truth reaches, with its distributions (rows of shape `(C, V)`)."""

    contexts: List[tuple]
    weight: torch.Tensor  # (C,) expected visits per sequence under P
    P: torch.Tensor  # (C, V) ground truth
    q: torch.Tensor  # (C, V) drafter at the table's temperature
    p: torch.Tensor  # (C, V) verifier at the table's temperature
    q_unscaled: torch.Tensor  # (C, V) drafter at T = 1
    p_unscaled: torch.Tensor  # (C, V) verifier at T = 1
    blind: torch.Tensor  # (C,) bool: the verifier's blind spots


@dataclass
class ToyMetrics:
    """Per-token averages over generated sequences (ratios of expectations), plus their parts.

    `zero_one_loss` is the chance that an emitted token differs from an independent draw of the
    truth, $1 - \\sum_v P(v) \\ell(v)$ for emitted law $\\ell$; `log_loss` is the cross-entropy
    $-\\sum_v P(v)\\log \\ell(v)$ (infinite when $\\ell$ misses a true token, as at $T=0$);
    `deferral_rate` the average mass the target takes from the verifier; `rejection_rate` the chance a
    draft is rejected; both averaged over drafted positions (all but bonus tokens).
    """

    zero_one_loss: float
    log_loss: float
    deferral_rate: float
    rejection_rate: float
    mean_length: float
    tokens_per_verifier_call: float
    stderr: Dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


class ToyWorld:
    r"""Ground truth $P$, drafter $q$ and verifier $p$ over `n_words + 2` tokens (`<bos>`, `<eos>`, words).

    Parameters: `n_words` (the vocabulary is at most 64 tokens), `max_len` (tokens per sequence),
    `seed`, `drafter_noise` / `verifier_noise` (std of the log-probability noise of each model),
    `n_blind_spots` (tokens after which the verifier is wrong), `drafter_sharpness` /
    `verifier_sharpness` (miscalibration exponents, 1 = as built).
    """

    def __init__(
        self,
        n_words: int = 14,
        max_len: int = 12,
        seed: int = 0,
        *,
        drafter_noise: float = 0.3,
        verifier_noise: float = 0.15,
        n_blind_spots: int = 2,
        drafter_sharpness: float = 1.0,
        verifier_sharpness: float = 1.0,
    ):
        if not 2 <= n_words <= 62:
            raise ValueError(
                f"n_words={n_words}: the toy vocabulary holds 2 to 62 words (64 tokens with <bos>, <eos>)."
            )
        if max_len < 1:
            raise ValueError(f"max_len={max_len}: sequences need at least one token.")
        if not 0 <= n_blind_spots < n_words:
            raise ValueError(f"n_blind_spots={n_blind_spots} must lie in [0, n_words).")
        for name, value in (("drafter_noise", drafter_noise), ("verifier_noise", verifier_noise)):
            if value < 0:
                raise ValueError(f"{name}={value} must be >= 0 (it is a standard deviation).")
        for name, value in (
            ("drafter_sharpness", drafter_sharpness),
            ("verifier_sharpness", verifier_sharpness),
        ):
            if not value > 0:
                raise ValueError(f"{name}={value} must be > 0 (1 = calibrated as built).")
        self.n_words, self.max_len, self.seed = n_words, max_len, seed
        self.settings = dict(
            n_words=n_words,
            max_len=max_len,
            seed=seed,
            drafter_noise=drafter_noise,
            verifier_noise=verifier_noise,
            n_blind_spots=n_blind_spots,
            drafter_sharpness=drafter_sharpness,
            verifier_sharpness=verifier_sharpness,
        )
        self.vocab_size = n_words + 2
        self.tokens = ["<bos>", "<eos>"] + [_word_name(i) for i in range(n_words)]
        rng = np.random.default_rng(seed)
        self.blind_spot_tokens = sorted(int(t) for t in 2 + rng.permutation(n_words)[:n_blind_spots])

        self.P = self._build_truth(rng)  # (V, V, V): P[a, b] = P(. | a, b)
        self.occupancy_truth = self._occupancy(self.P)  # (V, V) expected visits under P
        q_base = self._bigram_projection()
        p_base = self._blind_verifier()
        self.q = _perturb(q_base, drafter_noise, drafter_sharpness, rng)
        self.p = _perturb(p_base, verifier_noise, verifier_sharpness, rng)
        self.truth = ToyLanguageModel(self.P, "truth")
        self.drafter = ToyLanguageModel(self.q, "drafter")
        self.verifier = ToyLanguageModel(self.p, "verifier")

    # ---- construction -------------------------------------------------------------------

    def _build_truth(self, rng: np.random.Generator) -> torch.Tensor:
        V, n = self.vocab_size, self.n_words
        P = torch.zeros(V, V, V, dtype=torch.float64)
        # Peaked and flat contexts side by side: Dirichlet concentrations over two orders of magnitude.
        concentration = 10 ** (-1.3 + 1.3 * rng.random((V, V)))
        concentration[BOS, BOS] = 1.0  # varied first words
        gamma_draws = torch.from_numpy(rng.gamma(np.broadcast_to(concentration[..., None], (V, V, n))))
        word_probs = gamma_draws / gamma_draws.sum(-1, keepdim=True)
        stop = torch.from_numpy(0.04 + 0.2 * rng.random((V, V)))
        P[:, :, 2:] = (1 - stop).unsqueeze(-1) * word_probs
        P[:, :, EOS] = stop
        for b in self.blind_spot_tokens:  # after a blind-spot token, the last token alone decides
            P[:, b] = P[BOS, b]
        P[BOS, BOS, 2:] = word_probs[BOS, BOS]  # no empty sequences
        P[BOS, BOS, EOS] = 0.0
        return P

    def _occupancy(self, law: torch.Tensor) -> torch.Tensor:
        """Expected number of visits of each context `(a, b)` per sequence when tokens follow `law`."""
        V = self.vocab_size
        mass = torch.zeros(V, V, dtype=torch.float64)
        mass[BOS, BOS] = 1.0
        total = torch.zeros_like(mass)
        for _ in range(self.max_len):
            total += mass
            mass = _advance(mass, law)
        return total

    def _bigram_projection(self) -> torch.Tensor:
        """The best model that sees only the last token: P averaged over the token before it."""
        w = self.occupancy_truth + 1e-12  # (V, V) visits of (a, b)
        q_b = (w.unsqueeze(-1) * self.P).sum(0) / w.sum(0).unsqueeze(-1)  # (V, V): q[b, :]
        return q_b.unsqueeze(0).expand_as(self.P).clone()

    def _blind_verifier(self) -> torch.Tensor:
        """The truth, except after a blind-spot token: there it puts 60% of its mass on one wrong word.

        The rest of its mass stays proportional to P, so its log loss there stays finite (within
        log(1/0.4) nats of the truth's) while its argmax is always wrong.
        """
        p = self.P.clone()
        for b in self.blind_spot_tokens:
            words = self.P[:, b, 2:]  # (V, n_words)
            wrong = 2 + (words.argmax(-1) + self.n_words // 2) % self.n_words
            p[:, b] = 0.4 * self.P[:, b]
            p[torch.arange(self.vocab_size), b, wrong] += 0.6
        return p

    # ---- tables -------------------------------------------------------------------------

    def context(self, prefix: Sequence[int]) -> tuple:
        """The state `(a, b)` (last two tokens, `<bos>`-padded) after the generated tokens `prefix`."""
        padded = [BOS, BOS] + [int(t) for t in prefix]
        return padded[-2], padded[-1]

    def in_blind_spot(self, prefix: Sequence[int]) -> bool:
        """True where the verifier is wrong and the drafter right: after a blind-spot token."""
        return self.context(prefix)[1] in self.blind_spot_tokens

    def contexts(self, temperature: float = 1.0) -> ContextTable:
        """All reachable contexts with their truth, drafter and verifier rows (see `ContextTable`)."""
        idx = (self.occupancy_truth > 0).nonzero().tolist()
        a, b = torch.tensor(idx).T
        q_u, p_u = self.q[a, b], self.p[a, b]
        return ContextTable(
            contexts=[(i, j) for i, j in idx],
            weight=self.occupancy_truth[a, b],
            P=self.P[a, b],
            q=_scale(q_u, temperature),
            p=_scale(p_u, temperature),
            q_unscaled=q_u,
            p_unscaled=p_u,
            blind=torch.tensor([j in self.blind_spot_tokens for _, j in idx]),
        )

    def model_losses(self, where: str = "all") -> dict:
        """Exact expected per-token losses of each model under P (teacher forcing).

        0-1 loss is $1(x \\ne \\arg\\max)$, as in Lemma 1; log loss is $-\\log q(x)$. `where` is `"all"`,
        `"blind"` (the verifier's blind spots) or `"elsewhere"`.
        """
        if where not in ("all", "blind", "elsewhere"):
            raise ValueError(f"where={where!r}: use 'all', 'blind' or 'elsewhere'.")
        t = self.contexts()
        keep = {"all": torch.ones_like(t.blind), "blind": t.blind, "elsewhere": ~t.blind}[where]
        w = t.weight * keep
        return {
            name: {loss: lemmas.total_risk(w, lemmas.expected_loss(t.P, m, loss)) for loss in lemmas.LOSSES}
            for name, m in (("drafter", t.q), ("verifier", t.p), ("truth", t.P))
        }

    def _rule_tables(self, rule, alpha, beta, temperature):
        """Per-context rows of the rule: target, emitted law, rejection and deferral (over all V*V
        contexts)."""
        V = self.vocab_size
        q_u, p_u = self.q.reshape(V * V, V), self.p.reshape(V * V, V)
        qT, pT = _scale(q_u, temperature), _scale(p_u, temperature)
        pi = targets.target_distribution(rule, qT, pT, alpha, q_unscaled=q_u, p_unscaled=p_u, beta=beta)
        rejection = accept_reject.rejection_probability(pi, qT)
        return dict(
            qT=qT,
            pT=pT,
            pi=pi,
            rejection=rejection,
            accepted=torch.minimum(qT, pi),  # draft kept
            replaced=rejection.unsqueeze(-1) * accept_reject.residual_distribution(pi, qT),  # draft replaced
            deferral=targets.deferral_weight(rule, qT, pT, alpha, q_unscaled=q_u, p_unscaled=p_u),
        )

    # ---- exact expectations -------------------------------------------------------------

    def evaluate(
        self,
        rule: str,
        alpha: float = 0.0,
        *,
        beta=1.0,
        temperature: float = 1.0,
        gamma: Optional[int] = None,
        prefixes: str = "generated",
    ) -> ToyMetrics:
        r"""Exact per-token metrics of `rule` (see `ToyMetrics`).

        `prefixes="generated"` (default) scores the rule on its own output: `gamma=None` gives the
        law of autoregressive sampling from the emitted law of $\pi$ at every position, and an integer
        `gamma` follows Algorithm 4 block by block (after `gamma` accepted drafts the bonus token comes
        from $p$, a rejection ends the block, every block costs one verifier call).
        `prefixes="truth"` scores it on prefixes written by $P$ (teacher forcing), the expectation
        $\mathbb{E}_{x_{<t}}$ of the lemmas; each position's loss is still that of the rule's law.
        """
        _check_block_options(gamma, prefixes)
        V = self.vocab_size
        tab = self._rule_tables(rule, alpha, beta, temperature)
        P = self.P.reshape(V * V, V)
        n_states = 1 if gamma is None else gamma + 1
        draft_law = tab["accepted"] + tab["replaced"]
        zero_one = {"draft": 1 - (P * draft_law).sum(-1), "bonus": 1 - (P * tab["pT"]).sum(-1)}
        log_loss = {"draft": _cross_entropy(P, draft_law), "bonus": _cross_entropy(P, tab["pT"])}
        mass = torch.zeros(n_states, V * V, dtype=torch.float64)  # (j, context)
        mass[0, BOS * V + BOS] = 1.0
        sums = dict(zero_one=0.0, log=0.0, deferral=0.0, rejection=0.0, length=0.0, drafts=0.0, calls=0.0)
        for _ in range(self.max_len):
            drafting = mass[:gamma].sum(0) if gamma is not None else mass[0]
            bonus = mass[gamma] if gamma is not None else torch.zeros_like(drafting)
            sums["zero_one"] += float(drafting @ zero_one["draft"] + bonus @ zero_one["bonus"])
            sums["log"] += _dot_inf(drafting, log_loss["draft"]) + _dot_inf(bonus, log_loss["bonus"])
            sums["deferral"] += float(drafting @ tab["deferral"])
            sums["rejection"] += float(drafting @ tab["rejection"])
            sums["drafts"] += float(drafting.sum())
            sums["length"] += float(mass.sum())
            sums["calls"] += float(mass[0].sum())
            new = torch.zeros_like(mass)
            if prefixes == "truth":
                new[0] = _advance_flat(mass[0], P, V)
            elif gamma is None:
                new[0] = _advance_flat(mass[0], draft_law, V)
            else:
                for j in range(gamma):
                    new[j + 1] += _advance_flat(mass[j], tab["accepted"], V)
                    new[0] += _advance_flat(mass[j], tab["replaced"], V)
                new[0] += _advance_flat(mass[gamma], tab["pT"], V)
            mass = new
        L, D = sums["length"], max(sums["drafts"], 1e-300)
        return ToyMetrics(
            zero_one_loss=sums["zero_one"] / L,
            log_loss=sums["log"] / L,
            deferral_rate=sums["deferral"] / D,
            rejection_rate=sums["rejection"] / D,
            mean_length=L,
            tokens_per_verifier_call=(L / sums["calls"]) if gamma is not None else math.nan,
        )

    # ---- Monte Carlo --------------------------------------------------------------------

    def sample(self, n: int, seed: int = 0, model: str = "truth") -> List[List[int]]:
        """`n` sequences (token ids without `<bos>`, ending in `<eos>` unless cut at `max_len`)."""
        table = {"truth": self.P, "drafter": self.q, "verifier": self.p}[model]
        g = torch.Generator().manual_seed(seed)
        a, b = torch.full((n,), BOS), torch.full((n,), BOS)
        alive = torch.ones(n, dtype=torch.bool)
        out = [[] for _ in range(n)]
        for _ in range(self.max_len):
            x = torch.multinomial(table[a, b], 1, generator=g).squeeze(-1)
            for i in alive.nonzero().flatten().tolist():
                out[i].append(int(x[i]))
            alive &= x != EOS
            a, b = b, x
            if not alive.any():
                break
        return out

    def simulate(
        self,
        rule: str,
        alpha: float = 0.0,
        *,
        n: int = 20000,
        beta=1.0,
        temperature: float = 1.0,
        gamma: Optional[int] = None,
        prefixes: str = "generated",
        seed: int = 0,
    ) -> ToyMetrics:
        """Monte Carlo estimate of `evaluate`'s numbers by running Algorithm 4's accept/reject step.

        Each drafted position draws $x \\sim q$ and passes it through `verification.verify_draft`; with an
        integer `gamma`, the token after `gamma` accepted drafts is a bonus token from $p$. With
        `prefixes="truth"` the sequence continues with a fresh draw from $P$ instead of the emitted
        token. `stderr` holds delta-method standard errors of the ratios.
        """
        _check_block_options(gamma, prefixes)
        V = self.vocab_size
        tab = self._rule_tables(rule, alpha, beta, temperature)
        P = self.P.reshape(V * V, V)
        draft_law = tab["accepted"] + tab["replaced"]
        g = torch.Generator().manual_seed(seed)
        ctx = torch.full((n,), BOS * V + BOS)
        j = torch.zeros(n, dtype=torch.long)
        alive = torch.ones(n, dtype=torch.bool)
        per_seq = {
            k: torch.zeros(n, dtype=torch.float64)
            for k in ("zero_one", "log", "deferral", "rejection", "length", "drafts", "calls")
        }
        for _ in range(self.max_len):
            is_bonus = (j == gamma) if gamma is not None else torch.zeros(n, dtype=torch.bool)
            drafting = alive & ~is_bonus
            draft = accept_reject.sample(tab["qT"][ctx], g)
            verified, accepted = verification.verify_draft(tab["pi"][ctx], tab["qT"][ctx], draft, g)
            x = torch.where(is_bonus, accept_reject.sample(tab["pT"][ctx], g), verified)
            law = torch.where(is_bonus.unsqueeze(-1), tab["pT"][ctx], draft_law[ctx])
            f = alive.double()
            per_seq["zero_one"] += f * (1 - P[ctx].gather(-1, x.unsqueeze(-1)).squeeze(-1))
            per_seq["log"] += torch.where(
                alive, _cross_entropy(P[ctx], law), torch.zeros(n, dtype=torch.float64)
            )
            per_seq["deferral"] += drafting.double() * tab["deferral"][ctx]
            per_seq["rejection"] += (drafting & ~accepted).double()
            per_seq["drafts"] += drafting.double()
            per_seq["length"] += f
            per_seq["calls"] += (alive & (j == 0)).double()
            if gamma is not None:
                j = torch.where(is_bonus | ~accepted, torch.zeros_like(j), j + 1)
            if prefixes == "truth":
                x = accept_reject.sample(P[ctx], g)
            ctx = (ctx % V) * V + x
            alive &= x != EOS
        est, se = {}, {}
        for key, den in (
            ("zero_one", "length"),
            ("log", "length"),
            ("deferral", "drafts"),
            ("rejection", "drafts"),
        ):
            est[key], se[key] = ratio_of_means(per_seq[key], per_seq[den])
        est["length"], se["length"] = (
            float(per_seq["length"].mean()),
            float(per_seq["length"].std() / math.sqrt(n)),
        )
        calls = (
            ratio_of_means(per_seq["length"], per_seq["calls"]) if gamma is not None else (math.nan, math.nan)
        )
        return ToyMetrics(
            zero_one_loss=est["zero_one"],
            log_loss=est["log"],
            deferral_rate=est["deferral"],
            rejection_rate=est["rejection"],
            mean_length=est["length"],
            tokens_per_verifier_call=calls[0],
            stderr={
                "zero_one_loss": se["zero_one"],
                "log_loss": se["log"],
                "deferral_rate": se["deferral"],
                "rejection_rate": se["rejection"],
                "mean_length": se["length"],
                "tokens_per_verifier_call": calls[1],
            },
        )

    def decode(self, tokens: Sequence[int]) -> str:
        return " ".join(self.tokens[int(t)] for t in tokens)


# ---- helpers ------------------------------------------------------------------------------


def _check_block_options(gamma: Optional[int], prefixes: str) -> None:
    if prefixes not in ("generated", "truth"):
        raise ValueError(
            f"prefixes={prefixes!r}: use 'generated' (the rule's own output) or 'truth' "
            "(prefixes written by P, as in the lemmas)."
        )
    if gamma is not None:
        check_gamma(gamma)
    if gamma is not None and prefixes == "truth":
        raise ValueError(
            "blocks of gamma drafts only exist when the rule writes its own prefixes; "
            "use gamma=None with prefixes='truth'."
        )


_SYLLABLES = ["ka", "lo", "mi", "ne", "su", "ta", "vo", "ri", "pe", "du", "zo", "fa", "gu", "hi"]


def _word_name(i: int) -> str:
    first = i // len(_SYLLABLES)
    return _SYLLABLES[i % len(_SYLLABLES)] + (_SYLLABLES[first % len(_SYLLABLES)] if first else "")


def _perturb(base: torch.Tensor, noise: float, sharpness: float, rng: np.random.Generator) -> torch.Tensor:
    """Noise on the log-probabilities of the tokens the base can emit, then a power (miscalibration)."""
    logits = base.clamp_min(1e-300).log() + noise * torch.from_numpy(rng.standard_normal(tuple(base.shape)))
    logits = torch.where(base > 0, sharpness * logits, torch.full_like(logits, -math.inf))
    return torch.softmax(logits, -1)


def _scale(probs: torch.Tensor, temperature: float) -> torch.Tensor:
    return laws.probabilities(probs.clamp_min(1e-300).log().clamp_min(_LOG_FLOOR), temperature).to(
        probs.dtype
    )


def _advance(mass: torch.Tensor, law: torch.Tensor) -> torch.Tensor:
    """One token: mass over contexts `(a, b)` times `law[a, b, c]` gives mass over `(b, c)`; `<eos>` ends."""
    flow = mass.unsqueeze(-1) * law  # (a, b, c)
    new = flow.sum(0)  # (b, c)
    new[:, EOS] = 0.0
    return new


def _advance_flat(mass: torch.Tensor, law: torch.Tensor, V: int) -> torch.Tensor:
    return _advance(mass.reshape(V, V), law.reshape(V, V, V)).reshape(V * V)


def _cross_entropy(P: torch.Tensor, law: torch.Tensor) -> torch.Tensor:
    """$-\\sum_v P(v) \\log \\ell(v)$ per row; infinite where the law misses a true token."""
    logs = torch.where(P > 0, law.clamp_min(0).log(), torch.zeros_like(law))
    return -(P * logs).nan_to_num(nan=0.0, neginf=-math.inf).sum(-1)


def _dot_inf(mass: torch.Tensor, values: torch.Tensor) -> float:
    """`mass @ values`, treating 0 * inf as 0 (unreached contexts do not count)."""
    used = mass > 0
    return float((mass[used] * values[used]).sum()) if used.any() else 0.0


def ratio_of_means(num: torch.Tensor, den: torch.Tensor):
    r"""`(estimate, stderr)` of a per-token rate from per-sequence sums: $\hat r = \bar N / \bar D$ and its
    delta-method standard error $\mathrm{sd}(N_i - \hat r D_i) / (\bar D \sqrt{n})$ (NaN if $\bar D = 0$)."""
    n = num.numel()
    mean_den = den.mean()
    if mean_den == 0:
        return math.nan, math.nan
    r = num.mean() / mean_den
    resid = num - r * den
    return float(r), float(resid.std() / (mean_den * math.sqrt(n)))
