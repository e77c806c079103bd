"""Security tests: each module mounts one threat against the real daemon, CLI or extension."""
