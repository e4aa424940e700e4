"""Paired statistics: corpus BLEU through sacrebleu's statistics, paired bootstrap intervals, pairing
rules."""

import numpy as np
import pandas as pd
import pytest
import sacrebleu

from tutorial_lib.sweeps.configs import Task
from tutorial_lib.tasks import metrics
from tutorial_lib.stats import paired
from sweep_rows import config_rows

HYPOTHESES = [
    "the cat sat on the mat",
    "a dog runs in the park today",
    "hello there my friend",
    "it is raining again in the city",
    "we ate bread and cheese for lunch",
]
REFERENCES = [
    ["the cat sat on a mat", "there is a cat on the mat"],
    "a dog is running in the park today",
    ["hello my friend", "hi there friend"],
    "it rains again in the city",
    ["we had bread and cheese for lunch", "for lunch we ate bread and cheese", "bread and cheese"],
]


def _streams(references):
    width = max(len(r) if isinstance(r, list) else 1 for r in references)
    items = [r if isinstance(r, list) else [r] for r in references]
    return [[r[k] if k < len(r) else None for r in items] for k in range(width)]


def test_corpus_bleu_from_statistics_equals_sacrebleu():
    expected = sacrebleu.corpus_bleu(HYPOTHESES, _streams(REFERENCES)).score
    stats = metrics.bleu_statistics(HYPOTHESES, REFERENCES)
    assert stats.shape == (5, 10)
    assert metrics.bleu_from_statistics(stats) == pytest.approx(expected, abs=1e-9)
    assert metrics.bleu(HYPOTHESES, REFERENCES) == pytest.approx(expected, abs=1e-9)
    # any multiset of items: the sum of their rows
    subset = [0, 0, 3, 4]
    expected = sacrebleu.corpus_bleu(
        [HYPOTHESES[i] for i in subset], _streams([REFERENCES[i] for i in subset])
    ).score
    assert metrics.bleu_from_statistics(stats[subset]) == pytest.approx(expected, abs=1e-9)
    with pytest.raises(ValueError, match="one reference entry per hypothesis"):
        metrics.bleu_statistics(HYPOTHESES[:2], REFERENCES)


def _rows(quality_by_label, *, temperature=1.0, gamma=1, texts=None, seeds=None):
    """Every configuration's rows; without `texts`, every row's text is empty (all texts alike)."""
    rows = []
    for label, (method, rule, alpha, qualities) in quality_by_label.items():
        own = texts[label] if texts else [""] * len(qualities)
        rows += config_rows(
            label,
            method,
            rule,
            alpha,
            qualities,
            rejected=2,
            accepted=8,
            gamma=gamma,
            temperature=temperature,
            texts=own,
            seeds=seeds,
        )
    return pd.DataFrame(rows)


def test_paired_bootstrap_covers_a_known_difference():
    rng = np.random.default_rng(1)
    delta, covered, runs = 0.1, 0, 30
    for _ in range(runs):
        verifier = rng.normal(0.5, 0.3, 80)
        other = verifier + delta + rng.normal(0, 0.2, 80)  # the same items: paired noise only
        table = paired.paired_differences(
            _rows(
                {
                    "Verifier": ("verifier", None, 0.0, verifier),
                    "SpecCascade [Chow]": ("speculative", "chow", 0.3, other),
                }
            ),
            against=("Verifier",),
        )
        row = table[table["label"] == "SpecCascade [Chow]"].iloc[0]
        assert row["difference"] == pytest.approx(other.mean() - verifier.mean())
        covered += row["low"] <= delta <= row["high"]
    assert covered >= 25  # 95% intervals: about 28.5 of 30 expected


def test_identical_configurations_have_a_zero_interval_and_missing_items_are_left_out():
    quality = np.arange(10) % 2
    rows = _rows(
        {"Verifier": ("verifier", None, 0.0, quality), "SpecDecode": ("speculative", "spec", 0.0, quality)}
    )
    partial = _rows({"SpecCascade [Diff]": ("speculative", "diff", 0.1, quality[:6])})
    table = paired.paired_differences(pd.concat([rows, partial]))
    spec = table[(table["label"] == "SpecDecode") & (table["versus"] == "Verifier")].iloc[0]
    assert (spec["difference"], spec["low"], spec["high"]) == (0.0, 0.0, 0.0)
    assert set(table["label"]) == {"Verifier", "SpecDecode"}
    assert paired.item_scores(pd.concat([rows, partial]))[0].dropped == ["SpecCascade [Diff]|0.1|g1|T1.0"]


def test_specdecode_is_compared_at_the_same_gamma():
    quality = np.linspace(0, 1, 12)
    rows = pd.concat(
        [
            _rows({"Verifier": ("verifier", None, 0.0, quality)}, gamma=3),
            _rows({"SpecDecode": ("speculative", "spec", 0.0, quality * 0.5)}, gamma=3),
            _rows(
                {
                    "SpecDecode": ("speculative", "spec", 0.0, quality * 0.9),
                    "SpecCascade [OPT]": ("speculative", "opt", 0.0, quality),
                },
                gamma=5,
            ),
        ]
    )
    table = paired.paired_differences(rows, against=("SpecDecode",)).set_index("label")
    assert table.loc["SpecCascade [OPT]", "versus_quality"] == pytest.approx((quality * 0.9).mean())


