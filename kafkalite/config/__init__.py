"""Settings: names, types, defaults, validation, and how DescribeConfigs shows them."""
