"""Every public input that used to pass silently or crash with a raw traceback
now gives a ValueError / TypeError that says what to change (or, where the value is meaningful,
works)."""

import math

import numpy as np
import pytest
import torch

import tutorial_lib as tl
from tutorial_lib import checks, models
from tutorial_lib.decoding.batch import generate_batch
from tutorial_lib.sweeps.configs import Config, Task, sweep_configs

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def toy():
    return tl.load_pair("toy-drafter", "toy-verifier")


@pytest.fixture(scope="module")
def llama_pair():
    verifier = models.tiny_random_llama(0)
    return models.ModelPair(models.perturbed(verifier, 0.3, seed=1), verifier)


def run(pair, prompt=(0, 5), **options):
    options = {"method": "speculative", "max_new_tokens": 4, **options}
    return tl.generate(*pair, list(prompt) if isinstance(prompt, tuple) else prompt, **options)


# ---- pairs whose ids mean different things --------------------------------------------------------


def test_toy_and_tiny_random_pair_is_refused_although_sizes_agree():
    d, v = tl.load_model("toy-drafter"), tl.load_model("tiny-random-llama")
    assert d.vocab_size == v.vocab_size == 16
    with pytest.raises(ValueError, match="mean different things.*same tokenizer"):
        tl.load_pair("toy-drafter", "tiny-random-llama")
    with pytest.raises(ValueError, match="mean different things"):
        tl.generate(d, v, [0, 3], method="speculative", max_new_tokens=2)


def test_models_without_a_tokenizer_must_be_declared_to_share_ids():
    net_a, net_b = models.tiny_random_llama(3).model, models.tiny_random_llama(4).model
    a, b = models.LanguageModel(net_a, name="a"), models.LanguageModel(net_b, name="b")
    with pytest.raises(ValueError, match="has no tokenizer.*shared_vocabulary=True"):
        models.ModelPair(a, b)
    with pytest.raises(ValueError, match="shared_vocabulary=True"):
        tl.generate(a, b, [1, 2], method="speculative", max_new_tokens=2)
    g = tl.generate(a, b, [1, 2], method="speculative", max_new_tokens=2, shared_vocabulary=True)
    assert len(g.tokens) == 2
    pair = models.ModelPair(a, b, shared_vocabulary=True)  # recorded on both models: generate accepts them
    assert len(tl.generate(*pair, [1, 2], method="speculative", max_new_tokens=2).tokens) == 2


def test_toy_worlds_with_other_words_are_refused():
    other = tl.ToyWorld(n_words=14, seed=0)
    other.tokens = other.tokens[:2] + [w + "x" for w in other.tokens[2:]]
    d = models.toy_pair().drafter
    v = tl.models.toy.ToyModel(other.verifier, name="other", world=other)
    with pytest.raises(ValueError, match="mean different things"):
        models.ModelPair(d, v)


# ---- temperature ------------------------------------------------------------------------------------


@pytest.mark.parametrize("temperature", [math.inf, math.nan, -0.5])
def test_infinite_nan_or_negative_temperature_is_refused(toy, temperature):
    with pytest.raises(ValueError, match="use T = 0 for greedy decoding or a finite T > 0"):
        run(toy, temperature=temperature)


def test_a_tiny_temperature_is_the_greedy_limit_not_a_crash(toy, llama_pair):
    for pair in (toy, llama_pair):
        assert (
            run(pair, (1, 2, 3), temperature=1e-300, max_new_tokens=8).tokens
            == run(pair, (1, 2, 3), temperature=0.0, max_new_tokens=8).tokens
        )
    law = tl.probabilities(torch.tensor([1.0, 1.0, 0.0]), 1e-300)
    assert law.tolist() == [0.5, 0.5, 0.0]


def test_a_temperature_string_is_refused(toy):
    with pytest.raises(TypeError, match="not a number"):
        run(toy, temperature="1.0")


