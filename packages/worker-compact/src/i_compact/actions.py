"""Coding work in local mode (issue 30): every request verbatim, every action kept, results digested.

The task statement and two sections of the local summary, added to seed 004's (never replacing them):

* the task statement — the first real user message, whole (after the secret table's masking)
  when it is at most :data:`STATEMENT_MAX` bytes, else its head and tail verbatim and the middle
  cited as data (the span holds it). The state record holds it (version 2, :func:`statement_of`
  sizes it), on top of the summary's bound: it is what an autonomous run is *for*, and its end
  often says how to submit the work; in the record it is carried across generations losslessly,
  like the rest of the state. A version 1 summary carries it in a ``## Task statement`` section,
  read back here.
* ``## Requests`` — every later distinct request whole, newest first within its share
  (:data:`REQUESTS_SHARE`), the older ones cited by message number. A user message equal to an
  earlier one once digits and quoted text are masked is a *repeat* (a harness reply such as
  "found 2 actions"): listed once with its count, never the request. Observations that
  harnesses send in the user role (``<returncode>…``, ``Exit code: N``, a user-run command's
  output) and harness notes (task notifications, command echoes, interruption markers, another
  tool's compaction summary) are not requests either.
* ``## Action log`` — one entry per assistant step, oldest first: the commands it ran (each
  line, heredoc bodies left out) and its tool calls with their arguments (a string of up to
  :data:`ARGUMENT_WHOLE` characters whole, a longer one by its size and the names it holds), its
  reasoning condensed to the first sentence and the names it mentions, and a one-line digest of
  each result (exit status, first error line, size, the names it introduced, the recall handle:
  the tool call id, or the message number within the span this summary replaced). When the log
  outgrows its share, names go first, then the oldest entries, which the log says are in the
  archived span.

Everything quoted is untrusted data and passes the secret table's masking.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import orjson

from i_protocol.history import is_summary, text_of, utf8_len
from i_protocol.jsonsafe import replace_surrogates as scrub

from .folding import folded
from .history import request_text
from .ledger import Statement
from .redact import gate_free, redact
from .request_memory import per_request
from .state_record import fit_statement, parse_record, record_version
from .state_record import statement_size as statement_size_of

STATEMENT_MAX = 12_000
"""UTF-8 bytes of a task statement kept whole; a larger one keeps :data:`STATEMENT_END` of each end."""
STATEMENT_END = 4_000
REQUEST_MAX = 6_000
"""A later request larger than this keeps its head and tail (half each) verbatim."""
REQUESTS_SHARE = 0.35
"""Share of the summary's room (after the state record) for the later requests."""
ACTIONS_SHARE = 1.0
"""Share of what is left after the requests for the action log (the evidence is already counted)."""
ARGUMENT_WHOLE = 240
NAMES_PER_RESULT = 200
"""New names a result digest lists (a file read can hold hundreds)."""
THOUGHT_CHARS = 200

