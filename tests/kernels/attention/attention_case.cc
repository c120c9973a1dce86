// Building, uploading and running seeded attention cases.
#include "tests/kernels/attention/attention_case.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>
#include <sstream>
#include <utility>

#include "base/check.h"
#include "base/distributions.h"
#include "base/prng.h"
#include "base/seed.h"
#include "kernels/attention/kv_row.h"
#include "kernels/formats.h"

namespace kvsim::testing {
namespace {

// Outlier channels per head, and how much larger they are.
constexpr int kOutlierChannels = 4;
constexpr double kOutlierGain = 100.0;
// Tokens per append_kv call when a case is uploaded.
constexpr int kAppendChunkTokens = 1 << 16;
// Values are drawn from a pool of this many samples of the distribution: the kernels' checks need
// values of the distribution's shape, not millions of independent transcendental samples.
constexpr size_t kValuePoolSize = 4096;

std::vector<double> MakeValuePool(Prng& prng, ValueDistribution distribution) {
  std::vector<double> pool(kValuePoolSize);
  for (double& x : pool) {
    x = distribution == ValueDistribution::kHeavyTailed ? SampleStudentT(prng, 3)
                                                        : SampleGaussian(prng);
  }
  return pool;
}

// Fills `count` bf16 values of one row; channel i of an outlier row is multiplied by gains[i].
void FillRow(Prng& prng, const std::vector<double>& pool, double value_scale,
             const std::vector<double>& gains, int count, uint16_t* out) {
  for (int i = 0; i < count; ++i) {
    const double x = pool[prng.below(pool.size())] * value_scale * gains[static_cast<size_t>(i)];
    out[i] = EncodeBf16(static_cast<float>(x));
  }
}

float AbsMax(const std::vector<uint16_t>& values) {
  float absmax = 0;
  for (uint16_t bits : values) absmax = std::fmax(absmax, std::fabs(DecodeBf16(bits)));
  return absmax;
}

// Request 0's first query head := its newest key (KV head 0) times a factor that makes the score
// softmax_scale * q . k about `score`.
void PointAtNewestToken(double score, AttentionCase& c) {
  const int dim = c.shape.head_dim;
  const size_t row_values = static_cast<size_t>(c.shape.num_kv_heads) * dim;
  for (size_t t = 0; t < c.token_request.size(); ++t) {
    if (c.token_request[t] != 0 || c.token_position[t] != c.seq_lens[0] - 1) continue;
    const uint16_t* key = &c.k_new[t * row_values];
    double norm_squared = 0;
    for (int i = 0; i < dim; ++i) norm_squared += std::pow(DecodeBf16(key[i]), 2);
    KVSIM_CHECK_GT(norm_squared, 0);
    const double factor = score * std::sqrt(static_cast<double>(dim)) / norm_squared;
    for (int i = 0; i < dim; ++i) {
      c.q[static_cast<size_t>(i)] = EncodeBf16(static_cast<float>(factor * DecodeBf16(key[i])));
    }
    return;
  }
  KVSIM_CHECK(false) << "request 0's newest token is on a shared page";
}

}  // namespace

const char* ValueDistributionName(ValueDistribution distribution) {
  switch (distribution) {
    case ValueDistribution::kGaussian:
      return "gaussian";
    case ValueDistribution::kHeavyTailed:
      return "student-t3";
    case ValueDistribution::kOutlierChannels:
      return "outlier channels";
  }
  return "unknown";
}

AttentionCase MakeAttentionCase(const AttentionCaseParams& params) {
  KVSIM_CHECK(!params.seq_lens.empty());
  AttentionCase c;
  c.params = params;
  c.shape = params.shape;
  c.batch = static_cast<int>(params.seq_lens.size());
  c.seq_lens.assign(params.seq_lens.begin(), params.seq_lens.end());
  const int page_size = c.shape.page_size;
  Prng prng(params.seed);

  std::vector<int> pages(static_cast<size_t>(c.batch));
  std::vector<int> shared(static_cast<size_t>(c.batch), 0);
  int distinct_pages = 0;
  for (int r = 0; r < c.batch; ++r) {
    KVSIM_CHECK_GE(c.seq_lens[static_cast<size_t>(r)], 1);
    pages[static_cast<size_t>(r)] =
        (c.seq_lens[static_cast<size_t>(r)] + page_size - 1) / page_size;
    if (r > 0) {
      shared[static_cast<size_t>(r)] =
          std::max(0, std::min({params.shared_pages, c.seq_lens[0] / page_size,
                                pages[static_cast<size_t>(r)] - 1}));
    }
    distinct_pages += pages[static_cast<size_t>(r)] - shared[static_cast<size_t>(r)];
  }
  c.shape.num_pages = distinct_pages + params.spare_pages;
  // One entry past the longest request, so every row has table entries its length never uses.
  c.max_pages_per_request = *std::max_element(pages.begin(), pages.end()) + 1;
  c.row_stride = c.max_pages_per_request + params.row_padding;

  std::vector<int32_t> page_ids(static_cast<size_t>(c.shape.num_pages));
  std::iota(page_ids.begin(), page_ids.end(), 0);
  prng.shuffle(page_ids);
  const std::vector<int32_t> spare(page_ids.begin() + distinct_pages, page_ids.end());
  c.block_table.assign(static_cast<size_t>(c.batch) * c.row_stride, 0);
  size_t next_page = 0;
  for (int r = 0; r < c.batch; ++r) {
    int32_t* row = &c.block_table[static_cast<size_t>(r) * c.row_stride];
    for (int p = 0; p < pages[static_cast<size_t>(r)]; ++p) {
      row[p] = p < shared[static_cast<size_t>(r)] ? c.block_table[static_cast<size_t>(p)]
                                                  : page_ids[next_page++];
    }
    // Past the request's pages: ids a kernel must never follow (out of range, or a spare page
    // holding poison).
    for (int p = pages[static_cast<size_t>(r)]; p < c.row_stride; ++p) {
      switch (prng.below(4)) {
        case 0:
          row[p] = -1;
          break;
        case 1:
          row[p] = c.shape.num_pages;
          break;
        case 2:
          row[p] = INT32_MAX;
          break;
        default:
          row[p] = spare.empty() ? -1 : spare[prng.below(spare.size())];
      }
    }
  }

  const bool mla = c.shape.kind == AttentionKind::kMla;
  const int heads = c.shape.num_kv_heads;
  const int dim = c.shape.head_dim;
  std::vector<std::vector<double>> gains(static_cast<size_t>(heads),
                                         std::vector<double>(static_cast<size_t>(dim), 1.0));
  if (params.distribution == ValueDistribution::kOutlierChannels) {
    for (auto& head_gains : gains) {
      for (int i = 0; i < kOutlierChannels; ++i)
        head_gains[prng.below(static_cast<uint64_t>(dim))] = kOutlierGain;
    }
  }
  for (int r = 0; r < c.batch; ++r) {
    for (int position = shared[static_cast<size_t>(r)] * page_size;
         position < c.seq_lens[static_cast<size_t>(r)]; ++position) {
      c.token_request.push_back(r);
      c.token_position.push_back(position);
    }
  }
  // Appended in a shuffled order: slots are independent.
  std::vector<size_t> order(c.token_request.size());
  std::iota(order.begin(), order.end(), size_t{0});
  prng.shuffle(order);
  std::vector<int32_t> requests(order.size());
  std::vector<int32_t> positions(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    requests[i] = c.token_request[order[i]];
    positions[i] = c.token_position[order[i]];
  }
  c.token_request = std::move(requests);
  c.token_position = std::move(positions);

  const std::vector<double> pool = MakeValuePool(prng, params.distribution);
  const size_t row_values = static_cast<size_t>(heads) * dim;
  c.k_new.resize(c.token_request.size() * row_values);
  if (!mla) c.v_new.resize(c.token_request.size() * row_values);
  for (size_t t = 0; t < c.token_request.size(); ++t) {
    for (int h = 0; h < heads; ++h) {
      const size_t offset = t * row_values + static_cast<size_t>(h) * dim;
      const std::vector<double>& head_gains = gains[static_cast<size_t>(h)];
      FillRow(prng, pool, params.value_scale, head_gains, dim, &c.k_new[offset]);
      if (!mla) FillRow(prng, pool, params.value_scale, head_gains, dim, &c.v_new[offset]);
    }
  }
  c.q.resize(static_cast<size_t>(c.batch) * params.num_q_heads * dim);
  for (uint16_t& value : c.q) value = EncodeBf16(static_cast<float>(SampleGaussian(prng)));
  if (params.newest_token_score > 0) PointAtNewestToken(params.newest_token_score, c);

  const float max_finite = Fp8MaxFinite(c.shape.format.dtype);
  c.k_scale = 1.0f;
  c.v_scale = 1.0f;
  if (c.shape.format.scaling == KvScaling::kPerTensor) {
    c.k_scale = std::fmax(AbsMax(c.k_new) / max_finite, 1e-30f);
    c.v_scale = mla ? c.k_scale : std::fmax(AbsMax(c.v_new) / max_finite, 1e-30f);
  }
  c.softmax_scale = 1.0f / std::sqrt(static_cast<float>(dim));
  return c;
}

std::vector<AttentionCaseParams> LongContextCases() {
  std::vector<AttentionCaseParams> cases;
  const KvFormat e4m3{KvDtype::kFp8E4M3, KvScaling::kPerTensor};
  const KvFormat e4m3_token_head{KvDtype::kFp8E4M3, KvScaling::kPerTokenHead};
  struct Gqa {
    int head_dim;
    int page_size;
    int num_q_heads;
    KvFormat format;
    ValueDistribution distribution;
  };
  for (const Gqa& gqa : {
           Gqa{64, 16, 2, e4m3, ValueDistribution::kOutlierChannels},
           Gqa{128, 256, 8, e4m3, ValueDistribution::kGaussian},
           Gqa{256, 64, 2, e4m3_token_head, ValueDistribution::kHeavyTailed},
       }) {
    AttentionCaseParams p;
    p.shape = GqaCacheShape(0, gqa.page_size, 1, gqa.head_dim, gqa.format);
    p.num_q_heads = gqa.num_q_heads;
    p.seq_lens = {32768, 5};
    p.distribution = gqa.distribution;
    p.seed = 0x32768u + static_cast<uint64_t>(gqa.head_dim);
    cases.push_back(p);
  }
  // A Gaussian query attends to 32,768 keys almost evenly, so no one token moves the output beyond
  // the bound; this one attends to its newest token (score 8 against about N(0, 1/2) for the rest).
  AttentionCaseParams newest = cases[1];
  newest.newest_token_score = 8;
  newest.seed = 0x32768u + 1;
  cases.push_back(newest);
  struct Mla {
    KvFormat format;
    int num_q_heads;
  };
  for (const Mla& mla : {Mla{{KvDtype::kBf16, KvScaling::kNone}, 1}, Mla{e4m3, 2},
                         Mla{{KvDtype::kFp8E4M3, KvScaling::kMlaBlock128}, 2}}) {
    AttentionCaseParams p;
    p.shape = MlaCacheShape(0, 64, mla.format);
    p.num_q_heads = mla.num_q_heads;
    p.seq_lens = {32768, 21531};
    p.distribution = ValueDistribution::kOutlierChannels;
    p.seed = 0x32768u + static_cast<uint64_t>(cases.size());
    cases.push_back(p);
  }
  return cases;
}

void InjectSpecialValues(AttentionCase& c, uint64_t seed) {
  static constexpr uint16_t kSpecialBf16[] = {0x7FC0, 0xFFC1, 0x7F80, 0xFF80, 0x0000, 0x8000,
                                              0x0001, 0x7F7F, 0x4400, 0xC4F0, 0x3C00};
  Prng prng(seed);
  for (std::vector<uint16_t>* values : {&c.k_new, &c.v_new}) {
    for (uint16_t& value : *values) {
      if (prng.chance(1, 64)) value = kSpecialBf16[prng.below(std::size(kSpecialBf16))];
    }
  }
}

BlockTable DeviceCase::table(const AttentionCase& c) const {
  BlockTable table;
  table.page_ids = &block_table;
  table.batch = c.batch;
  table.max_pages_per_request = c.max_pages_per_request;
  table.row_stride = c.row_stride;
  return table;
}

Result<DeviceCase> UploadAndAppend(Backend& backend, const AttentionCase& c) {
  DeviceCase device;
  KVSIM_ASSIGN_OR_RETURN(device.storage,
                         KvCacheStorage::Allocate(backend, c.shape, c.k_scale, c.v_scale));
  KVSIM_RETURN_IF_ERROR(device.storage.Fill(backend, 0xFF));
  KVSIM_ASSIGN_OR_RETURN(device.block_table, Upload(backend, c.block_table));
  KVSIM_ASSIGN_OR_RETURN(device.seq_lens, Upload(backend, c.seq_lens));
  KVSIM_ASSIGN_OR_RETURN(device.q, Upload(backend, c.q));
  const size_t tokens = c.token_request.size();
  const size_t row_values = static_cast<size_t>(c.shape.num_kv_heads) * c.shape.head_dim;
  for (size_t first = 0; first < tokens; first += kAppendChunkTokens) {
    const size_t count = std::min(tokens - first, size_t{kAppendChunkTokens});
    auto slice = [&](const auto& values, size_t per_token) {
      using T = typename std::decay_t<decltype(values)>::value_type;
      return std::vector<T>(
          values.begin() + static_cast<std::ptrdiff_t>(first * per_token),
          values.begin() + static_cast<std::ptrdiff_t>((first + count) * per_token));
    };
    KVSIM_ASSIGN_OR_RETURN(device.k_new, Upload(backend, slice(c.k_new, row_values)));
    if (!c.v_new.empty()) {
      KVSIM_ASSIGN_OR_RETURN(device.v_new, Upload(backend, slice(c.v_new, row_values)));
    }
    KVSIM_ASSIGN_OR_RETURN(device.token_request, Upload(backend, slice(c.token_request, 1)));
    KVSIM_ASSIGN_OR_RETURN(device.token_position, Upload(backend, slice(c.token_position, 1)));
    KVSIM_ASSIGN_OR_RETURN(device.token_status, backend.Allocate(count * sizeof(int32_t)));
    KVSIM_RETURN_IF_ERROR(backend.Fill(device.token_status, 0xFF));
    AppendKvArgs args;
    args.cache = device.cache();
    args.block_table = device.table(c);
    args.num_tokens = static_cast<int>(count);
    args.k_new = &device.k_new;
    args.v_new = c.v_new.empty() ? nullptr : &device.v_new;
    args.token_request = &device.token_request;
    args.token_position = &device.token_position;
    args.token_status = &device.token_status;
    KVSIM_RETURN_IF_ERROR(AppendKv(backend, args));
    KVSIM_ASSIGN_OR_RETURN(const std::vector<int32_t> status,
                           Download<int32_t>(backend, device.token_status));
    for (size_t t = 0; t < status.size(); ++t) {
      if (status[t] != static_cast<int32_t>(KvAccessStatus::kOk)) {
        return InternalError("append_kv reported status " + std::to_string(status[t]) +
                             " for a valid token " + std::to_string(first + t));
      }
    }
  }
  return Result<DeviceCase>(std::move(device));
}

DecodeAttentionArgs DecodeArgsFor(const AttentionCase& c, DeviceCase& device) {
  DecodeAttentionArgs args;
  args.cache = device.cache();
  args.block_table = device.table(c);
  args.seq_lens = &device.seq_lens;
  args.q = &device.q;
  args.num_q_heads = c.params.num_q_heads;
  args.softmax_scale = c.softmax_scale;
  args.fast_mla_math = c.params.fast_mla_math;
  args.mla_mma_sync_on_sm90 = c.params.mla_mma_sync_on_sm90;
  return args;
}

Result<DecodeOutputs> RunDecode(Backend& backend, const AttentionCase& c, DeviceCase& device,
                                AttentionOutputDtype out_dtype, KernelPath path) {
  return RunDecodeWith(backend, c, device, out_dtype,
                       [path](Backend& on, const DecodeAttentionArgs& args) {
                         DecodeAttentionArgs on_path = args;
                         on_path.launch.path = path;
                         return DecodeAttention(on, on_path);
                       });
}

Result<DecodeOutputs> RunDecodeWith(Backend& backend, const AttentionCase& c, DeviceCase& device,
                                    AttentionOutputDtype out_dtype, const DecodeRunner& run) {
  const size_t head_rows = static_cast<size_t>(c.batch) * c.params.num_q_heads;
  const size_t out_values = head_rows * static_cast<size_t>(c.shape.v_head_dim);
  const size_t element = out_dtype == AttentionOutputDtype::kBf16 ? 2 : 4;
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer out, backend.Allocate(out_values * element));
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer lse, backend.Allocate(head_rows * sizeof(float)));
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer status,
                         backend.Allocate(static_cast<size_t>(c.batch) * sizeof(int32_t)));
  for (DeviceBuffer* buffer : {&out, &lse, &status})
    KVSIM_RETURN_IF_ERROR(backend.Fill(*buffer, 0xFF));
  DecodeAttentionArgs args = DecodeArgsFor(c, device);
  args.out_dtype = out_dtype;
  args.out = &out;
  args.lse = &lse;
  args.request_status = &status;
  KVSIM_RETURN_IF_ERROR(run(backend, args));
  DecodeOutputs outputs;
  if (out_dtype == AttentionOutputDtype::kFp32) {
    KVSIM_ASSIGN_OR_RETURN(outputs.out, Download<float>(backend, out));
  } else {
    KVSIM_ASSIGN_OR_RETURN(const std::vector<uint16_t> bits, Download<uint16_t>(backend, out));
    outputs.out.resize(bits.size());
    for (size_t i = 0; i < bits.size(); ++i) outputs.out[i] = DecodeBf16(bits[i]);
  }
  KVSIM_ASSIGN_OR_RETURN(outputs.lse, Download<float>(backend, lse));
  KVSIM_ASSIGN_OR_RETURN(outputs.status, Download<int32_t>(backend, status));
  return outputs;
}

