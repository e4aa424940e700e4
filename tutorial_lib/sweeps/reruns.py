r"""The paper's two evaluations as profiles: which models, tasks and settings each notebook run uses.

`notebooks/06_t5_evaluation` reruns the T5 experiments (quality against latency at batch size 1)
and `notebooks/07_gemma_evaluation` the Gemma ones (quality against rejection rate at
$\gamma = 1$). Each has a few profiles, chosen by the notebook's `profile` parameter:

| profile | models | tasks |
|---|---|---|
| `hub` | the paper's families from the Hugging Face hub | the real datasets through `datasets.load_dataset` |
| `offline` (T5's default) | models that run here without a network | task sets the package makes or ships |
| `offline-all` (Gemma) | as `offline` | every item of the smaller offline sets, room to answer |
| `offline-large` (Gemma's default) | as `offline` | HumanEval (164), arithmetic-300, facts (49): enough items to decide |
| `full` (T5) | as `offline` | more examples, the whole grid |
| `smoke` | the cheapest models | a few examples (`make test`) |

Everything a profile decides is a plain dict, so a notebook shows it and a reader can change it.
"""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Dict, List, Optional

from . import evaluation as ev

if TYPE_CHECKING:   # annotations only: the wing loads pandas when a sweep does
    import pandas as pd

__all__ = ["T5_PROFILES", "T5_OFFLINE_ALPHAS", "T5_OFFLINE_ALPHAS_T0", "GEMMA_PROFILES", "GEMMA_MIDDLE_ALPHAS", "GEMMA_GREEDY_ALPHAS", "SECOND_SEED_PROFILES", "second_seed_rows", "T5_HUB_DATASETS", "t5_profile", "gemma_profile", "t5_hub_task", "t5_tasks",
           "t5_training_budget", "t5_configs", "load_t5_pair", "gemma_tasks", "load_gemma_pair", "latency_pair",
           "gemma_configs", "latency_configs", "LATENCY_KEYS", "run_config", "latency_run_config", "saved_pair", "describe_pair", "task_table"]

# ---- T5 -------------------------------------------------------------------------------------------

#: T5 was trained with these task prefixes (Raffel et al., appendix D); `t5-small` / `t5-large`
#: translate and summarise with them out of the box.
T5_PREFIXES = {"wmt_en_de": "translate English to German: ", "cnn_dailymail": "summarize: ",
               "xsum": "summarize: "}

#: The offline T5 profile's alphas: 5 interior points per rule plus its two ends, placed so that their
#: rejection rates spread evenly between the rule's SpecDecode and drafter ends
#: (`alpha_grids.placed_alphas(result, 5, ends=True)` on the token-level analysis `token_curves.analyse`
#: of the synthetic T5 pair along the 60 first held-out reference translations, T = 1). The curves not
#: in that analysis (sequential and token cascades, original BiLD) use `n_alpha`-point grids.
T5_OFFLINE_ALPHAS: Dict[str, List[float]] = {
    "SpecCascade [Chow]": [0.0, 0.0046, 0.1089, 0.3841, 0.5221, 0.6376, 1.0],
    "SpecCascade [Diff]": [-1.0, 0.0011, 0.0204, 0.1881, 0.4269, 0.6016, 1.0],
    "SpecCascade [OPT]": [-1.0, 0.0011, 0.0333, 0.6101, 0.9389, 0.9938, 1.0],
    "SpecCascade [Token-V1]": [-1.0, 0.0033, 0.1061, 0.5722, 0.8095, 0.9397, 1.0],
    "SpecCascade [Token-V2]": [-1.0, 0.725, 0.9812, 0.9914, 0.9943, 0.9971, 1.0],
    "SpecCascade [Token-V3]": [0.0, 0.995, 0.996, 0.997, 0.998, 0.999, 1.0],
    "SpecDecode [Lossy]": [0.0, 0.954, 0.9935, 0.9961, 0.9974, 0.9987, 0.999],
    "Lossy*": [0.0, 0.954, 0.9935, 0.9961, 0.9974, 0.9987, 0.999],
    "BiLD*": [0.0, 0.3447, 0.5643, 0.7695, 0.9571, 0.9965, 1.0],
}