# ---- prompts -----------------------------------------------------------------------------------------


def test_fractional_token_ids_are_refused(toy):
    with pytest.raises(ValueError, match="not a whole number.*whole numbers"):
        run(toy, [1.9, 2.7])


@pytest.mark.parametrize("prompt", [None, 123, 4.5])
def test_a_prompt_that_is_neither_text_nor_ids_is_refused(toy, prompt):
    with pytest.raises(TypeError, match="neither text nor a list of token ids"):
        run(toy, prompt)


def test_integral_floats_and_numpy_ids_are_token_ids(toy):
    expected = run(toy, [0, 5]).tokens
    assert run(toy, [0.0, 5.0]).tokens == expected
    assert run(toy, np.array([0, 5], dtype=np.int64)).tokens == expected
    assert run(toy, torch.tensor([0, 5])).tokens == expected


# ---- alpha, gamma, seed -------------------------------------------------------------------------


def test_alpha_as_a_string_is_refused(toy):
    with pytest.raises(TypeError, match=r"alpha='0.3' is not a number"):
        run(toy, rule="chow", alpha="0.3")
    with pytest.raises(TypeError, match="not a number"):
        tl.target_distribution("chow", [0.5, 0.5], [0.5, 0.5], "0.3")


@pytest.mark.parametrize("gamma", [np.int64(3), 3.0, np.float64(3.0), torch.tensor(3).item()])
def test_numpy_and_integral_gammas_are_accepted(toy, gamma):
    assert run(toy, gamma=gamma).tokens == run(toy, gamma=3).tokens


@pytest.mark.parametrize(
    "gamma,error,match",
    [
        (0, ValueError, "gamma >= 1"),
        (2.5, ValueError, "not a whole number"),
        (True, TypeError, "not a whole number"),
        ("3", (TypeError, ValueError), "whole number"),
        (None, TypeError, "not a whole number"),
    ],
)
def test_bad_gammas_say_what_to_pass(toy, gamma, error, match):
    with pytest.raises(error, match=match):
        run(toy, gamma=gamma)


def test_generate_batch_accepts_numpy_gamma_one(llama_pair):
    out = generate_batch(*llama_pair, [[1, 2, 3]], gamma=np.int64(1), max_new_tokens=3, eos_token_id=())
    assert len(out[0].tokens) == 3


def test_seed_none_is_refused_and_numpy_seeds_work(toy):
    with pytest.raises(TypeError, match="seed=None.*integer seed"):
        run(toy, seed=None, temperature=1.0)
    assert run(toy, seed=np.int64(4), temperature=1.0).tokens == run(toy, seed=4, temperature=1.0).tokens
    with pytest.raises(ValueError, match="seed=-1"):
        run(toy, seed=-1)


# ---- devices -----------------------------------------------------------------------------------------


def test_cuda_without_cuda_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="no CUDA device.*device='cpu'"):
        tl.load_model("tiny-random-llama", device="cuda")
    with pytest.raises(ValueError, match="not a torch device"):
        tl.load_pair("tiny-random-llama:1", "tiny-random-llama:2", device="gpu")


# ---- BiLD's two thresholds ----------------------------------------------------------------------------


def test_bild_method_takes_its_own_threshold(toy):
    with pytest.raises(ValueError, match="ambiguous.*bild_threshold"):
        run(toy, method="bild", alpha=1.0)
    with pytest.raises(ValueError, match="needs bild_threshold"):
        run(toy, method="bild")
    with pytest.raises(ValueError, match="does not use it"):
        run(toy, rule="bild", alpha=0.3, bild_threshold=1.0)
    g = run(toy, method="bild", bild_threshold=1.0, temperature=1.0)
    assert g.bild_threshold == 1.0 and math.isnan(g.alpha)


