"""i-worker-web: web fetch and search for the i agent runtime, refusing non-public addresses."""

from .__about__ import __version__
from .errors import WebError

__all__ = ["WebError", "__version__"]