#: The offline T5 profile's alphas at T = 0 (`benchmarks/t5_alpha_placement.py`, the same 60 sentences
#: at T = 0). At T = 0 a rule's rejection rate against alpha is a staircase and the T = 1 alphas bunch
#: on a few of its steps (Lossy's seven runs were SpecDecode's, OPT's five distinct of seven), so each
#: rule gets one alpha per step, 5 steps spread in rejection level (`alpha_grids.plateau_alphas`), plus
#: its ends. Lossy and Lossy* are SpecDecode at T = 0 for every alpha below 1: not run there (an empty
#: list). Diff, OPT and Token-V1 share one staircase on these sentences (at T = 0 OPT emits Diff's tokens).
T5_OFFLINE_ALPHAS_T0: Dict[str, List[float]] = {
    "SpecCascade [Chow]": [0.0, 0.005, 0.23, 0.475, 0.605, 0.915, 1.0],
    "SpecCascade [Diff]": [-1.0, -0.42, 0.0, 0.07, 0.42, 0.89, 1.0],
    "SpecCascade [OPT]": [-1.0, -0.42, 0.0, 0.07, 0.42, 0.89, 1.0],
    "SpecCascade [Token-V1]": [-1.0, -0.42, 0.0, 0.07, 0.42, 0.89, 1.0],
    "SpecCascade [Token-V2]": [-1.0, 0.01, 0.2, 0.62, 0.92, 0.99, 1.0],
    "SpecCascade [Token-V3]": [0.0, 0.025, 0.175, 0.545, 0.94, 0.995, 1.0],
    "SpecDecode [Lossy]": [],
    "Lossy*": [],
    "BiLD*": [0.0, 0.055, 0.455, 0.755, 0.915, 0.995, 1.0],
}

T5_PROFILES: Dict[str, dict] = {
    # the original multi-task T5 checkpoints, not the paper's fine-tuned T5 v1.1 (see notebook 06)
    "hub": dict(drafter="google-t5/t5-small", verifier="google-t5/t5-large", dtype="float32", device="cuda",
                tasks=["wmt_en_de", "cnn_dailymail", "xsum"], n_examples=200,
                gammas=[3, 5, 7], temperatures=[0.0, 1.0], n_alpha=7, alphas=None, curves=ev.T5_CURVES),
    # 200 held-out sentences; every rule 5 interior alphas placed at each T (T5_OFFLINE_ALPHAS at T = 1,
    # T5_OFFLINE_ALPHAS_T0 at T = 0), the other curves 7-point grids
    "offline": dict(drafter="synthetic-t5-drafter", verifier="synthetic-t5-verifier", dtype="float32",
                    device="cpu", tasks=["synthetic_mt"], n_examples=200, gammas=[5], temperatures=[0.0, 1.0],
                    n_alpha=7, alphas={label: {0.0: T5_OFFLINE_ALPHAS_T0[label], 1.0: T5_OFFLINE_ALPHAS[label]}
                                       for label in T5_OFFLINE_ALPHAS}, curves=ev.T5_CURVES),
    "full": dict(drafter="synthetic-t5-drafter", verifier="synthetic-t5-verifier", dtype="float32",
                 device="cpu", tasks=["synthetic_mt"], n_examples=300, gammas=[3, 5, 7],
                 temperatures=[0.0, 1.0], n_alpha=9, alphas=None, curves=ev.T5_CURVES),
    "smoke": dict(drafter="synthetic-t5-drafter:tiny", verifier="synthetic-t5-verifier:tiny", dtype="float32",
                  device="cpu", tasks=["synthetic_mt"], n_examples=3, gammas=[3], temperatures=[1.0],
                  n_alpha=2, alphas=None, curves=ev.T5_CURVES),
}


def _profile(profiles: Dict[str, dict], name: str, overrides: Optional[dict]) -> dict:
    if name not in profiles:
        raise ValueError(f"profile={name!r} is unknown; choose one of {', '.join(profiles)}.")
    settings = copy.deepcopy(profiles[name])
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        if key not in settings:
            raise ValueError(f"{key!r} is not a setting of the {name!r} profile; settings: {', '.join(settings)}.")
        settings[key] = value
    settings["profile"] = name
    return settings


def t5_profile(name: str = "offline", **overrides) -> dict:
    """The settings of one T5 profile; keyword arguments that are not None replace settings."""
    return _profile(T5_PROFILES, name, overrides)


