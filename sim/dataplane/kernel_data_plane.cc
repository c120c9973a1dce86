// Kernel mode's data plane: append, decode attention and the INT4 projection through the
// Backend, checked against the FP64 reference.
#include "sim/dataplane/kernel_data_plane.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

#include "base/check.h"
#include "base/distributions.h"
#include "base/prng.h"
#include "kernels/attention/append_kv.h"
#include "kernels/attention/decode_attention.h"
#include "kernels/attention/reference/attention_reference.h"
#include "kernels/attention/reference/path_bound.h"
#include "kernels/gemm/fast_gemm_grid.h"
#include "kernels/gemm/gemm_reference.h"
#include "kernels/gemm/int4_quantizer.h"
#include "kernels/gemm/packed_weights.h"
#include "sim/dataplane/true_kv.h"

namespace kvsim::sim {
namespace {

using Clock = std::chrono::steady_clock;

// The bf16 bits of a value that is exactly a bf16 value (its float's upper half).
uint16_t ExactBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  KVSIM_CHECK_EQ(bits & 0xFFFFu, 0u) << value << " is not a bf16 value";
  return static_cast<uint16_t>(bits >> 16);
}

// A bf16 value, by definition the upper half of a float.
double Bf16Value(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

// Adds the time from construction to destruction to `total`.
class Stopwatch {
 public:
  explicit Stopwatch(double& total) : total_(total), start_(Clock::now()) {}
  ~Stopwatch() { total_ += std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  double& total_;
  Clock::time_point start_;
};

// Uploads `values` into `buffer`, allocating a new one of exactly their size.
template <typename T>
Status Put(Backend& backend, const std::vector<T>& values, DeviceBuffer& buffer) {
  KVSIM_ASSIGN_OR_RETURN(buffer, Upload(backend, values));
  return Status::Ok();
}

uint64_t HashBytes(uint64_t hash, const void* data, size_t size) {
  const uint8_t* bytes = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < size; i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, bytes + i, std::min<size_t>(8, size - i));
    hash = MixIds(hash, word);
  }
  return hash;
}

template <typename T>
uint64_t HashBytes(uint64_t hash, const std::vector<T>& values) {
  return HashBytes(hash, values.data(), values.size() * sizeof(T));
}

// The kernels' view of the packed step table held in `buffer`.
BlockTable TableOf(const DeviceBuffer& buffer, const StepTable& step) {
  BlockTable table;
  table.page_ids = &buffer;
  table.batch = static_cast<int>(step.rows.size());
  table.max_pages_per_request = step.stride;
  table.row_stride = step.stride;
  return table;
}

// Kimi K2.6's query-key head dimension before absorption (qk_nope 128 + qk_rope 64): MLA scales
// scores by its inverse square root.
constexpr double kMlaQkHeadDim = 192;
constexpr int kMlaRopeValues = kMlaRopeDim;
// The reference's cached rows of all requests together: 16 M doubles, 128 MiB.
constexpr int64_t kMaxCachedReferenceValues = int64_t{16} << 20;

}  // namespace

std::string KernelStepLine(const std::string& pool, const KernelStepRecord& r) {
  char line[512];
  std::snprintf(line, sizeof(line),
                "pool %s step %lld appended %lld cache 0x%016llx rows %lld statuses 0x%016llx out "
                "0x%016llx checked %lld worst %.6f gemm 0x%016llx gemm_checked %lld gemm_worst "
                "%.6f",
                pool.c_str(), static_cast<long long>(r.step), static_cast<long long>(r.appended),
                static_cast<unsigned long long>(r.cache_bits),
                static_cast<long long>(r.decode_rows), static_cast<unsigned long long>(r.statuses),
                static_cast<unsigned long long>(r.outputs), static_cast<long long>(r.checked),
                r.worst, static_cast<unsigned long long>(r.gemm_outputs),
                static_cast<long long>(r.gemm_checked), r.gemm_worst);
  return line;
}

