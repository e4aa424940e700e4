r"""Call costs of the offline pair's shapes, with random weights, on any device, against the bandwidth bound.

The time of one decoding call depends on the model's shapes, its dtype and the device, not on what its
weights say: so this measures $t_q$ (the drafter's one-token call), $t_p(k)$ for k = 1..max_k (the
verifier scoring k tokens) and $c = t_q / t_p(1)$ for Qwen2.5-Coder-0.5B drafting for -1.5B where their
weights cannot go (a machine that reaches no registry, like a lent GPU), by building both models from their
`config.json` with random weights. The bound of a call is its weights' bytes over the device's measured read
bandwidth,

$$t_{\min} = \frac{\text{weight bytes}}{B}, \qquad \text{call over bound} = \frac{t_p(1)}{t_{\min}},$$

with $B$ read from a large tensor's reduction on that device (the same measurement `tl.calibrate` makes on
a CPU). Acceptance rates, and so speed-ups, need the real weights: `benchmarks/engine_speed.py` measures
those.

    python benchmarks/call_costs_random_weights.py --device cuda --dtype bfloat16
    python benchmarks/call_costs_random_weights.py --config-dir cfg --output data/benchmarks/call_costs_x
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import tutorial_lib as tl  # noqa: E402
from tutorial_lib.models import files  # noqa: E402
from tutorial_lib.models.adapter import ModelPair  # noqa: E402
from tutorial_lib.models.language_model import LanguageModel

PAIR = ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")


def config_path(alias: str, config_dir: Path | None) -> Path:
    """`config_dir/<alias>.json` where given, else the converted model's own `config.json` in the cache."""
    if config_dir is not None:
        path = config_dir / f"{alias}.json"
    else:
        path = files.cache_dir() / "models" / alias / "config.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"no config for {alias} at {path}: run `make models-qwen` once, or pass --config-dir holding "
            f"{alias}.json (a copy of the converted model's config.json)."
        )
    return path


def random_model(alias: str, config_dir: Path | None, dtype: torch.dtype, device: str, seed: int):
    """The model `alias` describes, with random weights from `seed`, as the engine's `LanguageModel`."""
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(config_path(alias, config_dir))
    # built where it runs: initialising 1.5B random weights on a CPU and copying them took about 80 s
    devices = [torch.device(device)] if torch.device(device).type == "cuda" else []
    with torch.random.fork_rng(devices=devices), torch.device(device):
        torch.manual_seed(seed)
        net = AutoModelForCausalLM.from_config(config, dtype=dtype)
    net.eval()
    return LanguageModel(net, None, name=f"{alias} (random weights)", vocabulary=f"{alias}:ids")


def read_bandwidth(device: str, megabytes: int = 2048, repeats: int = 10) -> float:
    """Bytes per second `device` reads (`kernel_paths.measure_read_bandwidth`, synchronised on a GPU)."""
    return tl.models.kernel_paths.measure_read_bandwidth(megabytes=megabytes, repeats=repeats, device=device)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32", "float16"])
    parser.add_argument("--config-dir", type=Path, default=None, help="holding <alias>.json for both models")
    parser.add_argument("--max-k", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--context-tokens", type=int, default=64)
    parser.add_argument("--output", type=Path, default=None, help="folder for calibration.json and table.md")
    args = parser.parse_args(argv)
    dtype = getattr(torch, args.dtype)
    device_name = (
        torch.cuda.get_device_name(0) if args.device.startswith("cuda") else platform.processor() or "CPU"
    )

    drafter = random_model(PAIR[0], args.config_dir, dtype, args.device, seed=0)
    verifier = random_model(PAIR[1], args.config_dir, dtype, args.device, seed=1)
    bandwidth = read_bandwidth(args.device)
    calibration = tl.calibrate(
        ModelPair(drafter, verifier, shared_vocabulary=True),
        max_k=args.max_k,
        repeats=args.repeats,
        context_tokens=args.context_tokens,
        bandwidth=bandwidth,
    )
    table = calibration.table()
    summary = {
        "device": device_name,
        "dtype": args.dtype,
        "torch": torch.__version__,
        "read_bandwidth_GBps": bandwidth / 1e9,
        "t_q_ms": calibration.t_q(with_overhead=False) * 1e3,
        "t_p1_ms": calibration.t_p(1, with_overhead=False) * 1e3,
        "c": calibration.t_q(with_overhead=False) / calibration.t_p(1, with_overhead=False),
        "drafter_call_over_bound": calibration.call_over_bound("drafter"),
        "verifier_call_over_bound": calibration.call_over_bound("verifier"),
        "engine_overhead_ms_per_call": calibration.overhead_s * 1e3,
        "weight_bytes": calibration.weight_bytes,
    }
    text = (
        f"# Call costs of the Qwen pair's shapes (random weights), {args.dtype} on {device_name}\n\n"
        + "\n".join(
            f"- {key}: {value:.4g}" if isinstance(value, float) else f"- {key}: {value}"
            for key, value in summary.items()
        )
        + "\n\n"
        + table.to_markdown(index=False, floatfmt=".4g")
        + "\n"
    )
    print(text)
    if args.output is not None:
        args.output.mkdir(parents=True, exist_ok=True)
        calibration.save(args.output / "calibration.json")
        (args.output / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        (args.output / "table.md").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
