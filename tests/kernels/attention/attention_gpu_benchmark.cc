// GPU benchmark of paged decode attention: BF16 and FP8 KV caches. The simple path: GQA (8 KV heads
// x 128, group 8) and MLA (576-value latent, 64 query heads), batch {1, 8, 16, 32, 64} x context
// {4K, 21K, 64K}. The fast MLA path beside it: 64 and 128 query heads, batch {8, 64} x 21K.
// Prints the time per call (CUDA events) and the cache bytes read per second as a fraction of the
// device-to-device copy bandwidth measured in the same run, then (as "summary:" lines, which
// tools/gpu_check.sh repeats in its summary) the targets for every FP8
// cache (fp8_e4m3, and for MLA also FlashMLA's 656-byte rows, fp8_mla_tiles) on each path. Where
// the fast MLA path's FP8 kernels are compiled (decode_fast_mla.h), their rows (kind "mla-fp8mma",
// fp8_e4m3 and fp8_mla_tiles at 64 and 128 heads) follow, with their time against the
// bf16-product kernel's on the same cache.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/prng.h"
#include "kernels/attention/decode_attention.h"
#include "kernels/attention/decode_fast_mla.h"
#include "kernels/attention/kv_cache.h"
#include "kernels/backend.h"
#include "kernels/backend_factory.h"
#include "kernels/formats.h"
#include "tests/kernels/attention/benchmark_pools.h"

