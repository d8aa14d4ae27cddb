#!/usr/bin/env python3
"""Writes the bad-input corpus (problem/ and schedule/ with their .expect files). Schedules are
real zbplan output with one thing broken, so each file tests one finding.
Usage: ZBPLAN=build/zbplan tests/bad_inputs/make_corpus.py   (rewrites the corpus)"""
import json
import os
import subprocess
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
zbplan = os.environ["ZBPLAN"]

PLAN = "zbplan plan --method heuristic --problem {file} -o {out}"
SCHEDULE_CMDS = ["zbplan validate {file}", "zbplan simulate {file}", "zbrun {file} --local --steps 1 --timeout 5"]


def write(sub, name, text, expects):
    """expects: [(command, message)]; message without the file name is prefixed by it."""
    os.makedirs(os.path.join(here, sub), exist_ok=True)
    path = os.path.join(here, sub, name)
    mode = "wb" if isinstance(text, bytes) else "w"
    with open(path, mode) as f:
        f.write(text)
    with open(os.path.splitext(path)[0] + ".expect", "w") as f:
        for cmd, msg in expects:
            f.write(f"{cmd} => {msg}\n")


def problem(name, text, msg, cmd=PLAN, located=True):
    """located=False: the finding is about the method, not a place in the file (no file name)."""
    write("problem", name, text if isinstance(text, (str, bytes)) else json.dumps(text),
          [(cmd, (name if located else "zbplan: ") + msg)])


def schedule(name, doc_or_text, msg, cmds=SCHEDULE_CMDS):
    text = doc_or_text if isinstance(doc_or_text, (str, bytes)) else dump_schedule(doc_or_text)
    write("schedule", name, text, [(c, name + msg) for c in cmds])


def dump_schedule(doc):
    """One op a line, as zbplan writes it, so line:column messages stay readable."""
    if not isinstance(doc.get("stages"), list):
        return json.dumps(doc, indent=1) + "\n"
    head = {k: v for k, v in doc.items() if k != "stages"}
    lines = ["{"] + [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()] + ['  "stages": [']
    for si, ops in enumerate(doc["stages"]):
        lines.append("    [")
        for i, op in enumerate(ops):
            lines.append("      " + json.dumps(op) + ("," if i + 1 < len(ops) else ""))
        lines.append("    ]" + ("," if si + 1 < len(doc["stages"]) else ""))
    return "\n".join(lines + ["  ]", "}"]) + "\n"


def planned(*args):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "s.json")
        subprocess.run([zbplan, "plan", *args, "-o", out], check=True, capture_output=True)
        return json.load(open(out))


base = {"p": 4, "m": 8, "t_f": 1, "t_b": 1, "t_w": 0.5}


def with_(**kw):
    d = dict(base)
    d.update(kw)
    return d


# --- Problem files: zbplan plan --problem ------------------------------------------------------
problem("truncated.json", '{"p": 4, "m": 8, "t_f": 1,\n  "t_b"', ":2:8: invalid JSON: parse error at line 2, column 8")
problem("empty.json", "", ":1:1: invalid JSON: parse error at line 1, column 1")
problem("binary.json", b"\x00\xff\xfe{\x01", ":1:1: invalid JSON: parse error at line 1, column 1")
problem("nan-literal.json", '{"p": 4, "m": 8, "t_f": NaN, "t_b": 1, "t_w": 1}', ":1:25: invalid JSON: parse error at line 1, column 25: syntax error while parsing value - invalid literal")
# A number beyond a double was an uncaught nlohmann::out_of_range: zbplan aborted (found by fuzz_problem).
problem("number-overflow.json", '{"p": 4, "m": 8,\n "t_f": 1e400, "t_b": 1, "t_w": 1}',
        ":2:9: invalid JSON: number overflow parsing '1e400' (beyond the range of a double)")
