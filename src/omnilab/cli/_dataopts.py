"""The dataset options several commands share (``eval``, ``data``, ``export``, ``explore``)."""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["OUTSIDE_HELP", "AllowOutsideOpt"]

OUTSIDE_HELP = (
    "Take the dataset's absolute and '..' media paths as written and follow links under the "
    "media root (by default a path from a dataset must lie beneath the media root and is "
    "opened through no link; anything else is refused); with a media root URL, also full URLs "
    "outside it. Only for datasets you trust."
)

AllowOutsideOpt = Annotated[bool, typer.Option("--allow-outside-media-root", help=OUTSIDE_HELP)]
