#!/usr/bin/env python3
"""PyTorch eager beside zbrun: times one GPT block and the head of zbrun's model, F and backward.

The same layers zbrun runs (runtime/model.h, runtime/backend/cpu/layers.cpp), one microbatch of
`batch` sequences of `seq` tokens:
  block: x + proj(attn(ln1(x))), then + fc_proj(gelu_tanh(fc(ln2(.)))); causal attention with
         `heads` heads through F.scaled_dot_product_attention(is_causal=True) where PyTorch has it
         (>= 2.0), else an explicit masked softmax (said in the output); every linear with a bias.
  head:  final LayerNorm, LM head C -> vocab without bias (not tied), mean cross-entropy.
F is the forward; backward is loss.backward() (the head) or out.backward(g) with a random upstream
gradient g (the block): the input gradient and the weight gradients together, zbrun's B + W.
Times are milliseconds per microbatch: CUDA events around each call on the GPU, the wall clock on
the CPU; one call per repeat after --warmup untimed ones, min / median / max over --repeats.
With --dtype bf16 the parameters and activations are bf16 (no autocast, no fp32 masters).

Usage: tools/torch_anchor.py --model FILE.json|tiny|small|c256 [--repeats N] [--warmup N]
         [--device cuda|cpu] [--dtype bf16|fp32] [--attention auto|sdpa|explicit] [--json OUT]
tools/anchor_compare.py puts the JSON beside `zbrun --profile-layers`' file.
"""
import argparse
import json
import math
import statistics
import sys
import time

# zbrun's defaults (GptConfig in runtime/model.h) and presets (gpt_preset in runtime/model.cpp).
DEFAULTS = {"vocab": 256, "seq": 16, "channels": 32, "heads": 4, "layers": 4, "batch": 2}
PRESETS = {
    "tiny": {},
    "small": {"seq": 128, "channels": 384, "heads": 6, "layers": 6, "batch": 4},
    "c256": {"vocab": 512, "seq": 64, "channels": 256, "heads": 8, "layers": 8, "batch": 4},
}


