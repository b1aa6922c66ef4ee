#!/bin/bash
# compute-sanitizer's four tools over every built-in op at HEAD, and on one plant of each bug class.
set -uo pipefail
BUDGET_S=540 PART=sanitize bash benchmarks/gpu_blindspots.sh 2>&1 | tail -45
