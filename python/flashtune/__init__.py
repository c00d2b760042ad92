"""flashtune from Python: FlashAttention forward on CUDA tensors (float32, bfloat16, float16), and
the model's predictions.

    import flashtune
    out = flashtune.attention(q, k, v, causal=True)      # q, k, v: [batch, heads, N, d] CUDA tensors
    out = flashtune.attention(q, k_cache, v_cache, causal=True)  # q [b, Hq, Nq, d], k/v [b, Hkv, Nkv, d]
    flashtune.rank(B=500, N=2048, d=64)                   # the model's ranking, no GPU needed
    flashtune.rank(B=500, N=2048, d=64, dtype="bf16")     # ... of the bf16 configs
    flashtune.predict(B=500, N=2048, d=64, config="mma_3xtf32/d64/br64xbc64/swizzled")

Tensors are PyTorch tensors (read through data_ptr(), stride() and dtype: PyTorch's
__cuda_array_interface__ refuses bfloat16) or anything else exposing __cuda_array_interface__
(CuPy: float32 and float16), shaped [batch, heads, N, d] (or [B, N, d]) with any strides whose last
dimension is contiguous. K and V ([batch, kv_heads, Nkv, d]) may hold another number of keys than q
has rows (a KV cache: causal is then aligned bottom-right, query row i sees keys j <= i + Nkv - Nq)
and fewer heads (grouped-query attention: q's heads a multiple of k's; K and V are never copied).
With any strides: a [batch, N, heads, d] tensor passed as x.transpose(1, 2), or slices of a
fused QKV projection, run without a copy. The element type is the tensors' own (q, k, v and out
share it) and the result has it too; accumulation and the softmax statistics are fp32 in every
kernel. The kernel runs on the caller's current stream (PyTorch's or CuPy's). With PyTorch
importable, the call is also the custom op torch.ops.flashtune.attention, usable inside
torch.compile.
"""

import sys

from . import _flashtune

__all__ = ["attention", "predict", "rank", "configs", "last_launch", "DTYPES"]

predict = _flashtune.predict
rank = _flashtune.rank
last_launch = _flashtune.last_launch
configs = _flashtune.configs

# The element types the kernels take: the native name (as --dtype on the command line) by the
# name PyTorch and NumPy give the type.
DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
# __cuda_array_interface__ typestrs (NumPy's): there is no standard one for bfloat16.
_TYPESTRS = {"<f4": "float32", "<f2": "float16"}
_ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2}


def _torch_tensor(x):
    """x when it is a torch.Tensor (subclasses too), else None; never imports torch itself (an object
    can be a tensor only where torch is already imported)."""
    torch = sys.modules.get("torch")
    tensor = getattr(torch, "Tensor", None)
    return x if tensor is not None and isinstance(x, tensor) else None


def _interface(x, name):
    iface = getattr(x, "__cuda_array_interface__", None)
    if iface is None:
        raise TypeError(f"{name}: expected a CUDA tensor (a PyTorch tensor, or one exposing "
                        f"__cuda_array_interface__), got {type(x).__name__}; a CPU tensor must be moved "
                        f"to the GPU first")
    return iface


