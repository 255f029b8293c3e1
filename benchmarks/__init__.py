"""Speed benchmarks of the simulator (not tests): ``python -m benchmarks`` / ``make bench``."""
