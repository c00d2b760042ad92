"""The module's host side: predict and rank agree with the CLI, bad input raises the CLI's message.
No GPU needed (run by CTest as python_module_test)."""
import json
import os
import subprocess

import pytest

import flashtune

BINARY = os.environ.get("FLASHTUNE_BINARY")


# fp32 head dims of the tiled families (decode configs serve N <= 64 only, and have their own dims)
DIMS = sorted({int(name.split("/")[1][1:]) for name in flashtune.configs(dtype="fp32") if not name.startswith("decode/")})
D = 64 if 64 in DIMS else DIMS[0]


def cli(*args):
    return subprocess.run([BINARY, *args], capture_output=True, text=True)


def test_rank_orders_every_fp32_config_of_d_by_predicted_time():
    ranked = flashtune.rank(500, 2048, D)
    fp32 = [n for n in flashtune.configs(dtype="fp32")
            if f"/d{D}/" in n and not n.startswith(("mma_1xtf32", "wgmma_1xtf32")) and not n.startswith("decode/")]
    assert sorted(r["config"] for r in ranked) == sorted(fp32)
    times = [r["time_s"] for r in ranked]
    assert times == sorted(times)
    assert [r["rank"] for r in ranked] == list(range(1, len(ranked) + 1))
    assert all(r["precision"] == "fp32" and r["dtype"] == "fp32" for r in ranked)
    assert all(r["d"] == D for r in ranked)
    assert any(r["variant"] == "mma_3xtf32" for r in ranked)
    assert any(r["variant"] == "mma_1xtf32" for r in flashtune.rank(500, 2048, D, precision="tf32"))


def dtype_of_name(name):
    """The element type a config name carries ("mma16/d64/br128xbc64/swizzled/bf16/s2" -> bf16)."""
    parts = name.split("/")[4:]
    return next((p for p in parts if p in ("bf16", "fp16")), "fp32")


def test_configs_filter_by_dtype():
    every = flashtune.configs()
    by_dtype = {t: flashtune.configs(dtype=t) for t in ("fp32", "bf16", "fp16")}
    assert sorted(every) == sorted(sum(by_dtype.values(), []))
    for t, names in by_dtype.items():
        assert all(dtype_of_name(n) == t for n in names), t
    assert by_dtype["fp32"], "no fp32 config compiled"


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_rank_of_a_16_bit_dtype_lists_only_its_configs(dtype):
    names = [n for n in flashtune.configs(dtype=dtype) if f"/d{D}/" in n and not n.startswith("decode/")]
    if not names:
        pytest.skip(f"no {dtype} config of d={D} in this build")
    ranked = flashtune.rank(500, 2048, D, dtype=dtype)
    assert sorted(r["config"] for r in ranked) == sorted(names)
    assert all(r["dtype"] == dtype for r in ranked)
    times = [r["time_s"] for r in ranked]
    assert times == sorted(times)
    # predict takes the config's dtype by default and gives rank's number
    one = flashtune.predict(500, 2048, D, ranked[0]["config"])
    assert one["time_s"] == ranked[0]["time_s"]
    assert flashtune.predict(500, 2048, D, ranked[0]["config"], dtype=dtype)["time_s"] == ranked[0]["time_s"]
    # an fp32 workload is not one a 16-bit config serves
    with pytest.raises(ValueError, match=f"takes {dtype} operands, the workload is fp32"):
        flashtune.predict(500, 2048, D, ranked[0]["config"], dtype="fp32")
    # and fp32 ranks no 16-bit config
    assert not any(r["config"] in names for r in flashtune.rank(500, 2048, D))


@pytest.mark.skipif(not BINARY, reason="FLASHTUNE_BINARY not set (CTest sets it)")
def test_bf16_predict_matches_the_cli_to_the_last_digit():
    names = [n for n in flashtune.configs(dtype="bf16") if "/d64/" in n]
    if not names:
        pytest.skip("no bf16 config of d=64 in this build")
    got = flashtune.predict(24, 1024, 64, names[0], causal=True, gpu="h200")
    run = cli("predict", "--gpu", "h200", "--B", "24", "--N", "1024", "--d", "64", "--causal", "--dtype", "bf16",
              "--config", names[0], "--json")
    assert run.returncode == 0, run.stderr
    assert got["time_s"] == json.loads(run.stdout)["results"][0]["time_s"]


def test_dtype_argument_is_validated():
    want = "unknown dtype 'fp8' (known: fp32, bf16, fp16)"
    for call in (lambda: flashtune.rank(1, 64, D, dtype="fp8"),
                 lambda: flashtune.configs(dtype="fp8"),
                 lambda: flashtune.predict(1, 64, 64, "mma_3xtf32/d64/br64xbc64/swizzled", dtype="fp8")):
        with pytest.raises(ValueError) as e:
            call()
        assert message_of(e) == want
    with pytest.raises(ValueError, match="takes fp32 operands, the workload is bf16"):
        flashtune.predict(1, 64, 64, "mma_3xtf32/d64/br64xbc64/swizzled", dtype="bf16")
    if BINARY:
        run = cli("predict", "--gpu", "h200", "--B", "1", "--N", "64", "--d", "64", "--all", "--dtype", "fp8")
        assert run.returncode == 2
        assert run.stderr.strip() == "flashtune predict: " + want


