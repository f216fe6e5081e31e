"""``pypto-build cache stats|prune``: the compile cache's entries, size and last build, and its
pruning (the build records counted against the bound)."""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING

from pypto_build.errors import ExitCode
from pypto_build.plugin.cli_common import (
    add_json_option,
    human_size,
    print_error,
    print_json,
    print_warning,
)
from pypto_build.store.location import default_cache_dir

if TYPE_CHECKING:
    from pypto_build.plugin.cli_common import Subparsers


def register(commands: Subparsers) -> None:
    """Add ``cache`` to the main parser's subcommands."""
    parser = commands.add_parser(
        "cache",
        help="show or prune the compile cache",
        description=f"The compile cache lives in $PYPTO_CACHE_DIR (now: {default_cache_dir()}).",
    )
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    stats = actions.add_parser("stats", help="entries, size and the last build's hits")
    add_json_option(stats, "print JSON on stdout")
    stats.set_defaults(command=_cache_stats)
    prune = actions.add_parser("prune", help="evict least recently used entries")
    limit = prune.add_mutually_exclusive_group(required=True)
    limit.add_argument(
        "--max-size", type=_size, metavar="SIZE", help="keep at most SIZE (500M, 2G, 1.5GiB)"
    )
    limit.add_argument("--all", action="store_true", help="remove every entry")
    add_json_option(prune, "print JSON on stdout")
    prune.set_defaults(command=_cache_prune)


def _size(text: str) -> int:
    from pypto_build.store.size_limit import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _cache_stats(args: argparse.Namespace) -> int:
    from pypto_build.chip_build.compile_cache.cache import CompileCache

    stats = CompileCache(default_cache_dir()).stats()
    last = stats.last_build
    if args.json:
        document = {
            "root": str(stats.root),
            "entries": stats.entries,
            "bytes": stats.size,
            "last_build": None if last is None else dataclasses.asdict(last),
        }
        print_json(document)
        return ExitCode.OK
    print(f"cache: {stats.root}")
    print(f"entries: {stats.entries}")
    print(f"size: {human_size(stats.size)}")
    recorded = "none recorded"
    if last is not None:
        remote = f" ({last.remote_hits} from the remote)" if last.remote_hits else ""
        recorded = f"{last.hits} hits{remote} / {last.misses} misses"
    print(f"last build: {recorded}")
    return ExitCode.OK


def _cache_prune(args: argparse.Namespace) -> int:
    from pypto_build.build_records.folder_bound import bound_cache
    from pypto_build.build_records.records import RecordStore
    from pypto_build.chip_build.compile_cache.cache import CompileCache

    cache = CompileCache(default_cache_dir())
    try:
        # Pruned to a size, the build records count against the bound too.
        result = (
            cache.prune(0)
            if args.all
            else bound_cache(cache.root, args.max_size, warn=print_warning)
        )
    except OSError as err:  # a cache folder that cannot be written: nothing to prune there
        print_error(str(err))
        return ExitCode.PROGRAM_ERROR
    if args.all:
        # A build record would stand in for the next build, which must compile everything.
        RecordStore(cache.root, warn=print_error).clear()
    if args.json:
        document = {
            "removed_entries": result.removed_entries,
            "removed_bytes": result.removed_bytes,
            "remaining_entries": result.remaining_entries,
            "remaining_bytes": result.remaining_bytes,
        }
        print_json(document)
        return ExitCode.OK
    print(
        f"removed {result.removed_entries} entries ({human_size(result.removed_bytes)}); "
        f"{result.remaining_entries} remain ({human_size(result.remaining_bytes)})"
    )
    return ExitCode.OK
