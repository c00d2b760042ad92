"""flashtune.attention on a GPU against PyTorch's SDPA in float64: both memory layouts, odd N,
causal and not, a non-contiguous slice of a fused QKV tensor, no copy made (the pointers the kernel
received are the tensors' own), the caller's stream, torch.compile through the custom op, and bad
tensors refused with the argument named. bfloat16 and float16: the same against the float64
reference on the rounded inputs, within the dtype's bar and within 1.25x the error of SDPA's FLASH
back end on the same inputs; scores up to +-50 stay finite; mixed dtypes are refused; torch.compile
in bfloat16. Skips without PyTorch or without a CUDA device (the 16-bit tests without a 16-bit
config in the build or a GPU older than sm_80)."""
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not importable here")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device (torch.cuda.is_available() is False)", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

import flashtune  # noqa: E402

TOL = 1e-4


def dims(dtype):
    """Head dims with a compiled config of this dtype (the small kernel set has fewer)."""
    return sorted({int(n.split("/")[1][1:]) for n in flashtune.configs(dtype=dtype)})


def need32(d):
    if d not in dims("fp32"):
        pytest.skip(f"no fp32 config of d={d} in this build")


# The smallest compiled fp32 head dim, for the tests whose point is not d.
D32 = dims("fp32")[0]


def reference(q, k, v, causal):
    return F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal)


def rel_l2(x, ref):
    return float((x.double() - ref).norm() / ref.norm())


def assert_no_copy(q, k, v, out):
    last = flashtune.last_launch()
    assert (last["q"], last["k"], last["v"], last["o"]) == (q.data_ptr(), k.data_ptr(), v.data_ptr(),
                                                            out.data_ptr()), last


@pytest.mark.parametrize("d", [32, 64, 128])
@pytest.mark.parametrize("n", [77, 1001])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("layout", ["bhnd", "bnhd"])
def test_matches_sdpa_in_float64(d, n, causal, layout):
    need32(d)
    g = torch.Generator(device="cuda").manual_seed(d * 7919 + n + causal)
    batch, heads = 2, 3
    if layout == "bhnd":
        q, k, v = (torch.randn(batch, heads, n, d, device="cuda", generator=g) for _ in range(3))
    else:  # [batch, N, heads, d] storage, viewed as [batch, heads, N, d]
        q, k, v = (torch.randn(batch, n, heads, d, device="cuda", generator=g).transpose(1, 2) for _ in range(3))
        assert not q.is_contiguous()
    out = flashtune.attention(q, k, v, causal=causal)
    assert_no_copy(q, k, v, out)
    err = rel_l2(out, reference(q, k, v, causal))
    assert err <= TOL, (layout, d, n, causal, err, flashtune.last_launch()["config"])


@pytest.mark.parametrize("causal", [False, True])
def test_fused_qkv_slice_runs_without_a_copy(causal):
    batch, n, heads, d = 2, 333, 12, 64
    qkv = torch.randn(batch, n, 3 * heads * d, device="cuda")  # a fused projection's output
    q, k, v = (t.view(batch, n, heads, d).transpose(1, 2) for t in qkv.split(heads * d, dim=2))
    out = torch.full((batch, heads, n, d), float("nan"), device="cuda")
    got = flashtune.attention(q, k, v, causal=causal, out=out)
    assert got is out
    assert_no_copy(q, k, v, out)
    assert rel_l2(out, reference(q, k, v, causal)) <= TOL


def test_output_into_a_bnhd_view_and_explicit_scale():
    batch, n, heads, d = 1, 129, 4, D32
    q, k, v = (torch.randn(batch, heads, n, d, device="cuda") for _ in range(3))
    store = torch.full((batch, n, heads, d), float("nan"), device="cuda")
    out = store.transpose(1, 2)
    flashtune.attention(q, k, v, scale=0.05, out=out)
    ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), scale=0.05)
    assert rel_l2(out, ref) <= TOL
    assert not torch.isnan(store).any()


