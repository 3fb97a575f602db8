"""The bundled `skills` worker: discovers skill folders, injects their names, loads them on request.

A skill is ``<root>/<folder>/SKILL.md``: a ``---`` front-matter block of ``key: value`` scalars
(``name``, ``description``) followed by the body. Roots are ``.agents/skills`` and ``.i/skills``
in the workspace, plus the roots listed in ``skills.json`` (``{"roots": [...]}``, relative
entries resolve against the config file's folder). ``before_turn`` reports name, description
and source of every valid skill in ``context.skills``; ``skill_load`` returns a skill's body and
``skill_read`` a file inside its folder. Nothing here ever executes a skill's scripts.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from i_protocol import Request, Worker, WorkerError
from i_protocol.errors import FileTooLarge
from i_protocol.files import read_bytes
from i_protocol.settings import optional_str_list, reject_unknown

from ..__about__ import __version__

worker = Worker("skills", __version__, dist_name="i-core skills")

DEFAULT_ROOTS = (".agents/skills", ".i/skills")
SKILL_FILE = "SKILL.md"
MAX_SKILLS_PER_ROOT = 100
MAX_ENTRIES_PER_ROOT = 1000
MAX_FILE_BYTES = 64_000
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_KEY_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*)[ \t]*:(?:[ \t]+(.*))?")
# Plain YAML scalars that a YAML loader would not turn into a string (1.1 and 1.2 core schemas).
_NULL = re.compile(r"~|null|Null|NULL")
_BOOL = re.compile(r"true|True|TRUE|false|False|FALSE|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF")
_INT = re.compile(r"[-+]?(?:[0-9][0-9_]*|0o[0-7]+|0x[0-9a-fA-F]+|0b[01]+)")
_FLOAT = re.compile(
    r"[-+]?(?:\.[0-9]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
)
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ].*)?")
# Indicators that start a flow collection, block scalar, anchor, alias, tag or directive.
_COMPLEX_START = "[]{}|>&*!%@`"
# Known front-matter keys and the type each must have; other scalar keys are accepted and ignored.
_STRING_KEYS = ("name", "description", "license", "compatibility", "allowed-tools")


class SkillError(WorkerError):
    """An invalid skill, skill root or tool argument (a bad skills.json field is a ``SettingsError``)."""


@dataclass(frozen=True)
class Scalar:
    """One front-matter value: its YAML type and its text (unquoted for strings)."""

    kind: str  # string, null, boolean, integer, float, timestamp
    text: str
    line: int


@dataclass(frozen=True)
class FrontMatter:
    """A parsed SKILL.md: its metadata scalars and the body after the closing ``---``."""

    fields: dict[str, Scalar]
    body: str


@dataclass(frozen=True)
class Skill:
    """A valid skill: its metadata, the SKILL.md it came from, and its folder (resolved)."""

    name: str
    description: str
    source: str
    folder: str


@dataclass
class Discovery:
    """Every valid skill by name, and one message per skill, root or name that failed."""

    skills: dict[str, Skill] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    duplicates: dict[str, list[str]] = field(default_factory=dict)


# -- SKILL.md parsing ----------------------------------------------------------------------


def parse_skill_text(text: str, where: str) -> FrontMatter:
    """Split SKILL.md text into its front-matter scalars and body; errors name ``where`` and the line."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    lines = text.split("\n")
    if lines[0].rstrip() != "---":
        raise SkillError(f"{where}:1: must start with a '---' line opening the YAML front matter")
    fields: dict[str, Scalar] = {}
    for index in range(1, len(lines)):
        line = lines[index]
        number = index + 1
        if line.rstrip() == "---":
            return FrontMatter(fields, "\n".join(lines[index + 1 :]))
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if line[0] in " \t":
            raise SkillError(
                f"{where}:{number}: indented line: nested or multi-line YAML is not supported; "
                "write each field as 'key: value' on one line (quote the value if needed)"
            )
        if stripped.startswith("- "):
            raise SkillError(f"{where}:{number}: YAML lists are not supported; write 'key: value' scalars only")
        match = _KEY_LINE.fullmatch(line.rstrip())
        if match is None:
            raise SkillError(f"{where}:{number}: expected 'key: value', got {_clip(stripped)!r}")
        key, raw = match.group(1), (match.group(2) or "").strip()
        if key in fields:
            raise SkillError(f"{where}:{number}: duplicate key {key!r} (first on line {fields[key].line})")
        fields[key] = _scalar(raw, where, number, key)
    raise SkillError(f"{where}: the front matter opened on line 1 has no closing '---' line")


