// The demo's integrity table: every row's verdict, run through the real tracker, including the
// three the check passes by design (writes unchecked, a wrapped tag, a wrong expectation).
#include "cli/integrity_report.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace kvsim::cli {
namespace {

// The table line whose divergence column starts with `divergence`, or "" when there is none.
std::string RowOf(const std::string& table, const std::string& divergence) {
  std::istringstream lines(table);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("  " + divergence + " ", 0) == 0) return line;
  }
  return "";
}

TEST(IntegrityReportTest, EachDivergenceGetsItsVerdict) {
  std::ostringstream out;
  ASSERT_TRUE(PrintIntegrityScenarios(out).ok());
  const std::string table = out.str();
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"none", "all proceed"},
      {"B's page freed while in use, then reused",
       "B aborted: stale tag at logical page 1; A, C proceed"},
      {"A's row left pointing at dummy page 0",
       "A aborted: wrong page at logical page 0; B, C proceed"},
      {"C's entry not a page at all", "C aborted: out of range at logical page 1; A, B proceed"},
      {"C's length runs past its pages",
       "C aborted: unrecorded page at logical page 2; A, B proceed"},
      {"B appends into its freed, reused page",
       "B aborted: stale tag at logical page 1; A, C proceed"},
      {"the same, writes unchecked (published design)", "all proceed"},
      {"2-bit tags, B's page reused 4 = 2^2 times", "all proceed"},
      {"B given A's pages by a prefix-hash collision", "all proceed"},
  };
  for (const auto& [divergence, verdict] : expected) {
    const std::string row = RowOf(table, divergence);
    ASSERT_FALSE(row.empty()) << "no row for: " << divergence << "\n" << table;
    const size_t at = row.rfind(verdict);
    EXPECT_TRUE(at != std::string::npos && at + verdict.size() == row.size())
        << divergence << ": " << row;
  }
}

}  // namespace
}  // namespace kvsim::cli
