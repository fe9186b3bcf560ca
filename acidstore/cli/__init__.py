"""The ``acidstore`` command."""
