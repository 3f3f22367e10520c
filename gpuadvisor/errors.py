"""Errors meant for people: one line, exit code 2 (bad input or the tool could not run)."""
from __future__ import annotations


class InputError(ValueError):
    """Bad input the user can fix: a missing file, an unknown preset, a malformed spec or policy.

    The message is one line: what was wrong, where, and what to do. The CLI prints it and exits 2.
    """

    exit_code = 2
