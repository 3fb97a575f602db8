"""The MCP worker: ``tools_list`` announces the servers' tools, ``tool`` calls them.

Its tools are not known when the program starts, so they cannot be registered by name like the
tools of other workers: ``McpWorker`` answers every ``tool`` request from the catalog of the
request's mcp.json. The catalog comes from each server's cached tool list, so a session starts
without starting any server; only a server with no cached list is started (and listed) then.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from i_protocol import Request, Worker, WorkerError
from i_protocol.files import file_stamp

from . import cache
from .__about__ import __version__
from .errors import McpConfigError, ServerFailure
from .naming import exposed_name
from .settings import ServerSpec, parse_servers

if TYPE_CHECKING:
    from collections.abc import Sequence

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


class McpWorker(Worker):
    """A worker whose tools are found at run time: the catalog answers every ``tool`` request."""

    def __init__(self) -> None:
        super().__init__("mcp", __version__, dist_name="i-worker-mcp")
        # Declared in `hello` (SPEC §3.4); an attribute, so an older i-protocol only ignores it.
        self.extensions = ("tools_list",)
        self._servers: Servers | None = None
        self._catalogs: dict[tuple[str, ...], Catalog] = {}

    @property
    def servers(self) -> Servers:
        """The running servers; the MCP SDK (~0.4 s to import) loads only when a server is needed."""
        if self._servers is None:
            from .client import Servers

            self._servers = Servers()
        return self._servers

    def catalog(self, request: Request) -> Catalog:
        """The catalog of the request's mcp.json (remembered while the entries and cache dir are the same)."""
        config_stamp = file_stamp(request.config_path())  # before it is read
        config = request.config()
        specs = parse_servers(config.data, config.path or "mcp.json", config.base_dir)
        key = (request.paths.cache_dir, *(spec.digest for spec in specs))
        found = self._catalogs.get(key)
        if found is None:
            found = self._catalogs[key] = self._build(specs, request, config_stamp)
        return found

    def _build(self, specs: tuple[ServerSpec, ...], request: Request, config_stamp: dict[str, Any]) -> Catalog:
        cache_dir = request.paths.cache_dir
        stamps = {spec.digest: file_stamp(cache.cache_file(cache_dir, spec.digest)) for spec in specs}
        listed = {spec.digest: cache.load_tools(cache_dir, spec.digest) for spec in specs}
        missing = tuple(spec for spec in specs if listed[spec.digest] is None)
        if missing:
            for spec, tools in zip(missing, self.servers.list_tools(missing, request.workspace), strict=True):
                cache.store_tools(cache_dir, spec.digest, spec.name, tools)
                listed[spec.digest] = tools
                stamps[spec.digest] = file_stamp(cache.cache_file(cache_dir, spec.digest))  # what it now holds
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
        return Catalog(tuple(schemas.values()), targets, (config_stamp, *stamps.values(), *code))

    def main(self, argv: Sequence[str] | None = None) -> int:
        """``Worker.main``, then every server stopped (its stdin closed, its process tree ended)."""
        try:
            return super().main(argv)
        finally:
            if self._servers is not None:
                self._servers.close_all(grace=EXIT_GRACE_S)

    def _call_tool(self, request: Request) -> dict[str, Any]:
        """Override of ``Worker._call_tool``: look the name up in the catalog, call its server."""
        name = request.data.get("name")
        arguments = request.data.get("arguments", {})
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise WorkerError("tool request needs a string data.name and an object data.arguments")
        catalog = self.catalog(request)
        target = catalog.targets.get(name)
        if target is None:
            known = ", ".join(catalog.targets) or "none (mcp.json names no server)"
            raise WorkerError(f"unknown tool {name!r}; the MCP servers of mcp.json provide: {known}")
        spec, tool = target
        from .content import tool_answer

        try:
            result, fresh = self.servers.call(spec, tool, arguments, request.workspace)
        except ServerFailure as exc:
            return {"output": f"error: {exc}", "is_error": True}
        if fresh is not None:
            cache.store_tools(request.paths.cache_dir, spec.digest, spec.name, fresh)
        return tool_answer(result)


def _parameters(spec: ServerSpec, tool: dict[str, Any]) -> dict[str, Any]:
    schema = tool["input_schema"]
    kind = schema.get("type", "object")
    if kind != "object":
        raise McpConfigError(
            f'{spec.where}: tool {tool["name"]!r} has an input schema of type {kind!r}; a tool\'s must be "object"'
        )
    return {**schema, "type": "object"}


worker = McpWorker()


@worker.hook("tools_list")
def tools_list(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Announce the tools of every server in mcp.json (none when it names no server).

    ``depends_on`` stamps mcp.json, each server's cached tool list and this package's code: while
    they are unchanged the core may reuse the answer without starting this worker.
    """
    from i_protocol.events import to_json  # the event types: at the first request, not at start

    catalog = worker.catalog(request)
    return to_json("tools_list", {**data, "tools": list(catalog.schemas), "depends_on": list(catalog.stamps)}, data)