DecodeSplits SplitsFor(const AttentionCase& c, KernelPath path) {
  DecodeAttentionArgs args;
  args.launch.path = path;
  args.cache.shape = c.shape;
  args.block_table.batch = c.batch;
  args.block_table.max_pages_per_request = c.max_pages_per_request;
  args.block_table.row_stride = c.row_stride;
  args.num_q_heads = c.params.num_q_heads;
  return DecodeSplitsFor(args);
}

std::vector<int32_t> RequestPages(const AttentionCase& c, int request) {
  const auto first = c.block_table.begin() + static_cast<std::ptrdiff_t>(request) * c.row_stride;
  return std::vector<int32_t>(first, first + c.max_pages_per_request);
}

std::string DescribeParams(const AttentionCaseParams& params) {
  std::ostringstream out;
  out << (params.shape.kind == AttentionKind::kMla ? "mla" : "gqa") << " '"
      << KvFormatName(params.shape.format) << "' page_size " << params.shape.page_size
      << " kv_heads " << params.shape.num_kv_heads << " q_heads " << params.num_q_heads
      << " head_dim " << params.shape.head_dim << " " << ValueDistributionName(params.distribution)
      << " x" << params.value_scale << " shared_pages " << params.shared_pages << " spare_pages "
      << params.spare_pages << " row_padding " << params.row_padding << " seed "
      << FormatSeed(params.seed);
  if (params.newest_token_score > 0) out << " newest_token_score " << params.newest_token_score;
  out << " seq_lens [";
  for (size_t r = 0; r < params.seq_lens.size(); ++r) out << (r ? " " : "") << params.seq_lens[r];
  out << "]";
  return out.str();
}

std::string DescribeCase(const AttentionCase& c) {
  std::ostringstream out;
  out << (c.shape.kind == AttentionKind::kMla ? "mla" : "gqa") << " '"
      << KvFormatName(c.shape.format) << "' page_size " << c.shape.page_size << " kv_heads "
      << c.shape.num_kv_heads << " q_heads " << c.params.num_q_heads << " head_dim "
      << c.shape.head_dim << " " << ValueDistributionName(c.params.distribution) << " x"
      << c.params.value_scale << " k_scale " << c.k_scale << " v_scale " << c.v_scale
      << " shared_pages " << c.params.shared_pages << " seed " << FormatSeed(c.params.seed)
      << " seq_lens [";
  for (size_t r = 0; r < c.seq_lens.size(); ++r) out << (r ? " " : "") << c.seq_lens[r];
  out << "]";
  return out.str();
}

}  // namespace kvsim::testing
