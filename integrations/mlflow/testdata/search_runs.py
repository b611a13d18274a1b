"""Prints the runs of an experiment that carry a tag value, as JSON (for coach's C++ tests).

Usage: MLFLOW_TRACKING_URI=... search_runs.py EXPERIMENT_NAME TAG_KEY TAG_VALUE
       TAG_KEY "-": every run of the experiment (TAG_VALUE ignored).
"""
import json
import sys

from mlflow.tracking import MlflowClient


def main():
    name, key, value = sys.argv[1:4]
    client = MlflowClient()
    exp = client.get_experiment_by_name(name)
    if exp is None:
        print(json.dumps({"runs": []}))
        return
    runs = client.search_runs([exp.experiment_id],
                              filter_string="" if key == "-" else f"tags.`{key}` = '{value}'",
                              max_results=100)
    print(json.dumps({"runs": [{"run_id": r.info.run_id, "status": r.info.status,
                                "tags": dict(r.data.tags), "params": dict(r.data.params),
                                "metrics": dict(r.data.metrics)} for r in runs]}))


if __name__ == "__main__":
    main()
