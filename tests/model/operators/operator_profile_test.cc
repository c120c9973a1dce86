// Reading Vidur-format operator profiles: the shipped copy, and every malformed input refused
// with its file, line, column and what is allowed.
#include "model/operator_profile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace kvsim::model {
namespace {

namespace fs = std::filesystem;

constexpr const char* kShipped = "third_party/vidur_profiles";

const char* kHeader =
    "time_stats.attn_pre_proj.median,time_stats.attn_post_proj.median,"
    "time_stats.mlp_up_proj.median,time_stats.mlp_down_proj.median,time_stats.add.median,"
    "n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,"
    "num_tensor_parallel_workers\n";

// A file under a fresh folder of the test's temporary directory.
std::string Write(const std::string& name, const std::string& text) {
  const fs::path path = fs::path(::testing::TempDir()) / "operator_profile_test" / name;
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
  return path.string();
}

std::string ErrorOf(const std::string& text) {
  const Result<ComputeProfile> p = LoadComputeProfile(Write("bad/mlp.csv", text), "h100-sxm", "m");
  EXPECT_FALSE(p.ok());
  return p.ok() ? "" : p.status().message();
}

TEST(OperatorProfileTest, TheShippedProfilesLoadWithTheirRowsAndUnits) {
  const Result<OperatorProfiles> p = LoadOperatorProfiles(kShipped);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->files, 16);
  EXPECT_EQ(p->compute.size(), 14u);
  ASSERT_EQ(p->all_reduce.size(), 2u);
  const ComputeProfile* llama = nullptr;
  for (const ComputeProfile& c : p->compute) {
    if (c.gpu == "h100-sxm" && c.model == "Llama-2-70b-hf") llama = &c;
  }
  ASSERT_NE(llama, nullptr);
  ASSERT_EQ(llama->rows.size(), 1044u);
  // The first data row of Vidur's file: 4,096 tokens at tp 1, QKV projection median 0.9825 ms.
  const ComputeProfileRow& first = llama->rows.front();
  EXPECT_EQ(first.line, 2);
  EXPECT_EQ(first.tokens, 4096);
  EXPECT_EQ(first.tp, 1);
  EXPECT_EQ(first.heads, 64);
  EXPECT_EQ(first.kv_heads, 8);
  EXPECT_EQ(first.hidden, 8192);
  EXPECT_EQ(first.intermediate, 28672);
  EXPECT_TRUE(first.gated);
  EXPECT_DOUBLE_EQ(first.median_s[static_cast<int>(ProfiledOp::kAttnPreProj)], 0.9825e-3);
  // All-reduces within one node only; sizes in bytes up to 64 MiB.
  for (const AllReduceProfile& a : p->all_reduce) {
    for (const AllReduceRow& r : a.rows) {
      EXPECT_GE(r.gpus, 2);
      EXPECT_LE(r.bytes, int64_t{64} << 20);
    }
  }
  EXPECT_EQ(p->all_reduce[0].gpu, "a100-sxm-80gb");
  EXPECT_EQ(p->content_hash.size(), 16u);
}

TEST(OperatorProfileTest, PhiTwosMissingPostAttentionNormIsNotMeasuredRatherThanAnError) {
  const Result<ComputeProfile> p = LoadComputeProfile(
      std::string(kShipped) + "/compute/h100/microsoft/phi-2/mlp.csv", "h100-sxm", "phi-2");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->rows[0].median_s[static_cast<int>(ProfiledOp::kPostAttentionLayernorm)], 0);
  EXPECT_GT(p->rows[0].median_s[static_cast<int>(ProfiledOp::kMlpAct)], 0);
}

