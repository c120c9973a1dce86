// The gates file: which kernels must reach which bandwidth, with or without tensor cores, and the
// check of one kernel against its gate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "tools/kernel_report/occupancy.h"
#include "tools/kernel_report/resource_usage.h"
#include "tools/kernel_report/sass_analysis.h"

namespace kvsim::kernel_report {

// One line of the gates file: `NAME key=value ...` (see gates.txt for the keys). A line without
// bandwidth_fraction and tensor_cores is no gate: it only gives the report figures (threads) that
// the objects do not hold.
struct Gate {
  std::string name;  // a kernel's base name; a trailing '*' matches every name it begins
  bool gated = true;
  double bandwidth_fraction = 0;  // the ceiling must reach this fraction of the GPU's bandwidth
  bool tensor_cores = false;      // the main loop must hold tensor-core instructions
  int threads = 0;                // threads per block, where the ELF has no __launch_bounds__
  int dynamic_shared_bytes = 0;   // added to the static shared memory for occupancy
  int64_t bulk_bytes_per_iteration = 0;  // per CTA: what UTMALDG / UBLKCP bring per iteration
  // per CTA: what its tensor-core instructions read from shared memory by descriptor per iteration
  int64_t mma_shared_bytes_per_iteration = 0;
  MainLoopRule main_loop = MainLoopRule::kAllLoads;  // main_loop=async_copies: kAsyncCopies
  int line = 0;
};

Result<std::vector<Gate>> ParseGates(const std::string& text, const std::string& file_name);

// Whether `base_name` (a kernel's name without namespaces and template arguments) is the gate's.
bool GateMatches(const Gate& gate, const std::string& base_name);

// Everything the report knows about one kernel.
struct KernelFacts {
  std::string object;  // the object file's name
  std::string mangled_name;
  std::string display_name;  // demangled, without namespaces and parameters
  std::string base_name;     // display_name without template arguments
  bool has_usage = false;    // ptxas reported it
  PtxasUsage usage;
  int threads = 0;             // per block; 0 unknown
  std::string threads_source;  // "launch bounds", "gates file" or empty
  Occupancy occupancy;
  MainLoop main_loop;        // by the rule of all loads
  MainLoop async_main_loop;  // by the rule of asynchronous copies, for gates that ask for it
  double ceiling_bytes_per_second = 0;  // 0 when the main loop loads nothing or threads are unknown
  // The shared-memory-bound ceiling: infinite when the main loop moves nothing through shared
  // memory, 0 when it loads nothing from memory.
  double shared_ceiling_bytes_per_second = 0;
  // The tensor-core-bound ceiling: infinite when the main loop does no tensor-core work.
  double tensor_ceiling_bytes_per_second = 0;
};

// Fills occupancy and the ceilings from the rest (with the gate's figures where one applies).
void ComputeDerived(const GpuFigures& gpu, const Gate* gate, KernelFacts& facts);

// Why a gated kernel fails its gate; empty when it passes.
std::vector<std::string> GateFailures(const GpuFigures& gpu, const Gate& gate,
                                      const KernelFacts& facts);

}  // namespace kvsim::kernel_report
