#include "kernel_fixture.hpp"
