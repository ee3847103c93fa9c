"""Process and event-loop hygiene (supervision, loop threads, stall probes, GC and malloc policy); no Kafka semantics."""
