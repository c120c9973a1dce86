// RequestSpec: one request as the workload issues it, and the token and content ids of its
// sequence, derived from compact segments so that no request stores its tokens.
//
// A prompt is a list of segments (a shared system prompt, a conversation's history, a trace's
// 512-token block, the new message); each segment's tokens are a pure function of its seed.
// Requests whose segment lists agree up to a position hold the same tokens there, which is what
// the prefix cache shares, and the same content: the id of the K/V value a position holds, which
// the ownership oracle and the kernel mode's data generator use. The content id of a position is
// a hash of every segment before it and of its own segment and offset, as a chained prefix hash.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine/event_queue.h"

namespace kvsim::sim {

// `tokens` consecutive tokens generated from `seed`.
struct PromptSegment {
  uint64_t seed = 0;
  int32_t tokens = 0;
};

struct RequestSpec {
  int64_t id = -1;  // issue order, 0 first; unique within a run
  SimNs arrival_ns = 0;
  std::vector<PromptSegment> prompt;
  int32_t prompt_tokens = 0;  // the sum of the prompt segments' tokens, >= 1
  // The true output length: the request finishes after this many tokens. Admission never reads
  // it; it reads max_new_tokens, what the client declared.
  int32_t output_tokens = 0;
  int32_t max_new_tokens = 0;  // >= output_tokens
  uint64_t output_seed = 0;    // the seed of the generated tokens' segment
  uint64_t namespace_key = 0;  // prefix-cache namespace (adapter, cache salt)
  int32_t client = -1;         // closed loop: the client that issued it; -1 open loop
  // A cancellation: after this long from arrival (-1: none), or at the first step end at which the
  // request's cached tokens are a whole number of pages (page_boundary_cancel).
  SimNs cancel_after_ns = -1;
  bool page_boundary_cancel = false;
  int64_t retry_of = -1;  // the cancelled request this one retries; -1 none
  // Scheduling priority, 0 the most urgent (vLLM's priority policy: lower runs first).
  int32_t priority = 0;

  int32_t sequence_tokens() const { return prompt_tokens + output_tokens; }
};

// A 64-bit mix of two values (splitmix64's finaliser over a combination): the hash every id
// below is built from.
uint64_t MixIds(uint64_t a, uint64_t b);

// The prompt followed by the output segment: the request's whole sequence.
std::vector<PromptSegment> SequenceSegments(const RequestSpec& spec);

// The token id at `offset` of a segment with `seed`: 31 bits, so ids are valid int32 tokens.
int32_t SegmentToken(uint64_t seed, int32_t offset);

// Appends the tokens of positions [0, count) of `segments` to `tokens`.
void AppendTokens(const std::vector<PromptSegment>& segments, int32_t count,
                  std::vector<int32_t>& tokens);

// Content ids of positions [begin, end) of `segments`, appended to `contents`.
void AppendContents(const std::vector<PromptSegment>& segments, int32_t begin, int32_t end,
                    std::vector<uint64_t>& contents);

}  // namespace kvsim::sim
