"""Tools a model calls, each defined once: a pydantic model of its arguments and a function.

The OpenAI schema comes from the ``Args`` model (``openai.pydantic_function_tool``: strict,
optional fields nullable) and the same model validates what the model sends. Arguments that
are not a JSON object, fail validation or name no tool are answered with an ``ERROR: …``
tool result the model can act on, never raised. :func:`tool_loop` is the skill agents' one
conversation loop.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

import pydantic

from activities import llm

if TYPE_CHECKING:
    import openai  # imported when a model is first called (activities/llm.py)

A = TypeVar("A", bound=pydantic.BaseModel)


@dataclass(frozen=True)
class ModelTool(Generic[A]):
    """A tool: its name and what it does (both told to the model), the model of its
    arguments, and the function run on arguments that fit it (returning the tool result)."""

    name: str
    description: str
    # the argument model's class, named as the type it is
    Args: type[A]
    fn: Callable[[A], str | Awaitable[str]]

    @classmethod
    def of(
        cls,
        name: str,
        Args: type[A],
        fn: Callable[[A], str | Awaitable[str]],
    ) -> ModelTool[A]:
        """A tool whose description is its argument model's docstring."""
        return cls(name, inspect.cleandoc(Args.__doc__ or ""), Args, fn)

    def schema(self) -> dict[str, Any]:
        """The chat-completions tool definition, generated from ``Args``."""
        from openai import pydantic_function_tool

        tool = pydantic_function_tool(self.Args, name=self.name, description=self.description)
        params: dict[str, Any] = tool["function"]["parameters"]
        for key in ("title", "description"):  # the class name, and the tool's description again
            params.pop(key, None)
        for prop in params.get("properties", {}).values():
            prop.pop("title", None)  # the field's name again
        return dict(tool)

    async def answer(self, raw: str | None) -> str:
        """Run the tool on a model's raw arguments; bad arguments are answered, not raised."""
        try:
            data = json.loads(raw or "{}")
        except ValueError:
            data = None
        if not isinstance(data, dict):
            return f"ERROR: the arguments of {self.name} must be a JSON object"
        try:
            args = self.Args.model_validate(data)
        except pydantic.ValidationError as e:
            return f"ERROR: the arguments of {self.name} are not valid: {validation_text(e)}"
        result = self.fn(args)
        return await result if inspect.isawaitable(result) else result


def validation_text(e: pydantic.ValidationError) -> str:
    """One line per problem, ``field: message`` (no pydantic URLs)."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
        for err in e.errors(include_url=False)
    )


@dataclass(frozen=True)
class LoopEnd:
    turns: int  # model calls made
    reason: Literal["done", "answered", "max_turns"]


async def tool_loop(
    client: openai.AsyncOpenAI,
    target: llm.LLMTarget,
    messages: list[dict[str, Any]],
    tools: Sequence[ModelTool[Any]],
    *,
    max_turns: int,
    beat: Callable[[int], object],
    done: Callable[[], bool] = lambda: False,
    nudge: Callable[[], str | None] = lambda: None,
    temperature: float | None = None,
) -> LoopEnd:
    """Converse, ``messages`` growing in place, for at most ``max_turns`` model calls.

    Each turn is one :func:`activities.llm.chat` (timed, counted, errors sorted for
    Temporal), then ``beat(turn)``, then every tool call answered in order. ``done()``,
    asked after each turn, ends the loop; so does a reply without tool calls, unless
    ``nudge()`` returns a user message to send on with.
    """
    by_name = {t.name: t for t in tools}
    schemas = [t.schema() for t in tools]
    for turn in range(1, max_turns + 1):
        response = await llm.chat(client, target, messages, schemas, temperature)
        beat(turn)
        message = response.choices[0].message
        messages.append(llm.as_message(message))
        for call in message.tool_calls or []:
            name = call.function.name
            tool = by_name.get(name)
            content = (
                await tool.answer(call.function.arguments)
                if tool is not None
                else f"ERROR: unknown tool {name!r}; tools: {', '.join(by_name)}"
            )
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
        if done():
            return LoopEnd(turn, "done")
        if not message.tool_calls:
            follow_up = nudge()
            if follow_up is None:
                return LoopEnd(turn, "answered")
            messages.append({"role": "user", "content": follow_up})
    return LoopEnd(max_turns, "max_turns")
