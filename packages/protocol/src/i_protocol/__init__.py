"""i-protocol: the NDJSON contract between the i core and its workers.

Worker authors need only ``Worker``, ``Request`` and ``WorkerError``; hosts use
``i_protocol.host.WorkerProcess`` (imported on demand so that workers start fast). The shared
contracts every package uses live in their own modules, imported where needed:
``i_protocol.history`` (the history format and its sizes), ``i_protocol.summary`` (the summary
request and its wrapper), ``i_protocol.secrets`` (secret patterns),
``i_protocol.files`` (bounded reads, locked updates), ``i_protocol.settings`` (field checks).
"""

from typing import TYPE_CHECKING

from .__about__ import PROTOCOL_VERSION, __version__
from .atomic import atomic_write_bytes
from .config import WorkerConfig
from .context import Paths, paths_from_env, paths_from_request, validate_paths
from .errors import (
    CallError,
    CallTimeout,
    ConfigError,
    ContextError,
    ErrorFrame,
    FileDecodeError,
    FileError,
    FileTooLarge,
    FrameError,
    HistoryError,
    LockTimeout,
    ProtocolError,
    SettingsError,
    WorkerError,
    WorkspaceError,
)
from .framing import MAX_FRAME_BYTES, decode_frame, encode_frame
from .worker import Request, Worker, exit_fast

if TYPE_CHECKING:
    from .budget import BudgetVerdict


def __getattr__(name: str) -> object:
    # What a worker's first frame does not need is imported on first use: ``BudgetVerdict`` (a
    # dataclass module) is the budget's and the core's, not every worker's start-up.
    if name == "BudgetVerdict":
        from .budget import BudgetVerdict

        return BudgetVerdict
    raise AttributeError(f"module 'i_protocol' has no attribute {name!r}")


__all__ = [
    "MAX_FRAME_BYTES",
    "PROTOCOL_VERSION",
    "BudgetVerdict",
    "CallError",
    "CallTimeout",
    "ConfigError",
    "ContextError",
    "ErrorFrame",
    "FileDecodeError",
    "FileError",
    "FileTooLarge",
    "FrameError",
    "HistoryError",
    "LockTimeout",
    "Paths",
    "ProtocolError",
    "Request",
    "SettingsError",
    "Worker",
    "WorkerConfig",
    "WorkerError",
    "WorkspaceError",
    "__version__",
    "atomic_write_bytes",
    "decode_frame",
    "encode_frame",
    "exit_fast",
    "paths_from_env",
    "paths_from_request",
    "validate_paths",
]
