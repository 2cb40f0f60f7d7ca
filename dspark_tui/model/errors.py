"""The one exception type the CLI turns into a one-line message instead of a traceback."""


class UserError(Exception):
    """A mistake the user can fix: bad plan, bad path, port taken. str() is the whole message."""