TEST(OperatorProfileTest, MalformedRowsAreRefusedWithLineColumnAndWhatIsAllowed) {
  const std::string good = "0.5,0.4,1.2,0.9,0.06,32,8,4096,14336,128256,True,512,2\n";
  const Result<ComputeProfile> ok =
      LoadComputeProfile(Write("good/mlp.csv", std::string(kHeader) + good), "h100-sxm", "m");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->rows[0].tokens, 512);

  std::string e = ErrorOf(std::string(kHeader) + good + "0.5,0.4,1.2\n");
  EXPECT_NE(e.find("mlp.csv:3: 3 fields; the header has 13"), std::string::npos) << e;
  for (const std::string tokens : {"abc", "0", "1.5", "-3", "99999999999"}) {
    e = ErrorOf(std::string(kHeader) + "0.5,0.4,1.2,0.9,0.06,32,8,4096,14336,128256,True," +
                tokens + ",2\n");
    EXPECT_NE(e.find(":2: column 'num_tokens': '" + tokens + "' is not allowed; an integer 1 to"),
              std::string::npos)
        << e;
  }
  for (const std::string time : {"nan", "inf", "-0.5", "0", "1e999", "x"}) {
    e = ErrorOf(std::string(kHeader) + time +
                ",0.4,1.2,0.9,0.06,32,8,4096,14336,128256,True,512,2\n");
    EXPECT_NE(e.find("column 'time_stats.attn_pre_proj.median': '" + time +
                     "' is not allowed; a time in milliseconds"),
              std::string::npos)
        << e;
  }
  e = ErrorOf(std::string(kHeader) + "0.5,0.4,1.2,0.9,0.06,32,8,4096,14336,128256,yes,512,2\n");
  EXPECT_NE(e.find("column 'use_gated_mlp': 'yes' is not allowed; True or False"),
            std::string::npos)
      << e;
  e = ErrorOf(std::string(kHeader) + "0.5,0.4,1.2,0.9,0.06,32,8,4096,14336,128256,True,512,16\n");
  EXPECT_NE(e.find("column 'num_tensor_parallel_workers': 16 does not divide n_kv_head 8"),
            std::string::npos)
      << e;
  e = ErrorOf(std::string(kHeader) + "0.5,0.4,1.2,0.9,0.06,48,8,4096,14336,128256,True,512,2\n");
  EXPECT_NE(e.find("column 'n_embd': 4096 is not a multiple of n_head 48"), std::string::npos) << e;
  e = ErrorOf("num_tokens,n_head\n1,2\n");
  EXPECT_NE(e.find("mlp.csv:1: column 'n_kv_head': missing from the header"), std::string::npos)
      << e;
  e = ErrorOf("");
  EXPECT_NE(e.find("empty; a Vidur profile starts with a header"), std::string::npos) << e;
  e = ErrorOf(kHeader);
  EXPECT_NE(e.find("no rows after the header"), std::string::npos) << e;
}

TEST(OperatorProfileTest, AllReduceRowsAcrossNodesAreSkippedAndAFileOfNoneIsRefused) {
  const std::string header =
      ",time_stats.all_reduce.median,rank,num_workers,size,collective,devices_per_node,"
      "max_devices_per_node\n";
  const Result<AllReduceProfile> p =
      LoadAllReduceProfile(Write("ar/all_reduce.csv", header + "0,0.03,0,8,2048,all_reduce,8,8\n"
                                                               "1,0.5,0,16,2048,all_reduce,8,8\n"),
                           "h100-sxm");
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->rows.size(), 1u);
  EXPECT_EQ(p->rows[0].bytes, 2048);
  EXPECT_DOUBLE_EQ(p->rows[0].median_s, 0.03e-3);
  const Result<AllReduceProfile> none = LoadAllReduceProfile(
      Write("ar2/all_reduce.csv", header + "1,0.5,0,16,2048,all_reduce,8,8\n"), "h100-sxm");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no all-reduce among 2 or more GPUs of one node"),
            std::string::npos);
  // Empty column names may repeat (Vidur's index column is one); the fields still count.
  const Result<AllReduceProfile> short_row = LoadAllReduceProfile(
      Write("ar4/all_reduce.csv", ",," + header + "0,0.03,0,8,2048,all_reduce,8,8\n"), "h100-sxm");
  ASSERT_FALSE(short_row.ok());
  EXPECT_NE(short_row.status().message().find(":2: 8 fields; the header has 10"), std::string::npos)
      << short_row.status().message();
  const Result<AllReduceProfile> bad = LoadAllReduceProfile(
      Write("ar3/all_reduce.csv", header + "0,0.03,0,8,2k,all_reduce,8,8\n"), "h100-sxm");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(":2: column 'size': '2k' is not allowed"),
            std::string::npos)
      << bad.status().message();
}

TEST(OperatorProfileTest, AFolderOutsideVidursLayoutIsRefusedNamingTheLayout) {
  Result<OperatorProfiles> p = LoadOperatorProfiles("no/such/folder");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("not a folder of operator profiles"), std::string::npos);
  const fs::path empty = fs::path(::testing::TempDir()) / "operator_profile_test" / "empty";
  fs::create_directories(empty);
  p = LoadOperatorProfiles(empty.string());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("compute/GPU/ORG/MODEL/mlp.csv"), std::string::npos);
  const std::string stray = Write("stray/mlp.csv", kHeader);
  p = LoadOperatorProfiles(fs::path(stray).parent_path().string());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("not where a profile belongs"), std::string::npos)
      << p.status().message();
}

TEST(OperatorProfileTest, VidursShortGpuNamesMapToKvsimsConfigs) {
  EXPECT_EQ(ProfileGpuName("h100"), "h100-sxm");
  EXPECT_EQ(ProfileGpuName("a100"), "a100-sxm-80gb");
  EXPECT_EQ(ProfileGpuName("h200-sxm"), "h200-sxm");
}

}  // namespace
}  // namespace kvsim::model
