"""``omnilab digest FILE...``: transcripts, audio events, shots and on-screen text as evidence."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

from omnilab.cli._console import inert_console
from omnilab.perception.digest import DigestOptions
from omnilab.perception.digest import digest as run_digest
from omnilab.terminal import inert, inert_json

__all__ = ["digest"]


def digest(
    files: Annotated[list[Path], typer.Argument(help="Video, audio, image or text files.")],
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the evidence as JSON instead of Markdown.")
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Also write digest.md, digest.json and contact sheets here."),
    ] = None,
    asr: Annotated[
        str | None,
        typer.Option(
            "--asr",
            help="ASR backend: whisper (default; embedded English tiny.en), pocketsphinx or openai.",
        ),
    ] = None,
    ocr_backend: Annotated[
        str | None, typer.Option("--ocr", help="OCR backend: rapidocr (default) or tesseract.")
    ] = None,
    language: Annotated[
        str | None, typer.Option("--language", help="Spoken language hint, e.g. en.")
    ] = None,
    no_ocr: Annotated[bool, typer.Option("--no-ocr", help="Skip on-screen text.")] = False,
    no_transcript: Annotated[
        bool, typer.Option("--no-transcript", help="Skip speech recognition.")
    ] = False,
    no_events: Annotated[bool, typer.Option("--no-events", help="Skip audio events.")] = False,
    no_shots: Annotated[bool, typer.Option("--no-shots", help="Skip the shot list.")] = False,
    no_sheet: Annotated[bool, typer.Option("--no-sheet", help="Skip the contact sheet.")] = False,
) -> None:
    """Turn media FILEs into compact text evidence: transcript with times, audio events, shots,
    on-screen text and a contact sheet (cached: a second run is nearly instant)."""
    options = DigestOptions(
        transcript=not no_transcript,
        events=not no_events,
        shots=not no_shots,
        ocr=not no_ocr,
        sheet=not no_sheet,
        asr_backend=asr,
        ocr_backend=ocr_backend,
        language=language,
    )
    err = inert_console(stderr=True)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as bar:
        tasks: dict[str, TaskID] = {}

        def report(label: str, done: float, total: float) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(label, total=total or None)
            bar.update(tasks[label], completed=done, total=total or None)

        evidence = run_digest(files, options=options, on_progress=report)
    if out is not None:
        evidence = evidence.save(out)
        err.print(f"wrote {out / 'digest.md'} and {out / 'digest.json'}", highlight=False)
    if json_out:
        typer.echo(inert_json(evidence.model_dump_json(indent=2)))
    else:
        # Transcripts, OCR text and media tags come from the files: inert on a terminal.
        typer.echo(inert(evidence.to_markdown()), nl=False)
