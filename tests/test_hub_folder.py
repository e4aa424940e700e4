"""The Hub folder `hub/speculative-cascades`: self-contained, and the library's method.

- The folder needs only torch and transformers (its requirements, its imports, its model card), and no file of
  the library or the folder reaches into transformers' private internals but the one named fallback of
  `hf_generate`, whose reason (transformers hands a `custom_generate` callable neither `assistant_model` nor
  `streamer`) is checked against transformers itself.
- Its tokens are `tl.generate`'s for every rule: at T = 0 on SmolLM2-135M (its first 26 layers drafting),
  and on the tiny random pairs at T = 0 and at T = 1 with one seed (the random draws are the library's); batch
  rows equal single runs. At T = 1 the first emitted token follows the rule's target (chi-square against
  `targets.target_distribution`).
- A fresh virtual environment with only torch and transformers installed (no tutorial_lib) loads a copy of the
  folder offline, `custom_generate=<folder>, trust_remote_code=True`, and decodes with three rules on SmolLM2
  and on a tiny random T5 saved to a temporary folder: the same tokens as `tl.generate` here.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers

from tutorial_lib import models
from tutorial_lib.decoding import hf_generate
from tutorial_lib.decoding.engine import generate
from tutorial_lib.maths import accept_reject, laws, targets
from tutorial_lib.models.layer_skip import layer_skip_drafter

from test_engine_distribution import chi_square_p_value
from test_model_files import use_shared_model_cache

REPO = Path(__file__).resolve().parents[1]
FOLDER = REPO / "hub" / "speculative-cascades"
#: One alpha per rule, inside its live range, where the rule neither always defers nor never does.
ALPHAS = {
    "drafter": None,
    "verifier": None,
    "spec": None,
    "lossy": 0.3,
    "bild": 0.3,
    "chow": 0.5,
    "diff": 0.1,
    "opt": 0.5,
    "token_v1": 0.1,
    "token_v2": 0.1,
    "token_v3": 0.5,
    "mixture": 0.5,
}
#: Each rule, and Lossy* (the lossy target with the normalising beta).
CASES = [(rule, alpha, 1.0) for rule, alpha in ALPHAS.items()] + [("lossy", 0.3, "normalize")]
CASE_IDS = [rule for rule in ALPHAS] + ["lossy*"]
PROMPTS = ([3, 5, 7, 2], [4, 4, 9], [12, 3, 8, 15, 6, 2, 3], [9, 9, 14])
EOS = 1
SMOLLM2_DRAFTER_LAYERS = 26  # of 30: a drafter whose drafts every rule sometimes keeps, sometimes rejects
#: What the fresh environment installs: the versions this one runs (torch's local "+cpu" label dropped, so
#: that pip takes the CPU wheel it is configured with and never pulls a CUDA build).
FRESH_REQUIREMENTS = (
    f"torch=={torch.__version__.split('+')[0]}",
    f"transformers=={transformers.__version__}",
)


def folder_tokens(pair, prompt, **options):
    """The new tokens of one prompt through `model.generate(..., custom_generate="<the folder>")`."""
    ids = torch.tensor([list(prompt)])
    out = pair.verifier.model.generate(
        ids,
        attention_mask=torch.ones_like(ids),
        assistant_model=pair.drafter.model,
        custom_generate=str(FOLDER),
        trust_remote_code=True,
        **options,
    )
    start = 1 if pair.verifier.is_encoder_decoder else ids.shape[1]  # after the decoder start token
    return out[0, start:].tolist()


# ---- self-contained, and no private internals --------------------------------------------------------------


def test_the_folder_needs_only_torch_and_transformers():
    generate_py = FOLDER / "custom_generate" / "generate.py"
    requirements = (FOLDER / "custom_generate" / "requirements.txt").read_text().split()
    assert sorted(re.split(r"[<>=!~]", line)[0] for line in requirements) == ["torch", "transformers"]
    imported = set()
    for node in ast.walk(ast.parse(generate_py.read_text())):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "a relative import: the folder is one file"
            imported.add(node.module.split(".")[0])
    assert imported - set(sys.stdlib_module_names) == {"torch", "transformers"}
    card = (FOLDER / "README.md").read_text()
    front = card.split("---")[1]
    assert re.search(r"^library_name: transformers$", front, re.M)
    assert re.search(r"^tags:\n(  - .*\n)*  - custom_generate$", front, re.M)
    for needed in (
        "custom_generate=",
        "trust_remote_code=True",
        "assistant_model=",
        "2405.19261",
        "@inproceedings",
    ):
        assert needed in card
    for rule in ALPHAS:  # every option and rule is documented
        assert f"`{rule}`" in card
    for option in ("rule", "alpha", "gamma", "beta", "bonus", "seed"):
        assert f"`{option}`" in card


def test_no_private_transformers_internals_but_the_one_named_fallback():
    found = []
    for root in (REPO / "tutorial_lib", FOLDER):
        for path in sorted(root.rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if re.search(r"_getframe|_eos_token_tensor|_pad_token_tensor", line):
                    found.append((path.relative_to(REPO).as_posix(), number))
    assert len(found) == 1 and found[0][0] == "tutorial_lib/decoding/hf_generate.py", found
    source, first = inspect.getsourcelines(hf_generate.generate_call_arguments)
    assert first <= found[0][1] < first + len(source)  # inside the named fallback


def test_transformers_still_hides_assistant_and_streamer_from_a_callable(llama, tmp_path):
    """Why `hf_generate.generate_call_arguments` exists. If transformers starts handing a `custom_generate`
    callable the `assistant_model` and `streamer` of the call, this test fails: then drop the fallback and
    take them as arguments. If it renames them, the fallback's lookup fails here too."""
    from transformers.generation.utils import GenerationMixin

    parameters = inspect.signature(GenerationMixin.generate).parameters
    assert {"assistant_model", "streamer", "custom_generate"} <= set(parameters)
    seen = {}

    def recording(
        model, input_ids, logits_processor=None, stopping_criteria=None, generation_config=None, **kwargs
    ):
        seen.update(kwargs, fallback=hf_generate.generate_call_arguments(), config=generation_config)
        return input_ids

    def recording_with_names(model, input_ids, assistant_model=None, streamer=None, **kwargs):
        seen.update(named=(assistant_model, streamer))
        return input_ids

    class Streamer:
        def put(self, value):
            pass

        def end(self):
            pass

    ids, streamer = torch.tensor([PROMPTS[0]]), Streamer()
    call = dict(assistant_model=llama.drafter.model, streamer=streamer, max_new_tokens=2, eos_token_id=[1, 3])
    llama.verifier.model.generate(ids, custom_generate=recording, **call)
    assert "assistant_model" not in seen and "streamer" not in seen  # not handed to the callable...
    assert seen["fallback"] == {"assistant_model": llama.drafter.model, "streamer": streamer}  # ...found here
    # the EOS and pad ids the callables read: public fields of the generation config
    assert hf_generate.special_token_ids(seen["config"]) == ((1, 3), 0)
    llama.verifier.model.generate(ids, custom_generate=recording_with_names, **call)
    assert seen["named"] == (None, None)  # not even to a callable whose signature names them
    # the public route: a folder loaded by name gets every argument of the call, these two among them
    (tmp_path / "custom_generate").mkdir()
    (tmp_path / "custom_generate" / "generate.py").write_text(
        "def generate(model, **arguments):\n    return arguments\n"
    )
    arguments = llama.verifier.model.generate(
        ids, custom_generate=str(tmp_path), trust_remote_code=True, **call
    )
    assert arguments["assistant_model"] is llama.drafter.model and arguments["streamer"] is streamer


