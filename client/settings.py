"""The settings files a client resolves: roles and permissions, user and project layers."""

from __future__ import annotations

from typing import Any

from xsky.config import Settings
from xsky.errors import (
    UsageError,
)
from xsky.plan.models import RoleCapabilityModel
from xsky.security.permissions import PermissionSettings
from xsky.security.roles import BUILTIN_ROLES, merge_roles, role_problems
from xsky.settings_files import SettingsError, load_layers, permission_settings, role_layers

# -- settings files: roles and permissions ------------------------------------------------------


def settings_layers(settings: Settings) -> list[Any]:
    try:
        return load_layers(settings)
    except SettingsError as e:
        raise UsageError(str(e)) from None


def resolve_roles(settings: Settings) -> dict[str, RoleCapabilityModel]:
    """Built-ins < user settings < project settings; bad files are usage errors."""

    layers = settings_layers(settings)
    roles = merge_roles(BUILTIN_ROLES.values(), *role_layers(layers))
    problems = [p for role in roles.values() for p in role_problems(role)]
    if problems:
        paths = ", ".join(layer.path for layer in layers) or "settings"
        raise UsageError(f"roles in {paths} are not valid: " + "; ".join(problems))
    return roles


def resolve_permissions(settings: Settings) -> PermissionSettings:
    """Permission rules of every settings layer and the mode (project over user)."""
    return permission_settings(settings_layers(settings))
