#!/usr/bin/env python3
"""zbrun's per-layer times beside PyTorch eager's, one table.

Usage: tools/anchor_compare.py LAYERS.json TORCH.json
  LAYERS.json  from `zbrun --profile-layers LAYERS.json --model M [--backend cuda]` (zbpp-layers-1:
               medians of t_f, t_b, t_w per layer, ms per microbatch)
  TORCH.json   from `tools/torch_anchor.py --model M --json TORCH.json` (zbpp-torch-anchor-1)
Prints a markdown table, per layer kind (block, head): zbrun's F and B+W (t_b + t_w), PyTorch's F
and backward (loss.backward: input and weight gradients together), medians in ms per microbatch,
and zbrun/PyTorch (above 1: zbrun is slower). Refuses files whose model shapes disagree, as far as
the layers file tells them (parameter and boundary sizes). Exit 0, or 1 with the reason.
"""
import json
import sys

KINDS = ("block", "head")


def fail(msg):
    sys.exit(f"anchor_compare: {msg}")


def read(path, fmt):
    try:
        with open(path) as f:
            j = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")
    if not isinstance(j, dict) or j.get("format") != fmt:
        fail(f"{path}: not a {fmt} file (its \"format\" is {j.get('format') if isinstance(j, dict) else None!r})")
    return j


def check_shapes(layers_path, by_kind, model):
    """The sizes in the layers file must be those of the torch run's model: each block holds
    12C^2 + 13C parameters, the head V*C + 2C, and a block's output_bytes is batch*seq*C values,
    at 4 or 6 bytes a parameter (fp32; bf16 beside fp32 masters) and 4 or 2 an activation."""
    V, T, C, B = model["vocab"], model["seq"], model["channels"], model["batch"]
    want = {"block": 12 * C * C + 13 * C, "head": V * C + 2 * C}
    for kind, values in want.items():
        got = by_kind[kind].get("parameter_bytes", 0)
        if got and not any(abs(got - values * k) < 0.5 for k in (4, 6)):
            fail(f"{layers_path}: the {kind}'s parameter_bytes {got:.0f} is not 4 or 6 bytes times the {values} "
                 f"parameters of the torch run's model {json.dumps(model)}: the two files are of different models")
    got = by_kind["block"].get("output_bytes", 0)
    if got and not any(abs(got - B * T * C * k) < 0.5 for k in (2, 4)):
        fail(f"{layers_path}: the block's output_bytes {got:.0f} is not 2 or 4 bytes times batch*seq*channels = "
             f"{B * T * C} of the torch run's model {json.dumps(model)}: the two files are of different models")


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__.strip().split("\n\n")[0] + "\nusage: tools/anchor_compare.py LAYERS.json TORCH.json")
    layers_path, torch_path = argv[1], argv[2]
    layers = read(layers_path, "zbpp-layers-1")
    anchor = read(torch_path, "zbpp-torch-anchor-1")
    by_kind = {}
    for layer in layers.get("layers", []):
        by_kind.setdefault(layer.get("kind", "other"), layer)  # every block costs the same: the first
    for kind in KINDS:
        if kind not in by_kind:
            fail(f"{layers_path}: no layer of kind \"{kind}\" (zbrun --profile-layers writes a block and a head)")
        if kind not in anchor.get("layers", {}):
            fail(f"{torch_path}: no \"{kind}\" figures")
    check_shapes(layers_path, by_kind, anchor["model"])

    source = layers.get("source", "zbrun --profile-layers")
    print(f"zbrun: {source} (model {layers.get('model', '?')}).")
    print(f"PyTorch {anchor['torch']} eager on {anchor['device']}, {anchor['dtype']}, {anchor['attention']}, "
          f"median of {anchor['repeats']} after {anchor['warmup']} warm-up ({anchor['timer']}); "
          f"model {json.dumps(anchor['model'])}.")
    zb_cuda = "CUDA" in source
    torch_cuda = anchor["timer"] == "torch.cuda.Event"
    if zb_cuda != torch_cuda or (zb_cuda and anchor["dtype"] != "bf16"):
        print(f"Note: zbrun ran on {'the GPU (bf16)' if zb_cuda else 'the CPU (fp32)'}, PyTorch on "
              f"{'the GPU' if torch_cuda else 'the CPU'} in {anchor['dtype']}: not like for like.")
    print()
    print("Times in ms per microbatch (medians); ratio = zbrun / PyTorch, above 1 means zbrun is slower.")
    print()
    print("| layer | zbrun F (ms) | zbrun B+W (ms) (B, W) | PyTorch F (ms) | PyTorch backward (ms) "
          "| F ratio | B+W / backward ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for kind in KINDS:
        z = by_kind[kind]
        t = anchor["layers"][kind]
        zf, zb, zw = float(z["t_f"]), float(z["t_b"]), float(z["t_w"])
        tf, tb = float(t["f"]["median"]), float(t["backward"]["median"])
        ratio = lambda a, b: f"{a / b:.2f}" if b > 0 else "n/a"
        print(f"| {kind} | {zf:.4f} | {zb + zw:.4f} ({zb:.4f}, {zw:.4f}) | {tf:.4f} | {tb:.4f} "
              f"| {ratio(zf, tf)} | {ratio(zb + zw, tb)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
