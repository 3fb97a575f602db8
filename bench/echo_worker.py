"""The smallest i_protocol worker: returns the data it gets. Used as the benchmark subject."""

import sys

from i_protocol import Worker

worker = Worker("echo", "0", dist_name="bench-echo")


@worker.hook("before_turn")
def before_turn(data, request):
    return data


if __name__ == "__main__":
    sys.exit(worker.main())
