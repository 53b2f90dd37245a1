"""Kept importable for code written against the old path: redaction is
:mod:`webshepherd.daemon.redact` (the serving core's telemetry masks with it too)."""

from webshepherd.daemon.redact import MASK, Redactor, mask_password_lines, password_elements

__all__ = ["MASK", "Redactor", "mask_password_lines", "password_elements"]
