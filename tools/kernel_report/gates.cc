// Parsing the gates file and checking kernels against it.
#include "tools/kernel_report/gates.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace kvsim::kernel_report {
namespace {

std::string Where(const std::string& file_name, int line) {
  return file_name + ":" + std::to_string(line) + ": ";
}

bool ParseNumber(const std::string& text, double& value) {
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size() && value >= 0;
}

// TB/s with two decimals.
std::string TerabytesPerSecond(double bytes_per_second) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.2f", bytes_per_second / 1e12);
  return buffer;
}

}  // namespace

Result<std::vector<Gate>> ParseGates(const std::string& text, const std::string& file_name) {
  std::vector<Gate> gates;
  std::stringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    line = line.substr(0, line.find('#'));
    std::stringstream words(line);
    Gate gate;
    gate.line = number;
    if (!(words >> gate.name)) continue;
    bool has_bandwidth = false;
    bool has_tensor_cores = false;
    std::string word;
    while (words >> word) {
      const size_t equals = word.find('=');
      const std::string key = word.substr(0, equals);
      const std::string value = equals == std::string::npos ? "" : word.substr(equals + 1);
      double number_value = 0;
      const bool numeric = ParseNumber(value, number_value);
      if (key == "bandwidth_fraction" && numeric) {
        gate.bandwidth_fraction = number_value;
        has_bandwidth = true;
      } else if (key == "tensor_cores" && (value == "yes" || value == "no")) {
        gate.tensor_cores = value == "yes";
        has_tensor_cores = true;
      } else if (key == "threads" && numeric && number_value >= 1 && number_value <= 1024) {
        gate.threads = static_cast<int>(number_value);
      } else if (key == "dynamic_shared_bytes" && numeric) {
        gate.dynamic_shared_bytes = static_cast<int>(number_value);
      } else if (key == "bulk_bytes_per_iteration" && numeric) {
        gate.bulk_bytes_per_iteration = static_cast<int64_t>(number_value);
      } else if (key == "mma_shared_bytes_per_iteration" && numeric) {
        gate.mma_shared_bytes_per_iteration = static_cast<int64_t>(number_value);
      } else if (key == "main_loop" && (value == "async_copies" || value == "all_loads")) {
        gate.main_loop =
            value == "async_copies" ? MainLoopRule::kAsyncCopies : MainLoopRule::kAllLoads;
      } else {
        return InvalidArgumentError(
            Where(file_name, number) + "'" + word +
            "' is not understood; allowed: bandwidth_fraction=F, tensor_cores=yes|no, "
            "threads=1..1024, dynamic_shared_bytes=N, bulk_bytes_per_iteration=N, "
            "mma_shared_bytes_per_iteration=N, main_loop=all_loads|async_copies");
      }
    }
    gate.gated = has_bandwidth || has_tensor_cores;
    if (gate.gated && !(has_bandwidth && has_tensor_cores)) {
      return InvalidArgumentError(Where(file_name, number) + gate.name +
                                  ": a gate needs both bandwidth_fraction= and tensor_cores=");
    }
    if (!gate.gated && gate.threads == 0) {
      return InvalidArgumentError(Where(file_name, number) + gate.name +
                                  ": a line that is no gate must give threads=");
    }
    gates.push_back(gate);
  }
  return gates;
}

bool GateMatches(const Gate& gate, const std::string& base_name) {
  if (!gate.name.empty() && gate.name.back() == '*') {
    return base_name.compare(0, gate.name.size() - 1, gate.name, 0, gate.name.size() - 1) == 0;
  }
  return base_name == gate.name;
}

