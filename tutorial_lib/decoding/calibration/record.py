"""`Calibration`: the measured seconds of each call kind, the prices and the block-cost model on them, and
their JSON; the names its kinds are stored under (`CALL_KINDS`, `rule_key`, `target_kind`)."""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from ...checks import check_whole_number
from ...maths import latency

__all__ = ["Calibration", "CALL_KINDS", "rule_key", "target_kind"]

CALL_KINDS = (
    "drafter_step",
    "drafter_k2",
    "verifier",
    "prefill_drafter",
    "prefill_verifier",
    "encoder_drafter",
    "encoder_verifier",
    "overhead",
    "overhead_block",
)


def verifier_key(k: int) -> str:
    return f"verifier_k{k}"


def rule_key(rule: str, beta=1.0) -> str:
    """The name a rule's block cost is stored under: the rule, or `lossy*` for lossy SpecDecode with
    the normalising beta (Lossy*: its target solves for beta at every position)."""
    return "lossy*" if rule == "lossy" and str(beta) == "normalize" else str(rule)


def target_kind(rule: str, gamma: int, beta=1.0) -> str:
    """The calibration kind of `rule`'s block cost at block size `gamma`."""
    return f"target_{rule_key(rule, beta)}@g{int(gamma)}"


@dataclass
class Calibration:
    """Measured seconds per call of each kind (`samples[kind]`: one value per recorded round)."""

    samples: Dict[str, List[float]]
    drafter: str = "drafter"
    verifier: str = "verifier"
    device: str = "cpu"
    dtypes: Dict[str, str] = field(default_factory=dict)
    threads: int = 1
    context_tokens: int = 0
    repeats: int = 0
    machine: str = ""
    torch_version: str = ""
    note: str = ""
    read_bandwidth: float = 0.0
    weight_bytes: Dict[str, int] = field(default_factory=dict)
    kernel_paths: Dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        if "drafter_step" not in self.samples or verifier_key(1) not in self.samples:
            raise ValueError("a calibration needs at least `drafter_step` and `verifier_k1` samples.")
        for kind, values in self.samples.items():
            if not values or not all(math.isfinite(v) and v >= 0 for v in values):
                raise ValueError(f"samples[{kind!r}] must be a non-empty list of finite times >= 0.")

    # ---- the numbers ------------------------------------------------------------------------
    def median(self, kind: str) -> float:
        if kind not in self.samples:
            raise KeyError(f"no {kind!r} in this calibration; it holds {sorted(self.samples)}.")
        return statistics.median(self.samples[kind])

    @property
    def max_k(self) -> int:
        """The largest k whose $t_p(k)$ was measured (so `best_gamma` looks up to gamma = max_k - 1)."""
        k = 1
        while verifier_key(k + 1) in self.samples:
            k += 1
        return k

    @property
    def overhead_s(self) -> float:
        """The engine's fixed cost per model call (0 if it was not measured)."""
        return self.median("overhead") if "overhead" in self.samples else 0.0

    @property
    def block_overhead_s(self) -> float:
        """The engine's cost per speculative block beyond its calls' (0 if it was not measured), as
        measured with SpecDecode's rule; `block_overhead_for` prices another rule's block."""
        return self.median("overhead_block") if "overhead_block" in self.samples else 0.0

    @property
    def rule_blocks(self) -> Dict[str, List[int]]:
        """The rules (`rule_key`) whose block costs were measured, each with its gammas."""
        out: Dict[str, List[int]] = {}
        for kind in self.samples:
            if kind.startswith("target_"):
                rule, _, gamma = kind[len("target_") :].rpartition("@g")
                out.setdefault(rule, []).append(int(gamma))
        return {rule: sorted(gammas) for rule, gammas in out.items()}

    def block_overhead_for(self, rule: str, gamma: int, beta=1.0) -> float:
        """The engine's cost per speculative block of `rule` at block size `gamma` beyond its calls:
        `overhead_block` (measured with SpecDecode at gamma = `max_k` - 1) with SpecDecode's target
        and verification there replaced by this rule's at `gamma` (the docstring of `calibration`). Without an
        `overhead_block` it is 0; a calibration that has one but not this rule's block cost is refused
        (it would price the rule as SpecDecode)."""
        if "overhead_block" not in self.samples:
            return 0.0
        key, reference = target_kind(rule, gamma, beta), target_kind("spec", self.max_k - 1)
        missing = [k for k in (key, reference) if k not in self.samples]
        if missing:
            raise ValueError(
                f"this calibration has no block cost {' or '.join(missing)} (it has "
                f"{self.rule_blocks or 'none'}), so rule {rule!r} at gamma={gamma} would be priced as "
                "SpecDecode; add them with calibration.rule_block_costs(calibration, rules, vocab_size)."
            )
        return max(self.block_overhead_s - self.median(reference) + self.median(key), 0.0)

    def t_q(self, with_overhead: bool = True) -> float:
        """$t_q$: one drafter step, seconds (plus the engine's per-call overhead unless told not to)."""
        return self.median("drafter_step") + (self.overhead_s if with_overhead else 0.0)

    def t_p(self, k: int, with_overhead: bool = True) -> float:
        """$t_p(k)$: one verifier call scoring k tokens; beyond the measured k, the straight line
        through the last two measured points (a compute-bound verifier grows about linearly)."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k={k!r}: a verifier call scores a whole number k >= 1 of tokens.")
        top = self.max_k
        if k <= top:
            seconds = self.median(verifier_key(k))
        else:
            last, before = self.median(verifier_key(top)), self.median(verifier_key(max(top - 1, 1)))
            seconds = last + (k - top) * max(last - before, 0.0)
        return seconds + (self.overhead_s if with_overhead else 0.0)

    def t_q2(self, with_overhead: bool = True) -> Optional[float]:
        r"""$t_q^{(2)}$: the drafter fed two tokens (None if not measured: the model then takes
        $\Delta_q = 0$)."""
        if "drafter_k2" not in self.samples:
            return None
        return self.median("drafter_k2") + (self.overhead_s if with_overhead else 0.0)

    def bound_s(self, role: str) -> float:
        """The least a call of `role` ("drafter" or "verifier") can take: its weights' bytes over the read
        bandwidth (nan where either was not measured)."""
        if role not in ("drafter", "verifier"):
            raise ValueError(f"role={role!r}: choose 'drafter' or 'verifier'.")
        size = self.weight_bytes.get(role, 0)
        return size / self.read_bandwidth if size and self.read_bandwidth > 0 else math.nan

    def call_over_bound(self, role: str) -> float:
        """A one-token call of `role` (no engine overhead) as a multiple of its bound."""
        seconds = self.median("drafter_step") if role == "drafter" else self.median(verifier_key(1))
        return seconds / self.bound_s(role)

    @property
    def cost_ratio(self) -> float:
        """$c = t_q / t_p(1)$, the textbook's drafter/verifier cost ratio."""
        return self.t_q() / self.t_p(1)

    def price(self, kind: str, k: int = 1) -> float:
        """Seconds for one call of `kind` (one of `CALL_KINDS`; `verifier` scores `k` tokens), no overhead."""
        if kind not in CALL_KINDS:
            raise ValueError(f"kind={kind!r} is unknown; choose one of {', '.join(CALL_KINDS)}.")
        if kind == "verifier":
            return self.t_p(k, with_overhead=False)
        if kind == "overhead":
            return self.overhead_s
        if kind == "overhead_block":
            return self.block_overhead_s
        if kind.startswith("encoder") and kind not in self.samples:
            return 0.0  # decoder-only models have no encoder pass
        return self.median(kind)

    # ---- the block-cost model on these numbers ----------------------------------------------
    def time_per_token(self, gamma: int, acceptance: float) -> float:
        r"""$\tau(\gamma)$ of `latency.block_time_per_token` with this machine's $t_q$, $t_p(k)$ (overhead
        included)."""
        return latency.block_time_per_token(gamma, acceptance, self.t_q(), self.t_p, self.t_q2())

    def speedup(self, gamma: int, acceptance: float) -> float:
        """Predicted speed-up of gamma over plain verifier decoding, $t_p(1) / \\tau(\\gamma)$."""
        return latency.predicted_speedup(gamma, acceptance, self.t_q(), self.t_p, self.t_q2())

    def best_gamma(self, acceptance: float, max_gamma: Optional[int] = None) -> int:
        """The block size the model says is fastest at acceptance `acceptance` (0: do not speculate)."""
        return latency.best_gamma(
            acceptance, self.t_q(), self.t_p, self.max_k - 1 if max_gamma is None else max_gamma, self.t_q2()
        )

    def prefill_fit(self, kind: str) -> Tuple[float, float]:
        """`(intercept, slope)` of a prefill or encoder pass's seconds against the prompt length: the
        least-squares line through every round at every length measured (`context_tokens` and
        `prefill_lengths`), with the slope held at >= 0 (a longer prompt never costs less: a
        negative least-squares slope, which only noise between close lengths gives, becomes the flat
        line at the mean). One length measured: the flat line at its median."""
        points = [(self.context_tokens, v) for v in self.samples[kind]]
        points += [
            (int(key.rpartition("@")[2]), v)
            for key in self.samples
            if key.startswith(kind + "@")
            for v in self.samples[key]
        ]
        lengths = np.array([p[0] for p in points], float)
        seconds = np.array([p[1] for p in points], float)
        if np.ptp(lengths) == 0:
            return self.median(kind), 0.0
        slope, intercept = np.polyfit(lengths, seconds, 1)
        if slope < 0:
            return float(seconds.mean()), 0.0
        return float(intercept), float(slope)

    def prefill_time(self, kind: str, n_tokens: Optional[int] = None) -> float:
        """Seconds of a prefill or encoder pass (`kind` such as `"prefill_verifier"`) on a prompt of
        `n_tokens`, from `prefill_fit` (monotone in the length); the median at `context_tokens` where
        `n_tokens` is None."""
        if n_tokens is None:
            return self.median(kind)
        intercept, slope = self.prefill_fit(kind)
        return max(intercept + slope * n_tokens, 0.0)

    def accelerator(self) -> "Calibration":
        """The same machine if every call cost its model's one-token step: $t_p(k) = t_p(1)$,
        $t_q(k) = t_q(1)$, prefills and encoder passes one step of their model; the overhead unchanged
        (the regime of an accelerator, where a call is bound by reading the weights)."""
        samples = {kind: list(values) for kind, values in self.samples.items()}
        one = {"drafter": list(self.samples["drafter_step"]), "verifier": list(self.samples["verifier_k1"])}
        for kind in samples:
            if kind.startswith("verifier_k"):
                samples[kind] = one["verifier"]
            elif kind == "drafter_k2":
                samples[kind] = one["drafter"]
            elif kind.startswith(("prefill_", "encoder_")):
                samples[kind] = one[kind.split("_", 1)[1].partition("@")[0]]
        return Calibration(
            **{
                **self.to_dict(),
                "samples": samples,
                "note": "accelerator pricing: every call costs one step of its model",
            }
        )

    def textbook(self) -> "Calibration":
        """The same machine if scoring k tokens cost one step: $t_p(k) = t_p(1)$ for every measured k
        (and the drafter fed two tokens costs one step)."""
        samples = {kind: list(v) for kind, v in self.samples.items()}
        if "drafter_k2" in samples:
            samples["drafter_k2"] = list(self.samples["drafter_step"])
        for k in range(2, self.max_k + 1):
            samples[verifier_key(k)] = list(self.samples[verifier_key(1)])
        return Calibration(
            **{**asdict(self), "samples": samples, "note": "t_p(k) = t_p(1) (textbook pricing)"}
        )

    # ---- reading and storing ----------------------------------------------------------------
    def table(self):
        """One row per call kind: median, quartiles, rounds, and the time relative to $t_p(1)$."""
        import pandas as pd

        rows, reference = [], self.median(verifier_key(1))
        bounds = {"drafter_step": self.bound_s("drafter"), "drafter_k2": self.bound_s("drafter")}
        for kind, values in self.samples.items():
            k = int(kind[len("verifier_k") :]) if kind.startswith("verifier_k") else None
            q1, _, q3 = (
                statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else (values[0],) * 3
            )
            bound = self.bound_s("verifier") if k else bounds.get(kind, math.nan)
            rows.append(
                {
                    "kind": "verifier" if k else kind,
                    "k": k,
                    "median_s": statistics.median(values),
                    "q25_s": q1,
                    "q75_s": q3,
                    "n": len(values),
                    "vs_t_p(1)": statistics.median(values) / reference if reference > 0 else math.nan,
                    "vs_bound": statistics.median(values) / bound if bound > 0 else math.nan,
                }
            )
        return pd.DataFrame(rows).astype({"k": "Int64"})

    def to_dict(self) -> dict:
        return asdict(self)

    def save(self, path: Union[str, Path]) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=1))
        return path

    @classmethod
    def from_dict(cls, data: Mapping) -> "Calibration":
        return cls(**dict(data))

    @classmethod
    def load(cls, path: Union[str, Path]) -> "Calibration":
        return cls.from_dict(json.loads(Path(path).read_text()))

    @classmethod
    def synthetic(
        cls,
        t_q: float,
        t_p: Union[Sequence[float], Callable[[int], float]],
        *,
        max_k: int = 8,
        overhead: float = 0.0,
        others: Optional[Mapping[str, float]] = None,
        note: str = "synthetic",
    ) -> "Calibration":
        """A calibration from chosen numbers: `t_p` is a function of k or the list $t_p(1), t_p(2), \\dots$;
        `others` gives the seconds of other kinds (`drafter_k2`, `prefill_verifier`, `encoder_drafter`,
        `target_<rule>@g<gamma>`, ...)."""
        cost = latency.verifier_cost(t_p)
        if not callable(t_p):
            max_k = len(t_p)
        else:
            max_k = check_whole_number(max_k, "max_k", 1)
        others = dict(others or {})
        unknown = [
            kind
            for kind in others
            if (kind not in CALL_KINDS and not kind.startswith("target_"))
            or kind in ("verifier", "drafter_step", "overhead")
        ]
        if unknown:
            raise ValueError(
                f"others={unknown}: give t_q, t_p and overhead as arguments, other kinds from "
                f"{', '.join(k for k in CALL_KINDS if k not in ('verifier', 'drafter_step', 'overhead'))}."
            )
        samples = {
            "drafter_step": [float(t_q)],
            "overhead": [float(overhead)],
            **{verifier_key(k): [cost(k)] for k in range(1, max_k + 1)},
            **{kind: [float(seconds)] for kind, seconds in others.items()},
        }
        return cls(samples, drafter="synthetic q", verifier="synthetic p", note=note)
