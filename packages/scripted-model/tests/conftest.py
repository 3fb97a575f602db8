"""The tests' HTTP client lives in scripted_http.py, importable from every test module."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
