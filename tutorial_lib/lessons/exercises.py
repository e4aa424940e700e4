"""The notebooks' exercises: each one's question, how its answer is computed, and a hint about the idea.

A notebook's check cell passes the objects the exercise is about (the example pair, the curves, the
calibration) to `tl.lessons.notebook.check("03-2", answer_2, ...)`; the expected value is computed here from
them, so no notebook cell holds an answer. A teacher sees it with `tl.lessons.notebook.solution("03-2", ...)`
(the same objects), which also prints how it is computed.

Each `Exercise` names the objects it needs (`needs`), its kind (a number, a whole number, one of a
few words, or a pair of a method name and a number), how it is solved (`solve`), a hint that points at
the idea rather than the number (`hint`), and the way to the answer in words (`explain`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Tuple

import torch

from ..maths import latency, targets
from ..maths import laws
from ..maths import accept_reject
from ..toy import examples as toy_examples
from . import deferral_risks, lossy

__all__ = ["Exercise", "EXERCISES", "KINDS", "VERDICTS", "exercise", "verdict_of_interval", "crossing_of"]

#: What an answer may be: a number (within `tol`), a whole number, a word of `choices`, or a pair
#: (method name, number) whose number is checked against that method's row.
KINDS = ("number", "integer", "choice", "method_and_number")
#: The verdicts a claim's 95% interval can give (as the claims tables write them).
VERDICTS = ("holds", "does not hold", "not resolved")


@dataclass(frozen=True)
class Exercise:
    id: str
    question: str
    needs: Tuple[str, ...]
    solve: Callable[..., Any]
    hint: str
    explain: str
    kind: str = "number"
    tol: float = 1e-6
    choices: Tuple[str, ...] = field(default_factory=tuple)


def _q_p_example() -> Tuple[torch.Tensor, torch.Tensor]:
    """Notebook 04's hand example: q = (0.6, 0.3, 0.1), p = (0.2, 0.5, 0.3)."""
    return (
        torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64),
        torch.tensor([0.2, 0.5, 0.3], dtype=torch.float64),
    )


def _tradeoff_best(summary) -> float:
    reachable = [
        s["best_loss_within_verifier_latency"]
        for s in summary.values()
        if s["best_loss_within_verifier_latency"] is not None
    ]
    return min(reachable)


