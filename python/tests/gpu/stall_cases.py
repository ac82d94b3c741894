# The GPU end-to-end case of pytest --asynccheck (scripts/gpu-python-test.sh; not collected by python/tests: no
# test_ prefix): one test that stalls, one that does not. The stall: a pageable tensor sent with non_blocking=True
# while GEMMs are queued, which cudaMemcpyAsync stages through a bounce buffer and so waits for them
# (copy-async-pageable-h2d, as in corpus/python/transformer_train.py). The kernels and the allocator's blocks are
# warmed at import, outside any test, so that neither test pays for lazy module loading, nor calls cudaMalloc while
# the GEMMs are queued (a cudaMalloc then waits for them: implicit-sync-device-alloc, a true finding, seen once
# under xdist, but not the one this case is about).
import torch

_x = torch.randn(4096, 4096, device="cuda")
(_x @ _x).sum().item()
torch.ones(1 << 20, device="cuda").mul(2).add(1)
# Blocks for every tensor test_stall holds at once (x, a GEMM's output and its scaled copy, the copied batch), left in
# the caching allocator's pool when freed.
_blocks = [torch.empty(4096, 4096, device="cuda") for _ in range(4)] + [torch.empty(64, 1024, 1024, device="cuda")]
del _blocks
torch.cuda.synchronize()


def test_stall():
    x = torch.randn(4096, 4096, device="cuda")
    for _ in range(8):
        x = x @ x * 1e-3  # ~tens of ms of GEMMs queued
    host = torch.randn(64, 1024, 1024)  # 256 MiB, pageable
    dev = host.to("cuda", non_blocking=True)  # STALL: the one finding
    assert dev.shape == host.shape


def test_clean():
    y = torch.ones(1 << 20, device="cuda").mul(2).add(1)
    assert y.shape[0] == 1 << 20
