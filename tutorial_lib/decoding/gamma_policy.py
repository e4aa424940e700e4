r"""`gamma="auto"`: each block drafts the number of tokens the block-cost model says is fastest.

Before every block the engine asks `AutoGamma.next_gamma()`. With the machine's measured $t_q$ and
$t_p(k)$ (a `calibration.Calibration`) and the current estimate $\hat a$ of the per-position
acceptance, it returns

$$\gamma^* = \arg\min_{0 \le \gamma \le \gamma_{max}} \bigl(\gamma\, t_q + t_p(\gamma + 1)\bigr)
              \frac{1 - \hat a}{1 - \hat a^{\gamma + 1}}$$

(`Calibration.time_per_token`, with the drafter's catch-up call where it was measured), where $\gamma = 0$ is
one plain step of the verifier: nothing pays, so do not speculate. After the block the engine reports how many
drafts were judged and kept (`observe`). The estimate is the mean of a Beta posterior: a prior acceptance
$a_0$ worth $n_0$ drafts, then the counts,

$$\hat a = \frac{a_0 n_0 + \text{accepted}}{n_0 + \text{judged}},$$

so it starts at $a_0$ and follows the text once more than a few drafts were judged. Decisions are
made at an optimistic reading of that posterior, its `optimism` quantile (0.9 by default;
`optimism=None` decides at the mean): while few drafts were judged the quantile is high, so the
policy drafts and learns $a$; as the counts grow the quantile closes on the mean. Deciding at the
mean alone gets stuck: a prior below the true $a$ can make $\gamma = 0$ look best before any draft
was seen, and a plain step judges no draft, so the estimate never moves (seen on the Qwen pair: prior
0.7, true $a \approx 0.95$, 288 plain steps in a row, 16% slower than $\gamma = 5$).

**Exactness.** The block size is chosen from what was already emitted, never from the drafts the
block is about to judge, so each block still emits tokens with Algorithm 4's law given the prefix
(Leviathan et al.'s argument holds for any block size); a plain verifier step emits from $p$. For
`rule="spec"` every token follows $p$ ($\pi = p$), so the output is the verifier's law, and at
$T = 0$ its greedy text, whatever gammas were chosen. For the other rules a plain step would emit from
$p$ where the rule's target is $\pi$, so `allow_zero=False` (the engine sets it) keeps $\gamma \ge 1$.

**Costs learned as it decodes.** The calibration is a prior, not the truth: the machine's load, the
prompt's length and the engine's own per-block work move the real cost of a block. The engine times
every block it runs (`observe(..., gamma=, seconds=)`; blocks that include a prefill are not timed),
and the policy keeps, per block size, the seconds $s_i$ of the blocks it ran. With the calibration's
block time $B_0(\gamma) = \tau_0(\gamma)\,E[\text{tokens} \mid \gamma]$ it estimates how much slower or faster
this run is than the calibration, $\hat\rho = (w_0 + \sum_i s_i / B_0(\gamma_i)) / (w_0 + n)$, and each block
size's time as

$$\hat B(\gamma) = \frac{w_0\,\hat\rho\,B_0(\gamma) + \sum_{i:\gamma_i = \gamma} s_i}{w_0 + n_\gamma},$$

a block size never run scaled by $\hat\rho$, one run often by its own mean ($w_0$ = `cost_prior_blocks`). Once
blocks of two sizes were timed, the shape $\hat\rho B_0(\gamma)$ gives way to a line
$\hat\alpha + \hat\beta\gamma$ fitted through their mean seconds alone (`cost_line`), so a calibration that
got the *shape* wrong (blocks that cost k steps on a machine where they cost one; a drafter step timed while
another process held the cores) is corrected too: the calibration's own points stay out of the fit, since a
wrong far end would pull any line toward it. Decisions minimise
$\hat B(\gamma) / E[\text{tokens} \mid \hat a, \gamma]$.

**It keeps measuring what it does not choose.** A slope read off two neighbouring sizes is mostly noise, so
once `shape_probe_after` blocks (plain steps included, one block of drafts at least) were timed at sizes
within one of each other, it runs one block two sizes away (the *shape probe*, once per answer) and the
line's slope is measured, not taken from the calibration (`benchmarks/gamma_auto_wrong_calibration.py`
simulates answers on machines the calibration got wrong). It takes a plain step ($\gamma = 0$) only after
`min_judged` drafts were judged (evidence about drafting), unless no acceptance at all could make a
block pay by the current estimates. While it takes plain steps it re-decides only at probes,
after 8, 16, 32, ... plain steps, where it runs one block at the best $\gamma \ge 1$ to measure its
cost and acceptance again; between probes a plain step costs the policy nothing beyond a counter, so
it costs what the verifier alone costs.

A policy reaching 0 stops drafting until its next probe; with the optimistic quantile it reaches 0 only
once the drafts seen make speculation unlikely to pay (or when no acceptance could make it pay, as on a
machine where a block costs much more than one step).

**Stored once.** `calibration_for` measures a quick calibration (a few seconds: $t_q$, $t_p(k)$ for
$k \le 6$, no engine overheads, which the online estimate absorbs) the first time a pair meets
`gamma="auto"`, and stores it in the cache (`calibrations/<key>.json` under `models.files.cache_dir()`),
keyed by both models, their dtypes, the device, the thread count, torch's version, the machine and the
vector units its kernels use, so the next process reuses it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import platform
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import torch

from ..maths import latency
from ..models.files import cache_dir
from .calibration import Calibration, calibrate

__all__ = [
    "AutoGamma",
    "auto_policy",
    "calibration_for",
    "QUICK_CALIBRATION",
    "simulated_answer",
    "stored_calibration_path",
]

#: The quick calibration `gamma="auto"` measures once per pair and machine (seconds on a CPU).
QUICK_CALIBRATION = dict(max_k=6, repeats=2, context_tokens=32, overhead_tokens=0)
#: Plain steps between probes: 8, then twice as many after each probe that chose plain steps again.
FIRST_PROBE = 8


@dataclass
class AutoGamma:
    """The gamma="auto" policy: a calibration, a prior on the acceptance, and the counts so far."""

    calibration: Calibration
    max_gamma: Optional[int] = None  # default: the largest gamma the calibration measured (max_k - 1)
    prior_acceptance: float = 0.7
    prior_strength: float = 4.0  # how many drafts the prior is worth
    allow_zero: bool = True
    #: decide at this quantile of the Beta posterior of the acceptance (None: at its mean)
    optimism: Optional[float] = 0.9
    #: learn block costs from the engine's timings (False: decide on the calibration alone)
    learn_costs: bool = True
    cost_prior_blocks: float = 4.0  # how many blocks the calibration's cost is worth
    #: keep measuring what it does not choose: draft before settling on plain steps, and probe while on them
    explore: bool = True
    min_judged: int = 16  # drafts judged before a plain step is allowed
    shape_probe_after: int = 3  # blocks timed at neighbouring sizes before one block two sizes away
    shape_probed: bool = False
    accepted: int = 0
    judged: int = 0
    #: `(gamma, acceptance estimate)` of every decision, in order.
    decisions: List[Tuple[int, float]] = field(default_factory=list)
    #: per block size: [seconds summed, blocks timed]; and the sum of s_i / B_0(gamma_i) over timed blocks
    timed: Dict[int, List[float]] = field(default_factory=dict)
    ratio_sum: float = 0.0
    plain_run: int = 0  # plain steps since the last block
    next_probe: int = FIRST_PROBE

    def __post_init__(self):
        if not isinstance(self.calibration, Calibration):
            raise TypeError(
                "AutoGamma needs a tutorial_lib.decoding.calibration.Calibration, "
                f"not {type(self.calibration).__name__}; "
                "make one with tl.calibrate(pair) or Calibration.synthetic(...)."
            )
        top = self.calibration.max_k - 1
        if self.max_gamma is None:
            self.max_gamma = top
        if isinstance(self.max_gamma, bool) or not isinstance(self.max_gamma, int) or self.max_gamma < 1:
            raise ValueError(
                f"max_gamma={self.max_gamma!r}: allow blocks of at least one draft (max_gamma >= 1)."
            )
        latency.expected_tokens_per_call(self.prior_acceptance, 1)  # checks 0 <= a0 <= 1
        if not self.prior_strength > 0:
            raise ValueError(
                f"prior_strength={self.prior_strength}: the prior is worth a positive number of drafts."
            )
        if self.optimism is not None and not 0.0 < self.optimism < 1.0:
            raise ValueError(
                f"optimism={self.optimism!r}: pass a quantile strictly between 0 and 1, or None to "
                "decide at the posterior mean."
            )
        if not self.cost_prior_blocks > 0:
            raise ValueError(
                f"cost_prior_blocks={self.cost_prior_blocks}: the calibration is worth a positive "
                "number of blocks."
            )

    @property
    def acceptance(self) -> float:
        """$\\hat a$: the posterior mean of the per-position acceptance."""
        return (self.prior_acceptance * self.prior_strength + self.accepted) / (
            self.prior_strength + self.judged
        )

    @property
    def decision_acceptance(self) -> float:
        """The acceptance decisions use: the posterior's `optimism` quantile, or its mean."""
        if self.optimism is None:
            return self.acceptance
        kept = self.prior_acceptance * self.prior_strength + self.accepted
        lost = (1.0 - self.prior_acceptance) * self.prior_strength + (self.judged - self.accepted)
        if lost <= 0.0:
            return 1.0
        if kept <= 0.0:
            return 0.0
        import scipy.stats  # on first use: it costs every importer of the engine 0.8 s otherwise

        return float(scipy.stats.beta.ppf(self.optimism, kept, lost))

    # ---- costs ----------------------------------------------------------------------------------
    def prior_block_seconds(self, gamma: int, acceptance: float) -> float:
        r"""$B_0(\gamma)$: the calibration's seconds for one block of `gamma` drafts (0: one plain step)."""
        return self.calibration.time_per_token(gamma, acceptance) * latency.expected_tokens_per_call(
            acceptance, gamma
        )

    @property
    def load_factor(self) -> float:
        r"""$\hat\rho$: how much slower (> 1) or faster this run's blocks are than the calibration says."""
        n = sum(count for _, count in self.timed.values())
        return (self.cost_prior_blocks + self.ratio_sum) / (self.cost_prior_blocks + n)

    def cost_line(self) -> Optional[Tuple[float, float]]:
        r"""$(\hat\alpha, \hat\beta)$ of $\hat B(\gamma) \approx \hat\alpha + \hat\beta\gamma$ once blocks of
        two sizes were timed: weighted least squares through the timed sizes' mean seconds (weights: blocks
        timed). None before that."""
        if len(self.timed) < 2:
            return None
        points = [(g, total / n, n) for g, (total, n) in self.timed.items()]
        sw = sum(w for _, _, w in points)
        mx = sum(w * g for g, _, w in points) / sw
        my = sum(w * y for _, y, w in points) / sw
        sxx = sum(w * (g - mx) ** 2 for g, _, w in points)
        slope = sum(w * (g - mx) * (y - my) for g, y, w in points) / sxx if sxx > 0 else 0.0
        return my - slope * mx, slope

    def block_seconds(self, gamma: int, acceptance: Optional[float] = None) -> float:
        r"""$\hat B(\gamma)$: the estimated seconds of one block of `gamma` drafts (see the module
        docstring)."""
        a = self.acceptance if acceptance is None else acceptance
        prior = self.prior_block_seconds(gamma, a)
        if not self.learn_costs:
            return prior
        line = self.cost_line()
        shape = self.load_factor * prior if line is None else max(line[0] + line[1] * gamma, 0.0)
        seconds, count = self.timed.get(gamma, (0.0, 0))
        w0 = self.cost_prior_blocks
        return (w0 * shape + seconds) / (w0 + count)

    def time_per_token(self, gamma: int, acceptance: float) -> float:
        r"""$\hat B(\gamma) / E[\text{tokens} \mid a, \gamma]$: the estimated seconds per emitted token."""
        return self.block_seconds(gamma, acceptance) / latency.expected_tokens_per_call(acceptance, gamma)

    # ---- decisions ------------------------------------------------------------------------------
    def _best(self, a: float, low: int, top: int) -> int:
        costs = [self.time_per_token(g, a) for g in range(low, top + 1)]
        return costs.index(min(costs)) + low

    def _drafting_can_pay(self, top: int) -> bool:
        """Whether some block beats a plain step at all, even if every draft were kept."""
        return min(self.time_per_token(g, 1.0) for g in range(1, top + 1)) < self.time_per_token(0, 1.0)

    def _shape_probe(self, top: int) -> Optional[int]:
        """The size two away from the sizes timed so far, once, when they lie within one of each other."""
        if self.shape_probed or not (self.explore and self.learn_costs) or top < 2:
            return None
        if sum(count for _, count in self.timed.values()) < self.shape_probe_after:
            return None
        low, high = min(self.timed), max(self.timed)
        if high == 0 or high - low >= 2:  # plain steps alone: the probes after 8, 16, ... steps come first
            return None
        self.shape_probed = True
        return high + 2 if high + 2 <= top else max(1, low - 2)

    def next_gamma(self, remaining: Optional[int] = None) -> int:
        """The block size for the next block (0: one plain verifier step), at most `remaining` drafts."""
        top = self.max_gamma if remaining is None else max(1, min(self.max_gamma, int(remaining)))
        last = self.decisions[-1][0] if self.decisions else None
        probe = self._shape_probe(top)
        if probe is not None:
            self.decisions.append((probe, self.decision_acceptance))
            return probe
        if last == 0 and self.plain_run < self.next_probe:  # between probes: a counter, nothing more
            self.decisions.append((0, self.decisions[-1][1]))
            return 0
        a = self.decision_acceptance
        gamma = self._best(a, 0 if self.allow_zero else 1, top)
        if gamma == 0 and self.explore:
            if last == 0:  # a probe: one block, and the next probe later
                gamma, self.next_probe = self._best(a, 1, top), 2 * self.next_probe
            elif self.judged < self.min_judged and self._drafting_can_pay(
                top
            ):  # no evidence about drafting yet
                gamma = self._best(a, 1, top)
        elif gamma > 0 and last != 0:
            self.next_probe = FIRST_PROBE  # drafting pays again: probes start over
        self.decisions.append((gamma, a))
        return gamma

    def observe(
        self, n_accepted: int, n_judged: int, *, gamma: Optional[int] = None, seconds: Optional[float] = None
    ) -> None:
        """After a block: `n_judged` drafts were judged (kept or rejected), `n_accepted` of them kept; the
        engine also passes the block size and the block's seconds (None: not timed, e.g. it held a
        prefill)."""
        if not 0 <= n_accepted <= n_judged:
            raise ValueError(f"observe({n_accepted}, {n_judged}): kept drafts are among the judged ones.")
        self.accepted += int(n_accepted)
        self.judged += int(n_judged)
        if gamma is not None:
            self.plain_run = self.plain_run + 1 if gamma == 0 else 0
        if gamma is None or seconds is None or not self.learn_costs:
            return
        slot = self.timed.setdefault(int(gamma), [0.0, 0])
        slot[0] += float(seconds)
        slot[1] += 1
        self.ratio_sum += float(seconds) / max(self.prior_block_seconds(int(gamma), self.acceptance), 1e-12)

    def cost_table(self, acceptance: Optional[float] = None) -> List[dict]:
        """Per block size: the calibration's block seconds, the blocks timed, the estimate now."""
        a = self.acceptance if acceptance is None else acceptance
        return [
            {
                "gamma": g,
                "calibration_s": self.prior_block_seconds(g, a),
                "blocks_timed": int(self.timed.get(g, (0, 0))[1]),
                "measured_mean_s": (self.timed[g][0] / self.timed[g][1])
                if self.timed.get(g, (0, 0))[1]
                else None,
                "estimate_s": self.block_seconds(g, a),
            }
            for g in range(0, self.max_gamma + 1)
        ]

    @property
    def gammas(self) -> List[int]:
        return [g for g, _ in self.decisions]

    def fresh(self, **changes) -> "AutoGamma":
        """A new policy with the same calibration and prior and no counts (one per `generate` call)."""
        return dataclasses.replace(
            self,
            accepted=0,
            judged=0,
            decisions=[],
            timed={},
            ratio_sum=0.0,
            plain_run=0,
            next_probe=FIRST_PROBE,
            shape_probed=False,
            **changes,
        )


