"""Protocol-aware reduction of tool results (seed 003).

A large structured tool result can hold a transaction id near its start, an exit status in the
middle and the only artifact path at its end; head/tail slicing keeps a plausible fragment and
loses exactly what a resumed task needs. This module instead builds a bounded *envelope*:

- producer-declared omissions (``retention.omit_when_summarizing``) are removed first, and every
  later path (envelope, overflow list, approvals) works on that stripped copy;
- pending approvals keep their id, kind, title, status/mode and their ``resume`` call byte for
  byte (the raw JSON span as the producer wrote it); past 12,000 characters of resume arguments
  the whole resume is dropped for a recovery marker, because a truncated call is not a call;
- ids, statuses, truncation flags and their ``*Omitted/*Bytes/*Chars/*Entries/*Lines`` counters,
  ``retention.importance/facts``, permission fields and recovery indexes are kept;
- unrelated bulky strings and long arrays are replaced by explicit counters;
- when the envelope still exceeds the cap, a list of recovery fields (bounded by the same cap)
  replaces it, with the staged approval carried verbatim ahead of that list.

Plain-text results over the cap become a text envelope: extracted ids and error lines, then
line-aligned head and tail with the omitted line and character counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import orjson

from .jsonspan import keyed_value_span, value_span

TOOL_RESULT_CAP = 6000
"""Characters of one reduced tool result (verbatim approvals come on top of it)."""
RESUME_ARGUMENTS_LIMIT = 12000
"""Characters of resume arguments past which the whole resume call is dropped."""
ARRAY_CAP = 20
"""Generic array cap: the producer's own listing limit, so a full listing survives whole."""
STRING_CAP = 400
"""Unprotected strings longer than this are replaced by a short preview and a counter."""
MAX_DEPTH = 10
FIELD_ID_MAX = 128
"""Values of ``id`` / ``*_id`` / ``*Id`` fields kept as ids: one token of at most this many characters."""
_SPACE = re.compile(r"\s")

ID_PATTERN = re.compile(
    r"\b(?:approval|plan|tx|job|run|todo|research|source)_(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9][A-Za-z0-9_-]{2,}"
)
# (letter, prefix): a prefix is only searched for when its rarer letter occurs (a memchr).
_ID_PREFIXES = (
    ("v", "approval_"),
    ("p", "plan_"),
    ("x", "tx_"),
    ("j", "job_"),
    ("u", "run_"),
    ("d", "todo_"),
    ("h", "research_"),
    ("u", "source_"),
)


def find_ids(text: str) -> list[str]:
    """``ID_PATTERN.finditer`` over ``text``, in order: the ids a plain-text result mentions.

    ``str.find`` locates each prefix (a fast C scan) and the pattern is only tried there;
    running the alternation at every offset of a long log costs many times more.
    """
    starts: list[int] = []
    for letter, prefix in _ID_PREFIXES:
        if letter not in text:
            continue
        position = text.find(prefix)
        while position >= 0:
            starts.append(position)
            position = text.find(prefix, position + 1)
    if not starts:
        return []
    starts.sort()
    found: list[str] = []
    end = 0
    for start in starts:
        if start < end:
            continue  # inside an id already found, as finditer would skip it
        match = ID_PATTERN.match(text, start)
        if match is not None:
            found.append(match.group(0))
            end = match.end()
    return found


