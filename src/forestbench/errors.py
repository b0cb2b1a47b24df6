"""Errors caused by user input: each names what is wrong (file, key, dataset, shape) and is printed without a
traceback by the command line."""


class ForestbenchError(Exception):
    """Base class of the errors the CLI reports as a one-line message."""


class ConfigError(ForestbenchError):
    """A configuration file or key is invalid."""


class DataError(ForestbenchError):
    """A dataset, prepared file or split is missing, corrupted or of the wrong shape."""


class ParseError(DataError):
    """A raw data file cannot be parsed; the message names the file and the line."""

    def __init__(self, path, line, message):
        self.path, self.line = str(path), line
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")


class DownloadError(DataError):
    """A download failed or did not verify; the message names the dataset, URL and hashes."""
