"""The MCP worker: ``tools_list`` announces the servers' tools, ``tool`` calls them.

Its tools are not known when the program starts, so they cannot be registered by name like the
tools of other workers: ``McpWorker`` answers every ``tool`` request from the catalog of the
request's mcp.json. The catalog comes from each server's cached tool list, so a session starts
without starting any server; only a server with no cached list is started (and listed) then.

A server that cannot be used (a broken entry, a program that is missing or exits, one still
starting) is left out and reported in the answer's ``problems`` when the request asks for them
(``tools_list`` data carrying ``problems: []``: a core that shows them, SPEC §3.4); otherwise, and
for a server marked ``"required": true``, ``tools_list`` fails as it always did, so an older core
never loses a server silently.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from i_protocol import Request, Worker, WorkerError
from i_protocol.files import file_stamp

from . import cache
from .__about__ import __version__
from .errors import McpConfigError, ServerFailure
from .naming import exposed_name
from .settings import ServerSpec, check_config, parse_config, worker_variables

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from .client import Servers

_CATALOG_CODE = ("i_mcp.__about__", "i_mcp.worker", "i_mcp.settings", "i_mcp.naming", "i_mcp.cache")
"""The modules whose code shapes a catalog (names, schemas, checks): an upgrade changes their stamps."""

EXIT_GRACE_S = 0.9
"""How long the worker waits for its servers at exit: within the core's 1 s grace after stdin closes."""


@dataclass(frozen=True)
class Catalog:
    """The tools of every configured server under the names the model sees."""

    schemas: tuple[dict[str, Any], ...]
    """``{name, description, parameters}`` for ``tools_list``."""
    targets: dict[str, tuple[ServerSpec, str]]
    """Model-facing name -> (server, the server's own tool name)."""
    stamps: tuple[dict[str, Any], ...] = ()
    """``file_stamp`` of every file the catalog was built from (``tools_list``'s ``depends_on``)."""
    problems: tuple[dict[str, Any], ...] = ()
    """``{server, reason, message, stderr_tail}`` of each server left out (``tools_list``'s ``problems``)."""


