"""Values the trusted side computes once per process: call digests and tensor-derived values."""
