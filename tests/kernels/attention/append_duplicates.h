// Appends in which several tokens name one slot (through one block-table row, or two rows that
// share pages), mixed with tokens that are out of range, for the duplicate-slot rule of
// append_kv (append_kv.h): the last token naming a slot is written whole, earlier ones are
// kSuperseded and write nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/prng.h"
#include "base/status.h"
#include "kernels/attention/kv_format.h"
#include "kernels/backend.h"
#include "kernels/launch_options.h"

namespace kvsim::testing {

struct DuplicateAppendCase {
  KvCacheShape shape;
  int32_t batch = 0;
  int32_t max_pages_per_request = 0;
  std::vector<int32_t> block_table;  // [batch, max_pages_per_request]; rows share pages
  std::vector<int32_t> requests;     // per token
  std::vector<int32_t> positions;    // per token
  std::vector<uint16_t> k;           // bf16 [tokens, heads, head_dim]
  std::vector<uint16_t> v;           // GQA: as k; MLA: empty
};

// A case of `tokens` tokens over a few slots of a small pool (page sizes 1 to 5), with random
// finite bf16 values of varied magnitude, and about one token in eight out of range.
DuplicateAppendCase MakeDuplicateAppendCase(const KvCacheShape& shape, int tokens, Prng& prng);

// The statuses the rule gives, derived from the case alone: the range checks of append_kv.h,
// then, per (physical page, slot), kSuperseded for every located token but the last.
std::vector<int32_t> ExpectedStatuses(const DuplicateAppendCase& c);

// What one append left: the statuses and every pool's bytes (the pools poisoned with 0xA5 first).
struct AppendOutcome {
  std::vector<int32_t> status;
  std::vector<uint8_t> k_pages;
  std::vector<uint8_t> v_pages;
  std::vector<uint8_t> k_token_scales;
  std::vector<uint8_t> v_token_scales;
};

// Appends the tokens of `c` whose indices are in `tokens` (in that order) on `backend`; with no
// tokens, only poisons the pools.
Result<AppendOutcome> RunAppend(Backend& backend, const DuplicateAppendCase& c,
                                const std::vector<int>& tokens, const LaunchOptions& launch = {});

// The indices of the tokens whose expected status is kOk, in call order.
std::vector<int> Winners(const DuplicateAppendCase& c);

// 0, 1, ..., tokens - 1.
std::vector<int> AllTokens(int tokens);

// A shape of every cache format with `page_size`, small enough (4 pages) that a few tokens name
// each slot many times.
std::vector<KvCacheShape> DuplicateShapes(int page_size);

// Expects equal statuses and pools (gtest failures naming `where`); returns how many tokens of
// `actual` were superseded.
int ExpectSameOutcome(const AppendOutcome& actual, const AppendOutcome& expected,
                      const std::string& where);

// "fp8_e4m3, page size 3, 40 tokens".
std::string DescribeCase(const DuplicateAppendCase& c);

}  // namespace kvsim::testing
