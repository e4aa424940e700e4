r"""One execution engine for every inference method of the paper, on real or toy model pairs.

Speculative execution (Algorithm 4, GenSpecSample) with a target $\pi = \mathbb{T}(q, p)$:

1. draft $x_t, \dots, x_{t+\gamma-1}$ autoregressively from the drafter, $x_{t+j} \sim q_{t+j}$;
2. score all of them with **one** call of the verifier, which gives $p_{t}, \dots, p_{t+\gamma}$;
3. accept $x_{t+j}$ with probability $\min\{1, \pi_{t+j}(x_{t+j}) / q_{t+j}(x_{t+j})\}$ and stop at the
   first rejection $j^*$;
4. replace $x_{t+j^*}$ by a sample of $\mathrm{norm}(\max\{0, \pi_{t+j^*} - q_{t+j^*}\})$, or, when
   all $\gamma$ drafts were accepted, sample a bonus token from $p_{t+\gamma}$;
5. crop both KV caches back to the accepted prefix and repeat.

Each emitted token then follows $\pi$ (Lemma 2 of Leviathan et al.; Algorithm 5 of the paper for the
deferral rules), and a call of the verifier yields between 1 and $\gamma + 1$ tokens. With
$\pi = p$ (`rule="spec"`) the output follows the verifier exactly: at $T = 0$ it is the verifier's
greedy output, token for token.

Beside it, the baselines the paper compares with: plain decoding with either model, the sequential
token cascade (Algorithm 2), the oracle cascade (Algorithm 3), the sequence-level cascade
(equation 1) and the original Big-Little Decoder (BiLD).

Steps 3 and 4 are `verification.verify_block`, the one implementation of Algorithm 4's
verification that `generate_batch` calls too; the options are checked by
`options.check_generate_options` for both.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, List, Optional, Sequence, Union

import torch

from ..maths import targets
from ..checks import check_seed
from . import calibration
from .calibration import Calibration
from .gamma_policy import AutoGamma, auto_policy
from ..models.adapter import check_compatible, load_model
from .options import BONUS_OPTIONS, METHODS, SEQ_AGGREGATES, check_generate_options, stop_tokens
from ..maths.verification import block_targets, temperature_laws, verify_block

__all__ = ["METHODS", "SEQ_AGGREGATES", "BONUS_OPTIONS", "Generation", "TraceStep", "generate", "generate_many", "calibrate"]

_NAN = float("nan")


@dataclass
class TraceStep:
    r"""One emitted token and how it came about.

    `source` is `"draft"` (an accepted draft), `"residual"` (resampled after a rejection), `"bonus"`
    (after a fully accepted block), `"drafter"` / `"verifier"` (sampled from that model directly).
    `q`, `p`, `pi` are the (temperature-scaled) probabilities of the token under each law (NaN when
    that law was not computed); `deferral` is the weight the target put on `p` at this position
    (the decision $\delta$ for prefix rules, $1 - q(A)$ for token rules; NaN where undefined).
    """
    token: int
    source: str
    accepted: Optional[bool] = None
    q: float = _NAN
    p: float = _NAN
    pi: float = _NAN
    deferral: float = _NAN


@dataclass
class Generation:
    """The output of `generate`, with the counters that price it."""
    tokens: List[int]
    text: str
    prompt_tokens: List[int]
    method: str
    rule: Optional[str]
    alpha: float
    gamma: int                  # "auto" for gamma="auto" (the chosen sizes are in `gammas`)
    temperature: float
    n_verifier_calls: int = 0
    n_drafter_calls: int = 0
    n_drafted: int = 0          # every drafted token, including those discarded after a rejection
    n_accepted: int = 0         # drafts the verifier accepted
    n_rejected: int = 0         # drafts the verifier rejected (at most one per call)
    wall_time_s: float = 0.0
    drafter_time_s: float = 0.0
    verifier_time_s: float = 0.0
    stopped_at_eos: bool = False
    #: `method="bild"`'s rollback threshold on -log p(draft) (its `alpha` is then NaN); None otherwise.
    bild_threshold: Optional[float] = None
    #: gamma="auto": the block size chosen before each block, in order (0: one plain verifier step).
    gammas: List[int] = field(default_factory=list)
    #: gamma="auto": what the policy knew at the end, per block size (`AutoGamma.cost_table`: the calibration's
    #: block seconds, the blocks it timed while decoding, their mean, its estimate) and its acceptance estimate.
    auto_costs: List[dict] = field(default_factory=list)
    auto_acceptance: Optional[float] = None
    #: What prices the run (`tutorial_lib.stats.pricing`): per model, `<model>_calls_by_k[k - 1]` decoder calls
    #: that fed k tokens (its prefill excepted), `<model>_prefills` passes over a decoder-only model's
    #: prompt, `<model>_encoder_passes` encoder passes of an encoder-decoder. None: not counted.
    drafter_calls_by_k: Optional[List[int]] = None
    verifier_calls_by_k: Optional[List[int]] = None
    drafter_prefills: int = 0
    verifier_prefills: int = 0
    drafter_encoder_passes: int = 0
    verifier_encoder_passes: int = 0
    trace: List[TraceStep] = field(default_factory=list, repr=False)
    #: Per model, every `(position, token)` its forward passes received, in order (cache discipline).
    feed_log: dict = field(default_factory=dict, repr=False)

    def call_counts(self) -> dict:
        """The counters that price the run (`tutorial_lib.stats.pricing`), as a row stores them."""
        return {f"{m}_{c}": getattr(self, f"{m}_{c}") for m in ("drafter", "verifier")
                for c in ("calls_by_k", "prefills", "encoder_passes")}

    @property
    def rejection_rate(self) -> float:
        """Rejected drafts / drafts judged (drafts after a rejection are discarded, never judged)."""
        judged = self.n_accepted + self.n_rejected
        return self.n_rejected / judged if judged else 0.0

    @property
    def deferral_rate(self) -> float:
        """Mean weight the target put on the verifier, over the positions where it is defined."""
        values = [s.deferral for s in self.trace if not math.isnan(s.deferral)]
        return sum(values) / len(values) if values else _NAN

    @property
    def mean_accepted_per_call(self) -> float:
        """Tokens emitted per verifier call (Spec-Bench's 'mean accepted tokens'); inf without calls."""
        return len(self.tokens) / self.n_verifier_calls if self.n_verifier_calls else math.inf

    def summary(self) -> dict:
        return {"method": self.method, "rule": self.rule, "alpha": self.alpha,
                "bild_threshold": self.bild_threshold, "gamma": self.gamma,
                "temperature": self.temperature, "n_tokens": len(self.tokens),
                "n_verifier_calls": self.n_verifier_calls, "n_drafter_calls": self.n_drafter_calls,
                "n_drafted": self.n_drafted, "n_accepted": self.n_accepted, "n_rejected": self.n_rejected,
                "rejection_rate": self.rejection_rate, "deferral_rate": self.deferral_rate,
                "mean_accepted_per_call": self.mean_accepted_per_call, "wall_time_s": self.wall_time_s,
                "drafter_time_s": self.drafter_time_s, "verifier_time_s": self.verifier_time_s}


class _Run:
    """The state of one `generate` call: both sessions, the sequence so far and the counters."""

    def __init__(self, drafter, verifier, prompt_ids, *, temperature, max_new_tokens, seed, eos,
                 on_token=None):
        self.drafter, self.verifier = drafter, verifier
        self.on_token = on_token
        self.prompt_ids = prompt_ids
        self.seq = verifier.decoder_prefix(prompt_ids)   # decoder tokens: prefix, then the output
        self.n_prefix = len(self.seq)
        self.temperature = temperature
        self.max_new_tokens = max_new_tokens
        self.generator = torch.Generator().manual_seed(seed)
        self.eos = eos
        self.trace: List[TraceStep] = []
        self.done = False
        self.stopped_at_eos = False
        self._sessions = {}
        self.counts = dict(n_drafted=0, n_accepted=0, n_rejected=0)
        # per model: calls by tokens fed (index k - 1), prefills, encoder passes (what `pricing` prices)
        self.calls = {which: dict(calls_by_k=[], prefills=0, encoder_passes=0) for which in ("drafter", "verifier")}

    def session(self, which: str):
        if which not in self._sessions:  # started lazily: plain verifier decoding never encodes for q
            model = self.drafter if which == "drafter" else self.verifier
            self._sessions[which] = model.start(self.prompt_ids)
            self.calls[which]["encoder_passes"] += int(model.is_encoder_decoder)
        return self._sessions[which]

    def feed(self, which: str, tokens: Sequence[int], keep: Optional[int] = None) -> torch.Tensor:
        """`Session.feed` of one model, counted: a decoder-only model's first call reads the prompt
        (a prefill); every other call is counted by the number k of tokens it fed."""
        session, counts = self.session(which), self.calls[which]
        # an encoder-decoder reads the prompt with its encoder: its decoder has no prefill
        is_prefill = session.length == 0 and not session.model.is_encoder_decoder
        logits = session.feed(tokens, keep=keep)
        if is_prefill:
            counts["prefills"] += 1
        else:
            by_k, k = counts["calls_by_k"], len(tokens)
            by_k.extend([0] * (k - len(by_k)))
            by_k[k - 1] += 1
        return logits

    @property
    def remaining(self) -> int:
        return self.max_new_tokens - (len(self.seq) - self.n_prefix)

    def laws(self, logits: torch.Tensor):
        """(scaled, unscaled) probabilities: sampling uses T, decisions use T = 1 (`temperature_laws`)."""
        return temperature_laws(logits, self.temperature)

    def score(self, which: str, drafts: Sequence[int] = ()) -> torch.Tensor:
        """One call of a model on what it has not seen yet plus `drafts`: logits `(len(drafts)+1, V)`.

        Row `j` is the next-token law after the sequence and `drafts[:j]`. Tokens already in the
        model's cache are never fed again.
        """
        session, drafts = self.session(which), list(drafts)
        backlog = self.seq[session.length:]
        if backlog:
            return self.feed(which, backlog + drafts, keep=len(drafts) + 1)
        last = session.last_logits()  # it has seen everything, e.g. after a rollback to the same token
        if last is None:
            session.crop(session.length - 1)
            return self.feed(which, self.seq[session.length:] + drafts, keep=len(drafts) + 1)
        if not drafts:
            return last.unsqueeze(0)
        return torch.cat([last.unsqueeze(0), self.feed(which, drafts)])

    def next_logits(self, which: str) -> torch.Tensor:
        """Catch one model up with the sequence: its next-token logits `(V,)`."""
        return self.score(which)[-1]

    def sample(self, probs: torch.Tensor) -> int:
        return int(targets.sample(probs, self.generator))

    def emit(self, step: TraceStep) -> None:
        self.seq.append(step.token)
        self.trace.append(step)
        if self.on_token is not None:
            self.on_token(step.token)
        if step.token in self.eos:
            self.done, self.stopped_at_eos = True, True
        elif self.remaining <= 0:
            self.done = True

    def sync(self) -> None:
        """Crop every cache back to the longest prefix that agrees with the sequence."""
        for session in self._sessions.values():
            cached = session.tokens
            agree = next((i for i, (a, b) in enumerate(zip(cached, self.seq)) if a != b),
                         min(len(cached), len(self.seq)))
            session.crop(agree)


# ---- the methods ----------------------------------------------------------------------------

def _plain(run: _Run, which: str, log_unscaled: Optional[list] = None) -> None:
    while not run.done:
        _plain_step(run, which, log_unscaled)


def _plain_step(run: _Run, which: str, log_unscaled: Optional[list] = None) -> None:
    law, unscaled = run.laws(run.next_logits(which))
    x = run.sample(law)
    prob = float(law[x])
    if log_unscaled is not None:
        log_unscaled.append(math.log(max(float(unscaled[x]), 1e-300)))
    step = TraceStep(x, which, q=prob if which == "drafter" else _NAN,
                     p=prob if which == "verifier" else _NAN, pi=prob,
                     deferral=1.0 if which == "verifier" else 0.0)
    run.emit(step)


def _speculative(run: _Run, o, beta, policy=None) -> None:
    """Blocks of `o.gamma` drafts, or (gamma="auto") of the size `policy` picks before each block.

    The size depends only on what was emitted before the block, so each block keeps Algorithm 4's law;
    gamma = 0 is one plain verifier step (the policy offers it only for rule="spec", where pi = p).
    """
    while not run.done:
        if policy is None:
            _speculative_block(run, o.rule, o.alpha, beta, o.gamma, o.bonus)
            continue
        gamma = policy.next_gamma(run.remaining)
        accepted, rejected = run.counts["n_accepted"], run.counts["n_rejected"]
        prefills = run.calls["drafter"]["prefills"] + run.calls["verifier"]["prefills"]
        tic = time.perf_counter()
        if gamma == 0:
            _plain_step(run, "verifier")
        else:
            _speculative_block(run, o.rule, o.alpha, beta, gamma, o.bonus)
        seconds = time.perf_counter() - tic
        if run.calls["drafter"]["prefills"] + run.calls["verifier"]["prefills"] != prefills:
            seconds = None         # a prompt's prefill is not a block's cost
        kept = run.counts["n_accepted"] - accepted
        policy.observe(kept, kept + run.counts["n_rejected"] - rejected, gamma=gamma, seconds=seconds)


def _speculative_block(run: _Run, rule: str, alpha: float, beta, gamma: int, bonus: str) -> None:
    """One block of Algorithm 4, steps 1-5 of the module docstring: draft, one verifier call, verify,
    residual or bonus, crop."""
    n = min(gamma, run.remaining)
    drafts, q_rows, qu_rows = [], [], []
    # 1. Draft x_t, ..., x_{t+n-1} from the drafter, one step each: x_{t+j} ~ q_{t+j}.
    logits = run.next_logits("drafter")
    for j in range(n):
        if j:
            logits = run.feed("drafter", [drafts[-1]])[-1]
        q_j, qu_j = run.laws(logits)
        drafts.append(run.sample(q_j))
        q_rows.append(q_j)
        qu_rows.append(qu_j)
    q, q_unscaled = torch.stack(q_rows), torch.stack(qu_rows)              # (n, V)
    # 2. One call of p. It scores every draft and, for a bonus token, the position after the last one
    # ((n+1, V)); without a bonus that last row is never used, so the last draft is not fed at all
    # ((n, V)): at gamma = 1 each model is then fed just the last emitted token, one per call.
    scored = drafts if bonus != "none" else drafts[:-1]
    p_all, pu_all = run.laws(run.score("verifier", scored))
    p, p_unscaled = p_all[:n], pu_all[:n]
    # The rule's target at every drafted position: pi = T(q, p) (Table 1).
    pi, weight = block_targets(rule, q, p, alpha, q_unscaled=q_unscaled, p_unscaled=p_unscaled, beta=beta)
    bonus_laws, after = None, {}
    if bonus != "none" and n < run.remaining:   # bonus="none": the next block starts with a new draft
        bonus_laws = (p_all[n:] if bonus == "verifier" else
                      lambda rows: _target_bonus(run, rule, alpha, beta, drafts, p_all[n], pu_all[n], after))
    # 3. Verify: keep x_{t+j} with probability min{1, pi(x)/q(x)}, stop at the first rejection j*; the
    #    same call draws step 4's token (residual norm(max{0, pi - q}) at j*, or the bonus after a full block).
    verdict = verify_block(pi.unsqueeze(0), q.unsqueeze(0), torch.tensor([drafts]), run.generator,
                           bonus=bonus_laws, stop_tokens=run.eos)
    n_accepted, extra = int(verdict.n_accepted[0]), int(verdict.extra[0])
    run.counts["n_drafted"] += n
    run.counts["n_accepted"] += n_accepted
    for j, x in enumerate(drafts[:n_accepted]):
        run.emit(TraceStep(x, "draft", True, q=float(q[j, x]), p=float(p[j, x]), pi=float(pi[j, x]),
                           deferral=float(weight[j])))
    # 4. The token after the accepted drafts: the residual's draw at a rejection, else the bonus token.
    if bool(verdict.rejected[0]):
        run.counts["n_rejected"] += 1
        j, y = n_accepted, extra
        run.emit(TraceStep(y, "residual", False, q=float(q[j, y]), p=float(p[j, y]), pi=float(pi[j, y]),
                           deferral=float(weight[j])))
    elif extra >= 0:
        p_n = p_all[n]
        if bonus == "verifier":  # the paper's Algorithm 4: after a full block, p_{t+gamma} is free
            run.emit(TraceStep(extra, "bonus", p=float(p_n[extra]), pi=float(p_n[extra])))
        else:
            run.emit(TraceStep(extra, "bonus", q=float(after["q"][extra]), p=float(p_n[extra]),
                               pi=float(after["pi"][extra])))
    # 5. Crop both KV caches back to the emitted prefix (the rejected drafts leave them).
    run.sync()


def _target_bonus(run: _Run, rule, alpha, beta, drafts, p_n, pu_n, after: dict) -> torch.Tensor:
    """bonus="target": one more drafter step gives q_{t+gamma}, so the bonus follows pi as well."""
    q_n, qu_n = run.laws(run.feed("drafter", [drafts[-1]], keep=1)[-1])
    pi_n = targets.target_distribution(rule, q_n, p_n, alpha, q_unscaled=qu_n, p_unscaled=pu_n, beta=beta)
    after.update(q=q_n, pi=pi_n)
    return targets.output_distribution(pi_n, q_n).unsqueeze(0)                  # (1, V)


def _token_cascade(run: _Run, alpha: float) -> None:
    while not run.done:
        q, q_unscaled = run.laws(run.next_logits("drafter"))
        defer = bool(targets.deferral_decision("chow", q, q, alpha, q_unscaled=q_unscaled))
        if defer:  # one call of p for this single position (Algorithm 2)
            p, _ = run.laws(run.next_logits("verifier"))
            x = run.sample(p)
            run.emit(TraceStep(x, "verifier", q=float(q[x]), p=float(p[x]), pi=float(p[x]), deferral=1.0))
        else:
            x = run.sample(q)
            run.emit(TraceStep(x, "drafter", q=float(q[x]), pi=float(q[x]), deferral=0.0))


def _oracle(run: _Run, rule: str, alpha: float) -> None:
    while not run.done:
        q, q_unscaled = run.laws(run.next_logits("drafter"))
        p, p_unscaled = run.laws(run.next_logits("verifier"))
        defer = bool(targets.deferral_decision(rule, q, p, alpha, q_unscaled=q_unscaled, p_unscaled=p_unscaled))
        law = p if defer else q
        x = run.sample(law)
        run.emit(TraceStep(x, "verifier" if defer else "drafter", q=float(q[x]), p=float(p[x]),
                           pi=float(law[x]), deferral=float(defer)))


def _seq_cascade(run: _Run, alpha: float, aggregate: str) -> None:
    log_q = []   # the drafter's T = 1 log-probabilities of its own answer, token by token
    _plain(run, "drafter", log_q)
    log_q = torch.tensor(log_q, dtype=torch.float64)
    score = {"sequence": log_q.sum(), "mean": log_q.mean(), "min": log_q.min()}[aggregate].exp()
    if float(score) < 1.0 - alpha:   # equation (1): defer the whole answer to the verifier
        del run.seq[run.n_prefix:]
        run.trace.clear()
        run.done = run.stopped_at_eos = False
        _plain(run, "verifier")


def _bild(run: _Run, threshold: float, gamma: int, fallback: float) -> None:
    while not run.done:
        drafts, q_rows = [], []
        logits = run.next_logits("drafter")
        while len(drafts) < min(gamma, run.remaining):
            if drafts:
                logits = run.feed("drafter", [drafts[-1]])[-1]
            q_j, qu_j = run.laws(logits)
            if float(qu_j.max()) < fallback:   # the small model is unsure: hand over to the large one
                break
            drafts.append(run.sample(q_j))
            q_rows.append(q_j)
        p, p_unscaled = run.laws(run.score("verifier", drafts))           # (len(drafts)+1, V)
        run.counts["n_drafted"] += len(drafts)
        n_accepted = 0
        for j, x in enumerate(drafts):
            # Roll back when the large model finds the draft unlikely (-log p(x) above the threshold)
            # and takes its own token there. A rollback to the drafted token itself changes nothing,
            # so it counts as an acceptance and the block goes on (the same law as re-drafting).
            if -math.log(max(float(p_unscaled[j, x]), 1e-300)) > threshold:
                y = run.sample(p[j])
                if y != x:
                    run.counts["n_rejected"] += 1
                    run.emit(TraceStep(y, "residual", False, q=float(q_rows[j][y]), p=float(p[j, y]),
                                       pi=float(p[j, y]), deferral=1.0))
                    break
            n_accepted += 1
            run.emit(TraceStep(x, "draft", True, q=float(q_rows[j][x]), p=float(p[j, x]),
                               pi=float(q_rows[j][x]), deferral=0.0))
            if run.done:
                break
        else:
            if not run.done:
                y = run.sample(p[len(drafts)])
                run.emit(TraceStep(y, "verifier", p=float(p[len(drafts), y]), pi=float(p[len(drafts), y]),
                                   deferral=1.0))
        run.counts["n_accepted"] += n_accepted
        run.sync()


# ---- the public entry points ------------------------------------------------------------------

def _run_method(run: _Run, o, beta, policy=None) -> None:
    method, rule, alpha, gamma = o.method, o.rule, o.alpha, o.gamma
    if method in ("drafter", "verifier"):
        _plain(run, method)
    elif method == "speculative":
        _speculative(run, o, beta, policy)
    elif method == "token_cascade":
        _token_cascade(run, alpha)
    elif method == "oracle":
        _oracle(run, rule, alpha)
    elif method == "seq_cascade":
        _seq_cascade(run, alpha, o.aggregate)
    else:
        _bild(run, o.bild_threshold, gamma, o.bild_fallback)


def generate(drafter, verifier, prompt, *, method: str, rule: Optional[str] = None, alpha: Optional[float] = None,
             beta=1.0, gamma: Union[int, str] = 5, temperature: float = 0.0, max_new_tokens: int = 128, seed: int = 0,
             eos_token_id=None, aggregate: str = "sequence", bonus: str = "verifier",
             bild_threshold: Optional[float] = None, bild_fallback: float = 0.5,
             shared_vocabulary: bool = False, on_token: Optional[Callable[[int], None]] = None) -> Generation:
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
      token (law `targets.output_distribution(pi, q)`), and the verifier is not fed the last draft
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
    o = check_generate_options(method, rule, alpha, gamma, temperature, max_new_tokens, aggregate, bonus,
                               bild_threshold, bild_fallback)
    seed = check_seed(seed)
    if on_token is not None and (o.method == "seq_cascade" or not callable(on_token)):
        raise ValueError("on_token must be a function of one token id, and method='seq_cascade' takes none "
                         "(it may replace its drafter's whole answer): read Generation.tokens at the end.")
    prompt_ids = verifier.encode(prompt)
    run = _Run(drafter, verifier, prompt_ids, temperature=o.temperature, max_new_tokens=o.max_new_tokens,
               seed=seed, eos=stop_tokens(eos_token_id, verifier), on_token=on_token)
    start = time.perf_counter()
    with targets.trusted_inputs():  # every law below comes from `probabilities`
        _run_method(run, o, beta, policy)
    wall = time.perf_counter() - start
    tokens = run.seq[run.n_prefix:]
    sessions = run._sessions
    by_model = {k: [sessions[k]] if k in sessions else [] for k in ("drafter", "verifier")}
    return Generation(
        tokens=tokens, text=verifier.decode(tokens), prompt_tokens=prompt_ids, method=o.method, rule=o.rule,
        alpha=o.alpha, gamma=o.gamma if policy is None else "auto", temperature=o.temperature,
        bild_threshold=o.bild_threshold, gammas=policy.gammas if policy is not None else [],
        auto_costs=policy.cost_table() if policy is not None else [],
        auto_acceptance=policy.acceptance if policy is not None else None,
        n_verifier_calls=sum(s.n_calls for s in by_model["verifier"]),
        n_drafter_calls=sum(s.n_calls for s in by_model["drafter"]),
        wall_time_s=wall, drafter_time_s=sum(s.time_s for s in by_model["drafter"]),
        verifier_time_s=sum(s.time_s for s in by_model["verifier"]),
        stopped_at_eos=run.stopped_at_eos, trace=run.trace,
        feed_log={k: list(s.feed_log) for k, s in sessions.items()}, **run.counts,
        **{f"{which}_{name}": value for which, counts in run.calls.items() for name, value in counts.items()})


def generate_many(drafter, verifier, prompts: Iterable, *, seed: int = 0, progress: bool = True,
                  desc: Optional[str] = None, **options) -> List[Generation]:
    """`generate` over a list of prompts (prompt `i` uses seed `seed + i`), with a progress bar."""
    from tqdm.auto import tqdm
    seed = check_seed(seed)
    prompts = list(prompts)
    label = desc or options.get("method", "generate")
    return [generate(drafter, verifier, prompt, seed=seed + i, **options)
            for i, prompt in enumerate(tqdm(prompts, desc=label, disable=not progress))]


def calibrate(pair, verifier=None, **options) -> Calibration:
    """The call costs of a loaded pair (`calibration.calibrate`), with this engine's loop timed for the
    per-call and per-block overheads: `tl.calibrate(pair, max_k=..., repeats=...)`."""
    return calibration.calibrate(pair, verifier, decode=generate, **options)