class McpWorker(Worker):
    """A worker whose tools are found at run time: the catalog answers every ``tool`` request."""

    def __init__(self) -> None:
        super().__init__("mcp", __version__, dist_name="i-worker-mcp")
        # Declared in `hello` (SPEC §3.4); an attribute, so an older i-protocol only ignores it.
        self.extensions = ("config_kind", "problems", "progress", "tools_list")
        self._servers: Servers | None = None
        self._catalogs: dict[tuple[str, ...], Catalog] = {}

    @property
    def servers(self) -> Servers:
        """The running servers; the MCP SDK (~0.4 s to import) loads only when a server is needed."""
        if self._servers is None:
            from .client import Servers

            self._servers = Servers()
        return self._servers

    def catalog(self, request: Request, *, lenient: bool = False) -> Catalog:
        """The catalog of the request's mcp.json (remembered while the entries and cache dir are the same,
        unless a server was left out). ``lenient``: a server that cannot be used is left out and said in
        ``problems`` (unless it is required); otherwise it fails the request."""
        config_stamp = file_stamp(request.config_path())  # before it is read
        config = request.config()
        parsed = parse_config(
            config.data, config.path or "mcp.json", config.base_dir, worker_variables(request.paths.as_dict())
        )
        problems: list[dict[str, Any]] = []
        for entry in parsed.broken:
            if entry.required or not lenient:
                raise entry.error
            problems.append(_problem(entry.name, "config", str(entry.error)))
        specs = parsed.specs
        project, project_stamp = _project_servers(request, {spec.name for spec in specs}, problems)
        specs = (*specs, *project)
        key = (request.paths.cache_dir, *(spec.digest for spec in specs))
        found = self._catalogs.get(key)
        if found is None or (found.problems and request.event == "tools_list"):  # a new session tries again
            found = self._catalogs[key] = self._build(specs, request, config_stamp, lenient)
        if project_stamp is not None:  # the answer depends on the project's file too
            found = Catalog(found.schemas, found.targets, (*found.stamps, project_stamp), found.problems)
        if problems:
            found = Catalog(found.schemas, found.targets, found.stamps, (*problems, *found.problems))
        return found

    def _build(
        self, specs: tuple[ServerSpec, ...], request: Request, config_stamp: dict[str, Any], lenient: bool
    ) -> Catalog:
        cache_dir = request.paths.cache_dir
        stamps = {spec.digest: file_stamp(cache.cache_file(cache_dir, spec.digest)) for spec in specs}
        listed = {spec.digest: cache.load_tools(cache_dir, spec.digest) for spec in specs}
        missing = tuple(spec for spec in specs if listed[spec.digest] is None)
        problems: list[dict[str, Any]] = []
        if missing:

            def keep(spec: ServerSpec, tools: list[dict[str, Any]]) -> None:
                cache.store_tools(cache_dir, spec.digest, spec.name, tools)

            for spec, got in zip(missing, self.servers.list_tools(missing, request.workspace, keep), strict=True):
                if got.tools is not None:
                    listed[spec.digest] = got.tools
                    stamps[spec.digest] = file_stamp(cache.cache_file(cache_dir, spec.digest))  # what it now holds
                    continue
                if got.starting and (spec.required or not lenient):
                    raise ServerFailure(
                        f"MCP server {spec.name!r} did not finish starting within {self.servers.list_wait:g} s"
                    )
                if got.failure is not None and (spec.required or not lenient):
                    raise got.failure
                problems.append(
                    _problem(
                        spec.name,
                        "starting",
                        f"MCP server {spec.name!r} is still starting; its tools are offered from the next session on",
                    )
                    if got.starting
                    else _problem(
                        spec.name,
                        "config" if isinstance(got.failure, McpConfigError) else "failed",
                        str(got.failure),
                        getattr(got.failure, "stderr_tail", ""),
                    )
                )
        schemas: dict[str, dict[str, Any]] = {}
        targets: dict[str, tuple[ServerSpec, str]] = {}
        for spec in specs:
            for tool in listed[spec.digest] or ():
                name = exposed_name(spec.name, tool["name"])
                if name in targets:
                    other, original = targets[name]
                    raise McpConfigError(
                        f"{spec.where}: tool {tool['name']!r} would be called {name!r}, like tool {original!r} "
                        f"of server {other.name!r}; rename one of the servers"
                    )
                targets[name] = (spec, tool["name"])
                schemas[name] = {
                    "name": name,
                    "description": f"(MCP server {spec.name!r}, tool {tool['name']!r}) {tool['description']}".strip(),
                    "parameters": _parameters(spec, tool),
                }
        code = (file_stamp(sys.modules[name].__file__ or name) for name in _CATALOG_CODE)
        return Catalog(tuple(schemas.values()), targets, (config_stamp, *stamps.values(), *code), tuple(problems))

    def main(self, argv: Sequence[str] | None = None) -> int:
        """``Worker.main``, then every server stopped (its stdin closed, its process tree ended)."""
        args = list(sys.argv[1:] if argv is None else argv)
        if "--list" in args:
            from .listing import list_servers

            return list_servers(args)
        try:
            return super().main(args)
        finally:
            if self._servers is not None:
                self._servers.close_all(grace=EXIT_GRACE_S)

    def _call_tool(self, request: Request) -> dict[str, Any]:
        """Override of ``Worker._call_tool``: look the name up in the catalog, call its server."""
        name = request.data.get("name")
        arguments = request.data.get("arguments", {})
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise WorkerError("tool request needs a string data.name and an object data.arguments")
        catalog = self.catalog(request, lenient=True)  # a broken entry does not stop the others' calls
        target = catalog.targets.get(name)
        if target is None:
            known = ", ".join(catalog.targets) or "none (mcp.json names no server)"
            raise WorkerError(f"unknown tool {name!r}; the MCP servers of mcp.json provide: {known}")
        spec, tool = target
        from .content import tool_answer

        # getattr: an i-protocol from before progress frames has no wants_progress (and no host sends it).
        report = _relay(request) if getattr(request, "wants_progress", False) else None
        try:
            result, fresh = self.servers.call(spec, tool, arguments, request.workspace, report)
        except (ServerFailure, McpConfigError) as exc:  # an unreadable token file too: this call fails, not the session
            return {"output": f"error: {exc}", "is_error": True}
        if fresh is not None:
            cache.store_tools(request.paths.cache_dir, spec.digest, spec.name, fresh)
        return tool_answer(result)


