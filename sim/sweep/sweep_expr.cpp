#include "sim/sweep/sweep_expr.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

namespace stalesim {

using nlohmann::json;

struct ExprNode {
  enum class Kind { kLiteral, kName, kUnary, kBinary, kCall };
  Kind kind = Kind::kLiteral;
  json literal;
  std::string name;  // kName: the name; kUnary/kBinary: the operator; kCall: the function
  std::vector<std::shared_ptr<const ExprNode>> args;
  size_t at = 0;     // character position, from 1
  size_t depth = 1;  // the longest path to a leaf, this node included
};

namespace {

using NodePtr = std::shared_ptr<const ExprNode>;

const std::vector<std::string>& functions() {
  static const std::vector<std::string> f = {"min",  "max", "abs",  "floor", "ceil", "round",
                                             "sqrt", "log", "log2", "exp",   "pow"};
  return f;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  // One level of parentheses, a unary operator or a function call: the parser recurses, so the
  // nesting is capped (kMaxExprNesting) before the stack could run out.
  struct Nest {
    explicit Nest(Parser& p) : p_(p) {
      if (++p_.nesting_ > kMaxExprNesting)
        p_.fail(fmt::format("nested deeper than {} levels (parentheses, unary operators and function calls)",
                            kMaxExprNesting));
    }
    ~Nest() { --p_.nesting_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;

   private:
    Parser& p_;
  };

  NodePtr parse_all(std::vector<std::string>& names) {
    names_ = &names;
    NodePtr n = parse_or();
    skip();
    if (i_ < s_.size()) fail(fmt::format("unexpected '{}'", s_.substr(i_, 1)));
    return n;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw ExprError(fmt::format("at character {}: {}", std::min(i_, s_.size()) + 1, why));
  }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  static bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
  static bool name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  }
  // The word at the cursor (not consumed), or "".
  std::string_view peek_word() {
    skip();
    size_t j = i_;
    if (j < s_.size() && name_start(s_[j]))
      while (j < s_.size() && name_char(s_[j])) ++j;
    return s_.substr(i_, j - i_);
  }
  bool accept(std::string_view op) {
    skip();
    if (s_.substr(i_, op.size()) != op) return false;
    // Word operators must end at a word boundary ("or" is not the start of "order").
    if (name_start(op[0]) && i_ + op.size() < s_.size() && name_char(s_[i_ + op.size()])) return false;
    i_ += op.size();
    return true;
  }
  NodePtr node(ExprNode::Kind k, std::string name, std::vector<NodePtr> args, size_t at) {
    auto n = std::make_shared<ExprNode>();
    n->kind = k;
    n->name = std::move(name);
    n->args = std::move(args);
    n->at = at;
    for (const auto& a : n->args) n->depth = std::max(n->depth, a->depth + 1);
    // Evaluating and freeing a tree recurse along its depth: a long chain (a 100,000-term sum) is
    // refused here, before either could exhaust the stack.
    if (n->depth > kMaxExprDepth)
      fail(fmt::format("more than {} operations chained in one expression (split it into derived fields)",
                       kMaxExprDepth));
    return n;
  }
  NodePtr parse_or() {
    const Nest nest(*this);
    NodePtr l = parse_and();
    for (size_t at = i_; accept("||") || accept("or"); at = i_)
      l = node(ExprNode::Kind::kBinary, "||", {l, parse_and()}, at + 1);
    return l;
  }
  NodePtr parse_and() {
    NodePtr l = parse_not();
    for (size_t at = i_; accept("&&") || accept("and"); at = i_)
      l = node(ExprNode::Kind::kBinary, "&&", {l, parse_not()}, at + 1);
    return l;
  }
  NodePtr parse_not() {
    skip();
    const size_t at = i_ + 1;
    if ((s_.substr(i_, 1) == "!" && s_.substr(i_, 2) != "!=")) {
      ++i_;
      const Nest nest(*this);
      return node(ExprNode::Kind::kUnary, "!", {parse_not()}, at);
    }
    if (accept("not")) {
      const Nest nest(*this);
      return node(ExprNode::Kind::kUnary, "!", {parse_not()}, at);
    }
    return parse_cmp();
  }
  NodePtr parse_cmp() {
    NodePtr l = parse_add();
    skip();
    const size_t at = i_ + 1;
    for (const char* op : {"==", "!=", "<=", ">=", "<", ">"})
      if (accept(op)) {
        NodePtr r = parse_add();
        skip();
        for (const char* again : {"==", "!=", "<", ">"})
          if (s_.substr(i_, std::string_view(again).size()) == again)
            fail("comparisons do not chain: use && (a < b && b < c)");
        return node(ExprNode::Kind::kBinary, op, {l, r}, at);
      }
    return l;
  }
  NodePtr parse_add() {
    NodePtr l = parse_mul();
    while (true) {
      skip();
      const size_t at = i_ + 1;
      if (accept("+"))
        l = node(ExprNode::Kind::kBinary, "+", {l, parse_mul()}, at);
      else if (accept("-"))
        l = node(ExprNode::Kind::kBinary, "-", {l, parse_mul()}, at);
      else
        return l;
    }
  }
  NodePtr parse_mul() {
    NodePtr l = parse_unary();
    while (true) {
      skip();
      const size_t at = i_ + 1;
      if (accept("*"))
        l = node(ExprNode::Kind::kBinary, "*", {l, parse_unary()}, at);
      else if (accept("/"))
        l = node(ExprNode::Kind::kBinary, "/", {l, parse_unary()}, at);
      else if (accept("%"))
        l = node(ExprNode::Kind::kBinary, "%", {l, parse_unary()}, at);
      else
        return l;
    }
  }
  NodePtr parse_unary() {
    skip();
    const size_t at = i_ + 1;
    if (accept("-")) {
      const Nest nest(*this);
      return node(ExprNode::Kind::kUnary, "-", {parse_unary()}, at);
    }
    if (accept("+")) {
      const Nest nest(*this);
      return parse_unary();
    }
    return parse_primary();
  }
  NodePtr parse_primary() {
    skip();
    const size_t at = i_ + 1;
    if (i_ >= s_.size()) fail("expected a value (a number, a 'string', a name or '(')");
    const char c = s_[i_];
    if (c == '(') {
      ++i_;
      NodePtr n = parse_or();
      if (!accept(")")) fail("expected ')'");
      return n;
    }
    if (c == '\'' || c == '"') {
      const size_t end = s_.find(c, i_ + 1);
      if (end == std::string_view::npos) fail("the string is not closed");
      auto n = node(ExprNode::Kind::kLiteral, "", {}, at);
      std::const_pointer_cast<ExprNode>(n)->literal = std::string(s_.substr(i_ + 1, end - i_ - 1));
      i_ = end + 1;
      return n;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      size_t j = i_;
      while (j < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[j])) || s_[j] == '.')) ++j;
      if (j < s_.size() && (s_[j] == 'e' || s_[j] == 'E')) {
        size_t k = j + 1;
        if (k < s_.size() && (s_[k] == '+' || s_[k] == '-')) ++k;
        if (k < s_.size() && std::isdigit(static_cast<unsigned char>(s_[k]))) {
          j = k;
          while (j < s_.size() && std::isdigit(static_cast<unsigned char>(s_[j]))) ++j;
        }
      }
      const std::string text(s_.substr(i_, j - i_));
      size_t used = 0;
      double v = 0;
      try {
        v = std::stod(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != text.size()) fail(fmt::format("'{}' is not a number", text));
      auto n = node(ExprNode::Kind::kLiteral, "", {}, at);
      std::const_pointer_cast<ExprNode>(n)->literal = v;
      i_ = j;
      return n;
    }
    const std::string word(peek_word());
    if (word.empty()) fail(fmt::format("unexpected '{}'", s_.substr(i_, 1)));
    i_ += word.size();
    if (word == "true" || word == "false" || word == "null") {
      auto n = node(ExprNode::Kind::kLiteral, "", {}, at);
      std::const_pointer_cast<ExprNode>(n)->literal = word == "null" ? json(nullptr) : json(word == "true");
      return n;
    }
    skip();
    if (i_ < s_.size() && s_[i_] == '(') {
      const auto& f = functions();
      if (std::find(f.begin(), f.end(), word) == f.end())
        fail(
            fmt::format("unknown function '{}' (functions: min, max, abs, floor, ceil, round, sqrt, log, "
                        "log2, exp, pow)",
                        word));
      ++i_;
      std::vector<NodePtr> args;
      if (!accept(")")) {
        do args.push_back(parse_or());
        while (accept(","));
        if (!accept(")")) fail("expected ',' or ')'");
      }
      const bool variadic = word == "min" || word == "max";
      const size_t want = word == "pow" ? 2 : 1;
      if (variadic ? args.empty() : args.size() != want)
        fail(fmt::format("{}() takes {} argument{}", word, variadic ? "at least one" : std::to_string(want),
                         want == 1 ? "" : "s"));
      return node(ExprNode::Kind::kCall, word, std::move(args), at);
    }
    if (std::find(names_->begin(), names_->end(), word) == names_->end()) names_->push_back(word);
    return node(ExprNode::Kind::kName, word, {}, at);
  }

