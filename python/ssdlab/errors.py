"""User-facing errors: each says what was wrong, where, and what is accepted."""


class SsdlabError(Exception):
    """Bad input from the user (a config file, a job file, an option). The CLI prints the
    message alone, without a traceback."""
