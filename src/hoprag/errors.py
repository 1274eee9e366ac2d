"""One error tree for hoprag. Every message names the input, what was wrong, and the fix."""

from __future__ import annotations


class HopragError(Exception):
    """Base of every error hoprag raises on purpose."""


class InputError(HopragError):
    """A file or record given by the user cannot be read as asked.

    ``source`` names the file, ``line`` the 1-based line or record number, ``field`` the field.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        field: str | None = None,
        fix: str | None = None,
    ) -> None:
        self.source = source
        self.line = line
        self.field = field
        self.fix = fix
        where = ""
        if source is not None:
            where = str(source)
            if line is not None:
                where += f":{line}"
            where += ": "
        text = where + message
        if field is not None:
            text += f" (field '{field}')"
        if fix:
            text += f". Fix: {fix}"
        super().__init__(text)


class EmptyCorpusError(InputError):
    """A corpus with no documents (or no indexable text) was given."""


class UnknownFormatError(InputError):
    """A dataset or file format hoprag does not know."""


class IndexLoadError(HopragError):
    """An index directory is missing, incomplete or was built by an incompatible version."""


class ConfigError(HopragError):
    """A configuration value is invalid."""


class ExportError(HopragError):
    """Results could not be delivered to a receiver the user named (an OTLP endpoint); files are already written."""