Result<std::unique_ptr<KernelDataPlane>> KernelDataPlane::Create(const KernelSpec& spec,
                                                                 int num_pages, int page_size,
                                                                 Backend& backend, uint64_t seed) {
  KVSIM_RETURN_IF_ERROR(ValidateKernelSpec(spec));
  KVSIM_ASSIGN_OR_RETURN(OracleAuditor oracle, OracleAuditor::Create(num_pages, page_size));
  std::unique_ptr<KernelDataPlane> plane(
      new KernelDataPlane(spec, page_size, backend, std::move(oracle)));
  const KvCacheShape shape = KernelCacheShape(spec, num_pages, page_size);
  KVSIM_RETURN_IF_ERROR(ValidateKvCacheShape(shape).WithContext("kernel mode cache"));
  const float largest = spec.kv_format.dtype == KvDtype::kFp8E5M2 ? 57344.0f : 448.0f;
  // A calibrated per-tensor scale: the largest true value maps to the largest code.
  plane->kv_scale_ = spec.kv_format.dtype == KvDtype::kBf16 ? 1.0f : TrueKvAbsMax() / largest;
  for (int layer = 0; layer < spec.layers; ++layer) {
    KVSIM_ASSIGN_OR_RETURN(
        KvCacheStorage cache,
        KvCacheStorage::Allocate(backend, shape, plane->kv_scale_, plane->kv_scale_));
    // Poisoned: a slot no one wrote reads as NaN, so reading it cannot pass the reference.
    KVSIM_RETURN_IF_ERROR(cache.Fill(backend, 0xFF));
    plane->caches_.push_back(std::move(cache));
  }
  plane->softmax_scale_ = static_cast<float>(
      1.0 / std::sqrt(spec.attention == AttentionKind::kMla ? kMlaQkHeadDim : spec.head_dim));
  const int k = KernelGemmK(spec);
  const int n = spec.gemm_n;
  Prng prng(seed);
  std::vector<float> weights(static_cast<size_t>(k) * n);
  // The values of a loop of SampleGaussian, drawn on the host's cores (235 M at Llama-3.1-70B's
  // projection).
  FillScaledGaussians(prng, 0.05, weights.data(), weights.size(),
                      static_cast<int>(std::thread::hardware_concurrency()));
  Int4QuantizeOptions options;
  options.config.group_size = spec.group_size;
  KVSIM_ASSIGN_OR_RETURN(const Int4Matrix matrix, QuantizeInt4Matrix(weights, k, n, options));
  KVSIM_ASSIGN_OR_RETURN(const Int4PackedWeights packed, PackInt4(matrix));
  KVSIM_ASSIGN_OR_RETURN(plane->weights_, UploadInt4Weights(backend, packed));
  plane->weights_dequantized_ = DequantizeInt4Matrix(matrix);
  plane->outputs_.resize(static_cast<size_t>(spec.layers));
  return plane;
}

KernelDataPlane::KernelDataPlane(const KernelSpec& spec, int page_size, Backend& backend,
                                 OracleAuditor oracle)
    : spec_(spec), page_size_(page_size), backend_(&backend), oracle_(std::move(oracle)) {
  counts_.enabled = true;
}

void KernelDataPlane::OnAllocate(int32_t page, PageHolder holder) {
  oracle_.OnAllocate(page, holder);
}
void KernelDataPlane::OnShare(int32_t page, PageHolder holder) { oracle_.OnShare(page, holder); }
void KernelDataPlane::OnRelease(int32_t page, PageHolder holder) {
  oracle_.OnRelease(page, holder);
}

void KernelDataPlane::Forget(int32_t slot, int64_t request) {
  oracle_.Forget(slot, request);
  SlotRecord& record = RecordOf(slot);
  for (const std::vector<double>& rows : record.k)
    cached_values_ -= static_cast<int64_t>(rows.size());
  for (const std::vector<double>& rows : record.v)
    cached_values_ -= static_cast<int64_t>(rows.size());
  record = SlotRecord();
}

