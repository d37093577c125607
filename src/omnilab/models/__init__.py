"""The model layer: messages, the :class:`Model` wrapper, provider adapters, tool-call parsing.

``get_model("vllm:Qwen/Qwen2.5-Omni-7B@http://gpu:8000/v1")`` (or ``openai:gpt-4o-mini``,
``ollama:llama3.2``, ``local:smollm2``, ``scripted:script.json``) returns a :class:`Model`;
``await model.generate(messages, tools=..., config=...)`` returns a :class:`ModelOutput`.
Importing this package loads no provider SDK.
"""

from __future__ import annotations

from omnilab.content import Audio, Content, Document, Image, Text, Video
from omnilab.models.adapter import AdapterSpec, ProviderAdapter
from omnilab.models.cache import ResponseCache
from omnilab.models.capabilities import Capabilities
from omnilab.models.concurrency import ConcurrencyPlan, concurrency_plan, lift_concurrency
from omnilab.models.errors import ErrorKind, ModelConfigError, ModelError, ProviderError
from omnilab.models.events import EventSink, InputSummary, ModelCallEvent
from omnilab.models.model import Model
from omnilab.models.parsing import recover_tool_calls, split_reasoning
from omnilab.models.registry import (
    ModelName,
    NoModelError,
    Provider,
    default_model_name,
    get_model,
    parse_model_name,
    providers,
    register_provider,
)
from omnilab.models.retry import RetryPolicy
from omnilab.models.types import (
    GenerateConfig,
    Message,
    ModelOutput,
    ResponseFormat,
    TokenLogprob,
    ToolCall,
    ToolSpec,
    TopLogprob,
    Usage,
)

__all__ = [
    "AdapterSpec",
    "Audio",
    "Capabilities",
    "ConcurrencyPlan",
    "Content",
    "Document",
    "ErrorKind",
    "EventSink",
    "GenerateConfig",
    "Image",
    "InputSummary",
    "Message",
    "Model",
    "ModelCallEvent",
    "ModelConfigError",
    "ModelError",
    "ModelName",
    "ModelOutput",
    "NoModelError",
    "Provider",
    "ProviderAdapter",
    "ProviderError",
    "ResponseCache",
    "ResponseFormat",
    "RetryPolicy",
    "Text",
    "TokenLogprob",
    "ToolCall",
    "ToolSpec",
    "TopLogprob",
    "Usage",
    "Video",
    "concurrency_plan",
    "default_model_name",
    "get_model",
    "lift_concurrency",
    "parse_model_name",
    "providers",
    "recover_tool_calls",
    "register_provider",
    "split_reasoning",
]