#: The T5 rerun's hub datasets: hub id (`namespace/name`), config, the Parquet conversion where the
#: main branch still loads through a script (which `datasets` >= 4 refuses), the source and reference
#: columns, and the input cut in T5 tokens. The paper evaluates on validation samples with WMT inputs
#: cut to 80 tokens and XSum's to 1,024; CNN/DM articles are cut to 1,024 as well (our choice).
T5_HUB_DATASETS: Dict[str, dict] = {
    "wmt_en_de": dict(path="wmt/wmt14", name="de-en", revision=None, metric="bleu", max_new_tokens=128,
                      max_input_tokens=80, source=lambda row: row["translation"]["en"],
                      target=lambda row: row["translation"]["de"]),
    "cnn_dailymail": dict(path="abisee/cnn_dailymail", name="3.0.0", revision=None, metric="rouge2",
                          max_new_tokens=128, max_input_tokens=1024, source=lambda row: row["article"],
                          target=lambda row: row["highlights"]),
    "xsum": dict(path="EdinburghNLP/xsum", name=None, revision="refs/convert/parquet", metric="rouge2",
                 max_new_tokens=64, max_input_tokens=1024, source=lambda row: row["document"],
                 target=lambda row: row["summary"]),
}


def t5_hub_task(name: str, n: int, *, split: str = "validation") -> ev.Task:
    """A T5 task from the hub (needs a network): WMT14 EN->DE (BLEU), CNN/DailyMail or XSum (ROUGE-2),
    the first `n` items of `split` (validation, as the paper), inputs cut as the paper cuts them."""
    if name not in T5_HUB_DATASETS:
        raise ValueError(f"task {name!r} is unknown; choose one of {', '.join(T5_HUB_DATASETS)}.")
    spec = T5_HUB_DATASETS[name]
    options = {"split": split, **({"revision": spec["revision"]} if spec["revision"] else {})}
    try:
        from datasets import load_dataset
        data = load_dataset(spec["path"], spec["name"], **options) if spec["name"] else \
            load_dataset(spec["path"], **options)
    except Exception as error:  # noqa: BLE001 - no network, no access, or the hub moved the dataset
        where = spec["path"] + (f" ({spec['name']})" if spec["name"] else "") + f", split {split!r}"
        raise OSError(f"could not load {where} through datasets.load_dataset ({type(error).__name__}: {error}); "
                      "without access to the hub use profile='offline'.") from error
    pairs = [(spec["source"](row), spec["target"](row)) for row in data.select(range(min(n, len(data))))]
    examples = [{"id": f"{name}-{i}", "prompt": T5_PREFIXES[name] + source, "references": [target]}
                for i, (source, target) in enumerate(pairs)]
    return ev.Task(name, spec["metric"], examples, max_new_tokens=spec["max_new_tokens"],
                   max_input_tokens=spec["max_input_tokens"])


def t5_tasks(settings: dict) -> List[ev.Task]:
    """The profile's tasks: the hub datasets, or held-out sentences of the synthetic translation task."""
    if settings["profile"] == "hub":
        return [t5_hub_task(name, settings["n_examples"]) for name in settings["tasks"]]
    from ..toy import synthetic_mt
    examples = synthetic_mt.TranslationGrammar().examples(settings["n_examples"], split="test")
    # the longest valid translation has 13 words; a model that has not learned to stop gets a few more
    return [ev.Task("synthetic_mt", "bleu", examples, max_new_tokens=20)]


def t5_configs(settings: dict) -> List[ev.Config]:
    """The T5 sweep: every curve over its grid (the profile's `alphas` where it gives them, else an
    `n_alpha`-point grid over the curve's live range), at every gamma and temperature."""
    return ev.sweep_configs(settings["curves"], gammas=settings["gammas"], temperatures=settings["temperatures"],
                            n_alpha=settings["n_alpha"], alphas=settings.get("alphas"))


def t5_training_budget(settings: dict) -> Optional[str]:
    """The `synthetic_t5.train_t5_pair` budget a T5 profile's models need ("default", "tiny"), or None
    where they are not trained here (the hub's T5s)."""
    names = [settings["drafter"], settings["verifier"]]
    if not all(name.startswith("synthetic-t5-") for name in names):
        return None
    budgets = {name.partition(":")[2] or "default" for name in names}
    if len(budgets) != 1:
        raise ValueError(f"the drafter and verifier {names} were trained with different budgets; use one.")
    return budgets.pop()


def load_t5_pair(settings: dict, **placement):
    """The drafter and verifier of a T5 profile. The offline pair must be trained first:
    `synthetic_t5.train_t5_pair(budget=t5_training_budget(settings))` (loading never trains).
    `placement` (`device_map`, `max_memory`) goes to `load_pair`."""
    from ..models.adapter import load_pair
    return load_pair(settings["drafter"], settings["verifier"], dtype=settings["dtype"], device=settings["device"],
                     **placement)


# ---- both -----------------------------------------------------------------------------------------

