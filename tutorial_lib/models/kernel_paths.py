r"""Which kernel computes a model's calls on this machine, chosen by measurement, and the bound it is
measured against.

**The bound.** A decoder's call on $k \le 8$ new tokens reads every weight once and does $2Nk$ FLOPs for
$N$ parameters. Reading is the cost: a CPU core streams a few GB/s and computes tens of GFLOP/s, so

$$t_{\text{bound}} = \frac{\text{bytes of weights}}{\text{read bandwidth}}$$

is the least a call can take whatever $k$ is, and scoring a block of $k$ drafted tokens should cost
what scoring one costs: $t_p(k) / t_p(1) \approx 1$, the textbook's assumption. The roofline's ridge
sits at (peak FLOP/s) / (bandwidth) FLOPs per byte; a block of $k$ rows does $2k / b$ FLOPs per byte
read ($b$ bytes per weight), far below it at these $k$.

**Paths.** Where a kernel falls short of the bound it is the kernel, not the physics:

- `fp32`         - the model as loaded, `F.linear`; exact for the fp32 model.
- `fp32-gemv`    - the same fp32 weights; each linear layer given at most `GEMV_MAX_ROWS` rows as `W @ x.T` (a
  matrix-vector kernel per row block); exact for the fp32 model (same weights, another summation order).
- `fp32-packed`  - the same fp32 weights reordered once into oneDNN's blocked layout (`torch.ops.mkldnn`),
  whose small-batch kernel streams each weight once for all $k$ rows; exact for the fp32 model (same weights,
  another summation order).
- `bf16`         - weights in bfloat16: half the bytes; fast where the processor has bf16 units; exact for the
  model loaded in bf16.
- `int8-dynamic` - linear layers quantised to int8 per output channel, activations quantised per call
  (`torch.ao.quantization.quantize_dynamic`): a quarter of the bytes; exact for a drafter only (a verifier's
  law would change).

A path changes the model's law at most as its dtype does; speculative decoding then reproduces the
verifier *as computed on its path* (at `T = 0` token for token, its greedy output). `probe_paths`
times every candidate on copies of a sample of the model's own linear layers (two decoder layers'
and the output head), block sizes interleaved, and `choose_path` takes the one whose block of
`gamma + 1` rows costs least for a verifier; a drafter's is chosen by a generation's prefill and one-row steps
(`drafter_paths`). `apply_path` puts the model on it.
"""

from __future__ import annotations

import copy
import json
import random
import statistics
import time
import types
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "VERIFIER_PATHS",
    "DRAFTER_PATHS",
    "GEMV_MAX_ROWS",
    "PathProbe",
    "put_pair_on_paths",
    "cpu_has_bf16_units",
    "packed_path_available",
    "available_paths",
    "apply_path",
    "path_of",
    "reachable",
    "probe_paths",
    "choose_path",
    "measure_read_bandwidth",
    "weight_bytes",
    "bound_seconds",
    "measure_peak_flops",
    "roofline_seconds",
    "put_on_path",
    "stored_probe",
    "store_probe",
    "machine_key",
]

VERIFIER_PATHS = ("fp32", "fp32-gemv", "fp32-packed", "bf16")
DRAFTER_PATHS = (*VERIFIER_PATHS, "int8-dynamic")
GEMV_MAX_ROWS = 8
_PATH_ATTRIBUTE = "_tutorial_lib_kernel_path"
_PACKED_ATTRIBUTE = "_tutorial_lib_packed_weight"


