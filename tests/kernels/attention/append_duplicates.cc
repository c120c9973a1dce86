// Duplicate-slot append cases and their expected outcome.
#include "tests/kernels/attention/append_duplicates.h"

#include <gtest/gtest.h>

#include <map>
#include <utility>

#include "kernels/attention/append_kv.h"
#include "kernels/attention/kv_cache.h"
#include "kernels/attention/kv_row.h"
#include "kernels/formats.h"

namespace kvsim::testing {
namespace {

constexpr int kMaxPagesPerRequest = 3;

int64_t ValuesPerToken(const KvCacheShape& shape) {
  return int64_t{shape.num_kv_heads} * shape.head_dim;
}

Result<std::vector<uint8_t>> Bytes(Backend& backend, const DeviceBuffer* buffer) {
  if (buffer == nullptr) return std::vector<uint8_t>();
  return Download<uint8_t>(backend, *buffer);
}

}  // namespace

DuplicateAppendCase MakeDuplicateAppendCase(const KvCacheShape& shape, int tokens, Prng& prng) {
  DuplicateAppendCase c;
  c.shape = shape;
  c.batch = 2;
  c.max_pages_per_request = kMaxPagesPerRequest;
  // Row 1 shares row 0's last page as its first (a shared prefix page gone wrong), and holds an
  // id outside the pool.
  c.block_table = {0, 1, 2, 2, shape.num_pages, 1};
  const int positions = kMaxPagesPerRequest * shape.page_size;
  for (int t = 0; t < tokens; ++t) {
    int32_t request = static_cast<int32_t>(prng.below(2));
    // A few positions only, so that most slots are named several times.
    int32_t position = static_cast<int32_t>(prng.below(static_cast<uint64_t>(positions)));
    if (prng.chance(1, 8)) {  // out of range: a bad row or position
      if (prng.chance(1, 2)) {
        request = prng.chance(1, 2) ? -1 : 2;
      } else {
        position = prng.chance(1, 2) ? -1 : positions;
      }
    }
    c.requests.push_back(request);
    c.positions.push_back(position);
  }
  const auto draw = [&](std::vector<uint16_t>& values) {
    for (int64_t i = 0; i < int64_t{tokens} * ValuesPerToken(shape); ++i) {
      const float magnitude = static_cast<float>(1 + prng.below(1000)) / 64.0f;
      const float sign = prng.chance(1, 2) ? -1.0f : 1.0f;
      values.push_back(EncodeBf16(sign * magnitude * static_cast<float>(1 + prng.below(4))));
    }
  };
  draw(c.k);
  if (shape.kind == AttentionKind::kGqa) draw(c.v);
  return c;
}

std::vector<int32_t> ExpectedStatuses(const DuplicateAppendCase& c) {
  const int page_size = c.shape.page_size;
  std::vector<int32_t> status(c.requests.size());
  std::map<std::pair<int32_t, int32_t>, size_t> last;  // (page, slot) -> last token naming it
  for (size_t t = 0; t < c.requests.size(); ++t) {
    const int32_t request = c.requests[t];
    const int32_t position = c.positions[t];
    if (request < 0 || request >= c.batch) {
      status[t] = static_cast<int32_t>(KvAccessStatus::kRequestOutOfRange);
    } else if (position < 0 || position >= c.max_pages_per_request * page_size) {
      status[t] = static_cast<int32_t>(KvAccessStatus::kPositionOutOfRange);
    } else {
      const int32_t page = c.block_table[request * c.max_pages_per_request + position / page_size];
      if (page < 0 || page >= c.shape.num_pages) {
        status[t] = static_cast<int32_t>(KvAccessStatus::kPageOutOfRange);
        continue;
      }
      const auto key = std::make_pair(page, position % page_size);
      const auto previous = last.find(key);
      if (previous != last.end()) {
        status[previous->second] = static_cast<int32_t>(KvAccessStatus::kSuperseded);
      }
      last[key] = t;
      status[t] = static_cast<int32_t>(KvAccessStatus::kOk);
    }
  }
  return status;
}

std::vector<int> Winners(const DuplicateAppendCase& c) {
  std::vector<int> winners;
  const std::vector<int32_t> status = ExpectedStatuses(c);
  for (size_t t = 0; t < status.size(); ++t) {
    if (status[t] == static_cast<int32_t>(KvAccessStatus::kOk))
      winners.push_back(static_cast<int>(t));
  }
  return winners;
}

std::vector<int> AllTokens(int tokens) {
  std::vector<int> all(static_cast<size_t>(tokens));
  for (int t = 0; t < tokens; ++t) all[static_cast<size_t>(t)] = t;
  return all;
}

std::vector<KvCacheShape> DuplicateShapes(int page_size) {
  return {GqaCacheShape(4, page_size, 2, 64, {KvDtype::kBf16, KvScaling::kNone}),
          GqaCacheShape(4, page_size, 2, 64, {KvDtype::kFp8E4M3, KvScaling::kPerTensor}),
          GqaCacheShape(4, page_size, 1, 128, {KvDtype::kFp8E5M2, KvScaling::kPerTokenHead}),
          MlaCacheShape(4, page_size, {KvDtype::kFp8E4M3, KvScaling::kPerTensor}),
          MlaCacheShape(4, page_size, {KvDtype::kFp8E4M3, KvScaling::kMlaBlock128})};
}

int ExpectSameOutcome(const AppendOutcome& actual, const AppendOutcome& expected,
                      const std::string& where) {
  EXPECT_EQ(actual.status, expected.status) << where;
  EXPECT_EQ(actual.k_pages, expected.k_pages) << where;
  EXPECT_EQ(actual.v_pages, expected.v_pages) << where;
  EXPECT_EQ(actual.k_token_scales, expected.k_token_scales) << where;
  EXPECT_EQ(actual.v_token_scales, expected.v_token_scales) << where;
  int superseded = 0;
  for (int32_t status : actual.status) {
    superseded += status == static_cast<int32_t>(KvAccessStatus::kSuperseded);
  }
  return superseded;
}

std::string DescribeCase(const DuplicateAppendCase& c) {
  return KvFormatName(c.shape.format) + (c.shape.kind == AttentionKind::kMla ? " MLA" : " GQA") +
         ", page size " + std::to_string(c.shape.page_size) + ", " +
         std::to_string(c.requests.size()) + " tokens";
}

Result<AppendOutcome> RunAppend(Backend& backend, const DuplicateAppendCase& c,
                                const std::vector<int>& tokens, const LaunchOptions& launch) {
  KVSIM_ASSIGN_OR_RETURN(
      KvCacheStorage storage,
      KvCacheStorage::Allocate(backend, c.shape, 0.75f,
                               c.shape.kind == AttentionKind::kMla ? 0.75f : 1.25f));
  KVSIM_RETURN_IF_ERROR(storage.Fill(backend, 0xA5));
  const int64_t per_token = ValuesPerToken(c.shape);
  std::vector<uint16_t> k;
  std::vector<uint16_t> v;
  std::vector<int32_t> requests;
  std::vector<int32_t> positions;
  for (int t : tokens) {
    k.insert(k.end(), c.k.begin() + t * per_token, c.k.begin() + (t + 1) * per_token);
    if (!c.v.empty()) {
      v.insert(v.end(), c.v.begin() + t * per_token, c.v.begin() + (t + 1) * per_token);
    }
    requests.push_back(c.requests[t]);
    positions.push_back(c.positions[t]);
  }
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer table, Upload(backend, c.block_table));
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer k_new, Upload(backend, k));
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer v_new, Upload(backend, v.empty() ? k : v));
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer request_buffer, Upload(backend, requests));
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer position_buffer, Upload(backend, positions));
  KVSIM_ASSIGN_OR_RETURN(DeviceBuffer status, backend.Allocate(tokens.size() * sizeof(int32_t)));
  KVSIM_RETURN_IF_ERROR(backend.Fill(status, 0xFF));
  AppendKvArgs args;
  args.cache = storage.view();
  args.block_table = {&table, c.batch, c.max_pages_per_request, c.max_pages_per_request};
  args.num_tokens = static_cast<int>(tokens.size());
  args.k_new = &k_new;
  args.v_new = c.v.empty() ? nullptr : &v_new;
  args.token_request = &request_buffer;
  args.token_position = &position_buffer;
  args.token_status = &status;
  args.launch = launch;
  // No tokens (a case whose every token is out of range has no winners): the pools stay poisoned.
  if (!tokens.empty()) KVSIM_RETURN_IF_ERROR(AppendKv(backend, args));
  KVSIM_RETURN_IF_ERROR(backend.Synchronize());
  AppendOutcome outcome;
  const KvCache view = storage.view();
  KVSIM_ASSIGN_OR_RETURN(outcome.status, Download<int32_t>(backend, status));
  KVSIM_ASSIGN_OR_RETURN(outcome.k_pages, Bytes(backend, view.k_pages));
  KVSIM_ASSIGN_OR_RETURN(outcome.v_pages, Bytes(backend, view.v_pages));
  KVSIM_ASSIGN_OR_RETURN(outcome.k_token_scales, Bytes(backend, view.k_token_scales));
  KVSIM_ASSIGN_OR_RETURN(outcome.v_token_scales, Bytes(backend, view.v_token_scales));
  return outcome;
}

}  // namespace kvsim::testing
