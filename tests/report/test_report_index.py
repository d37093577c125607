"""The run report: summary figures equal the metrics, one chart bar per group, a table row per
task, every page escaped and self-contained (no file outside the report folder)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

from omnilab.bench.metrics import summarize
from omnilab.bench.run_dir import RunDir
from omnilab.report.synthetic import HOSTILE

TASKS = 24  # conftest.py writes runs of this many tasks


class Links(HTMLParser):
    """Every src/href of a page, and the elements seen."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.tags.append((tag, found))
        for key in ("src", "href"):
            value = found.get(key)
            if value:
                self.links.append(value)


def parse(path: Path) -> Links:
    parser = Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def test_summary_shows_the_runs_metrics(run_a: Path, report_a: Path) -> None:
    summary = summarize(RunDir(run_a).results())
    html = (report_a / "index.html").read_text(encoding="utf-8")
    p = summary.pass_at_1
    assert p.value is not None and summary.pass_at_1_ci is not None
    assert f"{100 * p.value:.1f}%" in html and f"{p.correct}/{p.total}" in html
    low, high = summary.pass_at_1_ci.low, summary.pass_at_1_ci.high
    assert f"95% CI {100 * low:.1f}%–{100 * high:.1f}%" in html
    assert f"{summary.usage.total_tokens:,}" in html
    assert f"{summary.wall_time.total_s:,.1f} s" in html
    assert f"{p.undecided} tasks without a verdict" in html and summary.failed_runs == 3
    data = json.loads((report_a / "data" / "summary.json").read_text())
    assert data["pass_at_1"] == p.model_dump()


def test_charts_have_one_bar_per_group_with_whiskers(report_a: Path) -> None:
    html = (report_a / "index.html").read_text(encoding="utf-8")
    charts = dict(re.findall(r'<svg class="chart" data-chart="([^"]+)"(.*?)</svg>', html, re.S))
    assert charts["level"].count('class="bar"') == 3
    assert charts["level"].count('class="whisker"') == 3
    assert charts["category"].count('class="bar"') == 4
    assert charts["tools"].count('class="bar"') == 2  # read_video, read_audio
    assert charts["errors"].count('class="bar"') == 1  # timeout
    for name in ("turns", "tool-calls", "tokens", "wall", "latency"):
        assert 'class="bar"' in charts[name], name
    # Levels in their natural order, not alphabetical.
    assert re.findall(r">(Easy|Medium|Hard)<", charts["level"]) == ["Easy", "Medium", "Hard"]


def test_table_has_a_row_per_task_with_filter_data(run_a: Path, report_a: Path) -> None:
    page = parse(report_a / "index.html")
    rows = [a for t, a in page.tags if t == "tr" and "data-state" in a]
    assert len(rows) == TASKS
    results = {r.task_id: r for r in RunDir(run_a).results()}
    states = [a["data-state"] for a in rows]
    assert states.count("error") == sum(1 for r in results.values() if r.error)
    assert states.count("correct") == sum(1 for r in results.values() if r.judged)
    assert {a["data-level"] for a in rows} == {"Easy", "Medium", "Hard"}
    assert all("what colour" in (a["data-search"] or "") for a in rows)
    table = json.loads((report_a / "data" / "tasks.json").read_text())
    assert [t["task_id"] for t in table] == list(results)


def test_every_link_stays_inside_the_report(report_a: Path, run_a: Path) -> None:
    pages = [report_a / "index.html", *sorted((report_a / "tasks").glob("*.html"))]
    assert len(pages) == TASKS + 1
    for page in pages:
        for link in parse(page).links:
            assert not link.startswith(("/", "file:", "http:", "https:", "//")), (page, link)
            target = (page.parent / link.split("#")[0]).resolve()
            assert target.is_file(), (page, link)
            assert report_a.resolve() in target.parents, (page, link)
        assert str(run_a) not in page.read_text(encoding="utf-8")