def packed_path_available() -> bool:
    """Whether this torch build has oneDNN's CPU linear kernels (`fp32-packed`)."""
    return bool(torch.backends.mkldnn.is_available()) and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def cpu_has_bf16_units(cpuinfo: str | None = None) -> bool:
    """Whether the processor multiplies bf16 natively (x86 `avx512_bf16` or `amx_bf16`, Arm `bf16`).
    Without them a bf16 matrix product converts every weight first, and bf16 is rarely faster."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return False
    flags = set()
    for line in cpuinfo.splitlines():
        if line.lower().startswith(("flags", "features")):
            flags.update(line.split(":", 1)[-1].split())
    return bool(flags & {"avx512_bf16", "amx_bf16", "bf16"})


def _gemv_forward(self: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    rows = x.numel() // max(1, x.shape[-1])
    if rows > GEMV_MAX_ROWS or x.dtype != self.weight.dtype:
        return F.linear(x, self.weight, self.bias)
    y = (self.weight @ x.reshape(rows, x.shape[-1]).T).T
    if self.bias is not None:
        y = y + self.bias
    return y.reshape(*x.shape[:-1], self.out_features)


def _packed_forward(self: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    packed = getattr(self, _PACKED_ATTRIBUTE)
    if x.dtype != torch.float32 or x.device.type != "cpu":
        raise ValueError(
            f"the fp32-packed path computes float32 inputs on the CPU, not {x.dtype} on {x.device}; "
            "put the model back on 'fp32' (apply_path(model, 'fp32')) before moving or casting it"
        )
    rows = x.reshape(-1, x.shape[-1])
    if rows.shape[0] == 1:
        # oneDNN's blocked kernel computes a single row at about half the speed of two (measured on the
        # Qwen verifier, benchmarks/kernel_paths.py), so one row goes in twice and one result comes back.
        y = torch.ops.mkldnn._linear_pointwise(
            rows.expand(2, -1).contiguous(), packed, self.bias, "none", [], ""
        )[:1]
    else:
        y = torch.ops.mkldnn._linear_pointwise(rows.contiguous(), packed, self.bias, "none", [], "")
    return y.reshape(*x.shape[:-1], y.shape[-1])


def _pack(model: nn.Module) -> None:
    """Reorder every fp32 linear weight into oneDNN's layout. A weight no other module shares (not a tied
    output head) is then held only in that layout, so the model takes no extra memory."""
    if not packed_path_available():
        raise ValueError("this torch build has no oneDNN (mkldnn) CPU kernels; choose 'fp32' or 'fp32-gemv'")
    uses: Dict[int, int] = {}
    for _, parameter in model.named_parameters(remove_duplicate=False):
        uses[parameter.data_ptr()] = uses.get(parameter.data_ptr(), 0) + 1
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    for module in model.modules():
        if not isinstance(module, nn.Linear) or module.weight.dtype != torch.float32:
            continue
        if module.weight.device.type != "cpu":
            raise ValueError(
                "the fp32-packed path is for models on the CPU; on a GPU leave kernel_paths=None"
            )
        weight = module.weight.detach()
        setattr(module, _PACKED_ATTRIBUTE, torch.ops.mkldnn._reorder_linear_weight(weight, None))
        module.forward = types.MethodType(_packed_forward, module)
        if module is not head and uses.get(weight.data_ptr(), 0) == 1:
            module.weight.data = torch.empty(0, dtype=weight.dtype)


def _unpack(model: nn.Module) -> None:
    """Give every packed linear layer its plain weight back (bit for bit: the reorder is a permutation)."""
    for module in model.modules():
        packed = module.__dict__.pop(_PACKED_ATTRIBUTE, None)
        if packed is not None and module.weight.numel() == 0:
            module.weight.data = packed.to_dense()


def path_of(model: nn.Module) -> str:
    """The path `apply_path` put `model` on ("fp32" or "bf16" by dtype for a model it never saw)."""
    recorded = getattr(model, _PATH_ATTRIBUTE, None)
    if recorded is not None:
        return recorded
    dtype = next(model.parameters()).dtype
    return "bf16" if dtype == torch.bfloat16 else "fp32" if dtype == torch.float32 else str(dtype)


def reachable(model: nn.Module, path: str) -> bool:
    """Whether `apply_path` can put `model` on `path` from the path it is on: every path but its own is out of
    reach from `int8-dynamic`, and every path but `bf16` from `bf16` (fp32's exact weights, which they start
    from, are gone)."""
    current = path_of(model)
    return current == path or not (current == "int8-dynamic" or (current == "bf16" and path != "bf16"))


def apply_path(model: nn.Module, path: str) -> nn.Module:
    """Put `model` (a `torch.nn.Module`, e.g. `LanguageModel.model`) on `path` and return it (the same
    object, except for `int8-dynamic`, which returns a quantised copy). From `bf16` or `int8-dynamic`
    there is no way back to fp32's exact weights: load the model again."""
    if path not in DRAFTER_PATHS:
        raise ValueError(f"path={path!r}: choose one of {DRAFTER_PATHS}")
    current = path_of(model)
    if current == path:
        return model
    if not reachable(model, path):
        raise ValueError(
            f"the model is on {current!r}, whose weights cannot give {path!r}'s exactly; load it again "
            f"with dtype=torch.float32 and apply {path!r} to that"
        )
    for module in model.modules():  # undo the fp32-gemv or fp32-packed patch, if any
        if isinstance(module, nn.Linear) and "forward" in module.__dict__:
            del module.forward
    _unpack(model)
    if path == "bf16":
        model.to(torch.bfloat16)
    elif path == "fp32-gemv":
        for module in model.modules():
            if isinstance(module, nn.Linear):
                module.forward = types.MethodType(_gemv_forward, module)
    elif path == "fp32-packed":
        _pack(model)
    elif path == "int8-dynamic":
        import warnings
        from torch.ao.quantization import quantize_dynamic

        with warnings.catch_warnings():  # torch marks its eager quantisation deprecated; 2.13 still ships it
            warnings.simplefilter("ignore", (DeprecationWarning, UserWarning))
            model = quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
    setattr(model, _PATH_ATTRIBUTE, path)
    return model


