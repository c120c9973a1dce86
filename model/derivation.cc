// Derivation collection.
#include "model/derivation.h"

#include <utility>

namespace kvsim::model {

void Derivation::Section(std::string title) { groups_.push_back(Group{std::move(title), {}}); }

void Derivation::Add(std::string quantity, std::string formula, std::string value) {
  if (groups_.empty()) Section("");
  groups_.back().terms.push_back(
      DerivationTerm{std::move(quantity), std::move(formula), std::move(value)});
}

}  // namespace kvsim::model
