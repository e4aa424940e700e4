"""The seccomp filter of the sandbox: the syscalls it refuses on each architecture, and the classic-BPF
program that refuses them (bwrap's `--seccomp` format)."""

from __future__ import annotations

import platform
import struct

__all__ = ["seccomp_filter"]


# Syscalls the filter refuses with EPERM, per architecture (clone and clone3 are handled apart).
_SECCOMP_TABLES = {
    "x86_64": dict(
        arch=0xC000003E,
        clone=56,
        clone3=435,
        x32_bit=0x40000000,
        deny=(
            57,
            58,
            101,
            310,
            311,
            272,
            308,
            165,
            166,
            321,
            298,
            323,
            250,
            248,
            249,
            425,
            426,
            427,
            155,
            # System V shared memory, semaphores and messages, POSIX message queues, pidfd_getfd
            29,
            30,
            31,
            67,
            64,
            65,
            66,
            220,
            68,
            69,
            70,
            71,
            240,
            438,
        ),
    ),
    "aarch64": dict(
        arch=0xC00000B7,
        clone=220,
        clone3=435,
        x32_bit=None,
        deny=(
            117,
            270,
            271,
            97,
            268,
            40,
            39,
            280,
            241,
            282,
            219,
            217,
            218,
            425,
            426,
            427,
            41,
            194,
            195,
            196,
            197,
            190,
            191,
            192,
            193,
            186,
            187,
            188,
            189,
            180,
            438,
        ),
    ),
}


def seccomp_filter(machine: str | None = None, *, allow_threads: bool = True) -> bytes | None:
    """A classic-BPF seccomp program (bwrap's `--seccomp` format), or None on an unknown architecture.
    `allow_threads=False` refuses clone with CLONE_THREAD too: the process limit where no pids cgroup
    can bound the number of threads (`process_limit`)."""
    table = _SECCOMP_TABLES.get(machine or platform.machine())
    if table is None:
        return None
    LD, JEQ, JSET, JGE, RET = 0x20, 0x15, 0x45, 0x35, 0x06
    ALLOW, KILL, EPERM, ENOSYS = 0x7FFF0000, 0x80000000, 0x00050001, 0x00050026
    CLONE_THREAD = 0x00010000

    def op(code, jt, jf, k):
        return struct.pack("HBBI", code, jt, jf, k)

    program = [op(LD, 0, 0, 4), op(JEQ, 1, 0, table["arch"]), op(RET, 0, 0, KILL), op(LD, 0, 0, 0)]
    if table["x32_bit"]:
        program += [op(JGE, 0, 1, table["x32_bit"]), op(RET, 0, 0, KILL)]
    checks = [*table["deny"], table["clone3"], table["clone"]]
    # After the checks: [ALLOW, EPERM, ENOSYS, LD arg0, JSET CLONE_THREAD, ALLOW, EPERM]
    for index, number in enumerate(checks):
        remaining = len(checks) - index - 1  # instructions between this one and the ALLOW return
        target = remaining + {table["clone3"]: 2, table["clone"]: 3}.get(number, 1)
        program.append(op(JEQ, target, 0, number))
    program += [
        op(RET, 0, 0, ALLOW),
        op(RET, 0, 0, EPERM),
        op(RET, 0, 0, ENOSYS),
        op(LD, 0, 0, 16),
        op(JSET, 0, 1, CLONE_THREAD),
        op(RET, 0, 0, ALLOW if allow_threads else EPERM),
        op(RET, 0, 0, EPERM),
    ]
    return b"".join(program)
