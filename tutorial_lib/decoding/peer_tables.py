r"""Reads llama.cpp's own output, and the committed llama.cpp benchmark that `benchmarks/llama_cpp_peer.py`
writes (`data/benchmarks/llama_cpp_<class>.json`), into tables: what a production engine reaches on the same
GGUF files as our engine, beside our engine's figures and the bandwidth bound.

- `parse_greedy` reads one `llama-completion` run (greedy, `--temp 0`): the prompt's prefill, the decode
  calls and the sampling time from its `llama_perf_context_print` / `common_perf_print` lines.
- `parse_speculative` reads one `llama-speculative-simple` run: `encoded` / `decoded` tokens and seconds,
  and the drafts it made and kept (`n_drafted`, `n_accept`).
- `processor_record` reads `lscpu` (or `/proc/cpuinfo`): the model name, the vector units (AVX2, AVX-512,
  its VNNI and bf16 extensions, AMX), and the class a benchmark file is named by (`amx`, `avx512`, `avx2`,
  as `tl.models.processor_class` names them).
- `llama_cpp_table` turns the committed JSON into one row per method: tokens per second with their spread
  over (prompt, round), the speculative speed-up, the acceptance, and the rows of our engine and the bound.

Times are the generation's: from the prompt given to the last token out (prefill, decode and sampling),
the model's load left out, as our engine's are timed.
"""

from __future__ import annotations

import re
import statistics
from typing import Dict, Iterable, List, Optional

import pandas as pd

__all__ = [
    "parse_greedy",
    "parse_speculative",
    "same_as_greedy",
    "processor_record",
    "spread",
    "llama_cpp_table",
    "llama_cpp_glue",
]

_NUMBER = r"([0-9]+(?:\.[0-9]+)?)"
_GREEDY = {
    "prompt_ms": re.compile(rf"prompt eval time =\s*{_NUMBER} ms /\s*([0-9]+) tokens"),
    "eval_ms": re.compile(rf"(?<!prompt )eval time =\s*{_NUMBER} ms /\s*([0-9]+) runs"),
    "sampling_ms": re.compile(rf"sampling time =\s*{_NUMBER} ms"),
}
_SPECULATIVE = {
    "encoded": re.compile(rf"encoded\s+([0-9]+) tokens in\s+{_NUMBER} seconds, speed:\s+{_NUMBER} t/s"),
    "decoded": re.compile(rf"decoded\s+([0-9]+) tokens in\s+{_NUMBER} seconds, speed:\s+{_NUMBER} t/s"),
}
_COUNTS = ("n_draft", "n_predict", "n_drafted", "n_accept")
_SYSTEM_INFO = re.compile(r"system_info: (.*)")


class LlamaOutputError(ValueError):
    """llama.cpp's output lacks a line this reader needs (a failed run, or another version's format)."""


def _search(pattern: re.Pattern, text: str, what: str, tool: str) -> re.Match:
    found = list(pattern.finditer(text))
    if not found:
        raise LlamaOutputError(f"{tool}'s output has no {what} line ({pattern.pattern!r})")
    return found[-1]  # the last: the run's, after any warm-up


def _system_info(text: str) -> Optional[str]:
    found = _SYSTEM_INFO.search(text)
    return found.group(1).strip() if found else None


def parse_greedy(stderr: str, stdout: str = "") -> dict:
    """One `llama-completion -no-cnv --temp 0 --no-display-prompt` run: `prompt_tokens`, `prompt_s`,
    `decode_calls` and `decode_s` (the calls after the prefill), `sampling_s`, `tokens` (decode calls + 1: the
    first token comes from the prefill's logits, the last is sampled and not fed back),
    `decode_tokens_per_s` as llama.cpp prints it, `seconds` (prefill + decode + sampling) and `text`."""
    prompt = _search(_GREEDY["prompt_ms"], stderr, "prompt eval time", "llama-completion")
    decode = _search(_GREEDY["eval_ms"], stderr, "eval time", "llama-completion")
    sampling = _search(_GREEDY["sampling_ms"], stderr, "sampling time", "llama-completion")
    prompt_s, decode_s, sampling_s = (float(m.group(1)) / 1e3 for m in (prompt, decode, sampling))
    calls = int(decode.group(2))
    text = stdout.rstrip("\n")
    if text.endswith("[end of text]"):
        text = text[: -len("[end of text]")].rstrip(" ")
    return {
        "prompt_tokens": int(prompt.group(2)),
        "prompt_s": prompt_s,
        "decode_calls": calls,
        "decode_s": decode_s,
        "sampling_s": sampling_s,
        "tokens": calls + 1,
        "decode_tokens_per_s": calls / decode_s if decode_s > 0 else float("nan"),
        "seconds": prompt_s + decode_s + sampling_s,
        "text": text,
        "system_info": _system_info(stderr),
    }


