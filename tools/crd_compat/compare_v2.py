#!/usr/bin/env python3
"""Compares what the API server did with the trainer.kubeflow.org corpus (corpus_v2.py) under
upstream's CRDs and under coach's.

  compare_v2.py CORPUS_DIR UPSTREAM_RESULTS_DIR COACH_RESULTS_DIR

Each results dir holds <case>.rc and <case>.out (the object `kubectl ... --dry-run=server -o
json` returned, or the error). Exit 1 when, for any case:
- upstream accepts and coach refuses, or upstream refuses and coach accepts (accept-coach
  cases aside: coach must accept those and keep them as given);
- the case's expectation does not hold under upstream's CRDs (the corpus itself is wrong);
- a reject case's CEL message is missing from either error;
- both accept and the stored spec (or, for status cases, status) differs: a value both hold
  differently, a value of the manifest coach dropped, a value only upstream holds outside a pod
  template (a default coach lacks), or a value only coach holds. Inside pod templates upstream
  also stores the core/v1 defaults its inlined PodSpec declares (ports[].protocol and the like;
  the API server gives every Pod the same ones): those are listed, not failed.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
from compare import first_line, get, leaves, load
from corpus_v2 import is_pod_path


def stored(obj, part):
    return (obj or {}).get(part, {})


def main(argv):
    corpus, up_dir, coach_dir = argv[1], argv[2], argv[3]
    rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(corpus, "index.tsv")) if l.strip()]
    failures, pod_defaults = [], set()
    counts, outcome = {}, {"both": 0, "upstream only": 0, "coach only": 0, "neither": 0}
    cel_checked = 0
    for case, expect, message, _note in rows:
        up_rc, up_obj, up_out = load(up_dir, case)
        co_rc, co_obj, co_out = load(coach_dir, case)
        counts[expect] = counts.get(expect, 0) + 1
        outcome["both" if up_rc == 0 and co_rc == 0 else "upstream only" if up_rc == 0 else
                "coach only" if co_rc == 0 else "neither"] += 1
        with open(os.path.join(corpus, case + ".json")) as f:
            manifest = json.load(f)
        part = "status" if os.path.exists(os.path.join(corpus, case + ".status.json")) else "spec"
        if part == "status":
            with open(os.path.join(corpus, case + ".status.json")) as f:
                manifest = json.load(f)
        fail = lambda why: failures.append("%s: %s" % (case, why))
        if expect == "accept-coach":
            if co_rc != 0:
                fail("coach refuses a template a Pod accepts: " + first_line(co_out))
            elif any(get(stored(co_obj, part), p) != v for p, v in leaves(manifest[part])):
                fail("coach did not keep the template as given")
            continue
        if expect == "reject" and up_rc == 0:
            fail("corpus: upstream's CRDs accept a reject case")
        if expect == "accept" and up_rc != 0:
            fail("corpus: upstream's CRDs refuse an accept case: " + first_line(up_out))
        if up_rc == 0 and co_rc != 0:
            fail("upstream accepts, coach refuses: " + first_line(co_out))
        if up_rc != 0 and co_rc == 0:
            fail("upstream refuses (%s), coach accepts" % first_line(up_out))
        if expect == "reject" and message:
            cel_checked += 1
            for who, out, rc in (("upstream", up_out, up_rc), ("coach", co_out, co_rc)):
                if rc != 0 and message not in out:
                    fail("%s's error lacks %r: %s" % (who, message, first_line(out)))
        if up_rc != 0 or co_rc != 0:
            continue
        up_s, co_s = stored(up_obj, part), stored(co_obj, part)
        for path, v in leaves(manifest[part]):
            got = get(co_s, path)
            # An empty object the schema fills with defaults (mpi: {}) is kept.
            if got != v and not (v == {} and isinstance(got, dict)):
                fail("coach dropped or changed %s.%s" % (part, ".".join(map(str, path))))
        for path, v in leaves(up_s):
            got = get(co_s, path)
            if got is KeyError and is_pod_path(path):
                pod_defaults.add(".".join(str(p) for p in path[-2:]) + "=" + json.dumps(v))
            elif got != v:
                fail("%s.%s is %s under upstream, %s under coach" % (
                    part, ".".join(map(str, path)), json.dumps(v),
                    "absent" if got is KeyError else json.dumps(got)))
        for path, v in leaves(co_s):
            if get(up_s, path) is KeyError:
                fail("%s.%s=%s only under coach" % (part, ".".join(map(str, path)), json.dumps(v)))
    print("crd_compat v2: %d cases (%s): accepted by %s; %d refusals checked for upstream's "
          "CEL message" % (len(rows), ", ".join("%s %d" % kv for kv in sorted(counts.items())),
                           ", ".join("%s %d" % kv for kv in outcome.items()), cel_checked))
    if pod_defaults:
        print("crd_compat v2: pod-template defaults only upstream stores (the API server gives "
              "Pods the same): %s" % ", ".join(sorted(pod_defaults)[:12]))
    for f in failures:
        print("crd_compat v2: FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
