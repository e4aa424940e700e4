"""gamma="auto" learns as it decodes: on toy pairs whose calls cost a known time, the online block costs
converge to the true ones from a wrong calibration, auto drafts where drafting pays and stops where it
does not, keeps probing while it takes plain steps, and its calibration is stored once per pair.

The calls' costs are charged to a fake clock (`time.perf_counter` patched), so the engine measures exactly
the costs injected, whatever else the machine is doing: the decisions are deterministic."""

import dataclasses
import statistics
import time

import pytest

import tutorial_lib as tl
from tutorial_lib.decoding import gamma_policy
from tutorial_lib.decoding.calibration import Calibration
from tutorial_lib.decoding.gamma_policy import AutoGamma
from tutorial_lib.models.toy import ToyModel, ToySession, toy_pair

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: a second thread only adds waiting


class Clock:
    """A clock that moves only when a call is charged to it."""

    now = 0.0

    @classmethod
    def read(cls):
        return cls.now


@pytest.fixture
def fake_clock(monkeypatch):
    monkeypatch.setattr(time, "perf_counter", Clock.read)


class SleepySession(ToySession):
    def _forward(self, tokens, keep):
        Clock.now += self.model.base_s + self.model.per_token_s * len(tokens)
        return super()._forward(tokens, keep)


@dataclasses.dataclass
class SleepyToy(ToyModel):
    """A toy model whose every call sleeps `base_s + per_token_s * k` seconds (k tokens fed)."""

    base_s: float = 0.0
    per_token_s: float = 0.0

    def start(self, prompt_ids):
        return SleepySession(self)


def sleepy_pair(t_q: float, t_p1: float, t_p_per_extra: float):
    drafter, verifier = toy_pair()
    return (
        SleepyToy(drafter.model, name="sleepy-drafter", world=drafter.world, base_s=t_q),
        SleepyToy(
            verifier.model,
            name="sleepy-verifier",
            world=verifier.world,
            base_s=t_p1 - t_p_per_extra,
            per_token_s=t_p_per_extra,
        ),
    )


def run_auto(pair, policy, tokens=60, seed=0):
    """The policy the engine ran (its copy), and the generation."""
    seen = []

    class Spy(type(policy)):
        def fresh(self, **changes):
            copy = super().fresh(**changes)
            seen.append(copy)
            return copy

    spy = Spy(**{f.name: getattr(policy, f.name) for f in dataclasses.fields(policy)})
    g = tl.generate(
        *pair,
        [0],
        method="speculative",
        gamma=spy,
        temperature=1.0,
        max_new_tokens=tokens,
        eos_token_id=(),
        seed=seed,
    )
    return seen[-1], g


def test_online_block_costs_converge_from_a_wrong_calibration(fake_clock):
    # True costs: a drafter step 1 ms, a verifier call 60 ms whatever it scores (an accelerator-like pair).
    pair = sleepy_pair(0.001, 0.060, 0.0)
    wrong = Calibration.synthetic(
        0.060, lambda k: 0.180 * k, max_k=5, note="three times too slow, blocks cost k steps"
    )
    policy, g = run_auto(pair, AutoGamma(wrong, prior_acceptance=0.7, cost_prior_blocks=1.0))
    table = {row["gamma"]: row for row in policy.cost_table()}
    timed = [row for row in table.values() if row["blocks_timed"] >= 5]
    assert timed, table
    for row in timed:  # the estimate follows what was measured, not the calibration
        true = 0.060 + 0.001 * row["gamma"]  # one verifier call, gamma drafter steps
        assert row["measured_mean_s"] == pytest.approx(true, abs=0.0015), (
            row
        )  # (+ the drafter's catch-up call)
        assert row["estimate_s"] == pytest.approx(true, rel=0.1)
        assert abs(row["estimate_s"] - true) < abs(row["calibration_s"] - true) / 10
    # Blocks were cheap, so once it had timed one (the first block also fed the drafter its prompt, so it
    # was not timed) it kept drafting, in long blocks (the calibration alone would have said: never draft).
    assert wrong.best_gamma(0.9) == 0
    second_block = [i for i, gamma in enumerate(g.gammas) if gamma > 0][1]
    assert all(gamma > 0 for gamma in g.gammas[second_block:]), g.gammas
    assert statistics.median(g.gammas[second_block:]) >= 3, g.gammas