#: The settings of a profile's batch-size-1 latency rows alone: how many items, which block sizes and
#: curves, and the kernel paths the pair is put on for them (`latency_paths`, a drafter's and a
#: verifier's, as `models.load_pair(kernel_paths=)` takes them). They decide no row of the batched sweep,
#: so they are left out of its folder's hash: the latency rows can be measured again on another path or
#: on more items without moving the sweep's rows.
LATENCY_KEYS = ("latency_items", "latency_gammas", "latency_curves", "latency_paths")


def run_config(settings: dict) -> dict:
    """What a profile adds to its sweep's configuration (and so to the folder's hash): every
    setting but the list of curves and the latency rows' settings (`LATENCY_KEYS`)."""
    return {"profile": {k: v for k, v in settings.items() if k != "curves" and k not in LATENCY_KEYS}}


def latency_run_config(settings: dict) -> dict:
    """What a profile adds to its latency rows' configuration (and so to their folder's hash): every
    setting but the list of curves, the latency rows' own settings included."""
    return {"profile": {k: v for k, v in settings.items() if k != "curves"}}


def saved_pair(name: str, settings: dict, *, results_dir=None):
    """Stand-ins for the models of the saved sweep `name` run with these settings, so a notebook
    redraws its tables and figures from the saved rows without loading (or training) the models."""
    install = ("make models-qwen" if "qwen" in settings["verifier"] else
               "tutorial_lib.models.synthetic_t5.train_t5_pair()" if settings["verifier"].startswith("synthetic-t5")
               else f"load {settings['drafter']} and {settings['verifier']}")
    return ev.saved_models(name, root=results_dir, extra_config=run_config(settings), install=install)


def describe_pair(pair) -> "pd.DataFrame":
    """One row per model: role, name, parameters, and for encoder-decoders the layers and width
    (models that are not loaded, `evaluation.ModelRecord`, show their name only)."""
    import pandas as pd
    rows = []
    for role, lm in zip(("drafter", "verifier"), pair):
        row = {"role": role, "name": lm.name}
        network = getattr(lm, "model", None)
        if hasattr(network, "parameters"):
            row["parameters"] = sum(w.numel() for w in network.parameters())
            row["dtype"] = str(lm.dtype).replace("torch.", "")
            config = getattr(network, "config", None)
            if getattr(config, "is_encoder_decoder", False):
                row["layers (enc+dec)"] = f"{config.num_layers}+{config.num_decoder_layers}"
                row["d_model"] = config.d_model
        else:
            row["parameters"] = "not loaded (saved rows only)"
        rows.append(row)
    return pd.DataFrame(rows)


def task_table(tasks: List[ev.Task], verifier=None) -> "pd.DataFrame":
    """One row per task: metric, items, the cap on new tokens, and (given the verifier, loaded) the
    mean prompt length in its tokens."""
    import numpy as np
    import pandas as pd
    rows = []
    for task in tasks:
        row = {"task": task.name, "metric": task.metric_name, "items": len(task.examples),
               "max_new_tokens": task.max_new_tokens}
        if hasattr(verifier, "chat_prompt"):
            row["prompt tokens (mean)"] = np.mean([len(verifier.chat_prompt(e.prompt) if task.chat
                                                       else verifier.encode(e.prompt)) for e in task.examples])
        rows.append(row)
    return pd.DataFrame(rows)


# ---- Gemma ----------------------------------------------------------------------------------------

#: One alpha inside each rule's range (the offline and smoke profiles; the curves' ends are measured too).
_ONE_ALPHA_PER_RULE = {"SpecDecode [Lossy]": [0.5], "SpecCascade [Chow]": [0.4], "SpecCascade [Diff]": [0.1],
                       "SpecCascade [OPT]": [1.0], "SpecCascade [Token-V1]": [0.1], "SpecCascade [Token-V2]": [0.1],
                       "SpecCascade [Token-V3]": [0.5]}

#: The offline-all profile's alphas: 3 interior points per rule (Token-V3 also its alpha = 0 end, which
#: is not SpecDecode), at the rejection rates 3/4, 1/2 and 1/4 of the way from the SpecDecode end to the
#: drafter end of the rule's pooled rejection curve (`alpha_grids.placed_alphas(result, 3)`) in the
#: token-level analysis of the Qwen pair (`token_curves.analyse`, gold answers, T = 1; notebook 08):
#: `data/results/token-analysis-4368c63a9810`, all 162 offline items (tests/test_alpha_grids.py rechecks).
GEMMA_OFFLINE_ALPHAS: Dict[str, List[float]] = {
    "SpecCascade [Chow]": [0.1414, 0.3509, 0.5724],
    "SpecCascade [Diff]": [-0.071, 0.0834, 0.2796],
    "SpecCascade [OPT]": [-0.1772, 0.2739, 0.826],
    "SpecCascade [Token-V1]": [0.1594, 0.4757, 0.7617],
    "SpecCascade [Token-V2]": [0.4897, 0.7563, 0.9355],
    "SpecCascade [Token-V3]": [0.0, 0.8572, 0.9759, 0.988],
    "SpecDecode [Lossy]": [0.3598, 0.7505, 0.9548],
}

