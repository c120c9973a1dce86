// GPU benchmark of the GEMM family (tag gpu_benchmark, run by tools/gpu_check.sh): INT4 W4A16
// (group 32, symmetric, bf16 scales: Kimi K2.6's format) against cuBLAS BF16 and the project's
// FP8 block-scaled kernel, in the same run, on the expert shapes of GLM 5.2 (hidden 6144) and
// Kimi K2.6 (hidden 7168), expert intermediate 2048, for m from decode (1) to prefill (4096), on
// the default (simple) path; then the fast paths of INT4 and FP8 on the MoE expert shapes
// N 7168 x K 2048 and N 4096 x K 7168 at m = 1, 4, 8, 16, in the same run as cuBLAS.
// Times are CUDA-event averages; every kernel cycles through enough copies of its weights to
// exceed the L2 cache, so decode times include reading the weights from HBM. Prints one table
// and, with --table FILE (or KVSIM_GEMM_TABLE=FILE), writes the same times as a kernel table
// (model/kernel_table.h; docs/kernels.md) that `kvsim plan` can take the INT4 speed from. --gpu
// NAME (or KVSIM_GPU) sets the table's catalog GPU name (configs/gpus/NAME.yaml); without it the
// table says "unknown", which kvsim plan refuses until it is set by hand.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "base/prng.h"
#include "kernels/backend.h"
#include "kernels/backend_factory.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device.h"
#include "kernels/gemm/fp8_quantizer.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/int4_quantizer.h"
#include "kernels/gemm/packed_weights.h"
#include "kernels/gemm/weight_samples.h"
#include "model/kernel_table.h"

namespace kvsim {
namespace {

struct Shape {
  const char* name;
  int k;
  int n;
};

// Fused gate/up projection (n = 2 x 2048) and down projection (k = 2048) of one expert.
constexpr Shape kShapes[] = {
    {"GLM-5.2 gate_up", 6144, 4096},
    {"GLM-5.2 down", 2048, 6144},
    {"Kimi-K2.6 gate_up", 7168, 4096},
    {"Kimi-K2.6 down", 2048, 7168},
};
constexpr int kRowCounts[] = {1, 8, 16, 32, 64, 128, 512, 4096};
constexpr int kMaxRows = 4096;
// Copies of each weight matrix cycle until they total this many bytes (H200 L2: 50 MiB).
constexpr size_t kColdBytes = size_t{256} << 20;
constexpr int kMaxCopies = 64;

// The fast paths (m <= 16) are timed on the MoE expert shapes N 7168 x K 2048 and N 4096 x K 7168.
constexpr int kFastRowCounts[] = {1, 4, 8, 16};

bool IsFastPathShape(const Shape& shape) {
  return (shape.n == 7168 && shape.k == 2048) || (shape.n == 4096 && shape.k == 7168);
}

// Microseconds per call of the three kernels at one shape and row count.
struct RowTimes {
  double bf16_us = 0;
  double fp8_us = 0;
  double int4_us = 0;
};

struct FastRow {
  const char* shape;
  int m;
  RowTimes times;
};

int Fail(const std::string& what) {
  std::fprintf(stderr, "gemm_gpu_benchmark: %s\n", what.c_str());
  return 1;
}

#define BENCH_CHECK(expression)                                     \
  do {                                                              \
    const ::kvsim::Status bench_status_ = (expression);             \
    if (!bench_status_.ok()) return Fail(bench_status_.ToString()); \
  } while (false)

#define BENCH_CUDA(call)                                                         \
  do {                                                                           \
    const cudaError_t bench_error_ = (call);                                     \
    if (bench_error_ != cudaSuccess) {                                           \
      return Fail(std::string(#call) + ": " + cudaGetErrorString(bench_error_)); \
    }                                                                            \
  } while (false)

int CopiesFor(size_t bytes) {
  const size_t copies = (kColdBytes + bytes - 1) / bytes;
  return static_cast<int>(copies < 2 ? 2 : (copies > kMaxCopies ? kMaxCopies : copies));
}

// Average microseconds of `iterations` calls of `run(i)` between two events, after warm-up calls.
// Every CUDA call is checked; errors of the timed work surface at the event synchronisation. On an
// error the events are left to the process's exit, which follows.
template <typename Run>
Result<double> TimeMicroseconds(int iterations, const Run& run) {
  for (int i = 0; i < 3; ++i) KVSIM_RETURN_IF_ERROR(run(i));
  cudaEvent_t start;
  cudaEvent_t stop;
  KVSIM_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start));
  KVSIM_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop));
  KVSIM_CUDA_RETURN_IF_ERROR(cudaEventRecord(start));
  for (int i = 0; i < iterations; ++i) KVSIM_RETURN_IF_ERROR(run(i));
  KVSIM_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop));
  KVSIM_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop));
  float milliseconds = 0;
  KVSIM_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&milliseconds, start, stop));
  KVSIM_CUDA_RETURN_IF_ERROR(cudaEventDestroy(start));
  KVSIM_CUDA_RETURN_IF_ERROR(cudaEventDestroy(stop));
  return 1000.0 * milliseconds / iterations;
}

