"""Stopping work the user is no longer waiting for: the compaction prepared in the background
(``prepare``) is stopped when the user's next line arrives.

``Cancelled`` is not a ``CoreError``: it never reaches the user. The preparation thread ends on it
and keeps nothing; the hook runner raises it before a worker call once its stop flag is set, and a
cancelled ``Transport`` raises it at once from a request in flight (its connection shut down).
"""

from __future__ import annotations


class Cancelled(Exception):
    """The work was stopped on purpose (the user's turn comes first); nothing of it is kept."""
