"""Faults on command (issue #17): error injection, latency, dropped connections and paused brokers, per broker.

`control` is the seam to the cluster operations (`ClusterControl`, `ClusterOpError`, `SingleBrokerControl`).
"""