_OBSERVATION = re.compile(
    r"\s*(?:<returncode>|<output>|<observation>|observation:|exit code:?\s*-?\d|\[exit code)", re.I
)
_USER_RUN = re.compile(r"\s*Ran `")
_HARNESS = re.compile(
    r"\s*(?:<task[-]notification>|<command-name>|<command-message>|<local-command-|<system-reminder>"
    r"|\[Request interrupted|Caveat: The messages below|This session is being continued from a previous conversation)"
)
_QUOTED = re.compile(r"(['\"`]).*?\1", re.S)
_DIGITS = re.compile(r"(?<![\w.-])\d+(?![\w.-])")
"""A number standing alone (``found 2 actions``), not digits inside an id or a path."""
_RETURN_CODE = re.compile(r"(?im)<returncode>\s*(-?\d+)\s*</returncode>|^exit code:?\s*(-?\d+)|\[exit code (-?\d+)\]")
_ERROR_LINE = re.compile(r"(?m)^.*(?:Error|Exception|Traceback|FAILED|error:|fatal:).*$")
_EXCEPTION_LINE = re.compile(r"(?m)^[\w.]*(?:Error|Exception|Warning)\b:.*$")
_SHELLS = ("bash", "sh", "shell", "console", "zsh")
_HEREDOC = re.compile(r"<<-?\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)['\"]?")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_EXT = (
    "py|pyi|js|mjs|cjs|ts|tsx|jsx|json|jsonl|md|rst|txt|toml|cfg|ini|yaml|yml|sh|c|h|cc|cpp|hpp|rs|go|java|kt|rb|"
    "php|html|css|scss|lock|log|diff|patch|sql|xml|csv|ex|exs|heex|svelte|vue|zig|lua"
)
_NAME = re.compile(
    r"https?://[^\s\"'`<>()\[\]{}]+"
    # Every other kind starts after a non-word character: said once, before the alternatives, so
    # a place inside a word fails at once instead of once per kind (1.4x on real output).
    r"|(?<!\w)(?:"
    r"(?<![/.-])(?:[\w.-]*\w/)+[\w.-]*\w"  # paths
    rf"|(?<![/.-])[\w-]+(?:\.[\w-]+)*\.(?:{_EXT})(?![\w-])"  # file names
    r"|(?<![./-])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?!\w)"  # dotted names
    r"|_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*(?!\w)"  # snake_case
    r"|(?:[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+|[a-z][a-z0-9]*(?:[A-Z][A-Za-z0-9]*)+)(?!\w)"  # CamelCase
    r"|(?<!#)#\d{2,}(?!\w)"  # issue ids
    r"|(?<!-)(?=[A-Z0-9]*[A-Z])(?=[A-Z0-9]*\d)[A-Z0-9]{5,}(?![\w-])"  # codes: HAT202, X7BYG1
    r"|(?<!-)\d{4}-\d{2}-\d{2}(?![\w-])"  # dates
    r")"
)
_ERROR_NAME = re.compile(r"[A-Z]\w*(?:Error|Exception|Warning)$")
_OPEN = "<user_request"
_CLOSE = "</user_request>"
_BLOCK = re.compile(r'<user_request n="(\d+)"( part="[^"]*")?>\n(.*?)\n</user_request>', re.S)


_TOKEN = re.compile(r"[^\s\"'`<>()\[\]{}]{4,}")
"""A run that may hold names: the name pattern then runs on such runs only, never on plain words."""


_TOKEN_NAMES: dict[str, tuple[str, ...]] = per_request({})
"""The names each distinct run holds, for one request: a real history repeats its
runs (paths, symbols), about 3x fewer distinct ones over a whole history than message by message."""


def names(text: str) -> list[str]:
    """Code names in ``text``, in order, once: paths, URLs, dotted/snake/Camel names, issue ids,
    codes and dates.

    The pattern runs on each distinct run that may hold a name, once per request; a plain word
    (:func:`_plain`) holds none.
    """
    tokens = list(dict.fromkeys(_TOKEN.findall(text)))
    held = list(map(_TOKEN_NAMES.get, tokens))  # C loops: most runs of a history repeat
    if None in held:
        for position, names_of in enumerate(held):
            if names_of is None:
                held[position] = _TOKEN_NAMES[tokens[position]] = _token_names(tokens[position])
    return list(dict.fromkeys(chain.from_iterable(held)))  # type: ignore[arg-type]


def _token_names(token: str) -> tuple[str, ...]:
    if _plain(token.strip(".,:;!?*&|=+")):
        return ()
    held = (name.rstrip(".,:;") for name in _NAME.findall(token))
    return tuple(dict.fromkeys(name for name in held if len(name) >= 4 and not name.startswith("//")))


def _plain(token: str) -> bool:
    """A word of letters only, all lower or all upper case or capitalised: never a name."""
    return token.isalpha() and (token.islower() or token.isupper() or (token[0].isupper() and token[1:].islower()))


# -- who speaks ---------------------------------------------------------------------------


_KINDS: list[tuple[list[dict[str, Any]], int, dict[int, str]]] = per_request([])


def user_kinds(messages: list[dict[str, Any]]) -> dict[int, str]:
    """Index -> ``request``, ``repeat``, ``observation`` or ``harness`` for each user message
    (once per list: the ledger, the sections and the planner all ask)."""
    if _KINDS and _KINDS[0][0] is messages and _KINDS[0][1] == len(messages):
        return _KINDS[0][2]
    kinds = _user_kinds(messages)
    _KINDS[:] = [(messages, len(messages), kinds)]
    return kinds