def test_bf16_refused_on_a_gpu_without_16_bit_tensor_cores():
    if not [n for n in flashtune.configs(dtype="bf16") if f"/d{D}/" in n]:
        pytest.skip(f"no bf16 config of d={D} in this build")
    with pytest.raises(ValueError) as e:
        flashtune.rank(1, 1024, D, gpu="gtx1080", dtype="bf16")
    assert message_of(e).startswith(f"no bf16 config of d={D} can run on ")
    assert "\n" not in message_of(e)


def test_predict_gives_the_number_rank_gives():
    best = flashtune.rank(8, 4096, D, causal=True)[0]
    one = flashtune.predict(8, 4096, D, best["config"], causal=True)
    assert one["config"] == best["config"]
    assert one["time_s"] == best["time_s"]


@pytest.mark.skipif(not BINARY, reason="FLASHTUNE_BINARY not set (CTest sets it)")
def test_predict_matches_the_cli_to_the_last_digit():
    config = "mma_3xtf32/d64/br64xbc64/swizzled"
    for profile, flag in ((None, []), ("", ["--spec-only"])):
        got = flashtune.predict(500, 2048, 64, config, gpu="h200", profile=profile)
        run = cli("predict", "--gpu", "h200", "--B", "500", "--N", "2048", "--d", "64", "--variant", "mma_3xtf32",
                  "--Br", "64", "--Bc", "64", "--layout", "swizzled", "--json", *flag)
        if run.returncode != 0 and flag:
            pytest.skip("this CLI has no --spec-only: " + run.stderr.strip())
        assert run.returncode == 0, run.stderr
        want = json.loads(run.stdout)["results"][0]
        assert got["time_s"] == want["time_s"], (profile, got["time_s"], want["time_s"])


def message_of(excinfo):
    return str(excinfo.value)


def test_bad_input_raises_the_cli_message():
    with pytest.raises(ValueError) as e:
        flashtune.rank(1, 64, 48)
    assert message_of(e) == f"unsupported d=48 (compiled: {', '.join(map(str, DIMS))})"
    with pytest.raises(ValueError) as e:
        flashtune.rank(0, 64, 64)
    assert message_of(e) == "B=0: must be >= 1"
    with pytest.raises(ValueError) as e:
        flashtune.rank(1, 64, 64, precision="fp16")
    assert "fp16" in message_of(e)
    with pytest.raises(ValueError) as e:
        flashtune.rank(1, 1 << 40, 64)
    assert message_of(e) == "N=1099511627776 is above the kernels' limit 2147483647"
    with pytest.raises(ValueError) as e:
        flashtune.predict(1, 64, 64, "not-a-config")
    assert "not-a-config" in message_of(e)
    with pytest.raises(ValueError) as e:
        flashtune.rank(1, 64, 64, gpu="no-such-gpu")
    if BINARY:
        run = cli("predict", "--gpu", "no-such-gpu", "--B", "1", "--N", "64", "--d", "64", "--all")
        assert run.returncode == 2
        assert run.stderr.strip() == "flashtune predict: " + message_of(e)


def test_tensor_core_config_refused_on_a_gpu_without_tf32_mma():
    with pytest.raises(ValueError) as e:
        flashtune.predict(1, 1024, 64, "mma_3xtf32/d64/br64xbc64/swizzled", gpu="gtx1080")
    assert "cannot run on" in message_of(e)


class FakeTensor:
    """Just enough of __cuda_array_interface__ to reach the checks made before any CUDA call."""

    def __init__(self, shape, typestr="<f4", strides=None, ptr=1 << 20):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "strides": strides,
                                         "data": (ptr, False), "version": 3}


def test_attention_names_the_bad_argument_before_touching_the_gpu():
    good = FakeTensor((2, 3, 77, 64))
    with pytest.raises(TypeError, match="^q: expected float32, bfloat16 or float16, got typestr '<f8'"):
        flashtune.attention(FakeTensor((2, 3, 77, 64), typestr="<f8"), good, good, out=good)
    with pytest.raises(TypeError, match="^k: expected a CUDA tensor"):
        flashtune.attention(good, [[1.0]], good, out=good)
    with pytest.raises(ValueError, match=r"^v: shape \[2, 3, 78, 64\] differs from k's \[2, 3, 77, 64\]"):
        flashtune.attention(good, good, FakeTensor((2, 3, 78, 64)), out=good)
    with pytest.raises(ValueError, match="^q: the last dimension must be contiguous"):
        flashtune.attention(FakeTensor((2, 3, 77, 64), strides=(4 * 64 * 77 * 3, 4 * 64 * 77, 4 * 64, 8)),
                            good, good, out=good)
    with pytest.raises(ValueError, match="^q: expected shape"):
        flashtune.attention(FakeTensor((77, 64)), good, good, out=good)
    with pytest.raises(ValueError, match="^unsupported d=48"):
        t = FakeTensor((2, 3, 77, 48))
        flashtune.attention(t, t, t, out=t)
    with pytest.raises(ValueError, match="^k row stride 66 is not a multiple of 4 floats"):
        flashtune.attention(good, FakeTensor((2, 3, 77, 64), strides=(4 * 66 * 80 * 3, 4 * 66 * 80, 4 * 66, 4)),
                            good, out=good)