def test_auto_stops_drafting_where_drafting_does_not_pay(fake_clock):
    # A drafter as slow as the verifier: no block can beat a plain step.
    pair = sleepy_pair(0.010, 0.010, 0.010)
    calibration = Calibration.synthetic(0.010, lambda k: 0.010 * k, max_k=5)
    policy, g = run_auto(pair, AutoGamma(calibration, prior_acceptance=0.9), tokens=60)
    blocks = [gamma for gamma in g.gammas if gamma > 0]
    assert g.gammas[:8] == [0] * 8  # the calibration says no block can pay: plain steps first
    assert 1 <= len(blocks) <= 4, g.gammas  # then only probes, ever rarer (after 8, 16, 32 plain steps)
    assert policy.block_seconds(1) > 1.5 * policy.block_seconds(0)  # and they measured that blocks cost more


def test_a_plain_run_is_probed_and_costs_nothing_between_probes():
    calibration = Calibration.synthetic(0.01, lambda k: 0.1 + 0.03 * (k - 1), max_k=6)
    policy = AutoGamma(calibration, prior_acceptance=0.8, learn_costs=False)
    assert policy.next_gamma() >= 1  # no evidence yet: it drafts
    policy.observe(2, 20, gamma=policy.gammas[-1])  # the drafts are poor: plain steps now
    choices = []
    for _ in range(60):
        gamma = policy.next_gamma()
        choices.append(gamma)
        policy.observe(0, gamma if gamma else 0, gamma=gamma)
    probes = [i for i, gamma in enumerate(choices) if gamma > 0]
    assert choices[0] == 0 and len(probes) >= 2
    assert probes[1] - probes[0] > FIRST_GAP(probes)  # the gaps between probes grow


def FIRST_GAP(probes):
    return probes[0]


def test_the_quick_calibration_is_stored_and_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("TUTORIAL_LIB_CACHE", str(tmp_path))
    drafter, verifier = tl.load_pair("tiny-random-llama:0", "tiny-random-llama:0")
    drafter.name, verifier.name = "stored-drafter", "stored-verifier"  # stable names: stored on disk
    path = gamma_policy.stored_calibration_path(drafter, verifier)
    assert path is not None and path.parent.parent == tmp_path and not path.exists()
    first = gamma_policy.calibration_for(drafter, verifier)
    assert path.exists() and first.max_k == gamma_policy.QUICK_CALIBRATION["max_k"]
    gamma_policy._CALIBRATIONS.clear()  # a new process: memory is empty, the disk is not
    again = gamma_policy.calibration_for(drafter, verifier)
    assert again.samples == first.samples
    path.write_text("not json")  # a damaged copy is measured again
    gamma_policy._CALIBRATIONS.clear()
    assert gamma_policy.calibration_for(drafter, verifier).max_k == first.max_k
    assert gamma_policy.stored_calibration_path(*toy_pair()) is None  # toy worlds share names: never stored


def test_a_model_on_another_kernel_path_has_its_own_stored_calibration(tmp_path, monkeypatch):
    monkeypatch.setenv("TUTORIAL_LIB_CACHE", str(tmp_path))
    plain = tl.load_pair("tiny-random-llama:0", "tiny-random-llama:0")
    pathed = tl.load_pair(
        "tiny-random-llama:0", "tiny-random-llama:0", kernel_paths=("int8-dynamic", "fp32-packed")
    )
    for drafter, verifier in (plain, pathed):
        drafter.name, verifier.name = "stored-drafter", "stored-verifier"
    where = {gamma_policy.stored_calibration_path(*pair) for pair in (plain, pathed)}
    assert len(where) == 2  # an int8 drafter's costs are not the fp32 drafter's
    assert gamma_policy.calibration_for(*pathed).kernel_paths == {
        "drafter": "int8-dynamic",
        "verifier": "fp32-packed",
    }
