"""The sweep spec: the YAML file read, every value validated before anything exists."""
