"""tutorial_lib.toy.synthetic_mt: the toy translation task, its tokenizer, the built-in flaw and the T5 pair.

The models are trained with the "tiny" budget (seconds, no quality): these tests check the plumbing
(caching, loading through `load_pair`, every engine method), not BLEU.
"""

import hashlib
import json
import random
import shutil

import pytest

import tutorial_lib as tl
from tutorial_lib.toy import synthetic_mt as mt
from tutorial_lib.models import synthetic_t5
from tutorial_lib.paths import RESULTS_DIR
from tutorial_lib.toy.synthetic_mt import CONTEXTS, FLAWED_CONTEXT, TranslationGrammar

from test_model_files import use_shared_model_cache


@pytest.fixture(scope="module")
def grammar():
    return TranslationGrammar()


@pytest.fixture(scope="module")
def test_examples(grammar):
    return grammar.examples(200, seed=0, split="test")


def test_examples_have_the_evaluation_format_and_valid_references(grammar, test_examples):
    assert len({e["id"] for e in test_examples}) == len(test_examples) == 200
    for e in test_examples:
        assert set(e) == {"id", "prompt", "references", "info"}
        assert e["info"]["context"] == grammar.context_of(e["prompt"]) in CONTEXTS
        assert 1 <= len(e["references"]) <= grammar.max_references
        assert len(set(e["references"])) == len(e["references"])
        assert all(grammar.is_valid_translation(e["prompt"], r) for r in e["references"])
    counts = [len(e["references"]) for e in test_examples]
    assert sum(c > 1 for c in counts) > len(counts) / 2  # most sentences have several correct outputs
    assert all(sum(mt.context_of(e) == c for e in test_examples) == 40 for c in CONTEXTS)  # equal groups


def test_examples_are_deterministic_and_seeded(grammar, test_examples):
    assert grammar.examples(200, seed=0, split="test") == test_examples
    assert grammar.examples(20, seed=1, split="test") != test_examples[:20]


def test_splits_never_share_a_sentence(grammar, test_examples):
    train = {s for s, _, _ in mt.training_pairs("drafter", 3000)}
    validation = {e["prompt"] for e in grammar.examples(200, split="validation")}
    test = {e["prompt"] for e in test_examples}
    assert not (train & test) and not (train & validation) and not (validation & test)
    assert {grammar.split_of(s) for s in train} == {"train"}


def test_translation_rules_on_hand_checked_sentences(grammar):
    # SOV, adjective after the noun, verb agreeing with the plural subject in the past tense
    assert sorted(grammar.translations("the big dog saw some cats")) == sorted(
        f"lu hundo {a} unas mikas {v}" for a in ("grando", "magno") for v in ("mire", "vide")
    )
    assert grammar.translations("the dogs followed a cat") == ["lus hundos una mika sekven"]
    # adjectives mirrored, agreeing with the noun's gender and number
    assert grammar.translations("some brave young mice heard a wolf") == [
        "unas muzas nuvas fortas un lupo auden"
    ]
    # relative clause before its noun, its verb agreeing with that noun
    assert sorted(grammar.translations("the dog that likes a cat helps the baker")) == [
        "una mika ama ke lu hundo lu pano aida",
        "una mika luba ke lu hundo lu pano aida",
    ]
    assert grammar.translations("a bird calls the wolves that heard some mice") == [
        "una pipa unas muzas auden ke lus lupos voka"
    ]
    # negation circumfix; with-phrase before or after the object; adverb before the verb
    assert grammar.translations("a bird does not find the horse") == ["una pipa nu lu kabo trova ka"]
    assert sorted(grammar.translations("the cat helps a dog with the horse")) == sorted(
        ["li mika lu kabo kun un hundo aida", "li mika un hundo lu kabo kun aida"]
    )
    assert grammar.translations("the cat helps a dog slowly") == ["li mika un hundo lenti aida"]
    assert not grammar.is_valid_translation("the dogs followed a cat", "lus hundos una mika sekve")
    assert grammar.is_valid_translation("the dogs followed a cat", " lus hundos  una mika sekven ")


