// Trace collection.
#include "model/trace.h"

#include <utility>

namespace kvsim::model {

void Trace::Section(std::string title) { groups_.push_back(Group{std::move(title), {}}); }

void Trace::Add(std::string quantity, std::string formula, std::string value) {
  if (groups_.empty()) Section("");
  groups_.back().terms.push_back(
      TraceTerm{std::move(quantity), std::move(formula), std::move(value)});
}

}  // namespace kvsim::model
