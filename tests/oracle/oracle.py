#!/usr/bin/env python3
"""The oracle chain of zbrun's GPT (docs/oracle.md): PyTorch checks the CPU backend, the CPU backend
checks the CUDA backend, tensor by tensor, from the dumps `zbpp_step_dump` writes.

  oracle.py torch DUMP                 PyTorch autograd (float64) on the dump's weights and tokens:
                                       losses, every boundary activation x<l> and gradient dx<l>,
                                       every weight gradient; then torch's clipping and AdamW on the
                                       dump's gradients against the dump's update and moments
  oracle.py compare REF DUMP           one backend's dump against another's (e.g. CPU vs CUDA)
  --run TOOL [--model M] [--backend B] write DUMP first with TOOL (zbpp_step_dump)
  --tol X                              allowed max |a - b| over each tensor's max |reference|
                                       (torch: 1e-4; compare: 2e-2, bf16 against fp32)
  --expect-mismatch NAME               negate tensor NAME of the dump before comparing, and pass only
                                       if the comparison then fails on it: proves the check can fail

Exit 0 when every tensor is within tolerance (or, with --expect-mismatch, when the planted error is
caught), 1 otherwise; every tensor's error is printed, the worst first.
"""
import argparse
import json
import math
import os
import subprocess
import sys

import numpy as np


def load(dump):
    with open(os.path.join(dump, "manifest.json")) as f:
        manifest = json.load(f)
    if manifest.get("format") != "zbpp-step-dump" or manifest.get("version") != 1:
        sys.exit(f"oracle: {dump}/manifest.json: not a zbpp-step-dump version 1")
    tensors = {}
    for t in manifest["tensors"]:
        dtype = np.int32 if t["dtype"] == "i32" else np.float32
        a = np.fromfile(os.path.join(dump, t["file"]), dtype=dtype)
        if a.size != math.prod(t["shape"]):
            sys.exit(f"oracle: {dump}/{t['file']}: {a.size} values, shape {t['shape']} needs {math.prod(t['shape'])}")
        tensors[t["name"]] = (t["role"], a.reshape(t["shape"]))
    return manifest, tensors


class Report:
    """Each compared quantity with its error relative to the reference's largest magnitude."""

    def __init__(self, tol):
        self.tol = tol
        self.rows = []  # (relative error, name, detail, ok)

    def tensor(self, name, ours, ref, tol=None, slack=0.0):
        """slack: a per-element allowance added to the tolerance (an update is known only to one
        fp32 ulp of the weight it was added to)."""
        tol = self.tol if tol is None else tol
        ours = np.asarray(ours, dtype=np.float64)
        ref = np.asarray(ref, dtype=np.float64)
        if ours.shape != ref.shape:
            self.rows.append((math.inf, name, f"shape {ours.shape} vs {ref.shape}", False))
            return
        if not np.all(np.isfinite(ours)):
            self.rows.append((math.inf, name, "not finite", False))
            return
        err = float(np.max(np.maximum(np.abs(ours - ref) - slack, 0.0))) if ours.size else 0.0
        scale = float(np.max(np.abs(ref))) if ref.size else 0.0
        rel = err / scale if scale > 0 else (0.0 if err == 0 else math.inf)
        self.rows.append((rel, name, f"max|err| {err:.3e} of max|ref| {scale:.3e}", rel <= tol))

    def update(self, name, tensors, expected, tol=None):
        """A weight's update (after - before, from the dump) against `expected` (before as float64
        -> the update it should get); the weights are fp32, so each element is allowed one ulp of
        the weight it was added to. The update, not the weights: a weight's size would hide a
        wrong step."""
        after = tensors["param_after." + name][1]
        before = tensors["param." + name][1].astype(np.float64)
        self.tensor("update." + name, after.astype(np.float64) - before, expected(before), tol=tol,
                    slack=np.spacing(np.abs(after)).astype(np.float64))

    def failures(self):
        return [r[1] for r in self.rows if not r[3]]

    def print(self, title):
        print(f"{title}: {len(self.rows)} quantities, tolerance {self.tol:g} of each one's max |reference|")
        for rel, name, detail, ok in sorted(self.rows, key=lambda r: -r[0]):
            print(f"  {'ok  ' if ok else 'FAIL'} {name:28s} rel {rel:.3e}  {detail}")
        bad = self.failures()
        print(f"{len(self.rows) - len(bad)} passed, {len(bad)} failed")


