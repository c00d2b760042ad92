"""flashtune.attention on a GPU against PyTorch's SDPA in float64: both memory layouts, odd N,
causal and not, a non-contiguous slice of a fused QKV tensor, no copy made (the pointers the kernel
received are the tensors' own), the caller's stream, torch.compile through the custom op, and bad
tensors refused with the argument named. Skips without PyTorch or without a CUDA device."""
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not importable here")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device (torch.cuda.is_available() is False)", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

import flashtune  # noqa: E402

TOL = 1e-4


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
    batch, n, heads, d = 1, 129, 4, 32
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
    def block(x, w):
        qkv = x @ w
        q, k, v = (t.view(2, 64, 4, 32).transpose(1, 2) for t in qkv.split(128, dim=2))
        return torch.ops.flashtune.attention(q, k, v, True, 0.0)

    x = torch.randn(2, 64, 128, device="cuda")
    w = torch.randn(128, 384, device="cuda") * 0.1
    compiled = torch.compile(block, fullgraph=True)
    got = compiled(x, w)
    want = block(x, w)
    assert torch.equal(got, want)


def test_bad_tensors_are_refused_with_the_argument_named():
    q = torch.randn(1, 2, 64, 64, device="cuda")
    with pytest.raises(TypeError, match="^q: expected float32"):
        flashtune.attention(q.half(), q, q)
    with pytest.raises(TypeError, match="^k: expected a CUDA tensor"):
        flashtune.attention(q, q.cpu(), q)
    with pytest.raises(ValueError, match="^v: shape"):
        flashtune.attention(q, q, q[:, :, :63])
    with pytest.raises(ValueError, match="^q: the last dimension must be contiguous"):
        wide = torch.randn(1, 2, 64, 128, device="cuda")
        flashtune.attention(wide[..., ::2], q, q)
