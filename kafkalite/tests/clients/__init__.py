"""Real client libraries in this process: confluent-kafka, kafka-python, the tools, the console in chromium, Spark."""
