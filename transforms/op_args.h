// OpArgs: one op call's arguments bound to the op's parameter names, as Python binds
// them (positional in order, then by name), read back typed. A bad argument does not
// stop the reading: the first problem is kept, naming the op and the argument, and the
// op's factory returns it (transforms/op_table.cpp).
#pragma once

#include <array>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "forkfeed/status.h"
#include "transforms/functional.h"
#include "transforms/pipeline_spec.h"

namespace forkfeed {

class OpArgs {
 public:
  // `names`: the op's parameters in torchvision's order.
  OpArgs(const OpCall& call, const std::vector<std::string_view>& names);

  const Status& status() const { return status_; }
  bool given(std::string_view name) const { return find(name) != nullptr; }
  // Given, and not None.
  bool present(std::string_view name) const;
  // Given as a string or a name (not a number).
  bool is_word(std::string_view name) const;
  // Given as one number written as a float (100.0, 1e2), not as an int.
  bool is_float(std::string_view name) const;

  // Each returns `fallback` when the argument is not given (or is None, for the
  // optional ones) and records a problem when it is given but wrong.
  double number(std::string_view name, double fallback, double lo, double hi);
  int integer(std::string_view name, int fallback, int lo, int hi);
  bool flag(std::string_view name, bool fallback);
  // A number n as (n, n) — or a tuple/list of `arity` numbers (1 or 2 accepted where
  // arity is 2) — every element in [lo, hi]; nullopt when not given or None.
  std::optional<std::vector<double>> numbers(std::string_view name, std::size_t min_arity,
                                             std::size_t max_arity, double lo, double hi);
  // A size: an int, or (h, w) / [h] as torchvision takes it; returns {h, w}.
  std::optional<std::array<int, 2>> size(std::string_view name);
  fn::Interpolation interpolation(std::string_view name, fn::Interpolation fallback,
                                  std::initializer_list<fn::Interpolation> supported);
  // None, a number (every channel) or three numbers.
  fn::Fill fill(std::string_view name);
  // A word (string or name) among `choices`, compared case-insensitively after the last '.';
  // a problem says what the argument must be: `what`, or "one of" the choices.
  std::string word(std::string_view name, std::string_view fallback,
                   std::initializer_list<std::string_view> choices, std::string_view what = {});
  // Records that `name` is required.
  void require(std::string_view name);
  // Records a problem with `name` that only the op can judge (e.g. min > max).
  void fail(std::string_view name, const std::string& what);

 private:
  const SpecValue* find(std::string_view name) const;
  void bad(std::string_view name, const SpecValue& value, const std::string& what);

  std::string op_;
  std::vector<std::pair<std::string, const SpecValue*>> bound_;
  Status status_;
};

}  // namespace forkfeed
