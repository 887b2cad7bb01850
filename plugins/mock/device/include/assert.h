// Built-in: device assert (cudamux/assert.h); never glibc's.
#include "cudamux/assert.h"