  std::string_view s_;
  size_t i_ = 0;
  size_t nesting_ = 0;
  std::vector<std::string>* names_ = nullptr;
};

std::string shown(const json& v) {
  if (v.is_string()) return "'" + v.get<std::string>() + "'";
  if (v.is_number()) return fmt::format("{}", v.get<double>());
  return v.dump();
}

[[noreturn]] void eval_fail(const ExprNode& n, const std::string& why) {
  throw ExprError(fmt::format("at character {}: {}", n.at, why));
}

double num(const ExprNode& n, const json& v, const char* what) {
  if (!v.is_number()) eval_fail(n, fmt::format("{} is not a number ({} needs numbers)", shown(v), what));
  return v.get<double>();
}

bool truth(const ExprNode& n, const json& v, const char* what) {
  if (!v.is_boolean())
    eval_fail(n, fmt::format("{} is not true or false ({} needs a condition)", shown(v), what));
  return v.get<bool>();
}

json checked(const ExprNode& n, double x) {
  if (!std::isfinite(x)) eval_fail(n, fmt::format("the result of '{}' is not a finite number", n.name));
  return x;
}

json eval_node(const ExprNode& n, const std::function<json(const std::string&)>& lookup) {
  using K = ExprNode::Kind;
  switch (n.kind) {
    case K::kLiteral:
      return n.literal;
    case K::kName: {
      json v = lookup(n.name);
      if (v.is_number()) return v.get<double>();
      return v;
    }
    case K::kUnary: {
      const json v = eval_node(*n.args[0], lookup);
      if (n.name == "!") return !truth(n, v, "'!'");
      return -num(n, v, "'-'");
    }
    case K::kBinary: {
      const std::string& op = n.name;
      if (op == "&&" || op == "||") {
        const std::string what = "'" + op + "'";
        const bool l = truth(n, eval_node(*n.args[0], lookup), what.c_str());
        if (op == "&&" ? !l : l) return l;
        return truth(n, eval_node(*n.args[1], lookup), what.c_str());
      }
      const json l = eval_node(*n.args[0], lookup);
      const json r = eval_node(*n.args[1], lookup);
      const std::string what = "'" + op + "'";
      if (op == "==") return l == r;
      if (op == "!=") return l != r;
      if (op == "<" || op == "<=" || op == ">" || op == ">=") {
        if (l.is_string() && r.is_string()) {
          const int c = l.get<std::string>().compare(r.get<std::string>());
          return op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
        }
        const double a = num(n, l, what.c_str()), b = num(n, r, what.c_str());
        return op == "<" ? a < b : op == "<=" ? a <= b : op == ">" ? a > b : a >= b;
      }
      if (op == "+" && l.is_string() && r.is_string()) return l.get<std::string>() + r.get<std::string>();
      const double a = num(n, l, what.c_str()), b = num(n, r, what.c_str());
      if ((op == "/" || op == "%") && b == 0.0) eval_fail(n, "division by zero");
      if (op == "+") return checked(n, a + b);
      if (op == "-") return checked(n, a - b);
      if (op == "*") return checked(n, a * b);
      if (op == "/") return checked(n, a / b);
      return checked(n, std::fmod(a, b));
    }
    case K::kCall: {
      std::vector<double> a;
      for (const auto& arg : n.args) a.push_back(num(n, eval_node(*arg, lookup), (n.name + "()").c_str()));
      const std::string& f = n.name;
      if (f == "min") return *std::min_element(a.begin(), a.end());
      if (f == "max") return *std::max_element(a.begin(), a.end());
      if (f == "abs") return std::fabs(a[0]);
      if (f == "floor") return std::floor(a[0]);
      if (f == "ceil") return std::ceil(a[0]);
      if (f == "round") return std::round(a[0]);
      if (f == "sqrt") return checked(n, std::sqrt(a[0]));
      if (f == "log") return checked(n, std::log(a[0]));
      if (f == "log2") return checked(n, std::log2(a[0]));
      if (f == "exp") return checked(n, std::exp(a[0]));
      return checked(n, std::pow(a[0], a[1]));
    }
  }
  return nullptr;
}

}  // namespace

Expr Expr::parse(std::string_view text) {
  if (text.size() > kMaxExprChars)
    throw ExprError(
        fmt::format("the expression is {} characters long; at most {} are read", text.size(), kMaxExprChars));
  Expr e;
  e.text_ = std::string(text);
  Parser p(e.text_);
  e.root_ = p.parse_all(e.names_);
  return e;
}

json Expr::eval(const std::function<json(const std::string&)>& lookup) const {
  return eval_node(*root_, lookup);
}

std::string override_text(const json& value) {
  if (value.is_number_float()) {
    const double x = value.get<double>();
    if (std::nearbyint(x) == x && std::fabs(x) <= 9007199254740992.0)
      return fmt::format("{}", static_cast<int64_t>(x));
    return fmt::format("{}", x);
  }
  if (value.is_string()) {
    // As --set reads it: a text that would parse as JSON (a number, true) stays a string.
    const std::string s = value.get<std::string>();
    if (json::accept(s)) return value.dump();
    return s;
  }
  return value.dump();
}

}  // namespace stalesim
