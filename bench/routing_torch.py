"""The routing workload of bench_routing in PyTorch on the CPU, for comparison: 76 layers x 4,096
tokens x 256 experts; sigmoid scores, selection by score + bias (top-8), weights from the scores
(normalised, x 2.5), the FP32 reference and four BF16 variants (bias, logits, both, and torch_bf16:
the same arithmetic on BF16 tensors), and per
variant the changed-set fraction, experts replaced, weight L1 and per-expert load. Prints the
median wall time of three runs in ms on the line "torch: N ms".

Then the lean version a Python user would write (issue 31): per layer torch.topk(sigmoid(logits) + bias,
8) for the reference and the three BF16 variants, the sorted index sets compared; "torch lean: N ms".

Run by bench_routing with Debian's /usr/bin/python3 (package python3-torch) when it is there."""
import statistics
import sys
import time

import torch

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
torch.set_num_threads(threads)
L, T, E, K = 76, 4096, 256, 8
g = torch.Generator().manual_seed(0)
biases = [torch.rand(E, generator=g) * 0.5 + 34.0 for _ in range(L)]


def route(scores, bias):
    idx = torch.topk(scores + bias, K, dim=-1).indices
    w = scores.gather(-1, idx)
    w = w / w.sum(-1, keepdim=True) * 2.5
    return idx, w


def compare(ref_i, ref_w, i, w):
    match = i.unsqueeze(-1) == ref_i.unsqueeze(-2)  # [T, K, K]: variant slot x reference slot
    in_ref = match.any(-1)
    replaced = K - in_ref.sum(-1)
    changed = (replaced > 0).float().mean()
    w_at_ref = (match * w.unsqueeze(-1)).sum(-2)  # the variant's weight of each reference expert
    l1 = ((ref_w - w_at_ref).abs().sum(-1) + (w * ~in_ref).sum(-1)).mean()
    load = torch.bincount(i.flatten(), minlength=E)
    return changed, replaced.float().mean(), l1, load


times = []
for run in range(3):
    start = time.perf_counter()
    for layer in range(L):
        logits = torch.randn(T, E, generator=g)
        s32 = torch.sigmoid(logits)
        s16 = torch.sigmoid(logits.to(torch.bfloat16).float())
        b32 = biases[layer]
        b16 = b32.to(torch.bfloat16).float()
        ref_i, ref_w = route(s32, b32)
        torch.bincount(ref_i.flatten(), minlength=E)
        for s, b in ((s32, b16), (s16, b32), (s16, b16)):
            i, w = route(s, b)
            compare(ref_i, ref_w, i, w)
        # torch_bf16: every tensor BF16, the selection sum rounded as torch forms it.
        st = torch.sigmoid(logits.to(torch.bfloat16))
        i, w = route(st, b32.to(torch.bfloat16))
        compare(ref_i, ref_w, i, w.float())
    times.append((time.perf_counter() - start) * 1000)
print(f"torch {torch.__version__}, {torch.get_num_threads()} threads: median {statistics.median(times):.0f} ms")
print(f"torch: {statistics.median(times):.0f} ms")

# The lean version: the selections and whether each token's set changed, nothing else.
lean = []
for run in range(3):
    start = time.perf_counter()
    for layer in range(L):
        logits = torch.randn(T, E, generator=g)
        b32 = biases[layer]
        b16 = b32.to(torch.bfloat16).float()
        s32 = torch.sigmoid(logits)
        s16 = torch.sigmoid(logits.to(torch.bfloat16).float())
        ref = torch.topk(s32 + b32, K, dim=-1).indices.sort(-1).values
        for s, b in ((s32, b16), (s16, b32), (s16, b16)):
            var = torch.topk(s + b, K, dim=-1).indices.sort(-1).values
            (var != ref).any(-1).float().mean()
    lean.append((time.perf_counter() - start) * 1000)
print(f"torch lean: {statistics.median(lean):.0f} ms")