# ---- the library's tokens ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smollm2_pair():
    use_shared_model_cache()
    verifier = models.load_model("smollm2-135m", dtype="float32")
    return models.ModelPair(layer_skip_drafter(verifier, SMOLLM2_DRAFTER_LAYERS), verifier)


@pytest.fixture(scope="module")
def smollm2_prompt(smollm2_pair):
    return smollm2_pair.verifier.chat_prompt("Explain in two sentences why the sky is blue.")


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("rule, alpha, beta", CASES, ids=CASE_IDS)
def test_greedy_tokens_on_smollm2_are_tl_generates(smollm2_pair, smollm2_prompt, rule, alpha, beta):
    options = dict(rule=rule, alpha=alpha, beta=beta, gamma=4, max_new_tokens=12)
    mine = folder_tokens(smollm2_pair, smollm2_prompt, do_sample=False, **options)
    reference = generate(*smollm2_pair, smollm2_prompt, method="speculative", **options)
    assert mine == reference.tokens


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("which", ["llama", "t5"])
@pytest.mark.parametrize("rule, alpha, beta", CASES, ids=CASE_IDS)
def test_tiny_pairs_give_tl_generates_tokens_greedy_and_sampled(request, which, rule, alpha, beta):
    pair = request.getfixturevalue(which)
    for temperature, seed, bonus in ((0.0, None, "verifier"), (1.0, 7, "verifier"), (0.7, 8, "none")):
        options = dict(rule=rule, alpha=alpha, beta=beta, gamma=3, max_new_tokens=12, bonus=bonus)
        sampling = dict(do_sample=False) if temperature == 0 else dict(do_sample=True, top_k=None)
        if temperature not in (0.0, 1.0):
            sampling["temperature"] = temperature
        for prompt in PROMPTS[:2]:
            mine = folder_tokens(
                pair, prompt, **options, **sampling, seed=seed, eos_token_id=EOS, pad_token_id=0
            )
            reference = generate(
                *pair,
                prompt,
                method="speculative",
                **options,
                temperature=temperature,
                seed=seed or 0,
                eos_token_id=EOS,
            )
            assert mine == reference.tokens, (temperature, prompt)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("which", ["llama", "t5"])
