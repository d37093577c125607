"""Tool factories read the loaded OmniGAIA schemas (no copy per task); callers asking for a
fresh copy still get one they may edit."""

from __future__ import annotations

from omnilab.tools._specs import omnigaia_function


def test_shared_function_schema_is_the_loaded_one_and_fresh_copies_are_independent() -> None:
    shared = omnigaia_function("read_image", fresh=False)
    assert omnigaia_function("read_image", fresh=False) is shared
    fresh = omnigaia_function("read_image")
    assert fresh == shared and fresh is not shared
    fresh["parameters"]["properties"].clear()
    assert shared["parameters"]["properties"]