def torch_reference(manifest, tensors, report):
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        sys.exit(f"oracle: cannot import PyTorch ({e}): third_party/install-deps.sh installs Debian's python3-torch,"
                 " which imports in /usr/bin/python3")

    torch.set_num_threads(1)
    cfg = manifest["model"]
    V, T, C, NH, L = cfg["vocab"], cfg["seq"], cfg["channels"], cfg["heads"], cfg["layers"]
    hs = C // NH
    P = {n[len("param."):]: torch.tensor(a, dtype=torch.float64, requires_grad=True)
         for n, (role, a) in tensors.items() if role == "param"}
    tokens = torch.tensor(tensors["tokens"][1], dtype=torch.long)
    m = manifest["microbatches"]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))

    def ln(x, name):
        return F.layer_norm(x, (C,), P[name + ".w"], P[name + ".b"], eps=1e-5)

    total, boundaries = 0, []
    for mb in range(m):
        inp, tgt = tokens[mb, :, :T], tokens[mb, :, 1:]
        x = P["wte"][inp] + P["wpe"][:T]
        xs = []
        for l in range(L + 1):
            x.retain_grad()
            xs.append(x)
            if l == L:
                break
            h = f"h{l}."
            q, k, v = F.linear(ln(x, h + "ln1"), P[h + "attn.qkv.w"], P[h + "attn.qkv.b"]).split(C, dim=-1)
            q, k, v = (t.reshape(-1, T, NH, hs).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
            att = torch.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
            y = (att @ v).transpose(1, 2).reshape(-1, T, C)
            x = x + F.linear(y, P[h + "attn.proj.w"], P[h + "attn.proj.b"])
            f = F.gelu(F.linear(ln(x, h + "ln2"), P[h + "mlp.fc.w"], P[h + "mlp.fc.b"]), approximate="tanh")
            x = x + F.linear(f, P[h + "mlp.proj.w"], P[h + "mlp.proj.b"])
        logits = F.linear(ln(x, "lnf"), P["lm_head.w"])
        loss = F.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1))
        report.tensor(f"loss.mb{mb}", manifest["losses"][mb], loss.item(), tol=1e-5)
        total = total + loss / m
        boundaries.append(xs)
    total.backward()

    for mb, xs in enumerate(boundaries):
        for l, x in enumerate(xs):
            for name, ref in ((f"x{l}.mb{mb}", x), (f"dx{l}.mb{mb}", x.grad)):
                if name not in tensors:
                    report.rows.append((math.inf, name, "missing from the dump", False))
                    continue
                report.tensor(name, tensors[name][1], ref.detach().numpy())
    for name, p in P.items():
        report.tensor("grad." + name, tensors["grad." + name][1], p.grad.numpy())

    # The optimizer, given the dump's own gradients (so a gradient error is not counted twice):
    # torch's global-norm clipping and AdamW against the updates the dump's step made (Report.update).
    opt = manifest["adamw"]
    params = []
    for name, p in P.items():
        q = torch.tensor(tensors["param." + name][1], dtype=torch.float64, requires_grad=True)
        q.grad = torch.tensor(tensors["grad." + name][1], dtype=torch.float64)
        params.append((name, q))
    qs = [q for _, q in params]
    norm = torch.sqrt(sum((q.grad ** 2).sum() for q in qs)).item()
    report.tensor("global_norm", manifest["global_norm"], norm, tol=1e-9)
    if opt["clip_norm"] > 0:
        torch.nn.utils.clip_grad_norm_(qs, max_norm=opt["clip_norm"])
    adamw = torch.optim.AdamW(qs, lr=opt["lr"], betas=(opt["beta1"], opt["beta2"]), eps=opt["eps"],
                              weight_decay=opt["weight_decay"])
    adamw.step()
    for name, q in params:
        state = adamw.state[q]
        report.tensor("adam_m." + name, tensors["adam_m." + name][1], state["exp_avg"].numpy())
        report.tensor("adam_v." + name, tensors["adam_v." + name][1], state["exp_avg_sq"].numpy())
        report.update(name, tensors, lambda before: q.detach().numpy() - before)


