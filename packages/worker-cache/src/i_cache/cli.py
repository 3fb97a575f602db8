"""``i-cache report -C PROJECT [--config FILE] [--json]``: the report command the core runs."""

from __future__ import annotations

import argparse
import sys

from i_protocol import ProtocolError


def run_report(argv: list[str]) -> int:
    """Print the cache report of a project; exit 0, 1 on a stats/workspace error, 2 on bad usage."""
    parser = argparse.ArgumentParser(
        prog="i-cache report",
        description="Observed prompt-cache hit ratio of a workspace (Σ cache-read input / Σ input).",
    )
    parser.add_argument("-C", dest="project", required=True, help="project (workspace) directory")
    parser.add_argument("--config", help="cache.json to use instead of CONFIG_DIR/cache.json")
    parser.add_argument("--json", action="store_true", help="print the stable JSON schema instead of a table")
    args = parser.parse_args(argv)

    import orjson

    from i_protocol import paths_from_env
    from i_protocol.config import discover_config_path, load_config_file
    from i_protocol.workspace import canonical_workspace, workspace_id_for, workspace_state_dir

    from .report import build_report, render_table
    from .settings import parse_settings
    from .stats import read_stats

    try:
        paths = paths_from_env()
        config_path, explicit = discover_config_path("cache", paths.config_dir, args.config)
        config = load_config_file(config_path, required=explicit)
        settings = parse_settings(config.data, config.path or config_path)
    except ProtocolError as exc:
        print(f"i-cache report: {exc}", file=sys.stderr)
        return 2
    try:
        workspace = canonical_workspace(args.project)
        workspace_id = workspace_id_for(workspace, paths.data_dir)
        stats_path = workspace_state_dir(workspace_id, paths.data_dir) / settings.stats
        doc = read_stats(stats_path)
    except ProtocolError as exc:
        print(f"i-cache report: {exc}", file=sys.stderr)
        return 1
    report = build_report(doc, settings, workspace=workspace, workspace_id=workspace_id, stats_file=str(stats_path))
    if args.json:
        sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(render_table(report))
    return 0
