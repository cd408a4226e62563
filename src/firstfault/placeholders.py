"""`{name}` placeholders in knowledge-base text, filled with values from the log."""
from __future__ import annotations

import re
from collections.abc import Mapping

# `{name}`, but not `${NAME}` (shell) nor `{{name}}` (escaped braces)
PLACEHOLDER = re.compile(r"(?<![{$])\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})")


def fill_placeholders(text: str, values: Mapping[str, object] | None = None) -> str:
    """Replace `{name}` with values[name]; a name without a value shows as `<name>`."""
    values = values or {}

    def replace(match: re.Match) -> str:
        value = values.get(match.group(1))
        return f"<{match.group(1)}>" if value is None else str(value)

    return PLACEHOLDER.sub(replace, text)
