// The host steps shared by the CPU decode backends.
#include "kernels/attention/decode_cpu_common.h"

#include <cmath>
#include <cstring>

#include "kernels/attention/decode_math.h"
#include "kernels/formats.h"

namespace kvsim {
namespace {

void WriteOutput(const DecodeAttentionLaunch& launch, int64_t index, float value) {
  if (launch.out_dtype == AttentionOutputDtype::kFp32) {
    static_cast<float*>(launch.out)[index] = value;
  } else {
    static_cast<uint16_t*>(launch.out)[index] = EncodeBf16(value);
  }
}

KvAccessStatus CheckRequest(const DecodeAttentionLaunch& launch, int request, int32_t seq_len) {
  const KvPoolView& pool = launch.pool;
  if (!DecodeLengthInRange(launch.table, pool.page_size, seq_len)) {
    return KvAccessStatus::kSequenceLengthOutOfRange;
  }
  const int pages = (seq_len + pool.page_size - 1) / pool.page_size;
  for (int page = 0; page < pages; ++page) {
    if (!PageInRange(LookupPage(launch.table, request, page), pool.num_pages)) {
      return KvAccessStatus::kPageOutOfRange;
    }
  }
  return KvAccessStatus::kOk;
}

void WriteFailedHead(const DecodeAttentionLaunch& launch, int request, int head) {
  const int v_dim = launch.pool.v_head_dim;
  const int64_t out_row = (int64_t{request} * launch.num_q_heads + head) * v_dim;
  for (int i = 0; i < v_dim; ++i) {
    if (launch.out_dtype == AttentionOutputDtype::kFp32) {
      static_cast<float*>(launch.out)[out_row + i] = BitsToFloat(kQuietNaNBits);
    } else {
      static_cast<uint16_t*>(launch.out)[out_row + i] = kBf16QuietNaNBits;
    }
  }
  if (launch.lse != nullptr) {
    launch.lse[int64_t{request} * launch.num_q_heads + head] = BitsToFloat(kQuietNaNBits);
  }
}

}  // namespace

bool BeginDecodeRequestCpu(const DecodeAttentionLaunch& launch, int request) {
  const KvAccessStatus status = CheckRequest(launch, request, launch.seq_lens[request]);
  launch.request_status[request] = static_cast<int32_t>(status);
  if (status == KvAccessStatus::kOk) return true;
  for (int head = 0; head < launch.num_q_heads; ++head) WriteFailedHead(launch, request, head);
  return false;
}

Fp8Table MakeFp8Table(KvDtype dtype) {
  Fp8Table table{};
  if (dtype == KvDtype::kBf16) return table;
  for (int code = 0; code < 256; ++code) {
    table[static_cast<size_t>(code)] = DecodeKvFp8(static_cast<uint8_t>(code), dtype);
  }
  return table;
}

void DequantizeRow(const KvPoolView& pool, const Fp8Table& fp8, const uint8_t* row, int count,
                   float* values) {
  if (pool.format.dtype == KvDtype::kBf16) {
    for (int i = 0; i < count; ++i) {
      uint16_t bits;
      std::memcpy(&bits, row + 2 * i, sizeof(bits));
      values[i] = DecodeBf16(bits);
    }
    return;
  }
  if (pool.format.scaling != KvScaling::kMlaBlock128) {
    for (int i = 0; i < count; ++i) values[i] = fp8[row[i]];
    return;
  }
  for (int block = 0; block < kMlaScaleBlocks; ++block) {
    float scale;
    std::memcpy(&scale, row + kMlaLoraRank + sizeof(float) * block, sizeof(scale));
    const int first = block * kMlaScaleBlock;
    for (int i = first; i < first + kMlaScaleBlock && i < count; ++i)
      values[i] = fp8[row[i]] * scale;
  }
  const uint8_t* rope = row + kMlaLoraRank + sizeof(float) * kMlaScaleBlocks;
  for (int i = kMlaLoraRank; i < count; ++i) {
    uint16_t bits;
    std::memcpy(&bits, rope + 2 * (i - kMlaLoraRank), sizeof(bits));
    values[i] = DecodeBf16(bits);
  }
}

float DecodeDot(const float* a, const float* b, int n) {
  constexpr int kLanes = kDecodeCpuDotLanes;
  float lanes[kLanes] = {};
  for (int i = 0; i < n; i += kLanes) {
    for (int lane = 0; lane < kLanes; ++lane) lanes[lane] += a[i + lane] * b[i + lane];
  }
  return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
         ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

void CombineDecodeSplits(const DecodeAttentionLaunch& launch, int request, int head, int splits,
                         const SplitPartial* partials, const float* acc, float* split_weight) {
  const int v_dim = launch.pool.v_head_dim;
  float max_log2 = -INFINITY;
  for (int s = 0; s < splits; ++s) max_log2 = fmaxf(max_log2, partials[s].max_log2);
  float sum = 0.0f;
  for (int s = 0; s < splits; ++s) {
    split_weight[s] = exp2f(partials[s].max_log2 - max_log2);
    sum += split_weight[s] * partials[s].sum;
  }
  const float output_factor = OutputFactor(launch.pool);
  const int64_t out_row = (int64_t{request} * launch.num_q_heads + head) * v_dim;
  for (int i = 0; i < v_dim; ++i) {
    float total = 0.0f;
    for (int s = 0; s < splits; ++s) total += split_weight[s] * acc[int64_t{s} * v_dim + i];
    WriteOutput(launch, out_row + i, (total / sum) * output_factor);
  }
  if (launch.lse != nullptr) {
    launch.lse[int64_t{request} * launch.num_q_heads + head] = LogSumExp(max_log2, sum);
  }
}

}  // namespace kvsim
