r"""The class of processor a CPU measurement belongs to, read from `/proc/cpuinfo`: its widest vector
units (`avx2`, `avx512`, `amx`; `arm` or `other` elsewhere), whether it multiplies bf16 natively, and its
model name.

Which kernel path wins, and by how much, depends on the class more than on the model of processor: an AVX2
processor has no 512-bit units and converts bf16 in software; an AVX-512 one without `avx512_bf16` streams
fp32 and int8 faster and still converts bf16; one with AMX multiplies bf16 tiles natively. A benchmark
therefore keeps one result per class (`data/benchmarks/engine_speed_cpu_<class>.json`), and `class_name`
names its file.

A wider processor can run the kernels of a narrower class: `ATEN_CPU_CAPABILITY=avx2` caps torch's own
kernels and `ONEDNN_MAX_CPU_ISA=AVX2` oneDNN's (the packed linear layers). A measurement under such a cap
(`isa_cap`) is the narrower class's kernels at this machine's memory bandwidth, not that class's machine:
its files say so (`<cap>_capped`, e.g. `engine_speed_cpu_avx2_capped.json`).

- `processor_class` - the class of this machine (or of a given cpuinfo text) as a dict
- `class_name`      - the class's short name, the suffix of its benchmark files
- `isa_cap`         - the vector units torch's kernels are capped to by those variables, or None
- `CLASSES`         - the classes' names, from the widest units down
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Optional

__all__ = ["CLASSES", "ISA_CAP_VARIABLES", "processor_class", "class_name", "isa_cap"]

CLASSES = ("amx", "avx512", "avx2", "arm", "other")
#: The variables that cap the vector units of torch's kernels: ATen's, then oneDNN's.
ISA_CAP_VARIABLES = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA")


def isa_cap() -> Optional[str]:
    """The class torch's kernels are capped to (`avx2`, `avx512`, ...; lower case) by `ATEN_CPU_CAPABILITY`
    or else `ONEDNN_MAX_CPU_ISA`, or None where neither is set."""
    for name in ISA_CAP_VARIABLES:
        value = os.environ.get(name, "").strip().lower()
        if value:
            return "avx512" if value.startswith("avx512") else value
    return None


def _flags(cpuinfo: str) -> set:
    flags = set()
    for line in cpuinfo.splitlines():
        if line.lower().startswith(("flags", "features")):
            flags.update(line.split(":", 1)[-1].split())
    return flags


def class_name(cpuinfo: Optional[str] = None) -> str:
    """`amx` (AMX tiles), `avx512` (AVX-512F), `avx2`, `arm` (an Arm `Features` line) or `other`."""
    cpuinfo = _read_cpuinfo() if cpuinfo is None else cpuinfo
    flags = _flags(cpuinfo)
    if flags & {"amx_bf16", "amx_tile"}:
        return "amx"
    if "avx512f" in flags:
        return "avx512"
    if "avx2" in flags:
        return "avx2"
    if "asimd" in flags or any(line.lower().startswith("features") for line in cpuinfo.splitlines()):
        return "arm"
    return "other"


def processor_class(cpuinfo: Optional[str] = None) -> dict:
    """This machine's class (or that of a `/proc/cpuinfo` text): `class` (`class_name`), `bf16_units` (x86
    `avx512_bf16` or `amx_bf16`, Arm `bf16`), `vector_units` (the avx/amx flags, sorted), `model`, and
    `isa_capped_to` (`isa_cap`: the class torch's kernels are held to here, or None)."""
    cpuinfo = _read_cpuinfo() if cpuinfo is None else cpuinfo
    flags = _flags(cpuinfo)
    model = next(
        (line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")),
        platform.processor() or platform.machine(),
    )
    return {
        "class": class_name(cpuinfo),
        "bf16_units": bool(flags & {"avx512_bf16", "amx_bf16", "bf16"}),
        "vector_units": sorted(flag for flag in flags if flag.startswith(("avx", "amx"))),
        "model": model,
        "isa_capped_to": isa_cap(),
    }


def _read_cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""