namespace kvsim {
namespace {

constexpr int kPageSize = 64;
constexpr int kBatches[] = {1, 8, 16, 32, 64};
constexpr int kContexts[] = {4096, 21504, 65536};
constexpr int kLargestBatch = 64;
constexpr int kLargestContext = 65536;

#define CHECK_CUDA(call)                                                 \
  do {                                                                   \
    const cudaError_t error = (call);                                    \
    if (error != cudaSuccess) {                                          \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
                   cudaGetErrorString(error));                           \
      std::exit(1);                                                      \
    }                                                                    \
  } while (false)

using testing::Must;
using testing::MustOk;

// Device-to-device copy bandwidth, counting the bytes read and the bytes written.
double CopyBandwidthBytesPerSecond() {
  constexpr size_t kBytes = size_t{2} << 30;
  void* source = nullptr;
  void* target = nullptr;
  CHECK_CUDA(cudaMalloc(&source, kBytes));
  CHECK_CUDA(cudaMalloc(&target, kBytes));
  CHECK_CUDA(cudaMemset(source, 1, kBytes));
  cudaEvent_t start;
  cudaEvent_t stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaMemcpy(target, source, kBytes, cudaMemcpyDeviceToDevice));
  constexpr int kRepeats = 10;
  CHECK_CUDA(cudaEventRecord(start));
  for (int i = 0; i < kRepeats; ++i) {
    CHECK_CUDA(cudaMemcpy(target, source, kBytes, cudaMemcpyDeviceToDevice));
  }
  CHECK_CUDA(cudaEventRecord(stop));
  CHECK_CUDA(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  CHECK_CUDA(cudaFree(source));
  CHECK_CUDA(cudaFree(target));
  return 2.0 * kBytes * kRepeats / (ms * 1e-3);
}

struct Config {
  const char* kind;
  KvCacheShape shape;
  int num_q_heads;
  KernelPath path;
  FastMlaMath math = FastMlaMath::kAuto;  // the fast MLA path's arithmetic
};

// The fast path's shapes: the targets (batch >= 8, ~21K tokens, batch 64 for the ratio).
constexpr int kFastBatches[] = {8, 64};
constexpr int kFastContext = 21504;

struct Row {
  double us_per_call;
  double bytes_per_second;
};

int Run() {
  std::string note;
  std::unique_ptr<Backend> backend = Must(CreateBackend(BackendChoice::kCuda, &note), "cuda");
  const double copy = CopyBandwidthBytesPerSecond();
  std::printf("device: %s\n", note.c_str());
  std::printf("copy bandwidth (device to device, 2 GiB, read + write): %.0f GB/s\n\n", copy / 1e9);
  const int pages = kLargestBatch * kLargestContext / kPageSize;
  const KvFormat bf16{KvDtype::kBf16, KvScaling::kNone};
  const KvFormat e4m3{KvDtype::kFp8E4M3, KvScaling::kPerTensor};
  const KvFormat blocks{KvDtype::kFp8E4M3, KvScaling::kMlaBlock128};
  constexpr KernelPath kSimple = KernelPath::kSimple;
  constexpr KernelPath kFast = KernelPath::kFast;
  std::vector<Config> configs = {
      {"gqa", GqaCacheShape(pages, kPageSize, 8, 128, bf16), 64, kSimple},
      {"gqa", GqaCacheShape(pages, kPageSize, 8, 128, e4m3), 64, kSimple},
      {"mla", MlaCacheShape(pages, kPageSize, bf16), 64, kSimple},
      {"mla", MlaCacheShape(pages, kPageSize, e4m3), 64, kSimple},
      {"mla", MlaCacheShape(pages, kPageSize, blocks), 64, kSimple},
      {"mla", MlaCacheShape(pages, kPageSize, bf16), 64, kFast},
      {"mla", MlaCacheShape(pages, kPageSize, e4m3), 64, kFast},
      {"mla", MlaCacheShape(pages, kPageSize, blocks), 64, kFast},
      {"mla", MlaCacheShape(pages, kPageSize, bf16), 128, kFast},
      {"mla", MlaCacheShape(pages, kPageSize, e4m3), 128, kFast},
      {"mla", MlaCacheShape(pages, kPageSize, blocks), 128, kFast},
  };
  // The FP8-product kernel beside the bf16-product rows above (kAuto runs bf16 products); it
  // uses wgmma, which runs on compute capability 9.0 only.
  const char* const kFp8Mma = "mla-fp8mma";
  int major = 0;
  int minor = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  CHECK_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0));
  const bool wgmma = major == 9 && minor == 0;
  if (wgmma) {
    for (const KvFormat format : {e4m3, blocks}) {
      for (int heads : {64, 128}) {
        configs.push_back(
            {kFp8Mma, MlaCacheShape(pages, kPageSize, format), heads, kFast, FastMlaMath::kFp8});
      }
    }
  }
  Prng prng(0x5eed);
  // (path, kind, heads, cache, batch, context)
  std::map<std::tuple<KernelPath, std::string, int, std::string, int, int>, Row> rows;
  std::printf("%-6s %-5s %5s %-13s %6s %8s %11s %9s %8s %9s\n", "path", "kind", "heads", "cache",
              "batch", "context", "us/call", "GB/s", "of copy", "vs bf16");
  for (const Config& config : configs) {
    const std::string cache_name = KvFormatName(config.shape.format);
    KvCacheStorage storage =
        Must(KvCacheStorage::Allocate(*backend, config.shape, 0.05f, 0.05f), "allocate cache");
    KvCache cache = storage.view();
    const std::vector<uint8_t> pattern = testing::ValidRowPattern(config.shape, 4096, prng);
    MustOk(testing::FillWithPattern(*backend, *cache.k_pages, pattern), "fill K");
    if (cache.v_pages != nullptr) {
      MustOk(testing::FillWithPattern(*backend, *cache.v_pages, pattern), "fill V");
    }
    const bool fast = config.path == kFast;
    const std::vector<int> batches =
        fast ? std::vector<int>(std::begin(kFastBatches), std::end(kFastBatches))
             : std::vector<int>(std::begin(kBatches), std::end(kBatches));
    const std::vector<int> contexts =
        fast ? std::vector<int>{kFastContext}
             : std::vector<int>(std::begin(kContexts), std::end(kContexts));
    for (int batch : batches) {
      for (int context : contexts) {
        const int pages_per_request = context / kPageSize;
        std::vector<int32_t> table(static_cast<size_t>(batch) * pages_per_request);
        for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
        prng.shuffle(table);
        std::vector<uint16_t> q(static_cast<size_t>(batch) * config.num_q_heads *
                                config.shape.head_dim);
        for (uint16_t& x : q) x = EncodeBf16(2.0f * prng.unit_f32() - 1.0f);
        DeviceBuffer table_buffer = Must(Upload(*backend, table), "upload");
        DeviceBuffer q_buffer = Must(Upload(*backend, q), "upload");
        DeviceBuffer seq_lens = Must(
            Upload(*backend, std::vector<int32_t>(static_cast<size_t>(batch), context)), "upload");
        DeviceBuffer out = Must(backend->Allocate(static_cast<size_t>(batch) * config.num_q_heads *
                                                  config.shape.v_head_dim * 2),
                                "allocate");
        DeviceBuffer lse = Must(
            backend->Allocate(static_cast<size_t>(batch) * config.num_q_heads * 4), "allocate");
        DeviceBuffer status = Must(backend->Allocate(static_cast<size_t>(batch) * 4), "allocate");
        DecodeAttentionArgs args;
        args.cache = cache;
        args.block_table = {&table_buffer, batch, pages_per_request, pages_per_request};
        args.seq_lens = &seq_lens;
        args.q = &q_buffer;
        args.num_q_heads = config.num_q_heads;
        args.softmax_scale = 1.0f / std::sqrt(static_cast<float>(config.shape.head_dim));
        args.out_dtype = AttentionOutputDtype::kBf16;
        args.out = &out;
        args.lse = &lse;
        args.request_status = &status;
        args.launch.path = config.path;
        args.fast_mla_math = config.math;
        DeviceBuffer workspace =
            Must(backend->Allocate(static_cast<size_t>(DecodeWorkspaceBytes(args))), "workspace");
        args.workspace = &workspace;
        const double cache_bytes = static_cast<double>(batch) * context *
                                   static_cast<double>(KvBytesPerToken(config.shape));
        for (int i = 0; i < 3; ++i) MustOk(DecodeAttention(*backend, args), "decode");
        MustOk(backend->Synchronize(), "decode");
        const int calls = std::clamp(static_cast<int>(2e10 / cache_bytes), 3, 200);
        cudaEvent_t start;
        cudaEvent_t stop;
        CHECK_CUDA(cudaEventCreate(&start));
        CHECK_CUDA(cudaEventCreate(&stop));
        CHECK_CUDA(cudaEventRecord(start));
        for (int i = 0; i < calls; ++i) MustOk(DecodeAttention(*backend, args), "decode");
        CHECK_CUDA(cudaEventRecord(stop));
        CHECK_CUDA(cudaEventSynchronize(stop));
        float ms = 0;
        CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
        CHECK_CUDA(cudaEventDestroy(start));
        CHECK_CUDA(cudaEventDestroy(stop));
        const std::vector<int32_t> statuses = Must(Download<int32_t>(*backend, status), "status");
        for (int32_t s : statuses) {
          if (s != 0) {
            std::fprintf(stderr, "request status %d\n", s);
            return 1;
          }
        }
        const Row row{1e3 * ms / calls, cache_bytes / (1e-3 * ms / calls)};
        rows[{config.path, config.kind, config.num_q_heads, cache_name, batch, context}] = row;
        const auto baseline = rows.find(
            {config.path, config.kind, config.num_q_heads, KvFormatName(bf16), batch, context});
        const std::string versus =
            config.shape.format == bf16 || baseline == rows.end()
                ? "-"
                : std::to_string(row.us_per_call / baseline->second.us_per_call).substr(0, 5) + "x";
        std::printf("%-6s %-5s %5d %-13s %6d %8d %11.1f %9.0f %7.1f%% %9s\n",
                    KernelPathName(config.path), config.kind, config.num_q_heads,
                    cache_name.c_str(), batch, context, row.us_per_call, row.bytes_per_second / 1e9,
                    100.0 * row.bytes_per_second / copy, versus.c_str());
      }
    }
  }
  if (!wgmma) {
    std::printf("\n%s rows: the FP8 fast MLA kernel (wgmma) runs on compute capability 9.0 only\n",
                kFp8Mma);
  }
  for (const KvFormat format : {e4m3, blocks}) {
    const std::string name = KvFormatName(format);
    for (int heads : {64, 128}) {
      for (int batch : kFastBatches) {
        const auto fp8 = rows.find({kFast, kFp8Mma, heads, name, batch, kFastContext});
        const auto bf16_mma = rows.find({kFast, "mla", heads, name, batch, kFastContext});
        if (fp8 == rows.end() || bf16_mma == rows.end()) continue;
        std::printf("  FP8-MMA / BF16-MMA time, %d heads, batch %d, %s: %.3fx\n", heads, batch,
                    name.c_str(), fp8->second.us_per_call / bf16_mma->second.us_per_call);
      }
    }
  }
  std::printf("\ntargets (FlashMLA reaches about 90%% of bandwidth on H800):\n");
  // Every FP8 cache is judged: e4m3 per-tensor rows, and FlashMLA's 656-byte rows for MLA; on the
  // fast path at each head count, over the batches >= 8 it ran.
  struct Target {
    KernelPath path;
    const char* kind;
    int heads;
    KvFormat format;
  };
  std::vector<Target> targets = {
      Target{kSimple, "gqa", 64, e4m3},   Target{kSimple, "mla", 64, e4m3},
      Target{kSimple, "mla", 64, blocks}, Target{kFast, "mla", 64, e4m3},
      Target{kFast, "mla", 64, blocks},   Target{kFast, "mla", 128, e4m3},
      Target{kFast, "mla", 128, blocks}};
  // The FP8-product kernel judged too, its time against the same BF16 cache's fast row.
  if (wgmma) {
    for (const KvFormat format : {e4m3, blocks}) {
      targets.push_back(Target{kFast, kFp8Mma, 64, format});
      targets.push_back(Target{kFast, kFp8Mma, 128, format});
    }
  }
  for (const Target& target : targets) {
    const std::string cache_name = KvFormatName(target.format);
    double worst = 1e9;
    for (const auto& [key, row] : rows) {
      const auto& [path, kind, heads, cache, batch, context] = key;
      if (path == target.path && kind == target.kind && heads == target.heads &&
          cache == cache_name && batch >= 8) {
        worst = std::min(worst, row.bytes_per_second / copy);
      }
    }
    const std::string bf16_kind = target.kind == std::string(kFp8Mma) ? "mla" : target.kind;
    const double ratio =
        rows[{target.path, target.kind, target.heads, cache_name, 64, kFastContext}].us_per_call /
        rows[{target.path, bf16_kind, target.heads, KvFormatName(bf16), 64, kFastContext}]
            .us_per_call;
    std::printf(
        "summary: attention %s %s %d heads %s: FP8 bandwidth at batch >= 8: lowest %.1f%% of "
        "copy (target >= 80%%: "
        "%s); FP8/BF16 time at batch 64, 21K: %.2fx (target <= 0.6x: %s)\n",
        KernelPathName(target.path), target.kind, target.heads, cache_name.c_str(), 100.0 * worst,
        worst >= 0.8 ? "met" : "NOT met", ratio, ratio <= 0.6 ? "met" : "NOT met");
  }
  return 0;
}

}  // namespace
}  // namespace kvsim

int main() { return kvsim::Run(); }