def own_optimizer(manifest, tensors, report, tol):
    """The dump's step against AdamW (float64, numpy) run on the dump's own gradients: the clipping,
    the moments and the update (after - before, with one fp32 ulp of the weight as slack)."""
    opt = manifest["adamw"]
    names = [n[len("param."):] for n, (role, _) in tensors.items() if role == "param"]
    grads = {n: tensors["grad." + n][1].astype(np.float64) for n in names}
    norm = math.sqrt(sum(float((g * g).sum()) for g in grads.values()))
    report.tensor("global_norm (own gradients)", manifest["global_norm"], norm, tol=1e-6)
    # torch.nn.utils.clip_grad_norm_'s factor, as the torch mode checks it.
    scale = min(1.0, opt["clip_norm"] / (norm + 1e-6)) if opt["clip_norm"] > 0 else 1.0
    b1, b2, lr, eps, wd = opt["beta1"], opt["beta2"], opt["lr"], opt["eps"], opt["weight_decay"]
    for n in names:  # one step from zero moments: bias corrections 1 - beta
        g = grads[n] * scale
        m, v = (1 - b1) * g, (1 - b2) * g * g
        report.tensor("adam_m." + n + " (own)", tensors["adam_m." + n][1], m, tol=tol)
        report.tensor("adam_v." + n + " (own)", tensors["adam_v." + n][1], v, tol=2 * tol)
        report.update(n, tensors, lambda before: -lr * wd * before - lr * (m / (1 - b1)) / (np.sqrt(v / (1 - b2)) + eps),
                      tol=tol)


def compare(ref_manifest, ref, manifest, tensors, report):
    """Inputs bit for bit, then everything the step computed up to its gradients and moments against
    the reference's. The weights after the step are not compared across backends: AdamW's first
    step moves each weight by about lr * sign(gradient), so a gradient within rounding of zero can
    move it 2 * lr the other way. The update is checked against AdamW on the dump's own gradients."""
    for key in ("model", "seed", "microbatches", "adamw"):
        if ref_manifest[key] != manifest[key]:
            sys.exit(f"oracle: the dumps differ in {key}: {ref_manifest[key]} vs {manifest[key]}")
    for mb, (a, b) in enumerate(zip(manifest["losses"], ref_manifest["losses"])):
        report.tensor(f"loss.mb{mb}", a, b)
    report.tensor("global_norm", manifest["global_norm"], ref_manifest["global_norm"])
    for name, (role, a) in ref.items():
        if name not in tensors:
            report.rows.append((math.inf, name, "missing from the dump", False))
            continue
        if role in ("tokens", "param"):  # the same inputs, bit for bit
            same = np.array_equal(a, tensors[name][1])
            report.rows.append((0.0 if same else math.inf, name, "identical" if same else "differs", same))
        elif role != "param_after":
            # v holds squared gradients: twice their relative error.
            report.tensor(name, tensors[name][1], a, tol=2 * report.tol if role == "adam_v" else None)
    own_optimizer(manifest, tensors, report, tol=min(report.tol, 1e-4))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["torch", "compare"])
    ap.add_argument("dirs", nargs="+", help="torch: DUMP; compare: REF DUMP")
    ap.add_argument("--run", metavar="TOOL", help="write the (last) dump first with this zbpp_step_dump")
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--tol", type=float)
    ap.add_argument("--expect-mismatch", metavar="NAME")
    args = ap.parse_args()
    if len(args.dirs) != (1 if args.mode == "torch" else 2):
        ap.error("torch takes DUMP, compare takes REF DUMP")
    dump = args.dirs[-1]
    if args.run:
        subprocess.run([args.run, dump, "--model", args.model, "--backend", args.backend], check=True)
    manifest, tensors = load(dump)
    if manifest["nonfinite"]:
        sys.exit(f"oracle: {dump}: the step's gradients are not finite")
    if args.expect_mismatch:
        if args.expect_mismatch not in tensors:
            sys.exit(f"oracle: --expect-mismatch {args.expect_mismatch}: no such tensor in {dump}")
        role, a = tensors[args.expect_mismatch]
        tensors[args.expect_mismatch] = (role, -a)
    report = Report(args.tol if args.tol is not None else (1e-4 if args.mode == "torch" else 2e-2))
    if args.mode == "torch":
        torch_reference(manifest, tensors, report)
        report.print(f"{dump} ({manifest['backend']}) against PyTorch")
    else:
        ref_manifest, ref = load(args.dirs[0])
        compare(ref_manifest, ref, manifest, tensors, report)
        report.print(f"{dump} ({manifest['backend']}) against {args.dirs[0]} ({ref_manifest['backend']})")
    bad = report.failures()
    if args.expect_mismatch:
        # A weight after the step is checked through its update.
        caught = args.expect_mismatch in bad or args.expect_mismatch.replace("param_after.", "update.", 1) in bad
        print(f"planted error in {args.expect_mismatch}: {'caught' if caught else 'NOT caught'}")
        return 0 if caught else 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