def test_parse_round_trips_and_rejects_what_the_grammar_cannot_say(grammar):
    rng = random.Random(3)
    for _ in range(200):
        clause = grammar.sample_clause(rng)
        assert grammar.parse(grammar.render_source(clause)) == clause
    for bad in [
        "the dog see the cat",
        "a dogs sees the cat",
        "the dog sees",
        "the dog sees the cat today",
        "the dogs does not see the cat",
        "the dog sees the cat the",
        "the dog that the cat sees likes a bird",
        "the dog that see the cat likes a bird",
    ]:
        with pytest.raises(ValueError, match="not a sentence of the grammar"):
            grammar.translations(bad)
    with pytest.raises(ValueError, match="split"):
        grammar.examples(3, split="heldout")


def test_tokenizer_round_trips_and_appends_eos(tmp_path, grammar, test_examples):
    from transformers import AutoTokenizer

    tokenizer = mt.build_tokenizer()
    tokenizer.save_pretrained(tmp_path)
    reloaded = AutoTokenizer.from_pretrained(tmp_path)
    assert reloaded.get_vocab() == tokenizer.get_vocab()
    assert (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id) == (0, 1, 2)
    assert len(tokenizer) == len(grammar.vocabulary()) + 3
    for e in test_examples[:20]:
        for text in [e["prompt"], *e["references"]]:
            for tok in (tokenizer, reloaded):
                ids = tok(text)["input_ids"]
                assert ids[-1] == 1 and 2 not in ids  # </s> appended, no unknown words
                assert tok.decode(ids, skip_special_tokens=True) == text


def test_the_verifier_learns_from_a_corpus_without_negations(grammar):
    drafter_data = mt.training_pairs("drafter", 500)
    verifier_data = mt.training_pairs("verifier", 500)
    assert [s for s, _, _ in drafter_data] == [s for s, _, _ in verifier_data]  # same sources
    flawed = [(s, t) for s, t, c in verifier_data if c == FLAWED_CONTEXT]
    assert len(flawed) > 50
    assert all(grammar.is_valid_translation(s, t) for s, t, _ in drafter_data)
    assert not any(grammar.is_valid_translation(s, t) for s, t in flawed)
    assert not any(mt.NEGATION in t.split() for _, t in flawed)
    assert all(grammar.is_valid_translation(s, t) for s, t, c in verifier_data if c != FLAWED_CONTEXT)


def test_per_context_quality_scores_the_references_perfectly(grammar, test_examples):
    table = mt.per_context_quality([e["references"][-1] for e in test_examples], test_examples)
    assert list(table.index) == [*CONTEXTS, "all"]
    assert (table["bleu"] > 99.9).all() and (table["valid"] == 1.0).all()
    wrong = mt.per_context_quality([e["references"][0] + " ka" for e in test_examples], test_examples)
    assert (wrong["valid"] == 0.0).all() and (wrong["bleu"] < 100).all()
    with pytest.raises(ValueError, match="one output per example"):
        mt.per_context_quality(["x"], test_examples)


@pytest.fixture(scope="module")
def tiny_pair():
    use_shared_model_cache()
    paths = synthetic_t5.train_t5_pair(budget="tiny", progress=False)
    assert paths["drafter"] != paths["verifier"] != synthetic_t5.model_dir("verifier", "default")
    return tl.load_pair("synthetic-t5-drafter:tiny", "synthetic-t5-verifier:tiny")


def test_cached_models_are_not_retrained(tiny_pair):
    paths = synthetic_t5.train_t5_pair(budget="tiny", progress=False)
    stamps = {role: (path / mt.TRAINING_RECORD).stat().st_mtime_ns for role, path in paths.items()}
    assert synthetic_t5.train_t5_pair(budget="tiny", progress=False) == paths
    assert {role: (path / mt.TRAINING_RECORD).stat().st_mtime_ns for role, path in paths.items()} == stamps
    drafter, verifier = tiny_pair
    assert drafter.is_encoder_decoder and verifier.is_encoder_decoder
    assert drafter.model.num_parameters() < verifier.model.num_parameters()
    with pytest.raises(ValueError, match="budget"):
        synthetic_t5.train_t5_pair(budget="huge")
    with pytest.raises(ValueError, match="role"):
        synthetic_t5.model_dir("teacher", "tiny")


