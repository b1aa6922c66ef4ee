#!/bin/bash
set -uo pipefail
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvcc -arch=sm_90 -o /tmp/mp .carry/misaligned_probe.cu 2>/dev/null && /tmp/mp | tee $OUT/misaligned_probe.txt
cuobjdump -sass /tmp/mp 2>/dev/null | grep -E "Function|LDG|STG" | head -20
