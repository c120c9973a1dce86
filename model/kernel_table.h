// KernelTable: what the GPU GEMM benchmark (//tests/kernels/gemm:gemm_gpu_benchmark) measured, per
// weight shape and row count: INT4 W4A16, FP8 and cuBLAS BF16 times and their ratios. The benchmark
// writes it as YAML (FormatKernelTable); the capacity model reads it back (kernel_table_loader.h)
// to take the speed of INT4 weights from the measurement instead of an assumption. The format is
// documented in docs/kernels.md, "The kernel table".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvsim::model {

// The value of the `kind` field, and the version of the format this code writes and reads.
inline constexpr char kKernelTableKind[] = "kvsim_gemm_table";
inline constexpr int kKernelTableVersion = 1;

// Where a table came from. Only `gpu_benchmark` tables are measurements; `test_fixture` marks
// invented numbers that tests use, and --explain says so wherever one is applied.
enum class KernelTableSource { kGpuBenchmark, kTestFixture };

// One row count: microseconds per call of each kernel, averaged over CUDA events.
struct KernelTableRow {
  int64_t m = 0;  // activation rows
  double int4_us = 0;
  double fp8_us = 0;
  double bf16_us = 0;  // cuBLAS

  // How many times faster INT4 is than each baseline (above 1: faster).
  double Int4SpeedupOverBf16() const { return bf16_us / int4_us; }
  double Int4SpeedupOverFp8() const { return fp8_us / int4_us; }
};

// One weight matrix [k, n] (k input features, n output features) and its rows by ascending m.
struct KernelTableShape {
  std::string name;  // "Kimi-K2.6 gate_up"
  int64_t k = 0;
  int64_t n = 0;
  std::vector<KernelTableRow> rows;
};

struct KernelTable {
  std::string path;  // the file it was read from (empty when built in memory)
  KernelTableSource source = KernelTableSource::kGpuBenchmark;
  std::string gpu;     // the GPU's catalog name (configs/gpus/NAME.yaml), e.g. h200-sxm
  std::string device;  // the device name CUDA reported, e.g. "NVIDIA H200"
  std::string date;    // when it was measured, ISO 8601 (UTC)
  std::vector<KernelTableShape> shapes;
};

// "gpu_benchmark" or "test_fixture".
const char* KernelTableSourceName(KernelTableSource source);

// The table as YAML, in the format LoadKernelTable reads: strings quoted, times and ratios with
// six significant digits.
std::string FormatKernelTable(const KernelTable& table);

}  // namespace kvsim::model
