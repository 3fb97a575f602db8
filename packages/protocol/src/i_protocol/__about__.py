"""Version of the i-protocol distribution and of the wire protocol it speaks."""

__version__ = "0.2.6"
# The wire protocol's own version: bumped only when a frame or context rule changes.
PROTOCOL_VERSION = "1"