problem("not-an-object.json", [4, 8, 1, 1, 0.5], ": /: expected a problem object, got array")
problem("missing-t_w.json", {"p": 4, "m": 8, "t_f": 1, "t_b": 1}, ": /: missing required field 't_w'")
problem("unknown-field.json", with_(stages=4), ": /stages: unknown field 'stages'")
problem("p-string.json", with_(p="4"), ': /p: expected an integer, got "4"')
problem("m-fraction.json", with_(m=8.5), ": /m: expected an integer, got 8.5")
problem("p-zero.json", with_(p=0), ": p (stages) must be at least 1, got 0")
problem("m-zero.json", with_(m=0), ": m (microbatches) must be at least 1, got 0")
problem("m-negative.json", with_(m=-3), ": m (microbatches) must be at least 1, got -3")
problem("p-1e9.json", with_(p=1000000000), ": problem too large (p <= 4096, m <= 1000000, chunks <= 64)")
problem("m-1e9.json", with_(m=1000000000), ": problem too large (p <= 4096, m <= 1000000, chunks <= 64)")
problem("p-2e9.json", '{"p": 2000000000, "m": 8, "t_f": 1, "t_b": 1, "t_w": 1}', ": /p: integer out of range: 2000000000")
problem("p-1e30.json", '{"p": 1e30, "m": 8, "t_f": 1, "t_b": 1, "t_w": 1}', ": /p: expected an integer, got 1e+30")
problem("m-20-digits.json", '{"p": 4, "m": 99999999999999999999, "t_f": 1, "t_b": 1, "t_w": 1}',
        ": /m: expected an integer, got 1e+20")
problem("too-many-ops.json", with_(p=4096, m=1000),
        ": problem too large: p x chunks x m = 4096000 exceeds 4000000")
problem("chunks-zero.json", with_(chunks=0), ": chunks must be at least 1, got 0")
problem("t_f-negative.json", with_(t_f=-1), ": t_f must be positive and finite, got -1.0")
problem("t_b-zero.json", with_(t_b=0), ": t_b must be positive and finite, got 0")
problem("t_f-below-resolution.json", with_(t_f=1e-9), ": t_f must be positive and finite, got 1e-09 (0 at the 1e-6 resolution)")
problem("t_w-1e300.json", with_(t_w=1e300), ": t_w must be non-negative and finite, got 1e+300 (at most 1e12)")
problem("t_f-string.json", with_(t_f="fast"), ': /t_f: expected a number or a non-empty list of numbers (one per stage), got "fast"')
problem("t_b-wrong-length.json", with_(t_b=[1, 2]), ": t_b has 2 values; give one, or one per stage (p = 4)")
problem("t_b-list-of-strings.json", with_(t_b=[1, "2", 1, 1]), ': /t_b/1: expected a number, got "2"')
problem("times-too-large.json", with_(m=1000, t_f=1e11, t_b=1e11), ": times too large: one iteration could last")
problem("t_comm-negative.json", with_(t_comm=-0.5), ": t_comm must be non-negative and finite, got -0.5")
problem("mem_limit-below-one-microbatch.json", with_(mem_limit=0.5),
        ": memory limit 0.5 is below 1, the activation memory of a single microbatch (M_B); no schedule fits")
problem("mem_limit-garbage.json", with_(mem_limit="2q"), ": memory limit '2q' is neither a number nor a multiple like '2p'")
problem("mem_limit-hex.json", with_(mem_limit="0x10"), ": memory limit '0x10' is neither a number nor a multiple like '2p'")
problem("mem_limit-negative.json", with_(mem_limit=-3), ": memory limit '-3' must be positive")
problem("mem_limit-1e300p.json", with_(mem_limit="1e300p"), ": memory limit '1e300p' is out of range")
# A list gives a limit per stage: one per stage, or one for all.
problem("mem_limit-list.json", with_(mem_limit=[8, 8]), ": mem_limit has 2 values; give one, or one per stage (p = 4)")
problem("mem_limit-object.json", with_(mem_limit={"stage": 8}),
        ": /mem_limit: expected a number, a multiple like \"2p\", a list of one number per stage, or null, got {\"stage\": 8}")
# B keeps M_W = 2 > M_B: after one F (1), a B needs 2 under a limit of 1.5.
problem("memory-over-limit.json", with_(mem_w=2, mem_limit=1.5),
        "no heuristic schedule fits: stage 3 cannot fit a B under the memory limit 1.5 (it holds 1 with no W left to free memory)",
        located=False)
problem("placement-duplicate.json", with_(p=2, chunks=2, placement=[[0, 1], [1, 3]]),
        ": placement must use each virtual stage 0..3 exactly once", "zbplan plan --method 1f1b-i --problem {file} -o {out}")