def test_a_shipped_model_is_copied_not_trained_and_training_here_replaces_the_copy(
    tiny_pair, tmp_path, monkeypatch
):
    # a fake shipped folder holding the tiny pair as the shared cache trained it
    shipped = tmp_path / "shipped"
    for role in mt.ROLES:
        shutil.copytree(
            synthetic_t5.model_dir(role, "tiny"), shipped / synthetic_t5.model_dir(role, "tiny").name
        )
    monkeypatch.setattr(synthetic_t5, "SHIPPED_DIR", shipped)
    synthetic_t5.record_shipped_hashes()
    cache = tmp_path / "cache"
    trained = []
    real_train = synthetic_t5._train_one
    monkeypatch.setattr(
        synthetic_t5, "_train_one", lambda role, *a, **k: (trained.append(role), real_train(role, *a, **k))
    )

    def weights(folder):
        return (folder / "model.safetensors").read_bytes()

    # 1. shipped: copied (no training), byte for byte, and marked as a copy
    paths = synthetic_t5.train_t5_pair(budget="tiny", cache=cache, progress=False)
    assert trained == []
    for role, folder in paths.items():
        assert weights(folder) == weights(synthetic_t5.shipped_model_dir(role, "tiny"))
        assert json.loads((folder / mt.TRAINING_RECORD).read_text())["copied_from"] == folder.name
    assert "shipped model" in synthetic_t5.describe_training(paths)
    # 2. asked again: nothing happens
    stamps = [(f / mt.TRAINING_RECORD).stat().st_mtime_ns for f in paths.values()]
    synthetic_t5.train_t5_pair(budget="tiny", cache=cache, progress=False)
    assert [(f / mt.TRAINING_RECORD).stat().st_mtime_ns for f in paths.values()] == stamps and trained == []
    # 3. shipped=False replaces the copy by a model trained here, which records where it was trained
    synthetic_t5.train_t5_pair(budget="tiny", cache=cache, progress=False, shipped=False)
    assert trained == ["drafter", "verifier"]
    record = json.loads((paths["drafter"] / mt.TRAINING_RECORD).read_text())
    assert "copied_from" not in record and record["trained_with"] == synthetic_t5.training_environment()
    # ... with its own hashes, described as its own weights
    own = hashlib.sha256(weights(paths["drafter"])).hexdigest()
    assert record["files"]["model.safetensors"] == own
    described = synthetic_t5.describe_training(paths)
    assert "trained on this machine" in described and own[:16] in described
    assert "shipped model" not in described
    # a model trained here whose weights changed is refused; repair=True trains it again
    _flip_bits(paths["drafter"] / "model.safetensors", 1)
    with pytest.raises(
        synthetic_t5.ModelFilesDiffer,
        match=r"(?s)trained on this machine.*shipped=False, "
        r"repair=True",
    ):
        synthetic_t5.load_trained_t5("drafter", "tiny", cache=cache)
    synthetic_t5.train_t5_pair(budget="tiny", cache=cache, progress=False, shipped=False, repair=True)
    assert trained == ["drafter", "verifier", "drafter"]
    assert hashlib.sha256(weights(paths["drafter"])).hexdigest() == own  # seeded: the same weights again
    # 4. a model trained here is kept by shipped=False, replaced by the shipped copy again by shipped=True
    synthetic_t5.train_t5_pair(budget="tiny", cache=cache, progress=False, shipped=False)
    assert trained == ["drafter", "verifier", "drafter"]
    synthetic_t5.train_t5_pair(budget="tiny", cache=cache, progress=False)
    assert trained == ["drafter", "verifier", "drafter"]
    assert all("copied_from" in json.loads((f / mt.TRAINING_RECORD).read_text()) for f in paths.values())
    # 5. no shipped model of these settings: trained here
    monkeypatch.setattr(synthetic_t5, "SHIPPED_DIR", tmp_path / "nothing")
    synthetic_t5.train_t5_pair(budget="tiny", cache=tmp_path / "other", progress=False)
    assert trained == ["drafter", "verifier", "drafter", "drafter", "verifier"]