def _as_float(value) -> float:
    """A table cell as a float: "not reached" and blanks become NaN."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def verdict_of_interval(low: float, high: float) -> str:
    """What a 95% interval of a difference says: above 0 holds, at or below 0 does not, else unresolved."""
    low, high = _as_float(low), _as_float(high)
    if low > 0:
        return "holds"
    if high <= 0:
        return "does not hold"
    return "not resolved"


def _claim_verdict(claims_table, row: int = 0) -> str:
    entry = claims_table.iloc[int(row)]
    return verdict_of_interval(entry["low"], entry["high"])


def _best_reducer(table, temperature: float, gamma: int):
    rows = table[(table["temperature"] == temperature) & (table["gamma"] == gamma)]
    reductions = rows["reduction_at_verifier_quality"].map(_as_float)
    reached = reductions.dropna()
    return None if reached.empty else rows.loc[reached.idxmax(), "method"]


def crossing_of(table, method: str, **where) -> Any:
    """The cost at which `method`'s curve first reaches the verifier's quality, `1 - reduction`, in the
    rows of `table` matching `where` (column = value); "not reached" where it never does."""
    rows = table[table["method"] == method]
    for column, value in where.items():
        rows = rows[rows[column] == value]
    if rows.empty:
        known = sorted(table["method"].unique())
        raise ValueError(
            f"method={method!r}: no row of the table for it here; pick one of {', '.join(known)}."
        )
    reduction = _as_float(rows.iloc[0]["reduction_at_verifier_quality"])
    return "not reached" if math.isnan(reduction) else 1.0 - reduction


_LIST = [
    # --- 00 quick start ---------------------------------------------------------------------------
    Exercise(
        "00-1",
        "OPT's rejection probability in the blind-spot context, from Lemma 3",
        ("q", "p", "alpha"),
        lambda q, p, alpha: float(
            accept_reject.rejection_probability(targets.target_distribution("opt", q, p, alpha), q)
        ),
        "Lemma 3: a deferral rule rejects with probability delta * D_TV(p, q), where delta (0 or 1) is the "
        "rule's own decision (`tl.deferral_decision`).",
        "delta = deferral_decision('opt', q, p, alpha), times tv_distance(p, q).",
    ),
    Exercise(
        "00-2",
        "Chow's alpha with the lowest loss on the grid",
        ("curves", "n_alpha"),
        lambda curves, n_alpha: float(
            targets.alpha_grid("chow", n_alpha)[int(torch.tensor(curves["Chow"]["loss"]).argmin())]
        ),
        "The curve's points follow the alpha grid in order: find the position of the smallest loss, then "
        "read the grid at that position.",
        "alpha_grid('chow', n_alpha)[argmin of curves['Chow']['loss']].",
        tol=1e-9,
    ),
    # --- 01 target distributions -----------------------------------------------------------------
    Exercise(
        "01-1",
        "smallest alpha at which Chow keeps the drafter (unsure drafter)",
        ("examples",),
        lambda examples: 1.0 - float(examples["unsure drafter, confident verifier"].q.max()),
        "Chow defers when max q < 1 - alpha; the smallest alpha that stops it makes the two sides equal.",
        "alpha = 1 - max q of the example.",
    ),
    Exercise(
        "01-2",
        "Diff's rejection probability at alpha = -0.6 (confident drafter)",
        ("examples",),
        lambda examples: (
            float(
                targets.deferral_decision(
                    "diff",
                    examples["confident drafter, unsure verifier"].q,
                    examples["confident drafter, unsure verifier"].p,
                    -0.6,
                )
            )
            * float(
                laws.tv_distance(
                    examples["confident drafter, unsure verifier"].p,
                    examples["confident drafter, unsure verifier"].q,
                )
            )
        ),
        "First decide: does max q < max p - alpha hold? Then Lemma 3: the rejection probability is "
        "delta times D_TV(p, q).",
        "delta = 1(max q < max p + 0.6), times tv_distance(p, q).",
    ),
    Exercise(
        "01-3",
        "tokens per verifier call at rejection 0.3 and gamma = 4",
        (),
        lambda: latency.expected_tokens_per_call(0.7, 4),
        "The acceptance is a = 1 - 0.3; a block emits the accepted drafts plus one token from the verifier: "
        "(1 - a^(gamma + 1)) / (1 - a).",
        "expected_tokens_per_call(0.7, 4).",
    ),
    # --- 02 rejection rates ----------------------------------------------------------------------
    Exercise(
        "02-1",
        "rejection of 0.3 q + 0.7 p in the verifier blind spot",
        ("examples",),
        lambda examples: (
            0.7
            * float(laws.tv_distance(examples["verifier blind spot"].p, examples["verifier blind spot"].q))
        ),
        "Lemma 3 with the mixture weight r of p: rho = r * D_TV(p, q).",
        "0.7 * tv_distance(p, q).",
    ),
    Exercise(
        "02-2",
        "Token-V3 at alpha = 0 above SpecDecode, over the toy world",
        ("curves",),
        lambda curves: curves["curves"]["Token-V3"]["rejection"][0] - curves["spec"],
        "The first point of each curve is its low end (alpha = 0 for Token-V3); SpecDecode's rate is "
        "`curves['spec']`.",
        "curves['curves']['Token-V3']['rejection'][0] - curves['spec'].",
    ),
    Exercise(
        "02-3",
        "drafts for a standard error of 0.001 at rho = 0.5",
        (),
        lambda: 0.5 * 0.5 / 0.001**2,
        "The standard error is sqrt(rho (1 - rho) / n): solve it for n.",
        "n = rho (1 - rho) / se^2.",
        tol=1.0,
    ),
    # --- 03 Lemma 1 ------------------------------------------------------------------------------
    Exercise(
        "03-1",
        "Lemma 1's switch point alpha* in the worked context (0-1 loss)",
        ("world", "context"),
        lambda world, context: deferral_risks.context_risks(world, context, "zero_one", 1)["optimal_switch"],
        "The 0-1 loss of a model is 1 - P(its argmax); alpha* is the drafter's expected loss minus the "
        "verifier's.",
        "context_risks(world, context, 'zero_one', 1)['optimal_switch'].",
    ),
    Exercise(
        "03-2",
        "Diff plug-in's excess per-token risk at this run's alpha",
        ("world", "loss", "alpha"),
        lambda world, loss, alpha: (lambda r: r["Diff plug-in"][0] - r["optimal (Lemma 1)"][0])(
            deferral_risks.total_risks(world, 1, loss, [alpha])["risk"]
        ),
        "Sum the risks over contexts at one alpha (the printed per-token risks) and compare the plug-in with "
        "the optimal rule.",
        "total_risks(world, 1, loss, [alpha]): Diff plug-in minus optimal (Lemma 1).",
    ),
    Exercise(
        "03-3",
        "drafter sharpness with Chow's smallest mean excess risk",
        ("sweep",),
        lambda sweep: min(sweep["drafter"], key=lambda s: sweep["drafter"][s]["Chow plug-in"]),
        "Look only at the drafter's rows of `sweep` and at Chow's column; "
        "the answer is a sharpness, not a risk.",
        "the key of sweep['drafter'] whose 'Chow plug-in' is smallest.",
        tol=1e-9,
    ),
    # --- 04 Lemma 2 ------------------------------------------------------------------------------
    Exercise(
        "04-1",
        "lossy acceptance of drafted token 0",
        (),
        lambda: float(lossy.tran_thien_acceptance(*_q_p_example(), 0.5)[0]),
        "A drafted token is kept with probability min{1, p(x) / ((1 - alpha) q(x))}.",
        "min(1, 0.2 / (0.5 * 0.6)).",
    ),
    Exercise(
        "04-2",
        "the normalising beta",
        (),
        lambda: float(targets.lossy_beta(*_q_p_example(), 0.5)),
        "Only tokens where s p(v) beats min{q(v), 2 p(v)} take s p(v): "
        "try which tokens those are and solve the sum = 1 for s, then beta = 1 / s.",
        "tl.lossy_beta(q, p, 0.5).",
    ),
    Exercise(
        "04-3",
        "D_TV(emitted law, p) of the lossy target",
        (),
        lambda: float(
            laws.tv_distance(
                accept_reject.output_distribution(
                    targets.target_distribution("lossy", *_q_p_example(), 0.5, beta=1.0), _q_p_example()[0]
                ),
                _q_p_example()[1],
            )
        ),
        "The emitted law of Algorithm 4 is its target normalised (`tl.output_distribution(pi, q)`); beta "
        "changes only the residual's scale.",
        "tv_distance(output_distribution(lossy target, q), p).",
    ),
    # --- 05 Lemma 4 ------------------------------------------------------------------------------
    Exercise(
        "05-1",
        "Lemma 4's switch point in the most visited context",
        ("world",),
        lambda world: deferral_risks.context_risks(
            world, toy_examples.context_options(world)[0][1], "zero_one", 4
        )["optimal_switch"],
        "Lemma 1's switch point divided by D_TV(p_t, q_t): a deferral costs only when the models disagree.",
        "context_risks(world, top context, 'zero_one', 4)['optimal_switch'].",
    ),
    Exercise(
        "05-2",
        "SpecDecode's latency per token",
        ("tradeoff", "gamma", "cost_ratio"),
        lambda tradeoff, gamma, cost_ratio: (
            (gamma * cost_ratio + 1) / tradeoff["curves"]["SpecDecode"]["tokens_per_call"][0]
        ),
        "A block costs gamma drafter steps of c verifier calls each plus one verifier call; "
        "divide by the tokens it emits.",
        "(gamma c + 1) / tokens per call.",
    ),
    Exercise(
        "05-3",
        "lowest loss at latency <= 1",
        ("summary",),
        _tradeoff_best,
        "Each method's row of `summary` has its best loss within the verifier's latency; take the smallest "
        "over the methods that have one.",
        "min of summary[m]['best_loss_within_verifier_latency'].",
    ),
    # --- 06 T5 -----------------------------------------------------------------------------------
    Exercise(
        "06-1",
        "the method with the largest latency reduction at T = 0",
        ("table", "temperature", "gamma"),
        _best_reducer,
        "Read the column reduction_at_verifier_quality at the coldest temperature and the main gamma; "
        "'not reached' rows do not count.",
        "the method with the largest reduction_at_verifier_quality.",
        kind="choice",
    ),
    Exercise(
        "06-2",
        "what the first claim's interval says",
        ("claims_table",),
        _claim_verdict,
        "An interval of a difference that lies wholly above 0 supports the claim, one at or below 0 refutes "
        "it; one that holds 0 leaves it open.",
        "low > 0: holds; high <= 0: does not hold; else not resolved.",
        kind="choice",
        choices=VERDICTS,
    ),
    Exercise(
        "06-3",
        "where a method's curve crosses the verifier's quality (latency)",
        ("table", "temperature", "gamma"),
        lambda table, temperature, gamma, method: crossing_of(
            table, method, temperature=temperature, gamma=gamma
        ),
        "reduction_at_verifier_quality is 1 - L*, "
        "where L* is the latency at which the curve first reaches the verifier's quality.",
        "1 - reduction_at_verifier_quality of that method's row.",
        kind="method_and_number",
    ),
    # --- 07 Gemma --------------------------------------------------------------------------------
    Exercise(
        "07-1",
        "where a method's curve crosses the verifier's quality (rejection rate)",
        ("table", "task", "temperature"),
        lambda table, task, temperature, method: crossing_of(
            table, method, task=task, temperature=temperature
        ),
        "reduction_at_verifier_quality is 1 - r*, where r* is the rejection rate at which the curve first "
        "reaches the verifier's quality.",
        "1 - reduction_at_verifier_quality of that method's row.",
        kind="method_and_number",
    ),
    # --- 08 the Qwen pair token by token -------------------------------------------------------------
    Exercise(
        "08-1",
        "SpecDecode's mean rejection probability per token",
        ("result",),
        lambda result: float(result.oracle[:, 0].mean()),
        "Lemma 3 with r = 1: SpecDecode rejects with probability D_TV(p_t, q_t) at each position; average "
        "over every token (not over answers).",
        "result.oracle[:, 0].mean().",
    ),
    Exercise(
        "08-2",
        "loss a perfect deferral saves over OPT at the first matched rate",
        ("summaries",),
        lambda summaries: float(
            summaries["all"]["expected_01"]["curves"]["opt"]["at_rates"]["mean"][0]
            - summaries["all"]["expected_01"]["oracle_at_rates"]["mean"][0]
        ),
        "Both numbers are losses at the same rejection rate: the rule's minus the envelope's.",
        "OPT's at_rates mean [0] minus oracle_at_rates mean [0] of summaries['all']['expected_01'].",
    ),
    # --- 09 speed ------------------------------------------------------------------------------------
    Exercise(
        "09-1",
        "predicted speed-up of gamma = 3 at the measured acceptance",
        ("calibration", "acceptance"),
        lambda calibration, acceptance: calibration.speedup(3, acceptance),
        "Tokens per block (1 - a^(gamma+1)) / (1 - a), over the block's cost (gamma t_q + t_p(gamma + 1)) "
        "in units of t_p(1).",
        "calibration.speedup(3, acceptance).",
    ),
    Exercise(
        "09-2",
        "tokens a gamma = 3 block must emit to break even",
        ("calibration",),
        lambda calibration: (3 * calibration.t_q() + calibration.t_p(4)) / calibration.t_p(1),
        "Break even: the block's time equals that many single verifier steps of t_p(1) each.",
        "(3 t_q + t_p(4)) / t_p(1).",
    ),
    Exercise(
        "09-3",
        "the block-cost model's best gamma at a = 0.95",
        ("calibration",),
        lambda calibration: calibration.best_gamma(0.95),
        "`calibration.best_gamma(a)` compares the predicted speed-up of every block size.",
        "calibration.best_gamma(0.95).",
        kind="integer",
        tol=0,
    ),
    Exercise(
        "10-1",
        "the Token-V3 alpha of vLLM's relax_ratio = 0.6",
        (),
        lambda: 1.0 - 0.6,
        "Token-V3 keeps a draft when p(x) >= (1 - alpha) max p; relaxed acceptance keeps it when "
        "p(x) >= relax_ratio max p.",
        "alpha = 1 - relax_ratio.",
    ),
    Exercise(
        "10-2",
        "rejection rate of ensemble weight 0.3 where D_TV = 0.4",
        (),
        lambda: 0.3 * 0.4,
        "The ensemble verifies against w p + (1 - w) q, a mixture with constant deferral weight w: "
        "Lemma 3 gives its rejection rate.",
        "w * D_TV(p, q) (Lemma 3 with r = w).",
    ),
]

EXERCISES: Dict[str, Exercise] = {e.id: e for e in _LIST}


def exercise(exercise_id: str) -> Exercise:
    """The exercise `exercise_id` ("03-2": notebook 03, exercise 2)."""
    if exercise_id not in EXERCISES:
        raise ValueError(
            f"exercise_id={exercise_id!r} is not an exercise; pass one of {', '.join(EXERCISES)}."
        )
    return EXERCISES[exercise_id]