def _scalar(raw: str, where: str, line: int, key: str) -> Scalar:
    if not raw or raw.startswith("#"):
        raise SkillError(f"{where}:{line}: {key!r} has no value on its line; nested YAML mappings are not supported")
    if raw[0] == '"':
        return Scalar("string", _double_quoted(raw, where, line), line)
    if raw[0] == "'":
        return Scalar("string", _single_quoted(raw, where, line), line)
    if raw[0] in _COMPLEX_START or raw.startswith("- ") or raw == "-":
        raise SkillError(
            f"{where}:{line}: {key!r}: complex YAML (flow collections, block scalars, anchors, aliases, "
            "tags, lists) is not supported; use a plain or quoted one-line value"
        )
    value = re.split(r"[ \t]#", raw, maxsplit=1)[0].rstrip()
    if ": " in value or value.endswith(":"):
        raise SkillError(f"{where}:{line}: {key!r}: a plain value must not contain ': '; quote it")
    return Scalar(_plain_kind(value), value, line)


def _plain_kind(value: str) -> str:
    for kind, pattern in (
        ("null", _NULL),
        ("boolean", _BOOL),
        ("integer", _INT),
        ("float", _FLOAT),
        ("timestamp", _TIMESTAMP),
    ):
        if pattern.fullmatch(value):
            return kind
    return "string"


def _double_quoted(raw: str, where: str, line: int) -> str:
    end = 1
    while end < len(raw):
        if raw[end] == "\\":
            end += 2
            continue
        if raw[end] == '"':
            break
        end += 1
    else:
        raise SkillError(f"{where}:{line}: unterminated double-quoted string (multi-line strings are not supported)")
    _after_quote(raw[end + 1 :], where, line)
    try:
        # JSON escapes are the common subset of YAML's; a literal tab is valid YAML, not JSON.
        value = orjson.loads(raw[: end + 1].replace("\t", "\\t"))
    except orjson.JSONDecodeError:
        raise SkillError(f"{where}:{line}: unsupported escape in double-quoted string") from None
    assert isinstance(value, str)
    return value


def _single_quoted(raw: str, where: str, line: int) -> str:
    end = 1
    while end < len(raw):
        if raw[end] == "'":
            if raw[end + 1 : end + 2] == "'":
                end += 2
                continue
            break
        end += 1
    else:
        raise SkillError(f"{where}:{line}: unterminated single-quoted string (multi-line strings are not supported)")
    _after_quote(raw[end + 1 :], where, line)
    return raw[1:end].replace("''", "'")


def _after_quote(rest: str, where: str, line: int) -> None:
    if rest.strip() and not re.match(r"[ \t]+#", rest):
        raise SkillError(f"{where}:{line}: unexpected text after the closing quote: {_clip(rest.strip())!r}")


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def validate_metadata(front: FrontMatter, where: str) -> tuple[str, str]:
    """Check the metadata types and limits; return ``(name, description)``."""
    for key in _STRING_KEYS:
        scalar = front.fields.get(key)
        if scalar is not None and scalar.kind != "string":
            raise SkillError(
                f"{where}:{scalar.line}: {key!r} must be a string, got {scalar.kind} {scalar.text!r} "
                "(quote it to make it a string)"
            )
    for key in ("name", "description"):
        if key not in front.fields:
            raise SkillError(f"{where}: the front matter has no {key!r} field")
    name = front.fields["name"]
    if not _NAME.fullmatch(name.text):
        raise SkillError(
            f"{where}:{name.line}: name {_clip(name.text)!r} must be 1-{MAX_NAME_CHARS} ASCII letters, "
            "digits, '-' or '_'"
        )
    description = front.fields["description"]
    if not description.text.strip():
        raise SkillError(f"{where}:{description.line}: description is empty")
    if len(description.text) > MAX_DESCRIPTION_CHARS:
        raise SkillError(
            f"{where}:{description.line}: description has {len(description.text)} characters; "
            f"at most {MAX_DESCRIPTION_CHARS} are allowed"
        )
    return name.text, description.text


