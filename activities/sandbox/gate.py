"""The permission gate every tool call of an agent passes: decide, record, and act on it.

The gate decides with the worker's trusted settings and, for a role the worker does not know,
with that role's privileged tools marked person-only (``PermissionSettings.person_only_tools``):
only a person's approval of the exact call, or a rule a person gave for the run, lets one run.

An MCP tool is decided under both its names — the one shown to the agent and the server's
own (``real_names``) — so a rule written for the tool that runs holds whatever it is shown as.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from activities import metrics
from activities.sandbox import checker
from activities.tools import NeedsHuman
from xsky.runs import DecisionRecord, ToolApproval  # the approvals' type, as AgentInput has it
from xsky.security import idempotence
from xsky.security.mcp import Hint, is_mcp
from xsky.security.permissions import MAX_COMMAND, Decision, PermissionSettings, decide
from xsky.security.roles import RoleCapabilityModel
from xsky.security.rules import effect_rules
from xsky.security.tools import PROCESS_TOOLS  # the tools that start processes (the exec flag)

log = logging.getLogger("xsky.security.permissions")
SANDBOX_OFF = "sandbox-off"


def summarize(arguments: dict[str, Any], limit: int = MAX_COMMAND) -> str:
    """A call's arguments as JSON for the permission log, each string whole up to ``limit``
    characters — as long a command as the checker reads, so an entry shows exactly what ran.
    A longer value (a file's content) is cut, saying how much was left out."""

    def kept(value: Any) -> Any:
        if isinstance(value, str) and len(value) > limit:
            return value[:limit] + f"… ({len(value) - limit:,} more characters)"
        return value

    return json.dumps(
        {name: kept(value) for name, value in arguments.items()}, ensure_ascii=False, default=str
    )


class Gate:
    """One attempt's gate: the worker's trusted rules, the people's approvals of this dispatch,
    the agent's role, its workspace and the folders its commands may not name (``refused``: the
    input's grants its leader did not confirm, activities/agents/grants.py)."""

    def __init__(
        self,
        *,
        task_id: str,
        permissions: PermissionSettings,
        approvals: Sequence[ToolApproval],
        role: RoleCapabilityModel,
        workspace: Path,
        unconfined: bool = False,
        person_only: Sequence[str] = (),
        protected: Sequence[str] = (),
        refused: Sequence[DecisionRecord] = (),
        named_only: bool = False,
    ):
        self.approvals = list(approvals)
        self.role = role
        given = permissions.person_only_tools
        self.permissions = permissions.model_copy(
            update={"person_only_tools": list(dict.fromkeys([*given, *person_only]))}
        )
        # ``named_only``: the attempt's one call takes no path and its workspace is neither
        # checked nor made (a no-op, a gather, the offline llm: no gate decision reads it), so
        # its real path is not looked up — a lookup per folder of the path, a fifth of a no-op's CPU.
        self.workspace = str(workspace) if named_only else str(workspace.resolve())
        # The grants of the input its leader did not confirm come first in the permission log.
        self.decisions: list[DecisionRecord] = list(refused)
        self._used: set[str] = set()  # approvals already spent in this attempt
        self.unconfined = unconfined
        self._warned = False
        self.protected = list(protected)  # folders commands may not name (the worker's own)
        # What the MCP servers of this attempt's tools say of them (read-only, destructive).
        self.hints: dict[str, Hint] = {}
        # MCP tools their server calls idempotent (idempotentHint): in doubt, they run again
        self.idempotent_mcp: set[str] = set()
        # An MCP tool shown under another name than its server's: shown name → mcp__server__real.
        self.real_names: dict[str, str] = {}
        if permissions.mode == "bypass":
            log.warning("%s runs in permission mode BYPASS: only deny rules are enforced", task_id)

    async def decide(self, tool: str, arguments: dict[str, Any]) -> Decision:
        if is_mcp(tool):  # no parsing (its rules take no arguments), and both of its names
            decision = self.would(tool)
        else:
            decision = await checker.check(
                tool,
                arguments,
                self.role,
                self.permissions,
                self.workspace,
                self.protected,
                hints=self.hints,
            )
        if self.unconfined and tool in PROCESS_TOOLS and not self._warned:
            self._warned = True  # on the board and in the run's permission log: nothing confines these commands
            self.decisions.append(
                DecisionRecord(
                    at=datetime.now(UTC),
                    tool=SANDBOX_OFF,
                    arguments=tool,
                    effect="allow",
                    reason="security.sandbox is off in the worker's settings: commands run "
                    "without the OS sandbox",
                )
            )
        self.decisions.append(
            DecisionRecord(
                at=datetime.now(UTC),
                tool=tool,
                arguments=summarize(arguments),
                effect=decision.effect,
                reason=decision.reason,
            )
        )
        return decision

    def tracked(self, tool: str) -> bool:
        """Is a call of ``tool`` one that may change something (kept track of while it runs, so
        a retry knows it may have run)? Reads are not: one that may have run is read again."""
        return idempotence.changes_something(tool, self.hints.get(tool) == "read_only")

    def not_repeatable(
        self, tool: str, arguments: dict[str, Any], config: dict[str, Any] | None
    ) -> str | None:
        """Why this call, should it have run already, must not run again unasked (None: it
        may), by the worker's ``permissions.effects`` rules, the agent's config and the call."""
        return idempotence.not_repeatable(
            tool,
            arguments,
            effects=effect_rules(self.permissions),
            config=config,
            mcp_read_only=self.hints.get(tool) == "read_only",
            mcp_idempotent=tool in self.idempotent_mcp,
            workspace=self.workspace,
        )

    def would(self, tool: str) -> Decision:
        """The decision on a tool whose rules take no arguments (an MCP tool), not recorded:
        what the agent is shown."""
        return decide(
            tool,
            {},
            self.role,
            self.permissions,
            self.workspace,
            self.protected,
            self.hints,
            self.real_names,
        )

    def readable(self, path: str) -> bool:
        """May this workspace file be read? (file_read deny rules hold for every tool that reads.)"""
        decision = decide("file_read", {"path": path}, self.role, self.permissions, self.workspace)
        return not (decision.effect == "deny" and (decision.rule is not None or decision.hard))

    def network(self, destination: str, effect: str, reason: str) -> None:
        """A connection the egress proxy let through or refused, for the run's permission log."""
        self.decisions.append(
            DecisionRecord(
                at=datetime.now(UTC),
                tool="network",
                arguments=destination,
                effect="deny" if effect == "deny" else "allow",
                reason=reason,
            )
        )

    def approval(self, tool: str, arguments: dict[str, Any]) -> Any:
        """A person's decision on exactly this call, if one came with this dispatch; each is used once."""
        for approval in reversed(self.approvals):
            if (
                approval.request_id not in self._used
                and approval.tool == tool
                and approval.arguments == arguments
            ):
                self._used.add(approval.request_id)
                return approval
        return None

    def _denial(self, tool: str, arguments: dict[str, Any]) -> Any:
        """A "deny" of exactly this call that came with this dispatch, if any (used once)."""
        for approval in reversed(self.approvals):
            if (
                approval.request_id not in self._used
                and approval.decision == "deny"
                and approval.tool == tool
                and approval.arguments == arguments
            ):
                self._used.add(approval.request_id)
                return approval
        return None

    async def check(self, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        """(may run, why not). Raises NeedsHuman when a person must decide first."""
        decision = await self.decide(tool, arguments)
        if decision.effect == "allow":
            # A person's (or the leader's) "deny" of exactly this call, carried by this dispatch,
            # wins over a rule that allows it now: an "allow for the run" given to another item
            # of a loop after this call asked (the same command, other values) allowed it before
            # the deny was looked at, and the denied command ran.
            refusal = self._denial(tool, arguments)
            if refusal is None:
                metrics.tool_call(tool, "allowed")
                return True, ""
            approval = refusal
        elif decision.effect == "deny":
            metrics.tool_call(tool, "denied")
            return False, decision.reason
        else:
            approval = self.approval(tool, arguments)
            if approval is not None and approval.by == "leader" and decision.hard:
                # Only a person may approve this call: an approval the leader gave is not theirs.
                approval = None
            if approval is None:
                metrics.tool_call(tool, "asked")
                raise NeedsHuman(
                    "needs_approval",
                    tool=tool,
                    arguments=arguments,
                    rule=decision.reason,
                    hard=decision.hard,
                )
        who = "the leader" if approval.by == "leader" else "a person"
        # the record of this call says what was done with it, not the ask it answered
        effect: Literal["allow", "deny"] = "deny" if approval.decision == "deny" else "allow"
        verb = "denied" if effect == "deny" else "approved"
        self._answered(
            tool,
            effect,
            f"{verb} by {who} ({approval.request_id}): {decision.reason}",
            "leader" if approval.by == "leader" else "person",
        )
        if approval.decision == "deny":
            metrics.tool_call(tool, "refused")
            return False, f"{who} denied it" + (f": {approval.message}" if approval.message else "")
        metrics.tool_call(tool, "approved")
        return True, ""

    def _answered(
        self,
        tool: str,
        effect: Literal["allow", "deny"],
        reason: str,
        by: Literal["person", "leader"],
    ) -> None:
        for i in range(len(self.decisions) - 1, -1, -1):
            if self.decisions[i].tool == tool:  # the record decide() just made of this call
                self.decisions[i] = self.decisions[i].model_copy(
                    update={"effect": effect, "reason": reason, "by": by}
                )
                return

    def details(self) -> dict[str, Any]:
        return {"permissionDecisions": [d.wire() for d in self.decisions]}
