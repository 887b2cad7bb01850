// The C ABI between compiled mock modules, libcudamux-device.so and the mock plugin.
// Included by the prelude of every module (so: header-free C) and by the runtime.
#ifndef CUDAMUX_DEVICE_ABI_H
#define CUDAMUX_DEVICE_ABI_H

#define CUDAMUX_DEVICE_ABI 5

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cudamux_u3 {
  unsigned x, y, z;
} cudamux_u3;

// One kernel of a module: what the thunk generated for it knows.
typedef struct cudamux_kernel_desc {
  const void* fn;  // the kernel's own address: its symbol (dladdr) is the kernel's name
  // Runs the calling block's threads start, start+1, ... until the block ends or the
  // running fiber was handed off (see runtime.cpp). args: the packed parameter buffer.
  void (*loop)(const void* args, unsigned start);
  unsigned num_params;
  const unsigned* param_sizes;
  const unsigned* param_offsets;  // packed like CUDA: each aligned to its type
  unsigned args_size;
  int max_threads;              // __launch_bounds__ first argument; 0 when none
  int min_blocks;               // __launch_bounds__ second argument; 0 when none
  const char* name_expression;  // the nvrtcAddNameExpression text it came from, or 0
  unsigned flags;               // CUDAMUX_KERNEL_* below
  // Bytes of the block's shared window that precede its dynamic shared memory (ABI 4): PTX
  // kernels address .shared variables as offsets into one window, [static][dynamic], so the
  // launcher allocates this much in front of cudamux_dyn_shared. 0 for NVRTC kernels, whose
  // __shared__ variables are thread_local statics.
  unsigned static_shared_bytes;
  // Of those, the bytes this kernel's own .shared variables take
  // (CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES and occupancy): kernels of one module overlap their
  // variables in the window.
  unsigned static_shared_used;
} cudamux_kernel_desc;

// Kernel flags, set by the compiler from its source analysis.
enum {
  // No barrier or warp collective is reachable from the kernel (proved from the source): its
  // blocks run on the worker's own stack, without fibers.
  CUDAMUX_KERNEL_NO_BARRIERS = 1,
  // The kernel was transformed by loop fission at barriers: one call runs the whole block
  // (it loops over the threads itself), so the thunk calls it once per block.
  CUDAMUX_KERNEL_PER_BLOCK = 2,
  // Barrier-free, and nothing outside kernel bodies reads threadIdx: the thunk calls a twin that
  // takes threadIdx as a parameter (no per-thread store to TLS, so the loop can vectorise).
  // Used by the module's own thunk only.
  CUDAMUX_KERNEL_FLAT = 4
};

typedef struct cudamux_module_desc {
  unsigned abi;  // CUDAMUX_DEVICE_ABI
  unsigned num_kernels;
  const cudamux_kernel_desc* const* kernels;
} cudamux_module_desc;

// Exported by every compiled module.
typedef const cudamux_module_desc* (*cudamux_module_fn)(void);
#define CUDAMUX_MODULE_SYMBOL "cudamux_module"

// --- runtime (libcudamux-device.so) ---

// Block launch, called by the plugin's pool workers.
typedef struct cudamux_launch {
  void (*loop)(const void* args, unsigned start);
  const void* args;
  cudamux_u3 grid;
  cudamux_u3 block;
  // Shared by all blocks of the launch: nonzero = skip/stop. Accessed with __atomic builtins.
  volatile int* abort;
  unsigned flags;  // the kernel's CUDAMUX_KERNEL_* flags
  // For fault and memcheck reports (issue 9): the kernel (its symbol names it), the sizes of
  // the argument buffer and of the dynamic shared memory every block gets.
  const void* kernel_fn;
  unsigned args_size;
  unsigned dyn_shared_bytes;
  unsigned static_shared_bytes;  // the kernel's window prefix before the dynamic memory
  // Receives memcheck hints (shared-memory hazards) of this launch; may be null.
  void (*hint)(void* user, const char* text);
  void* hint_user;
  unsigned long long id;  // distinct per launch: hints are sent once per kind and launch
  // Cooperative launches: the grid-sync workspace (zeroed, 64 bytes) kernel code reaches
  // through %envreg1/%envreg2; null otherwise.
  void* grid_workspace;
  // Device-side launches (dynamic parallelism, ABI 5): kernel code's launch of a child grid,
  // named by its table entry `desc` (CUDA C++: the module's code made one for the kernel it
  // launches) or else by `kernel` (PTX: the address its code takes of the entry), with
  // `params` (params_size bytes, packed as for a host launch); the callee copies what it
  // needs. Returns a cudaError_t value. Null: this launch takes no children.
  int (*child_launch)(void* user, const void* kernel, const cudamux_kernel_desc* desc,
                      cudamux_u3 grid, cudamux_u3 block, unsigned shared_bytes, const void* params,
                      unsigned params_size);
  void* child_user;
} cudamux_launch;

// Runs one block on the calling thread; returns 0 or a CUresult value (assert, launch
// failure). On failure, message (may be null) receives a description.
int cudamux_run_block(const cudamux_launch* launch, cudamux_u3 block_idx, void* dyn_shared,
                      char* message, unsigned message_size);