def read_limited(path: str, what: str) -> str:
    """Read a UTF-8 text file of at most MAX_FILE_BYTES bytes."""
    try:
        raw = read_bytes(path, MAX_FILE_BYTES)
    except OSError as exc:
        raise SkillError(f"{what}: cannot read: {exc.strerror or exc}") from None
    except FileTooLarge:
        raise SkillError(f"{what}: larger than the {MAX_FILE_BYTES}-byte limit") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillError(f"{what}: not UTF-8 text") from None


def load_skill(source: str, folder: str) -> tuple[Skill, str]:
    """Read and validate one SKILL.md; return the skill and its body."""
    front = parse_skill_text(read_limited(source, source), source)
    name, description = validate_metadata(front, source)
    return Skill(name, description, source, folder), front.body


# -- discovery -----------------------------------------------------------------------------


def skill_roots(request: Request) -> tuple[list[str], list[str]]:
    """The workspace's default roots and the roots configured in skills.json, both absolute."""
    defaults: list[str] = []
    if request.workspace:
        defaults = [os.path.normpath(os.path.join(request.workspace, root)) for root in DEFAULT_ROOTS]
    config = request.config()
    where = config.path or "skills.json"
    reject_unknown(config.data, ("roots",), file=where)
    roots = optional_str_list(config.data, "roots", [], file=where, nonempty_items=True)
    configured = [os.path.normpath(os.path.abspath(config.resolve(root))) for root in roots]
    return defaults, configured


def discover(defaults: list[str], configured: list[str]) -> Discovery:
    """Load every skill under the roots; bad skills and roots become error messages, not failures.

    A missing default root is normal; a missing configured root is an error. A root listed
    twice (by its resolved path) is walked once. A name found more than once is dropped.
    """
    found = Discovery()
    by_name: dict[str, list[Skill]] = {}
    seen: set[str] = set()
    for root, explicit in [(root, False) for root in defaults] + [(root, True) for root in configured]:
        real = os.path.realpath(root)
        if real in seen:
            continue
        seen.add(real)
        if not os.path.isdir(root):
            if explicit:
                found.errors.append(f"skill root {root} (skills.json) is not a folder")
            continue
        for skill in _walk_root(root, real, found.errors):
            by_name.setdefault(skill.name, []).append(skill)
    for name, skills in sorted(by_name.items()):
        if len(skills) == 1:
            found.skills[name] = skills[0]
            continue
        sources = [skill.source for skill in skills]
        found.duplicates[name] = sources
        found.errors.append(f"skill name {name!r} is defined more than once: {', '.join(sources)}; none is loaded")
    return found


def _walk_root(root: str, real_root: str, errors: list[str]) -> list[Skill]:
    names: list[str] = []
    try:
        with os.scandir(root) as entries:
            for entry in entries:
                if len(names) == MAX_ENTRIES_PER_ROOT:
                    # Which entries scandir yields first is arbitrary: skip the root rather than
                    # report a set of skills that could change from one call to the next.
                    errors.append(
                        f"skill root {root} has more than {MAX_ENTRIES_PER_ROOT} entries; none of its skills is loaded"
                    )
                    return []
                names.append(entry.name)
    except OSError as exc:
        errors.append(f"skill root {root}: cannot list: {exc.strerror or exc}")
        return []
    skills: list[Skill] = []
    for name in sorted(names):
        if name.startswith("."):
            continue
        folder = os.path.join(root, name)
        source = os.path.join(folder, SKILL_FILE)
        if not os.path.isdir(folder) or not os.path.lexists(source):
            continue
        if len(skills) == MAX_SKILLS_PER_ROOT:
            errors.append(
                f"skill root {root} has more than {MAX_SKILLS_PER_ROOT} skills; only the first "
                f"{MAX_SKILLS_PER_ROOT} by folder name are loaded (from {source} on, skipped)"
            )
            break
        real_folder = os.path.realpath(folder)
        if not _inside(real_folder, real_root) or not _inside(os.path.realpath(source), real_folder):
            errors.append(
                f"{source}: resolves outside its root {root} through a symbolic link; "
                "add the target folder to skills.json roots instead"
            )
            continue
        if not os.path.isfile(source):
            errors.append(f"{source}: not a regular file")
            continue
        try:
            skill, _ = load_skill(source, real_folder)
        except SkillError as exc:
            errors.append(str(exc))
            continue
        skills.append(skill)
    return skills


