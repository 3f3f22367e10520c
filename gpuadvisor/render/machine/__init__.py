"""Machine renderings: JSON, JUnit XML and Prometheus text, for CI, schedulers and monitoring."""