void KernelDataPlane::AddTotals(RunReport& report) const {
  // A disaggregated deployment has a data plane per serving instance: their counts add up.
  KernelCounts& k = report.kernel;
  k.enabled = true;
  k.appended_tokens += counts_.appended_tokens;
  k.append_errors += counts_.append_errors;
  k.decode_rows += counts_.decode_rows;
  k.decode_errors += counts_.decode_errors;
  k.outputs_checked += counts_.outputs_checked;
  k.outputs_outside_bound += counts_.outputs_outside_bound;
  k.worst_ratio = std::max(k.worst_ratio, counts_.worst_ratio);
  k.gemm_outputs_checked += counts_.gemm_outputs_checked;
  k.gemm_outside_bound += counts_.gemm_outside_bound;
  k.gemm_worst_ratio = std::max(k.gemm_worst_ratio, counts_.gemm_worst_ratio);
  k.rewrites_checked += counts_.rewrites_checked;
  k.rewrites_differing += counts_.rewrites_differing;
  k.append_launches += counts_.append_launches;
  for (size_t p = 0; p < 2; ++p) {
    k.decode_launches[p] += counts_.decode_launches[p];
    k.gemm_launches[p] += counts_.gemm_launches[p];
  }
}

KernelDataPlane::SlotRecord& KernelDataPlane::RecordOf(int32_t slot) {
  if (static_cast<size_t>(slot) >= records_.size()) records_.resize(static_cast<size_t>(slot) + 1);
  return records_[static_cast<size_t>(slot)];
}

void KernelDataPlane::ReferenceRow(uint64_t content, int layer, int kv_head, bool value_row,
                                   std::vector<double>& stored) const {
  const bool mla = spec_.attention == AttentionKind::kMla;
  const int dim = spec_.head_dim;
  float row[kMlaHeadDim];
  for (int d = 0; d < dim; ++d) row[d] = TrueKv(content, layer, kv_head, d, value_row);
  stored.resize(static_cast<size_t>(dim));
  ReferenceStoredRow(row, dim, mla ? kMlaRopeValues : 0, spec_.kv_format, kv_scale_, stored.data());
}

void KernelDataPlane::ReferenceKv(int32_t slot, const std::vector<uint64_t>& contents, int32_t end,
                                  int layer, int kv_head, reference::DequantizedKv& kv) {
  const bool mla = spec_.attention == AttentionKind::kMla;
  const int heads = mla ? 1 : spec_.kv_heads;
  const int dim = spec_.head_dim;
  const int v_dim = KernelValueDim(spec_);
  SlotRecord& record = RecordOf(slot);
  // Rows are cached while the cache stays within its bound; a context beyond it is recomputed
  // at every check instead, trading time for memory.
  const int64_t per_position = int64_t{spec_.layers} * heads * dim * (mla ? 1 : 2);
  const int64_t more = std::max<int64_t>(0, end - record.cached_positions) * per_position;
  std::vector<double> stored;
  if (cached_values_ + more <= kMaxCachedReferenceValues) {
    if (record.k.empty()) {
      record.k.resize(static_cast<size_t>(spec_.layers));
      record.v.resize(static_cast<size_t>(spec_.layers));
    }
    for (int32_t p = record.cached_positions; p < end; ++p) {
      for (int l = 0; l < spec_.layers; ++l) {
        for (int h = 0; h < heads; ++h) {
          ReferenceRow(contents[static_cast<size_t>(p)], l, h, false, stored);
          record.k[static_cast<size_t>(l)].insert(record.k[static_cast<size_t>(l)].end(),
                                                  stored.begin(), stored.end());
          if (mla) continue;
          ReferenceRow(contents[static_cast<size_t>(p)], l, h, true, stored);
          record.v[static_cast<size_t>(l)].insert(record.v[static_cast<size_t>(l)].end(),
                                                  stored.begin(), stored.end());
        }
      }
    }
    cached_values_ += more;
    record.cached_positions = std::max(record.cached_positions, end);
  }
  kv.k.resize(end, dim);
  kv.v.resize(end, v_dim);
  for (int32_t p = 0; p < end; ++p) {
    if (p < record.cached_positions) {
      const size_t at = (static_cast<size_t>(p) * heads + static_cast<size_t>(kv_head)) * dim;
      const std::vector<double>& k = record.k[static_cast<size_t>(layer)];
      const std::vector<double>& v = mla ? k : record.v[static_cast<size_t>(layer)];
      for (int d = 0; d < dim; ++d) kv.k(p, d) = k[at + static_cast<size_t>(d)];
      for (int d = 0; d < v_dim; ++d) kv.v(p, d) = v[at + static_cast<size_t>(d)];
      continue;
    }
    ReferenceRow(contents[static_cast<size_t>(p)], layer, kv_head, false, stored);
    for (int d = 0; d < dim; ++d) kv.k(p, d) = stored[static_cast<size_t>(d)];
    if (!mla) ReferenceRow(contents[static_cast<size_t>(p)], layer, kv_head, true, stored);
    for (int d = 0; d < v_dim; ++d) kv.v(p, d) = stored[static_cast<size_t>(d)];
  }
}