#: The offline-large profile's alphas at T = 1: one interior alpha per rule, at the rejection rate halfway
#: from SpecDecode to the drafter on the analysis that placed GEMMA_OFFLINE_ALPHAS
#: (`alpha_grids.placed_alphas(result, 1)`, without Token-V3's alpha = 0 end): the middle of those three.
GEMMA_MIDDLE_ALPHAS: Dict[str, List[float]] = {
    "SpecCascade [Chow]": [0.3509],
    "SpecCascade [Diff]": [0.0834],
    "SpecCascade [OPT]": [0.2739],
    "SpecCascade [Token-V1]": [0.4757],
    "SpecCascade [Token-V2]": [0.7563],
    "SpecCascade [Token-V3]": [0.9759],
    "SpecDecode [Lossy]": [0.7505],
}

#: The offline-large profile's alphas at T = 0, for the three Token rules only. At T = 0 a Token rule emits
#: the drafter's top token when it lies in the rule's acceptance set (built from the temperature-1 laws)
#: and the verifier's top token otherwise, so its rejection rate falls along a different curve than at
#: T = 1, and the T = 1 placements bunch up. Placed as at T = 1 but on a token-level
#: analysis at T = 0: `benchmarks/greedy_alpha_analysis.py` (`token_curves.analyse` at T = 0 along the
#: gold answers of the first 16 items of code, arithmetic and facts, 101-point grids), committed in
#: `data/results/token-analysis-467910ba0826` (tests/test_offline_large.py rechecks); one alpha per
#: rule, at the rejection rate halfway from SpecDecode to the drafter (`alpha_grids.placed_alphas(result,
#: 1)`; with 5 per rule it gives Token-V1 -0.1267..0.3733, V2 0.1633..0.8978, V3 0.5133..0.9929, far
#: from the T = 1 placements). Token-V3's alpha = 0 end is left out: at T = 0 it accepts
#: the drafted token exactly when it is the verifier's top token, which is SpecDecode.
GEMMA_GREEDY_ALPHAS: Dict[str, List[float]] = {
    "SpecCascade [Token-V1]": [0.08],
    "SpecCascade [Token-V2]": [0.515],
    "SpecCascade [Token-V3]": [0.85],
}