def simulated_answer(
    policy: "AutoGamma",
    t_q: float,
    t_p,
    acceptance: float,
    *,
    tokens: int = 48,
    seed: int = 0,
) -> Tuple[List[int], float]:
    r"""One answer of `tokens` tokens decoded by `policy` (a fresh copy) on a machine whose true costs are
    `t_q` seconds a draft and `t_p(k)` seconds a verifier call of k rows, every draft kept with probability
    `acceptance` (Bernoulli, `seed`); a block of $\gamma$ drafts takes $\gamma t_q + t_p(\gamma + 1)$.
    Returns the block sizes chosen and the seconds the answer took: how the policy fares when its
    calibration is not the machine's (`benchmarks/gamma_auto_wrong_calibration.py`)."""
    import random

    rng, policy = random.Random(seed), policy.fresh()
    emitted, seconds = 0, 0.0
    while emitted < tokens:
        gamma = policy.next_gamma(remaining=tokens - emitted)
        kept = 0
        while kept < gamma and rng.random() < acceptance:
            kept += 1
        block = gamma * t_q + t_p(gamma + 1)
        policy.observe(kept, min(kept + 1, gamma), gamma=gamma, seconds=block)
        emitted, seconds = emitted + kept + 1, seconds + block
    return policy.gammas, seconds