def _inside(path: str, folder: str) -> bool:
    try:
        return os.path.commonpath([path, folder]) == folder
    except ValueError:  # different drives on Windows
        return False


def discover_for(request: Request) -> Discovery:
    """Discovery over the roots that apply to ``request``."""
    return discover(*skill_roots(request))


# -- context and tools ---------------------------------------------------------------------


def skills_context(found: Discovery) -> dict[str, Any]:
    """``context.skills``: the full current state; the core diffs it against what it last injected."""
    entries = {
        name: {"description": skill.description, "source": skill.source} for name, skill in sorted(found.skills.items())
    }
    digest = hashlib.sha256(orjson.dumps(entries, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return {"kind": "skills", "entries": entries, "revision": "sha256:" + digest, "errors": sorted(found.errors)}


def find_skill(found: Discovery, name: Any) -> Skill:
    """The skill called ``name``, or an error saying why there is none."""
    if not isinstance(name, str) or not name:
        raise SkillError("name must be a non-empty string")
    if name in found.duplicates:
        raise SkillError(
            f"skill name {name!r} is defined more than once ({', '.join(found.duplicates[name])}); rename one of them"
        )
    skill = found.skills.get(name)
    if skill is not None:
        return skill
    known = sorted(found.skills)
    listed = ", ".join(known[:20]) + (", …" if len(known) > 20 else "")
    note = f"; {len(found.errors)} skill problem(s) reported in the skills context" if found.errors else ""
    raise SkillError(f"no skill named {_clip(name)!r}; known skills: {listed or 'none'}{note}")


def read_skill_file(skill: Skill, relative: Any) -> str:
    """The text of ``relative`` inside the skill's folder; never anything outside it."""
    if not isinstance(relative, str) or not relative:
        raise SkillError("path must be a non-empty string")
    if "\x00" in relative:
        raise SkillError("path must not contain NUL characters")
    parts = re.split(r"[\\/]+", relative)
    if relative.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", relative) or os.path.isabs(relative):
        raise SkillError(f"path {_clip(relative)!r} is absolute; give a path relative to the skill's folder")
    if ".." in parts:
        raise SkillError(f"path {_clip(relative)!r} contains '..'; it must stay inside the skill's folder")
    target = os.path.realpath(os.path.join(skill.folder, *[part for part in parts if part]))
    if not _inside(target, skill.folder):
        raise SkillError(f"path {_clip(relative)!r} resolves outside the skill's folder (symbolic link)")
    if not os.path.isfile(target):
        raise SkillError(f"skill {skill.name!r} has no file {_clip(relative)!r}")
    return read_limited(target, f"skill {skill.name!r} file {relative!r}")


@worker.hook("before_turn")
def before_turn(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Add ``context.skills`` (name, description and source of every valid skill) to the turn data."""
    context = data.get("context", {})
    if not isinstance(context, dict):
        raise SkillError(f"before_turn: data.context must be an object, got {type(context).__name__}")
    return {**data, "context": {**context, "skills": skills_context(discover_for(request))}}


@worker.tool("skill_load")
def skill_load(arguments: dict[str, Any], request: Request) -> str:
    """The body of the named skill (the SKILL.md text after its front matter)."""
    skill = find_skill(discover_for(request), arguments.get("name"))
    _, body = load_skill(skill.source, skill.folder)
    return body


@worker.tool("skill_read")
def skill_read(arguments: dict[str, Any], request: Request) -> str:
    """A file the named skill references, by a path relative to the skill's folder."""
    skill = find_skill(discover_for(request), arguments.get("name"))
    return read_skill_file(skill, arguments.get("path"))