def test_runs_on_the_callers_stream():
    q, k, v = (torch.randn(4, 2, 500, 64, device="cuda") for _ in range(3))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        out = flashtune.attention(q, k, v, causal=True)
        done = torch.cuda.Event()
        done.record(side)
    done.synchronize()
    assert rel_l2(out, reference(q, k, v, True)) <= TOL


def test_torch_compile_keeps_the_custom_op():
    d = D32

    def block(x, w):
        qkv = x @ w
        q, k, v = (t.view(2, 64, 4, d).transpose(1, 2) for t in qkv.split(4 * d, dim=2))
        return torch.ops.flashtune.attention(q, k, v, True, 0.0)

    x = torch.randn(2, 64, 4 * d, device="cuda")
    w = torch.randn(4 * d, 12 * d, device="cuda") * 0.1
    compiled = torch.compile(block, fullgraph=True)
    got = compiled(x, w)
    want = block(x, w)
    assert torch.equal(got, want)


def test_bad_tensors_are_refused_with_the_argument_named():
    q = torch.randn(1, 2, 64, 64, device="cuda")
    with pytest.raises(TypeError, match="^q: expected float32, bfloat16 or float16, got float64"):
        flashtune.attention(q.double(), q, q)
    with pytest.raises(TypeError, match="^k: expected a CUDA tensor"):
        flashtune.attention(q, q.cpu(), q)
    with pytest.raises(ValueError, match="^v: shape"):
        flashtune.attention(q, q, q[:, :, :63])
    with pytest.raises(ValueError, match="^q: the last dimension must be contiguous"):
        wide = torch.randn(1, 2, 64, 128, device="cuda")
        flashtune.attention(wide[..., ::2], q, q)



# ---- bfloat16 and float16 -------------------------------------------------------------------

TORCH_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
# The bar a 16-bit result must stay under against the float64 reference on the rounded inputs
# (rel_l2_tolerance(DType) in kernels/traits/tile_config.h).
TOL16 = {"bf16": 2e-2, "fp16": 3e-3}
SM80 = torch.cuda.get_device_capability() >= (8, 0)


def need16(dtype, d=None):
    if not SM80:
        pytest.skip("16-bit tensor cores need sm_80 or newer")
    if d is None and not dims(dtype) or d is not None and d not in dims(dtype):
        pytest.skip(f"no {dtype} config{'' if d is None else f' of d={d}'} in this build")


