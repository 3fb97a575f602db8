"""Settings every test tree of this checkout shares (pytest loads this file for each of them).

Hypothesis' per-example deadline and its "too slow" health check are wall-clock bounds: on a
loaded machine (both cores busy) they fail tests whose code is correct. Property tests here judge
behaviour only; their timings belong in ``bench/``. The test time scale itself is
``i_protocol.testing.scaled`` (``I_TEST_TIME_SCALE``, default 4).
"""

from __future__ import annotations

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # an env without hypothesis (lint, type) never runs the property tests
    pass
else:
    settings.register_profile("i", deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("i")
