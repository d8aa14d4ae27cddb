#!/usr/bin/env python3
"""Checks that files zbplan and zbrun write match schema/*.schema.json, and that the schemas reject
known-bad documents (so this check can fail). Usage: ZBPLAN=path ZBRUN=path check_schemas.py SOURCE_DIR TMP_DIR"""
import json
import os
import subprocess
import sys

import warnings

import jsonschema

warnings.simplefilter("ignore", DeprecationWarning)  # RefResolver: newer jsonschema prefers `referencing`

src, tmp = sys.argv[1], sys.argv[2]
zbplan = os.environ["ZBPLAN"]
zbrun = os.environ["ZBRUN"]
load = lambda path: json.load(open(path))
problem_schema = load(os.path.join(src, "schema/problem.schema.json"))
schedule_schema = load(os.path.join(src, "schema/schedule.schema.json"))
layers_schema = load(os.path.join(src, "schema/layers.schema.json"))
for schema in (problem_schema, schedule_schema, layers_schema):
    jsonschema.Draft202012Validator.check_schema(schema)
# schedule.schema.json refers to problem.schema.json by relative path, resolved in schema/.
base = "file://" + os.path.abspath(os.path.join(src, "schema")) + "/"
resolver = jsonschema.RefResolver(base + "schedule.schema.json", schedule_schema,
                                  store={base + "problem.schema.json": problem_schema,
                                         base + "layers.schema.json": layers_schema})
schedule_validator = jsonschema.Draft202012Validator(schedule_schema, resolver=resolver)
problem_validator = jsonschema.Draft202012Validator(problem_schema)
layers_validator = jsonschema.Draft202012Validator(layers_schema)

failures = 0
def expect(ok, what):
    global failures
    print(("ok      " if ok else "FAILED  ") + what)
    failures += not ok

def errors(validator, doc):
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]

common = ["-p", "4", "-m", "8", "--tf", "1.5,1,1,1.5", "--tb", "1", "--tw", "0.5", "--tcomm", "0.05",
          "--mem-limit", "2p"]