def test_attention_refuses_mixed_dtypes_in_one_line():
    f32, f16 = FakeTensor((2, 3, 77, 64)), FakeTensor((2, 3, 77, 64), typestr="<f2")
    with pytest.raises(TypeError) as e:
        flashtune.attention(f32, f16, f32, out=f32)
    assert message_of(e) == "q, k, v and out must have one dtype, got q float32, k float16, v float32, out float32"
    with pytest.raises(TypeError) as e:
        flashtune.attention(f16, f16, f16, out=f32)
    assert message_of(e) == "q, k, v and out must have one dtype, got q float16, k float16, v float16, out float32"


def test_float16_strides_are_counted_in_elements():
    # 8 fp16 elements make the 16-byte vector: a row stride of 68 elements (136 bytes) is refused; a
    # byte stride that is no whole element never reaches the native side.
    half = FakeTensor((2, 3, 77, 64), typestr="<f2")
    odd = FakeTensor((2, 3, 77, 64), typestr="<f2", strides=(2 * 68 * 80 * 3, 2 * 68 * 80, 2 * 68, 2))
    with pytest.raises(ValueError, match="^k row stride 68 is not a multiple of 8 elements"):
        flashtune.attention(half, odd, half, out=half)
    with pytest.raises(ValueError, match="^v: strides .* are not whole float16 elements"):
        flashtune.attention(half, half, FakeTensor((2, 3, 77, 64), typestr="<f2", strides=(2 * 64 * 77 * 3, 2 * 64 * 77, 129, 2)),
                            out=half)


# ---- inference operands: a KV cache and grouped heads -----------------------------------------

def test_kv_cache_and_grouped_heads_are_refused_in_one_line_before_the_gpu():
    q = FakeTensor((2, 6, 4, 64))
    with pytest.raises(ValueError) as e:
        flashtune.attention(q, FakeTensor((2, 4, 100, 64)), FakeTensor((2, 4, 100, 64)), out=q)
    assert message_of(e).startswith("heads=6 is not a multiple of kv-heads=4")
    with pytest.raises(ValueError) as e:
        flashtune.attention(q, FakeTensor((2, 3, 100, 32)), FakeTensor((2, 3, 100, 32)), out=q)
    assert message_of(e) == "k: head dimension d=32 differs from q's d=64"
    with pytest.raises(ValueError, match=r"^k: batch 3 differs from q's 2"):
        flashtune.attention(q, FakeTensor((3, 3, 100, 64)), FakeTensor((3, 3, 100, 64)), out=q)
    big = FakeTensor((2, 6, 64, 64))
    with pytest.raises(ValueError) as e:
        flashtune.attention(big, FakeTensor((2, 3, 32, 64)), FakeTensor((2, 3, 32, 64)), causal=True, out=big)
    assert "causal with N=64 above kv_len=32" in message_of(e)
    with pytest.raises(TypeError) as e:
        flashtune.attention(q, FakeTensor((2, 3, 100, 64), typestr="<f2"), FakeTensor((2, 3, 100, 64)), out=q)
    assert message_of(e).startswith("q, k, v and out must have one dtype")


def test_rank_and_predict_take_keys_and_groups():
    d = sorted({int(n.split("/")[1][1:]) for n in flashtune.configs(dtype="fp32")})[0]
    ranked = flashtune.rank(B=32, N=4, d=d, causal=True, kv_len=4097, kv_group=4)
    # 4097 keys per query row cost more than 4, for the same config.
    same = flashtune.predict(B=32, N=4, d=d, config=ranked[0]["config"], causal=True)
    assert ranked and ranked[0]["time_s"] > same["time_s"]
    one = flashtune.predict(B=32, N=4, d=d, config=ranked[0]["config"], causal=True, kv_len=4097, kv_group=4)
    assert one["time_s"] == pytest.approx(ranked[0]["time_s"])
    with pytest.raises(ValueError, match="causal with N=64 above kv_len=32"):
        flashtune.rank(B=8, N=64, d=d, causal=True, kv_len=32)
    with pytest.raises(ValueError, match="B=6 is not a multiple of kv_group=4"):
        flashtune.rank(B=6, N=4, d=d, kv_len=100, kv_group=4)
