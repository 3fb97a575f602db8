"""The ``shell`` tool: ``/bin/sh -c`` in the workspace, in its own process group, output capped, and in
the sandbox its policy answer set (``i_core.sandbox``)."""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field

from .. import sandbox
from ..errors import ToolError
from .arguments import Arguments
from .contract import APPROVAL_TOKEN_ENV, Prepared, ToolContext, ToolResult
from .text import printable

EXIT_SANDBOX_FAILED = 125
"""The exit status of ``sandbox_exec.py`` when it could not apply the sandbox (its output says why)."""

MAX_SHELL_TIMEOUT = 600.0
# After the shell exits, background children may still hold the output pipe open.
_DRAIN_GRACE = 0.5
_TERM_GRACE = 1.0
_READ_BYTES = 65536


def prepare_shell(arguments: object, ctx: ToolContext) -> Prepared:
    """Validate a ``shell`` call: ``command`` and an optional ``timeout`` in seconds (at most 600)."""
    args = Arguments("shell", arguments, ("command", "timeout"))
    command = args.string("command")
    timeout = args.number("timeout", min(ctx.shell_timeout, MAX_SHELL_TIMEOUT), MAX_SHELL_TIMEOUT)
    if "\x00" in command:
        raise ToolError("shell: command contains a NUL character")
    try:
        os.fsencode(command)
    except UnicodeEncodeError:
        raise ToolError("shell: command is not valid Unicode (it contains a lone surrogate)")
    # The whole command: the approval prompt shows it (sanitised) and says when it must cut it.
    summary = "shell: " + printable(command)
    return Prepared("shell", dict(args.values), summary, None, None, lambda c: run_shell(command, timeout, c))


@dataclass
class _Capture:
    """Keeps the first and last ``half`` bytes of a stream of any length, and counts the rest."""

    half: int
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.half:
                del self.tail[: len(self.tail) - self.half]

    def text(self) -> str:
        cut = self.total - len(self.head) - len(self.tail)
        head = self.head.decode("utf-8", "replace")
        if cut <= 0:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace")
        tail = self.tail.decode("utf-8", "replace")
        return f"{head}\n[... {cut} bytes of output cut (cap of {2 * self.half} bytes) ...]\n{tail}"


def run_shell(command: str, timeout: float, ctx: ToolContext) -> ToolResult:
    """Run ``command`` with ``/bin/sh -c``; stdin is /dev/null, stdout and stderr are merged."""
    env = {key: value for key, value in ctx.env.items() if key != APPROVAL_TOKEN_ENV}
    argv, tmp = ["/bin/sh", "-c", command], None
    if ctx.sandbox is not None:
        try:
            wrapped = sandbox.sandboxed(argv, ctx.sandbox["mode"], bool(ctx.sandbox.get("network")), ctx.workspace)
        except sandbox.SandboxError as exc:
            raise ToolError(f"shell: not run: the {ctx.sandbox['mode']} sandbox cannot be applied: {exc}") from None
        argv, tmp = wrapped.argv, wrapped.tmp
        env.update(TMPDIR=tmp, TMP=tmp, TEMP=tmp)
    try:
        return _run(argv, command, timeout, ctx, env)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _run(argv: list[str], command: str, timeout: float, ctx: ToolContext, env: dict[str, str]) -> ToolResult:
    try:
        process = subprocess.Popen(
            argv,
            cwd=ctx.workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        raise ToolError(f"shell: could not start /bin/sh in {printable(str(ctx.workspace))}: {exc.strerror or exc}")
    capture = _Capture(max(ctx.max_output_chars // 2, 1))
    timed_out = _pump(process, capture, time.monotonic() + timeout)
    code = process.wait()
    output = capture.text()
    if ctx.sandbox is not None and code == EXIT_SANDBOX_FAILED and output.startswith("i-sandbox:"):
        raise ToolError(f"shell: not run: {output.strip()[len('i-sandbox: ') :]}")
    body = output if output.strip() else "(no output)\n"
    body = body if body.endswith("\n") else body + "\n"
    if timed_out:
        return ToolResult(
            f"{body}[timed out after {timeout:g} s; the command's process group was killed]", is_error=True
        )
    status = f"[exit code {code}]" if code >= 0 else f"[killed by signal {-code}]"
    return ToolResult(f"{body}{status}")


def _pump(process: subprocess.Popen[bytes], capture: _Capture, deadline: float) -> bool:
    """Read the output until EOF; True when the deadline passed and the group was killed."""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    exited_at: float | None = None
    timed_out = False
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if not timed_out and now >= deadline:
                timed_out = True
                _kill_group(process)
                exited_at = time.monotonic()
            if exited_at is None and process.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > _DRAIN_GRACE:
                # Whatever still holds the pipe open is a leftover of this command's group.
                _signal_group(process.pid, signal.SIGKILL)
                break
            # Short waits while the shell runs, so its exit is noticed even if children keep the pipe.
            wait = 0.1 if exited_at is None else _DRAIN_GRACE
            if not timed_out:
                wait = min(wait, max(deadline - now, 0.01))
            if selector.select(timeout=wait):
                chunk = os.read(fd, _READ_BYTES)
                if not chunk:
                    break
                capture.add(chunk)
    process.stdout.close()
    return timed_out


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    _signal_group(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=_TERM_GRACE)
    except subprocess.TimeoutExpired:
        pass
    # Children that ignore SIGTERM, or outlive the shell, go too.
    _signal_group(process.pid, signal.SIGKILL)


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass
