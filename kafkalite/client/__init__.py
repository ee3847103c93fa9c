"""A small synchronous Kafka client on the project's own codec (tools and tests use it)."""