def sdpa_flash_error(q, k, v, causal, ref):
    """SDPA's FLASH back end on the same 16-bit inputs, its rel L2 error against ref; None where it refuses."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    try:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    except RuntimeError:
        return None
    return rel_l2(y, ref)


def check16(dtype, q, k, v, out, causal, ref=None):
    """out against the float64 reference on the rounded inputs: finite, under the dtype's bar and
    within 1.25x SDPA-FLASH's error on the same inputs."""
    assert out.dtype == TORCH_DTYPES[dtype]
    assert torch.isfinite(out).all()
    ref = reference(q, k, v, causal) if ref is None else ref
    err = rel_l2(out, ref)
    config = flashtune.last_launch()["config"]
    assert f"/{dtype}" in config, config
    assert err <= TOL16[dtype], (dtype, err, config)
    flash = sdpa_flash_error(q, k, v, causal, ref)
    if flash is not None:
        # a floor of one rounding of the output (2^-9 bf16, 2^-12 fp16) for inputs SDPA gets exact
        assert err <= 1.25 * max(flash, 2.0 ** (-9 if dtype == "bf16" else -12) / 4), (dtype, err, flash, config)
    return err


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("d", [32, 64, 128])
@pytest.mark.parametrize("n", [77, 1001])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("layout", ["bhnd", "bnhd"])
def test_16_bit_matches_sdpa_in_float64_on_the_rounded_inputs(dtype, d, n, causal, layout):
    need16(dtype, d)
    g = torch.Generator(device="cuda").manual_seed(d * 7919 + n + causal + 3)
    batch, heads = 2, 3
    t = TORCH_DTYPES[dtype]
    if layout == "bhnd":
        q, k, v = (torch.randn(batch, heads, n, d, device="cuda", generator=g).to(t) for _ in range(3))
    else:
        q, k, v = (torch.randn(batch, n, heads, d, device="cuda", generator=g).to(t).transpose(1, 2) for _ in range(3))
        assert not q.is_contiguous()
    out = flashtune.attention(q, k, v, causal=causal)
    assert_no_copy(q, k, v, out)
    assert flashtune.last_launch()["dtype"] == dtype
    check16(dtype, q, k, v, out, causal)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_16_bit_scores_up_to_50_stay_finite(dtype):
    d = 64 if 64 in dims(dtype) else (dims(dtype) or [64])[0]
    need16(dtype, d)
    t = TORCH_DTYPES[dtype]
    g = torch.Generator(device="cuda").manual_seed(50)
    batch, heads, n = 1, 4, 517
    q, k = (torch.randn(batch, heads, n, d, device="cuda", generator=g) for _ in range(2))
    # q and k scaled so that the largest |score| (scale 1/sqrt(d)) is 50
    f = (50.0 / float((q @ k.transpose(2, 3)).abs().max() / d ** 0.5)) ** 0.5
    v = torch.randn(batch, heads, n, d, device="cuda", generator=g) * 100  # |O| in the hundreds
    q, k, v = (q * f).to(t), (k * f).to(t), v.to(t)
    scores = (q.double() @ k.double().transpose(2, 3)) / d ** 0.5
    assert 45 < scores.abs().max() < 55, float(scores.abs().max())
    for causal in (False, True):
        out = flashtune.attention(q, k, v, causal=causal)
        check16(dtype, q, k, v, out, causal)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_16_bit_fused_qkv_slice_and_output_view(dtype):
    need16(dtype, 64)
    t = TORCH_DTYPES[dtype]
    batch, n, heads, d = 2, 333, 12, 64
    qkv = torch.randn(batch, n, 3 * heads * d, device="cuda").to(t)
    q, k, v = (x.view(batch, n, heads, d).transpose(1, 2) for x in qkv.split(heads * d, dim=2))
    store = torch.full((batch, n, heads, d), float("nan"), device="cuda", dtype=t)
    out = flashtune.attention(q, k, v, causal=True, out=store.transpose(1, 2))
    assert out.data_ptr() == store.data_ptr()
    assert_no_copy(q, k, v, out)
    assert not torch.isnan(store).any()
    check16(dtype, q, k, v, out, True)


def test_mixed_dtypes_are_refused_with_each_operand_named():
    need16("bf16")
    q = torch.randn(1, 2, 64, 64, device="cuda")
    b = q.bfloat16()
    with pytest.raises(TypeError) as e:
        flashtune.attention(b, q, b)
    assert str(e.value) == "q, k, v must have one dtype, got q bfloat16, k float32, v bfloat16"
    with pytest.raises(TypeError) as e:
        flashtune.attention(b, b, b, out=q.half())
    assert str(e.value) == "q, k, v and out must have one dtype, got q bfloat16, k bfloat16, v bfloat16, out float16"
    with pytest.raises(TypeError, match="^q, k, v must have one dtype"):
        torch.ops.flashtune.attention(b, b, q, False, 0.0)


def test_named_config_runs_and_a_config_of_another_dtype_is_refused():
    need16("bf16", 64)
    q, k, v = (torch.randn(2, 2, 200, 64, device="cuda").bfloat16() for _ in range(3))
    # A tiled family's config (decode configs serve N <= 64 query rows, and this q has 200).
    name = [c for c in flashtune.configs(dtype="bf16") if "/d64/" in c and not c.startswith("decode/")][-1]
    out = flashtune.attention(q, k, v, config=name)
    assert flashtune.last_launch()["config"] == name
    check16("bf16", q, k, v, out, False)
    fp32 = [c for c in flashtune.configs(dtype="fp32") if "/d64/" in c][0]
    with pytest.raises(ValueError, match="takes fp32 operands, the workload is bf16"):
        flashtune.attention(q, k, v, config=fp32)


