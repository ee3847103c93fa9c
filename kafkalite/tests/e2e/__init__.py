"""Subprocesses: the CLI, a wheel in a fresh venv, the image's entry points, a fuzz slice, Spark against a broker process."""
