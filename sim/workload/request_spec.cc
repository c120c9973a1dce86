// Token and content ids of segments.
#include "sim/workload/request_spec.h"

#include "base/check.h"

namespace kvsim::sim {

uint64_t MixIds(uint64_t a, uint64_t b) {
  uint64_t z = a * 0x9e3779b97f4a7c15ULL + (b ^ (b >> 29)) + 0x632be59bd9b4e019ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::vector<PromptSegment> SequenceSegments(const RequestSpec& spec) {
  std::vector<PromptSegment> segments = spec.prompt;
  segments.push_back({spec.output_seed, spec.output_tokens});
  return segments;
}

int32_t SegmentToken(uint64_t seed, int32_t offset) {
  return static_cast<int32_t>(MixIds(seed, static_cast<uint64_t>(offset)) >> 33);
}

void AppendTokens(const std::vector<PromptSegment>& segments, int32_t count,
                  std::vector<int32_t>& tokens) {
  int32_t left = count;
  for (const PromptSegment& segment : segments) {
    for (int32_t offset = 0; offset < segment.tokens && left > 0; ++offset, --left) {
      tokens.push_back(SegmentToken(segment.seed, offset));
    }
  }
  KVSIM_CHECK_EQ(left, 0) << "asked for more tokens than the segments hold";
}

void AppendContents(const std::vector<PromptSegment>& segments, int32_t begin, int32_t end,
                    std::vector<uint64_t>& contents) {
  KVSIM_CHECK(0 <= begin && begin <= end);
  uint64_t chain = 0;
  int32_t start = 0;
  for (const PromptSegment& segment : segments) {
    const int32_t stop = start + segment.tokens;
    for (int32_t p = std::max(begin, start); p < std::min(end, stop); ++p) {
      contents.push_back(MixIds(MixIds(chain, segment.seed), static_cast<uint64_t>(p - start)));
    }
    chain = MixIds(MixIds(chain, segment.seed), ~static_cast<uint64_t>(segment.tokens));
    start = stop;
    if (start >= end) return;
  }
  KVSIM_CHECK_GE(start, end) << "asked for more contents than the segments hold";
}

}  // namespace kvsim::sim
