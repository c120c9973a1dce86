// YamlMap: reads a YAML config field by field; every error names the file, line, column and field,
// and says what is allowed.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace kvsim::model {

class YamlMap {
 public:
  // Parses `path`, whose top level must be a mapping. A syntax error reports its line and column,
  // as does a byte that is not UTF-8 (YAML is Unicode text; other bytes could not be written back).
  static Result<YamlMap> LoadFile(const std::string& path);
  // Parses `text` as if it were the file `name` (tests, and configs built in memory).
  static Result<YamlMap> LoadString(const std::string& text, const std::string& name);

  bool Has(const std::string& key) const;

  // Typed fields. A missing field, a value of the wrong type or outside [min, max] is an
  // InvalidArgument error whose message is "file:line:column: field 'a.b': what is allowed".
  Result<int64_t> Int(const std::string& key, int64_t min, int64_t max) const;
  Result<int64_t> IntOr(const std::string& key, int64_t fallback, int64_t min, int64_t max) const;
  Result<double> Double(const std::string& key, double min, double max) const;
  Result<bool> BoolOr(const std::string& key, bool fallback) const;
  Result<std::string> String(const std::string& key) const;
  // A string that must be one of `allowed`.
  Result<std::string> Enum(const std::string& key, const std::vector<std::string>& allowed) const;
  Result<YamlMap> Map(const std::string& key) const;
  // A sequence of mappings, at most `max_items` long.
  Result<std::vector<YamlMap>> MapList(const std::string& key, size_t max_items) const;

  // The keys of this mapping, in file order.
  std::vector<std::string> Keys() const;
  // An error for the first key not in `known` (a typo would otherwise be ignored silently).
  Status CheckKnownKeys(const std::vector<std::string>& known) const;

  // An InvalidArgument error located at the value of `key` (or at this mapping when the key is
  // absent).
  Status Error(const std::string& key, const std::string& message) const;
  // The same, located at the key itself (an unknown or misspelt field name).
  Status KeyError(const std::string& key, const std::string& message) const;

  const std::string& path() const { return *path_; }
  // "file:line:column" of the value of `key` (of this mapping when the key is absent).
  std::string KeyLocation(const std::string& key) const;
  // The dotted name of `key` inside this mapping ("attention.kv_lora_rank").
  std::string FieldName(const std::string& key) const;

 private:
  YamlMap(std::shared_ptr<const std::string> path, YAML::Node node, std::string prefix);
  Result<std::string> Scalar(const std::string& key, const char* expected) const;

  std::shared_ptr<const std::string> path_;
  YAML::Node node_;
  std::string prefix_;
};

}  // namespace kvsim::model
