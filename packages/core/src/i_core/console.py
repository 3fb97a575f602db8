"""The line console: ``i`` on a terminal. A prompt (readline), a request per line or several
(``line_input``), slash commands from one registry (``commands``, ``console_commands``); while a
turn runs, lines typed are queued for the steering worker (``LineQueue``) and Ctrl-C cancels the
turn (nothing after the last checkpoint stays).

Loaded only when stdin and stderr are a terminal and no task is given (``app``); what every path
shows is in ``screen``, the approval question in ``approval_prompt``.
"""

from __future__ import annotations

import copy
import os
import select
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from . import line_input
from .attach import ConsoleInput, install_completion
from .brand import can_draw_blocks, render_text
from .commands import Registry, Text, Unknown
from .console_commands import EXIT, ConsoleState, console_registry
from .errors import CoreError
from .interrupt import stop_interrupted
from .line_input import read_request
from .screen import Screen, answer_turn, status_line
from .usage_totals import UsageTotals

try:
    import readline
except ImportError:  # not on every platform: the prompt then has no line editing
    readline = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from .agent import Agent
    from .prepare import Preparer

WELCOME = (
    "i — type a request (end a line with \\ or press Alt-Enter for more lines); while it runs, type to queue "
    "more; Ctrl-C cancels; @path attaches a file, !cmd runs a command; /help lists the commands, /exit leaves"
)


def logo(screen: Screen) -> None:
    """The brand on stderr as the console opens (a TTY only; never part of a prompt or the history)."""
    screen.brand(render_text(color=screen.color, ascii_only=not can_draw_blocks(screen.err)))