Result<uint64_t> KernelDataPlane::StoredBits(int layer, int32_t page, int32_t page_slot) {
  KvCache view = caches_[static_cast<size_t>(layer)].view();
  const int64_t row = KvRowBytes(view.shape) * view.shape.num_kv_heads;
  const int64_t token = int64_t{page} * page_size_ + page_slot;
  uint64_t hash = 0;
  row_bytes_.resize(static_cast<size_t>(row));
  KVSIM_RETURN_IF_ERROR(backend_->CopyToHost(row_bytes_.data(), *view.k_pages,
                                             static_cast<size_t>(token * row), row_bytes_.size()));
  hash = HashBytes(hash, row_bytes_);
  if (view.v_pages != nullptr) {
    KVSIM_RETURN_IF_ERROR(backend_->CopyToHost(
        row_bytes_.data(), *view.v_pages, static_cast<size_t>(token * row), row_bytes_.size()));
    hash = HashBytes(hash, row_bytes_);
  }
  for (DeviceBuffer* scales : {view.k_token_scales, view.v_token_scales}) {
    if (scales == nullptr) continue;
    const size_t bytes = sizeof(float) * static_cast<size_t>(view.shape.num_kv_heads);
    row_bytes_.resize(bytes);
    KVSIM_RETURN_IF_ERROR(backend_->CopyToHost(row_bytes_.data(), *scales,
                                               static_cast<size_t>(token) * bytes, bytes));
    hash = HashBytes(hash, row_bytes_);
  }
  return hash;
}

Status KernelDataPlane::Writes(const StepAccess& access, IntegrityCounts& counts,
                               std::vector<Finding>& findings) {
  KVSIM_RETURN_IF_ERROR(oracle_.Writes(access, counts, findings));
  return Append(access, findings);
}

