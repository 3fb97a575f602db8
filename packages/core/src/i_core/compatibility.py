"""Which worker releases this core works with: the oldest version of each of our worker packages
(docs/compatibility.md, "This core and the workers"; a core test compares the two). An older one
is ``incompatible`` for ``i --runtime versions`` and ``check``, and the ``hello`` handshake
(``i_core.handshake``) refuses it at its first call, before it is used.
"""

from __future__ import annotations

OLDEST_WORKERS: dict[str, str] = {
    # 0.1.x estimates at 1 byte per token: a real reduction looks like not_reducing to this core.
    "i-worker-budget": "0.2.0",
    "i-worker-compact": "0.1.0",
    "i-worker-cache": "0.1.0",
    "i-worker-memory": "0.1.0",
    "i-worker-web": "0.1.0",
    "i-worker-mcp": "0.1.0",
}
