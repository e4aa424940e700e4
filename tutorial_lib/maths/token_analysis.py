r"""Exact token-level statistics of every rule along a reference, from one forward pass per model.

Teacher forcing: along a reference continuation $y = (y_1, \dots, y_n)$ of a prompt $x$, one forward
pass of each model gives $q_t = q(\cdot \mid x, y_{<t})$ and $p_t = p(\cdot \mid x, y_{<t})$ at every
position. For a rule with target $\pi_t = \mathbb{T}(q_t, p_t)$ (`tutorial_lib.maths.targets`) and the law
$o_t$ of the token Algorithm 4 emits ($o_t = \pi_t$ for every rule but `lossy` with $\beta = 1$, where
$o_t = \min\{q_t, \pi_t\} + R_t\,\mathrm{norm}(\max\{0, \pi_t - q_t\})$), everything is closed-form:

$$R_t = \sum_v \max\{0,\, q_t(v) - \pi_t(v)\} \quad\text{(rejection probability of one draft, } \gamma = 1)$$
$$\ell^{01}_t = 1 - o_t(y_t), \qquad \ell^{\rm greedy}_t = 1(\arg\max_v o_t(v) \ne y_t),
  \qquad \ell^{\log}_t = -\log o_t(y_t)$$

and the deferral weight $w_t$ (`targets.deferral_weight`: $\delta_t$ for the prefix rules,
$1 - \sum_{u \in A_t} q_t(u)$ for the token rules; NaN for `lossy`, which is not a mixture). Ties of the
argmax are broken uniformly: $\ell^{\rm greedy}_t = 1 - 1(o_t(y_t) = \max o_t) / |\arg\max o_t|$.

**Every quantity uses the whole vocabulary, exactly.** Per position the work is one sort of the
ratios $r(v) = q(v)/p(v)$ plus the top-`head` tokens of $q$ and of $p$; then for any threshold $c$
$$G(c) = \sum_v \max\{0,\, q(v) - c\,p(v)\} = \sum_{r(v) > c} q(v) - c \sum_{r(v) > c} p(v)$$
is two suffix sums. With it:

- prefix rules (`bild`, `chow`, `diff`, `opt`): $\pi_t \in \{q_t, p_t\}$, so $R_t = \delta_t D_{TV}$;
- token rules: $\pi = q\,1_A + w\,p$ with $w = 1 - q(A)$, so
  $R = \sum_{v \notin A} \max\{0, q(v) - w p(v)\} = G(w) - \sum_{v \in A}\max\{0, q(v) - w p(v)\}$,
  where $A$ (a top set of $q$ or $p$) lies in the head, or is the whole vocabulary when its threshold
  is $\le 0$ (then $\pi = q$);
- `lossy` with $c = 1/(1-\alpha)$: $R = G(c)$ for both $\beta$ (Lemma 2); with $\beta = 1$,
  $o(v) = \min\{q(v), c\,p(v)\} + \tfrac{R}{D_{TV}} \max\{0, p(v) - q(v)\}$; with the normalising $\beta$
  (Lossy*), $\pi(v) = \max\{\min\{q(v), c\,p(v)\}, s\,p(v)\}$ where $s = 1/\beta$ solves
  $\sum_v \pi(v) = 1$ exactly on the piecewise-linear sum (the package bisects the same equation).
  At $\alpha = 1$ (the limit $c \to \infty$) the emitted law is $q$.

The argmax is searched among the head tokens and certified by an upper bound on every other token
(for example $o(v) \le q_{(K)} + w\,p_{(K)}$ outside the top $K$ of both); the rare position where a
set $A$ outgrows the head or the bound does not certify is recomputed over the full vocabulary with
`targets.target_distribution` itself (`direct_statistics`, also the tests' reference).

**The oracle envelope.** With the reference known, Lemma 4's oracle for a loss $\ell$ defers where
$\ell(y_t, q_t) > \ell(y_t, p_t) + \alpha D_{TV}(p_t, q_t)$; at $\alpha = 0$, for the expected 0-1 loss,
exactly where $p_t(y_t) > q_t(y_t)$. Sweeping $\alpha$ from $+\infty$ to 0 defers positions in
decreasing order of gain per unit of rejection, which solves
$\min \sum_t \ell_t$ subject to $\sum_t R_t \le B$ over all mixtures $\pi_t = (1 - r_t) q_t + r_t p_t$
(a fractional knapsack), so `oracle_envelope` is a lower bound on the curve of every deferral rule
(`bild`, `chow`, `diff`, `opt`, the ends). Token rules and `lossy` are not mixtures; they can, in
principle, dip below it at a position, and the notebook measures whether they do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Sequence

import numpy as np
import torch

from . import targets
from . import rules
from . import accept_reject
from .verification import temperature_laws

__all__ = [
    "CURVES",
    "STATS",
    "LOSSES",
    "Grid",
    "default_grid",
    "nearest_alpha",
    "position_means",
    "position_statistics",
    "direct_statistics",
    "oracle_losses",
    "oracle_envelope",
    "curve_rule",
    "MIXTURE_CURVES",
]

#: Every curve: the rules of `rules.RULES`, `lossy` twice (beta = 1, and `lossy*` = beta "normalize").
CURVES = (
    "drafter",
    "verifier",
    "spec",
    "bild",
    "chow",
    "diff",
    "opt",
    "token_v1",
    "token_v2",
    "token_v3",
    "lossy",
    "lossy*",
)
#: The statistics of each (curve, alpha) point, per position.
STATS = ("rejection", "deferral", "expected_01", "greedy_01", "log_loss")
#: The losses, and the per-position oracle columns `(loss under q, loss under p)` of each.
LOSSES = ("expected_01", "greedy_01", "log_loss")
_ONE_POINT = ("drafter", "verifier", "spec")
#: Curves of mixtures built from the oracle's per-position columns, outside `position_statistics`
#: (`stats.learned_deferral`, `stats.dynamic_weight`): the constant weight, the learned rule, DIVERSED's
#: dynamic weight.
MIXTURE_CURVES = ("mixture", "learned", "diversed")


def curve_rule(curve: str):
    """`(rule, beta)` of a curve name of `CURVES`, of another rule of `rules.RULES` (the constant
    `mixture`, rules added by `rules.register_rule`) or of `MIXTURE_CURVES`: the per-item sums
    of those are built from the oracle's per-position columns (`stats.learned_deferral`), since each is a
    mixture of q and p."""
    if curve not in CURVES and curve not in rules.RULES and curve not in MIXTURE_CURVES:
        raise ValueError(
            f"unknown curve {curve!r}; choose one of {', '.join(CURVES)} "
            f"(or another rule of rules.RULES: {', '.join(r for r in rules.RULES if r not in CURVES)})."
        )
    if curve == "lossy*":
        return "lossy", "normalize"
    return curve, 1.0


@dataclass(frozen=True)
class Grid:
    """The alpha values of every curve, and their flat layout: point `i` is `points[i] = (curve, alpha)`."""

    alphas: Dict[str, tuple]

    def __post_init__(self):
        for curve, values in self.alphas.items():
            curve_rule(curve)
            if len(values) == 0:
                raise ValueError(f"curve {curve!r} has no alpha values.")

    @property
    def curves(self):
        return tuple(self.alphas)

    @property
    def points(self):
        return [(curve, float(a)) for curve, values in self.alphas.items() for a in values]

    def slice(self, curve: str) -> slice:
        start = 0
        for name, values in self.alphas.items():
            if name == curve:
                return slice(start, start + len(values))
            start += len(values)
        raise KeyError(f"curve {curve!r} is not in this grid ({', '.join(self.alphas)}).")

    def as_json(self) -> dict:
        return {curve: [float(a) for a in values] for curve, values in self.alphas.items()}


def default_grid(n_alpha: int = 41, temperature: float = 1.0, curves: Sequence[str] = CURVES) -> Grid:
    r"""`n_alpha` evenly spaced values over each rule's live range, both ends included.

    OPT's decision $\max q < \max p - \alpha D_{TV}$ only changes for $\alpha \in [-1, 1]$ at $T = 1$,
    since $|\max p - \max q| \le D_{TV}(p, q)$; at other temperatures its TV term is the scaled one, so
    a few far values (up to $\pm 50$) are added. `lossy` runs to $\alpha = 1$ (the limit: the drafter).
    Token-V3 at $\alpha = 0$ still accepts the verifier's top token when drafted: it is not SpecDecode.
    """
    if n_alpha < 2:
        raise ValueError(f"n_alpha={n_alpha}: a curve needs at least its two ends.")
    alphas = {}
    for curve in curves:
        curve_rule(curve)
        if curve in _ONE_POINT:
            alphas[curve] = (0.0,)
            continue
        low, high = rules.LIVE_ALPHA_RANGES[curve_rule(curve)[0]]
        if not np.isfinite([low, high]).all():
            raise ValueError(
                f"curve {curve!r} has the unbounded live range ({low}, {high}); register its rule with a "
                "bounded alpha_range."
            )
        values = np.linspace(low, high, n_alpha)
        if curve == "opt" and temperature != 1.0:
            values = np.unique(np.concatenate([values, [-50, -10, -3, 3, 10, 50]]))
        alphas[curve] = tuple(float(a) for a in values)
    return Grid(alphas)


def nearest_alpha(grid: Grid, curve: str, alpha: float) -> float:
    """The grid's alpha of `curve` closest to `alpha` (the stored statistics live on the grid)."""
    values = np.asarray(grid.alphas[curve])
    return float(values[np.argmin(np.abs(values - float(alpha)))])


