#include "cudamux/ptx/cfg.hpp"

#include <gtest/gtest.h>
