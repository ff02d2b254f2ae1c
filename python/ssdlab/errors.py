"""User-facing errors: each says what was wrong, where, and what is accepted."""


class SsdlabError(Exception):
    """Bad input from the user (a config file, a job file, an option). The CLI prints the
    message alone, without a traceback."""


def read_text(path, accepted: str) -> str:
    """The text of the file at `path`, or an SsdlabError naming the file and what went wrong:
    it cannot be read, or it is not UTF-8 text (`accepted` says what the caller takes)."""
    from pathlib import Path

    try:
        return Path(path).read_text()
    except OSError as e:
        raise SsdlabError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise SsdlabError(f"{path}: not a text file (byte 0x{e.object[e.start]:02x} at offset {e.start} "
                          f"is not UTF-8); accepted: {accepted}") from None
