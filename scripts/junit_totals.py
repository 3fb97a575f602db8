"""Sum the JUnit XML reports of every tox env into one closing line: 'N passed, N failed'."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def main(folder: str) -> int:
    passed = failed = skipped = 0
    reports = sorted(Path(folder).glob("*.xml"))
    for report in reports:
        for suite in ET.parse(report).getroot().iter("testsuite"):
            tests = int(suite.get("tests", 0))
            bad = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
            skip = int(suite.get("skipped", 0))
            failed += bad
            skipped += skip
            passed += tests - bad - skip
    print(f"{len(reports)} test reports")
    print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or not reports or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
