"""Hypothesis strategies for valid plans (shared by property tests)."""

from __future__ import annotations

import string

from hypothesis import strategies as st

from xsky.plan.models import RoleCapabilityModel, Step, Workflow, WorkflowAgent

# Anything XML 1.0 can carry: no C0 controls but tab/newline/CR, no surrogates, no U+FFFE/F.
_xml_char = st.characters(
    blacklist_categories=("Cs",),
    blacklist_characters="".join(chr(c) for c in range(0x20) if c not in (9, 10, 13))
    + "\ufffe\uffff",
)
xml_text = st.text(_xml_char, max_size=80)
nonblank_text = xml_text.filter(lambda s: s.strip() != "")
# Text biased toward what breaks naive writers: markup, entities, CDATA ends, edge whitespace.
tricky = st.sampled_from(
    [
        "&",
        "<",
        ">",
        '"',
        "'",
        "]]>",
        "{{x}}",
        "\r\n",
        "\r",
        "  ",
        "\n",
        "\t",
        "&amp;",
        "<![CDATA[",
        "😀",
        "\u2028",
    ]
)
rich_text = st.lists(st.one_of(xml_text, tricky), max_size=6).map("".join)
rich_nonblank = rich_text.filter(lambda s: s.strip() != "")


def _word(first: str, rest: str, longest: int = 10) -> st.SearchStrategy[str]:
    """The strings of ``[first][rest]{0,longest}``: one character and one string drawn, where
    ``from_regex`` draws every character on its own (a third of a generated plan's cost)."""
    return st.builds(str.__add__, st.sampled_from(first), st.text(rest, max_size=longest))


_LETTERS = string.ascii_letters
_ALNUM = _LETTERS + string.digits
agent_ids = _word(_ALNUM, _ALNUM + "_.-")  # [A-Za-z0-9][A-Za-z0-9_.-]{0,10}
agent_names = _word(_LETTERS, _ALNUM + "_-")  # [A-Za-z][A-Za-z0-9_-]{0,10}
var_names = _word(_LETTERS + "_", _ALNUM + "_")  # [A-Za-z_][A-Za-z0-9_]{0,10}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | rich_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(rich_text, inner, max_size=4),
    max_leaves=12,
)


def _step(children: st.SearchStrategy[list[Step]]) -> st.SearchStrategy[Step]:
    names = st.none() | st.lists(var_names, min_size=1, max_size=2).map(",".join)
    return st.one_of(
        st.builds(Step, kind=st.just("forEach"), items=st.none() | var_names, steps=children),
        st.builds(
            Step,
            kind=st.just("watch"),
            event=st.none() | st.sampled_from(["dom", "file", "timer", "http"]),
            loop=st.booleans(),
            description=st.none() | rich_text,
            steps=children,
        ),
    ) | st.builds(Step, kind=st.just("node"), text=rich_text, input=names, output=names)


# An agent's steps (<nodes>): nodes, and forEach / watch holding steps of their own.
steps = st.recursive(
    st.lists(_step(st.just([])), max_size=3),
    lambda inner: st.lists(_step(inner), max_size=3),
    max_leaves=8,
)


@st.composite
def workflows(draw: st.DrawFn) -> Workflow:
    ids = draw(st.lists(agent_ids, min_size=1, max_size=8, unique=True))
    agents = []
    for agent_id in ids:
        agents.append(
            WorkflowAgent(
                id=agent_id,
                name=draw(agent_names),
                task=draw(rich_nonblank),
                input=draw(st.none() | rich_text),
                config=draw(st.none() | st.dictionaries(rich_text, json_values, max_size=4)),
                depends=draw(st.lists(st.sampled_from(ids), max_size=3)),
                status=draw(st.sampled_from(["init", "running", "done", "error"])),
                result=draw(st.none() | rich_text),
                steps=draw(steps),
            )
        )
    tool_names = st.lists(
        st.text(string.ascii_lowercase + "_", min_size=1, max_size=12), max_size=3
    )
    roles = [
        RoleCapabilityModel(
            name=name,
            description=draw(rich_text),
            system_prompt=draw(rich_text),
            allowed_tools=draw(tool_names),
            requested_tools=draw(tool_names),
            skill_names=draw(tool_names),
            suggested_model=draw(st.none() | rich_text),
        )
        for name in draw(st.lists(agent_names, max_size=2, unique=True))
    ]
    return Workflow(
        roles=roles,
        name=draw(rich_text),
        task_id=draw(st.text(string.ascii_letters + string.digits + "-", min_size=1, max_size=36)),
        task_prompt=draw(st.none() | rich_text),
        agents=agents,
        modified=draw(st.booleans()),
        variables=draw(st.dictionaries(var_names, rich_text, max_size=3)),
    )
