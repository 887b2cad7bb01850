/* What the ktest backend's "record*" kernels write to their module's global "record". */
#pragma once
typedef struct KtestRecord {
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
  unsigned cooperative;
  unsigned launches;
  unsigned args_size;
  unsigned char args[256];
} KtestRecord;