def weight_bytes(model: nn.Module) -> int:
    """Bytes of parameters and buffers as stored (tied tensors once): what one call reads at least. A
    quantised model's packed weights are counted from their int8 size."""
    seen, total = set(), 0
    for tensor in [*model.parameters(), *model.buffers()]:
        if tensor.data_ptr() in seen:
            continue
        seen.add(tensor.data_ptr())
        total += tensor.numel() * tensor.element_size()
    for module in model.modules():
        reordered = module.__dict__.get(_PACKED_ATTRIBUTE)
        if reordered is not None and module.weight.numel() == 0:
            total += reordered.numel() * reordered.element_size()
        packed = getattr(module, "_packed_params", None)
        if packed is not None and hasattr(packed, "_weight_bias"):
            weight, bias = packed._weight_bias()
            total += weight.numel() * weight.element_size() + (0 if bias is None else bias.numel() * 4)
    return total


def measure_read_bandwidth(
    *, megabytes: int = 1024, threads: Optional[int] = None, repeats: int = 5, device="cpu"
) -> float:
    """Bytes per second `device` reads: the best of `repeats` sums over a `megabytes` fp32 tensor (far
    bigger than any cache), on `threads` threads (torch's count by default, as the models run). On a
    GPU each sum is timed between two synchronisations (its kernels run asynchronously)."""
    device = torch.device(device)
    synchronize = torch.cuda.synchronize if device.type == "cuda" else (lambda device: None)
    previous = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(int(threads))
    try:
        data = torch.ones(int(megabytes) * 2**20 // 4, dtype=torch.float32, device=device)
        data.sum()
        best = float("inf")
        for _ in range(int(repeats)):
            synchronize(device)
            start = time.perf_counter()
            data.sum()
            synchronize(device)
            best = min(best, time.perf_counter() - start)
        return data.numel() * 4 / best
    finally:
        torch.set_num_threads(previous)


def bound_seconds(model: nn.Module, bandwidth: float) -> float:
    """The least time one call can take: its weights' bytes over the read bandwidth."""
    return weight_bytes(model) / bandwidth


def measure_peak_flops(*, size: int = 1536, threads: Optional[int] = None, repeats: int = 3) -> float:
    """FLOP/s of this machine's best fp32 kernel: the best of `repeats` products of two `size` x `size`
    matrices (compute-bound: each weight is used `size` times), on `threads` threads (torch's by default)."""
    previous = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(int(threads))
    try:
        a, b = torch.randn(size, size), torch.randn(size, size)
        a @ b
        best = float("inf")
        for _ in range(int(repeats)):
            start = time.perf_counter()
            a @ b
            best = min(best, time.perf_counter() - start)
        return 2.0 * size**3 / best
    finally:
        torch.set_num_threads(previous)


def roofline_seconds(
    n_bytes: float, n_parameters: float, bandwidth: float, peak_flops: float, ks: Sequence[int]
) -> Dict[str, List[float]]:
    r"""The two floors of a call of k rows: reading the weights, $W / B$ (flat in k), and their arithmetic,
    $2 N k / F$ (each parameter is one multiply-add per row), and the roofline, their maximum. The
    ridge, where they meet, is at $k^* = F W / (2 N B)$ rows: below it a block costs what a token costs."""
    memory = n_bytes / bandwidth
    compute = [2.0 * n_parameters * k / peak_flops for k in ks]
    return {
        "k": list(ks),
        "memory_s": [memory] * len(ks),
        "compute_s": compute,
        "roofline_s": [max(memory, c) for c in compute],
        "ridge_k": peak_flops * n_bytes / (2.0 * n_parameters * bandwidth),
    }


@dataclass
class PathProbe:
    """What each path costs on a sample of a model's linear layers: `seconds[path][k]` (median over
    rounds) for a call of k rows, the sample's bytes, and the path chosen."""

    seconds: Dict[str, Dict[int, float]]
    sample_bytes: Dict[str, int]
    chosen: str = ""
    gamma: int = 0
    bf16_units: bool = False
    note: str = ""
    samples: Dict[str, Dict[int, List[float]]] = field(default_factory=dict)
    role: str = "verifier"

    def ratio(self, path: str, k: int) -> float:
        """t(k) / t(1) on `path`: 1 where a block costs what a token costs."""
        return self.seconds[path][k] / self.seconds[path][1]

    def table(self) -> List[dict]:
        return [
            {
                "path": path,
                **{f"t({k}) ms": round(1000 * t, 2) for k, t in costs.items()},
                **{f"t({k})/t(1)": round(costs[k] / costs[1], 2) for k in costs if k != 1},
            }
            for path, costs in self.seconds.items()
        ]

    def describe(self) -> str:
        if self.role == "drafter":
            bf16 = "bf16 units" if self.bf16_units else "no bf16 units"
            return f"kernel path {self.chosen!r} (least cost of a generation; {bf16}): {self.note}"
        block = self.gamma + 1
        parts = [
            f"{path}: t(1) {1000 * costs[1]:.1f} ms, t({block}) {1000 * costs[block]:.1f} ms"
            for path, costs in self.seconds.items()
            if block in costs
        ]
        return (
            f"kernel path {self.chosen!r} (least cost of a block of {block} rows on a sample of the model's "
            f"linear layers; bf16 units: {'yes' if self.bf16_units else 'no'}): " + "; ".join(parts)
        )

    def to_dict(self) -> dict:
        return {
            **asdict(self),
            "seconds": {p: {str(k): v for k, v in c.items()} for p, c in self.seconds.items()},
            "samples": {p: {str(k): v for k, v in c.items()} for p, c in self.samples.items()},
        }

    @classmethod
    def from_dict(cls, data: dict) -> "PathProbe":
        data = dict(data)
        data["seconds"] = {p: {int(k): v for k, v in c.items()} for p, c in data["seconds"].items()}
        data["samples"] = {p: {int(k): v for k, v in c.items()} for p, c in data.get("samples", {}).items()}
        return cls(**data)


def _sample_layers(model: nn.Module, decoder_layers: int = 2) -> Tuple[nn.ModuleList, int, float]:
    """Copies of the linear layers of the model's first `decoder_layers` blocks and its output head, how many
    of them are the blocks', and the model's count of blocks over the sample's."""
    linears, blocks = [], None
    for module in model.modules():
        if isinstance(module, nn.ModuleList) and len(module) > 1:
            blocks = module
            break
    sources = list(blocks[:decoder_layers]) if blocks is not None else [model]
    for source in sources:
        linears += [m for m in source.modules() if isinstance(m, nn.Linear)]
    in_blocks = len(linears)
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if isinstance(head, nn.Linear):
        linears.append(head)
    if not linears:
        raise ValueError("the model has no torch.nn.Linear layers to probe; pass path= explicitly")
    scale = len(blocks) / len(sources) if blocks is not None else 1.0
    return nn.ModuleList(_plain_copy(m) for m in linears), in_blocks, scale


def _plain_copy(linear: nn.Linear) -> nn.Linear:
    """An fp32 copy of `linear` with its plain weight, whatever path it is on."""
    packed = linear.__dict__.get(_PACKED_ATTRIBUTE)
    weight = packed.to_dense() if packed is not None and linear.weight.numel() == 0 else linear.weight
    out = nn.Linear(linear.in_features, linear.out_features, bias=linear.bias is not None)
    with torch.no_grad():
        out.weight.copy_(weight.float())
        if linear.bias is not None:
            out.bias.copy_(linear.bias.float())
    return out


def available_paths(candidates: Sequence[str] = VERIFIER_PATHS) -> List[str]:
    """The paths of `candidates` this machine can run (`fp32-packed` needs oneDNN's CPU kernels)."""
    return [p for p in candidates if p != "fp32-packed" or packed_path_available()]


def probe_paths(
    model: nn.Module,
    *,
    candidates: Sequence[str] = VERIFIER_PATHS,
    ks: Sequence[int] = (1, 2, 4, 6, 8),
    rounds: int = 5,
    seed: int = 0,
    whole_model: bool = False,
) -> PathProbe:
    """Time each path in `candidates` on copies of a sample of `model`'s linear layers, for calls of k rows
    (k in `ks`); one round runs every (path, k) once in a shuffled order, medians over `rounds` after a
    warm-up round. `whole_model` scales the sampled blocks' time to all of the model's blocks (the output
    head counted once), so that a prefill's rows and a step's are weighed as in the model."""
    for path in candidates:
        if path not in DRAFTER_PATHS:
            raise ValueError(f"candidate {path!r}: choose from {DRAFTER_PATHS}")
    ks = sorted({int(k) for k in (1, *ks)})
    candidates = available_paths(candidates)
    sample, in_blocks, scale = _sample_layers(model)
    scale = scale if whole_model else 1.0
    layers = {path: apply_path(copy.deepcopy(sample), path) for path in candidates}
    width = {
        path: [m.in_features if isinstance(m, nn.Linear) else m.weight().shape[1] for m in layers[path]]
        for path in candidates
    }
    generator = torch.Generator().manual_seed(seed)
    inputs = {k: [torch.randn(1, k, n, generator=generator) for n in width[candidates[0]]] for k in ks}
    samples = {path: {k: [] for k in ks} for path in candidates}
    order = [(path, k) for path in candidates for k in ks]
    shuffle = random.Random(seed)
    with torch.inference_mode():
        for round_index in range(int(rounds) + 1):
            shuffle.shuffle(order)
            for path, k in order:
                dtype = torch.bfloat16 if path == "bf16" else torch.float32
                xs = [x.to(dtype) for x in inputs[k]]
                start = time.perf_counter()
                for layer, x in zip(layers[path][:in_blocks], xs):
                    layer(x)
                middle = time.perf_counter()
                for layer, x in zip(layers[path][in_blocks:], xs[in_blocks:]):
                    layer(x)
                if round_index:
                    samples[path][k].append(scale * (middle - start) + time.perf_counter() - middle)
    seconds = {path: {k: statistics.median(v) for k, v in costs.items()} for path, costs in samples.items()}
    return PathProbe(
        seconds=seconds,
        sample_bytes={p: weight_bytes(layers[p]) for p in candidates},
        bf16_units=cpu_has_bf16_units(),
        samples=samples,
    )


def choose_path(probe: PathProbe, gamma: int, *, allow_bf16: Optional[bool] = None) -> PathProbe:
    """`probe` with `chosen` set: the path whose block of `gamma + 1` rows costs least (ties: the first
    listed), bf16 left out where `allow_bf16` is False (default: only where the processor has bf16
    units; without them bf16 converts every weight on every call)."""
    allow_bf16 = probe.bf16_units if allow_bf16 is None else allow_bf16
    block = int(gamma) + 1
    options = [path for path in probe.seconds if (allow_bf16 or path != "bf16")]
    if not options:
        raise ValueError("no candidate path is left to choose from")

    def cost(path):
        costs = probe.seconds[path]
        return costs.get(block, costs[max(k for k in costs if k <= block)])

    probe.chosen, probe.gamma = min(options, key=cost), int(gamma)
    probe.note = "" if allow_bf16 or "bf16" not in probe.seconds else "bf16 left out: no bf16 units"
    return probe


# --------------------------------------------------------------------------------------------------
# Choosing at load time, and keeping the choice
# --------------------------------------------------------------------------------------------------

PROBES_FILE = "kernel_paths.json"


def machine_key() -> str:
    """What a stored choice depends on besides the model: the processor, its vector units, those torch's
    kernels use (`processor_class.isa_cap` can hold them lower), torch and the thread count."""
    import platform

    try:
        info = Path("/proc/cpuinfo").read_text()
        name = next(
            (line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), ""
        )
        units = sorted(
            flag
            for line in info.splitlines()
            if line.startswith("flags")
            for flag in line.split(":", 1)[1].split()
            if flag.startswith(("avx", "amx"))
        )
    except OSError:
        name, units = platform.processor(), []
    kernels, threads = torch.backends.cpu.get_cpu_capability(), torch.get_num_threads()
    return f"{name}|{','.join(dict.fromkeys(units))}|{kernels}|torch {torch.__version__}|threads {threads}"


def _probes_path() -> Path:
    from .files import cache_dir

    return cache_dir() / PROBES_FILE


def stored_probe(model_name: str, gamma: int) -> Optional[PathProbe]:
    """The probe kept for `model_name` at `gamma` on this machine (`machine_key`), if any."""
    try:
        kept = json.loads(_probes_path().read_text())
    except (OSError, ValueError):
        return None
    entry = kept.get(f"{model_name}|gamma {int(gamma)}|{machine_key()}") if isinstance(kept, dict) else None
    try:
        return PathProbe.from_dict(entry) if isinstance(entry, dict) else None
    except (TypeError, KeyError, ValueError):
        return None


def store_probe(model_name: str, probe: PathProbe) -> Path:
    path = _probes_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        kept = {}
    kept[f"{model_name}|gamma {probe.gamma}|{machine_key()}"] = probe.to_dict()
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(kept, indent=1))
    temporary.replace(path)
    return path


