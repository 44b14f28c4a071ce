#pragma once
// The difference of two groups of seeds and its verdict (`stalesim summarize SWEEP --compare`,
// `stalesim report`), by the rule of the paper claims (scenarios/papers/README.md, under the claim
// table; plots/papers-protocol.json "rule"): d = mean(A) - mean(B), its standard error
// SE = sqrt(sd(A)^2 / n_A + sd(B)^2 / n_B) (sample standard deviations, unpaired), and the verdict
// "A higher" where d > 2 SE, "A lower" where d < -2 SE, else "within 2 SE" (also where a side has
// fewer than 2 seeds: no standard error). The rule is symmetric: swapping A and B swaps higher and
// lower and nothing else.
//
// One rule, two languages: plots/papers_claims.py (rule, se_of, mean) computes the claim table and
// this file computes the comparisons; tests/test_seed_difference.cpp feeds both the same recorded
// per-seed numbers (plots/figures/papers-claims.json) and requires the same d, SE and verdict, so
// the two cannot drift apart unnoticed. papers_claims.py's "reproduced" is our "A higher" with A
// the side the paper says is higher, "contradicted" our "A lower", "inconclusive" "within 2 SE".

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace stalesim {

struct SeedDifference {
  size_t n_a = 0, n_b = 0;
  double mean_a = 0, mean_b = 0;
  double d = 0;               // mean_a - mean_b
  std::optional<double> se;   // none when n_a < 2 or n_b < 2
  std::string verdict;        // "A higher", "A lower" or "within 2 SE"
};

// REQUIRES: a and b not empty. The sums run in the order given.
SeedDifference seed_difference(const std::vector<double>& a, const std::vector<double>& b);

// The verdict of one difference: "A higher" (d > 2 se), "A lower" (d < -2 se), "within 2 SE"
// (otherwise, or with no se, or d not finite).
std::string difference_verdict(double d, const std::optional<double>& se);

}  // namespace stalesim
