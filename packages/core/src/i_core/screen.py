"""What the terminal shows of a run: the answer on stdout, progress, notes and the status and
summary lines on stderr (``Screen``), and the turn's streamed text (``AnswerStream``).

Every path of `i` uses this module (a task, line mode, the console); the line console's own parts
(``console``) and the approval prompt (``approval_prompt``) are loaded only where they can be used.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .providers.reply import block_break
from .redaction import Redactor
from .terminal_text import for_terminal

if TYPE_CHECKING:
    from .activity import Activity
    from .agent import Agent
    from .providers import ModelReply
    from .render import Renderer
    from .tool_calls import ToolCallCounts


class Screen:
    """The terminal as stdout (the answer) and stderr (progress, notes, prompts) share it.

    The progress line lives on stderr and is erased *before* anything else is written, so the
    answer is never overwritten; a progress line or note after streamed text that did not end its
    line starts on a fresh line. Colour (dim notes) only on a TTY and without ``NO_COLOR``.

    Outside text never drives the terminal (``terminal_text``): the answer is sanitised when
    stdout is a terminal (piped, it stays byte-exact), every note and progress line always;
    :meth:`failure` also scrubs secrets (``redaction``).
    """

    def __init__(self, out: TextIO, err: TextIO, *, progress: bool, redactor: Redactor | None = None) -> None:
        self.out, self.err = out, err
        self.err_tty = err_tty = isatty(err)
        self.out_tty = isatty(out)
        self.same_terminal = err_tty and self.out_tty
        self.redactor = redactor if redactor is not None else Redactor()
        self._held_cr = False  # streamed answer text ended with "\r": a CR LF split between chunks?
        self.progress_enabled = progress and err_tty
        self.color = err_tty and "NO_COLOR" not in os.environ
        self.shown = False  # a progress line is on screen
        self.last_progress = ""
        self.midline = False  # the answer's last text did not end its line
        self.lock = threading.RLock()
        self.renderer: Renderer | None = None
        """Renders the answer (markdown) on a terminal stdout (``render``); None: the text as it comes."""
        self.activity: Activity | None = None
        """The tool activity shown on stderr (``activity``), for the console's ``/more``."""

    def _dim(self, text: str) -> str:
        return f"\x1b[2m{text}\x1b[0m" if self.color else text

    def progress(self, message: str) -> None:
        """Show ``[i] message…`` on its own line (replacing an earlier progress line)."""
        if not self.progress_enabled:
            return
        with self.lock:
            self._fresh_line()
            self.err.write("\r\x1b[2K" + self._dim(f"[i] {for_terminal(message)}…"))
            self.err.flush()
            self.shown = True
            self.last_progress = message

    def typed_line(self, line: str) -> None:
        """A note about a line the user typed mid-turn: the terminal echoed it onto the progress
        line (the cursor is now below it), so that line is redrawn as the note, progress after it."""
        with self.lock:
            if self.shown:
                self.err.write("\x1b[1A\r\x1b[2K")
                self.shown = False
            self.note(line, dim=True)
            if self.last_progress:
                self.progress(self.last_progress)

    def clear(self) -> None:
        """Erase the progress line, leaving the cursor at its start."""
        with self.lock:
            if self.shown:
                self.err.write("\r\x1b[2K")
                self.err.flush()
                self.shown = False

    def interrupted(self) -> None:
        """After Ctrl-C: the terminal echoed ``^C`` where the cursor was; erase it on its own row."""
        with self.lock:
            if self.shown:
                self.clear()
            elif not self.midline and self.err_tty:
                self.err.write("\r\x1b[2K")
                self.err.flush()

    def _fresh_line(self) -> None:
        if self.midline and self.same_terminal:
            self.out.write("\n")
            self.out.flush()
            self.midline = False

    def write(self, text: str) -> None:
        """Answer text (streamed or whole) on stdout: the progress line goes first."""
        with self.lock:
            if self.out_tty:
                text = self._for_tty(text)
            if self.renderer is not None:
                text = self.renderer.feed(text)  # sanitised first: the renderer's own escapes stay
                if not text:
                    return  # a block not finished yet: the progress line stays
            self.clear()
            self.out.write(text)
            self.out.flush()
            if text:
                self.midline = not text.endswith("\n")

    def _for_tty(self, text: str) -> str:
        # A CR at the end of a chunk may be the first half of a CR LF line end: held until the next.
        if self._held_cr:
            text, self._held_cr = "\r" + text, False
        if text.endswith("\r"):
            text, self._held_cr = text[:-1], True
        return for_terminal(text)

    def end_answer(self) -> None:
        """The final newline after an answer whose text did not end with one."""
        with self.lock:
            self.clear()
            if self._held_cr:
                self._held_cr = False
                held = for_terminal("\r")
                held = held if self.renderer is None else self.renderer.feed(held)
                if held:
                    self.out.write(held)
                    self.midline = True
            self._flush_rendered()
            if self.midline:
                self.out.write("\n")
                self.out.flush()
                self.midline = False

    def _flush_rendered(self) -> None:
        """Draw what the renderer holds of the answer (a block not finished yet) before anything else
        is written: text the model wrote before a tool call stays above that call's lines."""
        if self.renderer is None:
            return
        rest = self.renderer.finish()
        if rest:
            self.clear()
            self._fresh_line()
            self.out.write(rest)
            self.out.flush()
            self.midline = not rest.endswith("\n")

    def note(self, line: str, *, dim: bool = False, end: str = "\n") -> None:
        """One line on stderr (a notice, a prompt, the status line) below whatever is on screen."""
        line = for_terminal(line)
        with self.lock:
            self._flush_rendered()
            self.clear()
            self._fresh_line()
            self.err.write((self._dim(line) if dim else line) + end)
            self.err.flush()

    def lines(self, text: str) -> None:
        """Lines the core composed on stderr, below whatever is on screen: every outside part of them
        already sanitised (``activity``), so that their own colour escapes stay."""
        with self.lock:
            self._flush_rendered()
            self.clear()
            self._fresh_line()
            self.err.write(text + "\n")
            self.err.flush()

    def failure(self, line: str) -> None:
        """A note that reports a failure: its text may quote a server or a worker, so secrets are
        scrubbed from it first."""
        self.note(self.redactor.scrub(line))

    def brand(self, drawing: str) -> None:
        """The core's own logo, escapes included: the one write that is not sanitised."""
        with self.lock:
            self.clear()
            self._fresh_line()
            self.err.write(drawing)
            self.err.flush()