def _key(text: str) -> str:
    """What two repeats share: the words, standalone numbers and quoted text masked (of a long
    message, its head and tail)."""
    if len(text) > 3000:
        text = f"{len(text) // 100}:{text[:2000]}{text[-1000:]}"
    return " ".join(_DIGITS.sub("#", _QUOTED.sub("''", text)).split())


def _user_kinds(messages: list[dict[str, Any]]) -> dict[int, str]:
    kinds: dict[int, str] = {}
    users = [i for i, m in enumerate(messages) if m.get("role") == "user" and not is_summary(m) and "_context" not in m]
    texts = {i: request_text(messages[i]) for i in users}
    observed = sum(1 for i in users if _OBSERVATION.match(texts[i]))
    autonomous = observed * 2 >= len(users) > 1
    seen: dict[str, list[str]] = {}
    first_request = True
    for i in users:
        text = texts[i]
        if not text.strip():
            continue
        if _OBSERVATION.match(text) or _USER_RUN.match(text):
            kinds[i] = "observation"
            continue
        if _HARNESS.match(text):
            kinds[i] = "harness"
            continue
        key = _key(text)
        named = names(text) if len(text) < 4000 else []
        if seen.get(key) == named:  # the same words naming the same things: a repeat
            kinds[i] = "repeat"
        elif autonomous and not first_request:
            kinds[i] = "harness"
        else:
            kinds[i] = "request"
            first_request = False
        seen.setdefault(key, named)
    return kinds


def latest_request(coding: Coding) -> int | None:
    """The number of the latest request the sections hold verbatim, if any."""
    if coding.requests:
        return coding.requests[-1][0]
    return coding.statement_at if coding.statement is not None else None


def _masked(text: str, free: bool = False) -> str:
    """``text`` masked; ``free``: a part of a text without gate words (:func:`gate_free`)."""
    text = scrub(text) if free else redact(scrub(text))
    for tag in ("user_request", "continuation_summary", "state_record"):  # our tags, never forged
        text = text.replace(tag, tag.replace("_", "-"))
    return text


# -- the sections -------------------------------------------------------------------------


@dataclass
class Action:
    number: int
    lines: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    result_names: list[str] = field(default_factory=list)

    def render(self, detail: int) -> str:
        """Detail 2: names typed and names seen; 1: names typed; 0: neither."""
        head = f"- [{self.number}] " + "\n  ".join(self.lines)
        parts = [head, *(f"  → {r}" for r in self.results)]
        if detail >= 1 and self.names:
            parts.append("  names: " + ", ".join(self.names))
        if detail >= 2 and self.result_names:
            parts.append("  seen: " + ", ".join(self.result_names))
        return "\n".join(parts)


@dataclass
class Coding:
    """What :func:`analyse` found in ``messages`` (and carried from an earlier summary)."""

    statement: str | None = None
    statement_at: int = 0
    carried: Statement | None = None
    """The statement as an earlier summary held it (its head and tail, when it was cut)."""
    requests: list[tuple[int, str]] = field(default_factory=list)
    repeats: Counter[str] = field(default_factory=Counter)
    carried_log: list[str] = field(default_factory=list)
    carried_moved: int = 0
    actions: list[Action] = field(default_factory=list)
    kinds: dict[int, str] = field(default_factory=dict)


