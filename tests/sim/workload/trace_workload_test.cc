// Trace workloads: Mooncake requests share tokens and contents exactly where their hash ids
// agree; Azure requests arrive at the trace's times (scaled) or from a replacement process, with
// the trace's lengths, clipped when asked, each declaring its output; and the workload refuses a
// trace too short for it or outputs beyond the declared limit, naming the file and line.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sim/workload/workload.h"

namespace kvsim::sim {
namespace {

std::shared_ptr<const RequestTrace> ReadTrace(const std::string& text, TraceFormat format) {
  std::istringstream in(text);
  Result<RequestTrace> trace = RequestTrace::Read(in, "t.trace", format, 0);
  EXPECT_TRUE(trace.ok()) << trace.status().ToString();
  return std::make_shared<const RequestTrace>(std::move(trace).value());
}

WorkloadSpec TraceSpec(std::shared_ptr<const RequestTrace> trace) {
  WorkloadSpec spec;
  spec.loop = LoopKind::kTrace;
  spec.requests = 0;
  spec.trace.file = trace->path();
  spec.trace.format = trace->format();
  spec.trace.requests = std::move(trace);
  return spec;
}

// Every request the workload issues, in order.
std::vector<RequestSpec> Drain(const WorkloadSpec& spec, uint64_t seed = 7) {
  Result<Workload> workload = Workload::Create(spec, seed);
  EXPECT_TRUE(workload.ok()) << workload.status().ToString();
  std::vector<RequestSpec> requests = workload->Start();
  while (std::optional<RequestSpec> next = workload->NextArrival()) requests.push_back(*next);
  return requests;
}

std::vector<int32_t> Tokens(const RequestSpec& r) {
  std::vector<int32_t> tokens;
  AppendTokens(r.prompt, r.prompt_tokens, tokens);
  return tokens;
}

std::vector<uint64_t> Contents(const RequestSpec& r) {
  std::vector<uint64_t> contents;
  AppendContents(r.prompt, 0, r.prompt_tokens, contents);
  return contents;
}

// Positions [0, n) at which a and b hold the same value.
template <typename T>
int32_t SamePrefix(const std::vector<T>& a, const std::vector<T>& b) {
  int32_t n = 0;
  while (static_cast<size_t>(n) < a.size() && static_cast<size_t>(n) < b.size() &&
         a[static_cast<size_t>(n)] == b[static_cast<size_t>(n)]) {
    ++n;
  }
  return n;
}

// Positions at which a and b agree, anywhere.
int32_t Agreeing(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  int32_t n = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) n += a[i] == b[i] ? 1 : 0;
  return n;
}

TEST(TraceWorkloadTest, MooncakeRequestsShareTokensExactlyWhereTheirHashIdsAgree) {
  const std::string text =
      "{\"timestamp\": 0, \"input_length\": 1200, \"output_length\": 4, \"hash_ids\": [0, 1, 2]}\n"
      "{\"timestamp\": 10, \"input_length\": 1536, \"output_length\": 4, \"hash_ids\": [0, 1, 3]}\n"
      "{\"timestamp\": 20, \"input_length\": 1100, \"output_length\": 4, \"hash_ids\": [5, 1, 2]}\n"
      "{\"timestamp\": 30, \"input_length\": 1100, \"output_length\": 4, \"hash_ids\": [0, 1, "
      "2]}\n";
  const std::vector<RequestSpec> r = Drain(TraceSpec(ReadTrace(text, TraceFormat::kMooncakeJsonl)));
  ASSERT_EQ(r.size(), 4u);
  // One segment per block, the last one what is left of the prompt.
  ASSERT_EQ(r[0].prompt.size(), 3u);
  EXPECT_EQ(r[0].prompt[2].tokens, 1200 - 1024);
  EXPECT_EQ(r[1].prompt[2].tokens, 512);
  EXPECT_EQ(r[0].prompt_tokens, 1200);
  // Ids 0, 1 agree: 1,024 tokens and contents shared, and not one more.
  EXPECT_EQ(SamePrefix(Tokens(r[0]), Tokens(r[1])), 1024);
  EXPECT_EQ(SamePrefix(Contents(r[0]), Contents(r[1])), 1024);
  // A different first block: nothing shared, even where later ids agree (block 1 of r[2] has
  // the same tokens as block 1 of r[0], but a prefix cache matches from the start).
  EXPECT_EQ(SamePrefix(Tokens(r[0]), Tokens(r[2])), 0);
  EXPECT_EQ(SamePrefix(Contents(r[0]), Contents(r[2])), 0);
  EXPECT_LT(Agreeing(Tokens(r[0]), Tokens(r[1])) - 1024, 3);  // 31-bit tokens: chance agreements
  // Equal ids and a shorter last block: the whole shorter prompt is shared.
  EXPECT_EQ(SamePrefix(Tokens(r[0]), Tokens(r[3])), 1100);
  EXPECT_EQ(SamePrefix(Contents(r[0]), Contents(r[3])), 1100);
  // Arrivals at the trace's times; each declares the output it will produce.
  EXPECT_EQ(r[3].arrival_ns, 30'000'000);
  EXPECT_EQ(r[3].max_new_tokens, 4);
  // Different runs give the same block text: the ids alone decide it.
  const std::vector<RequestSpec> other_seed =
      Drain(TraceSpec(ReadTrace(text, TraceFormat::kMooncakeJsonl)), 99);
  EXPECT_EQ(Tokens(other_seed[1]), Tokens(r[1]));
}

constexpr const char* kAzure =
    "TIMESTAMP,ContextTokens,GeneratedTokens\n"
    "2023-11-16 18:15:46.0,100,10\n"
    "2023-11-16 18:15:47.0,5000,1000\n"
    "2023-11-16 18:15:49.5,300,30\n"
    "2023-11-16 18:15:50.0,400,40\n";

TEST(TraceWorkloadTest, AzureRequestsArriveAtTheTracesScaledTimesWithUniquePrompts) {
  WorkloadSpec spec = TraceSpec(ReadTrace(kAzure, TraceFormat::kAzureCsv));
  spec.trace.time_scale = 2;
  const std::vector<RequestSpec> r = Drain(spec);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].arrival_ns, 0);
  EXPECT_EQ(r[1].arrival_ns, 2'000'000'000);
  EXPECT_EQ(r[2].arrival_ns, 7'000'000'000);
  EXPECT_EQ(r[1].prompt_tokens, 5000);
  EXPECT_EQ(r[1].output_tokens, 1000);
  EXPECT_EQ(r[1].max_new_tokens, 1000);
  EXPECT_EQ(r[2].client, -1);
  for (const RequestSpec& request : r) ASSERT_EQ(request.prompt.size(), 1u);
  EXPECT_EQ(SamePrefix(Tokens(r[0]), Tokens(r[2])), 0);
}

TEST(TraceWorkloadTest, TheFirstNAtAReplacementRateClippedAsVidurDoes) {
  WorkloadSpec spec = TraceSpec(ReadTrace(kAzure, TraceFormat::kAzureCsv));
  spec.requests = 3;
  spec.trace.replace_arrivals = true;
  spec.arrival.kind = ArrivalKind::kFixedRate;
  spec.arrival.rate_per_s = 4;
  spec.trace.clip_tokens = 4096;
  spec.max_new_tokens = 2000;
  const std::vector<RequestSpec> r = Drain(spec);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].arrival_ns, 250'000'000);
  EXPECT_EQ(r[2].arrival_ns, 750'000'000);
  EXPECT_EQ(r[1].prompt_tokens, 3413);
  EXPECT_EQ(r[1].output_tokens, 682);
  EXPECT_EQ(r[1].max_new_tokens, 2000);
  EXPECT_EQ(r[0].prompt_tokens, 100);
}