def test_shared_checks_accept_and_refuse_alike():
    assert checks.check_gamma(np.int32(2)) == 2 and isinstance(checks.check_gamma(2.0), int)
    assert checks.check_real(np.float32(0.5), "alpha") == 0.5
    with pytest.raises(ValueError, match="loss='hinge' is unknown"):
        checks.check_loss("hinge")
    with pytest.raises(ValueError, match="rule='nope' is unknown"):
        tl.maths.rules.check_rule("nope")


def test_trusted_inputs_in_two_interleaved_threads_leave_the_checks_on():
    # a view redrawn on a timer thread while the main thread decodes: the blocks interleave
    import threading
    from tutorial_lib.maths import targets
    from tutorial_lib.maths import laws

    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()

    def first():
        with laws.trusted_inputs():
            a_in.set()
            b_in.wait(5)
        a_out.set()

    def second():
        a_in.wait(5)
        with laws.trusted_inputs():
            b_in.set()
            a_out.wait(5)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    with pytest.raises(ValueError, match="sum"):
        targets.target_distribution("spec", [0.5, 0.6], [0.5, 0.5], 0.0)


# ---- sweeps, tasks and model loading: named when given, not at the first row -----------------------


def _one_example_task(**example):

    examples = [{"id": "a", "prompt": "mi", "references": ["x"], **example}]
    return Task("t", "qa_em", examples, max_new_tokens=2)


def test_a_sweep_pair_of_one_model_or_of_names_says_what_to_pass(toy, tmp_path):
    from tutorial_lib.sweeps import evaluation as ev

    task, configs = _one_example_task(), sweep_configs(["Drafter"])
    with pytest.raises(ValueError, match=r"pair holds 1 model; a sweep needs two, \(drafter, verifier\)"):
        ev.run_sweep((toy.drafter,), task, configs, name="one", root=tmp_path, progress=False)
    with pytest.raises(ValueError, match="pair holds 3 models"):
        ev.run_sweep((*toy, toy.verifier), task, configs, name="three", root=tmp_path, progress=False)
    with pytest.raises(TypeError, match="the drafter is 'toy-drafter', not a loaded model; load the pair"):
        ev.run_sweep(
            ("toy-drafter", "toy-verifier"), task, configs, name="names", root=tmp_path, progress=False
        )
    with pytest.raises(ValueError, match=r"tasks=\[\]: pass at least one Task"):  # was an empty table
        ev.run_sweep(toy, [], configs, name="none", root=tmp_path, progress=False)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("dtype", [torch.int64, torch.int8, torch.bool])
def test_a_dtype_that_is_not_floating_point_is_refused_before_loading(dtype):
    from tutorial_lib.models.adapter import pretrained

    wanted = rf"dtype={dtype} is not a floating-point type.*use torch.float32, torch.bfloat16"
    with pytest.raises(ValueError, match=wanted):
        tl.load_model("tiny-random-llama:0", dtype=dtype)
    with pytest.raises(ValueError, match=wanted):
        tl.load_pair("tiny-random-llama:0", "tiny-random-llama:1", dtype=(torch.float32, dtype))
    with pytest.raises(ValueError, match=wanted):  # loaders called directly (synthetic T5, offline models)
        pretrained(object, "never-read", dtype=dtype, device="cpu")


@pytest.mark.parametrize(
    "prompt, error, message",
    [
        ("", ValueError, r"example 'a' has an empty prompt \(''\); give it some text"),
        ("  \n", ValueError, r"example 'a' has an empty prompt"),
        ([], ValueError, r"example 'a' has an empty list of token ids as its prompt"),
        (None, TypeError, r"example 'a' has prompt=None; pass text, or a list of token ids"),
        ([3, -1], ValueError, r"prompt token id=-1 is below 0"),
        ([3, 2.5], ValueError, r"prompt token id=2.5 is not a whole number"),
    ],
)
def test_a_task_with_an_empty_or_unreadable_prompt_fails_when_built(prompt, error, message):
    with pytest.raises(error, match=message):
        _one_example_task(prompt=prompt)


