"""One `generate` call's state (`Run`: both sessions, the sequence, the counters) and each method's loop
on it: plain decoding, Algorithm 4's blocks, the token cascade, the oracle, the sequence cascade and BiLD."""

from __future__ import annotations

import math
import time
from typing import List, Optional, Sequence

import torch

from ...maths import targets
from ...maths import accept_reject
from ...maths.verification import block_targets, temperature_laws, verify_block
from ..generation import TraceStep, emit_verified_block

__all__ = []  # what `generate` runs inside: the API is `entry_points` and `generation`

_NAN = float("nan")


class Run:
    """The state of one `generate` call: both sessions, the sequence so far and the counters."""

    def __init__(
        self, drafter, verifier, prompt_ids, *, temperature, max_new_tokens, seed, eos, on_token=None
    ):
        self.drafter, self.verifier = drafter, verifier
        self.on_token = on_token
        self.prompt_ids = prompt_ids
        self.seq = verifier.decoder_prefix(prompt_ids)  # decoder tokens: prefix, then the output
        self.n_prefix = len(self.seq)
        self.temperature = temperature
        self.max_new_tokens = max_new_tokens
        self.generator = torch.Generator().manual_seed(seed)
        self.eos = eos
        self.trace: List[TraceStep] = []
        self.done = False
        self.stopped_at_eos = False
        self.sessions = {}
        self.counts = dict(n_drafted=0, n_accepted=0, n_rejected=0)
        # per model: calls by tokens fed (index k - 1), prefills, encoder passes (what `pricing` prices)
        self.calls = {
            which: dict(calls_by_k=[], prefills=0, encoder_passes=0) for which in ("drafter", "verifier")
        }

    def session(self, which: str):
        if which not in self.sessions:  # started lazily: plain verifier decoding never encodes for q
            model = self.drafter if which == "drafter" else self.verifier
            self.sessions[which] = model.start(self.prompt_ids)
            self.calls[which]["encoder_passes"] += int(model.is_encoder_decoder)
        return self.sessions[which]

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
        backlog = self.seq[session.length :]
        if backlog:
            return self.feed(which, backlog + drafts, keep=len(drafts) + 1)
        last = session.last_logits()  # it has seen everything, e.g. after a rollback to the same token
        if last is None:
            session.crop(session.length - 1)
            return self.feed(which, self.seq[session.length :] + drafts, keep=len(drafts) + 1)
        if not drafts:
            return last.unsqueeze(0)
        return torch.cat([last.unsqueeze(0), self.feed(which, drafts)])

    def next_logits(self, which: str) -> torch.Tensor:
        """Catch one model up with the sequence: its next-token logits `(V,)`."""
        return self.score(which)[-1]

    def sample(self, probs: torch.Tensor) -> int:
        return int(accept_reject.sample(probs, self.generator))

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
        for session in self.sessions.values():
            cached = session.tokens
            agree = next(
                (i for i, (a, b) in enumerate(zip(cached, self.seq)) if a != b),
                min(len(cached), len(self.seq)),
            )
            session.crop(agree)


# ---- the methods ----------------------------------------------------------------------------


def _plain(run: Run, which: str, log_unscaled: Optional[list] = None) -> None:
    while not run.done:
        _plain_step(run, which, log_unscaled)


def _plain_step(run: Run, which: str, log_unscaled: Optional[list] = None) -> None:
    law, unscaled = run.laws(run.next_logits(which))
    x = run.sample(law)
    prob = float(law[x])
    if log_unscaled is not None:
        log_unscaled.append(math.log(max(float(unscaled[x]), 1e-300)))
    step = TraceStep(
        x,
        which,
        q=prob if which == "drafter" else _NAN,
        p=prob if which == "verifier" else _NAN,
        pi=prob,
        deferral=1.0 if which == "verifier" else 0.0,
    )
    run.emit(step)


def _speculative(run: Run, o, beta, policy=None) -> None:
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
            seconds = None  # a prompt's prefill is not a block's cost
        kept = run.counts["n_accepted"] - accepted
        policy.observe(kept, kept + run.counts["n_rejected"] - rejected, gamma=gamma, seconds=seconds)