def _operand(x, name):
    """(address, (batch, head, row) strides in elements, shape as [batch, heads, N, d], dtype name
    as in DTYPES: float32, bfloat16 or float16)."""
    t = _torch_tensor(x)
    if t is not None:
        if t.device.type != "cuda":
            raise TypeError(f"{name}: expected a CUDA tensor, got a torch.Tensor on {t.device}; "
                            f"a CPU tensor must be moved to the GPU first")
        dtype = str(t.dtype).replace("torch.", "")
        if dtype not in DTYPES:
            raise TypeError(f"{name}: expected float32, bfloat16 or float16, got {dtype}")
        address, shape, strides = t.data_ptr(), tuple(t.shape), list(t.stride())
    else:
        iface = _interface(x, name)
        typestr = iface["typestr"]
        if typestr not in _TYPESTRS:
            raise TypeError(f"{name}: expected float32, bfloat16 or float16, got typestr {typestr!r} "
                            f"(bfloat16 is read from PyTorch tensors only)")
        dtype = _TYPESTRS[typestr]
        size = _ITEMSIZE[dtype]
        address, shape = iface["data"][0], tuple(iface["shape"])
        strides = iface.get("strides")
        if strides is None:  # C-contiguous
            strides, acc = [], size
            for n in reversed(shape):
                strides.insert(0, acc)
                acc *= n
        strides = list(strides)
        if any(s % size for s in strides):
            raise ValueError(f"{name}: strides {strides} (bytes) are not whole {dtype} elements")
        strides = [s // size for s in strides]
    if len(shape) not in (3, 4):
        raise ValueError(f"{name}: expected shape [batch, heads, N, d] or [B, N, d], got {list(shape)}")
    if len(shape) == 3:
        shape = (shape[0], 1) + shape[1:]
        strides = [strides[0], 0] + strides[1:]
    if shape[3] > 1 and strides[3] != 1:
        raise ValueError(f"{name}: the last dimension must be contiguous (stride 1), got stride {strides[3]}")
    return address, strides[:3], shape, dtype


def _current_stream(x):
    if _torch_tensor(x) is not None:
        import torch
        return torch.cuda.current_stream(x.device).cuda_stream
    if type(x).__module__.startswith("cupy"):
        import cupy
        return cupy.cuda.get_current_stream().ptr
    return 0


def _empty_like(q, shape):
    """A new contiguous output of q's dtype and device."""
    t = _torch_tensor(q)
    if t is not None:
        import torch
        return torch.empty(shape, dtype=t.dtype, device=t.device)
    if type(q).__module__.startswith("cupy"):
        import cupy
        with cupy.cuda.Device(q.device.id):
            return cupy.empty(shape, dtype=q.dtype)
    raise TypeError("out: give an output tensor (only PyTorch and CuPy inputs get one allocated)")


def _shape_of(x):
    t = _torch_tensor(x)
    return tuple(t.shape) if t is not None else tuple(_interface(x, "q")["shape"])


def _require_one_dtype(qt, kt, vt, ot=None):
    """The one-line refusal of operands of mixed dtypes, naming each one's."""
    if len({qt, kt, vt, ot} - {None}) > 1:
        given = f"q {qt}, k {kt}, v {vt}" + (f", out {ot}" if ot else "")
        raise TypeError(f"q, k, v{' and out' if ot else ''} must have one dtype, got {given}")


def _check_kv_shapes(shape, kshape, vshape):
    """The one-line refusals of K and V shapes that do not go with q's [batch, heads, Nq, d]: K and V
    [batch, kv_heads, Nkv, d] alike, the same batch and d, q's heads a multiple of kv_heads."""
    if vshape != kshape:
        raise ValueError(f"v: shape {list(vshape)} differs from k's {list(kshape)}")
    if kshape[3] != shape[3]:
        raise ValueError(f"k: head dimension d={kshape[3]} differs from q's d={shape[3]}")
    if kshape[0] != shape[0]:
        raise ValueError(f"k: batch {kshape[0]} differs from q's {shape[0]}")
    if kshape[1] < 1 or shape[1] % kshape[1] != 0:
        raise ValueError(f"heads={shape[1]} is not a multiple of kv-heads={kshape[1]} "
                         f"(q's heads over k's: each K/V head serves the same number of query heads)")


def attention(q, k, v, causal=False, scale=None, out=None, precision="fp32", config=None):
    """softmax(scale * q k^T [causal mask]) v for q of shape [batch, heads, Nq, d] and k, v of shape
    [batch, kv_heads, Nkv, d] (or [B, N, d]), CUDA tensors of one dtype (float32, bfloat16 or
    float16) with a contiguous last dimension and any other strides. heads must be a multiple of
    kv_heads (grouped-query attention, no copy of k or v); causal with Nq != Nkv is aligned
    bottom-right (query row i sees keys j <= i + Nkv - Nq; Nq > Nkv is refused). Returns `out`
    (allocated like q, [batch, heads, Nq, d] contiguous, of q's dtype, when not given; a given out
    must have q's shape and dtype). scale defaults to 1/sqrt(d). precision "tf32" lets the
    dispatcher pick the faster TF32-accurate kernels for float32 (rel. L2 up to 1e-2). config: a
    compiled config name (flashtune.configs()) to run instead of the dispatcher's choice."""
    qa, qs, shape, qt = _operand(q, "q")
    ka, ks, kshape, kt = _operand(k, "k")
    va, vs, vshape, vt = _operand(v, "v")
    ot = None
    if out is not None:
        oa, os_, oshape, ot = _operand(out, "out")
    _require_one_dtype(qt, kt, vt, ot)
    _check_kv_shapes(shape, kshape, vshape)
    if out is None:
        out = _empty_like(q, _shape_of(q))
        oa, os_, oshape, ot = _operand(out, "out")
    if oshape != shape:
        raise ValueError(f"out: shape {list(oshape)} differs from q's {list(shape)}")
    batch, heads, n, d = shape
    _flashtune.attention(qa, qs, ka, ks, va, vs, oa, os_, batch, heads, n, d, bool(causal),
                         None if scale is None else float(scale), _current_stream(q), precision,
                         DTYPES[qt], config, kshape[1], kshape[2])
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
        # Traced (torch.compile, meta tensors): the output has the inputs' shape and dtype; mixed
        # dtypes are refused here already, with the eager call's message.
        _require_one_dtype(*(str(t.dtype).replace("torch.", "") for t in (q, k, v)))
        if q.dim() == 4 and k.dim() == 4 and v.dim() == 4:
            _check_kv_shapes(tuple(q.shape), tuple(k.shape), tuple(v.shape))
        return torch.empty(q.shape, dtype=q.dtype, device=q.device)


_register_torch_op()
