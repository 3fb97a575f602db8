"""Applies a Landlock ruleset to itself, then execs the command: ``python -I -S sandbox_exec.py
ABI NET_DENY WRITABLE... -- ARGV...``.

Run as a script (standard library only, no ``site``), so a sandboxed shell call pays for one small
interpreter start, never for importing ``i_core``. The ruleset handles every write access (reads
and execution stay free): writes are allowed only beneath the ``WRITABLE`` paths (folders, or
single files such as ``/dev/null``); ``NET_DENY`` ``1`` also handles TCP bind and connect with no
rule allowing any (Landlock ABI 4+), and a seccomp filter refuses every IPv4 and IPv6 socket
(``socket(AF_INET | AF_INET6, …)``: UDP, raw and TCP alike, which Landlock does not cover) and
``io_uring_setup``. ABI 6+ also scopes abstract UNIX sockets (with ``NET_DENY``) and signals to the
sandbox. Any failure is one line on stderr starting ``i-sandbox:`` and exit
status 125: the command never runs without its sandbox.
"""

from __future__ import annotations

import ctypes
import os
import sys

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same number on every Linux architecture
_PR_SET_NO_NEW_PRIVS = 38
_RULE_PATH_BENEATH = 1
_FILE_ACCESS = (1 << 1) | (1 << 14)  # WRITE_FILE, TRUNCATE: what a rule on a single file may allow
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1
EXIT_SANDBOX_FAILED = 125
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_SECCOMP_ALLOW, _SECCOMP_KILL_PROCESS = 0x7FFF0000, 0x80000000
_SECCOMP_ERRNO_EACCES = 0x00050000 | 13
_AF_INET, _AF_INET6 = 2, 10
_SYSCALLS = {  # machine -> (AUDIT_ARCH_*, __NR_socket, __NR_io_uring_setup)
    "x86_64": (0xC000003E, 41, 425),
    "aarch64": (0xC00000B7, 198, 425),
}


def write_access(abi: int) -> int:
    """Every write-class filesystem access this Landlock ABI knows (reads and execution excluded)."""
    access = (1 << 1) | (1 << 4) | (1 << 5) | sum(1 << bit for bit in range(6, 13))  # write, remove, make_*
    if abi >= 2:
        access |= 1 << 13  # REFER: moving or linking a file across folders
    if abi >= 3:
        access |= 1 << 14  # TRUNCATE
    return access


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def inet_filter(machine: str) -> list[tuple[int, int, int, int]]:
    """The seccomp program (code, jt, jf, k) that refuses IPv4/IPv6 sockets and io_uring with
    EACCES, kills a call of another architecture (a 32-bit entry could bypass it), and allows the rest."""
    if machine not in _SYSCALLS:
        _fail(f"no network filter for this machine ({machine}): run with network allowed")
    arch, socket_nr, uring_nr = _SYSCALLS[machine]
    load, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JGE|K, BPF_RET|K
    return [
        (load, 0, 0, 4),  # 0: seccomp_data.arch
        (jeq, 1, 0, arch),  # 1
        (ret, 0, 0, _SECCOMP_KILL_PROCESS),  # 2
        (load, 0, 0, 0),  # 3: seccomp_data.nr
        (jge, 6, 0, 0x40000000),  # 4: the x32 calls of x86_64 -> refused
        (jeq, 5, 0, uring_nr),  # 5 -> refused
        (jeq, 0, 3, socket_nr),  # 6: else -> allowed
        (load, 0, 0, 16),  # 7: args[0], the socket's family (low 32 bits)
        (jeq, 2, 0, _AF_INET),  # 8 -> refused
        (jeq, 1, 0, _AF_INET6),  # 9 -> refused
        (ret, 0, 0, _SECCOMP_ALLOW),  # 10
        (ret, 0, 0, _SECCOMP_ERRNO_EACCES),  # 11
    ]


def _deny_inet(libc: ctypes.CDLL) -> None:
    program = inet_filter(os.uname().machine)
    filters = (_SockFilter * len(program))(*(_SockFilter(*instruction) for instruction in program))
    prog = _SockFprog(len(program), filters)
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        _fail(f"prctl(PR_SET_SECCOMP): {os.strerror(ctypes.get_errno())}")


def _fail(message: str) -> None:
    sys.stderr.write(f"i-sandbox: cannot apply the sandbox: {message}\n")
    sys.stderr.flush()
    os._exit(EXIT_SANDBOX_FAILED)


def restrict(abi: int, deny_network: bool, writable: list[str]) -> None:
    """Restrict this process (and what it execs) to writes beneath ``writable``; no TCP when asked."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    handled = write_access(abi)
    attr = _RulesetAttr(handled, 0, 0)
    size = 8
    if deny_network:
        if abi < 4:
            _fail(f"Landlock ABI {abi} cannot deny network connections (needs ABI 4, Linux 6.7)")
        attr.net = _NET_BIND_TCP | _NET_CONNECT_TCP
        size = 16
    if abi >= 6:
        attr.scoped = _SCOPE_SIGNAL | (_SCOPE_ABSTRACT_UNIX_SOCKET if deny_network else 0)
        size = 24
    ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        _fail(f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    for path in writable:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError as exc:
            _fail(f"{path}: {exc.strerror}")
        allowed = handled if os.path.isdir(path) else handled & _FILE_ACCESS
        rule = _PathBeneath(allowed, fd)
        if libc.syscall(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule), 0) < 0:
            _fail(f"landlock_add_rule {path}: {os.strerror(ctypes.get_errno())}")
        os.close(fd)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        _fail(f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}")
    if deny_network:
        _deny_inet(libc)
    if libc.syscall(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
        _fail(f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    os.close(ruleset)


def main(argv: list[str]) -> None:
    """``ABI NET_DENY WRITABLE... -- ARGV...``: restrict, then exec ``ARGV``."""
    if "--" not in argv or len(argv) < 3:
        _fail("usage: sandbox_exec.py ABI NET_DENY WRITABLE... -- ARGV...")
    split = argv.index("--")
    abi, deny_network, writable, command = int(argv[0]), argv[1] == "1", argv[2:split], argv[split + 1 :]
    restrict(abi, deny_network, writable)
    try:
        os.execv(command[0], command)
    except OSError as exc:
        _fail(f"{command[0]}: {exc.strerror}")


if __name__ == "__main__":
    main(sys.argv[1:])