Status KernelDataPlane::Append(const StepAccess& access, std::vector<Finding>& findings) {
  record_.step = access.step;
  SelectRows(*access.table, *access.proceed, step_);
  if (step_.rows.empty()) return Status::Ok();
  const bool mla = spec_.attention == AttentionKind::kMla;
  const int heads = mla ? 1 : spec_.kv_heads;
  const int dim = spec_.head_dim;
  token_request_.clear();
  token_position_.clear();
  token_slot_.clear();
  std::vector<uint64_t> token_contents;
  for (size_t b = 0; b < step_.rows.size(); ++b) {
    const ScheduledRow& row = (*access.rows)[step_.rows[b]];
    const SimRequest& request = access.scheduler->request(row.slot);
    const std::vector<uint64_t>& contents =
        oracle_.Contents(request, row.slot, row.first_token + row.tokens);
    for (int32_t p = row.first_token; p < row.first_token + row.tokens; ++p) {
      token_request_.push_back(static_cast<int32_t>(b));
      token_position_.push_back(p);
      token_slot_.push_back(row.slot);
      token_contents.push_back(contents[static_cast<size_t>(p)]);
    }
  }
  const size_t tokens = token_request_.size();
  DeviceBuffer table, request_buffer, position_buffer, k_buffer, v_buffer, status_buffer;
  {
    Stopwatch timer(wall_.kernels_s);
    KVSIM_RETURN_IF_ERROR(Put(*backend_, step_.table, table));
    KVSIM_RETURN_IF_ERROR(Put(*backend_, token_request_, request_buffer));
    KVSIM_RETURN_IF_ERROR(Put(*backend_, token_position_, position_buffer));
    KVSIM_ASSIGN_OR_RETURN(status_buffer, backend_->Allocate(tokens * sizeof(int32_t)));
  }
  for (int layer = 0; layer < spec_.layers; ++layer) {
    k_new_.clear();
    v_new_.clear();
    for (uint64_t content : token_contents) {
      for (int head = 0; head < heads; ++head) {
        for (int d = 0; d < dim; ++d) {
          k_new_.push_back(ExactBf16(TrueKv(content, layer, head, d, false)));
          if (!mla) v_new_.push_back(ExactBf16(TrueKv(content, layer, head, d, true)));
        }
      }
    }
    AppendKvArgs args;
    args.cache = caches_[static_cast<size_t>(layer)].view();
    args.block_table = TableOf(table, step_);
    args.num_tokens = static_cast<int>(tokens);
    args.k_new = &k_buffer;
    args.v_new = mla ? nullptr : &v_buffer;
    args.token_request = &request_buffer;
    args.token_position = &position_buffer;
    args.token_status = &status_buffer;
    {
      Stopwatch timer(wall_.kernels_s);
      KVSIM_RETURN_IF_ERROR(Put(*backend_, k_new_, k_buffer));
      if (!mla) KVSIM_RETURN_IF_ERROR(Put(*backend_, v_new_, v_buffer));
      KVSIM_RETURN_IF_ERROR(AppendKv(*backend_, args));
      ++counts_.append_launches;
      KVSIM_ASSIGN_OR_RETURN(statuses_, Download<int32_t>(*backend_, status_buffer));
    }
    Stopwatch timer(wall_.reference_s);
    record_.statuses = HashBytes(record_.statuses, statuses_);
    for (size_t t = 0; t < tokens; ++t) {
      if (statuses_[t] != static_cast<int32_t>(KvAccessStatus::kOk)) {
        ++counts_.append_errors;
        continue;
      }
      ++counts_.appended_tokens;
      const int32_t position = token_position_[t];
      const size_t b = static_cast<size_t>(token_request_[t]);
      const int32_t page = step_.table[b * static_cast<size_t>(step_.stride) +
                                       static_cast<size_t>(position / page_size_)];
      KVSIM_ASSIGN_OR_RETURN(const uint64_t bits, StoredBits(layer, page, position % page_size_));
      ++record_.appended;
      record_.cache_bits = MixIds(record_.cache_bits, bits);
      SlotRecord& rows = RecordOf(token_slot_[t]);
      const size_t index = static_cast<size_t>(position) * static_cast<size_t>(spec_.layers) +
                           static_cast<size_t>(layer);
      // Hashes are stored plus one, so that zero marks a position never written.
      if (rows.stored_bits.size() <= index) rows.stored_bits.resize(index + 1, 0);
      if (rows.stored_bits[index] == 0) {
        rows.stored_bits[index] = bits | 1;
        continue;
      }
      ++counts_.rewrites_checked;
      if (rows.stored_bits[index] == (bits | 1)) continue;
      ++counts_.rewrites_differing;
      Finding finding;
      finding.kind = Finding::Kind::kRewriteDiffers;
      finding.step = access.step;
      finding.time_ns = access.now;
      finding.request = access.scheduler->request(token_slot_[t]).spec.id;
      finding.logical_page = position / page_size_;
      finding.page = page;
      finding.detail = "token " + std::to_string(position) + " of layer " + std::to_string(layer) +
                       " stored different bits than its first write";
      findings.push_back(std::move(finding));
    }
  }
  return Status::Ok();
}

Status KernelDataPlane::Reads(const StepAccess& access, IntegrityCounts& counts,
                              std::vector<Finding>& findings) {
  record_.step = access.step;
  const Status decoded = DecodeStep(access, counts, findings);
  if (step_log_ != nullptr && decoded.ok()) step_log_->push_back(KernelStepLine(pool_, record_));
  record_ = KernelStepRecord();
  return decoded;
}

Status KernelDataPlane::DecodeStep(const StepAccess& access, IntegrityCounts& counts,
                                   std::vector<Finding>& findings) {
  KVSIM_RETURN_IF_ERROR(oracle_.Reads(access, counts, findings));
  if (faults_ == nullptr || !faults_->On(FaultSite::kBatchCompositionNoise)) {
    return Decode(access, findings);
  }
  std::vector<size_t> going;
  for (size_t i = 0; i < access.proceed->size(); ++i) {
    if ((*access.proceed)[i]) going.push_back(i);
  }
  if (going.size() < 2 || !faults_->Fires(FaultSite::kBatchCompositionNoise)) {
    return Decode(access, findings);
  }
  faults_->Changed(FaultSite::kBatchCompositionNoise, {});
  // The negative control: the step's decode runs as two launches of half the batch each. The
  // kernel's splits follow the batch, so outputs round differently than in one launch, while
  // every page read is the right one: the checks must stay silent and the outputs within bound.
  std::vector<bool> first(access.proceed->size(), false);
  std::vector<bool> second(access.proceed->size(), false);
  for (size_t k = 0; k < going.size(); ++k)
    (k < going.size() / 2 ? first : second)[going[k]] = true;
  StepAccess half = access;
  half.proceed = &first;
  KVSIM_RETURN_IF_ERROR(Decode(half, findings));
  half.proceed = &second;
  return Decode(half, findings);
}

