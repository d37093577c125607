"""``omnilab cache ...``: see and clear the media cache (prepared frames, soundtracks, clips).

The cache is bounded (``media.cache_max_bytes``); least recently used entries are evicted past
the bound, so clearing it is never needed for space, only to start cold (benchmarks).
"""

from __future__ import annotations

import json
import time
from typing import Annotated

import typer

__all__ = ["app"]

app = typer.Typer(help="See and clear the media cache.", no_args_is_help=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


def _mb(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB"


def _ago(t: float | None) -> str:
    if t is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


RemoteOpt = Annotated[
    bool, typer.Option("--remote", help="List each fetched object (inputs at URLs) by URL.")
]


@app.command("show")
def show(as_json: JsonOpt = False, remote: RemoteOpt = False) -> None:
    """Where the media cache is, how many entries it holds, their size and its bound; how many
    of them are inputs fetched from URLs (``--remote`` lists them)."""
    from omnilab.cli._console import out_console
    from omnilab.media.cache import MediaCache
    from omnilab.media.remote import cached_objects

    cache = MediaCache.default()
    stats = cache.stats()
    fetched = cached_objects(cache)
    console = out_console()
    if as_json:
        data = {
            "root": str(stats.root),
            "entries": stats.entries,
            "bytes": stats.bytes,
            "max_bytes": stats.max_bytes,
            "oldest_use": stats.oldest,
            "newest_use": stats.newest,
            "remote": [
                {"url": o.url, "version": o.version, "bytes": o.size, "last_use": o.last_use}
                for o in fetched
            ],
        }
        console.print(json.dumps(data), markup=False)
        return
    share = f" ({100 * stats.bytes / stats.max_bytes:.0f} %)" if stats.max_bytes else ""
    console.print(f"media cache: {stats.root}", markup=False)
    console.print(f"entries:     {stats.entries:,}")
    console.print(f"size:        {_mb(stats.bytes)} of {_mb(stats.max_bytes)}{share}")
    console.print(f"used:        {_ago(stats.oldest)} to {_ago(stats.newest)}")
    console.print("bound:       media.cache_max_bytes (OMNILAB_MEDIA__CACHE_MAX_BYTES)")
    fetched_bytes = sum(o.size for o in fetched)
    console.print(f"from URLs:   {len(fetched):,} objects, {_mb(fetched_bytes)}")
    if remote:
        for o in fetched:
            console.print(f"  {_mb(o.size):>12}  {_ago(o.last_use)}  {o.url}", markup=False)


@app.command("clear")
def clear(
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Remove every entry of the media cache (they are made again when needed)."""
    from omnilab.cli._console import out_console
    from omnilab.media.cache import MediaCache

    cache = MediaCache.default()
    if not yes and not typer.confirm(f"Remove every entry of {cache.root}?"):
        raise typer.Exit(1)
    freed = cache.clear()
    out_console().print(f"media cache cleared: {_mb(freed)} freed ({cache.root})", markup=False)