GEMMA_PROFILES: Dict[str, dict] = {
    "hub": dict(drafter="google/gemma-2-2b-it", verifier="google/gemma-2-9b-it", dtype="bfloat16", device="cuda",
                tasks=["wmt", "cnn_dailymail", "gsm8k", "mbpp", "squad_v2", "web_questions", "natural_questions",
                       "trivia_qa"],
                n_items=500, temperatures=[1.0, 0.0], curves=ev.GEMMA_CURVES, n_alpha=7, alphas=None,
                greedy_curves=None,
                batch_size=32, latency_items=20, latency_gammas=[1, 5], latency_curves=None,
                max_new_tokens=None, shots=None),
    # fp32, not bf16: this CPU has no bf16 matrix units, and batched bf16 forward passes measured 2-8x
    # slower than fp32 here (a 16-prompt prefill of the 1.5B: 242 s in bf16, 42 s in fp32).
    "offline": dict(drafter="qwen2.5-coder-0.5b", verifier="qwen2.5-coder-1.5b", dtype="float32", device="cpu",
                    tasks=["code", "arithmetic", "facts"], n_items=16, temperatures=[1.0, 0.0],
                    curves=ev.GEMMA_CURVES, n_alpha=3, batch_size=16,
                    # one alpha inside each rule's range; the curves' ends are the drafter and SpecDecode
                    alphas=_ONE_ALPHA_PER_RULE,
                    greedy_curves=["Drafter", "Verifier", "SpecDecode", "SpecCascade [Token-V2]"],
                    latency_items=1, latency_gammas=[1, 5],
                    latency_curves=["Verifier", "SpecDecode", "SpecCascade [Token-V2]"],
                    max_new_tokens={"code": 40, "arithmetic": 40, "facts": 10},
                    shots={"code": 1, "arithmetic": 2, "facts": 4}),
    # Every offline item (53 + 60 + 49), 3 interior alphas per rule placed along its rejection curve
    # (GEMMA_OFFLINE_ALPHAS), room to answer: a pilot of the verifier's answers to every fourth item
    # (T = 0 and 1) ran to 306 tokens in arithmetic and 243 in code, and 4 of 15 arithmetic answers
    # passed 160. Chunks of 8 items decode all 31 configurations at once (`config_batch`: up to 248
    # rows, which keeps the KV caches of the longest answers within memory).
    "offline-all": dict(drafter="qwen2.5-coder-0.5b", verifier="qwen2.5-coder-1.5b", dtype="float32", device="cpu",
                        tasks=["code", "arithmetic", "facts"], n_items=None, temperatures=[1.0, 0.0],
                        curves=ev.GEMMA_CURVES, n_alpha=3, batch_size=8, alphas=GEMMA_OFFLINE_ALPHAS,
                        greedy_curves=["Drafter", "Verifier", "SpecDecode", "SpecCascade [Token-V2]"],
                        latency_items=4, latency_gammas=[1, 5],
                        latency_curves=["Verifier", "SpecDecode", "SpecCascade [Token-V2]"],
                        max_new_tokens={"code": 256, "arithmetic": 320, "facts": 24},
                        shots={"code": 1, "arithmetic": 2, "facts": 4}),
    # Enough items to decide: HumanEval's 164 problems (zero-shot), 300 generated
    # arithmetic problems (the first 60 those of `offline-all`), the 49 facts: 513 items.
    # Budget (at most about 6 h from empty on this machine, quiet). The committed offline-all rows give
    # each task's rate (rows per minute, batch shares of wall time): arithmetic 15.4, code 31.0, facts
    # 340; in its one quiet session arithmetic ran at about 13. A row costs about its answer's tokens
    # (arithmetic answers average 110-119 tokens, code 46-61), so rows per minute ~ 1,750 / tokens. HumanEval
    # replies restating the docstring would average about 190 tokens (the prompt plus the canonical
    # solution), so the prompt asks for the function without it (about 60-90 tokens). One configuration
    # then costs about 300 / 15 = 20 min of arithmetic, 164 / 20 = 8 min of HumanEval and 0.2 min of
    # facts: about 28 min, so 6 h hold about 13 configurations' worth. Hence one interior alpha per rule:
    # at T = 1 the 10 curves of GEMMA_CURVES, each rule at the middle alpha of its offline-all placement
    # (rejection rate halfway from SpecDecode to the drafter; the same configuration keys as offline-all);
    # at T = 0 the verifier, SpecDecode (at T = 0 the verifier's own tokens: it shares every forward
    # pass with the verifier's row) and the three Token rules at the alpha placed halfway on the T = 0
    # analysis (GEMMA_GREEDY_ALPHAS). Lossy equals SpecDecode at T = 0 and Token-V3 at alpha = 0 too; OPT
    # emits Diff's tokens; Chow, Diff, OPT and the drafter enter no T = 0 claim. 15 configurations, about 14
    # configurations' worth of decoding: about 6.5 h estimated (7,695 rows). Not included: the batch-size-1
    # latency rows (`benchmarks/gemma_rerun.py --latency`), on the first 16 items of each task, with the
    # pair on the kernel paths a probe chose on a processor with bf16 units (`latency_paths`: the drafter
    # int8-dynamic, the verifier bf16, whose block of 6 rows costs what one row costs there; the batched
    # rows stay fp32). Chunks of 16 items keep about 240 rows per batch, as offline-all's 8 x 31.
    "offline-large": dict(drafter="qwen2.5-coder-0.5b", verifier="qwen2.5-coder-1.5b", dtype="float32", device="cpu",
                          tasks=["humaneval", "arithmetic-300", "facts"], n_items=None, temperatures=[1.0, 0.0],
                          curves=ev.GEMMA_CURVES, n_alpha=3, batch_size=16, alphas=GEMMA_MIDDLE_ALPHAS,
                          greedy_curves=["Verifier", "SpecDecode", "SpecCascade [Token-V1]",
                                         "SpecCascade [Token-V2]", "SpecCascade [Token-V3]"],
                          greedy_alphas=GEMMA_GREEDY_ALPHAS,
                          latency_items=16, latency_gammas=[1, 5], latency_paths=["int8-dynamic", "bf16"],
                          latency_curves=["Verifier", "SpecDecode", "SpecCascade [Token-V2]"],
                          max_new_tokens={"humaneval": 384, "arithmetic-300": 320, "facts": 24},
                          shots={"humaneval": 0, "arithmetic-300": 2, "facts": 4}),
    # The same-law noise floor of offline-large: the verifier and SpecDecode at T = 1 on the same 513 items
    # with a second seed set (item i draws with seed 1000 + i instead of i; no seed is shared, as no task
    # has 1,000 items). Two runs of one law differ only by the draws: their paired difference is the floor
    # a difference between two methods must clear (`stats.noise_floor`). Tasks cheapest first (facts,
    # HumanEval, arithmetic): a run stopped early still gives the floor of the tasks it finished. Chunks of
    # 120 items keep about 240 rows per batch, as offline-large's 16 x 15 (chunks of 16 made 32-row
    # batches, which ran HumanEval at about 19 s a row).
    "offline-large-seed2": dict(drafter="qwen2.5-coder-0.5b", verifier="qwen2.5-coder-1.5b", dtype="float32",
                                device="cpu", tasks=["facts", "humaneval", "arithmetic-300"], n_items=None,
                                temperatures=[1.0], curves=["Verifier", "SpecDecode"], n_alpha=3, batch_size=120,
                                alphas=None, greedy_curves=None, seed=1000, latency_items=4,
                                latency_gammas=[1, 5], latency_curves=["Verifier", "SpecDecode"],
                                max_new_tokens={"humaneval": 384, "arithmetic-300": 320, "facts": 24},
                                shots={"humaneval": 0, "arithmetic-300": 2, "facts": 4}),
    "smoke": dict(drafter="smollm2-135m:layers=16", verifier="smollm2-135m", dtype="float32", device="cpu",
                  tasks=["code", "arithmetic", "facts"], n_items=2, temperatures=[1.0], curves=ev.GEMMA_CURVES,
                  n_alpha=2, alphas=_ONE_ALPHA_PER_RULE, greedy_curves=None, batch_size=2, latency_items=1, latency_gammas=[1, 5],
                  latency_curves=["Verifier", "SpecDecode", "SpecCascade [Token-V2]"],
                  max_new_tokens={"code": 6, "arithmetic": 6, "facts": 4},
                  shots={"code": 1, "arithmetic": 1, "facts": 2}),
}


