"""The real i-cache worker, with an injected file system whose stat is coarse and reuses identities.

Every ``os.stat`` that ``i_cache.stats`` makes of a ``.json`` file reports the same inode, mtime and
size: what ext2 (one-second timestamps, an inode number reused at once) or a FAT/SMB share can
report for two different versions of the stats file written within one tick.
"""

from __future__ import annotations

import os
import sys
import types

import i_cache.stats as stats
from i_cache.worker import worker

_real_stat = os.stat
_TICK_NS = 1_700_000_000 * 10**9


def coarse_stat(path, *args, **kwargs):  # type: ignore[no-untyped-def]
    st = _real_stat(path, *args, **kwargs)
    if not os.fspath(path).endswith(".json"):
        return st
    seconds = _TICK_NS // 10**9
    return os.stat_result(
        (
            st.st_mode,
            4242,
            st.st_dev,
            st.st_nlink,
            st.st_uid,
            st.st_gid,
            65536,
            seconds,
            seconds,
            seconds,
            float(seconds),
            float(seconds),
            float(seconds),
            _TICK_NS,
            _TICK_NS,
            _TICK_NS,
        )
    )


class CoarseOs(types.ModuleType):
    """``os`` as ``i_cache.stats`` sees it: everything real except ``stat``."""

    stat = staticmethod(coarse_stat)

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(os, name)


stats.os = CoarseOs("os")  # type: ignore[assignment]

if __name__ == "__main__":
    sys.exit(worker.main())
