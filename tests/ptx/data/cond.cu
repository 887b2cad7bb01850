// Conditional graph nodes from nvcc's PTX (issue 16): device code sets a node's condition with
// cudaGraphSetConditional, which nvcc emits as a call of an external function.
extern "C" __global__ void set_from(cudaGraphConditionalHandle h, const int* value) {
  cudaGraphSetConditional(h, *value);
}
// The loop body of NVIDIA's graphConditionalNodes sample (simpleDoWhileGraph): counts down and
// ends the loop at zero.
extern "C" __global__ void countdown(int* counter, int* iterations,
                                     cudaGraphConditionalHandle h) {
  *iterations += 1;
  if (--*counter == 0) cudaGraphSetConditional(h, 0);
}
extern "C" __global__ void store(int* out, int value) { *out = value; }
