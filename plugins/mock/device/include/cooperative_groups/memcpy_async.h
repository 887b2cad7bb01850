// Built-in (cudamux mock).
#pragma once
#include "../cooperative_groups.h"