void KernelDataPlane::CheckOutputs(const StepAccess& access, size_t b, int layer, KernelPath path,
                                   const DecodeSplits& decode_splits,
                                   const std::vector<uint16_t>& out,
                                   std::vector<Finding>& findings) {
  const ScheduledRow& row = (*access.rows)[step_.rows[b]];
  const SimRequest& request = access.scheduler->request(row.slot);
  const int32_t end = row.first_token + row.tokens;
  const std::vector<uint64_t>& contents = oracle_.Contents(request, row.slot, end);
  const bool mla = spec_.attention == AttentionKind::kMla;
  const int heads = mla ? 1 : spec_.kv_heads;
  const int dim = spec_.head_dim;
  const int v_dim = KernelValueDim(spec_);
  const int group = spec_.q_heads / heads;
  // The simple path's bound follows the splits it ran; the fast path's is its tiling's worst case
  // (tensor cores on CUDA, its CPU twin's fp32 order on the CPU).
  DecodeRoundingModel model = DecodeRoundingModelFor(decode_splits, dim, end);
  reference::DecodeArithmetic arithmetic = reference::DecodeArithmetic::kFp32;
  if (path == KernelPath::kFast) {
    const reference::BoundModels fast = reference::WorstCasePathBound(
        spec_.attention, spec_.kv_format, FastMlaMath::kAuto, KernelPath::kFast, dim, end,
        backend_->kind() == BackendKind::kCuda);
    model = fast.out;
    arithmetic = fast.arithmetic;
  }
  const uint64_t query_content = contents[static_cast<size_t>(end - 1)];
  bool reported = false;
  reference::DequantizedKv kv;
  for (int kv_head = 0; kv_head < heads; ++kv_head) {
    ReferenceKv(row.slot, contents, end, layer, kv_head, kv);
    for (int h = kv_head * group; h < (kv_head + 1) * group; ++h) {
      Eigen::VectorXd q(dim);
      for (int d = 0; d < dim; ++d) q(d) = TrueQuery(query_content, layer, h, d);
      const reference::DecodeReference expected = reference::ReferenceDecode(
          kv, q, softmax_scale_, model, AttentionOutputDtype::kBf16, arithmetic);
      const size_t base = (b * static_cast<size_t>(spec_.q_heads) + static_cast<size_t>(h)) *
                          static_cast<size_t>(v_dim);
      for (int i = 0; i < v_dim; ++i) {
        const double got = Bf16Value(out[base + static_cast<size_t>(i)]);
        const double ratio = std::fabs(got - expected.out(i)) / expected.tolerance(i);
        ++counts_.outputs_checked;
        ++record_.checked;
        // A NaN (a non-finite output) is outside the bound below: the record shows it as infinity.
        record_.worst = std::max(record_.worst, std::isnan(ratio) ? HUGE_VAL : ratio);
        if (ratio <= 1.0) {
          counts_.worst_ratio = std::max(counts_.worst_ratio, ratio);
          continue;
        }
        ++counts_.outputs_outside_bound;
        if (reported) continue;
        reported = true;
        Finding finding;
        finding.kind = Finding::Kind::kOutputOutsideBound;
        finding.step = access.step;
        finding.time_ns = access.now;
        finding.request = request.spec.id;
        finding.detail = "layer " + std::to_string(layer) + " head " + std::to_string(h) +
                         " value " + std::to_string(i) + ": got " + std::to_string(got) +
                         ", reference " + std::to_string(expected.out(i)) + ", bound " +
                         std::to_string(expected.tolerance(i));
        findings.push_back(std::move(finding));
      }
    }
  }
}

