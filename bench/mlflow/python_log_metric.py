"""The Python client's baseline: mlflow.log_metric in a loop for SECONDS, one JSON line out.

Usage: MLFLOW_TRACKING_URI=... python_log_metric.py SECONDS
"""
import json
import sys
import time

import mlflow

seconds = float(sys.argv[1])
mlflow.set_experiment("bench")
with mlflow.start_run(run_name="python"):
    n = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        mlflow.log_metric("train/loss", 1.0 / (n + 1), step=n)
        n += 1
    elapsed = time.perf_counter() - start
print(json.dumps({"mode": "python", "points": n, "seconds": elapsed, "metrics_per_s": n / elapsed}))
