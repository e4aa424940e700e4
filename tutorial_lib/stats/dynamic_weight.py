r"""DIVERSED's dynamic weight (`DynamicWeight`, `train_dynamic_weight`, `dynamic_curves`), trained on notebook
08's exact per-position data as the learned deferral rule (`learned_deferral`) is.

DIVERSED (Wang,
Kasa et al., "DIVERSED: Relaxed Speculative Decoding via Dynamic Ensemble Verification", AISTATS 2026, arXiv
2604.07622) verifies drafts against an ensemble $\nu_t = w_t\,p_t + (1 - w_t)\,q_t$ of the two laws. Its
static form, a constant $w$, is transformers' `assistant_ensemble_weight` (the package's `rule="mixture"` at
$\alpha = 1 - w$); its dynamic form learns a context-dependent $w_t$. For either, Algorithm 4 with the target
$\nu_t$ is exact (each emitted token follows $\nu_t$) and rejects a draft with probability $w_t\,D_{TV}(p_t,
q_t)$ (Lemma 3), because $w_t$ is fixed from the two laws before the draft is checked.

**Our dynamic weight** (ours, not the authors' code or training): $w_t = \sigma(f_\theta(\phi_t))$,
a small perceptron of the seven decoding-time features $\phi_t$ of `maths.deferral_features` (the learned
deferral rule's), trained on notebook 08's exact per-position data of the training answers by minimising the
token-level form of DIVERSED's objective, the task loss plus an acceptance regulariser:
$$J_\lambda(\theta) = \frac{1}{N}\sum_t \big[\ell_q(t) + w_t\,(\ell_p(t) - \ell_q(t))\big]
  + \lambda\,\frac{1}{N}\sum_t w_t\,D_{TV}(p_t, q_t),$$
the ensemble's expected 0-1 loss against the reference (linear in $w_t$: the oracle's columns) plus
$\lambda$ times its rejection probability. The authors train their weight with sequence-level reinforcement
learning on the task's reward plus an acceptance term; this is the same trade-off at the token level, where
notebook 08's data gives every term exactly. One perceptron per $\lambda$ of a grid (`DynamicWeight`);
larger $\lambda$ leans on the drafter. As a rule (`DynamicWeight.register`, through
`rules.register_rule(..., family="weight")`), `alpha` is $\lambda$ and the weight interpolates the two
perceptrons whose $\lambda$ enclose it.

`dynamic_curves` adds its held-out curve (the grid's $\lambda$ plus the two ends $w \equiv 1$, SpecDecode,
and $w \equiv 0$, the drafter) beside the learned deferral rule's and the constant mixture's, for
`paired_differences` on the expected 0-1 loss (exact for fractional weights; the greedy 0-1
and log-loss columns of a fractional weight are interpolations, see `curves_on_items`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Sequence, Tuple

import numpy as np
import torch

from ..maths import deferral_features as df
from ..maths import rules
from . import token_curves as tc
from .deferral_passes import FeatureSet
from .learned_deferral import LOSS_COLUMNS, LearnedRule, curves_on_items, learned_curves

__all__ = ["DynamicWeight", "train_dynamic_weight", "dynamic_curves", "feature_rows"]


def feature_rows(analysis: tc.TokenAnalysis, features: FeatureSet, item_ids: Sequence[str]) -> np.ndarray:
    """Rows of `features` for every position of `item_ids`, in the analysis' position order (the order of
    `learned_curves`); an item without features is an error."""
    index = [analysis.item_ids.index(i) for i in item_ids]
    positions = np.flatnonzero(np.isin(analysis.position_item, index))
    row_of = {int(at): k for k, at in enumerate(features.positions)}
    rows = np.array([row_of.get(int(at), -1) for at in positions])
    if (rows < 0).any():
        raise ValueError(
            "the features do not cover every position of these items; pick ids from "
            "features.item_ids (or recompute them with deferral_passes.feature_pass)."
        )
    return rows


def _perceptron(n_in: int, hidden: Tuple[int, ...]) -> torch.nn.Sequential:
    layers, width = [], n_in
    for size in hidden:
        layers += [torch.nn.Linear(width, size), torch.nn.Tanh()]
        width = size
    layers.append(torch.nn.Linear(width, 1))
    return torch.nn.Sequential(*layers).double()


@dataclass
class DynamicWeight:
    """Perceptrons of the weight $w = \\sigma(f(\\phi))$, one per $\\lambda$ of `lambdas` (increasing)."""

    lambdas: Tuple[float, ...]
    nets: List[torch.nn.Sequential]
    mean: np.ndarray  # the training features' mean and standard deviation (standardisation)
    std: np.ndarray
    loss: str
    train_items: List[str]
    n_train_positions: int
    settings: Dict = field(default_factory=dict)

    def weights(self, feature_rows) -> np.ndarray:
        """$w$ of every perceptron for rows of `deferral_features` `(N, F)`: shape `(N, len(lambdas))`."""
        rows = np.asarray(feature_rows, dtype=np.float64)
        if rows.ndim != 2 or rows.shape[1] != len(df.FEATURES):
            raise ValueError(
                f"feature_rows has shape {rows.shape}; pass (N, {len(df.FEATURES)}) rows of "
                f"deferral_features ({', '.join(df.FEATURES)})."
            )
        x = torch.as_tensor((rows - self.mean) / self.std)
        with torch.no_grad():
            return torch.cat([torch.sigmoid(net(x)) for net in self.nets], 1).numpy()

    def weight_at(self, feature_rows, lam: float) -> np.ndarray:
        """$w$ at `lam`: linear between the two perceptrons whose $\\lambda$ enclose it (the ends outside)."""
        all_w = self.weights(feature_rows)
        lams = np.asarray(self.lambdas)
        k = int(np.clip(np.searchsorted(lams, lam) - 1, 0, len(lams) - 2))
        t = float(np.clip((lam - lams[k]) / (lams[k + 1] - lams[k]), 0.0, 1.0))
        return (1 - t) * all_w[:, k] + t * all_w[:, k + 1]

    def weight(self, q, p, alpha, q_unscaled, p_unscaled) -> torch.Tensor:
        """The rule's weight on $p$ at `alpha` $= \\lambda$, from the temperature-1 laws' features: the
        signature `rules.register_rule(..., family="weight")` asks for."""
        rows = df.deferral_features(q_unscaled, p_unscaled)
        shape = rows.shape[:-1]
        w = self.weight_at(rows.reshape(-1, rows.shape[-1]).numpy(), float(alpha))
        return torch.as_tensor(w).reshape(shape)

    def register(self, name: str = "diversed", label: str = "DIVERSED") -> str:
        """Make the dynamic ensemble usable by name wherever a rule is (`alpha` in the trained $\\lambda$
        range); returns `name`."""
        span = (self.lambdas[0], self.lambdas[-1])
        return rules.register_rule(name, self.weight, family="weight", alpha_range=span, label=label)


def train_dynamic_weight(
    analysis: tc.TokenAnalysis,
    features: FeatureSet,
    train_ids: Sequence[str],
    *,
    held_out_ids: Sequence[str] = (),
    loss: str = "expected_01",
    hidden: Tuple[int, ...] = (16,),
    n_lambdas: int = 13,
    steps: int = 300,
    seed: int = 0,
) -> DynamicWeight:
    """Fit one perceptron per $\\lambda$ on the positions of `train_ids` only, minimising $J_\\lambda$ (module
    docstring) by full-batch Adam. The $\\lambda$ grid: quantiles 2% .. 98% of the exact ratio
    $(\\ell_q - \\ell_p) / D_{TV}$ over the training positions (where the best weight switches)."""
    if loss not in LOSS_COLUMNS:
        raise ValueError(f"loss={loss!r}: choose one of {', '.join(LOSS_COLUMNS)}.")
    overlap = sorted(set(train_ids) & set(held_out_ids))
    if overlap:
        raise ValueError(f"train_ids and held_out_ids share {overlap[:3]}; split by item (split_items).")
    if n_lambdas < 2:
        raise ValueError(
            f"n_lambdas={n_lambdas}: the weight needs at least two values of lambda to interpolate."
        )
    rows = feature_rows(analysis, features, train_ids)
    oracle = analysis.oracle[features.positions[rows]]
    qc, pc = LOSS_COLUMNS[loss]
    gain, tv = oracle[:, qc] - oracle[:, pc], oracle[:, 0]
    x = features.features[rows]
    mean, std = x.mean(0), x.std(0) + 1e-12
    live = tv > 0
    ratio = gain[live] / tv[live]
    lambdas = tuple(float(v) for v in np.unique(np.quantile(ratio, np.linspace(0.02, 0.98, n_lambdas))))
    inputs = torch.as_tensor((x - mean) / std)
    # in units of the mean D_TV, so that the gradient's size (and the weight decay's share) is the pair's own
    scale = float(tv.mean()) or 1.0
    gain_t, tv_t = torch.as_tensor(gain / scale), torch.as_tensor(tv / scale)
    nets = []
    with torch.random.fork_rng(devices=[]):
        for k, lam in enumerate(lambdas):
            torch.manual_seed(seed + k)
            net = _perceptron(x.shape[1], tuple(hidden))
            optimiser = torch.optim.Adam(net.parameters(), lr=0.03, weight_decay=1e-3)
            for _ in range(steps):
                optimiser.zero_grad()
                w = torch.sigmoid(net(inputs)).squeeze(1)
                # J_lambda without its constant mean(l_q): the loss the weight removes, plus lambda x
                # rejection
                objective = (w * (lam * tv_t - gain_t)).mean()
                objective.backward()
                optimiser.step()
            nets.append(net.eval())
    return DynamicWeight(
        lambdas,
        nets,
        mean,
        std,
        loss,
        sorted(train_ids),
        int(len(rows)),
        dict(hidden=list(hidden), steps=steps, seed=seed, n_lambdas=n_lambdas, features=list(df.FEATURES)),
    )


def dynamic_curves(
    analysis: tc.TokenAnalysis,
    features: FeatureSet,
    rule: LearnedRule,
    dynamic: DynamicWeight,
    item_ids: Sequence[str],
    *,
    name: str = "diversed",
) -> tc.TokenAnalysis:
    """The held-out items `item_ids` with the learned deferral rule's and the constant mixture's curves
    (`learned_curves`) and the dynamic weight's, `name`: one point per trained $\\lambda$
    plus the ends $w \\equiv 1$ and $w \\equiv 0$ (labelled one below and one above the grid)."""
    leaked = sorted(set(item_ids) & set(dynamic.train_items))
    if leaked:
        raise ValueError(
            f"item_ids {leaked[:3]} were used to train the weight; evaluate on held-out items only."
        )
    base = learned_curves(analysis, features, rule, item_ids)
    w = dynamic.weights(features.features[feature_rows(analysis, features, item_ids)])  # (N, L)
    ends = np.ones((len(w), 1)), np.zeros((len(w), 1))
    lams = dynamic.lambdas
    alphas = (lams[0] - 1.0, *lams, lams[-1] + 1.0)
    weights = np.concatenate([ends[0], w, ends[1]], 1)
    return curves_on_items(
        base, list(item_ids), {name: (alphas, weights)}, dict(dynamic_weight=dynamic.settings)
    )