def test_model_output_and_tool_results_render_as_text(report_a: Path) -> None:
    escaped = HOSTILE.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    escaped = escaped.replace('"', "&quot;")
    for page in [report_a / "index.html", *(report_a / "tasks").glob("*.html")]:
        html = page.read_text(encoding="utf-8")
        assert "<script>document" not in html and "onerror=" not in html.replace(
            "onerror=&quot;", ""
        )
        # The only scripts are the report's own file.
        scripts = [a for t, a in parse(page).tags if t == "script"]
        assert all(a.get("src", "").endswith("assets/report.js") for a in scripts)
    task0 = (report_a / "tasks" / "task-0000.html").read_text(encoding="utf-8")
    assert task0.count(escaped) >= 3  # question, model reply, tool result


def test_error_analysis_and_missing_trajectories(run_a: Path, tmp_path: Path) -> None:
    import shutil

    from omnilab.bench.analysis import ERROR_CATEGORIES, ErrorAnalysis
    from omnilab.report import build_report

    run = tmp_path / "run"
    shutil.copytree(run_a, run)
    frequencies = {c: n for n, c in enumerate(ERROR_CATEGORIES)}
    analysis = ErrorAnalysis(
        labels=[], analysed=3, failures=0, frequencies=frequencies, by_level={}
    )
    RunDir(run).analysis_file.write_text(analysis.model_dump_json())
    RunDir(run).trajectory_file("task-0005").unlink()  # a task whose trajectory was lost
    out = tmp_path / "report"
    build_report([run], out)
    html = (out / "index.html").read_text(encoding="utf-8")
    chart = re.search(r'data-chart="analysis"(.*?)</svg>', html, re.S)
    assert chart is not None and chart.group(1).count('class="bar"') == len(ERROR_CATEGORIES)
    assert "<td>task-0005</td>" in html and 'href="tasks/task-0004.html"' in html
    assert not (out / "tasks" / "task-0005.html").exists()


def test_a_linked_analysis_is_left_out_of_the_report(run_a: Path, tmp_path: Path) -> None:
    """A run folder may be another user's: an ``analysis.json`` linked to a file of root's (here
    a valid analysis naming a secret) is not read into the report, which goes on without it."""
    import shutil

    from omnilab.bench.analysis import ErrorAnalysis
    from omnilab.report import build_report

    run = tmp_path / "run"
    shutil.copytree(run_a, run)
    secret = tmp_path / "private" / "analysis.json"
    secret.parent.mkdir(mode=0o700)
    marker = "ROOT-ONLY-ANALYSIS-3f9c"
    analysis = ErrorAnalysis(
        labels=[], analysed=1, failures=0, frequencies={marker: 1}, by_level={}
    )
    secret.write_text(analysis.model_dump_json())
    RunDir(run).analysis_file.symlink_to(secret)
    out = tmp_path / "report"
    build_report([run], out)
    html = (out / "index.html").read_text(encoding="utf-8")
    assert 'data-chart="analysis"' not in html
    assert all(marker not in p.read_text(errors="replace") for p in out.rglob("*.*") if p.is_file())


def test_step_notes_are_charted(report_a: Path) -> None:
    """Scaffolds' notes (here a confidence per turn): notes per task, and the noted numbers."""
    html = (report_a / "index.html").read_text(encoding="utf-8")
    notes = re.search(r'data-chart="notes"(.*?)</svg>', html, re.S)
    assert notes is not None and notes.group(1).count('class="bar"') == 1  # the "turn" label
    # Tasks have 1-3 tool turns (2 + i % 3 turns, the last answers): mean 2 notes per task.
    assert ">2.00<" in notes.group(1)
    confidence = re.search(r'data-chart="note:turn.confidence"(.*?)</svg>', html, re.S)
    assert confidence is not None
    counts = [int(n) for n in re.findall(r'class="value"[^>]*>(\d+)<', confidence.group(1))]
    assert sum(counts) == 48  # one value per note: 8 + 16 + 24 over 24 tasks
    # Nested numbers too (a budget left per tool, as the deep-search agent notes it).
    left = re.search(r'data-chart="note:turn.left.read_video"(.*?)</svg>', html, re.S)
    assert left is not None and ">3<" in left.group(1)
    assert 'data-chart="note:turn.total"' not in html  # the same number in every note
