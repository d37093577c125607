"""The evaluation harness: tasks, dataset adapters, scoring, metrics and error analysis.

``load_dataset("omnigaia", path)`` reads a benchmark into :class:`Task` objects; a
:class:`~omnilab.bench.scoring.Scorer` turns a task and a prediction into a :class:`Score`;
the runner stores one :class:`TaskResult` per task, and :func:`summarize`, :func:`compare_runs`
and :func:`analyze_errors` read those. Importing this package reads no file.
"""

from __future__ import annotations

from omnilab.bench.analysis import (
    ERROR_CATEGORIES,
    ErrorAnalysis,
    TaskErrorLabels,
    analyze_errors,
    parse_analysis,
)
from omnilab.bench.datasets import (
    DatasetAdapter,
    DatasetLoad,
    SkippedItem,
    dataset_names,
    get_dataset,
    load_dataset,
    register_dataset,
)
from omnilab.bench.errors import BenchError, DatasetError, UnknownDatasetError
from omnilab.bench.metrics import (
    Rate,
    RunSummary,
    accuracy,
    accuracy_by,
    accuracy_ci,
    compare_runs,
    non_empty_rate,
    pass_at_1,
    summarize,
    tool_call_stats,
    usage_stats,
    wall_time_stats,
)
from omnilab.bench.results import TaskResult, append_result, read_results, write_results
from omnilab.bench.roles import judge_models, role_model
from omnilab.bench.scoring import (
    AnswerSetMatch,
    JudgeCall,
    LLMJudge,
    MajorityVote,
    MeanRelativeAccuracy,
    MultipleChoice,
    NumericMatch,
    OmniAgentScorer,
    OmniGaiaScorer,
    Score,
    Scorer,
    TemporalIoU,
)
from omnilab.bench.stats import Interval, McNemarResult, bootstrap_ci, mcnemar_test
from omnilab.bench.task import AnswerSet, Task, TaskFile, TaskMetadata

__all__ = [
    "ERROR_CATEGORIES",
    "AnswerSet",
    "AnswerSetMatch",
    "BenchError",
    "DatasetAdapter",
    "DatasetError",
    "DatasetLoad",
    "ErrorAnalysis",
    "Interval",
    "JudgeCall",
    "LLMJudge",
    "MajorityVote",
    "McNemarResult",
    "MeanRelativeAccuracy",
    "MultipleChoice",
    "NumericMatch",
    "OmniAgentScorer",
    "OmniGaiaScorer",
    "Rate",
    "RunSummary",
    "Score",
    "Scorer",
    "SkippedItem",
    "Task",
    "TaskErrorLabels",
    "TaskFile",
    "TaskMetadata",
    "TaskResult",
    "TemporalIoU",
    "UnknownDatasetError",
    "accuracy",
    "accuracy_by",
    "accuracy_ci",
    "analyze_errors",
    "append_result",
    "bootstrap_ci",
    "compare_runs",
    "dataset_names",
    "get_dataset",
    "judge_models",
    "load_dataset",
    "mcnemar_test",
    "non_empty_rate",
    "parse_analysis",
    "pass_at_1",
    "read_results",
    "register_dataset",
    "role_model",
    "summarize",
    "tool_call_stats",
    "usage_stats",
    "wall_time_stats",
    "write_results",
]
