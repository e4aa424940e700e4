"""The paper's rules as one table (`maths.rules`): every wing reads the one record, and a rule registered at
run time is, touching no other file, a rule of every wing (targets, both engines, the sweeps, the claims, the
widgets' choices, the figures' legends)."""

import math

import pytest
import torch

import tutorial_lib as tl
from tutorial_lib.decoding.batch import generate_batch
from tutorial_lib.lessons import rejection, tradeoff
from tutorial_lib.maths import rules, targets, token_analysis
from tutorial_lib.stats import analysis, claims
from tutorial_lib.stats.curve_bootstrap import curve_bootstrap
from tutorial_lib.sweeps import configs
from tutorial_lib.sweeps import evaluation as ev
from tutorial_lib.sweeps.configs import Task
from tutorial_lib.views import reruns as rerun_views
from tutorial_lib.views import widgets

pytestmark = pytest.mark.usefixtures("one_thread")

TOY = tl.load_pair("toy-drafter", "toy-verifier")


def token_v4(q, p, alpha, q_unscaled, p_unscaled):
    r"""$A = \{v : p(v) \ge (1 - \alpha)\, q(v)\}$: the drafts the verifier likes nearly as much as the
    drafter (the whole vocabulary at $\alpha = 1$, so the drafter's law there)."""
    return p_unscaled >= (1.0 - alpha) * q_unscaled


