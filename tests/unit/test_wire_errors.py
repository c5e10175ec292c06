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


def test_a_person_request_naming_a_field_it_lacks_is_refused_unless_left_empty() -> None:
    """A typo is refused (``decison`` once approved a call a person meant to deny); a field a
    newer client adds and sends empty (its model dumps every field) asks nothing."""
    from xsky.leader.state import ApproveToolRequest, ResumeRequest

    typo = ApproveToolRequest.model_validate({"requestId": "A-1", "decison": "deny"})
    said = typo.unknown_problem()
    assert said is not None and "`decision` for `decison`" in said and "nothing was changed" in said
    newer = ResumeRequest.model_validate({"reason": None, "keepWorkspace": False, "note": None})
    assert newer.unknown_problem() is None
    set_by_hand = ResumeRequest.model_validate({"keepWorkspace": True})
    assert set_by_hand.unknown_problem() is not None  # a value this worker cannot honour
    both_names = ApproveToolRequest.model_validate({"request_id": "A-1", "decision": "deny"})
    assert both_names.unknown_problem() is None  # snake_case names are the fields' own