def analyse(messages: list[dict[str, Any]]) -> Coding:
    coding = Coding()
    if messages and is_summary(messages[0]):
        _carry(text_of(messages[0]), coding)
    coding.kinds = user_kinds(messages)
    known: set[str] = set()
    if coding.statement:  # names the statement holds need not be listed again (later requests may
        known.update(names(_scanned(coding.statement)))  # be cited, not written: theirs count)
    for line in coding.carried_log:
        known.update(names(line))
    calls: dict[str, Action] = {}
    last: Action | None = None
    for index, message in enumerate(messages):
        role = message.get("role")
        kind = coding.kinds.get(index)
        if kind == "request":
            text = request_text(message)  # later requests are masked when written (most never are)
            if coding.statement is None:
                coding.statement, coding.statement_at = _masked(text), index + 1
                known.update(names(_scanned(coding.statement)))
            else:
                coding.requests.append((index + 1, text))
        elif kind == "repeat" or kind == "harness":
            coding.repeats[" ".join(_DIGITS.sub("#", _masked(request_text(message)[:400])).split())[:200]] += 1
            if kind == "harness":
                _observe(last, message, index, known, None)
        elif kind == "observation":
            ran = _USER_RUN.match(request_text(message))
            if ran:  # a command the user ran: an action of its own
                command = request_text(message)[ran.end() :].split("`", 1)[0]
                last = Action(index + 1, [f"$ {line} (run by the user)" for line in _command_lines(_masked(command))])
                known.update(names(command))
                coding.actions.append(last)
            _observe(last, message, index, known, None)
        elif role == "assistant":
            last = _act(message, index, known, calls)
            if last is not None:
                coding.actions.append(last)
        elif role == "tool":
            call_id = str(message.get("tool_call_id"))
            _observe(calls.get(call_id), message, index, known, call_id)
    return coding


def _act(message: dict[str, Any], index: int, known: set[str], calls: dict[str, Action]) -> Action | None:
    text = text_of(message)
    action = Action(index + 1)
    prose, scripts = _split_fences(text)
    free = gate_free(text)  # once for the message, not for its prose, its scripts and both together
    thought = " ".join(_masked(prose, free).split())
    if thought:
        first = _SENTENCE_END.split(thought, maxsplit=1)[0]
        action.lines.append("said: " + (first if len(first) <= THOUGHT_CHARS else first[:THOUGHT_CHARS] + "…"))
    for script in scripts:
        action.lines += [f"$ {line}" for line in _command_lines(_masked(script, free))]
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            action.lines.append(_call_line(call, action, known))
            calls[str(call.get("id"))] = action
    typed = "\n".join([prose, *scripts])  # heredoc bodies too: names the agent itself typed
    mentioned = [n for n in names(_masked(typed, free)) if n not in known]
    known.update(mentioned)
    action.names += mentioned
    known.update(names("\n".join(action.lines)))
    return action if action.lines or action.names else None


def _call_line(call: dict[str, Any], action: Action, known: set[str]) -> str:
    raw_function = call.get("function")
    function: dict[str, Any] = raw_function if isinstance(raw_function, dict) else {}
    name = str(function.get("name") or "?")
    raw = function.get("arguments")
    try:
        arguments = orjson.loads(raw) if isinstance(raw, str) else raw
    except orjson.JSONDecodeError:
        arguments = raw
    if not isinstance(arguments, dict):
        return f"{name} {_masked(str(arguments))[:ARGUMENT_WHOLE]}"
    parts: list[str] = []
    commands: list[str] = []
    for key, value in arguments.items():
        if key in ("command", "cmd") and isinstance(value, str):
            commands += _command_lines(_masked(value))
            continue
        shown = value if isinstance(value, str) else orjson.dumps(value).decode()
        if len(shown) <= ARGUMENT_WHOLE and "\n" not in shown:
            parts.append(_masked(f"{key}={shown}"))  # masked with its name: `password=…`
        else:
            parts.append(f"{key}=<{len(shown)} chars>")
            fresh = [n for n in names(_masked(_scanned(shown))) if n not in known]
            known.update(fresh)
            action.names += fresh
    return " ".join([name, *parts]) + "".join(f"\n  $ {line}" for line in commands)


