// Figures a scenario's comments state about its run ("time to first token p50 31.2 s"), kept in
// the scenario's `figures:` section so that a test and `kvsim run` check them against the run
// instead of trusting the prose.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "model/yaml_reader.h"

namespace kvsim::sim {

struct StatedFigure {
  std::string name;  // one of kStatedFigureNames
  std::string text;  // as written ("31.2")
  double value = 0;
  // How far the run's value may be from `value`: half a unit in the last digit written (the
  // figure is the run's value rounded), or the `within` the scenario gives for a figure stated as
  // "about" one.
  double within = 0;
};

struct StatedFigureName {
  const char* name;
  const char* meaning;
};

// What a figure may name, each with what it measures.
extern const std::vector<StatedFigureName> kStatedFigureNames;

// Parses a `figures:` mapping: NAME: NUMBER (the run's value rounds to it) or NAME: {about:
// NUMBER, within: NUMBER}. Errors name the file, line, field and what is allowed.
Result<std::vector<StatedFigure>> ParseStatedFigures(const model::YamlMap& map);

// Half a unit in the last digit of a decimal number as written: "31.2" -> 0.05, "19366" -> 0.5.
double RoundingHalfUnit(const std::string& text);

}  // namespace kvsim::sim
