// What the compiler reports about each kernel: ptxas's resource report (the .ptxas file the
// project's cuda_library keeps beside each object) and the maximum threads per block recorded in
// the object's ELF attributes (from __launch_bounds__).
#pragma once

#include <map>
#include <string>

namespace kvsim::kernel_report {

// ptxas's figures for one function compiled for sm_90a.
struct PtxasUsage {
  int registers = 0;
  int stack_frame_bytes = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int static_shared_bytes = 0;
};

// By mangled name, from the text of `nvcc -Xptxas=-v` (sm_90a entries only).
std::map<std::string, PtxasUsage> ParsePtxasReport(const std::string& report);

// By mangled name: EIATTR_MAX_THREADS (x * y * z) from `cuobjdump --dump-elf`, for the kernels
// that have it (those with __launch_bounds__).
std::map<std::string, int> ParseMaxThreads(const std::string& elf_dump);

}  // namespace kvsim::kernel_report