Status CublasStatus(cublasStatus_t status) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return InternalError(std::string("cublas: ") + cublasGetStatusString(status));
}

struct Options {
  std::string table_path;  // empty: no kernel table is written
  std::string gpu = "unknown";
};

// --table FILE and --gpu NAME, falling back on KVSIM_GEMM_TABLE and KVSIM_GPU.
bool ParseOptions(int argc, char** argv, Options& options) {
  if (const char* env = std::getenv("KVSIM_GEMM_TABLE"); env != nullptr) options.table_path = env;
  if (const char* env = std::getenv("KVSIM_GPU"); env != nullptr && *env != '\0') {
    options.gpu = env;
  }
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--table") == 0 && has_value) {
      options.table_path = argv[++i];
    } else if (std::strcmp(argv[i], "--gpu") == 0 && has_value) {
      options.gpu = argv[++i];
    } else {
      std::fprintf(
          stderr,
          "usage: gemm_gpu_benchmark [--table FILE] [--gpu NAME]\n"
          "  --table FILE  also write the times as a kernel table (env KVSIM_GEMM_TABLE)\n"
          "  --gpu NAME    the GPU's name in configs/gpus/ for that table (env KVSIM_GPU)\n");
      return false;
    }
  }
  return true;
}

// Now, UTC, as 2026-12-01T10:22:03Z.
std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

int WriteTable(const std::string& path, const model::KernelTable& table) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << model::FormatKernelTable(table);
  out.close();
  if (!out) return Fail("cannot write the kernel table to " + path);
  std::printf("\nkernel table written to %s\n", path.c_str());
  return 0;
}

