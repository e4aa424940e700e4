"""The seccomp filters of the sandbox, as classic-BPF programs (bwrap's `--seccomp` format).

`seccomp_filter` is loaded by bwrap before it starts the interpreter. It refuses with EPERM: new processes
(threads too where no pids cgroup bounds them), ptrace and cross-process memory calls, System V IPC and
POSIX message queues, namespaces, the old and the new mount API (`mount`, `open_tree`, `fsopen`,
`move_mount`, ...), bpf, perf, userfaultfd, keyrings and io_uring; and it allows sockets of the family
`AF_UNIX` only, refusing every other family (`AF_INET`, `AF_VSOCK`, `AF_NETLINK`, ...) with EAFNOSUPPORT.
A network namespace does not cover `AF_VSOCK`, whose ports are the hypervisor's; no test needs a socket.

`exec_filter` refuses `execve` and `execveat`. bwrap must exec the interpreter after loading its filter,
so this one is loaded by the sandboxed interpreter itself (`sandbox_child`) before any untrusted line.
"""

from __future__ import annotations

import platform
import struct

__all__ = ["seccomp_filter", "exec_filter", "AF_UNIX"]

AF_UNIX = 1
_EAFNOSUPPORT, _EPERM_ERRNO, _ENOSYS = 97, 1, 38
_ALLOW, _KILL, _ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_LD, _JEQ, _JSET, _JGE, _RET = 0x20, 0x15, 0x45, 0x35, 0x06
_CLONE_THREAD = 0x00010000
# Offsets in `struct seccomp_data`: nr, arch, then the arguments from 16 (the low half on little-endian).
_NR, _ARCH, _ARG0 = 0, 4, 16

# open_tree .. fspick, mount_setattr, open_tree_attr (the same numbers on both)
_MOUNT_API = (428, 429, 430, 431, 432, 433, 442, 467)
_TABLES = {
    "x86_64": dict(
        arch=0xC000003E,
        x32_bit=0x40000000,
        clone=56,
        clone3=435,
        socket=(41, 53),  # socket, socketpair
        exec=(59, 322),  # execve, execveat
        # fork, vfork, ptrace, process_vm_readv/writev, unshare, setns, mount, umount2, bpf, userfaultfd,
        # perf_event_open, kcmp, add_key, request_key, keyctl, io_uring_*, pivot_root, System V shared
        # memory, semaphores and messages, POSIX message queues, pidfd_getfd, and the new mount API
        deny=(57, 58, 101, 310, 311, 272, 308, 165, 166, 321, 323, 298, 312, 248, 249, 250, 425, 426, 427)
        + (155, 29, 30, 31, 67, 64, 65, 66, 220, 68, 69, 70, 71, 240, 438)
        + _MOUNT_API,
    ),
    "aarch64": dict(
        arch=0xC00000B7,
        x32_bit=None,
        clone=220,
        clone3=435,
        socket=(198, 199),
        exec=(221, 281),
        deny=(117, 270, 271, 97, 268, 40, 39, 280, 282, 241, 272, 217, 218, 219, 425, 426, 427, 41)
        + (194, 195, 196, 197, 190, 191, 192, 193, 186, 187, 188, 189, 180, 438)
        + _MOUNT_API,
    ),
}


def _assemble(instructions: list) -> bytes:
    """Each instruction is (code, k) or (code, k, label if true, label if false), or a label string that
    names the instruction after it; a jump to None falls through."""
    labels, position = {}, 0
    for item in instructions:
        if isinstance(item, str):
            labels[item] = position
        else:
            position += 1
    program, position = [], 0
    for item in instructions:
        if isinstance(item, str):
            continue
        code, k, *targets = item
        jumps = [0 if target is None else labels[target] - position - 1 for target in targets] or [0, 0]
        program.append(struct.pack("HBBI", code, jumps[0], jumps[1], k))
        position += 1
    return b"".join(program)


def _prologue(table: dict) -> list:
    """Kill a call made under another architecture (or x32's numbers); load the syscall number."""
    code = [(_LD, _ARCH), (_JEQ, table["arch"], "arch ok", None), (_RET, _KILL), "arch ok", (_LD, _NR)]
    if table["x32_bit"]:
        code += [(_JGE, table["x32_bit"], None, "native"), (_RET, _KILL), "native"]
    return code


def seccomp_filter(machine: str | None = None, *, allow_threads: bool = True) -> bytes | None:
    """The filter bwrap loads (module docstring), or None on an unknown architecture. `allow_threads=False`
    refuses clone with CLONE_THREAD too: the process limit where no pids cgroup can bound the number of
    threads (`process_limit`)."""
    table = _TABLES.get(machine or platform.machine())
    if table is None:
        return None
    code = _prologue(table)
    code += [(_JEQ, number, "eperm", None) for number in table["deny"]]
    code += [(_JEQ, number, "socket", None) for number in table["socket"]]
    code += [(_JEQ, table["clone3"], "enosys", None), (_JEQ, table["clone"], "clone", None)]
    code += ["allow", (_RET, _ALLOW)]
    code += ["eperm", (_RET, _ERRNO | _EPERM_ERRNO)]
    code += ["enosys", (_RET, _ERRNO | _ENOSYS)]  # clone3: the C library falls back to clone
    code += ["clone", (_LD, _ARG0), (_JSET, _CLONE_THREAD, None, "no thread")]
    code += [
        (_RET, _ALLOW if allow_threads else _ERRNO | _EPERM_ERRNO),
        "no thread",
        (_RET, _ERRNO | _EPERM_ERRNO),
    ]
    code += ["socket", (_LD, _ARG0), (_JEQ, AF_UNIX, None, "other family"), (_RET, _ALLOW)]
    code += ["other family", (_RET, _ERRNO | _EAFNOSUPPORT)]
    return _assemble(code)


def exec_filter(machine: str | None = None) -> bytes | None:
    """The filter the sandboxed interpreter loads on itself: `execve` and `execveat` refused with EPERM."""
    table = _TABLES.get(machine or platform.machine())
    if table is None:
        return None
    code = _prologue(table) + [(_JEQ, number, "eperm", None) for number in table["exec"]]
    code += [(_RET, _ALLOW), "eperm", (_RET, _ERRNO | _EPERM_ERRNO)]
    return _assemble(code)
