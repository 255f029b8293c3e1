"""Hardware: GPU specs, LLM configs, and the calibrated iteration-time PerfModel (with a numba form)."""