# One calibration per loaded pair (and its devices and dtypes), measured the first time gamma="auto" meets it.
_CALIBRATIONS: dict = {}


def _stable(model) -> bool:
    """A model whose name says what it is (an offline alias, a hub id, a path): its timings can be stored."""
    name = str(getattr(model, "name", ""))
    return (
        not getattr(model, "is_toy", False)
        and bool(name)
        and "~" not in name
        and not name.startswith("tiny-random")
    )


def stored_calibration_path(drafter, verifier) -> Optional[Path]:
    """Where the quick calibration of this pair on this machine is kept (None: models without a stable
    name)."""
    if not (_stable(drafter) and _stable(verifier)):
        return None
    key = {
        "drafter": drafter.name,
        "verifier": verifier.name,
        "dtypes": [str(drafter.dtype), str(verifier.dtype)],
        "devices": [str(drafter.device), str(verifier.device)],
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "machine": f"{platform.machine()} {platform.processor()}".strip(),
        # the vector units torch's kernels use (ATEN_CPU_CAPABILITY can hold them to a narrower class)
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "options": QUICK_CALIBRATION,
    }
    paths = [getattr(drafter, "kernel_path", None), getattr(verifier, "kernel_path", None)]
    if any(paths):  # a model on a kernel path (models.kernel_paths) costs what that path costs
        key["kernel_paths"] = paths
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return cache_dir() / "calibrations" / f"{digest}.json"