def load_model(name):
    if name in PRESETS:
        return dict(DEFAULTS, **PRESETS[name])
    try:
        with open(name) as f:
            j = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"torch_anchor: {name}: not a preset ({', '.join(PRESETS)}) and cannot read it as a model file: {e}")
    if not isinstance(j, dict):
        sys.exit(f"torch_anchor: {name}: expected a model object {{vocab, seq, channels, heads, layers, batch}}")
    for k, v in j.items():
        if k not in DEFAULTS:
            sys.exit(f"torch_anchor: {name}: /{k}: unknown field (expected {', '.join(DEFAULTS)})")
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            sys.exit(f"torch_anchor: {name}: /{k}: expected a positive integer, got {v!r}")
    m = dict(DEFAULTS, **j)
    if m["channels"] % m["heads"]:
        sys.exit(f"torch_anchor: {name}: channels ({m['channels']}) must be a multiple of heads ({m['heads']})")
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="zbrun's model file {vocab, seq, channels, heads, layers, batch} "
                    "or a preset (tiny, small, c256); batch is the microbatch in sequences")
    ap.add_argument("--repeats", type=int, default=10, help="timed calls after the warm-up (default 10)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed calls first (default 3)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    ap.add_argument("--attention", choices=["auto", "sdpa", "explicit"], default="auto",
                    help="auto: F.scaled_dot_product_attention where this PyTorch has it, else explicit masked softmax")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads for torch (0: PyTorch's default)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", metavar="OUT", help="write the figures to OUT (read by tools/anchor_compare.py)")
    a = ap.parse_args()
    if a.repeats < 1 or a.warmup < 0:
        sys.exit("torch_anchor: --repeats must be >= 1 and --warmup >= 0")
    cfg = load_model(a.model)

    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        sys.exit(f"torch_anchor: cannot import PyTorch ({e})")

    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_anchor: --device cuda: torch.cuda.is_available() is False (no GPU, or a CPU-only PyTorch)")
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    has_sdpa = hasattr(F, "scaled_dot_product_attention")
    if a.attention == "sdpa" and not has_sdpa:
        sys.exit(f"torch_anchor: --attention sdpa: PyTorch {torch.__version__} has no F.scaled_dot_product_attention")
    use_sdpa = has_sdpa and a.attention != "explicit"
    if use_sdpa:
        attention = "F.scaled_dot_product_attention(is_causal=True)"
    else:
        why = "asked for" if a.attention == "explicit" else f"PyTorch {torch.__version__} has no F.scaled_dot_product_attention"
        attention = f"explicit masked softmax attention ({why}): not SDPA"

    dev = torch.device(a.device)
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    V, T, C, NH, B = cfg["vocab"], cfg["seq"], cfg["channels"], cfg["heads"], cfg["batch"]
    hs = C // NH
    torch.manual_seed(a.seed)

    def param(*shape, std=0.02, const=None):
        t = torch.full(shape, const) if const is not None else torch.randn(*shape) * std
        return t.to(dev, dtype).requires_grad_()

    # One block's parameters, shaped [out, in] as nn.Linear (runtime/model.h BlockTensor order).
    P = {
        "ln1w": param(C, const=1.0), "ln1b": param(C, const=0.0),
        "qkvw": param(3 * C, C), "qkvb": param(3 * C, const=0.0),
        "projw": param(C, C), "projb": param(C, const=0.0),
        "ln2w": param(C, const=1.0), "ln2b": param(C, const=0.0),
        "fcw": param(4 * C, C), "fcb": param(4 * C, const=0.0),
        "fcprojw": param(C, 4 * C), "fcprojb": param(C, const=0.0),
        "lnfw": param(C, const=1.0), "lnfb": param(C, const=0.0),
        "lmw": param(V, C),
    }
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool, device=dev))

    def block(x, sdpa=None):
        sdpa = use_sdpa if sdpa is None else sdpa
        qkv = F.linear(F.layer_norm(x, (C,), P["ln1w"], P["ln1b"], eps=1e-5), P["qkvw"], P["qkvb"])
        q, k, v = (t.view(B, T, NH, hs).transpose(1, 2) for t in qkv.split(C, dim=-1))
        if sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
            att = torch.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
            y = att @ v
        y = y.transpose(1, 2).reshape(B, T, C)
        x = x + F.linear(y, P["projw"], P["projb"])
        f = F.gelu(F.linear(F.layer_norm(x, (C,), P["ln2w"], P["ln2b"], eps=1e-5), P["fcw"], P["fcb"]),
                   approximate="tanh")
        return x + F.linear(f, P["fcprojw"], P["fcprojb"])

    targets = torch.randint(0, V, (B * T,), device=dev)

    def head(x):
        logits = F.linear(F.layer_norm(x, (C,), P["lnfw"], P["lnfb"], eps=1e-5), P["lmw"])
        return F.cross_entropy(logits.view(B * T, V), targets)

    x_block = (torch.randn(B, T, C) * 1.0).to(dev, dtype).requires_grad_()
    x_head = (torch.randn(B, T, C) * 1.0).to(dev, dtype).requires_grad_()
    g_block = torch.randn(B, T, C).to(dev, dtype)

    cuda = a.device == "cuda"

    def clear():
        for t in list(P.values()) + [x_block, x_head]:
            t.grad = None

    def measure(fwd, bwd):
        """F and backward times (ms) of one call each, and the forward's output."""
        clear()
        if cuda:
            e = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
            e[0].record()
            out = fwd()
            e[1].record()
            bwd(out)
            e[2].record()
            torch.cuda.synchronize()
            return e[0].elapsed_time(e[1]), e[1].elapsed_time(e[2]), out
        t0 = time.perf_counter()
        out = fwd()
        t1 = time.perf_counter()
        bwd(out)
        t2 = time.perf_counter()
        return (t1 - t0) * 1e3, (t2 - t1) * 1e3, out

    kinds = {
        "block": (lambda: block(x_block), lambda out: out.backward(g_block)),
        "head": (lambda: head(x_head), lambda loss: loss.backward()),
    }
    results, checks = {}, {}
    for name, (fwd, bwd) in kinds.items():
        for _ in range(a.warmup):
            measure(fwd, bwd)
        tf, tb = [], []
        for _ in range(a.repeats):
            f_ms, b_ms, out = measure(fwd, bwd)
            tf.append(f_ms)
            tb.append(b_ms)
        summary = lambda v: {"min": min(v), "median": statistics.median(v), "max": max(v)}
        results[name] = {"f": summary(tf), "backward": summary(tb)}
        if name == "block":
            checks["block_output_shape"] = list(out.shape)
            checks["block_output_finite"] = bool(torch.isfinite(out.float()).all())
            checks["block_input_grad_finite"] = bool(torch.isfinite(x_block.grad.float()).all())
            if use_sdpa:  # SDPA's output against the explicit masked softmax's, same inputs and weights
                with torch.no_grad():
                    ref = block(x_block, sdpa=False).float()
                    diff = (out.detach().float() - ref).abs().max().item()
                checks["sdpa_vs_explicit_max_abs"] = diff
                tol = (2e-2 if a.dtype == "bf16" else 1e-4) * (1 + ref.abs().max().item())
                checks["sdpa_vs_explicit_tolerance"] = tol
        else:
            checks["head_loss"] = float(out.detach())
            checks["head_input_grad_finite"] = bool(torch.isfinite(x_head.grad.float()).all())

    bad = []
    if checks["block_output_shape"] != [B, T, C]:
        bad.append(f"block output shape {checks['block_output_shape']}, expected {[B, T, C]}")
    for k in ("block_output_finite", "block_input_grad_finite", "head_input_grad_finite"):
        if not checks[k]:
            bad.append(k.replace("_", " ") + ": no")
    if "sdpa_vs_explicit_max_abs" in checks and not checks["sdpa_vs_explicit_max_abs"] <= checks["sdpa_vs_explicit_tolerance"]:
        bad.append(f"SDPA block output differs from the explicit attention's by {checks['sdpa_vs_explicit_max_abs']:.3g}"
                   f" (tolerance {checks['sdpa_vs_explicit_tolerance']:.3g})")
    if not math.isfinite(checks["head_loss"]):
        bad.append(f"head loss {checks['head_loss']} is not finite")

    device_name = torch.cuda.get_device_name(dev) if cuda else f"CPU, {torch.get_num_threads()} thread" + ("s" if torch.get_num_threads() != 1 else "")
    doc = {
        "format": "zbpp-torch-anchor-1",
        "model": cfg,
        "model_file": a.model,
        "torch": torch.__version__,
        "device": device_name,
        "dtype": a.dtype,
        "attention": attention,
        "gelu": "tanh approximation",
        "timer": "torch.cuda.Event" if cuda else "time.perf_counter",
        "warmup": a.warmup,
        "repeats": a.repeats,
        "units": "ms per microbatch",
        "layers": results,
        "checks": checks,
    }
    print(f"PyTorch {torch.__version__} eager on {device_name}, {a.dtype}; model {json.dumps(cfg)}")
    print(f"attention: {attention}; GELU tanh approximation; {a.repeats} repeats after {a.warmup} warm-up, "
          f"timed with {doc['timer']}")
    print(f"{'layer':<6} {'F ms: min':>10} {'median':>9} {'max':>9}   {'backward ms: min':>16} {'median':>9} {'max':>9}")
    for name, r in results.items():
        f, b = r["f"], r["backward"]
        print(f"{name:<6} {f['min']:10.4f} {f['median']:9.4f} {f['max']:9.4f}   "
              f"{b['min']:16.4f} {b['median']:9.4f} {b['max']:9.4f}")
    print(f"checks: block output {'x'.join(map(str, checks['block_output_shape']))}, head loss {checks['head_loss']:.4f}"
          f" (ln {V} = {math.log(V):.4f})"
          + (f", SDPA vs explicit attention max |diff| {checks['sdpa_vs_explicit_max_abs']:.3g}"
             if "sdpa_vs_explicit_max_abs" in checks else "")
          + (", all finite" if not bad else ", FAILED: " + "; ".join(bad)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
