// The workload: lengths within their bounds and with their shape, open-loop arrivals at their
// rate, closed-loop clients that issue their next request when told, sessions whose prompts carry
// the conversation, shared prefixes that really share tokens and contents, cancellations at their
// rate, and the same requests from the same seed.
#include "sim/workload/workload.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace kvsim::sim {
namespace {

WorkloadSpec ClosedSpec(int32_t clients, int64_t requests) {
  WorkloadSpec spec;
  spec.loop = LoopKind::kClosed;
  spec.clients = clients;
  spec.requests = requests;
  spec.prompt_tokens = {LengthKind::kUniform, 0, 10, 50};
  spec.output_tokens = {LengthKind::kFixed, 7};
  return spec;
}

TEST(LengthSamplerTest, EachKindStaysInItsBoundsWithItsShape) {
  Prng prng(3);
  const LengthSampler uniform({LengthKind::kUniform, 0, 5, 9});
  std::vector<int> seen(10, 0);
  for (int i = 0; i < 5000; ++i) ++seen[static_cast<size_t>(uniform.Sample(prng))];
  for (int v = 0; v < 5; ++v) EXPECT_EQ(seen[static_cast<size_t>(v)], 0);
  for (int v = 5; v <= 9; ++v) EXPECT_NEAR(seen[static_cast<size_t>(v)], 1000, 150);  // ~5 sigma

  LengthSpec log_normal{LengthKind::kLogNormal, 0, 10, 100000, 1000, 1.0};
  const LengthSampler ln(log_normal);
  std::vector<int32_t> values;
  for (int i = 0; i < 20000; ++i) values.push_back(ln.Sample(prng));
  std::sort(values.begin(), values.end());
  // The median of exp(ln 1000 + Z) is 1000; 2.5% above exp(1.96) x 1000 = 7099.
  EXPECT_NEAR(values[10000], 1000, 60);
  EXPECT_NEAR(values[19500], 7099, 700);

  LengthSpec zipf{LengthKind::kZipf, 0, 1, 1000, 0, 0, 1.2};
  const LengthSampler z(zipf);
  int ones = 0;
  int32_t longest = 0;
  for (int i = 0; i < 20000; ++i) {
    const int32_t v = z.Sample(prng);
    ASSERT_GE(v, 1);
    ASSERT_LE(v, 1000);
    ones += v == 1 ? 1 : 0;
    longest = std::max(longest, v);
  }
  // Weight of 1 over sum_{k <= 1000} k^-1.2 (4.5446): 22.0% of draws; the tail reaches far.
  EXPECT_NEAR(ones / 20000.0, 1 / 4.5446, 0.015);
  EXPECT_GT(longest, 500);
}

TEST(ArrivalSamplerTest, PoissonGammaAndBurstsArriveAtTheirRate) {
  for (ArrivalKind kind :
       {ArrivalKind::kPoisson, ArrivalKind::kGamma, ArrivalKind::kBurst, ArrivalKind::kFixedRate}) {
    ArrivalSpec spec;
    spec.kind = kind;
    spec.rate_per_s = 50;
    spec.cv = 3;
    spec.burst_size = 8;
    ArrivalSampler sampler(spec);
    Prng prng(11);
    SimNs total = 0;
    int zero_gaps = 0;
    constexpr int kArrivals = 40000;
    std::vector<double> gaps;
    for (int i = 0; i < kArrivals; ++i) {
      const SimNs gap = sampler.NextGap(prng);
      total += gap;
      zero_gaps += gap == 0 ? 1 : 0;
      gaps.push_back(static_cast<double>(gap));
    }
    const double rate = kArrivals / NsToSeconds(total);
    EXPECT_NEAR(rate, 50, 50 * 0.1) << ArrivalKindName(kind);
    if (kind == ArrivalKind::kBurst) {
      EXPECT_EQ(zero_gaps, kArrivals * 7 / 8);
    }
    if (kind == ArrivalKind::kGamma) {
      double mean = 0, square = 0;
      for (double g : gaps) mean += g;
      mean /= kArrivals;
      for (double g : gaps) square += (g - mean) * (g - mean);
      EXPECT_NEAR(std::sqrt(square / kArrivals) / mean, 3.0, 0.3);
    }
  }
}

TEST(WorkloadTest, ClosedLoopIssuesOnePerClientThenOnDemandUpToTheTotal) {
  Workload w = Workload::Create(ClosedSpec(4, 6), 1).value();
  const std::vector<RequestSpec> first = w.Start();
  ASSERT_EQ(first.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(first[static_cast<size_t>(i)].client, i);
    EXPECT_EQ(first[static_cast<size_t>(i)].id, i);
    EXPECT_EQ(first[static_cast<size_t>(i)].arrival_ns, 0);
  }
  const std::optional<RequestSpec> next = w.NextForClient(2, 500);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->client, 2);
  EXPECT_EQ(next->arrival_ns, 500);
  EXPECT_TRUE(w.NextForClient(0, 600).has_value());
  EXPECT_FALSE(w.NextForClient(1, 700).has_value());  // 6 issued
}

TEST(WorkloadTest, OpenLoopArrivalsAreIncreasingAndStopAtTheTotal) {
  WorkloadSpec spec = ClosedSpec(1, 100);
  spec.loop = LoopKind::kOpen;
  spec.arrival = {ArrivalKind::kPoisson, 10, 1, 1};
  Workload w = Workload::Create(spec, 2).value();
  std::vector<RequestSpec> all = w.Start();
  while (std::optional<RequestSpec> r = w.NextArrival()) all.push_back(*r);
  ASSERT_EQ(all.size(), 100u);
  for (size_t i = 1; i < all.size(); ++i) EXPECT_GE(all[i].arrival_ns, all[i - 1].arrival_ns);
  for (const RequestSpec& r : all) {
    EXPECT_EQ(r.client, -1);
    EXPECT_GE(r.prompt_tokens, 10);
    EXPECT_LE(r.prompt_tokens, 50);
    EXPECT_EQ(r.output_tokens, 7);
    EXPECT_EQ(r.max_new_tokens, 7);
  }
}

