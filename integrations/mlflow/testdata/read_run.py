"""Reads a run back with the Python MLflow client and prints it as JSON (for coach's C++ tests).

Usage: MLFLOW_TRACKING_URI=... read_run.py RUN_ID [--metric KEY]... [--artifact PATH]...
"""
import argparse
import json
import os
import tempfile

from mlflow.tracking import MlflowClient


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run_id")
    ap.add_argument("--metric", action="append", default=[])
    ap.add_argument("--artifact", action="append", default=[])
    args = ap.parse_args()
    client = MlflowClient()
    run = client.get_run(args.run_id)
    out = {
        "run_id": run.info.run_id,
        "experiment_id": run.info.experiment_id,
        "run_name": run.info.run_name,
        "status": run.info.status,
        "start_time": run.info.start_time,
        "end_time": run.info.end_time,
        "params": run.data.params,
        "tags": {k: v for k, v in run.data.tags.items()},
        "metrics": {},
        "artifacts": {},
        "artifact_list": [f.path for f in client.list_artifacts(args.run_id)],
    }
    for key in args.metric:
        history = client.get_metric_history(args.run_id, key)
        out["metrics"][key] = {
            "count": len(history),
            "distinct_steps": len({m.step for m in history}),
            "min_step": min((m.step for m in history), default=None),
            "max_step": max((m.step for m in history), default=None),
        }
    with tempfile.TemporaryDirectory() as d:
        for path in args.artifact:
            local = client.download_artifacts(args.run_id, path, d)
            with open(local, "rb") as f:
                out["artifacts"][path] = f.read().decode("utf-8", "replace")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
