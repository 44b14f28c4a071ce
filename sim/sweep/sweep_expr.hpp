#pragma once
// The small expression language of sweep files (REFERENCE.md "Sweep files"): derived fields
// ("derived": {"NAME": {"path": "...", "expr": "..."}}) and constraints that skip points
// ("constraints": ["..."]). An expression is parsed once, when the sweep file is read, and
// evaluated for every point with the point's values.
//
//   numbers (1, 0.5, 2e-3), strings ('ssp' or "ssp"), true, false, null
//   names: a scenario field path (policy.staleness, cluster.workers.0.count), a derived field's
//          name, or seed; a point's swept value, else the base scenario's resolved value
//   + - * / %   == != < <= > >=   && || !  (also and, or, not)   ( )
//   min(a, b, ...), max(a, b, ...), abs, floor, ceil, round, sqrt, log, log2, exp, pow(a, b)
//
// Arithmetic is IEEE double, evaluated left to right in a fixed order, so a point's derived
// values are the same bytes on every machine and for any --jobs. && and || short-circuit.

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace stalesim {

// Bounds that keep parsing, evaluating and freeing an expression off a deep stack: its length,
// how deep parentheses, unary operators and calls nest, and how long a chain of operations is.
inline constexpr size_t kMaxExprChars = 10000;
inline constexpr size_t kMaxExprNesting = 100;
inline constexpr size_t kMaxExprDepth = 1000;

// A syntax or evaluation problem; what() says what and where (a character position from 1).
class ExprError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ExprNode;

// A parsed expression.
class Expr {
 public:
  // Parses `text`. Throws ExprError ("at character 7: expected ')'").
  static Expr parse(std::string_view text);
  // The names the expression reads, in order of first appearance.
  const std::vector<std::string>& names() const { return names_; }
  // Evaluates with `lookup(name)` giving a name's value (a JSON number, string, boolean or null).
  // Throws ExprError for a type mismatch ("'ssp' is not a number"), a division by zero, or a
  // result that is not finite.
  nlohmann::json eval(const std::function<nlohmann::json(const std::string&)>& lookup) const;
  const std::string& text() const { return text_; }

 private:
  std::shared_ptr<const ExprNode> root_;
  std::vector<std::string> names_;
  std::string text_;
};

// A value as the text of a --set override: numbers in shortest round-trip form (integral values
// up to 2^53 without a fraction, so they fill integer fields), strings as JSON strings.
std::string override_text(const nlohmann::json& value);

}  // namespace stalesim