_COUNTER_KEY = re.compile(
    r"(?:Omitted|Bytes|Chars|Entries|Lines|Count|Total)$|^(?:omitted|total|count)_?|_(?:omitted|bytes|chars|entries|lines|count|total)$"
)
_ID_KEY = re.compile(r"(?:^id$|_id$|Id$|^ids$|_ids$|Ids$)")
_PROTECTED_KEYS = frozenset(
    {
        "id",
        "kind",
        "status",
        "state",
        "mode",
        "title",
        "path",
        "paths",
        "planPath",
        "file",
        "file_path",
        "filename",
        "destructive",
        "revision",
        "supersedes",
        "propose",
        "truncated",
        "partial",
        "exit_code",
        "exitCode",
        "code",
        "executable",
        "command",
        "startedAt",
        "started_at",
        "startTime",
        "finishedAt",
        "ok",
        "error",
        "errors",
        "tool",
        "action",
        "permissionMode",
        "activePlan",
        "pendingPlan",
        "pendingApprovals",
        "commitEdits",
        "allowCommands",
        "allowWeb",
        "role",
        "budget",
        "passes",
        "toolCalls",
        "maxPasses",
        "maxToolCalls",
        "url",
        "hash",
        "timestamp",
        "fetchedAt",
        "contentPath",
        "importance",
        "facts",
        "approval",
        "approvals",
        "plans",
        "jobs",
        "recentTransactions",
        "recentRuns",
        "recentTaskBoards",
        "recentResearchProjects",
        "project",
        "agentRun",
        "capabilities",
        "retention",
        "name",
        "version",
    }
)
_ERROR_LINE = re.compile(
    r"(?i)(?:error\b|exception\b|traceback|\bfailed\b|\bfailure\b|\bfatal\b|\bpanic\b|exit (?:code|status)\s*[1-9])"
)
# The same rule for a lower-cased ASCII line: without (?i) the engine skips to candidate letters
# in C, several times faster on real output, where error words are everywhere (code, logs).
_ERROR_LINE_LOWER = re.compile(
    r"(?:error|exception)\b|traceback|\b(?:failed|failure|fatal|panic)\b|exit (?:code|status)\s*[1-9]"
)
# (letter, word): a word is only searched for when its rarer letter occurs (a memchr).
_ERROR_WORDS = (
    ("r", "error"),
    ("x", "exception"),
    ("k", "traceback"),
    ("f", "fail"),
    ("f", "fatal"),
    ("p", "panic"),
    ("x", "exit"),
)
_SENTINEL = "\x00i-compact-raw-{}\x00"
_DATA_URL = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=\s]{16,}")
# A run is tried from its start only: tried inside every word, it cost a second per 20 MB of prose.
_RAW_BASE64 = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{400,}={0,2}")


def strip_payloads(text: str) -> str:
    """Replace base64 data URLs and long raw base64 runs by a marker with their size."""
    if "base64," in text:
        text = _DATA_URL.sub(lambda m: f"[base64 payload of {len(m.group(0))} chars stripped]", text)
    if len(text) >= 400 and max(map(len, text.split()), default=0) >= 400:  # a run has no spaces: C scans
        text = _RAW_BASE64.sub(_raw_base64, text)
    return text


def _raw_base64(match: re.Match[str]) -> str:
    run = match.group(0)
    # Real base64 mixes cases and digits; a run of one letter or a hex digest is not a payload.
    sample = run[:400]
    mixed = any(c.isupper() for c in sample) and any(c.islower() for c in sample) and any(c.isdigit() for c in sample)
    return f"[base64-like run of {len(run)} chars stripped]" if mixed else run


_ID_KEYS: dict[str, bool] = {}


def is_id_key(key: str) -> bool:
    # A plain dict in front of the regex (keys repeat across thousands of results); cleared
    # when full so that odd producers cannot grow it without bound.
    known = _ID_KEYS.get(key)
    if known is None:
        if len(_ID_KEYS) >= 4096:
            _ID_KEYS.clear()
        known = _ID_KEYS[key] = bool(_ID_KEY.search(key))
    return known


@lru_cache(maxsize=4096)
def _is_counter_key(key: str) -> bool:
    return bool(_COUNTER_KEY.search(key))


