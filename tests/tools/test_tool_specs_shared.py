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


def test_every_build_of_a_tool_offers_the_same_spec_object() -> None:
    # The reply-cache key and the trajectory encoder keep a tool list's JSON by the identity
    # of its specs: a factory run per task must hand out the one spec of its tool.
    from omnilab.tools.web import web_tools

    first = [t.spec for t in web_tools("local")]
    second = [t.spec for t in web_tools("local")]
    assert all(a is b for a, b in zip(first, second, strict=True))
    assert [s.name for s in first] == ["web_search", "page_browser"]