def put_on_path(
    lm,
    path: str = "auto",
    *,
    gamma: int = 5,
    candidates: Optional[Sequence[str]] = None,
    allow_bf16: Optional[bool] = None,
    reprobe: bool = False,
    verbose: bool = True,
    role: str = "verifier",
) -> Optional[PathProbe]:
    """Put a loaded `LanguageModel` on `path`: a name from `DRAFTER_PATHS` (forced), or "auto": for
    `role="verifier"` the path a probe finds cheapest for a block of `gamma + 1` rows among `candidates`
    (default `VERIFIER_PATHS`); for `role="drafter"` the one whose generation costs least among
    `DRAFTER_PATHS` (`drafter_paths.choose_drafter_path`: a prompt's prefill and one-row steps). The probe
    is kept in the cache per model, role, gamma and machine, and reused unless `reprobe`. Prints the choice
    with its measured costs when `verbose`. Returns the probe (None for a forced path)."""
    if role not in ("verifier", "drafter"):
        raise ValueError(f"role={role!r}: a model is put on a path as the 'verifier' or the 'drafter'")
    if getattr(lm, "is_toy", False) or not isinstance(getattr(lm, "model", None), nn.Module):
        raise ValueError(
            f"{getattr(lm, 'name', lm)!r} is not a torch model (a toy model has no kernels to choose); "
            "load a transformers model, or leave kernel_paths=None"
        )
    probe = None
    if path == "auto":
        drafter = role == "drafter"
        candidates = available_paths(candidates or (DRAFTER_PATHS if drafter else VERIFIER_PATHS))
        key, gamma = (f"{lm.name} as drafter", 0) if drafter else (lm.name, gamma)
        probe = None if reprobe else stored_probe(key, gamma)
        if probe is None or set(probe.seconds) != set(candidates) or probe.role != role:
            probe = _probe_and_choose(lm.model, candidates, gamma, allow_bf16, role)
            store_probe(key, probe)
        path = probe.chosen
        if verbose:
            print(f"{lm.name}: {probe.describe()}")
    lm.model = apply_path(lm.model, path)
    lm.kernel_path, lm.kernel_probe = path, probe
    if lm.device.type == "cpu":  # a block's attention without copying the cache (`grouped_attention`)
        from .grouped_attention import use_grouped_attention

        use_grouped_attention(lm.model)
    return probe


def _probe_and_choose(model, candidates, gamma, allow_bf16, role) -> PathProbe:
    if role == "verifier":
        return choose_path(probe_paths(model, candidates=candidates), gamma, allow_bf16=allow_bf16)
    from .drafter_paths import DRAFTER_PREFILL_ROWS, choose_drafter_path

    probe = probe_paths(
        model, candidates=candidates, ks=(1, DRAFTER_PREFILL_ROWS), rounds=3, whole_model=True
    )
    probe.role = "drafter"
    return choose_drafter_path(probe)


def put_pair_on_paths(pair, paths: Sequence[Optional[str]], *, gamma: int = 5) -> None:
    """Put a loaded pair's drafter and verifier on `paths` (one each; None leaves that model as loaded), in
    place: the drafter for a generation's prefill and one-row steps, the verifier for blocks of `gamma + 1`
    rows (`put_on_path`)."""
    for lm, path, role in zip(pair, paths, ("drafter", "verifier")):
        if path is not None:
            put_on_path(lm, path, gamma=gamma, role=role)
