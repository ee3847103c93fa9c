"""Kafka's classic consumer-group protocol and committed offsets: a pure state machine (``coordinator``) and its trio service."""
