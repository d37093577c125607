"""The report in a real browser: headless Chromium driven by Playwright, pointed at the system's
browser (Playwright cannot download its own here). The pages load with no console errors, the
charts draw their bars, the table filters and sorts, a task page shows its frames (a click
enlarges one) and an audio element that plays, and a hostile reply runs nothing. Screenshots
are saved in each test's tmp folder. Skipped, saying why, when no browser or Playwright is
installed; CI installs ``chromium`` (.ci/run) so they run there."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser


class Page:
    """A page with its console errors, page errors and dialogs recorded."""

    def __init__(self, browser: Any) -> None:
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))

    def open(self, path: Path) -> Any:
        self.page.goto(path.resolve().as_uri())
        self.page.wait_for_load_state("load")
        return self.page


@pytest.fixture()
def tab(browser: Any) -> Iterator[Page]:
    page = Page(browser)
    yield page
    page.page.close()


def visible_rows(page: Any, table: str = "#tasks") -> int:
    count: int = page.evaluate(
        f"Array.from(document.querySelectorAll('{table} tbody tr')).filter(r => !r.hidden).length"
    )
    return count


def test_index_draws_charts_and_filters_the_table(
    tab: Page, report_a: Path, tmp_path: Path
) -> None:
    page = tab.open(report_a / "index.html")
    assert page.locator("svg.chart[data-chart=level] rect.bar").count() == 3
    assert page.locator("svg.chart[data-chart=category] rect.bar").count() == 4
    widths = page.eval_on_selector_all(
        "svg.chart[data-chart=level] rect.bar", "bars => bars.map(b => b.getBBox().width)"
    )
    assert max(widths) > 50  # drawn, not empty
    assert visible_rows(page) == 24
    page.select_option("#f-state", "error")
    errors = visible_rows(page)
    assert errors == 3 and page.inner_text("#shown") == "3 of 24 tasks"
    page.select_option("#f-state", "")
    page.select_option("#f-level", "Hard")
    assert visible_rows(page) == 8
    page.select_option("#f-level", "")
    page.fill("#f-search", "clip 4?")
    assert visible_rows(page) == 1
    page.fill("#f-search", "")
    page.click("#tasks th:has-text('tokens')")
    tokens = page.eval_on_selector_all(
        "#tasks tbody tr", "rows => rows.map(r => parseInt(r.cells[8].textContent))"
    )
    assert tokens == sorted(tokens)
    page.screenshot(path=str(tmp_path / "index.png"), full_page=True)
    assert (tmp_path / "index.png").stat().st_size > 10_000
    assert tab.errors == []


def test_task_page_shows_frames_and_plays_audio(tab: Page, report_a: Path, tmp_path: Path) -> None:
    page = tab.open(report_a / "tasks" / "task-0004.html")
    frames = page.locator(".msg.tool .frames img")
    assert frames.count() == 4
    frames.first.scroll_into_view_if_needed()
    page.wait_for_function(
        "() => { const i = document.querySelector('.msg.tool .frames img');"
        " return i.complete && i.naturalWidth > 0; }"
    )
    frames.first.click()
    overlay = page.locator(".overlay img")
    overlay.wait_for(state="visible")
    assert "media/" in (overlay.get_attribute("src") or "")
    page.keyboard.press("Escape")
    state = page.evaluate(
        """async () => {
            const a = document.querySelector('.msg.tool audio');
            a.muted = true;
            await a.play();
            await new Promise(r => setTimeout(r, 400));
            return {duration: a.duration, time: a.currentTime, error: a.error && a.error.code};
        }"""
    )
    assert state["error"] is None and state["duration"] > 0 and state["time"] > 0, state
    assert page.locator(".placeholder.purged").count() == 3
    page.screenshot(path=str(tmp_path / "task.png"), full_page=True)
    assert tab.errors == []


def test_hostile_content_runs_nothing(tab: Page, report_a: Path) -> None:
    page = tab.open(report_a / "tasks" / "task-0000.html")
    page.wait_for_timeout(200)
    assert "pwned" not in page.title()
    assert tab.dialogs == [] and tab.errors == []
    assert page.locator("text=<script>document.title").count() >= 1  # shown as text


def test_comparison_filters_pairs(tab: Page, report_ab: Path, tmp_path: Path) -> None:
    page = tab.open(report_ab / "index.html")
    total = visible_rows(page, "table.tasks")
    page.select_option("select[data-filter=pair]", "a-only")
    shown = visible_rows(page, "table.tasks")
    assert 0 < shown < total
    page.screenshot(path=str(tmp_path / "compare.png"), full_page=True)
    page.select_option("select[data-filter=pair]", "")
    assert visible_rows(page, "table.tasks") == total
    page.click("table.tasks a:has-text('task-0003')")  # both trajectories side by side
    page.wait_for_load_state("load")
    inner = [f for f in page.frames if f != page.main_frame]
    assert len(inner) == 2
    for frame in inner:
        frame.wait_for_selector("section.context")
        assert frame.locator(".msg.tool .frames img").count() > 0
    page.screenshot(path=str(tmp_path / "side-by-side.png"))
    assert tab.errors == []
