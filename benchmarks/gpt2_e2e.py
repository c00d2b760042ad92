#!/usr/bin/env python3
"""GPT-2 small end to end with three attention implementations, measured side by side in one run.

12 layers, 12 heads, d = 64, d_model 768, causal, random weights (nothing is downloaded; the
position table is as long as the longest sequence). --dtype fp32 (default; TF32 matmuls off) or
bf16 / fp16: the whole model (weights, activations, attention) in that dtype. Attention through:
  flashtune  flashtune.attention on views of the fused QKV projection ([batch, N, heads, d] read as
             [batch, heads, N, d], no copy), O written straight into the [batch, N, heads, d] buffer
             the output projection reads; its kernel is the dispatcher's of the dtype;
  sdpa       torch SDPA, the usual transpose / contiguous: in fp32 the EFFICIENT_ATTENTION backend
             only (FLASH and CUDNN refuse fp32); in bf16 / fp16 SDPA's default back-end choice (what
             a PyTorch model gets: FLASH or CUDNN);
  naive      q k^T, causal mask, softmax, times v (the seed report's baseline).
For each N: whole-model forward time (CUDA events, L2 not flushed: the model's own traffic evicts
it; median of --reps after warm-up), the attention function alone on the same shapes (x 12 layers:
its share of the forward), greedy generation throughput (no KV cache, as in the seed report: each
new token runs the model over the whole context), and the logits' relative L2 difference from the
sdpa model. The speed-up the attention times and share predict (Amdahl) is printed beside the
measured one.

Usage: PYTHONPATH=build/python python3 benchmarks/gpt2_e2e.py [--n 128 256 ... 4096] [--dtype bf16] [--json out.json]
"""
import argparse
import json
import math
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import flashtune

D_MODEL, HEADS, LAYERS, VOCAB, HEAD_DIM = 768, 12, 12, 50257, 64


def attn_flashtune(qkv, batch, n):
    q, k, v = (t.view(batch, n, HEADS, HEAD_DIM).transpose(1, 2) for t in qkv.split(D_MODEL, dim=2))
    y = torch.empty(batch, n, HEADS, HEAD_DIM, device=qkv.device, dtype=qkv.dtype)
    flashtune.attention(q, k, v, causal=True, out=y.transpose(1, 2))
    return y.view(batch, n, D_MODEL)


def attn_sdpa(qkv, batch, n):
    q, k, v = (t.view(batch, n, HEADS, HEAD_DIM).transpose(1, 2) for t in qkv.split(D_MODEL, dim=2))
    if qkv.dtype == torch.float32:
        with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    else:  # 16-bit: SDPA's own choice of back end, as a PyTorch model gets it
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return y.transpose(1, 2).contiguous().view(batch, n, D_MODEL)


def attn_naive(qkv, batch, n):
    q, k, v = (t.view(batch, n, HEADS, HEAD_DIM).transpose(1, 2) for t in qkv.split(D_MODEL, dim=2))
    s = (q @ k.transpose(2, 3)) / math.sqrt(HEAD_DIM)
    mask = torch.ones(n, n, dtype=torch.bool, device=qkv.device).triu(1)
    s.masked_fill_(mask, -torch.inf)
    y = torch.softmax(s.float(), dim=3).to(v.dtype) @ v  # softmax in fp32, as SDPA's math path
    return y.transpose(1, 2).contiguous().view(batch, n, D_MODEL)


ATTENTION = {"flashtune": attn_flashtune, "sdpa": attn_sdpa, "naive": attn_naive}


class Gpt2:
    def __init__(self, max_n, seed=0, dtype=torch.float32):
        g = torch.Generator(device="cuda").manual_seed(seed)
        self.dtype = dtype

        def w(*shape, std=0.02):
            return (torch.randn(*shape, device="cuda", generator=g) * std).to(dtype)

        self.wte = w(VOCAB, D_MODEL)
        self.wpe = w(max_n, D_MODEL, std=0.01)
        self.layers = []
        for _ in range(LAYERS):
            self.layers.append({
                "ln1": (torch.ones(D_MODEL, device="cuda", dtype=dtype), torch.zeros(D_MODEL, device="cuda", dtype=dtype)),
                "attn_w": w(D_MODEL, 3 * D_MODEL), "attn_b": torch.zeros(3 * D_MODEL, device="cuda", dtype=dtype),
                "proj_w": w(D_MODEL, D_MODEL), "proj_b": torch.zeros(D_MODEL, device="cuda", dtype=dtype),
                "ln2": (torch.ones(D_MODEL, device="cuda", dtype=dtype), torch.zeros(D_MODEL, device="cuda", dtype=dtype)),
                "fc_w": w(D_MODEL, 4 * D_MODEL), "fc_b": torch.zeros(4 * D_MODEL, device="cuda", dtype=dtype),
                "fc2_w": w(4 * D_MODEL, D_MODEL), "fc2_b": torch.zeros(D_MODEL, device="cuda", dtype=dtype),
            })
        self.lnf = (torch.ones(D_MODEL, device="cuda", dtype=dtype), torch.zeros(D_MODEL, device="cuda", dtype=dtype))

    @torch.no_grad()
    def forward(self, tokens, attention):
        batch, n = tokens.shape
        x = self.wte[tokens] + self.wpe[:n]
        for L in self.layers:
            h = F.layer_norm(x, (D_MODEL,), *L["ln1"])
            qkv = torch.addmm(L["attn_b"], h.view(-1, D_MODEL), L["attn_w"]).view(batch, n, 3 * D_MODEL)
            y = attention(qkv, batch, n)
            x = x + torch.addmm(L["proj_b"], y.view(-1, D_MODEL), L["proj_w"]).view(batch, n, D_MODEL)
            h = F.layer_norm(x, (D_MODEL,), *L["ln2"])
            h = F.gelu(torch.addmm(L["fc_b"], h.view(-1, D_MODEL), L["fc_w"]), approximate="tanh")
            x = x + torch.addmm(L["fc2_b"], h, L["fc2_w"]).view(batch, n, D_MODEL)
        x = F.layer_norm(x, (D_MODEL,), *self.lnf)
        return x @ self.wte.t()


