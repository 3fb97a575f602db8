"""The fact ledger of a compacted prefix: what a resumed task must not lose (issue 17).

Built deterministically from ``history[1:cut]`` and carried verbatim from one compaction to
the next as a state record (:mod:`state_record`), never re-summarised:

- **modified paths**, each once, with its operations and their counts;
- **the latest user request**, verbatim (whitespace kept; secret values redacted);
- **user constraints**, quoted verbatim: sentences of *user messages* with must / never /
  don't / only / always, approvals and denials. Tool output, web text, context snapshots and
  assistant text are untrusted (seed 003) and never become constraints;
- **pending approvals** with their exact resume calls, and **jobs** (protocol ids with a status);
- **the last failing command** and its exit code (cleared when the same command later passes);
- **loaded skills**, **tool-declared facts** (``retention.facts``);
- **ids and paths** (:mod:`identifiers`) named by user and assistant messages, tool-call
  arguments and id fields (``id`` / ``*_id`` / ``*Id``). Ids that only tool output names are
  **data** when they are whole quoted values (a JSON result's ``"NO6JO3"``), else **seen** (a
  name inside a log or a file body); seen ids go first when the record is over its bound, and
  take at most a small share of it.

An earlier summary at the head of the prefix (``history[1]``, where the core puts it) is read
back through its state record, which is trusted only when it parses strictly (a worker-written
record, digest intact); any other summary text is scanned for ids and paths, nothing more.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import orjson

from i_protocol.history import is_attachment, is_summary, text_of
from i_protocol.jsonsafe import replace_surrogates as scrub
from i_protocol.secrets import GATE_WORDS, contains_secret

from . import identifiers
from .history import request_text
from .redact import redact
from .reduction import FIELD_ID_MAX, is_id_key
from .transcript import Analysis

REQUEST_MAX = 4000
"""Characters of the latest request kept verbatim; a longer one keeps its head, with a count."""
CONSTRAINT_MAX = 600
"""Characters of one quoted constraint; a longer sentence keeps its head, with a count."""
TOOL_TEXT_SCANNED = 200_000
"""Characters of tool output scanned for data and seen ids: the newest results (bulk is not
state, and the record keeps only the newest of them anyway)."""
_CONSTRAINT = re.compile(  # on lower-cased text: a case-blind pattern is twice as slow
    r"\b(?:must|never|don'?t|do not|doesn'?t|only|always|approved?|approves|approval|accept(?:ed)?"
    r"|den(?:y|ied)|reject(?:ed)?|refuse[sd]?|forbid(?:den)?|not allowed|permission|without (?:asking|approval)"
    r"|ask (?:me )?(?:first|before)|go ahead|proceed|confirm(?:ed)?)\b|^\s*(?:yes|no)\b|/(?:accept|deny)\b"
)
_SPACE = re.compile(r"\s")
# What normalize.py reads as a summary tag (also without its "<"), and a record's frame.
_OUR_TAGS = re.compile(r"(?i)<\s*/?\s*(?:continuation_summary|state_record)|continuation_summary(?=\s*>)")
_SENTENCE = re.compile(r"(?<=[.!?])[ \t]+|\n+")
_WRITE_TOOL = re.compile(r"(?i)write|edit|patch|create|delete|remove|move|rename|mkdir|commit|update|cancel|book")
_PATH_KEYS = ("path", "file_path", "file", "filename", "target", "destination")
_PATCH_FILE = re.compile(
    r"(?m)^(?:\*\*\* (?:Add|Update|Delete) File: |\*\*\* Move to: |\+\+\+ (?:b/)?)(\S[^\t\n]*?)\s*$"
)
_COMMAND_KEYS = ("command", "cmd")
# Arguments worth decoding beyond the id scan: a command, an id field.
_PARSE_GATE = re.compile(r'"(?:command|cmd|id|[A-Za-z0-9_]*_id|[A-Za-z0-9_]*Id)"\s*:')
_CHOICE_VALUE = re.compile(r'"([A-Za-z0-9_]{1,64})"\s*:\s*"([a-z][a-z0-9]*(?:_[a-z0-9]+){1,4})"')
"""A snake_case value of a tool-call argument (an enum the agent chose: ``one_way``, ``basic_economy``)."""
_EXIT = re.compile(
    r"(?i)\[exit code (-?\d+)\]\s*$|\bexit(?: code| status|_code|Code)\W{0,3}(-?\d+)|killed by signal (\d+)"
)
_TIMED_OUT = re.compile(r"\[timed out after [^\]]*\]\s*$")
_SKILL_TOOLS = ("skill_load",)
_FINISHED = frozenset(
    {"done", "completed", "complete", "succeeded", "success", "failed", "cancelled", "canceled", "committed"}
    | {"closed", "rejected", "denied", "applied", "merged", "finished", "expired", "superseded", "ok"}
)
# How a pending protocol id is looked up again (seed 003's recovery routes).
_RECOVERY = {
    "tx_": ("workspace_edit", "show", "transaction_id"),
    "job_": ("workspace_command", "status", "job_id"),
    "todo_": ("workspace_tasks", "show", "board_id"),
    "research_": ("workspace_research", "show", "research_id"),
    "run_": ("workspace_agent", "status", "run_id"),
    "plan_": ("workspace_plan", "show", "plan_id"),
}


@dataclass
class Statement:
    """The task statement (the first real user message) as a version 2 record holds it: whole, or
    its head and tail verbatim with the characters between them cited (issue 30)."""

    number: int
    """Its message number in the span that held it (0: not known, a whole one carried)."""
    head: str
    """The whole statement, or its head ("" when not even a head fits: all of it is cited)."""
    tail: str | None = None
    """None: ``head`` is the whole statement; else its tail."""
    middle: int = 0
    """Characters between head and tail that the record does not hold."""
    earlier: bool = False
    """The span that holds the middle is an earlier one than the span this summary replaced."""


@dataclass
class Ledger:
    """The facts of a prefix. Every list is oldest first; dicts keep first-seen order."""

    statement: Statement | None = None
    """The task statement (record version 2); the first one stays across generations."""
    request: str = ""
    constraints: list[str] = field(default_factory=list)
    approvals: dict[str, str] = field(default_factory=dict)
    """approval id -> its line (``approval … : resume = <call, byte for byte>``)."""
    jobs: dict[str, str] = field(default_factory=dict)
    """protocol id -> latest status."""
    paths: dict[str, dict[str, int]] = field(default_factory=dict)
    """modified path -> {operation: count}."""
    failure: str = ""
    skills: list[str] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    data: list[str] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    """kind -> how many items went over the bound, summed over every generation."""

    def merge(self, newer: Ledger) -> Ledger:
        """This (older) ledger followed by ``newer``: nothing duplicated, newer statuses win."""
        paths = {path: dict(ops) for path, ops in self.paths.items()}
        for path, ops in newer.paths.items():
            into = paths.setdefault(path, {})
            for op, count in ops.items():
                into[op] = into.get(op, 0) + count
        jobs, approvals = {**self.jobs, **newer.jobs}, {**self.approvals, **newer.approvals}
        taken = {**paths, **jobs, **approvals}
        ids = [i for i in _union(self.ids, newer.ids) if i not in taken]
        known = set(ids) | set(taken)
        return Ledger(
            statement=self.statement or newer.statement,
            request=newer.request or self.request,
            constraints=_union(self.constraints, newer.constraints),
            approvals=approvals,
            jobs=jobs,
            paths=paths,
            failure=newer.failure,  # build() starts from the older one: a later pass clears it
            skills=_union(self.skills, newer.skills),
            facts=_union(self.facts, newer.facts),
            ids=ids,
            data=[d for d in _union(self.data, newer.data) if d not in known],
            seen=[d for d in _union(self.seen, newer.seen) if d not in known and d not in newer.data],
            dropped={k: self.dropped.get(k, 0) + newer.dropped.get(k, 0) for k in {**self.dropped, **newer.dropped}},
        )


def _union(first: list[str], second: list[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))


def recovery_call(ident: str) -> str | None:
    """The call that looks a pending protocol id up again (``workspace_command {…job_id…}``)."""
    for prefix, (tool, action, key) in _RECOVERY.items():
        if ident.startswith(prefix):
            return f"{tool} {orjson.dumps({'action': action, key: ident}).decode()}"
    return None


def is_pending(status: str) -> bool:
    """Whether a status still needs the task's attention (not done, failed, cancelled, …)."""
    return bool(status) and status.lower() not in _FINISHED


