"""An eval process of a text-only run imports no media decoders or schema validators: they
were a noticeable share of every run's start-up (checked on ``sys.modules`` in a fresh process)."""

from __future__ import annotations

import subprocess
import sys

_SCRIPT = """
import sys
import omnilab.cli.eval
import omnilab.bench.runner
import omnilab.agents.tir
from omnilab.models import GenerateConfig, Message
from omnilab.models.cache import request_key
from omnilab.models.capabilities import Capabilities
from omnilab.models.providers.openai_wire import wire_messages

messages = [Message.system("be brief"), Message.user("what colour?")]
request_key("m", messages, [], GenerateConfig())
wire_messages(messages, Capabilities(), "m")
print(" ".join(m for m in ("av", "omnilab.media", "PIL.Image", "jsonschema") if m in sys.modules))
"""


def test_text_only_eval_path_loads_no_media_or_schema_libraries() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, check=True
    )
    assert proc.stdout.split() == []


def test_the_unit_patterns_are_compiled_when_numbers_are_scored_not_at_import() -> None:
    script = (
        "import omnilab.cli.eval\n"
        "from omnilab.bench.scoring import units\n"
        "from omnilab.bench.scoring.numbers import extract_quantity\n"
        "before = units.unit_after.cache_info().currsize + units._asked_unit.cache_info().currsize\n"
        "q = extract_quantity('about 10 sq ft')\n"
        "print(before, q.unit if q else None, units.expected_unit('How big (in square meters)?'))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert proc.stdout.split() == ["0", "ft2", "m2"]