def test_references_given_as_one_string_are_refused_not_split_into_letters():
    with pytest.raises(TypeError, match=r"references='ka', a string, .* pass a list, e.g. references=\['ka"):
        _one_example_task(references="ka")
    assert _one_example_task(references=("ka",)).examples[0].references == ["ka"]


def test_a_chat_task_needs_text_prompts():

    with pytest.raises(TypeError, match="chat=True but example 'a' gives token ids"):
        Task("t", "qa_em", [{"id": "a", "prompt": [1, 2], "references": ["x"]}], chat=True)


@pytest.mark.parametrize("n", [-1, 0, 2.5, "2"])
def test_task_head_refuses_what_would_drop_examples_silently(n):
    task = _one_example_task()
    with pytest.raises((TypeError, ValueError), match=r"n=.*(below 1|whole number)"):
        task.head(n)
    assert task.head(None) is task and task.head(5).examples == task.examples


def test_sweep_configs_takes_gamma_auto_as_config_does():
    from tutorial_lib.sweeps import evaluation as ev

    assert Config("SpecDecode", "speculative", "spec", gamma="auto").key.endswith("|gauto|T0")
    configs = sweep_configs(gammas=("auto",))  # every curve of the T5 sweep
    gammas = {c.label: c.gamma for c in configs}
    assert gammas["SpecDecode"] == gammas["SpecCascade [OPT]"] == gammas["Lossy*"] == "auto"
    assert gammas["BiLD"] == gammas["Drafter"] == gammas["TokenCascade [Chow]"] == 5  # Config's default
    both = sweep_configs(["Drafter", "BiLD", "SpecDecode"], gammas=["auto", 3])
    assert sorted((c.label, str(c.gamma)) for c in both if c.label != "BiLD") == [
        ("Drafter", "3"),
        ("SpecDecode", "3"),
        ("SpecDecode", "auto"),
    ]
    assert {c.gamma for c in both if c.label == "BiLD"} == {3}
    # a block size per row: run one example at a time, also under runner="batch"
    auto = [c for c in configs if c.gamma == "auto"]
    assert ev.batch_plan(auto, tl.load_model("toy-verifier")) == ([], [], auto)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(label="Drafter", method="drafter"), r"gamma='auto' with method='drafter'.*pass a whole number"),
        (
            dict(label="SpecDecode", method="speculative", rule="spec", bonus="none"),
            r"gamma='auto' with bonus='none'.*pass bonus='verifier'",
        ),
    ],
)
def test_gamma_auto_where_the_engine_cannot_size_blocks_is_named(options, message):

    with pytest.raises(ValueError, match=message):
        Config(**options, gamma="auto")
    with pytest.raises(ValueError, match="'auto' prices blocks"):
        sweep_configs(["SpecDecode"], gammas=["auto"], bonus="none")


@pytest.mark.parametrize("argument", ["curves", "gammas", "temperatures"])
def test_an_empty_list_of_curves_gammas_or_temperatures_is_refused(argument):

    with pytest.raises(ValueError, match=rf"{argument}=\[\]: pass at least one"):  # was an empty sweep
        sweep_configs(**{"curves": ["Drafter"], argument: []})


def test_trusted_logits_skip_their_checks_only_where_a_draw_would_catch_them():
    from tutorial_lib.maths import accept_reject, laws

    logits = torch.tensor([[0.0, float("nan"), 1.0]])
    with pytest.raises(ValueError, match="NaN"):
        laws.probabilities(logits, 1.0)
    with laws.trusted_inputs():
        law = laws.probabilities(logits, 1.0)
        with pytest.raises(RuntimeError, match="nan"):
            accept_reject.sample(law, torch.Generator().manual_seed(0))
        with pytest.raises(ValueError, match="NaN"):  # at T = 0 an argmax would pick it silently
            laws.probabilities(logits, 0.0)