def parse_speculative(stderr: str, stdout: str = "", prompt: Optional[str] = None) -> dict:
    """One `llama-speculative-simple` run: `prompt_tokens` and `prompt_s` (the target's prefill and the
    draft's, its `encoded` line), `tokens` and `decode_s` (its `decoded` line: drafting, verifying and
    sampling), `decode_tokens_per_s` as it prints it, `seconds` (both), `n_drafted`, `n_accept`,
    `acceptance` (n_accept / n_drafted), `n_draft` (its draft's most tokens per block), `blocks` (verifier
    calls after the prefill), `target_batched_s` / `_tokens` (the verifier's prefill and verification calls,
    its `prompt eval time` line) and `text`: what it printed after the prompt (`prompt` removed from the
    start of stdout when given and found there)."""
    tool = "llama-speculative-simple"
    encoded = _search(_SPECULATIVE["encoded"], stderr, "encoded", tool)
    decoded = _search(_SPECULATIVE["decoded"], stderr, "decoded", tool)
    counts = {}
    for name in _COUNTS:
        counts[name] = int(_search(re.compile(rf"\b{name}\s*=\s*([0-9]+)"), stderr, name, tool).group(1))
    text = stdout.strip("\n")
    prompt_echoed = None
    if prompt is not None:
        prompt_echoed = text.startswith(prompt)
        if prompt_echoed:
            text = text[len(prompt) :]
    drafted = counts["n_drafted"]
    # the target's batched calls (its prefill and every block's verification), as its perf line counts them
    target = _search(_GREEDY["prompt_ms"], stderr, "target's prompt eval time", tool)
    return {
        "prompt_tokens": int(encoded.group(1)),
        "prompt_s": float(encoded.group(2)),
        "tokens": int(decoded.group(1)),
        "decode_s": float(decoded.group(2)),
        "decode_tokens_per_s": float(decoded.group(3)),
        "seconds": float(encoded.group(2)) + float(decoded.group(2)),
        **counts,
        "acceptance": counts["n_accept"] / drafted if drafted else float("nan"),
        "blocks": counts["n_predict"] - counts["n_accept"],  # each block emits its accepted drafts + 1
        "target_batched_s": float(target.group(1)) / 1e3,
        "target_batched_tokens": int(target.group(2)),
        "text": text.rstrip("\n"),
        "prompt_echoed": prompt_echoed,
        "system_info": _system_info(stderr),
    }


def same_as_greedy(greedy_text: str, speculative_text: str) -> bool:
    """Whether a speculative run gave greedy decoding's text (lossless at T = 0). `llama-speculative-simple`
    does not cut its last block at `-n`, so it emits up to a block more than greedy's `-n` tokens: the greedy
    text must be where the speculative text starts."""
    return speculative_text.startswith(greedy_text)


#: The vector units a class record names, each by the `lscpu` / `/proc/cpuinfo` flag that shows it.
VECTOR_UNITS = {
    "avx2": "avx2",
    "avx512": "avx512f",
    "avx512_vnni": "avx512_vnni",
    "avx512_bf16": "avx512_bf16",
    "amx": "amx_tile",
    "amx_bf16": "amx_bf16",
    "amx_int8": "amx_int8",
}


def processor_record(text: str) -> dict:
    """The processor from `lscpu`'s output (`Model name:`, `Flags:`) or `/proc/cpuinfo` (`model name`,
    `flags`): its `model`, which `VECTOR_UNITS` it has, `bf16_units` (AVX-512 bf16 or AMX bf16) and its
    `class` (`tl.models.processor_class.class_name`: `amx`, `avx512`, `avx2`, ...), the suffix of the
    benchmark files of that class (`llama_cpp_<class>.json` beside `engine_speed_cpu_<class>.json`)."""
    from ..models.processor_class import class_name

    model, flags = None, set()
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        if key == "model name" and model is None:
            model = value.strip()
        elif key in ("flags", "features"):
            flags.update(value.split())
    if not flags:
        raise ValueError("no `Flags:` line: pass the output of `lscpu` or the text of /proc/cpuinfo")
    units = {name: flag in flags for name, flag in VECTOR_UNITS.items()}
    return {
        "model": model,
        "vector_units": units,
        "bf16_units": bool(flags & {"avx512_bf16", "amx_bf16", "bf16"}),
        "class": class_name("flags: " + " ".join(sorted(flags))),
    }


