"""i-protocol: the NDJSON contract between the i core and its workers.

Worker authors need only ``Worker``, ``Request`` and ``WorkerError``; hosts use
``i_protocol.host.WorkerProcess`` (imported on demand so that workers start fast).
"""

from .__about__ import PROTOCOL_VERSION, __version__
from .atomic import atomic_write_bytes
from .budget import BudgetVerdict
from .config import WorkerConfig
from .context import Paths, paths_from_env, paths_from_request, validate_paths
from .errors import (
    CallError,
    CallTimeout,
    ConfigError,
    ContextError,
    ErrorFrame,
    FrameError,
    ProtocolError,
    WorkerError,
    WorkspaceError,
)
from .framing import MAX_FRAME_BYTES, decode_frame, encode_frame
from .worker import Request, Worker

__all__ = [
    "MAX_FRAME_BYTES",
    "PROTOCOL_VERSION",
    "BudgetVerdict",
    "CallError",
    "CallTimeout",
    "ConfigError",
    "ContextError",
    "ErrorFrame",
    "FrameError",
    "Paths",
    "ProtocolError",
    "Request",
    "Worker",
    "WorkerConfig",
    "WorkerError",
    "WorkspaceError",
    "__version__",
    "atomic_write_bytes",
    "decode_frame",
    "encode_frame",
    "paths_from_env",
    "paths_from_request",
    "validate_paths",
]