problem("placement-wrong-shape.json", with_(p=2, chunks=2, placement=[[0, 1, 2]]),
        ": placement must list, for each of the 2 stages, its 2 virtual stage(s)", "zbplan plan --method 1f1b-i --problem {file} -o {out}")
problem("heuristic-placement-other.json", with_(chunks=2, placement=[[0, 1], [2, 3], [4, 5], [6, 7]]),
        "method heuristic searches the V placement (2 chunks, stage r holding virtual stages r and 2p-1-r) or the "
        "interleaved one (stage s holding s, s+p, ...); the problem's placement is neither: give --placement v or "
        "interleaved",
        located=False)
problem("1f1b-i-m-not-multiple.json", with_(chunks=2, m=6),
        "1f1b-i (Megatron's interleaved order) needs m to be a multiple of p; got m = 6, p = 4",
        "zbplan plan --method 1f1b-i --problem {file} -o {out}", located=False)
# Deep nesting: the parser copes, but echoing such a value in a message must not recurse 100000 deep.
problem("deeply-nested.json", '{"p": 4, "m": 8, "t_f": ' + "[" * 100000 + "]" * 100000 + ', "t_b": 1, "t_w": 1}',
        ": /t_f/0: expected a number, got [[[[")
problem("deeply-nested-p.json", '{"p": ' + "[" * 100000 + "]" * 100000 + ', "m": 8, "t_f": 1, "t_b": 1, "t_w": 1}',
        ": /p: expected an integer, got [[[[")

# --- Schedule files: zbplan validate / simulate, zbrun --local ----------------------------------
# The synchronous optimizer keeps the lowered files to F/B/W, send/recv and OPT_STEP; the
# post-validation chain (SEND_STATE, VALIDATE, ...) gets its own files below.
zbh1 = planned("--method", "zb-h1", "-p", "2", "-m", "4", "--tf", "1", "--tb", "1", "--tw", "0.5", "--mem-limit", "1p",
               "--optimizer", "sync")
postval = planned("--method", "zb-h1", "-p", "2", "-m", "4", "--tf", "1", "--tb", "1", "--tw", "0.5", "--mem-limit", "1p")
compute = planned("--method", "zb-h1", "-p", "2", "-m", "4", "--tf", "1", "--tb", "1", "--tw", "0.5", "--compute-only")


def edit(doc, fn):
    d = json.loads(json.dumps(doc))
    fn(d)
    return d


def find(ops, type_, mb):
    return next(i for i, op in enumerate(ops) if op["type"] == type_ and op.get("mb") == mb)