def test_batch_rows_equal_single_runs_and_the_streamer_gets_each_token(request, which):
    pair = request.getfixturevalue(which)
    width = max(len(p) for p in PROMPTS)
    ids = torch.tensor([[0] * (width - len(p)) + list(p) for p in PROMPTS])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in PROMPTS])
    options = dict(rule="token_v2", alpha=0.1, gamma=3, max_new_tokens=10, do_sample=True, top_k=None)
    batch = pair.verifier.model.generate(
        ids,
        attention_mask=mask,
        assistant_model=pair.drafter.model,
        custom_generate=str(FOLDER),
        trust_remote_code=True,
        seed=40,
        eos_token_id=EOS,
        pad_token_id=0,
        return_dict_in_generate=True,
        **options,
    ).sequences
    start = 1 if pair.verifier.is_encoder_decoder else width
    for i, prompt in enumerate(PROMPTS):
        alone = folder_tokens(pair, prompt, seed=40 + i, eos_token_id=EOS, pad_token_id=0, **options)
        row = batch[i, start:].tolist()
        assert row[: len(alone)] == alone and set(row[len(alone) :]) <= {0}
    puts = []

    class Streamer:
        def put(self, value):
            puts.append(value.reshape(-1).tolist())

        def end(self):
            puts.append("end")

    prompt = PROMPTS[2]
    streamed = folder_tokens(pair, prompt, streamer=Streamer(), seed=3, eos_token_id=EOS, **options)
    assert puts[-1] == "end" and all(len(put) == 1 for put in puts[1:-1])
    assert sum(puts[1:-1], []) == streamed  # each emitted token, as it is emitted (after the prompt)


def test_what_the_folder_does_not_run_is_refused_by_name(llama):
    ids = torch.tensor([PROMPTS[0]])
    call = dict(custom_generate=str(FOLDER), trust_remote_code=True, max_new_tokens=3, pad_token_id=0)
    for options, named in [
        (dict(rule="token_v9"), "rule"),
        (dict(rule="chow", alpha=3.0), "alpha"),
        (dict(gamma="auto"), "tutorial_lib"),
        (dict(method="oracle"), "method"),
        (dict(bonus="target"), "bonus"),
        (dict(do_sample=True), "top_k"),
        (dict(num_beams=2), "num_beams"),
    ]:
        with pytest.raises(ValueError, match=named):
            llama.verifier.model.generate(ids, assistant_model=llama.drafter.model, **call, **options)
    with pytest.raises(ValueError, match="assistant_model"):
        llama.verifier.model.generate(ids, **call)