TEST(WorkloadTest, SessionsCarryTheWholeConversationIntoTheNextTurn) {
  WorkloadSpec spec = ClosedSpec(1, 3);
  spec.sessions = SessionSpec{{LengthKind::kFixed, 3}, 1000};
  Workload w = Workload::Create(spec, 3).value();
  const RequestSpec first = w.Start().at(0);
  const RequestSpec second = *w.NextForClient(0, 10);
  EXPECT_EQ(second.arrival_ns, 10 + 1000);
  EXPECT_EQ(second.prompt_tokens, first.sequence_tokens() + second.prompt.back().tokens);
  // The second turn's prompt holds the first turn's tokens and contents exactly.
  std::vector<int32_t> a, b;
  AppendTokens(SequenceSegments(first), first.sequence_tokens(), a);
  AppendTokens(second.prompt, first.sequence_tokens(), b);
  EXPECT_EQ(a, b);
  std::vector<uint64_t> ca, cb;
  AppendContents(SequenceSegments(first), 0, first.sequence_tokens(), ca);
  AppendContents(second.prompt, 0, first.sequence_tokens(), cb);
  EXPECT_EQ(ca, cb);
}

TEST(WorkloadTest, SharedPrefixesShareTokensAndContentsAndNothingElse) {
  WorkloadSpec spec = ClosedSpec(40, 40);
  spec.shared_prefix = {2, 64, kPartsPerMillion, 0};
  Workload w = Workload::Create(spec, 4).value();
  const std::vector<RequestSpec> all = w.Start();
  int same_group = 0;
  for (size_t i = 1; i < all.size(); ++i) {
    std::vector<uint64_t> a, b;
    AppendContents(all[0].prompt, 0, 65, a);
    AppendContents(all[i].prompt, 0, 65, b);
    if (all[i].prompt[0].seed != all[0].prompt[0].seed) {
      EXPECT_NE(a[0], b[0]);
      continue;
    }
    ++same_group;
    EXPECT_TRUE(std::equal(a.begin(), a.begin() + 64, b.begin()));
    EXPECT_NE(a[64], b[64]) << "the requests' own prompts differ after the prefix";
  }
  EXPECT_GT(same_group, 5);
  EXPECT_LT(same_group, 35);
}

TEST(WorkloadTest, CancellationsComeAtTheirRateAndRetriesCopyThePrompt) {
  WorkloadSpec spec = ClosedSpec(2000, 2000);
  spec.cancel.probability_ppm = 250000;
  spec.cancel.after_ms = {LengthKind::kUniform, 0, 5, 10};
  spec.cancel.retry_ppm = kPartsPerMillion;
  spec.cancel.retry_delay_ns = 3;
  Workload w = Workload::Create(spec, 5).value();
  const std::vector<RequestSpec> all = w.Start();
  int cancelled = 0;
  for (const RequestSpec& r : all) {
    if (r.cancel_after_ns < 0) continue;
    ++cancelled;
    EXPECT_GE(r.cancel_after_ns, 5'000'000);
    EXPECT_LE(r.cancel_after_ns, 10'000'000);
  }
  // 500 expected; the binomial's standard deviation is 19.4.
  EXPECT_NEAR(cancelled, 500, 100);
  const std::optional<RequestSpec> retry = w.RetryOf(all[0], 100);
  ASSERT_TRUE(retry.has_value());
  EXPECT_EQ(retry->retry_of, 0);
  EXPECT_EQ(retry->id, 2000);
  EXPECT_EQ(retry->arrival_ns, 103);
  EXPECT_EQ(retry->prompt_tokens, all[0].prompt_tokens);
  EXPECT_EQ(retry->cancel_after_ns, -1);
}

TEST(WorkloadTest, TheSameSeedIssuesTheSameRequests) {
  WorkloadSpec spec = ClosedSpec(8, 8);
  spec.shared_prefix = {3, 16, 500000, 1.0};
  const auto draw = [&](uint64_t seed) {
    Workload w = Workload::Create(spec, seed).value();
    std::vector<uint64_t> fingerprint;
    for (const RequestSpec& r : w.Start()) {
      fingerprint.push_back(static_cast<uint64_t>(r.prompt_tokens));
      fingerprint.push_back(r.output_seed);
      for (const PromptSegment& s : r.prompt) fingerprint.push_back(s.seed);
    }
    return fingerprint;
  };
  EXPECT_EQ(draw(9), draw(9));
  EXPECT_NE(draw(9), draw(10));
}

TEST(WorkloadTest, InvalidSpecsNameTheFieldAndWhatIsAllowed) {
  WorkloadSpec spec = ClosedSpec(0, 5);
  EXPECT_EQ(ValidateWorkloadSpec(spec).message(),
            "workload.clients 0 is out of range; allowed: 1 to 1048576");
  spec = ClosedSpec(1, 5);
  spec.max_new_tokens = 3;
  EXPECT_EQ(ValidateWorkloadSpec(spec).message(),
            "workload.max_new_tokens 3 is below the longest output the workload draws (7); a "
            "request never generates more than it declared");
  spec = ClosedSpec(1, 5);
  spec.prompt_tokens = {LengthKind::kUniform, 0, 9, 3};
  EXPECT_EQ(ValidateWorkloadSpec(spec).message(),
            "workload.prompt_tokens.max 3 is out of range; allowed: 9 to 16777216");
}

}  // namespace
}  // namespace kvsim::sim
