// CPU benchmark of append_kv and paged decode attention at (batch 8, 4K tokens, MLA 576) and
// (batch 64, 21K tokens, GQA 8 KV heads x 128, group 8): cache bytes per second, and the ratio to
// a memcpy of the same number of bytes timed in the same run. Ratios, not absolute times, are
// what this machine-dependent number means.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/prng.h"
#include "kernels/attention/append_kv.h"
#include "kernels/attention/decode_attention.h"
#include "kernels/attention/kv_cache.h"
#include "kernels/backend.h"
#include "kernels/formats.h"
#include "tests/kernels/attention/benchmark_pools.h"

namespace kvsim {
namespace {

constexpr int kPageSize = 64;
// Append writes the context in calls of this many tokens, cycling one input buffer.
constexpr int kAppendChunkTokens = 1 << 14;
// memcpy streams through buffers of this size, larger than any cache.
constexpr size_t kMemcpyBufferBytes = size_t{256} << 20;

struct Shape {
  std::string name;
  KvCacheShape cache;
  int batch;
  int context;
  int num_q_heads;
};

using testing::Must;
using testing::MustOk;

double CacheBytes(const Shape& shape) {
  return static_cast<double>(shape.batch) * shape.context *
         static_cast<double>(KvBytesPerToken(shape.cache));
}

KvCacheShape Sized(const Shape& shape) {
  KvCacheShape cache = shape.cache;
  cache.num_pages = shape.batch * shape.context / kPageSize;
  return cache;
}

// Copies CacheBytes(shape) bytes through two large buffers.
void BM_Memcpy(benchmark::State& state, const Shape& shape) {
  std::vector<uint8_t> source(kMemcpyBufferBytes, 1);
  std::vector<uint8_t> target(kMemcpyBufferBytes);
  const double bytes = CacheBytes(shape);
  for (auto _ : state) {
    for (double done = 0; done < bytes; done += kMemcpyBufferBytes) {
      const size_t chunk = static_cast<size_t>(std::min<double>(kMemcpyBufferBytes, bytes - done));
      std::memcpy(target.data(), source.data(), chunk);
      benchmark::ClobberMemory();
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
  state.counters["cache_bytes"] = bytes;
}

// Appends every token of the batch (the cache a prefill writes).
void BM_Append(benchmark::State& state, const Shape& shape) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  const KvCacheShape cache_shape = Sized(shape);
  KvCacheStorage storage =
      Must(KvCacheStorage::Allocate(*backend, cache_shape, 0.05f, 0.05f), "allocate cache");
  // Touch every page of the pools first, so the timing is of appending, not of page faults.
  MustOk(storage.Fill(*backend, 0), "fill cache");
  const int pages_per_request = shape.context / kPageSize;
  std::vector<int32_t> table(static_cast<size_t>(shape.batch) * pages_per_request);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
  Prng prng(7);
  prng.shuffle(table);
  DeviceBuffer table_buffer = Must(Upload(*backend, table), "upload");
  const size_t row_values = static_cast<size_t>(cache_shape.num_kv_heads) * cache_shape.head_dim;
  std::vector<uint16_t> values(kAppendChunkTokens * row_values);
  for (uint16_t& x : values) x = EncodeBf16(4.0f * prng.unit_f32() - 2.0f);
  DeviceBuffer k = Must(Upload(*backend, values), "upload");
  DeviceBuffer v = Must(Upload(*backend, values), "upload");
  DeviceBuffer status = Must(backend->Allocate(kAppendChunkTokens * sizeof(int32_t)), "allocate");
  const int64_t tokens = int64_t{shape.batch} * shape.context;
  std::vector<DeviceBuffer> requests;
  std::vector<DeviceBuffer> positions;
  for (int64_t first = 0; first < tokens; first += kAppendChunkTokens) {
    std::vector<int32_t> request(kAppendChunkTokens);
    std::vector<int32_t> position(kAppendChunkTokens);
    for (int i = 0; i < kAppendChunkTokens; ++i) {
      request[static_cast<size_t>(i)] = static_cast<int32_t>((first + i) / shape.context);
      position[static_cast<size_t>(i)] = static_cast<int32_t>((first + i) % shape.context);
    }
    requests.push_back(Must(Upload(*backend, request), "upload"));
    positions.push_back(Must(Upload(*backend, position), "upload"));
  }
  AppendKvArgs args;
  args.cache = storage.view();
  args.block_table = {&table_buffer, shape.batch, pages_per_request, pages_per_request};
  args.k_new = &k;
  args.v_new = cache_shape.kind == AttentionKind::kGqa ? &v : nullptr;
  args.token_status = &status;
  for (auto _ : state) {
    for (size_t chunk = 0; chunk < requests.size(); ++chunk) {
      args.num_tokens = static_cast<int>(std::min<int64_t>(
          kAppendChunkTokens, tokens - static_cast<int64_t>(chunk) * kAppendChunkTokens));
      args.token_request = &requests[chunk];
      args.token_position = &positions[chunk];
      MustOk(AppendKv(*backend, args), "append");
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(CacheBytes(shape)) * state.iterations());
  state.counters["cache_bytes"] = CacheBytes(shape);
}

// One decode step: every request attends to its whole context.
void BM_Decode(benchmark::State& state, const Shape& shape) {
  std::unique_ptr<Backend> backend = CreateCpuBackend();
  const KvCacheShape cache_shape = Sized(shape);
  KvCacheStorage storage =
      Must(KvCacheStorage::Allocate(*backend, cache_shape, 0.05f, 0.05f), "allocate cache");
  KvCache cache = storage.view();
  Prng prng(11);
  const std::vector<uint8_t> pattern = testing::ValidRowPattern(cache_shape, 4096, prng);
  MustOk(testing::FillWithPattern(*backend, *cache.k_pages, pattern), "fill K");
  if (cache.v_pages != nullptr)
    MustOk(testing::FillWithPattern(*backend, *cache.v_pages, pattern), "fill V");
  const int pages_per_request = shape.context / kPageSize;
  std::vector<int32_t> table(static_cast<size_t>(shape.batch) * pages_per_request);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
  prng.shuffle(table);
  std::vector<uint16_t> q(static_cast<size_t>(shape.batch) * shape.num_q_heads *
                          cache_shape.head_dim);
  for (uint16_t& x : q) x = EncodeBf16(2.0f * prng.unit_f32() - 1.0f);
  DeviceBuffer table_buffer = Must(Upload(*backend, table), "upload");
  DeviceBuffer q_buffer = Must(Upload(*backend, q), "upload");
  DeviceBuffer seq_lens =
      Must(Upload(*backend, std::vector<int32_t>(static_cast<size_t>(shape.batch), shape.context)),
           "upload");
  DeviceBuffer out = Must(backend->Allocate(static_cast<size_t>(shape.batch) * shape.num_q_heads *
                                            cache_shape.v_head_dim * 2),
                          "allocate");
  DeviceBuffer status = Must(backend->Allocate(static_cast<size_t>(shape.batch) * 4), "allocate");
  DecodeAttentionArgs args;
  args.cache = cache;
  args.block_table = {&table_buffer, shape.batch, pages_per_request, pages_per_request};
  args.seq_lens = &seq_lens;
  args.q = &q_buffer;
  args.num_q_heads = shape.num_q_heads;
  args.softmax_scale = 1.0f / std::sqrt(static_cast<float>(cache_shape.head_dim));
  args.out_dtype = AttentionOutputDtype::kBf16;
  args.out = &out;
  args.request_status = &status;
  for (auto _ : state) MustOk(DecodeAttention(*backend, args), "decode");
  state.SetBytesProcessed(static_cast<int64_t>(CacheBytes(shape)) * state.iterations());
  state.counters["cache_bytes"] = CacheBytes(shape);
}

// Console output as usual, and each run's bytes per second kept for the ratio table.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  RatioReporter() : ConsoleReporter(OO_None) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      const auto bytes = run.counters.find("cache_bytes");
      if (bytes == run.counters.end() || run.iterations == 0) continue;
      const double seconds_per_iteration =
          run.real_accumulated_time / static_cast<double>(run.iterations);
      rates_[run.run_name.function_name] = bytes->second.value / seconds_per_iteration;
    }
  }