def _observe(action: Action | None, message: dict[str, Any], index: int, known: set[str], call_id: str | None) -> None:
    if action is None:
        return
    raw = text_of(message)
    text = _masked(_scanned(raw))
    bits: list[str] = []
    code = _RETURN_CODE.search(text) if _may_hold_exit(text) else None
    if code:
        bits.append(f"exit {next(g for g in code.groups() if g is not None)}")
    bits.append(f"{len(raw)} chars")
    error = _error_line(text)
    if error is not None:
        line = " ".join(error.split())
        bits.append("“" + (line if len(line) <= 200 else line[:200] + "…") + "”")
    bits.append(f"recall {call_id}" if call_id else f"recall [{index + 1}]")
    action.results.append(", ".join(bits))
    fresh = [n for n in names(text) if n not in known]
    errors = {n for n in fresh if _ERROR_NAME.search(n)}
    keys = {n for n in fresh if f'"{n}":' in text} - errors if '":' in text else set()  # JSON keys: schema
    # Errors first, then the values a result holds, then its keys (a shortened log keeps the head).
    fresh = sorted(fresh, key=lambda n: 0 if n in errors else 2 if n in keys else 1)
    chosen = fresh[:NAMES_PER_RESULT]
    known.update(chosen)
    action.result_names += chosen


def _may_hold_exit(text: str) -> bool:
    """Whether :data:`_RETURN_CODE` (case-blind) could match in ``text``: one of its words is there."""
    lower = folded(text)
    return "<returncode>" in lower or "exit code" in lower


_EXCEPTION_WORDS = ("Error", "Exception", "Warning")
_ERROR_WORDS = ("Error", "Exception", "Traceback", "FAILED", "error:", "fatal:")


def _error_line(text: str) -> str | None:
    """What ``(_EXCEPTION_LINE.search(text) or _ERROR_LINE.search(text)).group(0)`` is: the first
    line naming an exception, else the first line holding an error word (the line of the first
    place of one: ``.`` never passes a newline), found by C scans for the words."""
    if any(word in text for word in _EXCEPTION_WORDS):
        found = _EXCEPTION_LINE.search(text)
        if found is not None:
            return found.group(0)
    places = [place for word in _ERROR_WORDS if (place := text.find(word)) >= 0]
    if not places:
        return None
    first = min(places)
    end = text.find("\n", first)
    return text[text.rfind("\n", 0, first) + 1 : end if end >= 0 else len(text)]


SCAN_HEAD = 16_000
SCAN_TAIL = 4_000
"""Of a long output or argument, the digest reads the head and the tail (exit statuses, errors
and names are there; a 1 MB file read costs no more than 20 KB)."""


def _scanned(text: str) -> str:
    if len(text) <= SCAN_HEAD + SCAN_TAIL:
        return text
    return f"{text[:SCAN_HEAD]}\n{text[-SCAN_TAIL:]}"


def _split_fences(text: str) -> tuple[str, list[str]]:
    """Prose outside fenced blocks, and the bodies of fenced shell blocks (fences paired in order)."""
    prose: list[str] = []
    scripts: list[str] = []
    opened: str | None = None
    body: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("```"):
            (body if opened is not None else prose).append(line)
            continue
        if opened is None:
            opened, body = stripped[3:].strip().lower(), []
        else:
            if opened in _SHELLS:
                scripts.append("\n".join(body))
            else:
                prose += body
            opened = None
    return "\n".join(prose), scripts


def _command_lines(script: str) -> list[str]:
    lines: list[str] = []
    until: str | None = None
    skipped = 0
    for raw in script.splitlines():
        if until is not None:
            if raw.strip() == until:
                lines.append(f"(… {skipped} lines of input …) {until}")
                until, skipped = None, 0
            else:
                skipped += 1
            continue
        heredoc = _HEREDOC.search(raw)
        if heredoc:
            until = heredoc.group(1)
        line = " ".join(raw.split())
        if line:
            lines.append(line)
    return lines


# -- carrying an earlier summary -------------------------------------------------------------

_CARRIED = ("Requests", "Harness messages", "Action log")


def carried_bytes(text: str) -> int:
    """UTF-8 bytes of an earlier summary's requests and action log (carried like its record)."""
    if "\n## " not in text:
        return 0
    total = 0
    inside = False
    for line in text.splitlines():
        if line.startswith("## "):
            inside = line[3:].startswith(_CARRIED)
        if inside:
            total += _bytes(line) + 1
    return total


