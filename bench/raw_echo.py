"""Baseline: a bare Python pipe echo, one line in, the same line out, flushed."""

import sys

out = sys.stdout.buffer
for line in sys.stdin.buffer:
    out.write(line)
    out.flush()