Status KernelDataPlane::Decode(const StepAccess& access, std::vector<Finding>& findings) {
  SelectRows(*access.table, *access.proceed, step_);
  if (step_.rows.empty()) return Status::Ok();
  const size_t rows = step_.rows.size();
  const int dim = spec_.head_dim;
  const int v_dim = KernelValueDim(spec_);
  const bool check = reads_seen_++ % spec_.check_every == 0;
  DeviceBuffer table, seq_buffer, q_buffer, out_buffer, status_buffer;
  {
    Stopwatch timer(wall_.kernels_s);
    KVSIM_RETURN_IF_ERROR(Put(*backend_, step_.table, table));
    KVSIM_RETURN_IF_ERROR(Put(*backend_, step_.seq_lens, seq_buffer));
    KVSIM_ASSIGN_OR_RETURN(
        out_buffer, backend_->Allocate(rows * static_cast<size_t>(spec_.q_heads * v_dim * 2)));
    KVSIM_ASSIGN_OR_RETURN(status_buffer, backend_->Allocate(rows * sizeof(int32_t)));
  }
  std::vector<bool> ok(rows, true);
  for (int layer = 0; layer < spec_.layers; ++layer) {
    q_.clear();
    for (size_t b = 0; b < rows; ++b) {
      const ScheduledRow& row = (*access.rows)[step_.rows[b]];
      const int32_t end = row.first_token + row.tokens;
      const uint64_t content = oracle_.Contents(access.scheduler->request(row.slot), row.slot,
                                                end)[static_cast<size_t>(end - 1)];
      for (int h = 0; h < spec_.q_heads; ++h) {
        for (int d = 0; d < dim; ++d) q_.push_back(ExactBf16(TrueQuery(content, layer, h, d)));
      }
    }
    DecodeAttentionArgs args;
    args.cache = caches_[static_cast<size_t>(layer)].view();
    args.block_table = TableOf(table, step_);
    args.seq_lens = &seq_buffer;
    args.q = &q_buffer;
    args.num_q_heads = spec_.q_heads;
    args.softmax_scale = softmax_scale_;
    args.out_dtype = AttentionOutputDtype::kBf16;
    args.out = &out_buffer;
    args.request_status = &status_buffer;
    args.launch.path = spec_.path;  // kernel.path: simple or fast
    {
      Stopwatch timer(wall_.kernels_s);
      KVSIM_RETURN_IF_ERROR(Put(*backend_, q_, q_buffer));
      KVSIM_RETURN_IF_ERROR(DecodeAttention(*backend_, args));
      // Counted, and bounded below, by the path the call ran.
      ++counts_.decode_launches[static_cast<size_t>(args.launch.path)];
      KVSIM_ASSIGN_OR_RETURN(outputs_[static_cast<size_t>(layer)],
                             Download<uint16_t>(*backend_, out_buffer));
      KVSIM_ASSIGN_OR_RETURN(statuses_, Download<int32_t>(*backend_, status_buffer));
    }
    const DecodeSplits decode_splits = DecodeSplitsFor(args);
    Stopwatch timer(wall_.reference_s);
    record_.statuses = HashBytes(record_.statuses, statuses_);
    const size_t row_values = static_cast<size_t>(spec_.q_heads) * static_cast<size_t>(v_dim);
    for (size_t b = 0; b < rows; ++b) {
      if (statuses_[b] != static_cast<int32_t>(KvAccessStatus::kOk)) {
        ++counts_.decode_errors;
        ok[b] = false;
        continue;
      }
      ++counts_.decode_rows;
      ++record_.decode_rows;
      // Only rows that ran (a refused row's output is whatever the buffer held), and only for a
      // log: the outputs' bytes are hashed nowhere else.
      if (step_log_ != nullptr) {
        record_.outputs =
            HashBytes(record_.outputs, outputs_[static_cast<size_t>(layer)].data() + b * row_values,
                      row_values * sizeof(uint16_t));
      }
      if (check) {
        CheckOutputs(access, b, layer, args.launch.path, decode_splits,
                     outputs_[static_cast<size_t>(layer)], findings);
      }
    }
  }
  std::vector<size_t> ok_rows;
  for (size_t b = 0; b < rows; ++b) {
    if (ok[b]) ok_rows.push_back(b);
  }
  if (!check || ok_rows.empty()) return Status::Ok();
  return Project(access, ok_rows, findings);
}

