"""Eight writers on one stats file where (inode, mtime, size) repeat: no update may be lost.

The worker keeps the document it wrote last, to skip a parse when the file is still that very
version. On a file system with coarse timestamps and reused inode numbers, a file's identity as
``stat`` sees it repeats across versions, so the check must not rest on it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from i_protocol.host import WorkerProcess
from i_protocol.testing import scaled

from .conftest import EXE, Env, chat_body, request_data

HERE = Path(__file__).parent
WRITERS = 8
UPDATES = 150  # per writer: before_request and after_response alternately
# On the real image a stale reuse needs a same-second, same-size version in a reused inode: before
# the fix, 8 x 1000 updates lost counts in about one run of three here (35-63 each); 8 x 150 never did.
EXT2_UPDATES = 1000


def drive(env: Env, workers: list[WorkerProcess], updates: int = UPDATES) -> None:
    barrier = threading.Barrier(len(workers))
    failures: list[BaseException] = []

    def run(worker: WorkerProcess, index: int) -> None:
        try:
            barrier.wait(timeout=scaled(60))
            for round_ in range(updates // 2):
                data = request_data(chat_body(round_ % 7, system=f"writer {index}"))
                meta = env.call(worker, "before_request", data)["request_meta"]
                usage = {"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 40}}
                env.call(
                    worker, "after_response", {"protocol": "openai", "response": {"usage": usage}, "request_meta": meta}
                )
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(w, i)) for i, w in enumerate(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=scaled(300))
    assert not failures, failures


def check_no_lost_update(env: Env, updates: int = UPDATES) -> None:
    totals = env.stats()["totals"]
    rounds = WRITERS * updates // 2
    lost = {
        key: rounds * unit - totals[key]
        for key, unit in (
            ("prepared", 1),
            ("preparations", 1),
            ("observed", 1),
            ("known", 1),
            ("input_tokens", 100),
            ("cache_read_tokens", 40),
        )
    }
    assert lost == dict.fromkeys(lost, 0), f"lost counts: {lost}"
    assert not list(env.stats_path().parent.glob("*.corrupt-*"))


def test_a_coarse_reused_file_identity_loses_no_update(env: Env) -> None:
    workers = []
    for _ in range(WRITERS):
        worker = WorkerProcess.spawn(
            [sys.executable, str(HERE / "coarse_stat_worker.py")], env=env.env, cwd=str(env.root)
        )
        env.workers.append(worker)
        workers.append(worker)
    drive(env, workers)
    check_no_lost_update(env)


def _ext2_unavailable() -> str | None:
    if sys.platform != "linux":
        return "ext2 loop mounts are Linux only"
    if os.geteuid() != 0:
        return "mounting a loop image needs root"
    for tool in ("mkfs.ext2", "mount", "umount"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if not os.path.exists("/dev/loop-control"):
        return "no loop devices (/dev/loop-control)"
    return None


@pytest.fixture
def ext2_dir(tmp_path: Path):
    reason = _ext2_unavailable()
    if reason:
        pytest.skip(reason)
    image, mount = tmp_path / "ext2.img", tmp_path / "mnt"
    mount.mkdir()
    with image.open("wb") as handle:
        handle.truncate(32 * 1024 * 1024)
    # 128-byte inodes: one-second timestamps, as on the machine where counts were lost.
    made = subprocess.run(["mkfs.ext2", "-q", "-F", "-I", "128", str(image)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"mkfs.ext2 failed: {made.stderr.strip()}")
    mounted = subprocess.run(["mount", "-o", "loop", str(image), str(mount)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a loop image here: {mounted.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


def test_a_real_ext2_image_loses_no_update(tmp_path: Path, ext2_dir: Path) -> None:
    env = Env(tmp_path / "box")
    env.data_dir = ext2_dir / "data"  # the stats file (and its lock) live on the ext2 image
    env.data_dir.mkdir()
    workers = []
    try:
        for _ in range(WRITERS):
            worker = WorkerProcess.spawn([str(EXE)], env=env.env, cwd=str(env.root))
            env.workers.append(worker)
            workers.append(worker)
        drive(env, workers, EXT2_UPDATES)
        check_no_lost_update(env, EXT2_UPDATES)
    finally:
        for worker in env.workers:
            worker.close()


def test_the_header_leads_the_document_and_an_old_file_is_upgraded(tmp_path: Path) -> None:
    import orjson

    from i_cache import stats

    path = tmp_path / "cache-stats.json"
    old = stats.empty_stats()
    del old["file_id"], old["generation"]  # a file written before the header existed
    path.write_bytes(orjson.dumps(old))
    stats._written.clear()
    with stats.locked_stats(path) as doc:
        stats.bump(doc, None, None, "prepared")
    head = path.read_bytes()[:128]
    assert stats._HEADER.match(head), head
    first = orjson.loads(path.read_bytes())
    assert list(first)[:3] == ["version", "file_id", "generation"] and first["generation"] == 1
    # Another writer's version in the same (inode, mtime, size) is still seen: the generation moved on.
    other = dict(first, generation=2, totals=dict(first["totals"], prepared=5))
    path.write_bytes(orjson.dumps(other))
    (stamp, _), memo = stats._written[str(path)]
    stats._written[str(path)] = ((stamp, stats._signature(path)), memo)  # stat cannot tell them apart
    with stats.locked_stats(path) as doc:
        stats.bump(doc, None, None, "prepared")
    again = orjson.loads(path.read_bytes())
    assert again["totals"]["prepared"] == 6 and again["generation"] == 3 and again["file_id"] == first["file_id"]