def carried_statement(text: str) -> Statement | None:
    """The task statement an earlier summary ``text`` carries: from its record (version 2), else
    from its ``## Task statement`` section (version 1: ``<user_request>`` blocks, the first one)."""
    if record_version(text) not in (None, "1"):
        ledger = parse_record(text)
        return ledger.statement if ledger is not None else None
    blocks = _BLOCK.findall(text)
    if not blocks:
        return None
    number, part, body = blocks[0]
    if part != ' part="head"':
        return Statement(int(number), body, earlier=True)
    tail = next((b for n, p, b in blocks[1:] if n == number and p == ' part="tail"'), "")
    middle = _V1_MIDDLE.search(text)
    return Statement(int(number), body, tail, int(middle.group(1)) if middle else 0, earlier=True)


_V1_MIDDLE = re.compile(r"\(… (\d+) characters of request \[\d+\] are in the span")


def _carry(text: str, coding: Coding) -> None:
    version = record_version(text)
    statement = carried_statement(text)
    if statement is not None:
        statement.earlier = True
        coding.carried, coding.statement_at = statement, statement.number
        coding.statement = statement.head if statement.tail is None else f"{statement.head}\n{statement.tail}"
    blocks = _BLOCK.findall(text)
    for position, (number, part, body) in enumerate(blocks):
        if part == ' part="tail"' or (position == 0 and version in (None, "1")):
            continue  # version 1: the first block is the statement (carried above)
        if part == ' part="head"':  # an earlier generation kept its head and tail: carry both
            tail = next((b for n, p, b in blocks[position + 1 :] if n == number and p == ' part="tail"'), "")
            body = f"{body}\n(… the middle is in an earlier span …)\n{tail}"
        coding.requests.append((int(number), body))
    current = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
        elif current == "Action log" and line and not line.startswith("([n]:"):
            moved = _MOVED.match(line)
            if moved:
                coding.carried_moved += int(moved.group(1))
            else:  # numbered in an earlier span: "[earlier n]"
                coding.carried_log.append(_EARLIER.sub("- [earlier ", line, count=1))


# -- rendering ----------------------------------------------------------------------------------


_bytes = utf8_len


def _block(number: int, text: str, limit: int) -> str:
    """Request ``number`` within ``limit`` bytes: whole, else its head and tail ("" if too little)."""
    whole = f'{_OPEN} n="{number}">\n{text}\n{_CLOSE}'
    if _bytes(whole) <= limit:
        return whole
    frame = (
        f'{_OPEN} n="{number}" part="head">\n{{head}}\n{_CLOSE}\n'
        f"(… {{middle}} characters of request [{number}] are in the span this summary replaced:"
        f" recall message [{number}] …)\n"
        f'{_OPEN} n="{number}" part="tail">\n{{tail}}\n{_CLOSE}'
    )
    half = (limit - _bytes(frame.format(head="", tail="", middle=len(text)))) // 2
    if half < 32:
        return ""
    raw = text.encode("utf-8", "surrogatepass")
    head = raw[:half].decode("utf-8", "ignore")
    tail = raw[-half:].decode("utf-8", "ignore")
    return frame.format(head=head, tail=tail, middle=len(text) - len(head) - len(tail))


def verbatim_texts(coding: Coding, statement_room: int, room: int) -> list[str]:
    """The texts the sections will hold whole: the statement (on top, if its room holds it) and
    the latest request (if it fits the requests' share of what the record leaves of ``room``)."""
    whole = coding.statement is not None and _bytes(coding.statement) + STATEMENT_FRAME <= statement_room
    texts = [coding.statement] if whole and coding.statement is not None else []
    if coding.requests:  # whole, or its head and tail (the record then keeps only its start)
        latest = coding.requests[-1][1]
        if min(REQUEST_MAX, room * (1 - RECORD_SHARE) * REQUESTS_SHARE) >= 600:
            texts.append(latest)
    return texts


RECORD_SHARE = 0.4
"""``local_summary.RECORD_SHARE``: the most the record takes of the room beside the sections."""


_RECORD_STATEMENT = re.compile(r"(?m)^statement(?:_cut)?(?:\+\d+)?: ")