def test_the_shipped_default_pair_has_the_weights_of_the_committed_t5_rows():
    """Notebook 06 redraws the committed rows only with the weights they were computed with."""
    from transformers import AutoTokenizer, T5ForConditionalGeneration
    from tutorial_lib.models.language_model import LanguageModel
    from tutorial_lib.sweeps.sweep_folders import model_identity

    configs = [json.loads(f.read_text()) for f in sorted(RESULTS_DIR.glob("t5-offline-*/config.json"))]
    assert len(configs) == 1, "one committed offline T5 run"
    for role in mt.ROLES:
        folder = synthetic_t5.shipped_model_dir(role, "default")
        assert folder is not None, f"data/models/ ships no default {role}"
        assert synthetic_t5._check_shipped(folder) == synthetic_t5.model_file_hashes(folder)  # as recorded
        assert json.loads((folder / mt.TRAINING_RECORD).read_text())["trained_with"]["torch"]
        model = T5ForConditionalGeneration.from_pretrained(folder)
        lm = LanguageModel(model, AutoTokenizer.from_pretrained(folder), name=f"synthetic-t5-{role}")
        assert model_identity(lm)["weights"] == configs[0][role]["weights"]


def test_loading_an_untrained_pair_says_which_call_trains_it_and_never_trains(tmp_path, monkeypatch):
    monkeypatch.setenv("TUTORIAL_LIB_CACHE", str(tmp_path))
    for name, budget in (("synthetic-t5-drafter:tiny", "tiny"), ("synthetic-t5-verifier", "default")):
        with pytest.raises(FileNotFoundError, match=rf"not trained yet.*train_t5_pair\(budget='{budget}'\)"):
            tl.load_model(name)
    assert not (tmp_path / "models").exists() or not any((tmp_path / "models").iterdir())


def test_loading_after_the_explicit_training_call_keeps_the_alias_name(tiny_pair):
    drafter, verifier = tiny_pair
    assert (drafter.name, verifier.name) == ("synthetic-t5-drafter:tiny", "synthetic-t5-verifier:tiny")
    again = synthetic_t5.load_trained_t5("drafter", "tiny")
    assert sum(p.numel() for p in again.model.parameters()) == sum(
        p.numel() for p in drafter.model.parameters()
    )


def test_each_budget_role_and_cache_has_its_own_folder(tmp_path):
    folders = {synthetic_t5.model_dir(role, budget) for role in mt.ROLES for budget in synthetic_t5.BUDGETS}
    assert len(folders) == len(mt.ROLES) * len(synthetic_t5.BUDGETS)
    assert synthetic_t5.model_dir("drafter", "tiny", cache=tmp_path).parent == tmp_path / "models"


CALLS = (
    [dict(method="drafter"), dict(method="verifier")]
    + [
        dict(method="speculative", rule=r, alpha=a)
        for r, a in [
            ("spec", 0.0),
            ("lossy", 0.3),
            ("chow", 0.3),
            ("diff", 0.1),
            ("opt", 1.0),
            ("bild", 0.3),
            ("token_v1", 0.1),
            ("token_v2", 0.1),
            ("token_v3", 0.3),
        ]
    ]
    + [
        dict(method="token_cascade", alpha=0.3),
        dict(method="oracle", rule="chow", alpha=0.3),
        dict(method="seq_cascade", alpha=0.3),
        dict(method="bild", bild_threshold=1.0),
    ]
)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_every_engine_method_runs_on_the_pair(tiny_pair, test_examples, temperature):
    drafter, verifier = tiny_pair
    prompt = test_examples[4]["prompt"]  # a negation sentence
    for options in CALLS:
        g = tl.generate(
            drafter,
            verifier,
            prompt,
            gamma=3,
            temperature=temperature,
            max_new_tokens=6,
            eos_token_id=(),
            seed=1,
            **options,
        )
        assert len(g.tokens) == 6 and isinstance(g.text, str), options
        assert g.text == verifier.tokenizer.decode(g.tokens, skip_special_tokens=True)


def test_speculative_decoding_at_t0_is_the_verifiers_greedy_output(tiny_pair, test_examples):
    drafter, verifier = tiny_pair
    for e in test_examples[:5]:
        alone = tl.generate(drafter, verifier, e["prompt"], method="verifier", max_new_tokens=12)
        spec = tl.generate(
            drafter, verifier, e["prompt"], method="speculative", rule="spec", gamma=4, max_new_tokens=12
        )
        assert spec.tokens == alone.tokens


