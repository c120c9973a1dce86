// RequestTrace: the requests of a recorded serving trace, read from its file and kept compactly:
// an arrival time and two lengths per request and, where the trace has them, the ids of its
// prompt's blocks in one shared array. Two formats: the Azure LLM inference trace's CSV
// (TIMESTAMP, ContextTokens, GeneratedTokens) and the Mooncake trace's JSON lines (timestamp in
// ms, input_length, output_length, hash_ids of 512-token blocks). Reading stops after the rows
// asked for, so the first N requests of a long trace cost N rows. Every error names the file and
// line, and the field, and says what is allowed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "base/status.h"
#include "sim/engine/event_queue.h"

namespace kvsim::sim {

enum class TraceFormat { kAzureCsv, kMooncakeJsonl };
// "azure_csv", "mooncake_jsonl".
const char* TraceFormatName(TraceFormat format);
Result<TraceFormat> ParseTraceFormat(const std::string& text);

// Tokens of one Mooncake block: a request's prompt is its hash ids' blocks, the last one partial.
inline constexpr int32_t kTraceBlockTokens = 512;
// Bounds on what a trace may hold: requests, one line's bytes, and one request's tokens.
inline constexpr int64_t kMaxTraceRequests = int64_t{1} << 26;
inline constexpr size_t kMaxTraceLineBytes = size_t{1} << 20;
inline constexpr int32_t kMaxTraceTokens = 1 << 24;
// A hash id per block of the longest prompt, at most.
inline constexpr int32_t kMaxTraceBlocks = kMaxTraceTokens / kTraceBlockTokens;
static_assert(kMaxTraceTokens % kTraceBlockTokens == 0, "whole blocks fill the longest prompt");
// The longest a trace may last, first request to last (about 13 days), and the most its times
// may be stretched: the product stays far inside a SimNs.
inline constexpr SimNs kMaxTraceSpanNs = SimNs{1} << 50;
inline constexpr double kMaxTraceTimeScale = 1000;
static_assert(kMaxTraceSpanNs * 1000 < (SimNs{1} << 62), "a stretched trace time fits a SimNs");
// Hash ids one trace holds in all (2 GiB of them), so that a request's first id fits an int32.
inline constexpr size_t kMaxTraceBlockIds = size_t{1} << 28;

// One recorded request. A length of 0 in the file is read as 1: a request has at least one
// prompt token and produces at least its first output token (Vidur clips the same way).
struct TraceRequest {
  SimNs time_ns = 0;  // since the trace's first request; never decreasing
  int32_t prompt_tokens = 1;
  int32_t output_tokens = 1;
  int32_t line = 0;         // the line of the file it was read from, for messages
  int32_t first_block = 0;  // its hash ids: blocks_[first_block, first_block + block_count)
  int32_t block_count = 0;  // ceil(prompt_tokens / kTraceBlockTokens) for Mooncake; 0 for Azure
};

class RequestTrace {
 public:
  // Reads at most `max_requests` requests (0: all) from `in`, whose text is the file `path`.
  static Result<RequestTrace> Read(std::istream& in, const std::string& path, TraceFormat format,
                                   int64_t max_requests);
  // Opens and reads the file `path`.
  static Result<RequestTrace> Load(const std::string& path, TraceFormat format,
                                   int64_t max_requests);

  const std::string& path() const { return path_; }
  TraceFormat format() const { return format_; }
  size_t size() const { return requests_.size(); }
  const TraceRequest& request(size_t index) const { return requests_[index]; }
  // The hash id of block `block` of request `index`'s prompt (Mooncake only).
  uint64_t block_id(size_t index, int32_t block) const;
  // "traces/x.csv:17": where request `index` was read.
  std::string Where(size_t index) const;

 private:
  RequestTrace(std::string path, TraceFormat format) : path_(std::move(path)), format_(format) {}

  std::string path_;
  TraceFormat format_;
  std::vector<TraceRequest> requests_;
  std::vector<uint64_t> blocks_;  // every Mooncake request's hash ids, request after request
};

// How a request longer than a limit is shortened (Vidur's two trace readers).
enum class ClipRule {
  // The excess comes off prompt and output in proportion to their lengths, each share rounded up
  // (Vidur's trace length generator, used with a replacement arrival process).
  kProportional,
  // The excess comes off the prompt (Vidur's trace replay generator).
  kPrompt,
};
// "proportional", "prompt".
const char* ClipRuleName(ClipRule rule);

struct ClippedLengths {
  int32_t prompt_tokens = 0;
  int32_t output_tokens = 0;
};

// `prompt` + `output` tokens cut to at most `max_tokens` (>= 2) by `rule`, each at least 1.
ClippedLengths ClipLengths(int32_t prompt, int32_t output, int32_t max_tokens, ClipRule rule);

}  // namespace kvsim::sim
