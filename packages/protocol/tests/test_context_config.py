from __future__ import annotations

import os
import time

import orjson
import pytest

from i_protocol import ConfigError, ContextError, Paths, paths_from_env, paths_from_request, validate_paths
from i_protocol.config import ConfigCache, discover_config_path, load_config_file
from i_protocol.host import WorkerProcess


def test_paths_from_env_use_each_variable_and_platformdirs_for_the_rest(tmp_path):
    env = {"I_CONFIG_DIR": str(tmp_path / "c"), "I_DATA_DIR": str(tmp_path / "d")}
    paths = paths_from_env(env)
    assert paths.config_dir == str(tmp_path / "c") and paths.data_dir == str(tmp_path / "d")
    import platformdirs

    assert paths.cache_dir == platformdirs.user_cache_dir("i", appauthor=False)
    assert paths.runtime_dir == platformdirs.user_runtime_dir("i", appauthor=False)


def test_relative_env_directory_is_refused():
    with pytest.raises(ContextError, match="I_DATA_DIR must be an absolute path"):
        paths_from_env({"I_DATA_DIR": "relative/data"})


def test_env_directories_follow_the_same_nesting_rule(tmp_path):
    env = {
        key: str(tmp_path / name)
        for key, name in [
            ("I_CONFIG_DIR", "c"),
            ("I_DATA_DIR", "cache/d"),
            ("I_CACHE_DIR", "cache"),
            ("I_RUNTIME_DIR", "r"),
        ]
    }
    with pytest.raises(ContextError, match=r"data_dir .* must not lie under paths.cache_dir"):
        paths_from_env(env)


def test_a_symlink_cannot_hide_config_under_the_cache(tmp_path):
    cache = tmp_path / "cache"
    (cache / "real-config").mkdir(parents=True)
    alias = tmp_path / "config-link"
    alias.symlink_to(cache / "real-config")
    with pytest.raises(ContextError, match="config_dir"):
        validate_paths(Paths(str(alias), str(tmp_path / "d"), str(cache), str(tmp_path / "r")))


def test_sibling_prefix_is_not_containment(tmp_path):
    # /x/cache-data is not under /x/cache even though the string starts with it.
    paths = Paths(str(tmp_path / "c"), str(tmp_path / "cache-data"), str(tmp_path / "cache"), str(tmp_path / "r"))
    assert validate_paths(paths) is paths


def test_unknown_paths_field_is_refused():
    with pytest.raises(ContextError, match="unknown field"):
        paths_from_request({"config_dir": "/c", "data_dir": "/d", "cache_dir": "/k", "runtime_dir": "/r", "home": "/h"})


def test_config_discovery_explicit_then_config_dir(tmp_path):
    assert discover_config_path("web", str(tmp_path)) == (str(tmp_path / "web.json"), False)
    explicit, is_explicit = discover_config_path("web", str(tmp_path), "conf/w.json")
    assert is_explicit and explicit == os.path.abspath("conf/w.json")


def test_missing_optional_config_is_empty_but_missing_explicit_is_an_error(tmp_path):
    assert load_config_file(str(tmp_path / "none.json"), required=False).data == {}
    with pytest.raises(ConfigError, match="does not exist"):
        load_config_file(str(tmp_path / "none.json"), required=True)


@pytest.mark.parametrize("content, message", [(b"{oops", "is not valid JSON"), (b"[1]", "must be a JSON object")])
def test_invalid_config_names_the_file_and_the_problem(tmp_path, content, message):
    path = tmp_path / "m.json"
    path.write_bytes(content)
    with pytest.raises(ConfigError, match=message) as info:
        load_config_file(str(path), required=False)
    assert str(path) in str(info.value)


def test_relative_paths_in_a_config_resolve_against_its_folder(tmp_path):
    path = tmp_path / "conf" / "compact.json"
    path.parent.mkdir()
    path.write_bytes(b'{"prompt":"prompts/compact.txt"}')
    config = load_config_file(str(path), required=False)
    assert config.resolve(config.data["prompt"]) == str(tmp_path / "conf" / "prompts" / "compact.txt")
    assert config.resolve("/abs/p.txt") == "/abs/p.txt"


def test_config_cache_rereads_only_when_the_file_changes(tmp_path):
    path = tmp_path / "m.json"
    path.write_bytes(b'{"v":1}')
    cache = ConfigCache()
    first = cache.load(str(path), required=False)
    assert cache.load(str(path), required=False) is first
    time.sleep(0.01)
    path.write_bytes(b'{"v":22}')
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10_000_000))
    assert cache.load(str(path), required=False).data == {"v": 22}


def test_worker_resolves_paths_and_config_from_request_then_env(fixture_argv, worker_env, dirs, tmp_path):
    (tmp_path / "config" / "fixture.json").write_bytes(orjson.dumps({"from": "config_dir"}))
    other = {key: str(tmp_path / "other" / key) for key in dirs}
    (tmp_path / "other" / "config_dir").mkdir(parents=True)
    (tmp_path / "other" / "config_dir" / "fixture.json").write_bytes(b'{"from":"request paths"}')
    worker = WorkerProcess.spawn(fixture_argv(), env=worker_env)
    try:
        from_env = worker.call("context", {})
        assert from_env["paths"] == dirs
        assert from_env["config"] == {"from": "config_dir"}
        from_request = worker.call("context", {}, context={"paths": other})
        assert from_request["paths"] == other and from_request["config"] == {"from": "request paths"}
    finally:
        worker.close()


def test_explicit_config_flag_wins(fixture_argv, worker_env, tmp_path):
    explicit = tmp_path / "explicit.json"
    explicit.write_bytes(b'{"from":"--config"}')
    (tmp_path / "config" / "fixture.json").write_bytes(b'{"from":"config_dir"}')
    worker = WorkerProcess.spawn(fixture_argv("--config", str(explicit)), env=worker_env)
    try:
        reply = worker.call("context", {})
        assert reply["config"] == {"from": "--config"} and reply["config_path"] == str(explicit)
    finally:
        worker.close()
