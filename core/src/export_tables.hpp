// The driver's private export tables (cuGetExportTable, issue 14); see export_tables.cpp and
// docs/export-tables.md.
#pragma once

#include <cuda.h>

namespace cudamux::core {

// The table for `id`, or nullptr when cudamux has none.
const void* export_table(const CUuuid& id) noexcept;

}  // namespace cudamux::core
