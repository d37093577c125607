"""``omnilab index build --kind image|video`` and searching such an index: a progress bar over
the files, then one line on what was indexed (and what could not be read)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

from rich.console import Console

from omnilab.cli._console import inert_console

__all__ = ["build_media", "search_media"]


def _default_out(kind: str, source: Path) -> Path:
    from omnilab.config import get_settings

    digest = hashlib.sha256(str(source.resolve()).encode()).hexdigest()[:16]
    return get_settings().cache_dir / "media-index" / kind / f"{source.name or kind}-{digest}"


def build_media(
    kind: Literal["image", "video"],
    source: Path,
    out: Path | None,
    *,
    ocr: bool,
    digest: bool,
    console: Console,
) -> None:
    """Build the index with a progress bar (stderr) and print where it went."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from omnilab.tools.mediasearch.index import build_media_index, open_media_index

    target = out if out is not None else _default_out(kind, source)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=inert_console(stderr=True), transient=True) as bar:
        task = bar.add_task(f"indexing {kind}s", total=None)

        def step(done: int, total: int, name: str) -> None:
            bar.update(task, completed=done, total=total, description=f"indexing {name}")

        path = build_media_index(kind, source, target, ocr=ocr, digest=digest, on_progress=step)
    manifest = open_media_index(path).manifest
    console.print(
        f"indexed {manifest.files} {kind} files ({manifest.entries} entries) from {source} "
        f"into {path}",
        markup=False,
    )
    for note in manifest.notes[:5]:
        console.print(f"note: {note}", markup=False)


def search_media(index: Path, query: str, *, top_k: int, json_out: bool, console: Console) -> None:
    """Print the hits of a media index as the search tools show them (text only)."""
    import asyncio

    from omnilab.content import Text
    from omnilab.tools.mediasearch.index import open_media_index
    from omnilab.tools.mediasearch.search import render_results

    hits = open_media_index(index).search(query, top_k=top_k)
    if json_out:
        console.print(json.dumps([h.model_dump(mode="json") for h in hits], indent=2), markup=False)
        return
    parts = asyncio.run(render_results(query, hits, images=False))
    console.print("\n".join(p.text for p in parts if isinstance(p, Text)), markup=False)