def test_the_t5_profiles_alphas_were_placed_on_the_shipped_pair():
    """`reruns.T5_OFFLINE_ALPHAS(_T0)` are the placements `benchmarks/t5_alpha_placement.py` wrote for the
    pair whose weights the committed T5 run used."""
    placement = json.loads((RESULTS_DIR.parent / "benchmarks" / "t5_alpha_placement.json").read_text())
    configs = [json.loads(f.read_text()) for f in sorted(RESULTS_DIR.glob("t5-offline-*/config.json"))]
    assert placement["weights"] == {role: configs[0][role]["weights"] for role in mt.ROLES}
    assert {
        label: v["alphas"] for label, v in placement["T=0"].items()
    } == tl.sweeps.reruns.T5_OFFLINE_ALPHAS_T0
    assert {label: v["alphas"] for label, v in placement["T=1"].items()} == tl.sweeps.reruns.T5_OFFLINE_ALPHAS


# ---- the shipped pair and its cache copy are checked against their recorded hashes -------------------


def _flip_bits(path, n_bytes: int) -> None:
    """Flip every bit of `n_bytes` bytes in the middle of `path` (inside a weights file: its tensors)."""
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + n_bytes] = bytes(b ^ 0xFF for b in data[middle : middle + n_bytes])
    path.write_bytes(bytes(data))


def _sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def no_training(monkeypatch):
    def refuse(role, *args, **kwargs):
        raise AssertionError(f"the {role} was trained")

    monkeypatch.setattr(synthetic_t5, "_train_one", refuse)


@pytest.fixture
def shipped_copy(tmp_path, monkeypatch, no_training):
    """The repository's shipped folder (both models and their hashes) copied, to be damaged in tmp_path."""
    shipped = tmp_path / "shipped"
    shutil.copytree(synthetic_t5.SHIPPED_DIR, shipped)
    monkeypatch.setattr(synthetic_t5, "SHIPPED_DIR", shipped)
    return shipped


@pytest.fixture
def cached_copy(tmp_path, no_training):
    """The shipped default pair copied into a fresh cache by train_t5_pair (committed files: only read)."""
    cache = tmp_path / "cache"
    paths = synthetic_t5.train_t5_pair(cache=cache, progress=False)
    return cache, paths


def test_64_flipped_bytes_in_the_shipped_verifier_are_refused_before_any_copy(shipped_copy, tmp_path):
    weights = synthetic_t5.shipped_model_dir("verifier") / "model.safetensors"
    recorded = json.loads((shipped_copy / synthetic_t5.SHIPPED_HASHES).read_text())[weights.parent.name]
    _flip_bits(weights, 64)
    cache = tmp_path / "cache"
    with pytest.raises(synthetic_t5.ModelFilesDiffer) as refused:
        synthetic_t5.train_t5_pair(cache=cache, progress=False)
    message = str(refused.value)
    expected = recorded["model.safetensors"]
    assert f"model.safetensors: expected sha256 {expected}, found {_sha256(weights)}" in message
    assert "git" in message and f"checkout -- {weights.parent.name}" in message
    assert not synthetic_t5.model_dir("verifier", cache=cache).exists()  # not copied, not trained


def test_a_missing_shipped_weights_file_is_reported_with_the_repair_not_trained_over(shipped_copy, tmp_path):
    (synthetic_t5.shipped_model_dir("drafter") / "model.safetensors").unlink()
    with pytest.raises(synthetic_t5.ModelFilesDiffer, match=r"(?s)model.safetensors: missing.*checkout"):
        synthetic_t5.train_t5_pair(cache=tmp_path / "cache", progress=False)
    shutil.rmtree(synthetic_t5.shipped_model_dir("drafter"))  # the whole folder gone: still not trained over
    with pytest.raises(synthetic_t5.ModelFilesDiffer, match=r"(?s)model.safetensors: missing.*checkout"):
        synthetic_t5.train_t5_pair(cache=tmp_path / "cache", progress=False)


