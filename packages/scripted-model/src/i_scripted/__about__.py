"""Version of the i-scripted-model distribution (dev only, never a runtime dependency)."""

__version__ = "0.2.2"
