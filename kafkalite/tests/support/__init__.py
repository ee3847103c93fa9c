"""Helpers the tests share (raw and SASL clients, chromium, process probes); not tests."""
