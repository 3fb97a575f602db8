"""Which worker releases this core works with: the oldest version of each of our worker packages
(docs/compatibility.md, "This core and the workers"; a core test compares the two). An older one
is ``incompatible`` for ``i --runtime versions`` and ``check``, and the ``hello`` handshake
(``i_core.handshake``) refuses it at its first call, before it is used.

``USED_BEFORE_DECLARING``: what our releases from before the extension declarations exchange. The
core reads an optional field only from a worker that declared its extension; a release of ours
that cannot declare is known by its package and version instead (its ``hello``, or its
``--version`` line), and the table declares for it.
"""

from __future__ import annotations

from i_protocol.handshake import Hello

from . import preflight

OLDEST_WORKERS: dict[str, str] = {
    # 0.1.x estimates at 1 byte per token: a real reduction looks like not_reducing to this core.
    "i-worker-budget": "0.2.0",
    "i-worker-compact": "0.1.0",
    "i-worker-cache": "0.1.0",
    "i-worker-memory": "0.1.0",
    "i-worker-web": "0.1.0",
    "i-worker-mcp": "0.1.0",
    "i-worker-checkpoint": "0.1.0",
}

USED_BEFORE_DECLARING: dict[str, tuple[str, frozenset[str]]] = {
    # package: (the first release that declares in hello, the extensions the earlier ones use)
    "i-worker-budget": ("0.2.3", frozenset({"cut_estimates", "rejection", "tool_output_budget"})),
    "i-worker-compact": (
        "0.2.4",
        frozenset({"after_compact_commit", "after_compact_rounds", "chunks", "cut_estimates", "previous_attempt"}),
    ),
    "i-worker-mcp": ("0.1.3", frozenset({"tools_list"})),
}
"""Without it, today's compactor gets no ``cut_estimates`` from i-worker-budget 0.2.2 and plans a
candidate that budget estimates at 5938 >= the anchored 5794 tokens (the skew matrix row "today's
core + previous i-worker-budget 0.2.2"): a previous release must keep working (the support policy)."""


def extensions_of(hello: Hello) -> frozenset[str]:
    """The extensions a worker declared, or that its release of ours uses without declaring them."""
    used = USED_BEFORE_DECLARING.get(hello.package or "")
    if used is None or hello.version is None or hello.extensions:
        return hello.extensions
    first, extensions = used
    return hello.extensions if preflight.fits(hello.version, f">={first}") else extensions
