// GPU benchmark of the fast GQA decode kernel against the simple one and a device-to-device copy
// in the same run: GQA 8 KV heads x 128, group 8, page size 64, batch 8 and 64 at 21,504 tokens,
// BF16 and e4m3 caches. Prints time per call (CUDA events), cache bytes read per second as a
// fraction of the copy bandwidth, and the FP8/BF16 time ratio, then the two targets as a
// `summary:` line (tools/gpu_check.sh and gpu_check_extra.sh's table repeat those).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/prng.h"
#include "kernels/attention/attention_launch.h"
#include "kernels/attention/decode_attention.h"
#include "kernels/attention/kv_cache.h"
#include "kernels/backend.h"
#include "kernels/backend_factory.h"
#include "kernels/formats.h"
#include "tests/kernels/attention/benchmark_pools.h"
#include "tests/kernels/attention/fast_gqa_run.h"
#include "tests/kernels/attention/gpu_timing.h"

namespace kvsim {
namespace {

constexpr int kPageSize = 64;
constexpr int kKvHeads = 8;
constexpr int kHeadDim = 128;
constexpr int kQueryHeads = 64;
constexpr int kContext = 21504;
constexpr int kBatches[] = {8, 64};
constexpr int kLargestBatch = 64;

using testing::Must;
using testing::MustOk;

// Microseconds per call of the fast and the simple kernel on `cache` at `batch` x kContext.
std::pair<double, double> TimeBoth(Backend& backend, const KvCache& cache, int batch, Prng& prng) {
  const int pages_per_request = kContext / kPageSize;
  std::vector<int32_t> table(static_cast<size_t>(batch) * pages_per_request);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
  prng.shuffle(table);
  std::vector<uint16_t> q(static_cast<size_t>(batch) * kQueryHeads * kHeadDim);
  for (uint16_t& x : q) x = EncodeBf16(2.0f * prng.unit_f32() - 1.0f);
  DeviceBuffer table_buffer = Must(Upload(backend, table), "upload");
  DeviceBuffer q_buffer = Must(Upload(backend, q), "upload");
  DeviceBuffer seq_lens =
      Must(Upload(backend, std::vector<int32_t>(static_cast<size_t>(batch), kContext)), "upload");
  const size_t head_rows = static_cast<size_t>(batch) * kQueryHeads;
  DeviceBuffer out = Must(backend.Allocate(head_rows * kHeadDim * 2), "allocate");
  DeviceBuffer lse = Must(backend.Allocate(head_rows * 4), "allocate");
  DeviceBuffer status = Must(backend.Allocate(static_cast<size_t>(batch) * 4), "allocate");
  DecodeAttentionArgs args;
  args.cache = cache;
  args.block_table = {&table_buffer, batch, pages_per_request, pages_per_request};
  args.seq_lens = &seq_lens;
  args.q = &q_buffer;
  args.num_q_heads = kQueryHeads;
  args.softmax_scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  args.out_dtype = AttentionOutputDtype::kBf16;
  args.out = &out;
  args.lse = &lse;
  args.request_status = &status;
  DeviceBuffer workspace =
      Must(backend.Allocate(static_cast<size_t>(DecodeWorkspaceBytes(args))), "workspace");
  DecodeAttentionLaunch launch = MakeDecodeLaunch(args);
  launch.workspace = workspace.as<uint8_t>();
  const double cache_bytes =
      static_cast<double>(batch) * kContext * static_cast<double>(KvBytesPerToken(cache.shape));
  const int calls = std::max(3, std::min(200, static_cast<int>(2e10 / cache_bytes)));
  std::pair<double, double> us;
  us.first = testing::MicrosecondsPerCall(
      [&] { MustOk(cuda::LaunchDecodeAttentionFastGqa(launch), "fast decode"); }, calls);
  for (int32_t s : Must(Download<int32_t>(backend, status), "status")) {
    if (s != 0) MustOk(InternalError("request status " + std::to_string(s)), "fast decode");
  }
  us.second = testing::MicrosecondsPerCall(
      [&] { MustOk(cuda::LaunchDecodeAttention(launch), "simple decode"); }, calls);
  return us;
}

int Run() {
  std::string note;
  std::unique_ptr<Backend> backend = Must(CreateBackend(BackendChoice::kCuda, &note), "cuda");
  const double copy = testing::CopyBandwidthBytesPerSecond();
  std::printf("device: %s\n", note.c_str());
  std::printf("copy bandwidth (device to device, 2 GiB, read + write): %.0f GB/s\n\n", copy / 1e9);
  const int pages = kLargestBatch * kContext / kPageSize;
  const KvFormat bf16{KvDtype::kBf16, KvScaling::kNone};
  const KvFormat e4m3{KvDtype::kFp8E4M3, KvScaling::kPerTensor};
  Prng prng(0x5eed);
  std::map<std::pair<std::string, int>, double> fast_us;
  std::printf("%-9s %6s %8s %12s %9s %8s %14s\n", "cache", "batch", "context", "fast us", "GB/s",
              "of copy", "simple us");
  for (const KvFormat format : {bf16, e4m3}) {
    const KvCacheShape shape = GqaCacheShape(pages, kPageSize, kKvHeads, kHeadDim, format);
    KvCacheStorage storage =
        Must(KvCacheStorage::Allocate(*backend, shape, 0.05f, 0.05f), "allocate cache");
    KvCache cache = storage.view();
    const std::vector<uint8_t> pattern = testing::ValidRowPattern(shape, 4096, prng);
    MustOk(testing::FillWithPattern(*backend, *cache.k_pages, pattern), "fill K");
    MustOk(testing::FillWithPattern(*backend, *cache.v_pages, pattern), "fill V");
    for (int batch : kBatches) {
      const auto [fast, simple] = TimeBoth(*backend, cache, batch, prng);
      const double bytes =
          static_cast<double>(batch) * kContext * static_cast<double>(KvBytesPerToken(shape));
      const double bandwidth = bytes / (fast * 1e-6);
      fast_us[{KvFormatName(format), batch}] = fast;
      std::printf("%-9s %6d %8d %12.1f %9.0f %7.1f%% %14.1f\n", KvFormatName(format).c_str(), batch,
                  kContext, fast, bandwidth / 1e9, 100.0 * bandwidth / copy, simple);
    }
  }
  double lowest = 1e9;
  for (int batch : kBatches) {
    const double bytes = static_cast<double>(batch) * kContext *
                         static_cast<double>(KvBytesPerToken(
                             GqaCacheShape(pages, kPageSize, kKvHeads, kHeadDim, e4m3)));
    lowest = std::min(lowest, bytes / (fast_us[{KvFormatName(e4m3), batch}] * 1e-6) / copy);
  }
  const double ratio = fast_us[{KvFormatName(e4m3), 64}] / fast_us[{KvFormatName(bf16), 64}];
  std::printf(
      "\nsummary: fast GQA fp8_e4m3: bandwidth at batch 8 and 64: lowest %.1f%% of copy "
      "(target >= 80%%: %s); FP8/BF16 time at batch 64, 21K: %.2fx (target <= 0.6x: %s)\n",
      100.0 * lowest, lowest >= 0.8 ? "met" : "NOT met", ratio, ratio <= 0.6 ? "met" : "NOT met");
  return 0;
}

}  // namespace
}  // namespace kvsim

int main() { return kvsim::Run(); }
