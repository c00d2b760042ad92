"""flashtune from Python: fp32 FlashAttention forward on CUDA tensors, and the model's predictions.

    import flashtune
    out = flashtune.attention(q, k, v, causal=True)      # q, k, v: [batch, heads, N, d] float32 CUDA
    flashtune.rank(B=500, N=2048, d=64)                   # the model's ranking, no GPU needed
    flashtune.predict(B=500, N=2048, d=64, config="mma_3xtf32/d64/br64xbc64/swizzled")

Tensors are anything exposing __cuda_array_interface__ (PyTorch, CuPy), shaped [batch, heads, N, d]
(or [B, N, d]) with any strides whose last dimension is contiguous: a [batch, N, heads, d] tensor
passed as x.transpose(1, 2), or slices of a fused QKV projection, run without a copy. The kernel
runs on the caller's current stream (PyTorch's or CuPy's). With PyTorch importable, the call is
also the custom op torch.ops.flashtune.attention, usable inside torch.compile.
"""

from . import _flashtune

__all__ = ["attention", "predict", "rank", "configs", "last_launch"]

predict = _flashtune.predict
rank = _flashtune.rank
last_launch = _flashtune.last_launch
configs = _flashtune.configs


def _interface(x, name):
    iface = getattr(x, "__cuda_array_interface__", None)
    if iface is None:
        raise TypeError(f"{name}: expected a CUDA tensor exposing __cuda_array_interface__ "
                        f"(got {type(x).__name__}; a CPU tensor must be moved to the GPU first)")
    return iface


def _operand(x, name):
    """(address, (batch, head, row) strides in floats, shape as [batch, heads, N, d])."""
    iface = _interface(x, name)
    if iface["typestr"] != "<f4":
        raise TypeError(f"{name}: expected float32, got typestr {iface['typestr']!r}")
    shape = tuple(iface["shape"])
    if len(shape) not in (3, 4):
        raise ValueError(f"{name}: expected shape [batch, heads, N, d] or [B, N, d], got {list(shape)}")
    strides = iface.get("strides")
    if strides is None:  # C-contiguous
        strides, acc = [], 4
        for n in reversed(shape):
            strides.insert(0, acc)
            acc *= n
    strides = list(strides)
    if any(s % 4 for s in strides):
        raise ValueError(f"{name}: strides {strides} (bytes) are not whole floats")
    strides = [s // 4 for s in strides]
    if len(shape) == 3:
        shape = (shape[0], 1) + shape[1:]
        strides = [strides[0], 0] + strides[1:]
    if shape[3] > 1 and strides[3] != 1:
        raise ValueError(f"{name}: the last dimension must be contiguous (stride 1), got stride {strides[3]}")
    return iface["data"][0], strides[:3], shape


def _current_stream(x):
    mod = type(x).__module__
    if mod.startswith("torch"):
        import torch
        return torch.cuda.current_stream(x.device).cuda_stream
    if mod.startswith("cupy"):
        import cupy
        return cupy.cuda.get_current_stream().ptr
    return 0


def _empty_like(q, shape):
    mod = type(q).__module__
    if mod.startswith("torch"):
        import torch
        return torch.empty(shape, dtype=torch.float32, device=q.device)
    if mod.startswith("cupy"):
        import cupy
        return cupy.empty(shape, dtype=cupy.float32)
    raise TypeError("out: give an output tensor (only PyTorch and CuPy inputs get one allocated)")


def attention(q, k, v, causal=False, scale=None, out=None, precision="fp32"):
    """softmax(scale * q k^T [causal mask]) v for q, k, v of shape [batch, heads, N, d] (or [B, N, d]),
    float32 CUDA tensors with a contiguous last dimension and any other strides. Returns `out`
    (allocated [batch, heads, N, d] contiguous when not given). scale defaults to 1/sqrt(d).
    precision "tf32" lets the dispatcher pick the faster TF32-accurate kernels (rel. L2 up to 1e-2)."""
    qa, qs, shape = _operand(q, "q")
    ka, ks, kshape = _operand(k, "k")
    va, vs, vshape = _operand(v, "v")
    for name, other in (("k", kshape), ("v", vshape)):
        if other != shape:
            raise ValueError(f"{name}: shape {list(other)} differs from q's {list(shape)}")
    if out is None:
        out = _empty_like(q, tuple(_interface(q, "q")["shape"]))
    oa, os_, oshape = _operand(out, "out")
    if oshape != shape:
        raise ValueError(f"out: shape {list(oshape)} differs from q's {list(shape)}")
    batch, heads, n, d = shape
    _flashtune.attention(qa, qs, ka, ks, va, vs, oa, os_, batch, heads, n, d, bool(causal),
                         None if scale is None else float(scale), _current_stream(q), precision)
    return out


def _register_torch_op():
    """torch.ops.flashtune.attention: the call as a custom op, so torch.compile keeps it whole."""
    try:
        import torch
    except ImportError:
        return
    if not hasattr(torch, "library") or not hasattr(torch.library, "custom_op"):
        return

    @torch.library.custom_op("flashtune::attention", mutates_args=())
    def _attention_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                      scale: float) -> torch.Tensor:
        return attention(q, k, v, causal=causal, scale=None if scale <= 0 else scale)

    @_attention_op.register_fake
    def _(q, k, v, causal, scale):
        return torch.empty(q.shape, dtype=q.dtype, device=q.device)


_register_torch_op()
