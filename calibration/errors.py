"""Errors raised by the calibration tools (runners, builders, fits)."""


class CalibrationError(RuntimeError):
    """A calibration step failed; the message names the step and carries the runtime's own message."""