void ComputeDerived(const GpuFigures& gpu, const Gate* gate, KernelFacts& facts) {
  if (facts.threads == 0 && gate != nullptr && gate->threads > 0) {
    facts.threads = gate->threads;
    facts.threads_source = "gates file";
  }
  const int shared =
      facts.usage.static_shared_bytes + (gate != nullptr ? gate->dynamic_shared_bytes : 0);
  if (facts.threads > 0) {
    facts.occupancy = ComputeOccupancy(facts.usage.registers, shared, facts.threads);
  }
  MainLoop& loop = facts.main_loop;
  int64_t bytes = loop.load_bytes_per_warp;
  int64_t shared_bytes = loop.shared_bytes_per_warp;
  if (gate != nullptr && facts.threads > 0) {
    // Bulk copies and descriptor-fed tensor-core instructions are issued for the whole CTA (or
    // warpgroup): their bytes are shared by its warps. Bulk copies land in shared memory.
    const int warps = (facts.threads + kWarpSize - 1) / kWarpSize;
    if (loop.bulk_loads > 0) {
      bytes += gate->bulk_bytes_per_iteration / warps;
      shared_bytes += gate->bulk_bytes_per_iteration / warps;
    }
    if (loop.descriptor_mmas > 0) shared_bytes += gate->mma_shared_bytes_per_iteration / warps;
  }
  facts.ceiling_bytes_per_second =
      IssueBoundBytesPerSecond(gpu, facts.occupancy.warps_per_sm, bytes, loop.instructions);
  facts.shared_ceiling_bytes_per_second = SharedBoundBytesPerSecond(gpu, bytes, shared_bytes);
  facts.tensor_ceiling_bytes_per_second = TensorBoundBytesPerSecond(gpu, bytes, loop.tensor_work);
}

std::vector<std::string> GateFailures(const GpuFigures& gpu, const Gate& gate,
                                      const KernelFacts& facts) {
  std::vector<std::string> failures;
  if (!facts.has_usage) failures.push_back("no ptxas report for it");
  if (facts.usage.spill_store_bytes > 0 || facts.usage.spill_load_bytes > 0) {
    failures.push_back("spills " + std::to_string(facts.usage.spill_store_bytes) +
                       " bytes stored, " + std::to_string(facts.usage.spill_load_bytes) +
                       " loaded");
  }
  // A stack frame in a gated kernel is local memory: a compiler change can move an accumulator
  // or index array there without a spill being reported, at the cost of a trip to memory per use.
  if (facts.usage.stack_frame_bytes > 0) {
    failures.push_back("a stack frame of " + std::to_string(facts.usage.stack_frame_bytes) +
                       " bytes (local memory)");
  }
  if (facts.threads == 0) {
    failures.push_back(
        "threads per block unknown: give it __launch_bounds__ or threads= in the gates file");
  } else if (facts.occupancy.blocks_per_sm == 0) {
    failures.push_back("one block does not fit on an SM");
  }
  if (gate.tensor_cores && facts.main_loop.tensor_core_opcodes.empty()) {
    failures.push_back("no tensor-core instruction in its main loop");
  }
  if (facts.main_loop.bulk_loads > 0 && gate.bulk_bytes_per_iteration == 0) {
    failures.push_back("its main loop has bulk copies: give bulk_bytes_per_iteration=");
  }
  if (facts.main_loop.descriptor_mmas > 0 && gate.mma_shared_bytes_per_iteration == 0) {
    failures.push_back(
        "its main loop's tensor-core instructions read shared memory by descriptor: give "
        "mma_shared_bytes_per_iteration=");
  }
  const double required = gate.bandwidth_fraction * gpu.memory_bandwidth_tb_s * 1e12;
  if (facts.ceiling_bytes_per_second < required) {
    failures.push_back("issue-bound ceiling " + TerabytesPerSecond(facts.ceiling_bytes_per_second) +
                       " TB/s is below the required " + TerabytesPerSecond(required) + " TB/s");
  }
  if (facts.shared_ceiling_bytes_per_second < required) {
    failures.push_back("shared-memory-bound ceiling " +
                       TerabytesPerSecond(facts.shared_ceiling_bytes_per_second) +
                       " TB/s is below the required " + TerabytesPerSecond(required) + " TB/s");
  }
  if (facts.tensor_ceiling_bytes_per_second < required) {
    failures.push_back("tensor-core-bound ceiling " +
                       TerabytesPerSecond(facts.tensor_ceiling_bytes_per_second) +
                       " TB/s is below the required " + TerabytesPerSecond(required) + " TB/s");
  }
  return failures;
}

}  // namespace kvsim::kernel_report
