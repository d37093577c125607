"""Reports you can look at: static HTML pages of runs, their comparison, and trajectories.

``build_report([run], out)`` writes ``out/index.html`` (summary, charts, a task table that sorts
and filters) and one page per task (each context as a conversation, with the frames and audio
the agent got); two or more runs add a comparison. ``write_trajectory_page(file, out)`` renders
one trajectory. Pages load only files of their folder (no network) and every text is escaped.
This layer reads run folders only.
"""

from __future__ import annotations

from omnilab.report.build import build_report, write_run_report, write_trajectory_page
from omnilab.report.run_report import RunReport

__all__ = ["RunReport", "build_report", "write_run_report", "write_trajectory_page"]