@dataclass
class Approval:
    """A pending approval found in a tool result, with its resume call kept verbatim."""

    id: str
    kind: str | None = None
    title: str | None = None
    status: str | None = None
    mode: str | None = None
    destructive: bool | None = None
    resume: str | None = None
    """Raw JSON text of the resume call exactly as the producer wrote it, or None."""
    resume_dropped: str | None = None
    """Recovery marker when the resume call was dropped for its size."""
    path: list[str | int] = field(default_factory=list, repr=False, compare=False)
    """Where the approval sits in the tool result's JSON (to find its raw resume call)."""
    has_resume: bool = field(default=False, repr=False, compare=False)
    """The approval object has a ``resume`` key (even a null one)."""
    parsed_resume: Any = field(default=None, repr=False, compare=False)
    """The ``resume`` value as parsed, matched against the raw text for its span."""

    def line(self) -> str:
        """One self-contained line: the approval and the exact call to re-issue."""
        attrs = ", ".join(
            f"{key}={value if isinstance(value, str) else orjson.dumps(value).decode()}"
            for key, value in (
                ("kind", self.kind),
                ("status", self.status),
                ("mode", self.mode),
                ("destructive", self.destructive),
                ("title", self.title),
            )
            if value is not None
        )
        head = f"approval {self.id}" + (f" ({attrs})" if attrs else "")
        if self.resume is not None:
            return f"{head}: resume = {self.resume}"
        return f"{head}: {self.resume_dropped or 'no resume call recorded'}"


class Reduction:
    """The reduced rendering of one tool result and the protocol facts found in it.

    A plain class with slots: one is built per tool result, and a dataclass's default
    factories cost more than the literals below on histories of thousands of results.

    The error lines of a plain-text result are found on first use (:attr:`errors`): a local
    summary quotes those of the newest results only, and on real output (code, logs) the
    search is the costliest part of a reduction.
    """

    __slots__ = (
        "_error_text",
        "_errors",
        "approvals",
        "facts",
        "field_ids",
        "ids",
        "omitted_by_producer",
        "original_chars",
        "overflow",
        "paths",
        "reduced",
        "structured",
        "text",
        "truncation",
    )

    def __init__(self, text: str, original_chars: int, structured: bool = False) -> None:
        self.text = text
        self.original_chars = original_chars
        self.structured = structured
        self.reduced = False
        self.overflow = False
        self.approvals: list[Approval] = []
        self.ids: dict[str, str] = {}  # id -> status ("" when unknown), in order of appearance
        self.paths: list[str] = []
        self.truncation: list[str] = []
        self.omitted_by_producer: list[str] = []
        self._errors: list[str] | None = []
        self._error_text = ""
        self.facts: list[str] = []
        self.field_ids: list[str] = []  # values of id fields that are not protocol ids (ledger ids)

    @property
    def errors(self) -> list[str]:
        """The lines of the result that report an error (at most 8, distinct, in order)."""
        if self._errors is None:
            self._errors = _error_lines(self._error_text)
            self._error_text = ""
        return self._errors

    def errors_of(self, text: str) -> None:
        """Let :attr:`errors` be the error lines of ``text``, found when first read."""
        self._errors, self._error_text = None, text


def reduce_tool_result(content: str, *, cap: int = TOOL_RESULT_CAP, facts_only: bool = False) -> Reduction:
    """Reduce one tool result's text to a bounded, protocol-aware rendering.

    ``facts_only`` (local mode) collects the protocol facts but skips building the rendering;
    ``text`` is then the unreduced content.
    """
    stripped_content = content.strip()
    # JSON text starting with { or [ ends with } or ]: a cut-off payload is text, and skipping
    # the failed parse (and its exception) matters on histories of thousands of results.
    if stripped_content[:1] in ("{", "[") and stripped_content[-1:] in ("}", "]") and len(stripped_content) > 1:
        try:
            parsed = orjson.loads(stripped_content)
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, (dict, list)):
            return _reduce_structured(stripped_content, parsed, cap, facts_only)
    return _reduce_text(content, cap, facts_only)


# -- structured ---------------------------------------------------------------------------


