"""The sandboxed shell (Linux Landlock): how a ``shell`` call runs when its policy answer set a sandbox.

The contract (SPEC §3.3: ``shell`` is a built-in the core runs): the ``tool_approval`` answer of a
``shell`` call may carry ``sandbox: {"mode": "workspace-write" | "read-only", "network": bool}``
(the bundled approval worker sets it from ``approval.json``). The core then runs the command in
that sandbox itself, keeping its timeout and process-group kill:

- ``workspace-write``: writes only beneath the workspace and a private temporary folder (``TMPDIR``,
  removed after the call), plus ``/dev/null`` and its kin; ``read-only``: only the private
  temporary folder. Reading and executing stay free.
- ``network: false`` (the default): no TCP connect or bind (Landlock ABI 4+; UDP is not covered by
  Landlock), and no abstract UNIX sockets outside the sandbox (ABI 6+).

A sandbox that is selected but cannot be applied (not Linux, no Landlock in the kernel, an ABI too
old for the network rule) is an error naming why: the command is never run without it.
"""

from __future__ import annotations

import ctypes
import os
import sys
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .errors import ToolError

_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")
_CREATE_RULESET_VERSION = 1


class SandboxError(ToolError):
    """The sandbox a call must run in cannot be applied; the message says why."""


@dataclass(frozen=True)
class Sandboxed:
    """A command wrapped in its sandbox: the argv to run and the private temporary folder it may use."""

    argv: list[str]
    tmp: str


@lru_cache(maxsize=1)
def landlock_abi() -> int:
    """The kernel's Landlock ABI version; SandboxError naming why there is none."""
    if not sys.platform.startswith("linux"):
        raise SandboxError(f"the shell sandbox needs Linux Landlock; this system is {sys.platform}")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    version = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    if version < 0:
        errno = ctypes.get_errno()
        reason = {
            38: "this kernel has no Landlock (needs Linux 5.13+ built with CONFIG_SECURITY_LANDLOCK)",
            95: "Landlock is disabled on this system (add landlock to the kernel's lsm= boot parameter)",
        }.get(errno, f"Landlock is unavailable: {os.strerror(errno)}")
        raise SandboxError(reason)
    return int(version)


def sandboxed(argv: list[str], mode: str, network: bool, workspace: Path) -> Sandboxed:
    """``argv`` wrapped so it runs under the sandbox ``mode`` (SandboxError when it cannot)."""
    abi = landlock_abi()
    if not network and abi < 4:
        raise SandboxError(
            f"this kernel's Landlock (ABI {abi}) cannot deny network connections (needs ABI 4, Linux 6.7); "
            'set "network": true in approval.json\'s sandbox to run without that rule'
        )
    tmp = tempfile.mkdtemp(prefix="i-shell-")
    writable = [tmp, *(device for device in _DEVICES if os.path.exists(device))]
    if mode == "workspace-write":
        writable.append(str(workspace))
    helper = str(Path(__file__).with_name("sandbox_exec.py"))
    wrapped = [sys.executable, "-I", "-S", helper, str(abi), "0" if network else "1", *writable, "--", *argv]
    return Sandboxed(wrapped, tmp)