def test_float32_still_runs_an_fp32_kernel_after_bf16_of_the_same_shape():
    need16("bf16", 64)
    q, k, v = (torch.randn(1, 4, 300, 64, device="cuda") for _ in range(3))
    flashtune.attention(q.bfloat16(), k.bfloat16(), v.bfloat16())
    assert "/bf16" in flashtune.last_launch()["config"]
    out = flashtune.attention(q, k, v)
    assert out.dtype == torch.float32
    assert "/bf16" not in flashtune.last_launch()["config"] and "/fp16" not in flashtune.last_launch()["config"]
    assert rel_l2(out, reference(q, k, v, False)) <= TOL


def test_torch_compile_in_bf16():
    need16("bf16", 64)

    def block(x, w):
        qkv = x @ w
        q, k, v = (t.view(2, 64, 2, 64).transpose(1, 2) for t in qkv.split(128, dim=2))
        return torch.ops.flashtune.attention(q, k, v, True, 0.0)

    x = torch.randn(2, 64, 128, device="cuda").bfloat16()
    w = (torch.randn(128, 384, device="cuda") * 0.1).bfloat16()
    compiled = torch.compile(block, fullgraph=True)
    got = compiled(x, w)
    want = block(x, w)
    assert got.dtype == torch.bfloat16
    assert torch.equal(got, want)


# ---- inference operands: a KV cache and grouped heads -----------------------------------------

def reference_kv_cache(q, k, v, causal):
    """float64 SDPA on K and V repeated over each group of query heads, with the bottom-right
    aligned causal mask (query row i sees keys j <= i + Nkv - Nq) given explicitly."""
    group = q.shape[1] // k.shape[1]
    k, v = (x.double().repeat_interleave(group, dim=1) for x in (k, v))
    mask = None
    if causal:
        nq, nkv = q.shape[2], k.shape[2]
        rows = torch.arange(nq, device=q.device)[:, None]
        keys = torch.arange(nkv, device=q.device)[None, :]
        mask = keys <= rows + (nkv - nq)
    return F.scaled_dot_product_attention(q.double(), k, v, attn_mask=mask)


@pytest.mark.parametrize("nq", [1, 4, 64])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_kv_cache_with_grouped_heads_matches_sdpa(nq, causal, dtype):
    name = {torch.float32: "fp32", torch.bfloat16: "bf16"}[dtype]
    if not dims(name):
        pytest.skip(f"no {name} config in this build")
    d = dims(name)[0]
    g = torch.Generator(device="cuda").manual_seed(nq * 31 + causal)
    batch, hq, hkv, nkv = 2, 8, 2, 1000
    q = torch.randn(batch, hq, nq, d, device="cuda", generator=g).to(dtype)
    k, v = (torch.randn(batch, hkv, nkv, d, device="cuda", generator=g).to(dtype) for _ in range(2))
    out = flashtune.attention(q, k, v, causal=causal)
    assert out.shape == q.shape and out.dtype == dtype
    assert_no_copy(q, k, v, out)
    err = rel_l2(out, reference_kv_cache(q, k, v, causal))
    assert err < (TOL if dtype == torch.float32 else 2e-2), err


def test_kv_cache_views_of_a_longer_cache_run_without_a_copy():
    # A cache allocated for 4096 positions, 1500 filled: the slice's head and batch strides are the
    # allocation's.
    d = D32
    cache_k = torch.randn(2, 2, 4096, d, device="cuda")
    cache_v = torch.randn(2, 2, 4096, d, device="cuda")
    k, v = cache_k[:, :, :1500], cache_v[:, :, :1500]
    q = torch.randn(2, 8, 1, d, device="cuda")
    out = flashtune.attention(q, k, v, causal=True)
    assert_no_copy(q, k, v, out)
    assert rel_l2(out, reference_kv_cache(q, k, v, True)) < TOL


def test_torch_op_takes_grouped_heads():
    d = D32
    q = torch.randn(1, 4, 3, d, device="cuda")
    k, v = torch.randn(1, 1, 50, d, device="cuda"), torch.randn(1, 1, 50, d, device="cuda")
    got = torch.ops.flashtune.attention(q, k, v, True, 0.0)
    assert rel_l2(got, reference_kv_cache(q, k, v, True)) < TOL
