"""The LLM client: the openai SDK against any OpenAI-compatible server.

``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` are read here, inside activities, so they never
enter workflow history; the key through activities/sandbox/secrets.py, never from a child's view. The model is the agent's ``<config>`` model, else the role's
``suggestedModel``, else ``XSKY_MODEL``; with none, agents use the offline provider.

Errors are sorted for Temporal: rate limits, server errors, timeouts and dropped
connections are retryable (the activity's retry policy backs off); a bad request, a
refused key or an unknown model fail at once with a message that says what to fix.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from temporalio.exceptions import ApplicationError

from activities import metrics
from activities.sandbox import secrets
from xsky.config import Settings, load_settings

log = logging.getLogger("xsky.llm")

if TYPE_CHECKING:
    import openai  # imported when a model is first called: it is ~0.8 s of a worker's start

DEFAULT_TIMEOUT = 120.0


@dataclass(frozen=True)
class LLMTarget:
    model: str
    base_url: str | None


def resolve_model(
    config_model: str | None, role_model: str | None, settings: Settings | None = None
) -> str | None:
    return config_model or role_model or (settings or load_settings()).model or None


def server_configured(settings: Settings) -> bool:
    """Can this worker call a model: is a model server set (``OPENAI_BASE_URL``, or OpenAI's
    own through ``OPENAI_API_KEY``)? A model is named by the agent's config, its role or
    ``XSKY_MODEL`` (:func:`resolve_model`)."""
    return settings.openai_base_url is not None or bool(secrets.get("OPENAI_API_KEY"))


def target(
    config_model: str | None = None, role_model: str | None = None, settings: Settings | None = None
) -> LLMTarget | None:
    """Where LLM calls go, or None when no model is configured (the offline provider serves)."""
    settings = settings or load_settings()
    model = resolve_model(config_model, role_model, settings)
    if model is None:
        return None
    if not server_configured(settings):
        raise ApplicationError(
            f"model {model!r} is configured but neither OPENAI_API_KEY nor OPENAI_BASE_URL is set on the worker; "
            "set the key (OpenAI) or the base URL of your server (Ollama, vLLM, llama.cpp …)",
            type="LLMConfigError",
            non_retryable=True,
        )
    return LLMTarget(model=model, base_url=settings.openai_base_url)


def client_for(t: LLMTarget, timeout: float = DEFAULT_TIMEOUT) -> openai.AsyncOpenAI:
    import openai

    # Retries belong to Temporal (visible, durable, bounded), not to the SDK.
    return openai.AsyncOpenAI(
        api_key=secrets.get("OPENAI_API_KEY") or "not-needed",
        base_url=t.base_url,
        max_retries=0,
        timeout=timeout,
    )


def _status_hint(status: int, model: str, base_url: str | None) -> str:
    where = base_url or "api.openai.com"
    return {
        400: "the server refused the request as malformed; check the model supports tools/this prompt",
        401: "the API key was refused: check OPENAI_API_KEY on the worker",
        403: "the API key may not use this model or endpoint: check its permissions",
        404: f"model {model!r} or the endpoint was not found at {where}: check XSKY_MODEL / <config model> and OPENAI_BASE_URL",
        422: "the server could not process the request; check the model name and parameters",
    }.get(status, "the request was refused")


async def chat(
    client: openai.AsyncOpenAI,
    t: LLMTarget,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    temperature: float | None = None,
    response_format: dict[str, Any] | None = None,
    max_tokens: int | None = None,
) -> Any:
    """One chat completion, with errors turned into retryable or non-retryable failures;
    timed, its tokens counted and traced (activities/metrics.py). ``response_format``
    ``{"type": "json_object"}`` asks for JSON mode (an agent with an output schema);
    ``max_tokens``: the most the answer may use (a budget's share)."""
    kwargs: dict[str, Any] = {"model": t.model, "messages": messages}
    if max_tokens is not None:
        kwargs["max_tokens"] = max_tokens
    if tools:
        kwargs["tools"] = tools
    if temperature is not None:
        kwargs["temperature"] = temperature
    if response_format is not None:
        kwargs["response_format"] = response_format
    with metrics.model_call(t.model) as call:
        response = await _create(client, t, kwargs)
        call.answered(response)
    return response


async def _create(client: openai.AsyncOpenAI, t: LLMTarget, kwargs: dict[str, Any]) -> Any:
    import openai

    server = (t.base_url or "", t.model)
    kwargs = _as_learned(kwargs, _LEARNED.get(server))
    try:
        try:
            return await client.chat.completions.create(**kwargs)
        except openai.BadRequestError as e:
            # A budget's max_tokens the server will not take as given: asked once more as it
            # says (nothing was answered, so nothing was spent), and remembered for this
            # server and model, so that its later calls are not refused first.
            fitted = answer_limit_fitted(str(e), kwargs)
            if fitted is None:
                raise
            log.info("the model server refused max_tokens as sent (%s): asking again", _short(e))
            answered = await client.chat.completions.create(**fitted)
            # Kept only what is the server's for every call (its own limit, the other name):
            # not a fit to this prompt's length, nor "none", which would leave every later
            # call unbounded by the share.
            if "max_completion_tokens" in fitted:
                _LEARNED[server] = "renamed"
            elif "max_tokens" in fitted and _read_limit(str(e)):
                _LEARNED[server] = int(fitted["max_tokens"])
            return answered
    except openai.RateLimitError as e:
        raise ApplicationError(
            f"rate limited by the model server (429): {_short(e)}", type="LLMRateLimited"
        ) from None
    except openai.APITimeoutError:
        raise ApplicationError(
            "the model server did not answer in time", type="LLMTimeout"
        ) from None
    except openai.APIConnectionError as e:
        raise ApplicationError(
            f"cannot reach the model server at {t.base_url or 'api.openai.com'}: {_short(e)}",
            type="LLMUnavailable",
        ) from None
    except openai.APIStatusError as e:
        if e.status_code >= 500 or e.status_code in (408, 409, 429):
            raise ApplicationError(
                f"the model server failed ({e.status_code}): {_short(e)}", type="LLMServerError"
            ) from None
        raise ApplicationError(
            f"LLM request failed with {e.status_code}: {_status_hint(e.status_code, t.model, t.base_url)} ({_short(e)})",
            type="LLMRequestError",
            non_retryable=True,
        ) from None


# How servers refuse an answer limit (a budget's max_tokens): OpenAI's reasoning models want
# it named max_completion_tokens; OpenAI ("supports at most 4096 completion tokens"),
# Anthropic's compatible API ("max_tokens: 16384 > 8192, which is the maximum") and vLLM
# ("maximum context length is 8192 tokens … (7000 in the messages, …)") say what fits.
_AT_MOST = (
    re.compile(r"supports at most (\d+) (?:completion|output)? ?tokens", re.I),
    re.compile(r"> ?(\d+), which is the maximum", re.I),
    re.compile(r"range of max_tokens is \[\d+, ?(\d+)\]", re.I),  # DeepSeek's
    re.compile(r"max_tokens`? must be less than or equal to `?(\d+)", re.I),  # Groq's
)
# What a server taught about the answer limit, by (base URL, model): its own lower limit, or
# "renamed" (it takes max_completion_tokens).
_LEARNED: dict[tuple[str, str], int | str] = {}
_CONTEXT = re.compile(
    r"maximum context length is (\d+) tokens.*?\((\d+) in the messages", re.I | re.S
)


def answer_limit_fitted(error: str, kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """The request again with the answer limit the server's refusal asks for — renamed, or
    lowered to what it says fits (never raised: the share set it) — or None when the refusal
    is not about that limit."""
    limit = kwargs.get("max_tokens")
    if not isinstance(limit, int):
        return None
    if "max_completion_tokens" in error and "max_tokens" in error:
        fitted = {k: v for k, v in kwargs.items() if k != "max_tokens"}
        return fitted | {"max_completion_tokens": limit}
    fits: int | None = None
    for pattern in _AT_MOST:
        if (m := pattern.search(error)) is not None:
            fits = int(m.group(1))
            break
    if fits is None and (m := _CONTEXT.search(error)) is not None:
        fits = int(m.group(1)) - int(m.group(2))
    if fits is None and re.search(r"\bmax_tokens\b", error):
        # about the limit, with no number we read: asked without it (the answer is counted
        # as it comes, against the share, as before a share passed one)
        return {k: v for k, v in kwargs.items() if k != "max_tokens"}
    if fits is None or not 0 < fits < limit:
        return None
    return kwargs | {"max_tokens": fits}


def _read_limit(error: str) -> bool:
    """Does the refusal state the model's own output limit (not a fit to one prompt)?"""
    return any(pattern.search(error) for pattern in _AT_MOST)


def _as_learned(kwargs: dict[str, Any], learned: int | str | None) -> dict[str, Any]:
    """``kwargs`` as what the server taught before asks them (nothing learned: as they are)."""
    limit = kwargs.get("max_tokens")
    if learned is None or not isinstance(limit, int):
        return kwargs
    if learned == "renamed":
        rest = {k: v for k, v in kwargs.items() if k != "max_tokens"}
        return rest | {"max_completion_tokens": limit}
    return kwargs | {"max_tokens": min(limit, int(learned))}


def as_message(message: Any) -> dict[str, Any]:
    """A reply as a chat message to send back (without fields servers refuse on input)."""
    return message.model_dump(
        mode="json", exclude_none=True, exclude={"refusal", "annotations", "audio"}
    )


def _short(e: Exception) -> str:
    text = " ".join(str(e).split())
    return text[:300]
