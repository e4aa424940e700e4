r"""A learned deferral rule (the paper's future work), trained on notebook 08's exact per-position data.

Lemma 4's optimal speculative cascade defers at a position when
$$\mathbb{E}[\ell(y, q_t)] - \mathbb{E}[\ell(y, p_t)] > \alpha\, D_{TV}(p_t, q_t).$$
OPT plugs in $\max p_t - \max q_t$ for the gain on the left (the 0-1 loss' plug-in). The learned rule
plugs in a regression instead: a small multi-layer perceptron (scikit-learn's `MLPRegressor` behind a
`StandardScaler`) maps the decoding-time features of `maths.deferral_features` to the gain that
deferring brought on the training references, $g_t = \ell_q - \ell_p$ (for the expected 0-1 loss,
$g_t = p_t(y_t) - q_t(y_t)$). Squared error makes the regression an estimate of
$\mathbb{E}[g \mid \text{features}]$, so the rule
$$\delta_t = 1\big(\hat g(\text{features}_t) > \alpha\, D_{TV}(p_t, q_t)\big), \qquad
\pi_t = (1 - \delta_t)\,q_t + \delta_t\,p_t$$
is Lemma 4's rule with a learned gain, and sweeping $\alpha$ ranks positions by estimated gain per
unit of rejection, as the oracle envelope ranks them by the true one.

Items, never positions, are split: `split_items` holds out whole answers, `train_rule` refuses a
held-out item and records the items it saw. `learned_curves` builds the held-out items' curves of
the learned rule and of the constant mixture (both mixtures, so each position's statistics follow
from the oracle's columns: rejection $\delta D_{TV}$, loss $\ell_q + \delta(\ell_p - \ell_q)$) beside
the committed curves of every other rule, as a `TokenAnalysis` that `token_curves.summarise` reads;
`paired_differences` bootstraps, over held-out items, the learned rule's area above the envelope
and its loss at matched rejection rates minus each other rule's (`scipy.stats.bootstrap`, paired:
both curves recomputed on the same resampled items).

DIVERSED's dynamic weight, the other learner on the same data, is `dynamic_weight`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
from scipy import stats as scipy_stats

from ..maths import deferral_features as df
from ..maths import rules
from ..maths import token_analysis as ta
from . import token_curves as tc
from .deferral_passes import FeatureSet

__all__ = [
    "QWEN_ANALYSIS",
    "LOSS_COLUMNS",
    "split_items",
    "LearnedRule",
    "train_rule",
    "learned_alphas",
    "learned_curves",
    "paired_differences",
    "mixture_curves",
    "curves_on_items",
]

#: Notebook 08's committed results for its `qwen` profile (Qwen2.5-Coder 0.5B -> 1.5B, all 162 offline items,
#: gold answers, T = 1), under `data/results/`: what the learned rule trains and is evaluated on.
QWEN_ANALYSIS = "token-analysis-4368c63a9810"

#: The oracle's per-position columns `(loss under q, loss under p)` of each loss (`TokenAnalysis.oracle`).
LOSS_COLUMNS = {"expected_01": (1, 2), "greedy_01": (3, 4), "log_loss": (5, 6)}


def split_items(features: FeatureSet, held_out: float = 0.5, seed: int = 0) -> Tuple[List[str], List[str]]:
    """`(train_ids, held_out_ids)`: each task's items shuffled (seeded) and cut, `held_out` of them held out
    (at least one item of each task on each side)."""
    if not 0.0 < held_out < 1.0:
        raise ValueError(
            f"held_out={held_out}: pass the fraction of items to hold out, strictly between 0 and 1."
        )
    rng = np.random.default_rng(seed)
    train, test = [], []
    for task in dict.fromkeys(features.tasks):
        members = [i for i, t in zip(features.item_ids, features.tasks) if t == task]
        if len(members) < 2:
            raise ValueError(
                f"task {task!r} has {len(members)} item(s) with features; a split needs 2 or more."
            )
        members = list(rng.permutation(members))
        n_test = min(max(1, round(held_out * len(members))), len(members) - 1)
        test += members[:n_test]
        train += members[n_test:]
    return sorted(train), sorted(test)


def _rows(analysis: tc.TokenAnalysis, features: FeatureSet, item_ids: Sequence[str]) -> np.ndarray:
    """The rows of `features` that belong to `item_ids`."""
    wanted = {analysis.item_ids.index(i) for i in item_ids}
    owner = analysis.position_item[features.positions]
    return np.flatnonzero(np.isin(owner, sorted(wanted)))


@dataclass
class LearnedRule:
    """A fitted gain regression and the decision it makes (see the module docstring)."""

    model: object  # a fitted scikit-learn regressor on `FEATURES`
    loss: str
    train_items: List[str]
    n_train_positions: int
    settings: Dict = field(default_factory=dict)

    def gain(self, feature_rows) -> np.ndarray:
        """The estimated gain of deferring, $\\hat g$, for rows of `deferral_features` (shape `(N, F)`)."""
        rows = np.asarray(feature_rows, dtype=np.float64)
        if rows.ndim != 2 or rows.shape[1] != len(df.FEATURES):
            raise ValueError(
                f"feature_rows has shape {rows.shape}; pass (N, {len(df.FEATURES)}) rows of "
                f"deferral_features ({', '.join(df.FEATURES)})."
            )
        return self.model.predict(rows)

    def decide(self, q, p, alpha, q_unscaled, p_unscaled) -> torch.Tensor:
        r"""$\delta = 1(\hat g > \alpha D_{TV}(p, q))$: features from the temperature-1 laws, the TV term from
        the sampled ones (as OPT's). The signature `rules.register_rule` asks for."""
        rows = df.deferral_features(q_unscaled, p_unscaled)
        shape = rows.shape[:-1]
        gain = torch.as_tensor(self.gain(rows.reshape(-1, rows.shape[-1]).numpy())).reshape(shape)
        tv = (p.double() - q.double()).clamp_min(0).sum(-1)
        return gain > alpha * tv

    def register(self, name: str = "learned", label: str = "Learned") -> str:
        """Make the rule usable by name everywhere a rule is (`rules.register_rule`); returns `name`."""
        return rules.register_rule(name, self.decide, label=label)


def train_rule(
    analysis: tc.TokenAnalysis,
    features: FeatureSet,
    train_ids: Sequence[str],
    *,
    held_out_ids: Sequence[str] = (),
    loss: str = "expected_01",
    hidden: Tuple[int, ...] = (16,),
    seed: int = 0,
) -> LearnedRule:
    """Fit the gain regression on the positions of `train_ids` only.

    `held_out_ids`: the items kept for evaluation; an overlap with `train_ids` is an error, so a held-out
    answer can never reach the fit. `hidden`: the perceptron's hidden layer sizes.
    """
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if loss not in LOSS_COLUMNS:
        raise ValueError(f"loss={loss!r}: choose one of {', '.join(LOSS_COLUMNS)}.")
    overlap = sorted(set(train_ids) & set(held_out_ids))
    if overlap:
        raise ValueError(f"train_ids and held_out_ids share {overlap[:3]}; split by item (split_items).")
    unknown = sorted(set(train_ids) - set(features.item_ids))
    if unknown:
        raise ValueError(f"train_ids {unknown[:3]} have no features; pick ids from features.item_ids.")
    rows = _rows(analysis, features, train_ids)
    qc, pc = LOSS_COLUMNS[loss]
    oracle = analysis.oracle[features.positions[rows]]
    gain = oracle[:, qc] - oracle[:, pc]
    model = make_pipeline(
        StandardScaler(),
        MLPRegressor(
            hidden_layer_sizes=tuple(hidden),
            alpha=1e-3,
            max_iter=2000,
            early_stopping=False,
            random_state=seed,
        ),
    )
    model.fit(features.features[rows], gain)
    return LearnedRule(
        model,
        loss,
        sorted(train_ids),
        int(len(rows)),
        dict(hidden=list(hidden), seed=seed, features=list(df.FEATURES)),
    )


def learned_alphas(
    rule: LearnedRule, analysis: tc.TokenAnalysis, features: FeatureSet, n_alpha: int = 41
) -> tuple:
    r"""`n_alpha` values of $\alpha$ for the learned rule's curve, at quantiles of $\hat g / D_{TV}$ over its
    training positions (where the decisions change), plus one below and one above every ratio (the
    verifier and drafter ends)."""
    if n_alpha < 3:
        raise ValueError(f"n_alpha={n_alpha}: the learned curve needs its two ends and a point between.")
    rows = _rows(analysis, features, rule.train_items)
    tv = analysis.oracle[features.positions[rows], 0]
    live = tv > 0
    ratio = rule.gain(features.features[rows][live]) / tv[live]
    inner = np.quantile(ratio, np.linspace(0.0, 1.0, n_alpha - 2))
    span = max(1.0, float(np.abs(ratio).max()))
    return tuple(float(a) for a in np.unique(np.concatenate([[-2 * span], inner, [2 * span]])))


def _curve_sums(oracle: np.ndarray, owner: np.ndarray, n_items: int, decisions: np.ndarray) -> np.ndarray:
    r"""Per-item sums `(I, A, STATS)` of a mixture whose weight at position n and point a is
    `decisions[n, a]`: rejection $r D_{TV}$, deferral $r$, each loss $\ell_q + r(\ell_p - \ell_q)$."""
    stats = [decisions * oracle[:, :1], decisions]
    for loss in ("expected_01", "greedy_01", "log_loss"):
        qc, pc = LOSS_COLUMNS[loss]
        stats.append(oracle[:, qc, None] + decisions * (oracle[:, pc] - oracle[:, qc])[:, None])
    sums = np.zeros((n_items, decisions.shape[1], len(ta.STATS)))
    np.add.at(sums, owner, np.stack(stats, -1))
    return sums


def _restricted(
    analysis: tc.TokenAnalysis, item_ids: Sequence[str], curves: Dict[str, tuple], settings: dict
):
    """The items `item_ids` of `analysis` with more curves: name -> (alphas, decisions `(N, A)` over the
    items' positions in the analysis' order)."""
    index = [analysis.item_ids.index(i) for i in item_ids]
    positions = np.flatnonzero(np.isin(analysis.position_item, index))
    renumber = np.full(len(analysis.item_ids), -1)
    renumber[index] = np.arange(len(index))
    owner = renumber[analysis.position_item[positions]]
    oracle = analysis.oracle[positions]
    sums = [analysis.sums[index]] + [_curve_sums(oracle, owner, len(index), d) for _, d in curves.values()]
    grid = ta.Grid(
        {
            **analysis.grid.alphas,
            **{name: tuple(float(a) for a in alphas) for name, (alphas, _) in curves.items()},
        }
    )
    return tc.TokenAnalysis(
        grid,
        list(item_ids),
        [analysis.tasks[i] for i in index],
        analysis.counts[index],
        np.concatenate(sums, 1),
        oracle,
        owner.astype(np.int32),
        settings=dict(analysis.settings, **settings),
    )


def curves_on_items(
    analysis: tc.TokenAnalysis,
    item_ids: Sequence[str],
    curves: Dict[str, tuple],
    settings: Optional[dict] = None,
) -> tc.TokenAnalysis:
    r"""The items `item_ids` of `analysis` with more curves of mixtures: name -> (alphas, weights on $p$ of
    shape `(N, A)` over the items' positions in the analysis' order), each point's statistics from the
    oracle's columns (rejection $r D_{TV}$, loss $\ell_q + r(\ell_p - \ell_q)$). For weights strictly between
    0 and 1 only the rejection, the deferral and the expected 0-1 loss are the target's own (linear in $r$);
    the greedy 0-1 and log-loss columns are then the interpolations of the two models' (for the log loss an
    upper bound)."""
    return _restricted(analysis, item_ids, curves, settings or {})


def mixture_curves(
    analysis: tc.TokenAnalysis,
    item_ids: Optional[Sequence[str]] = None,
    alphas: Sequence[float] = tuple(np.linspace(0.0, 1.0, 11)),
) -> tc.TokenAnalysis:
    r"""The items `item_ids` (default all) of `analysis` with the constant mixture's curve `mixture`
    (weight $1 - \alpha$ at every position: transformers' ensemble): a straight line from the drafter
    to the verifier, against which every deferral rule's gain is measured."""
    item_ids = list(analysis.item_ids if item_ids is None else item_ids)
    n = int(np.isin(analysis.position_item, [analysis.item_ids.index(i) for i in item_ids]).sum())
    weights = np.broadcast_to(1.0 - np.asarray(alphas, dtype=np.float64), (n, len(alphas)))
    return _restricted(analysis, item_ids, {"mixture": (alphas, weights)}, {})


def learned_curves(
    analysis: tc.TokenAnalysis,
    features: FeatureSet,
    rule: LearnedRule,
    item_ids: Sequence[str],
    *,
    alphas: Optional[Sequence[float]] = None,
    name: str = "learned",
    mixture_alphas: Sequence[float] = tuple(np.linspace(0.0, 1.0, 11)),
) -> tc.TokenAnalysis:
    r"""The items `item_ids` of `analysis` with two more curves: `name` (the learned rule at `alphas`,
    default `learned_alphas`) and `mixture` (the constant weight $1 - \alpha$ at `mixture_alphas`).

    Every item needs features, and none may have been used in training. A `TokenAnalysis` (no folder)
    that `token_curves.summarise` and `paired_differences` read.
    """
    leaked = sorted(set(item_ids) & set(rule.train_items))
    if leaked:
        raise ValueError(
            f"item_ids {leaked[:3]} were used to train the rule; evaluate on held-out items only."
        )
    missing = sorted(set(item_ids) - set(features.item_ids))
    if missing:
        raise ValueError(f"item_ids {missing[:3]} have no features; pick ids from features.item_ids.")
    alphas = learned_alphas(rule, analysis, features) if alphas is None else tuple(float(a) for a in alphas)
    index = [analysis.item_ids.index(i) for i in item_ids]
    positions = np.flatnonzero(np.isin(analysis.position_item, index))
    row_of = {int(at): k for k, at in enumerate(features.positions)}
    rows = np.array([row_of.get(int(at), -1) for at in positions])
    if (rows < 0).any():
        raise ValueError(
            "the features do not cover every position of these items; recompute them with feature_pass."
        )
    tv = analysis.oracle[positions, 0]
    gain = rule.gain(features.features[rows])
    learned = np.stack([gain > a * tv for a in alphas], 1).astype(np.float64)
    mixture = np.broadcast_to(
        1.0 - np.asarray(mixture_alphas, dtype=np.float64), (len(positions), len(mixture_alphas))
    )
    return _restricted(
        analysis,
        item_ids,
        {name: (alphas, learned), "mixture": (mixture_alphas, mixture)},
        dict(learned=rule.settings, held_out=list(item_ids)),
    )


def _curve_numbers(
    result: tc.TokenAnalysis, curves: Sequence[str], loss: str, rates: np.ndarray, n_grid: int
):
    """A function of resampled item indices: per curve, its area above the envelope and its loss at
    `rates`."""
    column, rejection = ta.STATS.index(loss), ta.STATS.index("rejection")
    qc, pc = LOSS_COLUMNS[loss]
    oracle, owner = result.oracle, result.position_item
    order = ta.envelope_order(oracle[:, 0], oracle[:, qc], oracle[:, pc])

    def statistic(idx):
        idx = np.asarray(idx, dtype=np.int64)
        means = result.sums[idx].sum(0) / result.counts[idx].sum()
        weights = np.bincount(idx, minlength=len(result.item_ids))[owner].astype(np.float64)
        R, L = ta.oracle_envelope(oracle[:, 0], oracle[:, qc], oracle[:, pc], weights, order=order)
        out = []
        for curve in curves:
            block = means[result.grid.slice(curve)]
            rej, val = block[:, rejection], block[:, column]
            sort = np.argsort(rej, kind="stable")
            axis = np.linspace(0.0, rej.max(), n_grid)
            gap = np.interp(axis, rej[sort], val[sort]) - np.interp(axis, R, L)
            inside = (rates >= rej.min() - 1e-12) & (rates <= rej.max() + 1e-12)
            at_rates = np.where(inside, np.interp(rates, rej[sort], val[sort]), np.nan)
            out.append(np.concatenate([[np.trapezoid(gap, axis) if rej.max() > 0 else 0.0], at_rates]))
        return np.stack(out)  # (curves, 1 + rates)

    return statistic


def paired_differences(
    result: tc.TokenAnalysis,
    against: Sequence[str],
    *,
    reference: str = "learned",
    loss: str = "expected_01",
    rates: Sequence[float] = (0.1, 0.2, 0.3),
    n_resamples: int = 1000,
    confidence: float = 0.95,
    n_grid: int = 201,
    seed: int = 0,
) -> List[dict]:
    """Per rule of `against`: the `reference` curve's (default the learned rule's) area above the envelope
    and loss at each of `rates` minus the rule's, with paired percentile bootstrap intervals over
    `result`'s items (negative: the reference is better). A rate beyond either curve's reach is NaN."""
    if loss not in LOSS_COLUMNS:
        raise ValueError(f"loss={loss!r}: choose one of {', '.join(LOSS_COLUMNS)}.")
    unknown = [
        c for c in (reference, *against) if c not in result.grid.alphas or len(result.grid.alphas[c]) < 2
    ]
    if unknown:
        raise ValueError(
            f"curves {unknown} are not curves of this result; choose from "
            f"{', '.join(c for c, a in result.grid.alphas.items() if len(a) > 1)}."
        )
    rates = np.asarray(rates, dtype=np.float64)
    numbers = _curve_numbers(result, (reference, *against), loss, rates, n_grid)

    def difference(idx):
        values = numbers(idx)
        return (values[:1] - values[1:]).ravel()  # (against x (1 + rates),)

    point = difference(np.arange(len(result.item_ids)))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        boot = scipy_stats.bootstrap(
            (np.arange(len(result.item_ids)),),
            difference,
            vectorized=False,
            n_resamples=n_resamples,
            confidence_level=confidence,
            method="percentile",
            random_state=np.random.default_rng(seed),
        )
    shape = (len(against), 1 + len(rates))
    point, low, high = (
        x.reshape(shape) for x in (point, boot.confidence_interval.low, boot.confidence_interval.high)
    )
    rows = []
    for k, other in enumerate(against):
        row = {"rule": other, "area": (point[k, 0], low[k, 0], high[k, 0])}
        row.update(
            {
                f"loss at R={r:g}": (point[k, 1 + j], low[k, 1 + j], high[k, 1 + j])
                for j, r in enumerate(rates)
            }
        )
        rows.append(row)
    return rows