def _reduce_structured(raw: str, parsed: dict[str, Any] | list[Any], cap: int, facts_only: bool) -> Reduction:
    result = Reduction(text="", original_chars=len(raw), structured=True)
    omit = _declared_omissions(parsed)
    stripped = _strip_paths(parsed, omit, result.omitted_by_producer)
    _collect_facts(stripped, [], result, parent=None)
    raw_resumes = _attach_resumes(raw, result)
    if facts_only:
        result.text = raw if not result.omitted_by_producer else ""
        return result
    if not result.omitted_by_producer and len(raw) <= cap and not result.approvals:
        result.text = strip_payloads(raw)  # no resume call here that stripping could alter
        return result
    result.reduced = True
    header = _structured_header(result)
    # Shrink unrelated bulk step by step (longer previews first) before giving up on the envelope.
    for preview in (300, 80, 0):
        sentinels: dict[str, str] = {}
        envelope = _prune(stripped, [], raw_resumes, sentinels, depth=0, preview=preview)
        text = orjson.dumps(envelope).decode()
        for token, resume_text in sentinels.items():
            text = text.replace(orjson.dumps(token).decode(), resume_text, 1)
        verbatim = sum(len(v) for v in sentinels.values())
        if len(text) - verbatim <= cap:
            result.text = header + text
            return result
    result.overflow = True
    result.text = header + _overflow_listing(stripped, result, cap)
    return result


def _declared_omissions(parsed: Any) -> list[str]:
    if not isinstance(parsed, dict):
        return []
    retention = parsed.get("retention")
    if not isinstance(retention, dict):
        return []
    omit = retention.get("omit_when_summarizing")
    if isinstance(omit, str):
        omit = [omit]
    if not isinstance(omit, list):
        return []
    return [p for p in omit if isinstance(p, str) and p.strip()]


def _strip_paths(value: Any, paths: list[str], removed: list[str]) -> Any:
    """A copy of ``value`` without the dotted ``paths`` (lists apply the rest to each element)."""
    if not paths:
        return value
    tree: dict[str, Any] = {}
    for path in paths:
        parts = [p for p in path.removeprefix("$.").split(".") if p]
        node = tree
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if child is None:  # a shorter path already removes this subtree
                break
            node = child
        else:
            if parts:
                node[parts[-1]] = None
    return _strip(value, tree, "", removed)