TEST(TraceWorkloadTest, RefusesAShortTraceOrOutputsBeyondTheDeclaredLimit) {
  WorkloadSpec spec = TraceSpec(ReadTrace(kAzure, TraceFormat::kAzureCsv));
  spec.requests = 5;
  EXPECT_EQ(Workload::Create(spec, 1).status().message(),
            "t.trace: holds 4 requests; workload.requests asks for the first 5");
  spec.requests = 0;
  spec.max_new_tokens = 500;
  EXPECT_EQ(Workload::Create(spec, 1).status().message(),
            "t.trace:3: an output of 1000 tokens exceeds workload.max_new_tokens 500; a request "
            "never generates more than it declared");
  spec.trace.clip_tokens = 4096;
  spec.trace.clip_rule = ClipRule::kProportional;
  EXPECT_FALSE(Workload::Create(spec, 1).ok());  // 682 after clipping, still above 500
  spec.max_new_tokens = 682;
  EXPECT_TRUE(Workload::Create(spec, 1).ok());
  WorkloadSpec unread = spec;
  unread.trace.requests = nullptr;
  EXPECT_EQ(Workload::Create(unread, 1).status().code(), StatusCode::kInvalidArgument);
  WorkloadSpec with_sessions = spec;
  with_sessions.sessions = SessionSpec{};
  EXPECT_EQ(ValidateWorkloadSpec(with_sessions).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvsim::sim