def _project_servers(
    request: Request, taken: set[str], problems: list[dict[str, Any]]
) -> tuple[tuple[ServerSpec, ...], dict[str, Any] | None]:
    """The servers of the project's ``.mcp.json`` the core passed as approved (``mcp_project: {path,
    sha256}``, request context), and the file's stamp; a file changed since its approval, a broken
    entry or a name the user's mcp.json already has is left out and said in ``problems``."""
    project = request.frame.get("mcp_project")
    if not isinstance(project, dict) or not isinstance(project.get("path"), str):
        return (), None
    import hashlib
    import os

    import orjson

    from i_protocol.files import read_bytes

    path = project["path"]
    stamp = file_stamp(path)  # before it is read
    try:
        content = read_bytes(path, 1024 * 1024, what="project .mcp.json")
        data = orjson.loads(content)
    except (OSError, ValueError, WorkerError) as exc:
        problems.append(_problem(".mcp.json", "config", f"{path}: cannot be read: {exc}"))
        return (), stamp
    if hashlib.sha256(content).hexdigest() != project.get("sha256") or not isinstance(data, dict):
        problems.append(_problem(".mcp.json", "config", f"{path} changed since it was approved; it is not used"))
        return (), stamp
    try:
        parsed = parse_config(
            data, path, os.path.dirname(path), worker_variables(request.paths.as_dict()), trusted=False
        )
    except McpConfigError as exc:
        problems.append(_problem(".mcp.json", "config", str(exc)))
        return (), stamp
    problems += [_problem(entry.name, "config", str(entry.error)) for entry in parsed.broken]
    kept = []
    for spec in parsed.specs:
        if spec.name in taken:
            problems.append(
                _problem(
                    spec.name,
                    "config",
                    f"{spec.where}: the user's mcp.json names a server {spec.name!r} too; the project's is not used",
                )
            )
            continue
        # Never required: a project file cannot stop a session.
        kept.append(replace(spec, required=False, cwd=spec.cwd or request.workspace))
    return tuple(kept), stamp


def _relay(request: Request) -> Callable[[dict[str, Any]], object]:
    def report(update: dict[str, Any]) -> object:
        return request.report_progress(update.get("message"), update.get("progress"), update.get("total"))

    return report


def _problem(server: str, reason: str, message: str, stderr_tail: str = "") -> dict[str, Any]:
    return {"server": server, "reason": reason, "message": message, "stderr_tail": stderr_tail}


def _parameters(spec: ServerSpec, tool: dict[str, Any]) -> dict[str, Any]:
    schema = tool["input_schema"]
    kind = schema.get("type", "object")
    if kind != "object":
        raise McpConfigError(
            f'{spec.where}: tool {tool["name"]!r} has an input schema of type {kind!r}; a tool\'s must be "object"'
        )
    return {**schema, "type": "object"}


worker = McpWorker()
# Not at each request: tools_list reads mcp.json at every request and says what is broken in problems.
if hasattr(worker, "config_check"):  # an older i-protocol has no config checks
    worker.config_check(at_request=False)(check_config)


@worker.hook("tools_list")
def tools_list(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Announce the tools of every server in mcp.json (none when it names no server).

    ``depends_on`` stamps mcp.json, each server's cached tool list and this package's code: while
    they are unchanged the core may reuse the answer without starting this worker.
    """
    from i_protocol.events import to_json  # the event types: at the first request, not at start

    lenient = isinstance(data.get("problems"), list)  # the core shows problems: leave a broken server out
    catalog = worker.catalog(request, lenient=lenient)
    answer = {**data, "tools": list(catalog.schemas), "depends_on": list(catalog.stamps)}
    if lenient:
        answer["problems"] = [*data["problems"], *catalog.problems]
    return to_json("tools_list", answer, data)