# ---- the first token's law at T = 1 ------------------------------------------------------------------------


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("rule", ["chow", "opt", "token_v2", "mixture", "lossy"])
def test_first_sampled_token_follows_the_rules_target(llama, rule):
    n, prompt, alpha = 1000, PROMPTS[0], ALPHAS[rule]
    out = llama.verifier.model.generate(
        torch.tensor([prompt] * n),
        assistant_model=llama.drafter.model,
        custom_generate=str(FOLDER),
        trust_remote_code=True,
        rule=rule,
        alpha=alpha,
        do_sample=True,
        top_k=None,
        max_new_tokens=1,
        seed=11,
        eos_token_id=EOS,
        pad_token_id=0,
    )
    counts = np.bincount(out[:, len(prompt)].numpy(), minlength=models.TINY_VOCAB)
    q, p = (x.double() for x in models.next_token_distributions(llama, prompt))
    pi = targets.target_distribution(rule, q, p, alpha)
    law = accept_reject.output_distribution(pi, q)  # pi itself, but for lossy's unnormalised target
    if rule != "lossy":
        assert torch.allclose(law, pi)
    assert chi_square_p_value(counts, law.numpy() * n) > 1e-3
    # the test sees a wrong law as wrong: the one of the drafter's and the verifier's farther from the target
    wrong = max((q, p), key=lambda x: float(laws.tv_distance(law, x)))
    assert float(laws.tv_distance(law, wrong)) > 0.1
    assert chi_square_p_value(counts, wrong.numpy() * n) < 1e-3


# ---- a fresh virtual environment: torch and transformers only ---------------------------------------------

#: Run by the fresh environment's Python: loads the models from local folders, decodes through the folder,
#: and prints one JSON line with what it found.
FRESH_SCRIPT = r"""
import importlib.util, json, os, sys, time
import torch
from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

spec = json.loads(sys.argv[1])
torch.set_num_threads(1)
import transformers
report = {"tutorial_lib": importlib.util.find_spec("tutorial_lib") is not None, "runs": []}
report.update(torch=torch.__version__, transformers=transformers.__version__)
for job in spec["jobs"]:
    tic = time.perf_counter()
    if job["kind"] == "causal":
        verifier = AutoModelForCausalLM.from_pretrained(job["verifier"], dtype=torch.float32)
        drafter = AutoModelForCausalLM.from_pretrained(
            job["verifier"], dtype=torch.float32, num_hidden_layers=job["drafter_layers"]
        )
        ids = torch.tensor([job["prompt"]])
        start = ids.shape[1]
        text = AutoTokenizer.from_pretrained(job["verifier"]).decode(job["prompt"])
    else:
        verifier = AutoModelForSeq2SeqLM.from_pretrained(job["verifier"], dtype=torch.float32)
        drafter = AutoModelForSeq2SeqLM.from_pretrained(job["drafter"], dtype=torch.float32)
        ids, start, text = torch.tensor([job["prompt"]]), 1, None
    for run in job["runs"]:
        out = verifier.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            assistant_model=drafter,
            custom_generate=spec["folder"],
            trust_remote_code=True,
            **run,
        )
        report["runs"].append({"job": job["name"], **run, "tokens": out[0, start:].tolist()})
    report[job["name"] + "_seconds"] = time.perf_counter() - tic
    report[job["name"] + "_prompt_text"] = text
print("REPORT " + json.dumps(report))
"""