def position_means(stats: np.ndarray) -> np.ndarray:
    """The mean over positions (rows) of each statistic (column), NaN positions left out; NaN where every
    position is NaN (Lossy has no deferral weight)."""
    stats = np.asarray(stats, float)
    return np.array([np.nan if np.isnan(column).all() else np.nanmean(column) for column in stats.T])


# --------------------------------------------------------------------------------------------
# Per-position statistics
# --------------------------------------------------------------------------------------------


def _greedy_loss(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    top = x.max(-1, keepdim=True).values
    ties = (x == top).sum(-1).double()
    hit = (x.gather(-1, y[:, None]) == top).squeeze(-1).double()
    return 1.0 - hit / ties


def _laws(logits: torch.Tensor, temperature: float):
    logits = torch.as_tensor(logits).double()
    if torch.isnan(logits).any():
        raise ValueError("logits contain NaN; check the model's forward pass.")
    return temperature_laws(logits, temperature)


class _Rows:
    """Everything one chunk of positions needs, computed once over the full vocabulary."""

    def __init__(self, q_logits, p_logits, y, temperature: float, head: int):
        q_logits, p_logits = torch.as_tensor(q_logits), torch.as_tensor(p_logits)
        if q_logits.ndim != 2 or q_logits.shape != p_logits.shape:
            raise ValueError(
                f"q_logits {tuple(q_logits.shape)} and p_logits {tuple(p_logits.shape)} must both "
                "have shape (positions, V) over one vocabulary."
            )
        self.y = torch.as_tensor(y, dtype=torch.long)
        if self.y.shape != q_logits.shape[:1]:
            raise ValueError(f"y has shape {tuple(self.y.shape)}; pass one reference token per position.")
        self.q, self.qu = _laws(q_logits, temperature)  # (C, V)
        self.p, self.pu = _laws(p_logits, temperature)
        C, V = self.q.shape
        rows = torch.arange(C)
        q, p, y = self.q, self.p, self.y
        self.qy, self.py = q[rows, y], p[rows, y]  # (C,)
        self.quy, self.puy = self.qu[rows, y], self.pu[rows, y]
        d = p - q
        self.tv = d.clamp_min(0).sum(-1)  # D_TV as OPT's term
        self.rej = d.neg_().clamp_min_(0).sum(-1)  # rejection of SpecDecode
        del d
        self.tvu = (self.pu - self.qu).clamp_min(0).sum(-1)
        self.max_qu, self.max_pu = self.qu.max(-1).values, self.pu.max(-1).values
        self.greedy_q, self.greedy_p = _greedy_loss(q, y), _greedy_loss(p, y)
        # ratios r = q / p, ascending, with prefix and suffix sums of q and p in that order
        # (p = 0 only where a softmax underflows: there r = inf if q > 0, and 0 where both vanish)
        ratio = (q / p).nan_to_num_(nan=0.0, posinf=float("inf"))
        order = torch.from_numpy(np.argsort(ratio.numpy(), axis=-1))  # numpy sorts faster here than torch
        self.r = ratio.gather(-1, order)
        del ratio
        self.q_pre, self.p_pre = q.new_zeros(C, V + 1), q.new_zeros(C, V + 1)  # (C, V + 1) prefix sums
        torch.cumsum(q.gather(-1, order), -1, out=self.q_pre[:, 1:])
        torch.cumsum(p.gather(-1, order), -1, out=self.p_pre[:, 1:])
        self.K = min(int(head), V)
        self.top_q = self.qu.topk(self.K, -1).indices  # (C, K), by q descending
        self.top_p = self.pu.topk(self.K, -1).indices
        cand = torch.cat([self.top_q, self.top_p], -1).sort(-1).values
        duplicate = torch.zeros_like(cand, dtype=torch.bool)
        duplicate[:, 1:] = cand[:, 1:] == cand[:, :-1]
        self.cand, self.cand_dup = cand, duplicate  # (C, 2K) distinct candidates
        if self.K < V:  # every token outside both heads has q <= q_(K) and p <= p_(K)
            self.q_out = q.gather(-1, self.top_q[:, -1:]).squeeze(-1)
            self.p_out = p.gather(-1, self.top_p[:, -1:]).squeeze(-1)
        else:
            self.q_out = self.p_out = None

    def G(self, c: torch.Tensor) -> torch.Tensor:
        """$\\sum_v \\max\\{0, q(v) - c\\,p(v)\\}$ for thresholds `c` of shape (C, m)."""
        i = torch.searchsorted(self.r, c.contiguous(), right=True)
        q_above = self.q_pre[:, -1:] - self.q_pre.gather(-1, i)  # sums over r > c
        p_above = self.p_pre[:, -1:] - self.p_pre.gather(-1, i)
        value = q_above - c * p_above
        return value.clamp_min(0)

    def greedy(self, law_at, law_y: torch.Tensor, scale_out: torch.Tensor):
        """Tie-aware greedy loss of the law `law_at(q_c, p_c, idx)` over the candidates, `(loss, certified)`.

        `scale_out(q_out, p_out)` bounds the law outside the candidates."""
        qc, pc = self.q.gather(-1, self.cand)[:, None, :], self.p.gather(-1, self.cand)[:, None, :]
        values = law_at(qc, pc, self.cand[:, None, :])  # (C, m, 2K)
        values = values.masked_fill(self.cand_dup[:, None, :], -float("inf"))
        top = values.max(-1).values
        ties = (values == top[..., None]).sum(-1).double()
        loss = 1.0 - (law_y == top).double() / ties
        if self.q_out is None:
            return loss, torch.ones_like(top, dtype=torch.bool)
        return loss, top > scale_out(self.q_out[:, None], self.p_out[:, None])


def _prefix_points(rows: _Rows, curve: str, alphas: torch.Tensor) -> torch.Tensor:
    a = alphas[None, :]
    C = rows.q.shape[0]
    if curve == "drafter":
        defer = torch.zeros(C, 1, dtype=torch.bool)
    elif curve in ("verifier", "spec"):
        defer = torch.ones(C, 1, dtype=torch.bool)
    elif curve == "chow":
        defer = rows.max_qu[:, None] < 1.0 - a
    elif curve == "diff":
        defer = rows.max_qu[:, None] < rows.max_pu[:, None] - a
    elif curve == "opt":
        defer = rows.max_qu[:, None] < rows.max_pu[:, None] - a * rows.tv[:, None]
    else:  # bild, with the TV distance of the temperature-1 laws
        defer = rows.tvu[:, None] > a
    d = defer.double()
    law_y = torch.where(defer, rows.py[:, None], rows.qy[:, None])
    greedy = torch.where(defer, rows.greedy_p[:, None], rows.greedy_q[:, None])
    return torch.stack([d * rows.rej[:, None], d, 1.0 - law_y, greedy, -torch.log(law_y)], -1)


def _token_points(rows: _Rows, curve: str, alphas: torch.Tensor):
    a = alphas[None, :]
    if curve == "token_v1":
        score, score_y, head = rows.qu, rows.quy, rows.top_q
        tau = rows.max_pu[:, None] - a
    else:
        score, score_y, head = rows.pu, rows.puy, rows.top_p
        tau = rows.max_pu[:, None] - a if curve == "token_v2" else (1.0 - a) * rows.max_pu[:, None]
    whole = tau <= 0  # A is the whole vocabulary: pi = q
    in_head = score.gather(-1, head)[:, None, :] >= tau[..., None]  # (C, m, K)
    outgrows = in_head.all(-1) & ~whole & (rows.K < score.shape[-1])
    qh, ph = rows.q.gather(-1, head)[:, None, :], rows.p.gather(-1, head)[:, None, :]
    w = (1.0 - (qh * in_head).sum(-1)).clamp_min(0).masked_fill(whole, 0.0)
    inner = ((qh - w[..., None] * ph).clamp_min(0) * in_head).sum(-1)
    rejection = (rows.G(w) - inner).clamp_min(0).masked_fill(whole, 0.0)
    y_in = (score_y[:, None] >= tau) | whole
    law_y = rows.qy[:, None] * y_in + w * rows.py[:, None]
    score_c = score.gather(-1, rows.cand)[:, None, :]
    in_c = (score_c >= tau[..., None]) | whole[..., None]
    greedy, certified = rows.greedy(
        lambda qc, pc, idx: qc * in_c + w[..., None] * pc, law_y, lambda qo, po: qo + w * po
    )
    stats = torch.stack([rejection, w, 1.0 - law_y, greedy, -torch.log(law_y)], -1)
    return stats, outgrows | ~certified


def _lossy_points(rows: _Rows, curve: str, alphas: torch.Tensor):
    C = rows.q.shape[0]
    limit = alphas >= 1.0  # alpha = 1: the drafter
    c = 1.0 / (1.0 - torch.where(limit, torch.zeros_like(alphas), alphas))  # c = 1 / (1 - alpha)
    c = c[None, :].expand(C, -1).contiguous()
    rejection = rows.G(c)
    qy, py = rows.qy[:, None], rows.py[:, None]
    if curve == "lossy":
        share = torch.where(
            rows.tv[:, None] > 0, rejection / rows.tv[:, None].clamp_min(1e-300), torch.zeros_like(rejection)
        )
        law_y = torch.minimum(qy, c * py) + share * (py - qy).clamp_min(0)
        law = lambda qc, pc, idx: (
            torch.minimum(qc, c[..., None] * pc) + share[..., None] * (pc - qc).clamp_min(0)
        )
        bound = lambda qo, po: qo + share * po
    else:
        s = _normalising_s(rows, c)
        law_y = torch.maximum(torch.minimum(qy, c * py), s * py)
        law = lambda qc, pc, idx: torch.maximum(torch.minimum(qc, c[..., None] * pc), s[..., None] * pc)
        bound = lambda qo, po: qo + s * po
    greedy, certified = rows.greedy(law, law_y, bound)
    stats = torch.stack(
        [rejection, torch.full_like(rejection, float("nan")), 1.0 - law_y, greedy, -torch.log(law_y)], -1
    )
    drafter = torch.stack(
        [
            torch.zeros_like(rows.qy),
            torch.full_like(rows.qy, float("nan")),
            1.0 - rows.qy,
            rows.greedy_q,
            -torch.log(rows.qy),
        ],
        -1,
    )
    stats = torch.where(limit[None, :, None], drafter[:, None, :], stats)
    return stats, ~certified & ~limit[None, :]


def _normalising_s(rows: _Rows, c: torch.Tensor) -> torch.Tensor:
    r"""$s = 1/\beta$ with $\sum_v \max\{\min\{q, c p\}, s p\} = 1$, exactly (the sum is linear between
    ratios)."""
    V = rows.r.shape[-1]
    below_c = torch.searchsorted(rows.r, c, right=False)  # count of r < c
    g0 = c * (rows.p_pre[:, -1:] - rows.p_pre.gather(-1, below_c)) + rows.q_pre.gather(-1, below_c)
    finite = torch.isfinite(rows.r)
    # phi(r_j) = r_j P_<j - Q_<j is nondecreasing in j; phi(s) = 1 - g0 fixes the segment of s
    phi = torch.where(
        finite, rows.r * rows.p_pre[:, :V] - rows.q_pre[:, :V], torch.full_like(rows.r, float("inf"))
    )
    phi = phi.cummax(-1).values
    target = 1.0 - g0
    n = torch.searchsorted(phi, target.contiguous(), right=True).clamp(1, V)
    s = (target + rows.q_pre.gather(-1, n)) / rows.p_pre.gather(-1, n).clamp_min(1e-300)
    s = torch.minimum(s.clamp_min(0), c)
    return s.masked_fill(g0 >= 1.0 - 1e-12, 0.0)


def position_statistics(
    q_logits, p_logits, y, grid: Grid, *, temperature: float = 1.0, head: int = 256
) -> torch.Tensor:
    """Statistics `STATS` of every point of `grid` at every position: float64 `(positions, points, stats)`.

    `q_logits`, `p_logits`: `(positions, V)` next-token logits of the drafter and the verifier; `y`: the
    reference token at each position. Exact over the full vocabulary (see the module docstring);
    `head` only trades speed against how often a position falls back to `direct_statistics`.
    """
    temperature = float(temperature)
    if not temperature >= 0:
        raise ValueError(f"temperature={temperature} is invalid; use T = 0 (greedy) or T > 0.")
    rows = _Rows(q_logits, p_logits, y, temperature, head)
    blocks = []
    for curve in grid.curves:
        alphas = torch.tensor(grid.alphas[curve], dtype=torch.float64)
        if curve in ("bild", "chow", "diff", "opt") or curve in _ONE_POINT:
            blocks.append(_prefix_points(rows, curve, alphas))
            continue
        if curve.startswith("token"):
            stats, redo = _token_points(rows, curve, alphas)
        else:
            stats, redo = _lossy_points(rows, curve, alphas)
        for i, j in redo.nonzero().tolist():
            stats[i, j] = direct_statistics(
                curve,
                float(alphas[j]),
                rows.q[i],
                rows.p[i],
                int(rows.y[i]),
                q_unscaled=rows.qu[i],
                p_unscaled=rows.pu[i],
            )
        blocks.append(stats)
    return torch.cat(blocks, 1)


def direct_statistics(
    curve: str, alpha: float, q, p, y: int, *, q_unscaled=None, p_unscaled=None
) -> torch.Tensor:
    """`STATS` at one position from the full target of `targets.target_distribution` (the reference)."""
    rule, beta = curve_rule(curve)
    q, p = torch.as_tensor(q).double(), torch.as_tensor(p).double()
    qu = q if q_unscaled is None else torch.as_tensor(q_unscaled).double()
    pu = p if p_unscaled is None else torch.as_tensor(p_unscaled).double()
    if rule == "lossy" and alpha >= 1.0:
        pi, out, w = q, q, torch.tensor(float("nan"), dtype=torch.float64)
    else:
        kw = dict(q_unscaled=qu, p_unscaled=pu)
        pi = targets.target_distribution(rule, q, p, alpha, beta=beta, **kw)
        out = accept_reject.output_distribution(pi, q) if rule == "lossy" else pi
        w = targets.deferral_weight(rule, q, p, alpha, **kw)
    rejection = accept_reject.rejection_probability(pi, q)
    greedy = _greedy_loss(out[None], torch.tensor([y]))[0]
    return torch.stack([rejection, w.double(), 1.0 - out[y], greedy, -torch.log(out[y])])


def oracle_losses(q_logits, p_logits, y, *, temperature: float = 1.0) -> torch.Tensor:
    """Per position `(R_verifier, loss_q, loss_p for each of LOSSES)`: float64 `(positions, 7)`."""
    q, _ = _laws(q_logits, float(temperature))
    p, _ = _laws(p_logits, float(temperature))
    y = torch.as_tensor(y, dtype=torch.long)
    rows = torch.arange(q.shape[0])
    qy, py = q[rows, y], p[rows, y]
    return torch.stack(
        [
            (q - p).clamp_min(0).sum(-1),
            1 - qy,
            1 - py,
            _greedy_loss(q, y),
            _greedy_loss(p, y),
            -torch.log(qy),
            -torch.log(py),
        ],
        -1,
    )


# --------------------------------------------------------------------------------------------
# The oracle envelope
# --------------------------------------------------------------------------------------------


def oracle_envelope(cost, loss_q, loss_p, weights=None, *, order: Optional[np.ndarray] = None):
    r"""The best mean loss of any deferral at each mean rejection rate: breakpoints `(R, L)`.

    Positions are deferred in decreasing order of gain per unit of rejection,
    $(\ell_q - \ell_p) / R_{\rm verifier}$ (Lemma 4's oracle as $\alpha$ falls to 0), only where the gain is
    positive; between breakpoints the envelope is linear (randomised deferral) and after the last one
    flat. `weights` count each position (bootstrap multiplicities); `order` may pass a precomputed
    sort. Evaluate with `np.interp(R_query, R, L)`.
    """
    cost, loss_q, loss_p = (np.asarray(x, dtype=np.float64) for x in (cost, loss_q, loss_p))
    weights = np.ones_like(cost) if weights is None else np.asarray(weights, dtype=np.float64)
    total = weights.sum()
    if total <= 0:
        raise ValueError("the envelope needs at least one position with positive weight.")
    if order is None:
        order = envelope_order(cost, loss_q, loss_p)
    w = weights[order]
    gain = (loss_q - loss_p)[order] * w
    spent = cost[order] * w
    R = np.concatenate([[0.0], np.cumsum(spent)]) / total
    L = (np.sum(loss_q * weights) - np.concatenate([[0.0], np.cumsum(gain)])) / total
    return R, L


def envelope_order(cost, loss_q, loss_p) -> np.ndarray:
    """Positions with a positive gain, best gain per unit of rejection first (ties: cheapest first)."""
    gain = np.asarray(loss_q, dtype=np.float64) - np.asarray(loss_p, dtype=np.float64)
    cost = np.asarray(cost, dtype=np.float64)
    useful = np.flatnonzero(gain > 0)
    with np.errstate(divide="ignore"):
        ratio = np.where(cost[useful] > 0, gain[useful] / np.where(cost[useful] > 0, cost[useful], 1), np.inf)
    return useful[np.lexsort((cost[useful], -ratio))]
