"""The handlers' routes: one module per event (and per ``before_compact`` route)."""