#: A profile's second seed set: its verifier and SpecDecode at T = 1 again, for the same-law noise floor
SECOND_SEED_PROFILES: Dict[str, str] = {"offline-large": "offline-large-seed2"}


def second_seed_rows(settings: dict, *, results_dir=None) -> Optional["pd.DataFrame"]:
    """The saved rows of the profile's second-seed run (`SECOND_SEED_PROFILES`), whole tasks only (a task
    counts once both of its curves ran every item: a run still under way gives the tasks it finished), or
    None where the profile has none or none is saved. Loads no model."""
    import pandas as pd
    name = SECOND_SEED_PROFILES.get(settings["profile"])
    if name is None:
        return None
    again = gemma_profile(name)
    try:
        pair = saved_pair(f"gemma-{name}", again, results_dir=results_dir)
    except FileNotFoundError:
        return None
    tasks = gemma_tasks(again)
    sweep = ev.sweep_of(pair, tasks, f"gemma-{name}", runner="batch", seed=again.get("seed", 0),
                        extra_config=run_config(again), root=results_dir)
    rows = pd.DataFrame(sweep.load())
    if rows.empty:
        return None
    n_configs = len(gemma_configs(again))
    whole = [t.name for t in tasks if (rows["task"] == t.name).sum() == n_configs * len(t.examples)]
    return rows[rows["task"].isin(whole)].reset_index(drop=True)


def gemma_profile(name: str = "offline-large", **overrides) -> dict:
    """The settings of one Gemma profile; keyword arguments that are not None replace settings."""
    return _profile(GEMMA_PROFILES, name, overrides)


def gemma_tasks(settings: dict) -> List[ev.Task]:
    """The profile's few-shot tasks, each sent as one user message in the chat template."""
    from ..tasks import tasksets
    tasks = []
    for name in settings["tasks"]:
        shots = (settings.get("shots") or {}).get(name)
        if settings["profile"] == "hub":
            raw = tasksets.hub_task(name, settings["n_items"], shots=shots)
        else:
            raw = tasksets.offline_task(name, settings["n_items"], shots=shots)
        limit = (settings.get("max_new_tokens") or {}).get(name)
        task = ev.Task.from_dict(raw, chat=True, postprocess=_postprocessor(raw["name"]))
        if limit:
            task.max_new_tokens = int(limit)
        tasks.append(task)
    return tasks