for method, extra in [("1f1b", []), ("zb-h1", []), ("zb-h2", []), ("1f1b-i", ["--chunks", "2"]),
                      ("ilp", ["--time-limit", "0.5", "--quiet"])]:
    out = os.path.join(tmp, f"schema_{method}.json")
    run = subprocess.run([zbplan, "plan", "--method", method, "-o", out] + common + extra,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if method == "ilp" and "needs CBC" in run.stderr:
        print("skip    ilp (built without CBC)")
        continue
    expect(run.returncode == 0, f"zbplan plan --method {method} {run.stderr.strip()}")
    doc = load(out)
    errs = errors(schedule_validator, doc)
    expect(not errs, f"{method} schedule file matches schedule.schema.json {errs[:3]}")
    errs = errors(problem_validator, doc["problem"])
    expect(not errs, f"{method} embedded problem matches problem.schema.json {errs[:3]}")

for example in sorted(os.listdir(os.path.join(src, "docs/examples"))):
    if example.endswith(".problem.json"):
        errs = errors(problem_validator, load(os.path.join(src, "docs/examples", example)))
        expect(not errs, f"docs/examples/{example} matches problem.schema.json {errs[:3]}")

# The schemas must reject what the loaders reject.
doc = load(os.path.join(tmp, "schema_zb-h1.json"))
bad_op = json.loads(json.dumps(doc)); bad_op["stages"][0][0] = {"type": "X", "mb": 0}
expect(errors(schedule_validator, bad_op), "schema rejects an unknown op type")
no_mb = json.loads(json.dumps(doc)); no_mb["stages"][0][0] = {"type": "F"}
expect(errors(schedule_validator, no_mb), "schema rejects an F without mb")
bad_limit = dict(doc["problem"], mem_limit="2x")
expect(errors(problem_validator, bad_limit), "schema rejects mem_limit '2x'")
bad_solver = json.loads(json.dumps(doc)); bad_solver["solver"]["status"] = "done"
expect(errors(schedule_validator, bad_solver), "schema rejects an unknown solver status")
no_gap = json.loads(json.dumps(doc)); del no_gap["solver"]["gap"]
expect(errors(schedule_validator, no_gap), "schema rejects a solver report without its gap")
if os.path.exists(os.path.join(tmp, "schema_ilp.json")):
    ilp_doc = load(os.path.join(tmp, "schema_ilp.json"))
    expect(ilp_doc["solver"]["best_bound"] <= ilp_doc["solver"]["objective"] + 1e-9, "ilp file: bound <= objective")
    # The wall-clock ILP (the default objective with a synchronous optimizer) reports the wall clock.
    out = os.path.join(tmp, "schema_ilp_wall.json")
    run = subprocess.run([zbplan, "plan", "--method", "ilp", "--optimizer", "sync", "-o", out] + common +
                         ["--time-limit", "0.5", "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    expect(run.returncode == 0, f"zbplan plan --method ilp --optimizer sync {run.stderr.strip()}")
    wall_doc = load(out)
    errs = errors(schedule_validator, wall_doc)
    expect(not errs, f"wall ilp schedule file matches schedule.schema.json {errs[:3]}")
    solver = wall_doc["solver"]
    expect(solver["cost"] == "wall" and abs(solver["objective"] - wall_doc["iterations"]["wall"]) < 1e-9,
           "wall ilp file: the solver reports the wall clock, optimizer included")
    expect(wall_doc["wall_lower_bound"] - 1e-9 <= solver["best_bound"] <= solver["objective"] + 1e-9,
           "wall ilp file: ramp bound <= best_bound <= objective")
    bad_cost = json.loads(json.dumps(wall_doc)); bad_cost["solver"]["cost"] = "time"
    expect(errors(schedule_validator, bad_cost), "schema rejects an unknown solver cost")
# Version 1's names are refused (issue 20): bubble_rate is span_bubble_rate now.
old = json.loads(json.dumps(doc)); old["bubble_rate"] = old.pop("span_bubble_rate")
expect(errors(schedule_validator, old), "schema rejects version 1's bubble_rate")
old = json.loads(json.dumps(doc)); old["version"] = 1
expect(errors(schedule_validator, old), "schema rejects version 1")
no_cost = json.loads(json.dumps(doc)); del no_cost["solver"]["cost"]
expect(errors(schedule_validator, no_cost), "schema rejects a solver report that does not say what it measures")
# A compute-level file records the span or the makespan that stood for its objective.
out = os.path.join(tmp, "schema_compute.json")
run = subprocess.run([zbplan, "plan", "--method", "zb-h1", "--compute-only", "-o", out] + common,
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
expect(run.returncode == 0, f"zbplan plan --compute-only {run.stderr.strip()}")
compute_doc = load(out)
expect(not errors(schedule_validator, compute_doc) and compute_doc["solver"]["cost"] == "span",
       "compute-level file matches the schema, its solver cost the span")
neg = dict(doc["problem"], t_f=-1)
expect(errors(problem_validator, neg), "schema rejects a negative t_f")

# The layer-cost file zbrun --profile-layers writes.
out = os.path.join(tmp, "schema_layers.json")
run = subprocess.run([zbrun, "--profile-layers", out, "--model", "tiny", "--profile-repeats", "1"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
expect(run.returncode == 0, f"zbrun --profile-layers {run.stderr.strip()}")
layers_doc = load(out)
errs = errors(layers_validator, layers_doc)
expect(not errs, f"zbrun --profile-layers file matches layers.schema.json {errs[:3]}")
neg = json.loads(json.dumps(layers_doc)); neg["layers"][0]["t_f"] = -1
expect(errors(layers_validator, neg), "schema rejects a layer's negative t_f")
bad_kind = json.loads(json.dumps(layers_doc)); bad_kind["layers"][0]["kind"] = "mlp"
expect(errors(layers_validator, bad_kind), "schema rejects an unknown layer kind")
bad_format = dict(layers_doc, format="zbpp-layers-2")
expect(errors(layers_validator, bad_format), "schema rejects another format version")

# A plan with its partition chosen from that file, under a device memory: the partition (with the
# layer table inside) and the per-stage limits match the schemas.
out = os.path.join(tmp, "schema_partition.json")
run = subprocess.run([zbplan, "plan", "--layers", os.path.join(tmp, "schema_layers.json"), "-p", "3", "-m", "6",
                      "--method", "heuristic", "--device-memory", "64MiB", "-o", out],
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
expect(run.returncode == 0, f"zbplan plan --layers --device-memory {run.stderr.strip()}")
part_doc = load(out)
errs = errors(schedule_validator, part_doc)
expect(not errs and "partition" in part_doc and isinstance(part_doc["problem"]["mem_limit"], list),
       f"--layers schedule file (partition, per-stage limits) matches schedule.schema.json {errs[:3]}")
no_counts = json.loads(json.dumps(part_doc)); del no_counts["partition"]["counts"]
expect(errors(schedule_validator, no_counts), "schema rejects a partition without its counts")
bad_layer = json.loads(json.dumps(part_doc)); bad_layer["partition"]["layers"]["layers"][0]["t_w"] = "slow"
expect(errors(schedule_validator, bad_layer), "schema rejects a partition's malformed layer")

print(f"{failures} failed")
sys.exit(1 if failures else 0)
