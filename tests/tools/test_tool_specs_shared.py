"""Tool factories read the loaded OmniGAIA schemas (no copy per task); callers asking for a
fresh copy still get one they may edit."""

from __future__ import annotations

import contextlib
from pathlib import Path

from omnilab.inputs import InputSet
from omnilab.models.providers.scripted import scripted_model
from omnilab.tools._specs import omnigaia_function
from omnilab.tools.base import Tool
from omnilab.tools.registry import ToolEnv, build_tools


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


def test_runs_share_the_web_pair_until_the_settings_or_the_provider_change(
    tmp_path: Path,
) -> None:
    # Made once per process, not per task (it keeps nothing of a run): the same tool objects
    # for every run under the same settings and provider factory.
    from omnilab.config import get_settings
    from omnilab.tools.search_choice import use_search
    from omnilab.tools.web.providers import PROVIDERS, register_provider
    from omnilab.tools.web.providers.local import LocalSearch

    def web_pair() -> list[Tool]:
        with contextlib.ExitStack() as stack:
            env = ToolEnv(
                inputs=InputSet([]),
                model=scripted_model([]),
                workspace=tmp_path / "ws",
                stack=stack,
            )
            return build_tools(["web_search", "page_browser"], env)

    first = web_pair()
    assert all(a is b for a, b in zip(first, web_pair(), strict=True))
    assert [t.name for t in first] == ["web_search", "page_browser"]
    get_settings.cache_clear()  # new settings (another config): a new pair
    second = web_pair()
    assert second[0] is not first[0] and second[1] is not first[1]
    with use_search("pair-test"):
        register_provider("pair-test", type("First", (LocalSearch,), {}))
        try:
            own = web_pair()
            assert own[0] is not second[0] and web_pair()[0] is own[0]
            register_provider("pair-test", type("Second", (LocalSearch,), {}))  # again
            assert web_pair()[0] is not own[0]
        finally:
            PROVIDERS.unregister("pair-test")
