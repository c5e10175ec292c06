"""A request typed into the stock `temporal` CLI that does not fit: one sentence, with the field."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from xsky.leader.state import AnswerRequest
from xsky.wire_errors import one_sentence


def test_a_mistyped_field_is_named_not_only_the_one_it_hides() -> None:
    # "field requestId is missing (and 1 more problem(s))" said nothing of requestID or txt
    with pytest.raises(ValidationError) as e:
        AnswerRequest.model_validate({"requestID": "Q-1", "txt": "go"})
    said = one_sentence(AnswerRequest, e.value)
    assert "`requestId` is missing" in said and "`requestID` is sent instead" in said
    assert "unknown too: `txt`" in said
    with pytest.raises(ValidationError) as e:
        AnswerRequest.model_validate({"text": "go"})
    assert one_sentence(AnswerRequest, e.value).startswith("field `requestId` is missing;")
