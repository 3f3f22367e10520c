"""Errors meant for people: one line, exit code 2 (bad input or the tool could not run)."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input the user can fix: a missing file, an unknown preset, a malformed spec or policy.

    The message is one line: what was wrong, where, and what to do. The CLI prints it and exits 2.
    """

    exit_code = 2


class OutputError(InputError):
    """An output that cannot or must not be written: it is an input, a link, two options name one file, the
    disk is full. One line; exit 2; the previous file, if any, is left as it was."""