def quote(text: str) -> str:
    """A text as the ledger keeps it: lone surrogates replaced, secret values redacted, and our
    own tags neutralised (``<continuation-summary>``, ``<state-record``) so that a quote can
    never close or forge a summary block or a record. Nothing else changes."""
    text = redact(scrub(text))
    if "_summary" in text or "state_record" in text:
        text = _OUR_TAGS.sub(lambda m: m.group(0).replace("_", "-"), text)
    return text


def build(messages: list[dict[str, Any]], analysis: Analysis) -> Ledger:
    """The ledger of ``messages`` (= ``history[1:cut]``), merged after an earlier record."""
    from .actions import user_kinds
    from .state_record import parse_record

    new = Ledger()
    older: Ledger | None = None
    pieces: list[str] = []  # trusted-position text scanned for ids and paths, in order
    data_pieces: list[str] = []  # tool-result text: its ids are data
    field_ids: list[str] = []  # values of id fields (tool-call arguments, tool results): ids as they are
    commands: dict[str, str] = {}
    skill_calls: dict[str, str] = {}
    kinds = user_kinds(messages)
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "user":
            if is_summary(message):
                record = parse_record(text_of(message)) if index == 0 else None
                if record is not None:
                    older, new.failure = record, record.failure
                else:  # a model's summary, or one not where the core puts it: ids and paths only
                    pieces.append(text_of(message))
                continue
            if "_context" in message or is_attachment(messages, index):
                continue  # a memory/skills snapshot or a tool's image: data, not the user's words
            if kinds.get(index, "request") != "request":  # a harness's observation, note or repeat: data
                data_pieces.append(text_of(message))
                continue
            _user(message, new, pieces)
        elif role == "assistant":
            pieces.append(text_of(message))  # the scan redacts a text that names a secret
            for call in message.get("tool_calls") or []:
                _call(call, new, pieces, field_ids, commands, skill_calls)
        elif role == "tool":
            _result(message, analysis, index, new, (pieces, data_pieces, field_ids), commands, skill_calls)
    found = identifiers.scan(pieces)
    named = [token for token, is_data in found if not is_data]
    taken = {**new.paths, **new.jobs, **new.approvals}
    new.ids = [i for i in _union(named, field_ids) if i not in taken]
    seen = set(new.ids) | set(taken)
    tool_ids = identifiers.scan(_newest(data_pieces, TOOL_TEXT_SCANNED))
    quoted = [token for token, is_data in found if is_data] + [token for token, is_data in tool_ids if is_data]
    new.data = [t for t in dict.fromkeys(quoted) if t not in seen]
    new.seen = [t for t, is_data in tool_ids if not is_data and t not in seen and t not in new.data]
    return older.merge(new) if older is not None else new