class AnswerStream:
    """What the agent writes streamed text to (``AgentOptions.out``), and what the console knows of
    the turn's replies: a later response's text starts apart from the text before it (a turn's
    responses would otherwise run together: "...information.I found..."), and the last reply says
    whether the answer was cut at the output limit or was a refusal."""

    def __init__(self, screen: Screen | None) -> None:
        self.screen = screen
        self.last_reply: ModelReply | None = None
        self._tail = ""  # the last characters of this turn's text
        self._new_response = False

    def begin_turn(self) -> None:
        """A new turn: nothing written yet, no reply seen."""
        self._tail, self._new_response, self.last_reply = "", False, None

    def request_started(self) -> None:
        """A model request is about to be sent: its text is a new run (``ReplyObserver``)."""
        self._new_response = True

    def reply_received(self, reply: ModelReply) -> None:
        """The request's reply: the last one says whether the answer is cut or a refusal."""
        self.last_reply = reply

    def write(self, text: str) -> int:
        """Answer text as the agent streams it (a new response's starts apart from the text before)."""
        if text and self._new_response:
            text = block_break(self._tail, text) + text
            self._new_response = False
        self._tail = (self._tail + text)[-2:]
        if self.screen is not None:
            self.screen.write(text)
        return len(text)

    def flush(self) -> None:
        """Nothing to flush: the screen writes through."""

    def notes(self) -> list[str]:
        """What the user must know about the turn's answer beyond its text (stderr lines)."""
        reply = self.last_reply
        if reply is None:
            return []
        notes = []
        if reply.finish_reason == "length":
            notes.append(
                "[i] the answer was cut at the output limit (max_tokens in config.json, or a module's cap such "
                "as smoke's --output-cap); it is incomplete"
            )
        if reply.meta.get("refusal"):
            notes.append("[i] the model refused the request; the answer is its refusal")
        return notes


