"""``omnilab index ...``: build and try the offline search indexes of the ``local`` providers
(text for web_search; ``--kind image|video`` for the deepsearch agent's image and video search).

Each command parses its options, calls one library function and prints the result; mistakes
(a missing corpus, a bad JSONL line, a folder that is not an index) are
:class:`~omnilab.errors.OmnilabError` messages printed on one line by ``omnilab.cli.main``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console

from omnilab.cli._console import inert_console
from omnilab.tools.web.corpus import JsonlFields
from omnilab.tools.web.index import DEFAULT_CHUNK_CHARS, build_index, open_index, read_manifest
from omnilab.tools.web.sample import sample_index
from omnilab.tools.web.search import render_hits

__all__ = ["app", "build_cmd", "sample_cmd", "search_cmd"]

app = typer.Typer(
    help="Build and query the offline search index used by web_search's local provider.",
    no_args_is_help=True,
)


def _console() -> Console:
    return inert_console(highlight=False, soft_wrap=True)


@app.command("build")
def build_cmd(
    source: Annotated[
        Path,
        typer.Argument(
            help="A folder of .txt/.md/.html files (searched recursively) or a .jsonl; with "
            "--kind image|video a folder of images or videos (sidecars: same stem, .json/.txt)."
        ),
    ],
    kind: Annotated[
        Literal["text", "image", "video"],
        typer.Option("--kind", help="What to index: text documents, images or videos."),
    ] = "text",
    ocr: Annotated[
        bool, typer.Option("--ocr/--no-ocr", help="Images: index the text read in each image.")
    ] = True,
    digest: Annotated[
        bool,
        typer.Option(
            "--digest/--no-digest",
            help="Videos: index timed transcripts and on-screen text (omnilab digest).",
        ),
    ] = True,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Folder for the index (replaced if it holds an index); default: under the cache.",
            show_default=False,
        ),
    ] = None,
    chunk_chars: Annotated[
        int,
        typer.Option("--chunk-chars", min=100, help="Passage size for retrieval, in characters."),
    ] = DEFAULT_CHUNK_CHARS,
    id_field: Annotated[str, typer.Option("--id-field", help="JSONL field of the id.")] = "id",
    title_field: Annotated[
        str, typer.Option("--title-field", help="JSONL field of the title.")
    ] = "title",
    url_field: Annotated[str, typer.Option("--url-field", help="JSONL field of the URL.")] = "url",
    text_field: Annotated[
        str, typer.Option("--text-field", help="JSONL field of the text.")
    ] = "text",
) -> None:
    """Index SOURCE for offline search (BM25 over passages, plus a document store)."""
    if kind != "text":
        from omnilab.cli._media_index import build_media

        build_media(kind, source, out, ocr=ocr, digest=digest, console=_console())
        return
    fields = JsonlFields(id=id_field, title=title_field, url=url_field, text=text_field)
    path = build_index(source, out, fields=fields, chunk_chars=chunk_chars)
    manifest = read_manifest(path)
    _console().print(
        f"indexed {manifest.doc_count} documents ({manifest.passage_count} passages) "
        f"from {source} into {path}"
    )


@app.command("search")
def search_cmd(
    index: Annotated[Path, typer.Argument(help="An index folder made by `omnilab index build`.")],
    query: Annotated[str, typer.Argument(help="What to search for.")],
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, help="Most results shown.")] = 5,
    json_out: Annotated[bool, typer.Option("--json", help="Print the hits as JSON.")] = False,
) -> None:
    """Search INDEX for QUERY and print the hits as web_search shows them to a model."""
    if (index / "entries.jsonl").is_file():  # an image or video index
        from omnilab.cli._media_index import search_media

        search_media(index, query, top_k=top_k, json_out=json_out, console=_console())
        return
    hits = open_index(index).search(query, top_k=top_k)
    if json_out:
        typer.echo(json.dumps([h.model_dump(mode="json") for h in hits], indent=2))
        return
    _console().print(render_hits(query, hits), markup=False)


@app.command("sample")
def sample_cmd() -> None:
    """Build (once) the index of the sample corpus shipped with omnilab and print its folder."""
    typer.echo(str(sample_index()))
