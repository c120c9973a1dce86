// Derivation: the terms of a computation as it runs, each with its formula, for `kvsim plan
// --explain`.
#pragma once

#include <string>
#include <vector>

namespace kvsim::model {

// One term: what it is, the formula with its inputs substituted, and the value it came to.
struct DerivationTerm {
  std::string quantity;
  std::string formula;
  std::string value;
};

// Collects terms in the order they are computed. Model functions take a `Derivation*` that may be
// null: a sweep passes null and pays nothing for the text.
class Derivation {
 public:
  // Starts a titled group of terms ("weights per GPU").
  void Section(std::string title);
  void Add(std::string quantity, std::string formula, std::string value);

  struct Group {
    std::string title;
    std::vector<DerivationTerm> terms;
  };
  const std::vector<Group>& groups() const { return groups_; }

 private:
  std::vector<Group> groups_;
};

}  // namespace kvsim::model