def isatty(stream: object) -> bool:
    """Whether ``stream`` is a terminal (False for anything without a working ``isatty``)."""
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False


def answer_turn(
    agent: Agent, text: str | None, screen: Screen, *, show: bool = True, attached: Sequence[dict[str, Any]] = ()
) -> str:
    """Run one turn (``Agent.run``) and show its answer: streamed as it came, else whole (``show``),
    then what its text cannot say (cut at the output limit, a refusal)."""
    out = agent.options.out
    if isinstance(out, AnswerStream):
        out.begin_turn()
    answer = agent.run(text, attached=attached)
    if show and not agent.model.stream:
        screen.write(answer)
    screen.end_answer()
    if isinstance(out, AnswerStream):
        for note in out.notes():
            screen.note(note)
    return answer


def context_used(usage: dict[str, object], budget: dict[str, object]) -> int | None:
    """Tokens the context holds after the last reply: the server's own count of that request and its
    answer when it gave one, else the budget's estimate of the request (conservative before any
    usage: shown as is, it read "8,780 of 8,000 (110%)" after a request the server took as 3,089)."""
    tokens_in, tokens_out = usage.get("input_tokens"), usage.get("output_tokens")
    if isinstance(tokens_in, int) and isinstance(tokens_out, int):
        return tokens_in + tokens_out
    estimate = budget.get("estimate")
    return estimate if isinstance(estimate, int) else None


def status_line(agent: Agent) -> str:
    """Tokens of the last request, cache share, context used of the window, compactions."""
    usage = agent.model.last_usage or {}
    tokens_in, tokens_out = usage.get("input_tokens"), usage.get("output_tokens")
    parts = []
    if isinstance(tokens_in, int) and isinstance(tokens_out, int):
        tokens = f"tokens in {tokens_in:,} / out {tokens_out:,}"
        cached = usage.get("cache_read_tokens")
        if isinstance(cached, int) and tokens_in > 0:
            tokens += f" (cache read {round(100 * cached / tokens_in)}%)"
        parts.append(tokens)
    else:
        parts.append("tokens unknown")
    budget = agent.stats.last_budget or {}
    used, window = context_used(usage, budget), budget.get("context_window")
    if used is not None and isinstance(window, int) and window > 0:
        parts.append(f"context {used:,} of {window:,} ({round(100 * used / window)}%)")
    else:
        parts.append("context unknown (no budget module)")
    parts.append(f"{agent.stats.compactions} compaction{'s' if agent.stats.compactions != 1 else ''}")
    return "[i] " + " · ".join(parts)


def tool_call_summary(tools: ToolCallCounts) -> str:
    """``3 tool call(s) asked, 1 run, 2 refused (write, read)``: the tools in the order first called."""
    counts = tools.as_json()
    names = ", ".join(dict.fromkeys(tools.asked)) or "none"
    return f"{counts['asked']} tool call(s) asked, {counts['run']} run, {counts['refused']} refused ({names})"


def summary(agent: Agent, path: Path, screen: Screen) -> None:
    """The run's summary line on stderr: requests, tool calls, compactions, the session, the budget."""
    stats = agent.stats
    line = (
        f"[i] {stats.model_requests} model request(s), {tool_call_summary(stats.tools)}, "
        f"{stats.compactions} compaction(s) of {stats.compact_attempts} attempt(s)"
    )
    if stats.last_failure:
        line += f" (last failed: {screen.redactor.scrub(stats.last_failure)[:200]})"
    if stats.rejections:
        line += f", {stats.rejections} context-length refusal(s) by the server"
    made = stats.prepared
    if made["made"]:
        line += (
            f", {made['made']} summary(ies) prepared ahead ({made['used']} used, {made['wasted']} wasted, "
            f"{made['requests']} summary request(s))"
        )
    # A run that failed before its first checkpoint has no session file to point at.
    line += f"; session: {path}" if path.exists() else "; no session was saved"
    budget = stats.last_budget
    if budget and isinstance(budget.get("estimate"), int):
        line += f"; budget estimate {budget['estimate']}"
        if isinstance(budget.get("trigger"), int | float):
            line += f" of trigger {int(budget['trigger'])}"
    screen.note(line)