def spread(values: Iterable[float]) -> dict:
    """Median, quartiles, least and most of `values` (quartiles by the inclusive method)."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("no values")
    q25, _, q75 = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else values * 3
    return {
        "median": statistics.median(values),
        "q25": q25,
        "q75": q75,
        "min": min(values),
        "max": max(values),
        "n": len(values),
    }


_COLUMNS = [
    "engine",
    "method",
    "tokens/s",
    "tokens/s min",
    "tokens/s max",
    "decode tokens/s",
    "speed-up",
    "speed-up min",
    "speed-up max",
    "acceptance",
    "same tokens as greedy",
]


def llama_cpp_table(result: dict) -> pd.DataFrame:
    """The committed run (`benchmarks/llama_cpp_peer.py`'s JSON) as one row per method: llama.cpp's greedy
    and speculative decoding, our engine's verifier alone and speculative decoding on the same class of
    processor, and the bound (the verifier's GGUF bytes read once per token at the measured bandwidth).
    `tokens/s` are medians over (prompt, round) of tokens / generation seconds, with their least and most;
    `speed-up` is the median of greedy time / method time over the same (prompt, round)."""
    rows: List[Dict] = []
    for method, summary in result["summary"].items():
        rate, up = summary["tokens_per_s"], summary.get("speedup")
        rows.append(
            {
                "engine": "llama.cpp",
                "method": method,
                "tokens/s": rate["median"],
                "tokens/s min": rate["min"],
                "tokens/s max": rate["max"],
                "decode tokens/s": summary["decode_tokens_per_s"]["median"],
                "speed-up": up["median"] if up else 1.0,
                "speed-up min": up["min"] if up else None,
                "speed-up max": up["max"] if up else None,
                "acceptance": summary.get("acceptance"),
                "same tokens as greedy": summary.get("same_text_as_greedy"),
            }
        )
    for method, figures in (result.get("ours") or {}).get("methods", {}).items():
        rows.append(
            {
                "engine": "ours",
                "method": method,
                "tokens/s": figures["tokens_per_s"]["median"],
                "tokens/s min": figures["tokens_per_s"]["min"],
                "tokens/s max": figures["tokens_per_s"]["max"],
                "speed-up": figures.get("speedup"),
                "acceptance": figures.get("acceptance"),
            }
        )
    bound = result["bound"]
    rows.append({"engine": "bound", "method": bound["what"], "tokens/s": bound["tokens_per_s"]})
    return pd.DataFrame(rows, columns=_COLUMNS)


#: Bits per weight our engine's verifier reads on each kernel path (`tl.models.kernel_paths`), by prefix.
_PATH_BITS = {"fp32": 32, "bf16": 16, "int8": 8}


def llama_cpp_glue(result: dict) -> dict:
    """The numbers a page quotes from the committed run: llama.cpp's greedy and speculative tokens per
    second, its speed-up, our engine's verifier-alone tokens per second, the verifier's bits per weight,
    llama.cpp's greedy decode rate as a share of the bound, what one verification call of a block costs in
    greedy decode calls, and our verifier's kernel path with the bits per weight it reads."""
    greedy, spec = result["summary"]["greedy"], result["summary"]["speculative"]
    ours = (result.get("ours") or {}).get("methods", {})
    alone = ours.get("verifier alone")
    path = ((result.get("ours") or {}).get("kernel_paths") or {}).get("verifier") or "as loaded"
    bits = next((b for prefix, b in _PATH_BITS.items() if path.startswith(prefix)), float("nan"))
    return {
        "llama_greedy_tok_s": greedy["tokens_per_s"]["median"],
        "llama_spec_tok_s": spec["tokens_per_s"]["median"],
        "llama_speedup": spec["speedup"]["median"],
        "llama_acceptance": spec["acceptance"],
        "ours_alone_tok_s": alone["tokens_per_s"]["median"] if alone else float("nan"),
        "verifier_bits_per_weight": result["models"]["verifier"]["bits_per_weight"],
        "llama_greedy_of_bound": greedy["decode_tokens_per_s"]["median"] / result["bound"]["tokens_per_s"],
        "llama_verify_call_ratio": spec["verify_call_over_decode_call"]["median"],
        "ours_verifier_path": path,
        "ours_verifier_bits_per_weight": bits,
    }
