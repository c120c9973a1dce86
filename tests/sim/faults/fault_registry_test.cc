// The fault registry: rows in order with every column filled, classes and layers that agree, names
// that parse back, and docs/faults.md carrying exactly the tables the registry renders.
#include "sim/faults/fault_registry.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "sim/faults/fault_mix.h"

namespace kvsim::sim {
namespace {

TEST(FaultRegistryTest, EveryRowIsComplete) {
  std::set<std::string> names;
  for (const FaultRow& row : kFaultRegistry) {
    SCOPED_TRACE(row.name);
    EXPECT_TRUE(names.insert(row.name).second) << "two rows named " << row.name;
    EXPECT_NE(std::string(row.acts), "");
    EXPECT_NE(std::string(row.bug), "");
    EXPECT_NE(std::string(row.records), "");
    EXPECT_NE(std::string(row.hook_at), "");
    // Names are what the YAML, --arms and the reports spell: lower case and underscores.
    EXPECT_EQ(std::string(row.name).find_first_not_of("abcdefghijklmnopqrstuvwxyz_"),
              std::string::npos);
    const Result<FaultSite> parsed = ParseFaultSite(row.name);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, row.site);
  }
}

// The class the catalogue expects and the layer that catches the bug say the same thing, and a bug
// that corrupts may cause at least one class of wrong access (the judge excuses by it).
TEST(FaultRegistryTest, ClassLayerAndVerdictsAgree) {
  for (const FaultRow& row : kFaultRegistry) {
    SCOPED_TRACE(row.name);
    switch (row.expected) {
      case FaultClass::kRead:
      case FaultClass::kWrite:
      case FaultClass::kReadWrite:
        EXPECT_EQ(row.caught_by, CheckLayer::kTagCheck);
        EXPECT_NE(row.may_produce & (kWrongPageBit | kForeignWriteBit), 0);
        break;
      case FaultClass::kWrittenState:
        EXPECT_EQ(row.caught_by, CheckLayer::kSeal);
        EXPECT_EQ(row.may_produce, kUnwrittenBit);
        break;
      case FaultClass::kNone:
        EXPECT_EQ(row.caught_by, CheckLayer::kNone);
        EXPECT_EQ(row.may_produce, kWrongContentBit);
        break;
      case FaultClass::kControl:
        EXPECT_EQ(row.caught_by, CheckLayer::kNone);
        EXPECT_EQ(row.may_produce, 0);
        break;
    }
  }
}

TEST(FaultRegistryTest, UnknownNamesListEveryRow) {
  const Result<FaultSite> parsed = ParseFaultSite("no_such_fault");
  ASSERT_FALSE(parsed.ok());
  for (const FaultRow& row : kFaultRegistry) {
    EXPECT_NE(parsed.status().message().find(row.name), std::string::npos) << row.name;
  }
}

TEST(FaultRegistryTest, DocsCarryTheRegistry) {
  std::ifstream in("docs/faults.md");
  ASSERT_TRUE(in) << "docs/faults.md is not among the test's data";
  std::stringstream text;
  text << in.rdbuf();
  const std::string tables = FaultRegistryMarkdown();
  EXPECT_NE(text.str().find(tables), std::string::npos)
      << "docs/faults.md does not carry the registry's tables as they are now; rewrite them with\n"
         "  bazel run //tools/fault_table -- --update \"$PWD/docs/faults.md\"\n"
         "The tables:\n"
      << tables;
}

}  // namespace
}  // namespace kvsim::sim
