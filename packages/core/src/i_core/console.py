"""The line console: ``i`` on a terminal. A prompt (readline), a request per line, ``/compact`` and
``/exit``; while a turn runs, lines typed are queued for the steering worker (``LineQueue``) and
Ctrl-C cancels the turn (nothing after the last checkpoint stays).

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
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from .brand import can_draw_blocks, render_text
from .compaction import describe
from .errors import CoreError
from .interrupt import stop_interrupted
from .screen import Screen, answer_turn, status_line
from .undo import undo_command

try:
    import readline
except ImportError:  # not on every platform: the prompt then has no line editing
    readline = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from .agent import Agent
    from .prepare import Preparer

WELCOME = (
    "i — type a request; while it runs, type to queue more; Ctrl-C cancels; /compact, /undo [N], /plan, /act, /exit"
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
                if text.startswith("/"):
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
    """Read requests at the prompt and run each until EOF, ``/exit`` or a second Ctrl-C.

    ``preparer`` prepares the next compaction's summary while the prompt waits (``prepare``); it is
    stopped as soon as a line, a Ctrl-C or the end of input arrives, before anything else runs."""
    try:
        _console_loop(agent, screen, reader, preparer)
    finally:
        if preparer is not None:
            preparer.stop()


def _console_loop(agent: Agent, screen: Screen, reader: LineQueue, preparer: Preparer | None) -> None:
    screen.note(WELCOME)
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
        text = line.strip()
        if not text:
            continue
        if text in ("/exit", "/quit"):
            return
        if text == "/undo" or text.startswith("/undo "):

            def yes(question: str) -> bool:
                screen.note(f"[i] {question} [y/N]: ", end="")
                return sys.stdin.readline().strip().lower() in ("y", "yes")

            try:
                undo_command(agent, text[5:].strip(), screen.note, yes)
            except CoreError as exc:
                screen.failure(f"i: {exc}")
            continue
        if text in ("/plan", "/act"):
            agent.set_plan(text == "/plan")
            screen.note(
                "[i] plan mode: read and search only; the model is asked for a plan; /act carries it out"
                if text == "/plan"
                else "[i] normal mode: write, edit and shell are available again, with your approval",
                dim=True,
            )
            continue
        if text == "/compact":
            try:
                screen.note(describe(agent.compact(agent.history, force=True)))
            except CoreError as exc:
                screen.failure(f"i: {exc}")
            continue
        if not _typed_turn(agent, text, screen, reader):
            reader.take_partial()  # cancelled: the request itself comes back at the prompt
            prefill, armed = text, True
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


def _prompt(reader: LineQueue, prefill: str) -> str:
    """The next line: a console command typed while a turn ran, else what the user types at ``> ``
    (``prefill`` already in the line: a cancelled request, or what was typed when the turn ended)."""
    if readline is not None and prefill:

        def insert(text: str = prefill) -> None:
            readline.insert_text(text)

        readline.set_startup_hook(insert)
    try:
        return reader.commands.pop(0) if reader.commands else input("> ")
    finally:
        if readline is not None:
            readline.set_startup_hook(None)


def _typed_turn(agent: Agent, text: str, screen: Screen, reader: LineQueue) -> bool:
    """Run a typed request; False when Ctrl-C cancelled it (nothing of it after the last checkpoint
    stays, in memory as on disk)."""
    session = agent.session
    saved, meta = session.messages, copy.deepcopy(session.meta)
    before = agent.history
    reader.start()
    try:
        answer_turn(agent, text, screen)
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
