"""Errors raised by the calibration tools (runners, builders, fits): the one hierarchy of planner/errors.py."""

from planner.errors import CalibrationError  # noqa: F401  (re-exported; a PlannerError)
