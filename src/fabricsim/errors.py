"""The one exception type users see: a message that names the problem and the fix."""


class FabricsimError(Exception):
    """Bad input or an impossible request. The CLI prints `str(err)` alone, with no traceback."""