def gemma_configs(settings: dict) -> List[ev.Config]:
    """The batched sweep: every curve of the profile over its alpha grid, gamma = 1, one token per step
    (at T = 0 only `greedy_curves`, where a profile sets them, at `greedy_alphas` where it sets them)."""
    configs = []
    for temperature in settings["temperatures"]:
        greedy = temperature == 0
        curves = (settings.get("greedy_curves") or settings["curves"]) if greedy else settings["curves"]
        alphas = (settings.get("greedy_alphas") or settings["alphas"]) if greedy else settings["alphas"]
        configs += ev.sweep_configs(curves, gammas=[1], temperatures=[temperature], n_alpha=settings["n_alpha"],
                                    alphas=alphas, bonus="none")
    return configs


def latency_configs(settings: dict) -> List[ev.Config]:
    """The batch-size-1 latency runs at the lowest temperature: the drafter and the verifier alone, and
    per gamma each latency curve at the alpha its quality rows use at that temperature (`greedy_alphas`
    at T = 0 where the profile has them, else `alphas`; the middle of its alpha grid without either;
    gamma = 1 without a bonus token, as in the batched sweep; larger gamma with Algorithm 4's bonus token)."""
    from ..maths.targets import alpha_grid
    temperature = min(settings["temperatures"])
    curves = settings["latency_curves"] or settings["curves"]
    configs = ev.sweep_configs(["Drafter", "Verifier"],
                               temperatures=[temperature])
    for gamma in settings["latency_gammas"]:
        for label in curves:
            spec = ev.CURVES[label]
            if spec["method"] != "speculative":
                continue
            rule = spec["rule"]
            # the alpha of the quality rows at this temperature (a profile's own T = 0 placements)
            greedy = settings.get("greedy_alphas") if temperature == 0 else None
            chosen = (greedy or {}).get(label) or (settings.get("alphas") or {}).get(label)
            alpha = 0.0 if rule in ("spec", None) else float(chosen[0] if chosen else alpha_grid(rule, 3)[1])
            configs += ev.sweep_configs([label], gammas=[gamma], temperatures=[temperature], n_alpha=2,
                                        alphas={label: [alpha]}, bonus="none" if gamma == 1 else "verifier")
    return configs


def latency_pair(settings: dict, pair, *, results_dir=None):
    """The pair of a profile's batch-size-1 latency rows. Loaded models are put on the profile's
    `latency_paths` in place (`models.kernel_paths.put_pair_on_paths`: the verifier for blocks of the largest
    latency gamma + 1 rows; the batched sweep, which needs them as loaded, comes first); stand-ins of saved
    runs (`saved_pair`) are those of the saved latency rows. Without `latency_paths`, `pair` itself."""
    paths = settings.get("latency_paths")
    if paths is None:
        return pair
    if not all(hasattr(lm, "start") for lm in pair):
        return ev.saved_models(f"gemma-{settings['profile']}-latency", root=results_dir,
                               extra_config=latency_run_config(settings))
    from ..models.kernel_paths import put_pair_on_paths
    put_pair_on_paths(pair, paths, gamma=max(settings["latency_gammas"]))
    return pair


def _postprocessor(task_name: str):
    from ..tasks import tasksets

    def postprocess(text: str) -> str:
        return tasksets.postprocess(task_name, text)
    postprocess.__name__ = f"postprocess_{task_name}"
    return postprocess


def load_gemma_pair(settings: dict, **placement):
    """The drafter and verifier of a Gemma profile. A drafter named `<verifier>:layers=N` is the
    verifier's first N layers (the smoke profile's cheaper drafter made from SmolLM2-135M).
    `placement` (`device_map`, `max_memory`: one for both, or a pair) goes to `load_pair`."""
    from ..models.adapter import ModelPair, load_model, load_pair
    from ..models.layer_skip import layer_skip_drafter, split_layers
    drafter, verifier = settings["drafter"], settings["verifier"]
    base, n = split_layers(drafter)
    if n is not None:
        verifier_placement = {k: v[1] if isinstance(v, (tuple, list)) else v for k, v in placement.items()}
        big = load_model(verifier if base == verifier else base, dtype=settings["dtype"], device=settings["device"],
                         **verifier_placement)
        return ModelPair(layer_skip_drafter(big, n), big)
    try:
        return load_pair(drafter, verifier, dtype=settings["dtype"], device=settings["device"], **placement)
    except OSError as error:
        if not drafter.startswith("google/gemma"):
            raise
        raise OSError(f"{error}\nThe Gemma models are gated: accept their licence on the Hugging Face hub with "
                      "your account and set HF_TOKEN to a token of that account before loading them.") from error