def carries_statement(messages: list[dict[str, Any]]) -> bool:
    """Whether ``messages`` start with a summary that carries a task statement (in its record,
    or in a version 1 ``## Task statement`` section)."""
    if not messages or not is_summary(messages[0]):
        return False
    text = text_of(messages[0])
    if _OPEN not in text and _RECORD_STATEMENT.search(text) is None:
        return False
    return carried_statement(text) is not None


def statement_size(messages: list[dict[str, Any]]) -> tuple[int, int]:
    """``(index, bytes)`` of the task statement of ``messages``, cheaply (``(-1, 0)``: none).

    What :func:`statement_of` will take, or a little more: the plan allows for it before the
    summary is written.
    """
    if messages and is_summary(messages[0]):
        carried = carried_statement(text_of(messages[0])) if carries_statement(messages) else None
        if carried is not None:
            return 0, min(statement_size_of(carried), STATEMENT_MAX) + STATEMENT_FRAME
    for index, kind in sorted(user_kinds(messages).items()):
        if kind == "request":
            return index, min(_bytes(_masked(request_text(messages[index]))), STATEMENT_MAX) + STATEMENT_FRAME
    return -1, 0


STATEMENT_FRAME = 120
"""Bytes the plan allows beside the statement's text (the record's kinds and its cut line)."""


def statement_of(coding: Coding, limit: int) -> Statement | None:
    """The task statement as the state record holds it within ``limit`` bytes: whole, else its
    head and tail verbatim with the middle cited, else cited whole (never left out silently).
    A statement an earlier summary carried keeps its head and tail as they were while they fit."""
    if coding.statement is None:
        return None
    carried = coding.carried
    if carried is None or carried.tail is None:
        carried = Statement(coding.statement_at, coding.statement, earlier=carried is not None)
    return fit_statement(carried, max(0, limit))


COUNTED_FRAME = 44
"""Bytes a statement counted in the sections' room is charged beside its record lines: what
version 1's ``## Task statement`` heading and tags took. The other sections keep exactly the room
they had (the action log's shortening is not monotonic in its room: on tau-bench 44 more bytes
for the log lost two values)."""


