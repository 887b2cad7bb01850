"""Issue 14: frameworks that link NVIDIA's static runtime, run on whatever libcuda.so.1 comes
first on the library path. Prints one line per check with a deterministic digest of its
result, so that a run on NVIDIA's driver and one on cudamux (cuda backend) can be compared
line by line (scripts/gpu-nvcc.sh). Usage: python3 frameworks_check.py torch|cupy|jax"""
import sys
import traceback


def digest(values):
    return " ".join(f"{float(v):.5g}" for v in values)


def torch_checks():
    import torch
    torch.manual_seed(0)
    dev = "cuda"
    yield "device", torch.cuda.get_device_name(0)
    x = torch.arange(1 << 20, dtype=torch.float32, device=dev)
    yield "create", digest([x.sum().item(), x[12345].item()])
    y = torch.sin(x) * 2 + x.sqrt()
    yield "elementwise", digest([y[:1000].sum().item(), y[-1].item()])
    yield "reduce", digest([x.mean().item(), x.max().item(), (x % 7).sum().item()])
    a = torch.randn(256, 256, device=dev)
    b = torch.randn(256, 256, device=dev)
    c = torch.matmul(a, b)
    ref = torch.matmul(a.cpu().double(), b.cpu().double())
    yield "matmul_max_error_below_1e-3", str(bool((c.cpu().double() - ref).abs().max() < 1e-3))
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.randn(512, 64, device=dev)
    target = torch.randint(0, 10, (512,), device=dev)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(data), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    yield "mlp_loss_decreases", str(losses[-1] < losses[0])
    yield "mlp_loss", digest([losses[0]])
    torch.cuda.synchronize()
    # Issue 16: a CUDA graph captured by PyTorch, replayed with new inputs, against eager.
    static_in = torch.randn(1024, device=dev)
    w = torch.randn(1024, 1024, device=dev)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):  # warm-up before capture, as PyTorch asks
            static_out = torch.relu(w @ static_in) + 1
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = torch.relu(w @ static_in) + 1
    matches = []
    for _ in range(3):
        fresh = torch.randn(1024, device=dev)
        static_in.copy_(fresh)
        graph.replay()
        ref = torch.relu(w @ fresh) + 1
        matches.append(bool(torch.allclose(static_out, ref, rtol=1e-4, atol=1e-4)))
    yield "cuda_graph_replays_match_eager", str(all(matches))


def cupy_checks():
    import cupy as cp
    yield "device", cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    x = cp.arange(1 << 20, dtype=cp.float32)
    yield "create", digest([x.sum(), x[12345]])
    y = cp.sin(x) * 2 + cp.sqrt(x)
    yield "elementwise", digest([y[:1000].sum(), y[-1]])
    yield "reduce", digest([x.mean(), x.max(), (x % 7).sum()])
    kernel = cp.RawKernel(r'''
extern "C" __global__ void twice(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2 * x[i];
}''', "twice")
    out = cp.empty_like(x)
    kernel(((x.size + 255) // 256,), (256,), (x, out, cp.int32(x.size)))
    yield "rawkernel", digest([out.sum()])
    a = cp.random.RandomState(0).standard_normal((256, 256), dtype=cp.float32)
    b = cp.random.RandomState(1).standard_normal((256, 256), dtype=cp.float32)
    c = cp.matmul(a, b)
    import numpy as np
    ref = a.get().astype(np.float64) @ b.get().astype(np.float64)
    yield "matmul_max_error_below_1e-3", str(bool(np.abs(c.get() - ref).max() < 1e-3))
    # Issue 16: stream capture into a CUDA graph through CuPy, launched twice.
    stream = cp.cuda.Stream(non_blocking=True)
    v = cp.arange(1000, dtype=cp.float32)
    with stream:
        stream.begin_capture()
        v *= 2
        v += 1
        graph = stream.end_capture()
    graph.launch(stream)
    graph.launch(stream)
    stream.synchronize()
    yield "graph_launched_twice", digest([v.sum(), v[999]])


def jax_checks():
    import jax
    import jax.numpy as jnp
    yield "device", str(jax.devices()[0].platform)

    @jax.jit
    def f(x):
        return jnp.sum(jnp.sin(x) * 2 + jnp.sqrt(x))
    x = jnp.arange(1 << 16, dtype=jnp.float32)
    yield "jit", digest([f(x)])
    yield "matmul", digest([jnp.sum(jnp.ones((128, 128)) @ jnp.ones((128, 128)))])


def main():
    which = sys.argv[1]
    checks = {"torch": torch_checks, "cupy": cupy_checks, "jax": jax_checks}[which]
    try:
        for name, value in checks():
            print(f"{which}.{name}: {value}", flush=True)
    except Exception:
        print(f"{which}: FAILED", flush=True)
        traceback.print_exc()
        return 1
    print(f"{which}: done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
