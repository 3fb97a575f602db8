"""A tool worker: ``word_count`` counts the words of a text (seed 001's example, on i_protocol)."""

import sys

from i_protocol import Worker, WorkerError

worker = Worker("wordcount", "1.0.0", dist_name="word-count")


@worker.tool("word_count")
def word_count(arguments, request):
    """The number of whitespace-separated words of ``text``."""
    text = arguments.get("text")
    if not isinstance(text, str):
        raise WorkerError("word_count: 'text' must be a string")
    return str(len(text.split()))


if __name__ == "__main__":
    sys.exit(worker.main())
