// The CPU decode paths' shared steps.
#include "kernels/attention/decode_cpu_common.h"

#include <cmath>
#include <cstring>

#include "kernels/attention/decode_math.h"
#include "kernels/formats.h"

namespace kvsim {

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

KvAccessStatus CheckDecodeRequest(const DecodeAttentionLaunch& launch, int request,
                                  int32_t seq_len) {
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

bool StartDecodeRequestCpu(const DecodeAttentionLaunch& launch, int request) {
  const KvAccessStatus status = CheckDecodeRequest(launch, request, launch.seq_lens[request]);
  launch.request_status[request] = static_cast<int32_t>(status);
  if (status == KvAccessStatus::kOk) return true;
  for (int head = 0; head < launch.num_q_heads; ++head) WriteFailedHeadCpu(launch, request, head);
  return false;
}

void CombineHeadCpu(const DecodeAttentionLaunch& launch, int request, int head,
                    const SplitPartial* ml, const float* acc, int64_t acc_stride, int splits,
                    std::vector<float>& split_weight) {
  float max_log2 = -INFINITY;
  for (int s = 0; s < splits; ++s) max_log2 = fmaxf(max_log2, ml[s].max_log2);
  float sum = 0.0f;
  for (int s = 0; s < splits; ++s) {
    split_weight[static_cast<size_t>(s)] = exp2f(ml[s].max_log2 - max_log2);
    sum += split_weight[static_cast<size_t>(s)] * ml[s].sum;
  }
  const int v_dim = launch.pool.v_head_dim;
  const float output_factor = OutputFactor(launch.pool);
  const int64_t out_row = (int64_t{request} * launch.num_q_heads + head) * v_dim;
  for (int i = 0; i < v_dim; ++i) {
    float total = 0.0f;
    for (int s = 0; s < splits; ++s) {
      total += split_weight[static_cast<size_t>(s)] * acc[s * acc_stride + i];
    }
    const float value = (total / sum) * output_factor;
    if (launch.out_dtype == AttentionOutputDtype::kFp32) {
      static_cast<float*>(launch.out)[out_row + i] = value;
    } else {
      static_cast<uint16_t*>(launch.out)[out_row + i] = EncodeBf16(value);
    }
  }
  if (launch.lse != nullptr) {
    launch.lse[int64_t{request} * launch.num_q_heads + head] = LogSumExp(max_log2, sum);
  }
}

void WriteFailedHeadCpu(const DecodeAttentionLaunch& launch, int request, int head) {
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

float FastMlaHalfTileSum(const float* w) {
  float lane[4];
  for (int t = 0; t < 4; ++t) lane[t] = ((w[2 * t] + w[2 * t + 1]) + w[8 + 2 * t]) + w[9 + 2 * t];
  return (lane[0] + lane[1]) + (lane[2] + lane[3]);
}

}  // namespace kvsim
