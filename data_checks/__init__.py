"""Great Expectations suites for raw tables and client partitions."""