class LineQueue:
    """While a turn runs, lines typed on the terminal are appended to the steering queue file.

    A background thread polls stdin (the terminal is in its normal line mode while a turn runs) and
    stops before the prompt comes back, so it never competes with readline.
    """

    def __init__(self, path: Path, screen: Screen) -> None:
        self.path = path
        self.screen = screen
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._buffer = b""
        self.queued: list[str] = []
        self.commands: list[str] = []
        self.is_command: Callable[[str], bool] = lambda text: text.startswith("/")
        """Whether a line typed mid-turn is a console command (run at the prompt), not steering text."""

    def start(self) -> None:
        """Read the terminal on a background thread (while a turn runs)."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="i-steering-reader", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop reading the terminal (before the prompt comes back)."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None

    pause = stop
    resume = start

    def _run(self) -> None:
        fd = sys.stdin.fileno()
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([fd], [], [], 0.05)
                if not ready:
                    continue
                chunk = os.read(fd, 4096)
            except (OSError, ValueError):
                return
            if not chunk:
                return
            self._buffer += chunk
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                text = line.decode("utf-8", "replace").strip()
                if self.is_command(text):
                    self.commands.append(text)  # a console command, run when the prompt is back
                elif text:
                    self.add(text)

    def add(self, text: str) -> str:
        """Append one entry to the queue file; its id."""
        entry = {"id": uuid.uuid4().hex, "text": text, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, orjson.dumps(entry) + b"\n")
        finally:
            os.close(fd)
        self.queued.append(entry["id"])
        self.screen.typed_line(f"[i] queued for the next request: {text[:80]}")
        return entry["id"]

    def take_partial(self) -> str:
        """A line typed but not finished when the turn ended (for the next prompt)."""
        text, self._buffer = self._buffer.decode("utf-8", "replace"), b""
        return text.strip()


def run_console(agent: Agent, screen: Screen, reader: LineQueue, preparer: Preparer | None = None) -> None:
    """Read requests at the prompt and run each until EOF, ``/exit`` or a second Ctrl-C; a line
    that names a command (``commands``) runs it instead, and an unknown ``/word`` is refused.

    ``preparer`` prepares the next compaction's summary while the prompt waits (``prepare``); it is
    stopped as soon as a line, a Ctrl-C or the end of input arrives, before anything else runs."""
    try:
        _console_loop(agent, screen, reader, preparer)
    finally:
        if preparer is not None:
            preparer.stop()


def _console_loop(agent: Agent, screen: Screen, reader: LineQueue, preparer: Preparer | None) -> None:
    screen.note(WELCOME)
    line_input.set_up(readline)
    inputs = ConsoleInput(agent, screen, reader)
    if readline is not None:
        install_completion(readline, Path(agent.runtime.workspace), screen)
    totals = UsageTotals(lambda: agent.config.prices)
    agent.model.observe(totals)
    state = ConsoleState(agent, screen, input, agent.config, totals)
    registry = console_registry(state)
    reader.is_command = lambda text: not isinstance(registry.parse(text), Text)
    prefill = ""
    armed = False  # the last thing was a Ctrl-C: one more at the prompt exits
    while True:
        try:
            line = _prompt(reader, prefill)
        except EOFError:
            screen.note("")
            return
        except KeyboardInterrupt:
            if preparer is not None:
                preparer.stop()  # Ctrl-C stops the work in the background too
            if armed:
                screen.note("")
                return
            armed = True
            screen.note("\n[i] Ctrl-C again to exit", dim=True)
            prefill = ""
            continue
        if preparer is not None:
            preparer.stop()  # the user's line first: at most one worker call in flight is waited for
        prefill = ""
        armed = False
        typed = line.strip()
        text = _request(registry, typed, screen)
        if text is EXIT:
            return
        if not isinstance(text, str):
            continue
        if typed.startswith("!"):
            inputs.run_command(text[1:].strip())
            continue
        attached = inputs.attachments(text)
        if not _typed_turn(agent, text, screen, reader, attached):
            inputs.pending = [part for part in attached if "_command" in part]  # kept for the next try
            reader.take_partial()  # cancelled: the request itself comes back at the prompt
            prefill, armed = typed, True
            continue
        partial = reader.take_partial()
        if partial:
            prefill = partial
        screen.note(status_line(agent), dim=True)
        if _pending(agent, reader) and not prefill:
            # Typed while the model worked and not delivered inside that turn: the next user message.
            _queued_turn(agent, screen, reader)
        if preparer is not None:
            preparer.start()  # a turn ended: the user reads and types now


def _request(registry: Registry, typed: str, screen: Screen) -> object:
    """What a line asks for: the request text to send, ``EXIT``, or None (nothing to send: empty, a
    command that ran, an unknown command refused in one line)."""
    if not typed:
        return None
    parsed = registry.parse(typed)
    if isinstance(parsed, Unknown):
        screen.failure(f"i: {parsed.message}")
        return None
    if isinstance(parsed, Text):
        return parsed.text
    try:
        result = parsed.command.run(parsed.args)
    except KeyboardInterrupt as exc:  # a long /compact: back to the prompt, nothing of it committed
        stop_interrupted(exc)
        screen.interrupted()
        screen.note(f"[i] {typed.split()[0]} cancelled; nothing it had not finished was kept", dim=True)
        return None
    return result if result is EXIT or isinstance(result, str) else None


def _prompt(reader: LineQueue, prefill: str) -> str:
    """The next line: a console command typed while a turn ran, else what the user types at ``> ``
    (``prefill`` already in the line: a cancelled request, or what was typed when the turn ended);
    a trailing backslash goes on to the next line (``line_input``)."""
    if readline is not None and prefill:

        def insert(text: str = prefill) -> None:
            readline.insert_text(text)

        readline.set_startup_hook(insert)
    try:
        return reader.commands.pop(0) if reader.commands else read_request(input)
    finally:
        if readline is not None:
            readline.set_startup_hook(None)


def _typed_turn(
    agent: Agent, text: str, screen: Screen, reader: LineQueue, attached: Sequence[dict[str, Any]] = ()
) -> bool:
    """Run a typed request (``attached``: parts before its words, ``attach``); False when Ctrl-C
    cancelled it (nothing of it after the last checkpoint stays, in memory as on disk)."""
    session = agent.session
    saved, meta = session.messages, copy.deepcopy(session.meta)
    before = agent.history
    reader.start()
    try:
        answer_turn(agent, text, screen, attached=attached)
    except KeyboardInterrupt as exc:
        stop_interrupted(exc)
        screen.interrupted()
        screen.end_answer()
        agent.history = list(session.messages) if session.messages else before
        if session.messages is saved:
            session.meta.clear()
            session.meta.update(meta)
        screen.note("[i] cancelled; nothing after the last checkpoint was saved (Ctrl-C again to exit)", dim=True)
        return False
    except CoreError as exc:
        screen.end_answer()
        screen.failure(f"i: {exc}")
    finally:
        reader.stop()
    return True


def _pending(agent: Agent, reader: LineQueue) -> list[str]:
    """Queued ids no message of the history carries yet."""
    delivered = {m.get("_steering") for m in agent.history if isinstance(m, dict)}
    return [ident for ident in reader.queued if ident not in delivered]


def _queued_turn(agent: Agent, screen: Screen, reader: LineQueue) -> None:
    """Turns that start from the queue alone (``Agent.run(None)``), while anything is pending."""
    while _pending(agent, reader):
        before = len(agent.history)
        reader.start()
        try:
            answer_turn(agent, None, screen)
        except KeyboardInterrupt as exc:
            stop_interrupted(exc)
            screen.interrupted()
            screen.end_answer()
            agent.history = list(agent.session.messages) or agent.history
            screen.note("[i] cancelled; the queued input stays queued for the next request", dim=True)
            return
        except CoreError as exc:
            screen.end_answer()
            screen.failure(f"i: {exc}")
            return
        finally:
            reader.stop()
        screen.note(status_line(agent), dim=True)
        if len(agent.history) == before:
            return  # the steering worker delivered nothing (replaced by one that does not?)