def test_corpus_bleu_bootstrap_point_is_sacrebleus_and_covers_it():
    n = 30
    hypotheses = [HYPOTHESES[i % 5] for i in range(n)]
    worse = [" ".join(h.split()[:3]) for h in hypotheses]
    examples = [
        {"id": f"x{i}", "prompt": "p", "references": list(np.atleast_1d(REFERENCES[i % 5]))} for i in range(n)
    ]
    task = Task("t", "bleu", examples)
    texts = {"Verifier": hypotheses, "SpecCascade [Chow]": worse}
    sentence = [metrics.sentence_bleu(h, e["references"]) for h, e in zip(worse, examples)]
    rows = _rows(
        {
            "Verifier": ("verifier", None, 0.0, np.zeros(n)),
            "SpecCascade [Chow]": ("speculative", "chow", 0.5, sentence),
        },
        texts=texts,
    )
    table = paired.paired_differences(rows, [task], against=("Verifier",)).set_index("label")
    corpus = {
        label: sacrebleu.corpus_bleu(t, _streams([e["references"] for e in examples])).score
        for label, t in texts.items()
    }
    assert table.loc["Verifier", "quality"] == pytest.approx(corpus["Verifier"])
    assert table.loc["SpecCascade [Chow]", "quality"] == pytest.approx(corpus["SpecCascade [Chow]"])
    assert table.loc["SpecCascade [Chow]", "quality"] != pytest.approx(
        np.mean(sentence)
    )  # not mean sentence BLEU
    row = table.loc["SpecCascade [Chow]"]
    assert row["difference"] == pytest.approx(corpus["SpecCascade [Chow]"] - corpus["Verifier"])
    assert row["low"] <= row["difference"] <= row["high"] < 0


def test_pairing_needs_common_seeds_and_enough_resamples():
    quality = np.ones(4)
    rows = pd.concat(
        [
            _rows({"Verifier": ("verifier", None, 0.0, quality)}),
            _rows({"SpecDecode": ("speculative", "spec", 0.0, quality)}, seeds=[9, 9, 9, 9]),
        ]
    )
    with pytest.raises(ValueError, match="common random numbers"):
        paired.item_scores(rows)
    with pytest.raises(ValueError, match="2000"):
        paired.paired_differences(rows, n_resamples=100)
    task = Task("t", "bleu", [{"id": "other", "prompt": "p", "references": ["r"]}])
    with pytest.raises(ValueError, match="not in the task"):
        paired.item_scores(
            _rows({"Verifier": ("verifier", None, 0.0, quality)}, texts={"Verifier": ["a"] * 4}), [task]
        )


def test_summary_bleu_is_corpus_bleu_given_the_tasks():
    from tutorial_lib.stats import analysis

    n = 10
    examples = [
        {"id": f"x{i}", "prompt": "p", "references": list(np.atleast_1d(REFERENCES[i % 5]))} for i in range(n)
    ]
    hypotheses = [HYPOTHESES[(i + 1) % 5] if i % 3 == 0 else HYPOTHESES[i % 5] for i in range(n)]
    sentence = [metrics.sentence_bleu(h, e["references"]) for h, e in zip(hypotheses, examples)]
    rows = _rows({"Verifier": ("verifier", None, 0.0, sentence)}, texts={"Verifier": hypotheses}).assign(
        drafter_time_s=0.0, verifier_time_s=1.0, n_drafted=0, deferral_rate=0.0
    )
    corpus = sacrebleu.corpus_bleu(hypotheses, _streams([e["references"] for e in examples])).score
    summary = analysis.summarize(rows, tasks=[Task("t", "bleu", examples)]).iloc[0]
    assert summary["quality"] == pytest.approx(corpus) and summary["quality_metric"] == "corpus"
    assert summary["verifier_quality"] == pytest.approx(corpus) and summary["quality_ci"] > 0
    assert analysis.summarize(rows).iloc[0]["quality"] == pytest.approx(
        np.mean(sentence)
    )  # without tasks: the mean


def test_counts_of_differences_that_exclude_0_leave_out_self_and_identical_text_pairs():
    """Per reference: the reference against itself and a configuration with its texts differ by 0 by
    construction and are not counted; of the pairs left, 5% would exclude 0 by chance."""
    quality = (np.arange(40) % 2).astype(float)
    worse = quality * (np.arange(40) % 4 != 1)
    texts = {
        "Verifier": [f"v{i}" for i in range(40)],
        "SpecDecode": [f"v{i}" for i in range(40)],
        "SpecCascade [Chow]": [f"c{i}" for i in range(40)],
        "SpecCascade [Diff]": [f"d{i}" for i in range(40)],
    }
    rows = _rows(
        {
            "Verifier": ("verifier", None, 0.0, quality),
            "SpecDecode": ("speculative", "spec", 0.0, quality),
            "SpecCascade [Chow]": ("speculative", "chow", 0.5, worse),
            "SpecCascade [Diff]": ("speculative", "diff", 0.5, quality),
        },
        texts=texts,
    )
    differences = paired.paired_differences(rows)
    assert len(differences) == 8
    counts = paired.separated_counts(differences).set_index("group").loc["all"]
    # self: Verifier-Verifier, SpecDecode-SpecDecode; identical texts:
    # SpecDecode-Verifier, Verifier-SpecDecode
    assert (counts["self_comparisons"], counts["identical_texts"], counts["compared"]) == (2, 2, 4)
    # Chow is below both references (10 of 40 items lost); Diff equals their quality with its own texts
    assert (counts["exclude_0"], counts["below"], counts["above"]) == (2, 2, 0)
    assert counts["expected_by_chance"] == pytest.approx(0.05 * 4)
    with pytest.raises(ValueError, match="paired_differences"):
        paired.separated_counts(differences.drop(columns=["same_texts"]))