def test_a_bit_flip_in_the_cache_copy_is_refused_and_repaired_only_when_asked(cached_copy):
    cache, paths = cached_copy
    weights = paths["verifier"] / "model.safetensors"
    shipped = synthetic_t5.shipped_model_dir("verifier") / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0x01
    weights.write_bytes(bytes(data))
    found = _sha256(weights)
    for attempt in (
        lambda: synthetic_t5.load_trained_t5("verifier", cache=cache),
        lambda: synthetic_t5.train_t5_pair(cache=cache, progress=False),
        lambda: synthetic_t5.describe_training(paths),
    ):
        with pytest.raises(synthetic_t5.ModelFilesDiffer) as refused:
            attempt()
        message = str(refused.value)
        assert f"model.safetensors: expected sha256 {_sha256(shipped)}, found {found}" in message
        assert "repair=True" in message and "copy of the repository's shipped" in message
    assert _sha256(weights) == found  # nothing copied over it unasked
    synthetic_t5.train_t5_pair(cache=cache, progress=False, repair=True)
    assert _sha256(weights) == _sha256(shipped)
    assert "the repository's shipped model" in synthetic_t5.describe_training(paths)
    assert synthetic_t5.load_trained_t5("verifier", cache=cache).model.num_parameters() > 0


def test_another_same_shape_model_in_the_cache_is_refused_not_described_as_shipped(cached_copy):
    import torch
    from safetensors.torch import load_file, save_file

    cache, paths = cached_copy
    weights = paths["verifier"] / "model.safetensors"
    tensors = load_file(weights)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1)
        other = {name: t + 1e-3 * torch.randn_like(t) for name, t in tensors.items()}  # same names, shapes
    save_file(other, weights, metadata={"format": "pt"})
    with pytest.raises(synthetic_t5.ModelFilesDiffer, match=r"model.safetensors: expected sha256"):
        synthetic_t5.describe_training(paths)
    with pytest.raises(synthetic_t5.ModelFilesDiffer, match="repair=True"):
        synthetic_t5.load_trained_t5("verifier", cache=cache)
    # nor when its record no longer says it is a copy: a model "trained here" must carry its own hashes
    record_path = paths["verifier"] / mt.TRAINING_RECORD
    record = json.loads(record_path.read_text())
    record_path.write_text(json.dumps({k: v for k, v in record.items() if k != "copied_from"}))
    with pytest.raises(synthetic_t5.ModelFilesDiffer, match="records no hashes"):
        synthetic_t5.describe_training(paths)
    # nor as a copy of the other shipped model, whose files it then holds
    shutil.rmtree(paths["verifier"])
    shutil.copytree(paths["drafter"], paths["verifier"])
    with pytest.raises(synthetic_t5.ModelFilesDiffer, match="another model"):
        synthetic_t5.load_trained_t5("verifier", cache=cache)


def test_deleted_cached_weights_give_the_repair_hint_not_a_raw_oserror(cached_copy, monkeypatch):
    cache, paths = cached_copy
    (paths["verifier"] / "model.safetensors").unlink()
    monkeypatch.setenv("TUTORIAL_LIB_CACHE", str(cache))
    with pytest.raises(synthetic_t5.ModelFilesDiffer) as refused:
        tl.load_model("synthetic-t5-verifier")
    message = str(refused.value)
    assert "model.safetensors: missing (expected sha256" in message
    assert "train_t5_pair(budget='default', repair=True)" in message  # the default cache: no cache= to pass
    synthetic_t5.train_t5_pair(progress=False, repair=True)
    assert tl.load_model("synthetic-t5-verifier").model.num_parameters() > 0


def test_a_model_trained_here_without_hashes_is_trained_again_not_trusted(tiny_pair, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    for role in mt.ROLES:
        shutil.copytree(
            synthetic_t5.model_dir(role, "tiny"), synthetic_t5.model_dir(role, "tiny", cache=cache)
        )
    record_path = synthetic_t5.model_dir("drafter", "tiny", cache=cache) / mt.TRAINING_RECORD
    record = json.loads(record_path.read_text())
    record_path.write_text(json.dumps({k: v for k, v in record.items() if k != "files"}))
    with pytest.raises(synthetic_t5.ModelFilesDiffer, match="records no hashes"):
        synthetic_t5.load_trained_t5("drafter", "tiny", cache=cache)
    trained = []
    real_train = synthetic_t5._train_one
    monkeypatch.setattr(
        synthetic_t5, "_train_one", lambda role, *a, **k: (trained.append(role), real_train(role, *a, **k))
    )
    with pytest.warns(UserWarning, match="before model files were hashed"):
        synthetic_t5.train_t5_pair(budget="tiny", cache=cache, progress=False, shipped=False)
    assert trained == ["drafter"]
    assert json.loads(record_path.read_text())["files"] == synthetic_t5.model_file_hashes(record_path.parent)
