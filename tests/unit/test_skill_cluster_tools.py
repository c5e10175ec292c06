"""TaskClusterAgent's tools, called as a model would: names must be a verb and an object, a
model-written task founds nothing, one session makes a seed, a second session's atom founds
the skill with it, and a cross-project add below the bar is refused."""

from __future__ import annotations

from activities.skills.cluster_agent import AddToSkill, NewSkillFolder, _Placing
from xsky.skills.atoms import AtomTask, Provenance
from xsky.skills.clustering import SkillSummary, atom_keywords
from xsky.skills.evidence import Seed, project_of, session_of

INTENT = "fix the flaky payment tests in ci, they time out on retries"


def _atom(traj: str, session: str, origin: str = "person") -> AtomTask:
    return AtomTask(
        atom_id=f"atom_{traj}_0001",
        traj_id=traj,
        offset_start=0,
        offset_end=1,
        intent=INTENT,
        summary="s",
        tags=["pytest", "flaky"],
        ux_score=9,
        provenance=Provenance(session=session, origin=origin),  # type: ignore[arg-type]
    )


def _new(name: str = "fix-flaky-tests", seeds: list[str] | None = None) -> NewSkillFolder:
    return NewSkillFolder(
        name=name,
        description="Fixes flaky tests. Use when a test fails now and then.",
        weightscore=8,
        reason="r",
        seed_atoms=seeds or [],
    )


def test_a_name_of_prompt_words_is_refused_and_one_session_only_makes_a_seed() -> None:
    placing = _Placing(_atom("traj_cc_shop_00000001", "s1"), {}, [])
    assert placing.new_skill_folder(_new("bad-idea-since")).startswith("ERROR: a name starts")
    assert placing.decisions == []
    answer = placing.new_skill_folder(_new())
    assert answer.startswith("ok: held as a seed") and placing.decided()
    (d,) = placing.decisions
    assert (d.action, d.skill, d.founders) == ("seed", "fix-flaky-tests", [])


def test_a_second_sessions_atom_founds_the_skill_with_the_seed_a_model_written_one_cannot() -> None:
    first = _atom("traj_cc_shop_00000001", "s1")
    seed = Seed(
        atom_id=first.atom_id,
        traj_id=first.traj_id,
        session=session_of(first),
        project=project_of(first.traj_id),
        weightscore=8,
        keywords=atom_keywords(first),
        name="fix-flaky-tests",
    )
    by_model = _Placing(_atom("traj_cc_shop_00000002", "s2", origin="model"), {}, [seed])
    assert "written by a model" in by_model.new_skill_folder(_new(seeds=[seed.atom_id]))
    assert by_model.decisions == []
    # the parent's own subagent: the same session, so still one session's evidence
    sub = _Placing(_atom("traj_cc_shop_00000003", "s1"), {}, [seed])
    assert sub.new_skill_folder(_new(seeds=[seed.atom_id])).startswith("ok: held as a seed")
    other = _Placing(_atom("traj_cc_shop_00000004", "s2"), {}, [seed])
    assert other.new_skill_folder(_new(seeds=[seed.atom_id])).startswith("ok: new baby skill")
    (d,) = other.decisions
    assert d.action == "new" and d.founders == [seed.atom_id]


def test_an_add_across_projects_below_the_bar_is_refused_within_the_project_it_stands() -> None:
    skill = SkillSummary(
        name="fix-flaky-tests",
        keywords=["pytest", "flaky", "a", "b", "c", "d", "e", "f"],
        projects=["shop"],
    )
    add = AddToSkill(skill="fix-flaky-tests", weightscore=6, reason="r")
    across = _Placing(_atom("traj_cc_blog_00000001", "s9"), {skill.name: skill}, [])
    assert "other projects" in across.add_to_skill(add) and across.decisions == []
    inside = _Placing(_atom("traj_cc_shop_00000009", "s9"), {skill.name: skill}, [])
    assert inside.add_to_skill(add).startswith("ok:") and inside.decisions[0].action == "add"