def median_ms(fn, reps, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


@torch.no_grad()
def generate_tokens_per_s(model, prompt, new_tokens, attention):
    tokens = prompt.clone()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(new_tokens):
        logits = model.forward(tokens, attention)
        nxt = logits[:, -1].argmax(dim=-1, keepdim=True)
        tokens = torch.cat([tokens, nxt], dim=1)
    stop.record()
    stop.synchronize()
    return new_tokens / (start.elapsed_time(stop) / 1e3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[128, 256, 512, 1024, 2048, 4096])
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--gen-tokens", type=int, default=16, help="tokens generated per N (default 16)")
    ap.add_argument("--dtype", choices=("fp32", "bf16", "fp16"), default="fp32",
                    help="the whole model's dtype (default fp32; bf16/fp16: SDPA's default back end is the peer)")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
    if not torch.cuda.is_available():
        sys.exit("gpt2_e2e: needs a CUDA GPU")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = Gpt2(max(args.n) + args.gen_tokens, dtype=dtype)
    rows = []
    dev = torch.cuda.get_device_name()
    peer = "SDPA-EFFICIENT" if args.dtype == "fp32" else "SDPA default back end"
    print(f"{dev}, GPT-2 small {args.dtype}, batch {args.batch}, torch {torch.__version__}, peer: {peer}")
    for n in args.n:
        g = torch.Generator(device="cuda").manual_seed(n)
        tokens = torch.randint(0, VOCAB, (args.batch, n), device="cuda", generator=g)
        qkv = torch.randn(args.batch, n, 3 * D_MODEL, device="cuda", generator=g).to(dtype)
        row = {"N": n, "batch": args.batch, "dtype": args.dtype}
        logits = {}
        for name, attention in ATTENTION.items():
            logits[name] = model.forward(tokens, attention)
            row[f"{name}_forward_ms"] = median_ms(lambda: model.forward(tokens, attention), args.reps)
            row[f"{name}_attention_ms"] = LAYERS * median_ms(lambda: attention(qkv, args.batch, n), args.reps)
            prompt = tokens[:, : n - args.gen_tokens] if n > args.gen_tokens else tokens
            row[f"{name}_tokens_per_s"] = generate_tokens_per_s(model, prompt, args.gen_tokens, attention)
        ref = logits["sdpa"].double()
        for name in ("flashtune", "naive"):
            row[f"{name}_logits_rel_l2"] = float((logits[name].double() - ref).norm() / ref.norm())
        fwd, att = row["sdpa_forward_ms"], row["sdpa_attention_ms"]
        row["sdpa_attention_share"] = att / fwd
        row["measured_speedup"] = fwd / row["flashtune_forward_ms"]
        row["predicted_speedup"] = fwd / (fwd - att + row["flashtune_attention_ms"])
        row["prediction_error"] = row["measured_speedup"] / row["predicted_speedup"] - 1
        row["flashtune_config"] = flashtune.last_launch()["config"]
        rows.append(row)
        print(f"N={n:5d} fwd ms: flashtune {row['flashtune_forward_ms']:8.3f} sdpa {fwd:8.3f} naive "
              f"{row['naive_forward_ms']:8.3f} | attn share {100 * row['sdpa_attention_share']:5.1f}% | "
              f"speed-up {row['measured_speedup']:.3f} (predicted {row['predicted_speedup']:.3f}) | "
              f"tok/s {row['flashtune_tokens_per_s']:.1f} / {row['sdpa_tokens_per_s']:.1f} / "
              f"{row['naive_tokens_per_s']:.1f} | logits rel L2 {row['flashtune_logits_rel_l2']:.1e} "
              f"({row['flashtune_config']})", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": dev, "torch": torch.__version__, "dtype": args.dtype, "sdpa_peer": peer, "rows": rows},
                      f, indent=2)


if __name__ == "__main__":
    main()