text = dump_schedule(zbh1)
schedule("truncated.json", text[: len(text) // 2],
         ":34:38: invalid JSON: parse error at line 34, column 38: syntax error while parsing value - unexpected end of "
         "input; expected '[', '{', or a literal")
schedule("number-overflow.json", text.replace('"m": 4,', '"m": 4e999999,', 1),
         ":8:8: invalid JSON: number overflow parsing '4e999999' (beyond the range of a double)")
# One long line (minified): the message shows 60 characters either side of the error, not the line.
schedule("minified.json", json.dumps(zbh1).replace('"OPT_STEP"}]', '"OPT_STEP"}}', 1),
         ":1:1838: invalid JSON: parse error at line 1, column 1838: syntax error while parsing array - unexpected '}'; expected ']'")
schedule("empty.json", "", ":1:1: invalid JSON: parse error at line 1, column 1")
schedule("not-an-object.json", "[]", ": /: expected a schedule object, got array")
schedule("missing-stages.json", edit(zbh1, lambda d: d.pop("stages")), ": /: missing required field 'stages'")
schedule("stages-not-a-list.json", edit(zbh1, lambda d: d.update(stages=5)), ": /stages: expected a list of per-stage op lists, got number")
schedule("deeply-nested-op.json", text.replace('{"type": "F", "mb": 0, "chunk": 0, "slot": 0}', "[" * 100000 + "]" * 100000, 1),
         ': /stages/0/0: expected an op object like {"type": "F", "mb": 0, "chunk": 0}, got [[[[')
schedule("huge-string.json", edit(zbh1, lambda d: d.update(m="A" * 1000000)),
         ': /m: expected a non-negative integer, got "AAAAAAAA')
schedule("version-3.json", edit(zbh1, lambda d: d.update(version=3)),
         ": /version: this zbplan reads version 2, the file has 3")
# Issue 20: version 1 named its figures otherwise; it is refused with what to do, and its old name
# in a file that does not say its version is explained.
schedule("version-1.json", edit(zbh1, lambda d: (d.update(version=1), d.update(bubble_rate=d.pop("span_bubble_rate")))),
         ": /version: version 1 of the format is no longer read: its bubble_rate was the span's and its solver cost "
         '"period" meant the span (version 2 names each figure by what it measures); plan the schedule again with '
         'zbplan plan, or, for a file written by hand, set "version": 2 and drop its recorded figures')
schedule("bubble-rate-old-name.json",
         edit(zbh1, lambda d: (d.pop("version"), d.update(bubble_rate=d.pop("span_bubble_rate")))),
         ": /bubble_rate: unknown field 'bubble_rate': version 2 of the format calls it span_bubble_rate (the period's "
         "and the wall clock's are in /iterations): plan the schedule again with zbplan plan, or drop the figure (every "
         "figure is recomputed on read)")
schedule("problem-p-zero.json", edit(zbh1, lambda d: d["problem"].update(p=0)), ": p (stages) must be at least 1, got 0")
schedule("for-another-p.json", edit(zbh1, lambda d: d.update(p=4)), ": schedule has p = 4 but its problem has p = 2")
schedule("p-1e9.json", edit(zbh1, lambda d: d.update(p=1000000000, chunks=1000000000)),
         ": schedule has p = 1000000000 but its problem has p = 2")
schedule("m-1e9.json", edit(zbh1, lambda d: d.update(m=1000000000)), ": schedule has m = 1000000000 but its problem has m = 4")
schedule("unknown-op.json", edit(zbh1, lambda d: d["stages"][0][0].update(type="X")),
         ': /stages/0/0/type: unknown op type "X" (expected F, B, W, BW, SEND_F, RECV_F, SEND_B, RECV_B, OPT_STEP, SEND_STATE, RECV_STATE, '
         'SEND_VALID, RECV_VALID or VALIDATE)')
schedule("mb-negative.json", edit(zbh1, lambda d: d["stages"][0][0].update(mb=-5)),
         ": /stages/0/0/mb: expected a non-negative integer, got -5")
schedule("mb-string.json", edit(zbh1, lambda d: d["stages"][0][0].update(mb="0")),
         ': /stages/0/0/mb: expected a non-negative integer, got "0"')
schedule("mb-out-of-range.json", edit(compute, lambda d: d["stages"][1][0].update(mb=99)),
         ": stage 1, op 0 (F99): microbatch 99 out of range 0..3")
schedule("chunk-out-of-range.json", edit(compute, lambda d: d["stages"][1][0].update(chunk=7)),
         ": stage 1, op 0 (F0:7): chunk 7 out of range 0..0")


def drop(d, st, type_, mb):
    del d["stages"][st][find(d["stages"][st], type_, mb)]


schedule("missing-w.json", edit(compute, lambda d: drop(d, 1, "W", 3)), ": stage 1: W3 is missing (its B is op 9)")
schedule("missing-f.json", edit(compute, lambda d: drop(d, 0, "F", 2)), ": stage 0: F2 is missing")


def dup(d, st, type_, mb):
    ops = d["stages"][st]
    ops.append(dict(ops[find(ops, type_, mb)]))


schedule("duplicate-f.json", edit(compute, lambda d: dup(d, 0, "F", 1)), ": stage 0, op 12 (F1): duplicate F1 (first at op 1)")


def swap(d, st, a, b):
    ops = d["stages"][st]
    i, j = find(ops, *a), find(ops, *b)
    ops[i], ops[j] = ops[j], ops[i]


schedule("w-before-b.json", edit(compute, lambda d: swap(d, 1, ("B", 0), ("W", 0))), ": stage 1, op 1 (W0): W before its B (op 4)")
schedule("b-before-f.json", edit(compute, lambda d: swap(d, 1, ("F", 0), ("B", 0))), ": stage 1, op 0 (B0): B0 before its F (op 1)")
# Stage 1 runs F1 before F0/B0, stage 0 waits for B0 before its F1: each waits for the other.
def deadlock(d):
    d["stages"][0][:3] = [{"type": "F", "mb": 0, "chunk": 0}, {"type": "B", "mb": 0, "chunk": 0},
                          {"type": "F", "mb": 1, "chunk": 0}]
    d["stages"][1][:4] = [{"type": "F", "mb": 1, "chunk": 0}, {"type": "F", "mb": 0, "chunk": 0},
                          {"type": "B", "mb": 0, "chunk": 0}, {"type": "B", "mb": 1, "chunk": 0}]


schedule("deadlock.json", edit(compute, deadlock),
         ": stage 0, op 1 (B0): deadlock: waits for stage 1 op 2 (B0); stage 1 is stuck at op 0 (F1), "
         "which waits for stage 0 op 2 (F1); stage 0 is stuck at op 1 (B0)")
limited = planned("--method", "zb-h1", "-p", "2", "-m", "4", "--tf", "1", "--tb", "1", "--tw", "0.5", "--mem-limit", "1p",
                  "--compute-only")
def early_f2(d):
    ops = d["stages"][0]
    ops.insert(find(ops, "B", 0), ops.pop(find(ops, "F", 2)))


schedule("memory-over-limit.json", edit(limited, early_f2),
         ": stage 0, op 2 (F2): activation memory reaches 3, over the limit 2 = 1p")
schedule("compute-only-for-zbrun.json", compute,
         ": the schedule is compute-only; plan it without --compute-only so it holds send/recv", SCHEDULE_CMDS[2:])

# Lowered files: sends, receives, slots, the optimizer step.
schedule("recv-missing.json", edit(zbh1, lambda d: d["stages"][1].pop(find(d["stages"][1], "RECV_F", 1))),
         ": stage 1, op 4 (F1): its input comes from stage 0, but no RECV_F for it comes before")
schedule("send-missing.json", edit(zbh1, lambda d: d["stages"][0].pop(find(d["stages"][0], "SEND_F", 1))),
         ": stage 0, op 2 (F1): its output is needed on another stage but never sent")
schedule("send-to-nowhere.json", edit(zbh1, lambda d: d["stages"][0][1].update(peer=5)),
         ": stage 0, op 1 (SEND_F0): peer 5 is not another stage (0..1)")


def recv_order(d):
    ops = d["stages"][1]
    i, j = find(ops, "RECV_F", 1), find(ops, "RECV_F", 2)
    ops[i], ops[j] = ops[j], ops[i]
    # Each receive must still come before its F: move F1's receive (now later) ahead of F1.
    k = find(ops, "RECV_F", 1)
    ops.insert(find(ops, "F", 1), ops.pop(k))


schedule("recv-out-of-order.json", edit(zbh1, recv_order),
         ": stage 0, op 3 (SEND_F1): is message 1 from stage 0 to stage 1, but message 1 received there is stage 1 op 4 "
         "(RECV_F2 from 0): sends and receives must be in the same order")


def lowered_deadlock(d):
    # Stage 1 waits for F1's activation before sending B0's gradient, which stage 0 needs before F1.
    ops0 = d["stages"][0]
    for t, mb in (("RECV_B", 0), ("B", 0), ("W", 0)):
        ops0.insert(find(ops0, "F", 1), ops0.pop(find(ops0, t, mb)))
    ops1 = d["stages"][1]
    for t, mb in (("RECV_F", 1), ("F", 1)):
        ops1.insert(find(ops1, "B", 0), ops1.pop(find(ops1, t, mb)))


schedule("deadlock-lowered.json", edit(zbh1, lowered_deadlock), ": stage 0, op 2 (RECV_B0): deadlock in replay: waits for stage 1 op 5 (SEND_B0 to 0); "
         "stage 1 is stuck at op 2 (RECV_F1 from 0), which waits for stage 0 op 6 (SEND_F1 to 1); stage 0 is stuck at op 2 (RECV_B0 from 1)")
schedule("slot-in-use.json", edit(zbh1, lambda d: d["stages"][0][2].update(slot=0)),
         ": stage 0, op 2 (F1): slot 0 still holds F0 (a slot is free again after its microbatch's W)")
schedule("slot-missing.json", edit(zbh1, lambda d: d["stages"][0][0].pop("slot")),
         ": stage 0, op 0 (F0): needs an activation slot in 0..3 (none given)")
schedule("opt-step-missing.json", edit(zbh1, lambda d: d["stages"][0].pop()),
         ": stage 0: OPT_STEP is missing (it must end every stage)")
schedule("opt-step-twice.json", edit(zbh1, lambda d: d["stages"][1].insert(0, {"type": "OPT_STEP"})),
         ": stage 1, op 21 (OPT_STEP): second OPT_STEP on this stage")
schedule("validate-after-w.json", edit(postval, lowered_deadlock),
         ": stage 0, op 8 (VALIDATE): must come before the stage's first W (op 4 (W0)): the rollback it may do needs the "
         "previous step's gradients")
def state_first(d):
    ops = d["stages"][1]
    ops.insert(0, ops.pop(next(i for i, op in enumerate(ops) if op["type"] == "RECV_STATE")))


schedule("state-chain-out-of-order.json", edit(postval, state_first), ": stage 1, op 0 (RECV_STATE): must be among the stage's last ops, in the order RECV_STATE, "
         "SEND_STATE, OPT_STEP (the state passes on once all of this stage's gradients are made)")
schedule("placement-mismatch.json", edit(zbh1, lambda d: d["problem"].update(placement=[[1], [0]])),
         ": /problem/placement: differs from the schedule's /placement")
schedule("placement-out-of-range.json", edit(zbh1, lambda d: d.update(placement=[[0], [7]])),
         ": placement must give each of the 2 stages 1 distinct virtual stage(s) in 0..1")

# --- Issue 19 (classes 5, 8, 10, 12 of docs/reliability.md's table) ------------------------------
# 8: figures a file records are recomputed by zbplan (validate, simulate); their types are the
# schema's for every reader, zbrun included.
ZBPLAN_CMDS = SCHEDULE_CMDS[:2]
schedule("figure-span-edited.json", edit(zbh1, lambda d: d.update(span=d["span"] + 20)),
         f": /span: recorded {json.dumps(zbh1['span'] + 20)}, recomputed {zbh1['span']:g}", ZBPLAN_CMDS)
schedule("figure-peak-memory-edited.json", edit(zbh1, lambda d: d["peak_memory"].__setitem__(1, 0.5)),
         f": /peak_memory/1: recorded 0.5, recomputed {zbh1['peak_memory'][1]:g}", ZBPLAN_CMDS)
schedule("figure-period-edited.json", edit(postval, lambda d: d["iterations"].update(period=1)),
         f": /iterations/period: recorded 1, recomputed {postval['iterations']['period']:g}", ZBPLAN_CMDS)


def old_verdict_path(d):
    # ZB-V lowered before issue 20: the verdict relayed back down the state's path, 3 -> 2 -> 1 -> 0
    # (each stage passing it on where it validates), not 3 -> 0 -> 1 -> 2.
    last = len(d["stages"]) - 1
    for st, ops in enumerate(d["stages"]):
        ops[:] = [op for op in ops if op["type"] != "SEND_VALID" or st == last]
        for i, op in enumerate(ops):
            if op["type"] == "SEND_VALID":
                op["peer"] = st - 1
            if op["type"] == "RECV_VALID":
                op["peer"] = st + 1
                if st > 0:
                    ops.insert(i + 1, {"type": "SEND_VALID", "peer": st - 1})


zbv = planned("--method", "zb-v", "-p", "4", "-m", "8", "--tf", "1", "--tb", "1", "--tw", "0.5")
schedule("zb-v-old-verdict-path.json", edit(zbv, old_verdict_path),
         ": stage 0, op 16 (RECV_VALID): exchanges state with stage 1, expected stage 3 (the verdict goes "
         "3 -> 0 -> 1 -> 2, from the state's last stage, then in the order of first B's; lower the schedule again "
         "with zbplan plan)")
schedule("solver-bound-above-cost.json",
         edit(zbh1, lambda d: d["solver"].update(status="optimal", best_bound=d["solver"]["objective"] + 5)),
         f": /solver/best_bound: recorded {json.dumps(zbh1['solver']['objective'] + 5)} is above the schedule's "
         f"{zbh1['solver']['cost']} {zbh1['solver']['objective']:g}", ZBPLAN_CMDS)
schedule("makespan-string.json", edit(zbh1, lambda d: d.update(makespan="fast")),
         ': /makespan: expected a number >= 0, got "fast"')
schedule("method-number.json", edit(zbh1, lambda d: d.update(method=42)), ": /method: expected a string, got 42")
schedule("solver-status-unknown.json", edit(zbh1, lambda d: d["solver"].update(status="great")),
         ': /solver/status: expected "optimal", "time_limit", "local_optimum" or "not_run", got "great"')
# 10: a key given twice (nlohmann kept the last one) is refused by the one JSON parser, at its pointer.
DUP = ': give each field once (JSON readers disagree on which one counts)'
problem("duplicate-p.json", '{"p": 4, "m": 8, "t_f": 1, "t_b": 1, "t_w": 1, "p": 2}', ': /p: duplicate key "p"' + DUP)
schedule("duplicate-stages.json", text.replace("{\n", '{\n  "stages": [],\n', 1),
         ': /stages: duplicate key "stages"' + DUP)
schedule("duplicate-op-field.json",
         text.replace('{"type": "F", "mb": 0, "chunk": 0,', '{"type": "F", "mb": 0, "mb": 1, "chunk": 0,', 1),
         ': /stages/0/0/mb: duplicate key "mb"' + DUP)
# 12: 2^64 - 1 read as a signed integer was -1.
problem("p-2pow64.json", '{"p": 18446744073709551615, "m": 8, "t_f": 1, "t_b": 1, "t_w": 1}',
        ": /p: integer out of range: 18446744073709551615")
schedule("p-2pow64.json", text.replace('"p": 2,', '"p": 18446744073709551615,', 1),
         ": /p: expected a non-negative integer, got 18446744073709551615")

# 5: show --measured's trace reader (a zbrun --trace file): fields of the wrong type aborted zbplan.
# The plan they are drawn under is trace/plan.schedule (not .json: it is no bad input itself; the
# model files below run it).
os.makedirs(os.path.join(here, "trace"), exist_ok=True)
with open(os.path.join(here, "trace", "plan.schedule"), "w") as f:
    f.write(dump_schedule(zbh1))


def trace(name, events, msg):
    doc = {"traceEvents": [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "measured"}}] + events}
    write("trace", name, json.dumps(doc), [("zbplan show plan.schedule -o {out}.svg --measured {file}", name + msg)])