def counted_statement(coding: Coding, room: int) -> tuple[Statement | None, int]:
    """A small window (no room on top): the statement within half the sections' ``room``, and the
    bytes it is charged in it (``(None, 0)``: none, or too little room even to cite it)."""
    statement = statement_of(coding, room // 2 - COUNTED_FRAME)
    cost = statement_size_of(statement) + COUNTED_FRAME if statement is not None else 0
    return (statement, cost) if statement is not None and cost <= room else (None, 0)


_CACHE: dict[int, tuple[list[dict[str, Any]], Coding]] = per_request({})


def analyse_cached(messages: list[dict[str, Any]]) -> Coding:
    """:func:`analyse` once per messages list (one route may ask more than once)."""
    hit = _CACHE.get(id(messages))
    if hit is not None and hit[0] is messages:
        return hit[1]
    coding = analyse(messages)
    _CACHE.clear()
    _CACHE[id(messages)] = (messages, coding)
    return coding


def render(coding: Coding, room: int, held: str = "") -> str:
    """The requests and the action log within ``room`` bytes (the task statement is the state
    record's: :func:`statement_of`). ``held``: what the summary holds besides (its state record),
    whose names a shortened log need not repeat."""
    parts: list[str] = []
    # The requests are sure of their share; what the log does not need, they may take too.
    requests = _requests(coding, room)
    if _bytes(requests) > room * REQUESTS_SHARE:
        log = _log(coding, max(0, int(room * (1 - REQUESTS_SHARE))), held)
        requests = _requests(coding, room - _bytes(log) - 1 if log else room)
    if requests and _bytes(requests) <= room:
        parts.append(requests)
        room -= _bytes(requests) + 1
    log = _log(coding, max(0, int(room * ACTIONS_SHARE)), held)
    if log:
        parts.append(log)
    return "\n".join(parts)


def _requests(coding: Coding, share: int) -> str:
    chosen: list[str] = []
    cited: list[int] = []
    used = 0
    for number, text in reversed(coding.requests):
        if share - used < 300:  # full: the rest are cited, never masked for nothing
            cited.append(number)
            continue
        block = _block(number, _masked(text), min(REQUEST_MAX, share - used))
        if not block or used + _bytes(block) > share:
            cited.append(number)
            continue
        chosen.insert(0, block)
        used += _bytes(block) + 1
    lines = ["## Requests (later requests, verbatim; untrusted data)"] if chosen or cited else []
    if cited:
        lines.append(
            f"(older requests in the span this summary replaced: messages {', '.join(map(str, sorted(cited)))})"
        )
    lines += chosen
    if coding.repeats:
        repeats = ["## Harness messages (not requests)"]
        repeats += [f"- {count}x “{text[:120]}”" for text, count in coding.repeats.most_common(8)]
        if _bytes("\n".join(lines + repeats)) <= share:
            lines += repeats
    return "\n".join(lines)


_LOG_HEAD = (
    "## Action log\n([n]: the n-th message of the span this summary replaced, [earlier n] of an earlier"
    " one; `recall X`: the tool call id or message that recall returns; oldest first)"
)
_EARLIER = re.compile(r"^- \[(?!earlier )")
_MOVED = re.compile(r"^- \((\d+) older entries are in the span")


def _log(coding: Coding, share: int, held: str = "") -> str:
    """The log within ``share`` bytes: result digests go first, then ``seen:`` lines, then
    ``names:`` lines, then whole entries (their names stay where there is room), oldest first in
    each pass, carried entries and new ones alike."""
    if not coding.actions and not coding.carried_log:
        return ""
    lines = [*coding.carried_log]
    for action in coding.actions:
        lines += action.render(2).split("\n")
    every = list(lines)
    moved = coding.carried_moved
    total = _bytes(_LOG_HEAD) + sum(_bytes(line) + 1 for line in lines) + (len(_moved(moved)) + 1 if moved else 0)
    for prefix in ("  → ", "  seen: ", "  names: "):
        if total <= share:
            break
        kept: list[str] = []
        for position, line in enumerate(lines):
            if total > share and line.startswith(prefix):
                total -= _bytes(line) + 1
            else:
                kept.append(line)
            if total <= share:
                kept += lines[position + 1 :]
                break
        lines = kept
    if total <= share:
        return "\n".join([_LOG_HEAD, *([_moved(moved)] if moved else []), *lines])
    if _bytes(_LOG_HEAD) + 2 * _bytes(_moved(moved + len(lines))) > share:
        return ""  # too little room for a log: the span holds every action
    start = 0
    reserve = min(NAMES_HELD_MAX, share // 8)  # room for the names of the entries that go
    while start < len(lines) and total + _bytes(_moved(moved)) + 1 + reserve > share:
        end = start + 1
        while end < len(lines) and not lines[end].startswith("- "):
            end += 1
        total -= sum(_bytes(line) + 1 for line in lines[start:end])
        moved += 1
        start = end
    kept = [_LOG_HEAD, _moved(moved)]
    names = _names_held(every, moved - coding.carried_moved, share - total - _bytes(_moved(moved)) - 1, held)
    return "\n".join([*kept, *([names] if names else []), *lines[start:]])


def _names_held(lines: list[str], entries: int, room: int, held: str) -> str:
    """A ``names:`` line of what the first ``entries`` entries of ``lines`` named and saw and
    ``held`` does not hold, within ``room`` bytes (entries moved out of the log leave their names
    where there is room)."""
    groups: list[list[str]] = [[]]
    for line in lines:
        if line.startswith("- "):
            if len(groups) > entries:
                break
            groups.append([])
        for prefix in ("  names: ", "  seen: "):
            if line.startswith(prefix):
                groups[-1] += line[len(prefix) :].split(", ")
    found = dict.fromkeys(name for group in reversed(groups) for name in group)  # the newest entry first
    text = "  names:"
    for name in found:
        if name in held:
            continue
        if _bytes(text) + 1 + _bytes(name) + 1 > room:
            break
        text += (" " if text.endswith(":") else ", ") + name
    return text if text != "  names:" else ""


NAMES_HELD_MAX = 240
"""Bytes a shortened log keeps for the names of the entries it moved out."""


def _moved(count: int) -> str:
    return f"- ({count} older entries are in the span this summary replaced: recall them by span or call id)"