def random_laws(n, v, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(2 * torch.randn(n, v, generator=g, dtype=torch.float64), -1)


@pytest.fixture
def registered():
    read_before = (tl.RULES, tl.TOKEN_RULES, tl.ALPHA_RANGES, configs.CURVES, claims.TOKEN_CURVES)
    name = rules.register_rule("token_v4", token_v4, family="token", alpha_range=(0.0, 1.0), label="Token-V4")
    yield name, read_before
    rules.unregister_rule(name)


def test_each_paper_rule_is_one_record_and_the_old_lists_are_its_views():
    assert tuple(tl.RULES) == tuple(rules.RULE_TABLE)
    assert tuple(tl.TOKEN_RULES) == ("token_v1", "token_v2", "token_v3")
    assert tuple(tl.PREFIX_RULES) == ("bild", "chow", "diff", "opt")
    assert tuple(claims.TOKEN_CURVES) == tuple(f"SpecCascade [Token-V{k}]" for k in (1, 2, 3))
    assert tuple(claims.DEFERRAL_CURVES) == ("SpecCascade [Chow]", "SpecCascade [Diff]", "SpecCascade [OPT]")
    assert tl.LIVE_ALPHA_RANGES["opt"] == (-1.0, 1.0) and tl.ALPHA_RANGES["opt"] == (-math.inf, math.inf)
    for record in rules.RULE_TABLE.values():
        if record.curve is not None:
            assert rules.rule_of_curve(record.curve) is record
            assert configs.CURVES[record.curve].get("rule", record.name) == record.name
    # the low end of every live range is SpecDecode's law except Token-V3's (it keeps p's argmax)
    q, p = random_laws(40, 9, 1), random_laws(40, 9, 2)
    for name in ("lossy", "bild", "chow", "diff", "opt", "token_v1", "token_v2", "token_v3", "mixture"):
        low = rules.rule(name).live[0]
        at_low = targets.target_distribution(name, q, p, low)
        assert torch.allclose(at_low, p, atol=1e-12) == rules.has_spec_end(name), name


def test_a_registered_token_rule_is_a_rule_of_every_wing(registered, tmp_path):
    name, read_before = registered
    rules_before, token_before, ranges_before, curves_before, token_curves_before = read_before
    label = "SpecCascade [Token-V4]"
    # 1. names read before the registration show it (live views), the record holds its names
    assert name in rules_before and name in token_before and ranges_before[name] == (0.0, 1.0)
    assert label in curves_before and label in token_curves_before
    assert rules.rule(name).family == "token" and rules.rule(name).curve == label

    # 2. its target is the token family's, from its acceptance set
    q, p = random_laws(30, 8, 3), random_laws(30, 8, 4)
    accept = token_v4(q, p, 0.4, q, p)
    expected = q * accept + (1 - (q * accept).sum(-1, keepdim=True)) * p
    torch.testing.assert_close(targets.target_distribution(name, q, p, 0.4), expected)
    torch.testing.assert_close(targets.acceptance_set(name, q, p, 0.4), accept)
    with pytest.raises(ValueError, match="outside"):
        targets.target_distribution(name, q, p, 1.5)

    # 3. both engines decode with it: at alpha = 1 it accepts every draft, so greedy gives the drafter's text
    prompts = [[0, 1], [2], [1, 3, 0]]
    for prompt in prompts:
        g = tl.generate(*TOY, prompt, method="speculative", rule=name, alpha=1.0, gamma=3, max_new_tokens=6)
        drafter = tl.generate(*TOY, prompt, method="drafter", max_new_tokens=6)
        assert g.tokens == drafter.tokens and g.rejection_rate == 0.0
    verifier = tl.models.tiny_random_llama(0)
    pair = tl.models.ModelPair(tl.models.perturbed(verifier, 0.3, seed=1), verifier)
    options = dict(rule=name, alpha=0.3, temperature=0.0, max_new_tokens=8, eos_token_id=())
    batched = generate_batch(*pair, [[3, 5, 7, 2, 1], [4, 4, 9, 1], [7]], **options)
    for seed, (prompt, g) in enumerate(zip([[3, 5, 7, 2, 1], [4, 4, 9, 1], [7]], batched)):
        alone = tl.generate(*pair, prompt, method="speculative", gamma=1, bonus="none", seed=seed, **options)
        assert g.tokens == alone.tokens and g.n_rejected == alone.n_rejected
    assert sum(g.n_rejected for g in batched) > 0

    # 4. the sweeps lay its curve over its alpha grid and run it
    sweep = configs.sweep_configs(["Drafter", "Verifier", "SpecDecode", label], temperatures=[1.0], n_alpha=3)
    assert sorted(c.alpha for c in sweep if c.label == label) == [0.0, 0.5, 1.0]
    examples = [
        {"id": str(i), "prompt": text, "references": ["x"]} for i, text in enumerate(["mi", "ka", "su"])
    ]
    task = Task(name="t", metric="qa_em", examples=examples, max_new_tokens=4)
    rows = ev.run_sweep(TOY, [task], sweep, name="token-v4", root=tmp_path, progress=False)
    assert set(rows.loc[rows["label"] == label, "rule"]) == {name}

    # 5. the claims' curves hold it
    boots = curve_bootstrap(rows, [task], cost="rejection_rate", n_resamples=20)
    assert any(curve[0] == label for boot in boots for curve in boot.curves)

    # 6. the widgets offer it
    assert (rules.rule(name).label, name) in widgets.rule_choices()
    assert "Token-V4" in tradeoff.TRADEOFF_METHODS and ("Token-V4", name, 1.0) in rejection.VARIANTS
    assert rejection.alpha_span(name) == (0.0, 1.0)

    # 7. the figures draw it in its family's panel, named in the legend
    assert label in rerun_views.FAMILIES["token-specific rules"]
    summary = analysis.summarize(rows, latency="wall_time_s", tasks=[task])
    fig = rerun_views.family_figure(summary, task="t", temperature=1.0, x="rejection_rate")
    legend = [text.get_text() for ax in fig.axes if ax.get_legend() for text in ax.get_legend().get_texts()]
    legend += [line.get_label() for ax in fig.axes for line in ax.get_lines()]
    assert any(label in text for text in legend), legend
    assert token_analysis.curve_rule(name) == (name, 1.0)


def test_registration_refuses_what_would_confuse_the_table():
    with pytest.raises(ValueError, match="one of the paper's rules"):
        rules.register_rule("token_v3", token_v4, family="token")
    with pytest.raises(ValueError, match="family='lossy'"):
        rules.register_rule("lossy_two", token_v4, family="lossy")
    with pytest.raises(ValueError, match="already has the label"):
        rules.register_rule("copy", token_v4, family="token", label="Token-V3")
    with pytest.raises(ValueError, match="was not registered"):
        rules.unregister_rule("chow")
    with pytest.raises(ValueError, match="no rule draws the curve"):
        rules.rule_of_curve("SpecCascade [Nope]")
    assert "copy" not in tl.RULES
