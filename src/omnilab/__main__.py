"""``python -m omnilab``: the same entry point as the ``omnilab`` command."""

from __future__ import annotations

from omnilab.cli.main import main

main()
