// Config YAML that would crash or stall a reader is refused at load, with the file and what is
// wrong: an alias that contains itself (unbounded depth), an alias bomb (a few lines naming a
// billion nodes); a repeated key is found in time linear in the keys, at its second appearance.
// Text that yaml-cpp would read as something other than what was written is refused too: a field
// with no value (read as "not given"), a second document (read by nothing), control bytes.
#include "model/yaml_reader.h"

#include <gtest/gtest.h>

#include <string>

namespace kvsim::model {
namespace {

std::string ErrorOf(const std::string& text) {
  const Result<YamlMap> loaded = YamlMap::LoadString(text, "c.yaml");
  return loaded.ok() ? std::string("ok") : loaded.status().message();
}

TEST(YamlReaderTest, AnAliasThatContainsItselfIsRefusedNotWalked) {
  const std::string error = ErrorOf("name: x\nx: &a [*a]\n");
  EXPECT_NE(error.find("c.yaml:2:"), std::string::npos) << error;
  EXPECT_NE(error.find("nested deeper than 64 levels"), std::string::npos) << error;
}

TEST(YamlReaderTest, AnAliasBombIsRefusedByItsExpandedSize) {
  // Nine levels of ten aliases each: 10^9 nodes from ten lines.
  std::string text = "name: bomb\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level < 9; ++level) {
    text += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [";
    for (int i = 0; i < 10; ++i) text += (i ? ", *a" : "*a") + std::to_string(level - 1);
    text += "]\n";
  }
  EXPECT_NE(ErrorOf(text).find("c.yaml: more than 1000000 YAML nodes"), std::string::npos)
      << ErrorOf(text);
  // A few shared aliases well inside the bound are fine.
  EXPECT_EQ(ErrorOf("name: x\nbase: &b {a: 1, b: 2}\nthis: *b\nthat: *b\n"), "ok");
}

TEST(YamlReaderTest, ARepeatedKeyAmongManyIsFoundAtItsSecondAppearance) {
  std::string text = "name: many\n";
  for (int i = 0; i < 50'000; ++i) text += "k" + std::to_string(i) + ": 1\n";
  EXPECT_EQ(ErrorOf(text), "ok");
  text += "k123: 2\n";
  EXPECT_EQ(ErrorOf(text),
            "c.yaml:50002:1: field 'k123': given twice (first at line 125); give it once");
  EXPECT_EQ(ErrorOf("a:\n  - {b: 1, c: 2}\n  - {b: 1, b: 2}\n"),
            "c.yaml:3:12: field 'a[1].b': given twice (first at line 3); give it once");
}

TEST(YamlReaderTest, AFieldWithNoValueIsRefusedNotTakenAsTheDefault) {
  for (const char* empty : {"~", "null", "Null", ""}) {
    const std::string error = ErrorOf(std::string("name: x\npool:\n  pages: ") + empty + "\n");
    EXPECT_NE(error.find("field 'pool.pages': has no value (empty, ~ or null)"), std::string::npos)
        << empty << ": " << error;
  }
  EXPECT_NE(ErrorOf("list: [1, ~]\n").find("field 'list[1]': has no value"), std::string::npos)
      << ErrorOf("list: [1, ~]\n");
  // A quoted "~" is a string, not null.
  EXPECT_EQ(ErrorOf("name: '~'\n"), "ok");
}

TEST(YamlReaderTest, ASecondDocumentIsRefusedWhereItBegins) {
  EXPECT_EQ(ErrorOf("---\nname: x\n"), "ok");
  EXPECT_NE(ErrorOf("name: x\n---\nname: y\n").find("c.yaml:3:1: a second YAML document"),
            std::string::npos)
      << ErrorOf("name: x\n---\nname: y\n");
  // A broken second document is a syntax error, not silently dropped.
  EXPECT_NE(ErrorOf("name: x\n---\nfoo: [ bar\n").find("YAML syntax error"), std::string::npos)
      << ErrorOf("name: x\n---\nfoo: [ bar\n");
}

TEST(YamlReaderTest, ControlBytesAreRefusedByPosition) {
  EXPECT_EQ(ErrorOf(std::string("name: a\0b\n", 10)),
            "c.yaml:1:8: control byte 0x00; a config is text (tabs, newlines and printable "
            "characters only)");
  EXPECT_NE(ErrorOf("name: x\nother: \x07\n").find("c.yaml:2:8: control byte 0x07"),
            std::string::npos);
  EXPECT_EQ(ErrorOf("name: x\r\nother:\ty\r\n"), "ok");
}

}  // namespace
}  // namespace kvsim::model