int Main(int argc, char** argv) {
  Options flags;
  if (!ParseOptions(argc, argv, flags)) return 2;
  const Status device = cuda::DeviceAvailable();
  if (!device.ok()) return Fail(device.message());
  cudaDeviceProp properties;
  BENCH_CUDA(cudaGetDeviceProperties(&properties, 0));
  model::KernelTable table;
  table.source = model::KernelTableSource::kGpuBenchmark;
  table.gpu = flags.gpu;
  table.device = properties.name;
  table.date = UtcNow();
  std::unique_ptr<Backend> cuda = CreateBackend(BackendChoice::kCuda).value();
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return Fail("cublasCreate failed");
  std::printf("GEMM benchmark on %s\n", cuda->description().c_str());
  std::printf(
      "bf16 activations x weights -> bf16, fp32 accumulation; INT4 g32 sym bf16 scales; "
      "FP8 e4m3 128x128 fp32 block scales; cuBLAS bf16 GEMM (CUBLAS_COMPUTE_32F)\n");
  std::printf("%-18s %5s %10s %10s %10s %9s %9s %9s\n", "shape", "m", "bf16 us", "fp8 us",
              "int4 us", "int4/bf16", "int4/fp8", "int4 TB/s");
  // The targets at decode row counts (m <= 16, weight-bound): the lowest speed-ups seen.
  double lowest_over_bf16 = 1e9;
  double lowest_over_fp8 = 1e9;
  std::vector<FastRow> fast_rows;
  Prng prng(0x5eed);
  const std::vector<uint16_t> x_host =
      SampleBf16(prng, size_t{kMaxRows} * 7168, WeightDistribution::kGaussian, 1.0);
  for (const Shape& shape : kShapes) {
    const std::vector<float> w =
        SampleWeights(prng, shape.k, shape.n, WeightDistribution::kGaussian);
    Int4QuantizeOptions options;  // g32 symmetric bf16
    const Int4PackedWeights int4 =
        PackInt4(QuantizeInt4Matrix(w, shape.k, shape.n, options).value()).value();
    const Fp8PackedWeights fp8 = PackFp8(QuantizeFp8Blocks(w, shape.k, shape.n).value()).value();
    model::KernelTableShape& measured = table.shapes.emplace_back();
    measured.name = shape.name;
    measured.k = shape.k;
    measured.n = shape.n;
    const std::vector<uint16_t> bf16 = ToBf16Bits(w);
    const size_t elements = static_cast<size_t>(shape.k) * shape.n;
    std::vector<Int4Weights> int4_copies;
    std::vector<Fp8Weights> fp8_copies;
    std::vector<DeviceBuffer> bf16_copies;
    for (int i = 0; i < CopiesFor(elements / 2); ++i) {
      int4_copies.push_back(UploadInt4Weights(*cuda, int4).value());
    }
    for (int i = 0; i < CopiesFor(elements); ++i)
      fp8_copies.push_back(UploadFp8Weights(*cuda, fp8).value());
    for (int i = 0; i < CopiesFor(elements * 2); ++i)
      bf16_copies.push_back(Upload(*cuda, bf16).value());
    const DeviceBuffer x =
        Upload(*cuda,
               std::vector<uint16_t>(x_host.begin(), x_host.begin() + size_t{kMaxRows} * shape.k))
            .value();
    DeviceBuffer out = cuda->Allocate(size_t{kMaxRows} * shape.n * sizeof(uint16_t)).value();
    // cuBLAS BF16, the FP8 kernel and the INT4 kernel at m rows on `path`, each cycling through
    // its copies of the weights.
    auto time_row = [&](int m, KernelPath path) -> Result<RowTimes> {
      KVSIM_ASSIGN_OR_RETURN(DeviceBuffer workspace,
                             AllocateGemmWorkspace(*cuda, m, shape.n, shape.k, path));
      const int iterations = m >= 512 ? 20 : 100;
      const float alpha = 1.0f;
      const float beta = 0.0f;
      RowTimes times;
      // Row-major Y[m, n] = X[m, k] W[k, n] is column-major Y^T = W^T X^T.
      KVSIM_ASSIGN_OR_RETURN(
          times.bf16_us, TimeMicroseconds(iterations, [&](int i) {
            const DeviceBuffer& weights = bf16_copies[i % bf16_copies.size()];
            return CublasStatus(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, shape.n, m, shape.k,
                                             &alpha, weights.data(), CUDA_R_16BF, shape.n, x.data(),
                                             CUDA_R_16BF, shape.k, &beta, out.data(), CUDA_R_16BF,
                                             shape.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
          }));
      KVSIM_ASSIGN_OR_RETURN(times.fp8_us, TimeMicroseconds(iterations, [&](int i) {
                               Fp8GemmArgs args;
                               args.m = m;
                               args.activations = &x;
                               args.weights = &fp8_copies[i % fp8_copies.size()];
                               args.output = &out;
                               args.workspace = &workspace;
                               args.launch.path = path;
                               return Fp8Gemm(*cuda, args);
                             }));
      KVSIM_ASSIGN_OR_RETURN(times.int4_us, TimeMicroseconds(iterations, [&](int i) {
                               Int4GemmArgs args;
                               args.m = m;
                               args.activations = &x;
                               args.weights = &int4_copies[i % int4_copies.size()];
                               args.output = &out;
                               args.workspace = &workspace;
                               args.launch.path = path;
                               return Int4Gemm(*cuda, args);
                             }));
      return times;
    };
    for (int m : kRowCounts) {
      const Result<RowTimes> row = time_row(m, kDefaultKernelPath);
      BENCH_CHECK(row.status());
      const double bf16_us = row->bf16_us;
      const double fp8_us = row->fp8_us;
      const double int4_us = row->int4_us;
      measured.rows.push_back({m, int4_us, fp8_us, bf16_us});
      const double int4_bytes =
          static_cast<double>(int4.qweight.size() * 4 + int4.ScaleBytes().size()) +
          2.0 * m * (shape.k + shape.n);
      std::printf("%-18s %5d %10.2f %10.2f %10.2f %8.2fx %8.2fx %9.2f\n", shape.name, m, bf16_us,
                  fp8_us, int4_us, bf16_us / int4_us, fp8_us / int4_us,
                  int4_bytes / (int4_us * 1e-6) / 1e12);
      if (m <= 16) {
        lowest_over_bf16 = std::min(lowest_over_bf16, bf16_us / int4_us);
        lowest_over_fp8 = std::min(lowest_over_fp8, fp8_us / int4_us);
      }
    }
    if (!IsFastPathShape(shape)) continue;
    for (int m : kFastRowCounts) {
      const Result<RowTimes> row = time_row(m, KernelPath::kFast);
      BENCH_CHECK(row.status());
      fast_rows.push_back({shape.name, m, *row});
    }
  }
  // The fast paths on the MoE expert shapes, timed in the same run as cuBLAS.
  std::printf("\nfast paths (m <= 16):\n%-18s %5s %10s %10s %10s %9s %9s\n", "shape", "m",
              "bf16 us", "fp8f us", "int4f us", "int4f/bf16", "int4f/fp8f");
  double fast_lowest_over_bf16 = 1e9;
  double fast_lowest_over_fp8 = 1e9;
  for (const FastRow& row : fast_rows) {
    const RowTimes& t = row.times;
    std::printf("%-18s %5d %10.2f %10.2f %10.2f %8.2fx %8.2fx\n", row.shape, row.m, t.bf16_us,
                t.fp8_us, t.int4_us, t.bf16_us / t.int4_us, t.fp8_us / t.int4_us);
    fast_lowest_over_bf16 = std::min(fast_lowest_over_bf16, t.bf16_us / t.int4_us);
    fast_lowest_over_fp8 = std::min(fast_lowest_over_fp8, t.fp8_us / t.int4_us);
  }
  BENCH_CUDA(cudaDeviceSynchronize());
  if (cublasDestroy(handle) != CUBLAS_STATUS_SUCCESS) return Fail("cublasDestroy failed");
  std::printf(
      "int4/bf16 and int4/fp8: how many times faster INT4 is (above 1: faster). int4 TB/s: "
      "weight, scale, activation and output bytes over INT4 time.\n");
  std::printf(
      "\nsummary: INT4 GEMM simple path at m <= 16 (ideal from bytes alone: ~3.9x and ~1.9x): "
      "int4/bf16 lowest %.2fx (target >= 3x: %s); int4/fp8 lowest %.2fx (target >= 1.6x: %s)\n",
      lowest_over_bf16, lowest_over_bf16 >= 3.0 ? "met" : "NOT met", lowest_over_fp8,
      lowest_over_fp8 >= 1.6 ? "met" : "NOT met");
  std::printf(
      "summary: INT4 GEMM fast paths at m <= 16: int4f/bf16 lowest %.2fx (target >= 3x: %s); "
      "int4f/fp8f lowest %.2fx (target >= 1.6x: %s)\n",
      fast_lowest_over_bf16, fast_lowest_over_bf16 >= 3.0 ? "met" : "NOT met", fast_lowest_over_fp8,
      fast_lowest_over_fp8 >= 1.6 ? "met" : "NOT met");
  if (flags.table_path.empty()) {
    std::printf("no kernel table written (--table FILE or KVSIM_GEMM_TABLE=FILE writes one)\n");
    return 0;
  }
  return WriteTable(flags.table_path, table);
}

}  // namespace
}  // namespace kvsim

int main(int argc, char** argv) { return kvsim::Main(argc, argv); }
