// Device assert: the failing thread's message, then the launch fails with CUDA_ERROR_ASSERT.
// Also reached through <assert.h> / <cassert> (built-in headers), which would otherwise
// give glibc's assert (abort the process).
#undef assert
#ifdef NDEBUG
#define assert(e) (static_cast<void>(0))
#else
#define assert(e) \
  ((e) ? static_cast<void>(0) : cudamux_assert_fail(#e, __FILE__, __LINE__, __PRETTY_FUNCTION__))
#endif