X = {"ph": "X", "pid": 1, "tid": 0, "ts": 0, "dur": 10, "args": {"op_index": 0}}
trace("tid-string.json", [dict(X, tid="0")],
      ': /traceEvents/1/tid: measured event for stage "0" does not fit this schedule (p = 2)')
trace("pid-string.json", [dict(X, pid="1")], ': /traceEvents/1/pid: expected an integer process id, got "1"')
trace("ph-number.json", [dict(X, ph=1)], ': /traceEvents/1/ph: expected an event phase string like "X", got 1')
trace("ts-huge.json", [dict(X, ts=1e300)], ": /traceEvents/1/ts: expected a number of microseconds 0..1e15, got 1e+300")
trace("op-index-string.json", [dict(X, args={"op_index": "first"})],
      ': /traceEvents/1/args/op_index: expected an op index (an integer 0..1000000000), got "first"')
# json.dumps cannot write a key twice.
SHOW = "zbplan show plan.schedule -o {out}.svg --measured {file}"
write("trace", "duplicate-key.json", '{"traceEvents": [], "traceEvents": [{"ph": "X"}]}',
      [(SHOW, 'duplicate-key.json: /traceEvents: duplicate key "traceEvents"' + DUP)])

# 10, 12: model files (zbrun --model) go through the same parser and integer check.
RUN_MODEL = "zbrun ../trace/plan.schedule --local --steps 1 --model {file}"
write("model", "duplicate-layers.json", '{"layers": 4, "heads": 2, "layers": 2}',
      [(RUN_MODEL, 'duplicate-layers.json: /layers: duplicate key "layers"' + DUP)])
write("model", "vocab-2pow64.json", '{"vocab": 18446744073709551615}',
      [(RUN_MODEL, "vocab-2pow64.json: /vocab: expected an integer 1..1048576, got 18446744073709551615")])