def _speculative_block(run: Run, rule: str, alpha: float, beta, gamma: int, bonus: str) -> None:
    """One block of Algorithm 4, steps 1-5 of the docstring of `engine`: draft, one verifier call, verify,
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
    q, q_unscaled = torch.stack(q_rows), torch.stack(qu_rows)  # (n, V)
    # 2. One call of p. It scores every draft and, for a bonus token, the position after the last one
    # ((n+1, V)); without a bonus that last row is never used, so the last draft is not fed at all
    # ((n, V)): at gamma = 1 each model is then fed just the last emitted token, one per call.
    scored = drafts if bonus != "none" else drafts[:-1]
    p_all, pu_all = run.laws(run.score("verifier", scored))
    p, p_unscaled = p_all[:n], pu_all[:n]
    # The rule's target at every drafted position: pi = T(q, p) (Table 1).
    pi, weight = block_targets(rule, q, p, alpha, q_unscaled=q_unscaled, p_unscaled=p_unscaled, beta=beta)
    bonus_laws, after = None, {}
    if bonus != "none" and n < run.remaining:  # bonus="none": the next block starts with a new draft
        bonus_laws = (
            p_all[n:]
            if bonus == "verifier"
            else lambda rows: _target_bonus(run, rule, alpha, beta, drafts, p_all[n], pu_all[n], after)
        )
    # 3. Verify: keep x_{t+j} with probability min{1, pi(x)/q(x)}, stop at the first rejection j*; the
    #    same call draws step 4's token (residual norm(max{0, pi - q}) at j*, or the bonus after a full
    #    block).
    verdict = verify_block(
        pi.unsqueeze(0),
        q.unsqueeze(0),
        torch.tensor([drafts]),
        run.generator,
        bonus=bonus_laws,
        stop_tokens=run.eos,
    )
    # 4. Record the accepted drafts, then the token after them: the residual's draw at a rejection, else the
    #    bonus token.
    p_n = p_all[n] if n < len(p_all) else None

    def bonus_step(token: int) -> TraceStep:
        if bonus == "verifier":  # the paper's Algorithm 4: after a full block, p_{t+gamma} is free
            return TraceStep(token, "bonus", p=float(p_n[token]), pi=float(p_n[token]))
        return TraceStep(
            token, "bonus", q=float(after["q"][token]), p=float(p_n[token]), pi=float(after["pi"][token])
        )

    emit_verified_block(run.emit, run.counts, drafts, verdict, 0, q, p, pi, weight, bonus_step)
    # 5. Crop both KV caches back to the emitted prefix (the rejected drafts leave them).
    run.sync()


def _target_bonus(run: Run, rule, alpha, beta, drafts, p_n, pu_n, after: dict) -> torch.Tensor:
    """bonus="target": one more drafter step gives q_{t+gamma}, so the bonus follows pi as well."""
    q_n, qu_n = run.laws(run.feed("drafter", [drafts[-1]], keep=1)[-1])
    pi_n = targets.target_distribution(rule, q_n, p_n, alpha, q_unscaled=qu_n, p_unscaled=pu_n, beta=beta)
    after.update(q=q_n, pi=pi_n)
    return accept_reject.output_distribution(pi_n, q_n).unsqueeze(0)  # (1, V)


def _token_cascade(run: Run, alpha: float) -> None:
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


def _oracle(run: Run, rule: str, alpha: float) -> None:
    while not run.done:
        q, q_unscaled = run.laws(run.next_logits("drafter"))
        p, p_unscaled = run.laws(run.next_logits("verifier"))
        defer = bool(
            targets.deferral_decision(rule, q, p, alpha, q_unscaled=q_unscaled, p_unscaled=p_unscaled)
        )
        law = p if defer else q
        x = run.sample(law)
        run.emit(
            TraceStep(
                x,
                "verifier" if defer else "drafter",
                q=float(q[x]),
                p=float(p[x]),
                pi=float(law[x]),
                deferral=float(defer),
            )
        )


def _seq_cascade(run: Run, alpha: float, aggregate: str) -> None:
    log_q = []  # the drafter's T = 1 log-probabilities of its own answer, token by token
    _plain(run, "drafter", log_q)
    log_q = torch.tensor(log_q, dtype=torch.float64)
    score = {"sequence": log_q.sum(), "mean": log_q.mean(), "min": log_q.min()}[aggregate].exp()
    if float(score) < 1.0 - alpha:  # equation (1): defer the whole answer to the verifier
        del run.seq[run.n_prefix :]
        run.trace.clear()
        run.done = run.stopped_at_eos = False
        _plain(run, "verifier")


def _bild(run: Run, threshold: float, gamma: int, fallback: float) -> None:
    while not run.done:
        drafts, q_rows = [], []
        logits = run.next_logits("drafter")
        while len(drafts) < min(gamma, run.remaining):
            if drafts:
                logits = run.feed("drafter", [drafts[-1]])[-1]
            q_j, qu_j = run.laws(logits)
            if float(qu_j.max()) < fallback:  # the small model is unsure: hand over to the large one
                break
            drafts.append(run.sample(q_j))
            q_rows.append(q_j)
        p, p_unscaled = run.laws(run.score("verifier", drafts))  # (len(drafts)+1, V)
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
                    run.emit(
                        TraceStep(
                            y,
                            "residual",
                            False,
                            q=float(q_rows[j][y]),
                            p=float(p[j, y]),
                            pi=float(p[j, y]),
                            deferral=1.0,
                        )
                    )
                    break
            n_accepted += 1
            run.emit(
                TraceStep(
                    x,
                    "draft",
                    True,
                    q=float(q_rows[j][x]),
                    p=float(p[j, x]),
                    pi=float(q_rows[j][x]),
                    deferral=0.0,
                )
            )
            if run.done:
                break
        else:
            if not run.done:
                y = run.sample(p[len(drafts)])
                run.emit(
                    TraceStep(
                        y, "verifier", p=float(p[len(drafts), y]), pi=float(p[len(drafts), y]), deferral=1.0
                    )
                )
        run.counts["n_accepted"] += n_accepted
        run.sync()


# ---- which loop a method runs -----------------------------------------------------------------


def run_method(run: Run, o, beta, policy=None) -> None:
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