  // For each "op/shape" run, its rate over the "memcpy/shape" run's.
  void PrintRatios() const {
    std::printf("\nbytes per second (GB = 1e9 bytes) against a memcpy of the same bytes:\n");
    std::printf("%-40s %10s %12s %10s\n", "benchmark", "GB/s", "memcpy GB/s", "of memcpy");
    for (const auto& [name, rate] : rates_) {
      if (name.rfind("memcpy/", 0) == 0) continue;
      const std::string shape = name.substr(name.find('/') + 1);
      const auto memcpy_rate = rates_.find("memcpy/" + shape);
      if (memcpy_rate == rates_.end()) continue;
      std::printf("%-40s %10.3f %12.3f %9.3fx\n", name.c_str(), rate / 1e9,
                  memcpy_rate->second / 1e9, rate / memcpy_rate->second);
    }
  }

 private:
  std::map<std::string, double> rates_;
};

std::vector<Shape> Shapes() {
  const KvFormat bf16{KvDtype::kBf16, KvScaling::kNone};
  const KvFormat e4m3{KvDtype::kFp8E4M3, KvScaling::kPerTensor};
  const KvFormat blocks{KvDtype::kFp8E4M3, KvScaling::kMlaBlock128};
  return {
      {"mla b8 4K " + KvFormatName(bf16), MlaCacheShape(1, kPageSize, bf16), 8, 4096, 64},
      {"mla b8 4K " + KvFormatName(e4m3), MlaCacheShape(1, kPageSize, e4m3), 8, 4096, 64},
      {"mla b8 4K " + KvFormatName(blocks), MlaCacheShape(1, kPageSize, blocks), 8, 4096, 64},
      {"gqa b64 21K " + KvFormatName(bf16), GqaCacheShape(1, kPageSize, 8, 128, bf16), 64, 21504,
       64},
      {"gqa b64 21K " + KvFormatName(e4m3), GqaCacheShape(1, kPageSize, 8, 128, e4m3), 64, 21504,
       64},
  };
}

}  // namespace
}  // namespace kvsim

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  for (const kvsim::Shape& shape : kvsim::Shapes()) {
    benchmark::RegisterBenchmark(("memcpy/" + shape.name).c_str(), kvsim::BM_Memcpy, shape)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("append/" + shape.name).c_str(), kvsim::BM_Append, shape)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("decode/" + shape.name).c_str(), kvsim::BM_Decode, shape)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  kvsim::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}
