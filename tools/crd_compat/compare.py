#!/usr/bin/env python3
"""Compares what the API server did with the corpus under upstream's CRDs and under coach's.

  compare.py CORPUS_DIR UPSTREAM_RESULTS_DIR COACH_RESULTS_DIR

Each results dir holds <case>.rc (kubectl's exit status) and <case>.out (the object the API
server returned from `kubectl apply --dry-run=server -o json`, or the error). Exit 1 when:
- a case upstream accepts (expect accept) is rejected by coach's CRDs;
- coach stores a spec different from the manifest's (a dropped or changed field; the only
  additions allowed are coach's runPolicy default ({}) and the runPolicy.suspend default
  both CRDs declare);
- upstream stores a value that coach's stored object lacks or holds differently;
- a reject case is accepted by coach's CRDs, or an accept-coach case is not kept as given.
"""
import json
import os
import sys


def load(results, case):
    with open(os.path.join(results, case + ".rc")) as f:
        rc = int(f.read().strip() or "1")
    with open(os.path.join(results, case + ".out"), errors="replace") as f:
        out = f.read()
    obj = None
    if rc == 0:
        try:
            obj = json.loads(out)
        except ValueError:
            rc = 1
    return rc, obj, out


def leaves(v, path=()):
    if isinstance(v, dict) and v:
        for k, sub in v.items():
            yield from leaves(sub, path + (k,))
    elif isinstance(v, list) and v:
        for i, sub in enumerate(v):
            yield from leaves(sub, path + (i,))
    else:
        yield path, v


def get(v, path):
    for p in path:
        if isinstance(v, dict) and p in v:
            v = v[p]
        elif isinstance(v, list) and isinstance(p, int) and p < len(v):
            v = v[p]
        else:
            return KeyError
    return v


def expected_spec(manifest):
    spec = json.loads(json.dumps(manifest["spec"]))
    # coach's CRDs default runPolicy to {} (the upstream SDK's models need one).
    spec.setdefault("runPolicy", {})
    if isinstance(spec.get("runPolicy"), dict):
        spec["runPolicy"].setdefault("suspend", False)
    return spec


def first_line(text):
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return " ".join(lines)[:400] if lines else "(no output)"


def main(argv):
    corpus, up_dir, coach_dir = argv[1], argv[2], argv[3]
    rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(corpus, "index.tsv")) if l.strip()]
    failures, notes = [], []
    counts = {"both": 0, "up_only": 0, "coach_only": 0, "neither": 0}
    upstream_defaults = set()
    for case, expect, note in rows:
        up_rc, up_obj, up_out = load(up_dir, case)
        co_rc, co_obj, co_out = load(coach_dir, case)
        key = ("both" if up_rc == 0 and co_rc == 0 else "up_only" if up_rc == 0 else
               "coach_only" if co_rc == 0 else "neither")
        counts[key] += 1
        manifest = None
        if os.path.exists(os.path.join(corpus, case + ".json")):
            with open(os.path.join(corpus, case + ".json")) as f:
                manifest = json.load(f)
        if expect == "reject":
            if co_rc == 0:
                failures.append("%s: coach's CRDs accept a value that cannot run (%s)" % (case, note))
            elif up_rc != 0:
                notes.append("%s: rejected by both (upstream: %s)" % (case, first_line(up_out)))
            continue
        if co_rc != 0:
            if expect == "accept" and up_rc == 0:
                failures.append("%s: upstream accepts, coach rejects: %s" % (case, first_line(co_out)))
            elif expect == "accept-coach":
                failures.append("%s: coach rejects a template a Pod accepts: %s"
                                % (case, first_line(co_out)))
            else:
                notes.append("%s: rejected by both (upstream: %s)" % (case, first_line(up_out)))
            continue
        if manifest is not None and co_obj.get("spec") != expected_spec(manifest):
            diff = [path for path, v in leaves(expected_spec(manifest))
                    if get(co_obj["spec"], path) != v]
            diff += [path for path, v in leaves(co_obj["spec"])
                     if get(expected_spec(manifest), path) != v]
            failures.append("%s: coach stored a different spec, first differing paths: %s"
                            % (case, diff[:5]))
        if up_rc == 0:
            for path, v in leaves(up_obj["spec"]):
                got = get(co_obj["spec"], path)
                if got is KeyError:
                    upstream_defaults.add(".".join(str(p) for p in path[-2:]) + "=" + json.dumps(v))
                elif got != v:
                    failures.append("%s: spec.%s is %r under upstream, %r under coach"
                                    % (case, ".".join(map(str, path)), v, got))
        elif expect == "accept":
            notes.append("%s: coach accepts, upstream rejects: %s" % (case, first_line(up_out)))
    print("crd_compat: %d cases: accepted by both %d, upstream only %d, coach only %d, neither %d"
          % (len(rows), counts["both"], counts["up_only"], counts["coach_only"], counts["neither"]))
    expects = {}
    for _, e, _ in rows:
        expects[e] = expects.get(e, 0) + 1
    print("crd_compat: by expectation: %s" % ", ".join("%s %d" % kv for kv in sorted(expects.items())))
    if upstream_defaults:
        print("crd_compat: leaves only upstream's stored objects have (its schema defaults; the API "
              "server adds the same to pods): %s" % ", ".join(sorted(upstream_defaults)[:12]))
    for n in notes:
        print("crd_compat: note: " + n)
    for f in failures:
        print("crd_compat: FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