def _newest(texts: list[str], budget: int) -> list[str]:
    """The newest ``texts`` within ``budget`` characters, in order (the oldest one cut at its head)."""
    kept: list[str] = []
    for text in reversed(texts):
        if budget <= 0:
            break
        kept.append(text[:budget])
        budget -= len(text)
    return kept[::-1]


def _user(message: dict[str, Any], ledger: Ledger, pieces: list[str]) -> None:
    raw = request_text(message)  # the core's interruption note is never the request
    if not raw.strip():
        return
    text = quote(raw)
    pieces.append(identifiers.Redacted(text))
    ledger.request = head(text, REQUEST_MAX, ledger, "request_chars")
    for sentence in _SENTENCE.split(text[:20000]):
        sentence = sentence.strip()
        if sentence and _CONSTRAINT.search(sentence.lower()):
            quoted = head(sentence, CONSTRAINT_MAX, ledger, "constraint_chars")
            if quoted not in ledger.constraints:
                ledger.constraints.append(quoted)


def head(text: str, limit: int, ledger: Ledger, kind: str) -> str:
    """``text`` within ``limit`` characters; what it drops is counted in ``ledger.dropped[kind]``."""
    if len(text) <= limit:
        return text
    ledger.dropped[kind] = ledger.dropped.get(kind, 0) + len(text) - limit
    return f"{text[:limit]}…[{len(text) - limit} more chars not kept]"


def _call(
    call: Any,
    ledger: Ledger,
    pieces: list[str],
    field_ids: list[str],
    commands: dict[str, str],
    skill_calls: dict[str, str],
) -> None:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        return
    name = function["name"] if isinstance(function.get("name"), str) else "?"
    arguments = function.get("arguments")
    write = _is_write_tool(name)
    short = isinstance(arguments, str) and len(arguments) <= identifiers.ARGUMENT_VALUE_MAX and "\\" not in arguments
    if short and isinstance(arguments, str):
        pieces.append(arguments.replace('"', " "))  # as written: a secret's name stays next to its value
        # The agent's own choices (``"cabin": "basic_economy"``) are state like ids: a summary
        # that loses them changes what is resumed. Only snake_case values, never free text.
        field_ids.extend(_choices(arguments))
        if not (write or name in _SKILL_TOOLS or _PARSE_GATE.search(arguments)):
            return  # nothing else to take from it: no JSON parse (one per call adds up)
    parsed: Any = arguments
    if isinstance(arguments, str):
        try:
            parsed = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            parsed = arguments  # a free-form tool (a raw patch) takes its input as plain text
    if not short:
        pieces.append(identifiers.argument_text(parsed))
    call_id = str(call.get("id"))
    if isinstance(parsed, dict):
        field_ids.extend(_id_fields(parsed))
        command = next((parsed[k] for k in _COMMAND_KEYS if isinstance(parsed.get(k), str)), None)
        if command:
            commands[call_id] = command  # quoted only if its exit is recorded
        if name in _SKILL_TOOLS and isinstance(parsed.get("name"), str):
            skill_calls[call_id] = quote(parsed["name"])
    if not write:
        return
    paths: list[str] = []
    if isinstance(parsed, dict):
        paths += [v for k in _PATH_KEYS if isinstance(v := parsed.get(k), str) and v and "\n" not in v]
        paths += [p for v in parsed.values() if isinstance(v, str) for p in patch_paths(v)]
    elif isinstance(parsed, str):
        paths += patch_paths(parsed)
    for path in dict.fromkeys(paths):
        _modified(ledger, quote(path)[: identifiers.MAX_PATH], name)


