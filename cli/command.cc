// Command groups.
#include "cli/command.h"

#include <utility>

namespace kvsim::cli {
namespace {

class CommandGroup : public Command {
 public:
  CommandGroup(std::string name, std::string summary,
               std::vector<std::unique_ptr<Command>> children)
      : name_(std::move(name)), summary_(std::move(summary)), children_(std::move(children)) {}

  std::string name() const override { return name_; }
  std::string summary() const override { return summary_; }

  void Configure(CLI::App& app) override {
    app.require_subcommand(0, 1);
    for (const auto& child : children_) {
      CLI::App* sub = app.add_subcommand(child->name(), child->summary());
      child->Configure(*sub);
      subcommands_.push_back(sub);
    }
  }

  Status Run(std::ostream& out) override {
    for (size_t i = 0; i < children_.size(); ++i) {
      if (subcommands_[i]->parsed()) {
        return children_[i]->Run(out).WithContext(children_[i]->name());
      }
    }
    std::string names;
    for (const auto& child : children_) names += (names.empty() ? "" : ", ") + child->name();
    return InvalidArgumentError("give one of: " + names);
  }

 private:
  std::string name_;
  std::string summary_;
  std::vector<std::unique_ptr<Command>> children_;
  std::vector<CLI::App*> subcommands_;
};

}  // namespace

std::unique_ptr<Command> MakeCommandGroup(std::string name, std::string summary,
                                          std::vector<std::unique_ptr<Command>> children) {
  return std::make_unique<CommandGroup>(std::move(name), std::move(summary), std::move(children));
}

}  // namespace kvsim::cli