def calibration_for(drafter, verifier, *, store: bool = True) -> Calibration:
    """The pair's calibration for gamma="auto": from memory, else from the cache's stored copy, else measured
    once (`calibrate(..., **QUICK_CALIBRATION)`, seconds) and stored (`store=False`: keep it in memory only).

    Kept in memory for as long as both models live, per device and dtype: moving a model measures again.
    """
    key = (
        id(drafter),
        id(verifier),
        str(drafter.device),
        str(verifier.device),
        drafter.dtype,
        verifier.dtype,
        getattr(drafter, "kernel_path", None),
        getattr(verifier, "kernel_path", None),
    )
    held = _CALIBRATIONS.get(key)
    if held is None or held[0]() is not drafter or held[1]() is not verifier:
        for stale in [k for k, (d, v, _) in _CALIBRATIONS.items() if d() is None or v() is None]:
            del _CALIBRATIONS[stale]
        path = stored_calibration_path(drafter, verifier) if store else None
        calibration = None
        if path is not None and path.is_file():
            try:
                calibration = Calibration.load(path)
            except (ValueError, KeyError, TypeError, json.JSONDecodeError):
                calibration = None  # a damaged copy is measured again and replaced
        if calibration is None:
            calibration = calibrate(drafter, verifier, progress=False, **QUICK_CALIBRATION)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                calibration.save(path)
        held = (weakref.ref(drafter), weakref.ref(verifier), calibration)
        _CALIBRATIONS[key] = held
    return held[2]