// Barriers and collectives (called from kernel code).
enum { CUDAMUX_BAR_SYNC = 0, CUDAMUX_BAR_COUNT = 1, CUDAMUX_BAR_AND = 2, CUDAMUX_BAR_OR = 3 };
int cudamux_syncthreads_op(int op, int predicate);

enum {
  CUDAMUX_WARP_SYNC = 0,
  CUDAMUX_WARP_SHFL = 1,
  CUDAMUX_WARP_SHFL_UP = 2,
  CUDAMUX_WARP_SHFL_DOWN = 3,
  CUDAMUX_WARP_SHFL_XOR = 4,
  CUDAMUX_WARP_BALLOT = 5,
  CUDAMUX_WARP_ANY = 6,
  CUDAMUX_WARP_ALL = 7,
  CUDAMUX_WARP_ACTIVEMASK = 8,
  CUDAMUX_WARP_MATCH_ANY = 9,
  CUDAMUX_WARP_MATCH_ALL = 10,  // result: mask, or 0 when not all equal
  CUDAMUX_WARP_REDUCE_ADD = 11,
  CUDAMUX_WARP_REDUCE_MIN = 12,
  CUDAMUX_WARP_REDUCE_MAX = 13,
  CUDAMUX_WARP_REDUCE_AND = 14,
  CUDAMUX_WARP_REDUCE_OR = 15,
  CUDAMUX_WARP_REDUCE_XOR = 16
};
unsigned long long cudamux_warp_op(int op, unsigned mask, unsigned long long value, int arg,
                                   int width);

int cudamux_vprintf(const char* format, __builtin_va_list args);
void cudamux_assert_fail(const char* expression, const char* file, unsigned line,
                         const char* function);
// Aborts the launch with CUDA_ERROR_ILLEGAL_ADDRESS-like codes from helper code.
void cudamux_trap(void);
unsigned long long cudamux_clock64(void);
unsigned long long cudamux_globaltimer(void);  // nanoseconds, steady
// cudaGraphSetConditional (issue 16): sets the value of a conditional graph node's handle
// (a CUgraphConditionalHandle of the core). The entry PTX-compiled code calls too.
void cudamux_graph_set_conditional(unsigned long long handle, unsigned value);
// Dynamic parallelism (CUDA's device runtime, cudaGetParameterBufferV2 / cudaLaunchDeviceV2):
// a buffer for a child grid's parameters (CUDAMUX_CDP_PARAMS_MAX bytes; null when out of
// memory), then its launch, which hands the buffer back. The child grids of a launch run
// after its own grid, before the launch completes (a schedule CUDA allows: a parent grid
// completes only once its children have).
#define CUDAMUX_CDP_PARAMS_MAX 4096
void* cudamux_cdp_parameter_buffer(const void* kernel, cudamux_u3 grid, cudamux_u3 block,
                                   unsigned shared_bytes);
// The same for a kernel given by its table entry (CUDA C++ device-side launches).
void* cudamux_cdp_parameter_buffer_for(const cudamux_kernel_desc* desc, cudamux_u3 grid,
                                       cudamux_u3 block, unsigned shared_bytes);
int cudamux_cdp_launch(void* parameter_buffer, void* stream);
// A yield point of kernel code (nanosleep, an mbarrier wait, a spin-wait poll): on fibers the
// calling thread lets the other threads of its block run first; elsewhere (barrier-free or
// split blocks) the OS thread yields, so that blocks on other threads progress. Either way it
// does not return (it unwinds the block) once another block has failed the launch.
void cudamux_yield(void);
// nanosleep / __nanosleep(ns): a yield point, then the calling thread waits until about ns
// (at most 1 ms, as on a GPU) have passed since the call.
void cudamux_nanosleep(unsigned ns);

// --- memory checks (issue 9) ---
// Called by the __asan_* hooks of modules compiled in memcheck mode (-fsanitize=kernel-address
// with outlined checks): validates one access of the running kernel thread. An access outside
// every live allocation, the thread's stack, its block's shared memory, the launch's arguments
// and loaded code and data aborts the launch with CUDA_ERROR_ILLEGAL_ADDRESS and a report.
void cudamux_memcheck_access(const void* address, unsigned long size, int is_write);

// Called by the plugin: memory kernels may reach (device, managed, pinned and registered host
// memory), kept for the checks above and for reports of faulting accesses.
enum {
  CUDAMUX_MEM_DEVICE = 0,
  CUDAMUX_MEM_MANAGED = 1,
  CUDAMUX_MEM_HOST_PINNED = 2,
  CUDAMUX_MEM_HOST_REGISTERED = 3
};
void cudamux_memcheck_track(const void* base, unsigned long long size, int kind);
void cudamux_memcheck_untrack(const void* base);
// A region no allocation may lie outside of (a device arena): any access inside it that no
// live allocation covers is reported as such.
void cudamux_memcheck_add_arena(const void* base, unsigned long long size);
void cudamux_memcheck_remove_arena(const void* base);
// Modules were loaded or unloaded: cached ranges of their data and TLS are stale.
void cudamux_memcheck_modules_changed(void);
// Installs the SIGSEGV/SIGBUS handler now (it is otherwise installed when a thread first runs
// a block): memcheck's report of host code touching device memory needs it from the start.
void cudamux_install_fault_handler(void);

#ifdef __cplusplus
}
#endif
#endif
