r"""What a deferral rule can see at decoding time: features of the two next-token laws $q$ and $p$.

A rule of the paper decides from $q_t$ and $p_t$ alone (Chow from $\max q$, Diff from $\max q$ and
$\max p$, OPT adds $D_{TV}(p, q)$). A learned rule may use more of the same two laws, but nothing
else: the decision must be a function of $(q_t, p_t)$, never of the drafted token $x_t$, so that the
target $\pi_t = (1 - \delta_t)\,q_t + \delta_t\,p_t$ is fixed before the draft is checked and
Algorithm 4 stays exact for it (a decision that looked at $x_t$ would change which law the accepted
tokens follow). The features, per position, from the temperature-1 laws (the laws the paper's
decisions use):

| feature        | value |
|----------------|-------|
| `max_q`        | $\max_v q(v)$ (Chow's confidence) |
| `max_p`        | $\max_v p(v)$ |
| `entropy_q`    | $-\sum_v q(v) \log q(v)$ (nats; the log-loss plug-in of Lemma 1) |
| `entropy_p`    | $-\sum_v p(v) \log p(v)$ |
| `tv`           | $D_{TV}(p, q) = \sum_v \max\{0, p(v) - q(v)\}$ (the rejection a deferral costs, Lemma 3) |
| `p_of_q_top`   | $p(\arg\max q)$: how much the verifier likes the drafter's favourite |
| `q_of_p_top`   | $q(\arg\max p)$: how much the drafter likes the verifier's favourite |
"""

from __future__ import annotations

import torch

from . import laws

__all__ = ["FEATURES", "deferral_features"]

#: The columns of `deferral_features`, in order.
FEATURES = ("max_q", "max_p", "entropy_q", "entropy_p", "tv", "p_of_q_top", "q_of_p_top")


def _entropy(x: torch.Tensor) -> torch.Tensor:
    # 0 log 0 = 0: xlogy gives exactly that where a token has no mass
    return -torch.special.xlogy(x, x).sum(-1)


def deferral_features(q, p) -> torch.Tensor:
    """The features of `FEATURES` for each position, shape `(..., len(FEATURES))`, in float64.

    `q`, `p`: probabilities of shape `(..., V)` over one vocabulary (checked as `laws.check_pair`
    does). Pass the temperature-1 laws: the paper's decisions are made on those.
    """
    q, p = laws.check_pair(q, p)
    q, p = q.double(), p.double()
    top_q, top_p = q.argmax(-1, keepdim=True), p.argmax(-1, keepdim=True)
    columns = (
        q.max(-1).values,
        p.max(-1).values,
        _entropy(q),
        _entropy(p),
        (p - q).clamp_min(0).sum(-1),
        p.gather(-1, top_q).squeeze(-1),
        q.gather(-1, top_p).squeeze(-1),
    )
    return torch.stack(columns, -1)