def auto_policy(gamma, drafter, verifier, *, method: str, rule: Optional[str], bonus: str) -> AutoGamma:
    """What `generate(..., gamma=...)` runs with when gamma is `"auto"` or an `AutoGamma`: a fresh policy.

    `"auto"` uses the pair's calibration (`calibration_for`, measured on first use); an `AutoGamma`
    brings its own calibration and prior. Only `method="speculative"` with the paper's bonus token
    (`bonus="verifier"`, the block the cost model prices) chooses gamma; rules other than `"spec"`
    never take a plain verifier step (gamma >= 1), which would emit from p instead of their target.
    """
    if not (isinstance(gamma, AutoGamma) or (isinstance(gamma, str) and gamma == "auto")):
        raise ValueError(f"gamma={gamma!r}: pass a whole number >= 1, 'auto', or a gamma_policy.AutoGamma.")
    if method != "speculative":
        raise ValueError(
            f"gamma='auto' chooses the block size of method='speculative', not method={method!r}; "
            "pass a whole number gamma."
        )
    if bonus != "verifier":
        raise ValueError(
            f"gamma='auto' prices blocks that end with the verifier's bonus token; use bonus='verifier' "
            f"(not {bonus!r}) or a fixed gamma."
        )
    allow_zero = rule in (None, "spec")
    if isinstance(gamma, AutoGamma):
        return gamma.fresh(allow_zero=gamma.allow_zero and allow_zero)
    return AutoGamma(calibration_for(drafter, verifier), allow_zero=allow_zero)