def _fresh_env(home: Path) -> dict:
    """The environment of a process in the fresh venv: offline, its own Hugging Face home (so the folder's
    module is copied into a new modules cache), and nothing that points back at this checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=str(home), PYTHONNOUSERSITE="1")
    return env


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory):
    """A virtual environment with only torch and transformers (and their dependencies) installed, made
    once per test module: `python -m venv`, then one `pip install --no-compile` of the two pinned versions
    (torch first from the machine's CPU wheel, by pip's configuration). About 30 s here, with pip's cache."""
    root = tmp_path_factory.mktemp("fresh-venv")
    venv, python = root / "venv", root / "venv" / "bin" / "python"
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "--no-compile", "--quiet", *FRESH_REQUIREMENTS],
    ]
    tic = time.perf_counter()
    for step in steps:
        try:
            done = subprocess.run(
                step, capture_output=True, text=True, timeout=1200, cwd=root, env=_fresh_env(root)
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"building the fresh venv timed out at `{' '.join(step)}` (after 1200 s)")
        if done.returncode != 0:
            pytest.fail(
                f"the fresh venv could not be built: `{' '.join(step)}` exited {done.returncode}:\n"
                f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
    print(f"fresh venv ({' '.join(FRESH_REQUIREMENTS)}) built in {time.perf_counter() - tic:.1f} s")
    return python


def test_the_fresh_venv_has_torch_and_transformers_and_no_tutorial_lib(fresh_venv, tmp_path):
    listed = subprocess.run(
        [str(fresh_venv), "-m", "pip", "list", "--format=json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_fresh_env(tmp_path),
    )
    installed = {row["name"].lower().replace("_", "-") for row in json.loads(listed.stdout)}
    assert {"torch", "transformers"} <= installed
    assert not any("tutorial" in name for name in installed)
    assert not any(name.startswith("nvidia-") for name in installed)  # the CPU wheel, not a CUDA build
    probe = subprocess.run(
        [str(fresh_venv), "-c", "import tutorial_lib"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_fresh_env(tmp_path),
    )
    assert probe.returncode != 0 and "No module named 'tutorial_lib'" in probe.stderr


#: The three rules the fresh environment decodes with, on each model.
FRESH_RUNS = [
    dict(rule="spec", gamma=3),
    dict(rule="token_v2", alpha=0.1, gamma=3),
    dict(rule="chow", alpha=0.5, gamma=3),
]


@pytest.mark.usefixtures("one_thread")
def test_a_fresh_venv_loads_the_folder_offline_and_decodes_like_tl_generate(
    fresh_venv, tmp_path, smollm2_pair, smollm2_prompt, t5
):
    folder = tmp_path / "speculative-cascades"  # a copy, away from this checkout
    shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns("__pycache__"))
    smollm2_dir = models.files.offline_model_dir("smollm2-135m", progress=False)
    t5_dirs = {}
    for which, lm in (("verifier", t5.verifier), ("drafter", t5.drafter)):
        t5_dirs[which] = tmp_path / f"tiny-t5-{which}"
        lm.model.save_pretrained(t5_dirs[which])
    greedy = dict(max_new_tokens=12, do_sample=False)
    sampled = dict(max_new_tokens=12, do_sample=True, top_k=None, seed=5)
    spec = {
        "folder": str(folder),
        "jobs": [
            {
                "name": "smollm2",
                "kind": "causal",
                "verifier": str(smollm2_dir),
                "drafter_layers": SMOLLM2_DRAFTER_LAYERS,
                "prompt": smollm2_prompt,
                "runs": [{**run, **greedy} for run in FRESH_RUNS],
            },
            {
                "name": "t5",
                "kind": "seq2seq",
                "verifier": str(t5_dirs["verifier"]),
                "drafter": str(t5_dirs["drafter"]),
                "prompt": list(PROMPTS[2]),
                "runs": [{**run, **greedy, "eos_token_id": EOS} for run in FRESH_RUNS]
                + [{**FRESH_RUNS[1], **sampled, "eos_token_id": EOS}],
            },
        ],
    }
    script = tmp_path / "decode.py"
    script.write_text(FRESH_SCRIPT)
    done = subprocess.run(
        [str(fresh_venv), str(script), json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
        env=_fresh_env(tmp_path / "hf-home"),
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("REPORT ")]
    assert done.returncode == 0 and lines, (
        f"the fresh venv failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    )
    report = json.loads(lines[-1][len("REPORT ") :])
    assert report["tutorial_lib"] is False
    assert report["transformers"] == transformers.__version__
    assert "sky is blue" in report["smollm2_prompt_text"]  # its tokenizer read the converted folder too
    # the folder's module was loaded through transformers' dynamic-module cache in the fresh HF home
    assert list((tmp_path / "hf-home").rglob("custom_generate/generate.py"))
    pairs = {"smollm2": (smollm2_pair, smollm2_prompt), "t5": (t5, list(PROMPTS[2]))}
    assert len(report["runs"]) == 7
    for run in report["runs"]:
        pair, prompt = pairs[run["job"]]
        reference = generate(
            *pair,
            prompt,
            method="speculative",
            rule=run["rule"],
            alpha=run.get("alpha"),
            gamma=run["gamma"],
            max_new_tokens=run["max_new_tokens"],
            temperature=1.0 if run["do_sample"] else 0.0,
            seed=run.get("seed", 0),
            eos_token_id=run.get("eos_token_id"),
        )
        assert run["tokens"] == reference.tokens, run
