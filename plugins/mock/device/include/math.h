// Built-in: math for device code comes with the prelude (cudamux/math.h).
#pragma once
#include "cudamux/math_std.h"
