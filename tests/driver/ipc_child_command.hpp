// The other process of the IPC tests (ipc_child.cpp, the program driver_ipc_child beside the
// test's own executable): where it is, and the hex form its command line takes handles in.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <string>

namespace ipc_child {

// Bytes as lowercase hex, two digits each (ipc_child.cpp's unhex reads them back).
inline std::string hex(const void* p, std::size_t n) {
  std::string out;
  char two[3];
  for (std::size_t i = 0; i < n; ++i) {
    std::snprintf(two, sizeof two, "%02x", static_cast<const unsigned char*>(p)[i]);
    out += two;
  }
  return out;
}

// driver_ipc_child's path: the folder of this process's executable; empty if unknown.
inline std::string program_path() {
  char self[4096] = {};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return {};
  const std::string path(self, static_cast<std::size_t>(n));
  return path.substr(0, path.rfind('/') + 1) + "driver_ipc_child";
}

}  // namespace ipc_child