Status KernelDataPlane::Project(const StepAccess& access, const std::vector<size_t>& ok_rows,
                                std::vector<Finding>& findings) {
  const int k = KernelGemmK(spec_);
  const int n = spec_.gemm_n;
  const int m = static_cast<int>(ok_rows.size());
  const std::vector<uint16_t>& out = outputs_.back();
  std::vector<uint16_t> x;
  x.reserve(static_cast<size_t>(m) * static_cast<size_t>(k));
  if (spec_.gemm_k == 0) {
    for (size_t b : ok_rows) {
      x.insert(x.end(), out.begin() + static_cast<std::ptrdiff_t>(b * static_cast<size_t>(k)),
               out.begin() + static_cast<std::ptrdiff_t>((b + 1) * static_cast<size_t>(k)));
    }
  } else {
    // At the model's shape the projection takes the hidden state, not the attention output: an
    // activation derived from the row's last token (its content id), exact in bf16, in the
    // generator's channel layout (a head of 128 channels per 128 inputs), past the layers' ids.
    for (size_t b : ok_rows) {
      const ScheduledRow& row = (*access.rows)[step_.rows[b]];
      const int32_t end = row.first_token + row.tokens;
      const uint64_t content = oracle_.Contents(access.scheduler->request(row.slot), row.slot,
                                                end)[static_cast<size_t>(end - 1)];
      for (int i = 0; i < k; ++i) {
        x.push_back(ExactBf16(TrueQuery(content, spec_.layers, i / 128, i % 128)));
      }
    }
  }
  DeviceBuffer x_buffer, y_buffer;
  std::vector<uint16_t> y;
  {
    Stopwatch timer(wall_.kernels_s);
    KVSIM_RETURN_IF_ERROR(Put(*backend_, x, x_buffer));
    KVSIM_ASSIGN_OR_RETURN(y_buffer, backend_->Allocate(static_cast<size_t>(m) * n * 2));
    Int4GemmArgs args;
    args.m = m;
    args.activations = &x_buffer;
    args.weights = &weights_;
    args.output = &y_buffer;
    args.launch.path = spec_.path;
    KVSIM_RETURN_IF_ERROR(Int4Gemm(*backend_, args));
    // The fast path serves m <= kFastGemmMaxM; a larger batch runs the simple kernel.
    const bool fast = spec_.path == KernelPath::kFast && m <= kFastGemmMaxM;
    ++counts_.gemm_launches[fast ? 1 : 0];
    KVSIM_ASSIGN_OR_RETURN(y, Download<uint16_t>(*backend_, y_buffer));
  }
  Stopwatch timer(wall_.reference_s);
  const GemmReference reference = ReferenceGemm(x, m, k, weights_dequantized_, n, {});
  const GemmCheckResult result =
      CheckGemmOutput(y, reference, k,
                      backend_->kind() == BackendKind::kCuda || spec_.path == KernelPath::kFast
                          ? Accumulation::kTensorCores
                          : Accumulation::kIeeeFp32);
  counts_.gemm_outputs_checked += int64_t{m} * n;
  if (step_log_ != nullptr) record_.gemm_outputs = HashBytes(record_.gemm_outputs, y);
  record_.gemm_checked += int64_t{m} * n;
  // The check's worst ratio leaves out non-finite outputs, which it counts as violations: a
  // violation the ratio does not show is one of those, recorded as infinity.
  record_.gemm_worst =
      std::max(record_.gemm_worst,
               result.violations > 0 && result.worst_ratio <= 1.0 ? HUGE_VAL : result.worst_ratio);
  counts_.gemm_outside_bound += result.violations;
  counts_.gemm_worst_ratio = std::max(counts_.gemm_worst_ratio, result.worst_ratio);
  if (result.violations > 0) {
    Finding finding;
    finding.kind = Finding::Kind::kOutputOutsideBound;
    finding.step = access.step;
    finding.time_ns = access.now;
    finding.detail = "INT4 projection: " + result.report;
    findings.push_back(std::move(finding));
  }
  return Status::Ok();
}

}  // namespace kvsim::sim