def _strip(value: Any, tree: dict[str, Any], prefix: str, removed: list[str]) -> Any:
    if isinstance(value, list):
        return [_strip(item, tree, prefix, removed) for item in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in tree:
            sub = tree[key]
            path = f"{prefix}{key}"
            if sub is None:
                if path not in removed:
                    removed.append(path)
                continue
            out[key] = _strip(item, sub, path + ".", removed)
        else:
            out[key] = item
    return out


_PATH_FACT_KEYS = frozenset({"path", "planPath", "file", "file_path", "contentPath"})


def _collect_facts(value: Any, path: list[str | int], result: Reduction, parent: dict[str, Any] | None) -> None:
    # Hot path (every structured tool result): exact type checks and one pass over the keys;
    # containers are visited after this object's own facts, as before, so the order holds.
    if type(value) is list:
        for index, item in enumerate(value):
            if isinstance(item, (dict, list)):
                _collect_facts(item, [*path, index], result, parent)
        return
    if not isinstance(value, dict):
        return
    status = value.get("status")
    if not isinstance(status, str):
        status = value.get("state")
        if not isinstance(status, str):
            status = ""
    children: list[tuple[str, Any]] = []
    id_keys = _ID_KEYS
    for key, item in value.items():
        kind = type(item)
        if kind is str:
            is_id = id_keys.get(key)
            if is_id is None:
                is_id = is_id_key(key)
            if is_id:
                if ID_PATTERN.fullmatch(item):
                    _add_id(result, item, status if key == "id" else "")
                elif 0 < len(item) <= FIELD_ID_MAX and not _SPACE.search(item):
                    result.field_ids.append(item)
            elif key in _PATH_FACT_KEYS and item not in result.paths:
                result.paths.append(item)
            continue
        if kind is dict:
            children.append((key, item))
            continue
        if kind is list:
            if is_id_key(key):
                for entry in item:
                    if isinstance(entry, str) and ID_PATTERN.fullmatch(entry):
                        _add_id(result, entry, "")
                    elif isinstance(entry, str) and 0 < len(entry) <= FIELD_ID_MAX and not _SPACE.search(entry):
                        result.field_ids.append(entry)
            children.append((key, item))
            continue
        if kind is int and is_id_key(key):
            result.field_ids.append(str(item))
            continue
        if item is True and (key == "truncated" or key == "partial"):
            result.truncation.append(_dotted([*path, key]) + "=true")
        elif item and kind is not bool and isinstance(item, int) and _is_counter_key(key):
            result.truncation.append(f"{_dotted([*path, key])}={item}")
    ident = value.get("id")
    resume = value.get("resume")
    if (isinstance(ident, str) and ident.startswith("approval_")) or (
        isinstance(resume, dict) and isinstance(resume.get("tool"), str)
    ):  # key_is_approval, inlined on this hot path
        result.approvals.append(_approval_from(value, path, parent))
    retention = value.get("retention") if not path else None
    if isinstance(retention, dict):
        facts = retention.get("facts")
        if isinstance(facts, list):
            result.facts.extend(str(f) if not isinstance(f, str) else f for f in facts[:ARRAY_CAP])
    for key, item in children:
        _collect_facts(item, [*path, key], result, value)


def _approval_from(value: dict[str, Any], path: list[str | int], parent: dict[str, Any] | None) -> Approval:
    def text(key: str, source: dict[str, Any] | None = value) -> str | None:
        item = source.get(key) if source else None
        return item if isinstance(item, str) else None

    approval = Approval(
        id=text("id") or "approval (no id)",
        kind=text("kind"),
        title=text("title"),
        status=text("status") or text("status", parent),
        mode=text("mode") or text("mode", parent),
        destructive=value.get("destructive") if isinstance(value.get("destructive"), bool) else None,
        path=path,
        has_resume="resume" in value,
        parsed_resume=value.get("resume"),
    )
    return approval


def _attach_resumes(raw: str, result: Reduction) -> dict[tuple[str | int, ...], str]:
    """Raw resume text per approval path; oversized resumes become recovery markers."""
    raw_by_path: dict[tuple[str | int, ...], str] = {}
    for approval in result.approvals:
        path = list(approval.path)
        if not approval.has_resume:
            continue
        span = keyed_value_span(raw, "resume", approval.parsed_resume, path)
        if span is None:
            if result.omitted_by_producer:
                # The raw call differs from the stripped one: the producer declared part of it
                # omitted. A call missing an argument is not a call, and the omission wins.
                approval.resume_dropped = (
                    "resume call dropped: the producer declared part of it omitted when summarizing; "
                    f'recover it with workspace_inspect {{"action":"changes"}} and approval id {approval.id}'
                )
                raw_by_path[tuple(path)] = orjson.dumps({"dropped": approval.resume_dropped}).decode()
            continue
        resume_text = raw[span[0] : span[1]]
        args_chars = 0
        if len(resume_text) > RESUME_ARGUMENTS_LIMIT:  # shorter resumes cannot hold longer arguments
            args_span = value_span(resume_text, ["arguments"])
            args_chars = 0 if args_span is None else args_span[1] - args_span[0]
        if args_chars > RESUME_ARGUMENTS_LIMIT:
            approval.resume_dropped = (
                f"resume call dropped: its arguments are {args_chars} characters (over "
                f"{RESUME_ARGUMENTS_LIMIT}) and a truncated call is not a call; recover it with "
                f'workspace_inspect {{"action":"changes"}} and approval id {approval.id}'
            )
            raw_by_path[tuple(path)] = orjson.dumps({"dropped": approval.resume_dropped}).decode()
            continue
        approval.resume = resume_text
        raw_by_path[tuple(path)] = approval.resume
    return raw_by_path


def _prune(
    value: Any,
    path: list[str | int],
    raw_resumes: dict[tuple[str | int, ...], str],
    sentinels: dict[str, str],
    depth: int,
    protected: bool = False,
    preview: int = 300,
) -> Any:
    if isinstance(value, str):
        if value.startswith("data:") and ";base64," in value[:100]:
            return f"[base64 payload of {len(value)} chars stripped]"
        if protected or len(value) <= max(preview, 40):
            return value
        return f"{value[:preview]}…[{len(value) - preview} more chars omitted]"
    if isinstance(value, list):
        if depth >= MAX_DEPTH:
            return f"[array of {len(value)} entries omitted: too deep]"
        items = [
            _prune(item, [*path, i], raw_resumes, sentinels, depth + 1, protected, preview)
            for i, item in enumerate(value[:ARRAY_CAP])
        ]
        if len(value) > ARRAY_CAP:
            items.append(f"…[{len(value) - ARRAY_CAP} more entries omitted]")
        return items
    if not isinstance(value, dict):
        return value
    if depth >= MAX_DEPTH:
        return f"{{object of {len(value)} keys omitted: too deep}}"
    out: dict[str, Any] = {}
    for key, item in value.items():
        child_path = [*path, key]
        if key == "resume" and tuple(path) in raw_resumes:
            token = _SENTINEL.format(len(sentinels))
            sentinels[token] = raw_resumes[tuple(path)]
            out[key] = token
            continue
        keep = protected or key in _PROTECTED_KEYS or is_id_key(key) or _is_counter_key(key)
        out[key] = _prune(
            item, child_path, raw_resumes, sentinels, depth + 1, keep and not isinstance(item, (dict, list)), preview
        )
    return out


def _structured_header(result: Reduction) -> str:
    parts = [f"[structured tool result, {result.original_chars} chars, reduced to a protocol-aware envelope"]
    if result.omitted_by_producer:
        parts.append("; omitted as the producer declared: " + ", ".join(result.omitted_by_producer))
    if result.truncation:
        parts.append("; PARTIAL: " + ", ".join(result.truncation[:10]))
    return "".join(parts) + "]\n"


def _overflow_listing(stripped: Any, result: Reduction, cap: int) -> str:
    lines = [f"[envelope over the {cap}-character cap: recovery fields follow instead of a sliced payload]"]
    lines.extend(a.line() for a in result.approvals)
    # Flags, counters and exit codes first, then ids, then the rest: what a resumed task needs
    # most survives a tight cap.
    ranked = sorted(_recovery_fields(stripped, []), key=lambda item: _field_rank(item[0]))
    used = 0
    kept = 0
    for dotted, item in ranked:
        line = f"{dotted} = {orjson.dumps(item).decode()}"
        if used + len(line) + 1 > cap:
            break
        lines.append(line)
        used += len(line) + 1
        kept += 1
    if kept < len(ranked):
        lines.append(f"…[{len(ranked) - kept} more recovery fields omitted by the cap]")
    return "\n".join(lines)


def _field_rank(dotted: str) -> int:
    key = dotted.rsplit(".", 1)[-1].split("[", 1)[0]
    if key in ("truncated", "partial", "exit_code", "exitCode", "status", "permissionMode") or _is_counter_key(key):
        return 0
    if is_id_key(key):
        return 1
    return 2


def _recovery_fields(value: Any, path: list[str | int]) -> Any:
    if isinstance(value, list):
        for index, item in enumerate(value[:ARRAY_CAP]):
            yield from _recovery_fields(item, [*path, index])
        return
    if not isinstance(value, dict):
        return
    for key, item in value.items():
        if key == "resume":
            continue  # carried verbatim ahead of the list
        if isinstance(item, (dict, list)):
            if key in ("facts", "importance") and isinstance(item, list):
                yield _dotted([*path, key]), item[:ARRAY_CAP]
                continue
            yield from _recovery_fields(item, [*path, key])
        elif key in _PROTECTED_KEYS or is_id_key(key) or _is_counter_key(key):
            if isinstance(item, str) and len(item) > STRING_CAP:
                item = f"{item[:120]}…[{len(item) - 120} more chars omitted]"
            yield _dotted([*path, key]), item


def _dotted(path: list[str | int]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def _add_id(result: Reduction, ident: str, status: str) -> None:
    if status or ident not in result.ids:
        result.ids[ident] = status or result.ids.get(ident, "")


# -- plain text ---------------------------------------------------------------------------


def _reduce_text(content: str, cap: int, facts_only: bool = False) -> Reduction:
    if not facts_only:
        content = strip_payloads(content)
    result = Reduction(text=content, original_chars=len(content))
    for ident in find_ids(content):
        _add_id(result, ident, "")
    result.errors_of(content)
    if facts_only:
        return result
    lines = content.splitlines()
    if len(content) <= cap:
        return result
    result.reduced = True
    header = [f"[text tool result, {len(content)} chars in {len(lines)} lines, reduced to a bounded envelope]"]
    if result.ids:
        header.append("ids: " + " ".join(list(result.ids)[:60]))
    if result.errors:
        header.append("error lines: " + " | ".join(result.errors[:5]))
    head_text = "\n".join(header)
    room = max(cap - len(head_text) - 200, 400)
    head, head_lines = _take_lines(lines, room * 6 // 10)
    tail, tail_lines = _take_lines(list(reversed(lines[head_lines:])), room * 4 // 10)
    tail.reverse()
    omitted_lines = len(lines) - head_lines - tail_lines
    omitted_chars = len(content) - sum(len(x) + 1 for x in head) - sum(len(x) + 1 for x in tail)
    marker = f"…[{omitted_lines} lines / {max(omitted_chars, 0)} chars omitted]…"
    result.text = "\n".join([head_text, *head, marker, *tail])
    return result


def _error_lines(content: str, limit: int = 8) -> list[str]:
    """The first ``limit`` distinct lines that report an error.

    ``str.find`` locates candidate words (fast C scans); only their lines meet the regex, which
    is many times cheaper than running an alternation over the whole text.
    """
    lower = content.lower()
    if len(lower) != len(content):  # lower-casing moved offsets (rare characters): plain scan
        lines = (line for line in content.splitlines() if _ERROR_LINE.search(line))
        return list(dict.fromkeys(line.strip()[:300] for line in lines))[:limit]
    starts: set[int] = set()
    for letter, word in _ERROR_WORDS:
        if letter not in lower:
            continue
        position = lower.find(word)
        hits = 0
        while position >= 0 and hits < 4 * limit:
            starts.add(content.rfind("\n", 0, position) + 1)
            hits += 1
            position = lower.find(word, position + len(word))
    # ASCII: lower-casing folds exactly what (?i) folds and keeps \b and \s where they were.
    search, haystack = (_ERROR_LINE_LOWER.search, lower) if content.isascii() else (_ERROR_LINE.search, content)
    found: list[str] = []
    for start in sorted(starts):
        end = content.find("\n", start)
        stop = len(content) if end < 0 else end
        if search(haystack[start:stop]):
            clean = content[start:stop].strip()[:300]
            if clean not in found:
                found.append(clean)
                if len(found) == limit:
                    break
    return found


def _take_lines(lines: list[str], budget: int) -> tuple[list[str], int]:
    out: list[str] = []
    used = 0
    for line in lines:
        if len(line) > budget - used:
            if not out and budget > 0:  # one giant line: keep a marked slice of it
                out.append(f"{line[:budget]}…[{len(line) - budget} chars of this line omitted]")
                return out, 1
            break
        out.append(line)
        used += len(line) + 1
    return out, len(out)
