"""Typed errors. The CLI turns any :class:`PrhError` into one line on stderr and exit status 2."""


class PrhError(Exception):
    """Base class for every error that ``prh`` reports to a user as one clear line."""


class InputError(PrhError, ValueError):
    """Bad user input: a file, a row, a flag. The message names what was expected and what came."""


class CheckpointError(PrhError):
    """A checkpoint that is missing, corrupt or from a different model."""


class TrainingError(PrhError):
    """Training could not go on (a non-finite loss, say); the last good checkpoint is kept."""
