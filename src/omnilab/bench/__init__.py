"""The evaluation harness: tasks, dataset adapters, scoring, metrics and error analysis.

``load_dataset("omnigaia", path)`` reads a benchmark into :class:`Task` objects; a
:class:`~omnilab.bench.scoring.Scorer` turns a task and a prediction into a :class:`Score`;
the runner stores one :class:`TaskResult` per task, and :func:`summarize`, :func:`compare_runs`
and :func:`analyze_errors` read those. Importing this package reads no file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from omnilab._lazy import lazy_getattr

if TYPE_CHECKING:
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

# Each public name -> the module that defines it, imported on first access (PEP 562): importing
# every layer here (metrics with numpy, error analysis, every scorer and dataset) cost each
# `omnilab eval` start ~0.3 s for names it never uses.
_WHERE: dict[str, str] = {
    "ERROR_CATEGORIES": "omnilab.bench.analysis",
    "ErrorAnalysis": "omnilab.bench.analysis",
    "TaskErrorLabels": "omnilab.bench.analysis",
    "analyze_errors": "omnilab.bench.analysis",
    "parse_analysis": "omnilab.bench.analysis",
    "DatasetAdapter": "omnilab.bench.datasets",
    "DatasetLoad": "omnilab.bench.datasets",
    "SkippedItem": "omnilab.bench.datasets",
    "dataset_names": "omnilab.bench.datasets",
    "get_dataset": "omnilab.bench.datasets",
    "load_dataset": "omnilab.bench.datasets",
    "register_dataset": "omnilab.bench.datasets",
    "BenchError": "omnilab.bench.errors",
    "DatasetError": "omnilab.bench.errors",
    "UnknownDatasetError": "omnilab.bench.errors",
    "Rate": "omnilab.bench.metrics",
    "RunSummary": "omnilab.bench.metrics",
    "accuracy": "omnilab.bench.metrics",
    "accuracy_by": "omnilab.bench.metrics",
    "accuracy_ci": "omnilab.bench.metrics",
    "compare_runs": "omnilab.bench.metrics",
    "non_empty_rate": "omnilab.bench.metrics",
    "pass_at_1": "omnilab.bench.metrics",
    "summarize": "omnilab.bench.metrics",
    "tool_call_stats": "omnilab.bench.metrics",
    "usage_stats": "omnilab.bench.metrics",
    "wall_time_stats": "omnilab.bench.metrics",
    "TaskResult": "omnilab.bench.results",
    "append_result": "omnilab.bench.results",
    "read_results": "omnilab.bench.results",
    "write_results": "omnilab.bench.results",
    "judge_models": "omnilab.bench.roles",
    "role_model": "omnilab.bench.roles",
    "AnswerSetMatch": "omnilab.bench.scoring",
    "JudgeCall": "omnilab.bench.scoring",
    "LLMJudge": "omnilab.bench.scoring",
    "MajorityVote": "omnilab.bench.scoring",
    "MeanRelativeAccuracy": "omnilab.bench.scoring",
    "MultipleChoice": "omnilab.bench.scoring",
    "NumericMatch": "omnilab.bench.scoring",
    "OmniAgentScorer": "omnilab.bench.scoring",
    "OmniGaiaScorer": "omnilab.bench.scoring",
    "Score": "omnilab.bench.scoring",
    "Scorer": "omnilab.bench.scoring",
    "TemporalIoU": "omnilab.bench.scoring",
    "Interval": "omnilab.bench.stats",
    "McNemarResult": "omnilab.bench.stats",
    "bootstrap_ci": "omnilab.bench.stats",
    "mcnemar_test": "omnilab.bench.stats",
    "AnswerSet": "omnilab.bench.task",
    "Task": "omnilab.bench.task",
    "TaskFile": "omnilab.bench.task",
    "TaskMetadata": "omnilab.bench.task",
}


__getattr__ = lazy_getattr(__name__, _WHERE, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