def _choices(arguments: str) -> list[str]:
    """The snake_case values of ``arguments``, except under a field whose name is a secret's."""
    return [
        value
        for key, value in _CHOICE_VALUE.findall(arguments)
        if not any(word in key.lower() for word in GATE_WORDS) and not contains_secret(value)
    ]


@lru_cache(maxsize=1024)
def _is_write_tool(name: str) -> bool:
    """Whether a tool name writes files (tool names repeat on every call: one regex run per name)."""
    return bool(_WRITE_TOOL.search(name))


def _id_fields(parsed: dict[str, Any]) -> list[str]:
    """Values of the top-level ``id`` / ``*_id`` / ``*Id`` fields of tool-call arguments."""
    values = [
        str(value)
        for key, value in parsed.items()
        if is_id_key(key) and (isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)))
    ]
    return [v for v in values if 0 < len(v) <= FIELD_ID_MAX and not _SPACE.search(v) and quote(v) == v]


def _modified(ledger: Ledger, path: str, operation: str) -> None:
    ops = ledger.paths.setdefault(path, {})
    ops[operation] = ops.get(operation, 0) + 1


def patch_paths(text: str) -> list[str]:
    """Files a patch touches: ``*** Add/Update/Delete File:`` / ``*** Move to:`` and ``+++`` headers."""
    if "*** " not in text and "+++ " not in text:
        return []
    return [path.strip() for path in _PATCH_FILE.findall(text) if path.strip() and path.strip() != "/dev/null"]


def _result(
    message: dict[str, Any],
    analysis: Analysis,
    index: int,
    ledger: Ledger,
    sinks: tuple[list[str], list[str], list[str]],
    commands: dict[str, str],
    skill_calls: dict[str, str],
) -> None:
    """Approvals, jobs, facts, written paths, ids (``sinks``: pieces, data pieces, field ids),
    the exit of a command and a loaded skill, from one tool result."""
    reduction = analysis.reductions.get(index)
    if reduction is None:
        return
    pieces, data_pieces, field_ids = sinks
    call_id = str(message.get("tool_call_id"))
    name = analysis.calls.get(call_id, ("?", ""))[0]
    for approval in reduction.approvals:
        ledger.approvals[approval.id] = quote(approval.line())
    for ident, status in reduction.ids.items():
        if ident in ledger.approvals:
            continue  # its line says it all
        if status:
            ledger.jobs[ident] = quote(status)
        else:
            pieces.append(f" {ident} ")  # a protocol id (tx_…, job_…) without a status
    if reduction.facts:
        ledger.facts = _union(ledger.facts, [quote(f) for f in reduction.facts])
    if reduction.paths and _is_write_tool(name):
        for path in reduction.paths[:20]:
            if quote(path) not in ledger.paths:
                _modified(ledger, quote(path)[: identifiers.MAX_PATH], name)
    text = reduction.text or text_of(message)
    data_pieces.append(text)
    if reduction.field_ids:
        field_ids.extend(v for v in reduction.field_ids if quote(v) == v)
    if call_id in commands:
        _exit(commands[call_id], text, ledger)
    if call_id in skill_calls and not text.lstrip()[:6].lower().startswith("error"):
        ledger.skills = _union(ledger.skills, [skill_calls[call_id]])


def _exit(raw: str, text: str, ledger: Ledger) -> None:
    """Record a failing command (its exit code), or clear it when the same command passes."""
    tail = text[-400:]
    if "exit" not in tail and "killed" not in tail and "timed out" not in tail:
        return
    command = quote(raw)
    if _TIMED_OUT.search(tail):
        ledger.failure = f"{command} (timed out)"
        return
    match = _EXIT.search(tail)
    if match is None:
        return
    code, signal = match.group(1) or match.group(2), match.group(3)
    if signal:
        ledger.failure = f"{command} (killed by signal {signal})"
    elif code is not None and int(code) != 0:
        ledger.failure = f"{command} (exit {int(code)})"
    elif ledger.failure.startswith(command + " ("):
        ledger.failure = ""
