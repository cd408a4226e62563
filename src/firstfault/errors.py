"""The exception tree. Every error a user can cause carries a one-line message and a hint."""
from __future__ import annotations


class FirstfaultError(Exception):
    """A known failure of the tool: shown as one line plus a hint, never a traceback."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class UsageError(FirstfaultError):
    """The command line asks for something impossible."""


class InputError(FirstfaultError):
    """No readable input at all (a single bad file is a skip, not an error)."""


class KnowledgeBaseError(FirstfaultError):
    """One or more entries are invalid; `problems` lists each with file:line."""

    def __init__(self, problems: list["Problem"]) -> None:
        self.problems = problems
        first = problems[0] if problems else None
        super().__init__(
            f"{len(problems)} problem(s) in the knowledge base, first: {first}",
            "run `firstfault kb check` to list them all",
        )


class UnknownEntryError(FirstfaultError):
    """An id that no entry has."""


class Problem:
    """One validation problem at file:line."""

    __slots__ = ("path", "line", "message")

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = path
        self.line = line
        self.message = message

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"

    def __repr__(self) -> str:
        return f"Problem({self!s})"
